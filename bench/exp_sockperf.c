/*
 * sockperf-udp: the latency side of E1.  One message in flight per pair:
 * the client allocates a message of the size (kmalloc) and its header,
 * hands it to the server, which frees both and answers with a token; the
 * client times the round trip.  Every round trip is one allocation and one
 * remote free, so per-CPU list behaviour shows directly in the latency.
 *
 * Every round trip is timed (one clock read per trip: a trip ends where the
 * next begins, so the trips of a pair add up to the client's whole loop) and
 * counted in a histogram: 1 ns buckets below 4096 ns, 256 per power of two
 * above.  So the mean round trip and the throughput describe the same trips:
 * per pair, round trips/s x mean round trip ~ 1 s.
 *
 * Metrics per size: tput-<size> (round trips per second, all pairs),
 * lat50-<size> and lat99-<size> (ns).  ops = round trips.  Printed after the
 * tables: per size and variant, the mean round trip, the longest, the
 * trips that stalled (>= STALL_NS) with their share of the time -- what
 * separates the throughput from the median -- and the mean of the rest.
 */
#include "bench.h"
#include "histogram.h"
#include "queue.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN ((void *)1)

/* A round trip this long did not spend its time allocating: a thread of the
 * pair was off its CPU (preempted, or yielding to the other side). */
#define STALL_NS 50000LL

static const long default_sizes[] = { 14, 100, 300, 500, 850, 4096, 16384 };

struct pair_stats {
	long long trips, stalled;
	double sum_ns, stalled_ns, max_ns;
	long long *hist;                        /* [HIST_BUCKETS] */
};

/* What the measured iterations of one variant gave at one size. */
struct size_totals {
	long long trips, stalled;
	double sum_ns, stalled_ns, max_ns, wall;
};

struct sp_state {
	za_mm_t *mm;
	za_cache_t *hdr;
	long size;
	double deadline;
	int pairs;
	struct ring *to_server, *to_client;     /* [pairs] */
	struct pair_stats *stats;               /* [pairs] */
	long long *hist;                        /* [HIST_BUCKETS]: all pairs merged */
	int m_tput[MAX_SIZES], m_p50[MAX_SIZES], m_p99[MAX_SIZES];
	struct size_totals totals[MAX_VARIANTS][MAX_SIZES];
};

static void sp_declare(struct bench *b)
{
	struct sp_state *st = calloc(1, sizeof(*st));
	if (!b->opts.nsizes) {
		b->opts.nsizes = (int)(sizeof(default_sizes) / sizeof(default_sizes[0]));
		memcpy(b->opts.sizes, default_sizes, sizeof(default_sizes));
	}
	for (int i = 0; i < b->opts.nsizes; i++) {
		char name[48];
		snprintf(name, sizeof(name), "tput-%ld", b->opts.sizes[i]);
		st->m_tput[i] = bench_metric(b, name, "round trips/s", HIGHER_IS_BETTER);
		snprintf(name, sizeof(name), "lat50-%ld", b->opts.sizes[i]);
		st->m_p50[i] = bench_metric(b, name, "ns", LOWER_IS_BETTER);
		snprintf(name, sizeof(name), "lat99-%ld", b->opts.sizes[i]);
		st->m_p99[i] = bench_metric(b, name, "ns", LOWER_IS_BETTER);
	}
	st->pairs = b->opts.threads;
	st->to_server = aligned_alloc(64, sizeof(struct ring) * (size_t)st->pairs);
	st->to_client = aligned_alloc(64, sizeof(struct ring) * (size_t)st->pairs);
	st->stats = calloc((size_t)st->pairs, sizeof(struct pair_stats));
	for (int p = 0; p < st->pairs; p++)
		st->stats[p].hist = malloc(sizeof(long long) * HIST_BUCKETS);
	st->hist = malloc(sizeof(long long) * HIST_BUCKETS);
	b->state = st;
}

static void sp_release(struct bench *b)
{
	struct sp_state *st = b->state;
	for (int p = 0; p < st->pairs; p++)
		free(st->stats[p].hist);
	free(st->stats);
	free(st->hist);
	free(st->to_server);
	free(st->to_client);
}

static void *wait_pop(struct ring *r)
{
	unsigned int spins = 0;
	void *p;
	while (!(p = ring_pop(r)))
		backoff(&spins);
	return p;
}

static void client(struct sp_state *st, int pair)
{
	struct pair_stats *ps = &st->stats[pair];
	double t0 = now_seconds(), t1;
	do {
		void **msg = za_cache_alloc(st->hdr, 0);
		unsigned char *data = za_kmalloc(st->mm, (size_t)st->size, 0);
		if (!msg || !data) {
			fprintf(stderr, "zabench sockperf-udp: %s\n", za_last_error());
			exit(1);
		}
		memset(data, 0x5a, (size_t)st->size);
		msg[0] = data;
		ring_push(&st->to_server[pair], msg);
		wait_pop(&st->to_client[pair]);
		t1 = now_seconds();
		double ns = (t1 - t0) * 1e9;
		t0 = t1;
		ps->hist[hist_bucket((long long)(ns + 0.5))]++;
		ps->trips++;
		ps->sum_ns += ns;
		if (ns > ps->max_ns)
			ps->max_ns = ns;
		if (ns >= (double)STALL_NS) {
			ps->stalled++;
			ps->stalled_ns += ns;
		}
	} while (t1 < st->deadline);
	ring_push(&st->to_server[pair], TOKEN);         /* done */
}

static void server(struct sp_state *st, int pair)
{
	void **msg;
	while ((msg = wait_pop(&st->to_server[pair])) != TOKEN) {
		za_kfree(st->mm, msg[0]);
		za_cache_free(st->hdr, msg);
		ring_push(&st->to_client[pair], TOKEN);
	}
}

static void sp_worker(int i, void *arg)
{
	pin_to_cpu(i);
	if (i % 2 == 0)
		client(arg, i / 2);
	else
		server(arg, i / 2);
}

static void sp_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct sp_state *st = b->state;
	st->mm = v->mm;
	st->hdr = variant_cache(v, 0, "skbuff_head", 232);
	for (int s = 0; s < b->opts.nsizes; s++) {
		st->size = b->opts.sizes[s];
		memset(st->to_server, 0, sizeof(struct ring) * (size_t)st->pairs);
		memset(st->to_client, 0, sizeof(struct ring) * (size_t)st->pairs);
		for (int p = 0; p < st->pairs; p++) {
			long long *hist = st->stats[p].hist;
			memset(hist, 0, sizeof(long long) * HIST_BUCKETS);
			st->stats[p] = (struct pair_stats){ .hist = hist };
		}
		st->deadline = now_seconds() + bench_seconds(b);
		double wall = run_threads(2 * st->pairs, sp_worker, st);
		/* Percentiles over every pair's trips. */
		struct size_totals t = { .wall = wall };
		memset(st->hist, 0, sizeof(long long) * HIST_BUCKETS);
		for (int p = 0; p < st->pairs; p++) {
			const struct pair_stats *ps = &st->stats[p];
			for (int k = 0; k < HIST_BUCKETS; k++)
				st->hist[k] += ps->hist[k];
			t.trips += ps->trips;
			t.stalled += ps->stalled;
			t.sum_ns += ps->sum_ns;
			t.stalled_ns += ps->stalled_ns;
			if (ps->max_ns > t.max_ns)
				t.max_ns = ps->max_ns;
		}
		it->value[st->m_tput[s]] = (double)t.trips / wall;
		it->value[st->m_p50[s]] = hist_percentile(st->hist, t.trips, 50, 100);
		it->value[st->m_p99[s]] = hist_percentile(st->hist, t.trips, 99, 100);
		it->ops += t.trips;
		if (!b->warmup) {
			struct size_totals *sum = &st->totals[v - b->variants][s];
			sum->trips += t.trips;
			sum->stalled += t.stalled;
			sum->sum_ns += t.sum_ns;
			sum->stalled_ns += t.stalled_ns;
			sum->wall += t.wall;
			if (t.max_ns > sum->max_ns)
				sum->max_ns = t.max_ns;
		}
	}
}

/* Where the time of the round trips went, measured iterations summed. */
static void sp_print(const struct bench *b, FILE *out)
{
	const struct sp_state *st = b->state;
	fprintf(out, "\nRound trips (%d pair%s, measured iterations)\n", st->pairs,
		st->pairs == 1 ? "" : "s");
	fprintf(out, "%-6s %-8s %14s %12s %17s %12s %13s %12s %16s\n", "size", "variant",
		"round trips/s", "mean rtt ns", "pairs/mean rtt/s", "max rtt us", "trips >=50us",
		"their time %", "mean rtt ns rest");
	for (int s = 0; s < b->opts.nsizes; s++)
		for (int i = 0; i < b->nvariants; i++) {
			const struct size_totals *t = &st->totals[i][s];
			long long rest = t->trips - t->stalled;
			double mean = t->trips ? t->sum_ns / (double)t->trips : 0;
			fprintf(out, "%-6ld %-8s %14.0f %12.1f %17.0f %12.1f %13lld %12.1f %16.1f\n",
				b->opts.sizes[s], b->variants[i].name,
				t->wall > 0 ? (double)t->trips / t->wall : 0, mean,
				mean > 0 ? st->pairs * 1e9 / mean : 0, t->max_ns / 1e3, t->stalled,
				t->sum_ns > 0 ? 100 * t->stalled_ns / t->sum_ns : 0,
				rest ? (t->sum_ns - t->stalled_ns) / (double)rest : 0);
		}
}

static const char *const sp_report[] = {
	"--ab pcp_high_order",
	NULL,
};

const struct experiment exp_sockperf = {
	.name = "sockperf-udp",
	.summary = "E1, latency: one kmalloc'ed message in flight per pair; round trips, p50/p99",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.declare = sp_declare,
	.run = sp_run,
	.release = sp_release,
	.report_runs = sp_report,
	.print_extra = sp_print,
	.notes = "tput counts every round trip of the run and lat50/lat99 are percentiles of "
		 "those same trips, so per pair tput x mean round trip = 1 s (the Round trips "
		 "table shows both); the mean is not the median, though. A trip in which the "
		 "client or the server was off its CPU (preempted by another process or by the "
		 "host, or yielding while it waited) takes milliseconds instead of a few hundred "
		 "ns, and a few hundred such stalls can fill most of a 0.3 s run: tput then falls "
		 "several-fold while lat50 does not move. When 'their time %' is large, a tput "
		 "difference between the variants is the machine's, not the allocator's: compare "
		 "lat50, lat99 and the mean of the other trips instead. With --threads N, 2N "
		 "threads spin on the machine's cores, so beyond one pair per two cores every "
		 "trip also waits for the scheduler.",
};
