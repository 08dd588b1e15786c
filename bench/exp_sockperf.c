/*
 * sockperf-udp: the latency side of E1.  One message in flight per pair:
 * the client allocates a message of the size (kmalloc) and its header,
 * hands it to the server, which frees both and answers with a token; the
 * client times the round trip.  Every round trip is one allocation and one
 * remote free, so per-CPU list behaviour shows directly in the latency.
 *
 * Metrics per size: tput-<size> (round trips per second), lat50-<size> and
 * lat99-<size> (ns).  ops = round trips.
 */
#include "bench.h"
#include "queue.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SAMPLES (1 << 18)
#define TOKEN ((void *)1)

static const long default_sizes[] = { 14, 100, 300, 500, 850, 4096, 16384 };

struct sp_state {
	za_mm_t *mm;
	za_cache_t *hdr;
	long size;
	double deadline;
	int pairs;
	struct ring *to_server, *to_client;     /* [pairs] */
	double **rtt;                           /* [pairs][MAX_SAMPLES] */
	long *nrtt;
	atomic_llong trips;
	int m_tput[MAX_SIZES], m_p50[MAX_SIZES], m_p99[MAX_SIZES];
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
	st->rtt = calloc((size_t)st->pairs, sizeof(double *));
	st->nrtt = calloc((size_t)st->pairs, sizeof(long));
	for (int p = 0; p < st->pairs; p++)
		st->rtt[p] = malloc(sizeof(double) * MAX_SAMPLES);
	b->state = st;
}

static void sp_release(struct bench *b)
{
	struct sp_state *st = b->state;
	for (int p = 0; p < st->pairs; p++)
		free(st->rtt[p]);
	free(st->rtt);
	free(st->nrtt);
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
	long n = 0;
	do {
		double t0 = now_seconds();
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
		if (n < MAX_SAMPLES)
			st->rtt[pair][n] = (now_seconds() - t0) * 1e9;
		n++;
	} while (now_seconds() < st->deadline);
	ring_push(&st->to_server[pair], TOKEN);         /* done */
	st->nrtt[pair] = n < MAX_SAMPLES ? n : MAX_SAMPLES;
	atomic_fetch_add(&st->trips, n);
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
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
		atomic_store(&st->trips, 0);
		st->deadline = now_seconds() + bench_seconds(b);
		double wall = run_threads(2 * st->pairs, sp_worker, st);
		/* Percentiles over every pair's samples. */
		long total = 0;
		for (int p = 0; p < st->pairs; p++)
			total += st->nrtt[p];
		double *all = malloc(sizeof(double) * (size_t)(total ? total : 1));
		for (int p = 0, k = 0; p < st->pairs; p++)
			for (long j = 0; j < st->nrtt[p]; j++)
				all[k++] = st->rtt[p][j];
		qsort(all, (size_t)total, sizeof(double), cmp_double);
		long long trips = atomic_load(&st->trips);
		it->value[st->m_tput[s]] = (double)trips / wall;
		it->value[st->m_p50[s]] = total ? all[total / 2] : 0;
		it->value[st->m_p99[s]] = total ? all[total * 99 / 100] : 0;
		it->ops += trips;
		free(all);
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
};
