/*
 * drain: the fleet case behind 6.19's chunked drains (pcp_drain_chunks=2):
 * one CPU allocates, another frees what it allocated -- the flow of a
 * pool whose purger frees on one CPU what every CPU allocated.  Thread 1,
 * as CPU 1, fills a buffer of --pages pages (default 8192) and hands it to
 * thread 0, as CPU 0, which frees them while CPU 1 fills the other
 * buffer, so that both work at once.  CPU 0's freeing streak keeps free_count at
 * its cap (batch << 5), so each time its count reaches high the free path
 * returns up to 2016 pages; CPU 1's lists are always empty, so it refills,
 * under the same zone lock.
 *
 * Metrics: the 99th percentile and the longest zone-lock hold of a bulk
 * free, the 99th percentile of a refill's wait for the zone lock, and
 * pages_per_sec (allocated and freed), from the zone-lock tracepoints
 * (za_set_tracepoints) counted in per-CPU histograms.
 */
#include "bench.h"
#include "histogram.h"
#include "queue.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CPUS 2

/* What one CPU's tracepoint events gave: written by the thread bound to
 * it only; events on other threads (a vmstat worker or kswapd a user's
 * --config starts) are not counted. */
struct cpu_holds {
	long long *hold, *wait;         /* [HIST_BUCKETS]: bulk-free holds, refill waits */
	long long holds, waits;
	unsigned long long hold_max;
};

struct drain_state {
	za_mm_t *mm;
	double deadline;
	long pages;                     /* per buffer */
	void **buf[2];                  /* CPU 1 fills one while CPU 0 frees the other */
	atomic_bool full[2];            /* buf[i] is CPU 0's */
	atomic_bool stop;               /* CPU 1 fills no more */
	atomic_llong done;              /* pages allocated and freed */
	struct cpu_holds cpu[CPUS];
	int m_hold99, m_hold_max, m_wait99, m_pps;
};

static void drain_declare(struct bench *b)
{
	struct drain_state *st = calloc(1, sizeof(*st));
	st->pages = b->opts.pages ? b->opts.pages : 8192;
	for (int i = 0; i < 2; i++)
		st->buf[i] = calloc((size_t)st->pages, sizeof(void *));
	for (int c = 0; c < CPUS; c++) {
		st->cpu[c].hold = calloc(HIST_BUCKETS, sizeof(long long));
		st->cpu[c].wait = calloc(HIST_BUCKETS, sizeof(long long));
	}
	st->m_hold99 = bench_metric(b, "bulkfree_hold_p99_ns", "ns", LOWER_IS_BETTER);
	st->m_hold_max = bench_metric(b, "bulkfree_hold_max_ns", "ns", LOWER_IS_BETTER);
	st->m_wait99 = bench_metric(b, "refill_wait_p99_ns", "ns", LOWER_IS_BETTER);
	st->m_pps = bench_metric(b, "pages_per_sec", "pages/s", HIGHER_IS_BETTER);
	b->state = st;
}

static void drain_release(struct bench *b)
{
	struct drain_state *st = b->state;
	for (int c = 0; c < CPUS; c++) {
		free(st->cpu[c].hold);
		free(st->cpu[c].wait);
	}
	for (int i = 0; i < 2; i++)
		free(st->buf[i]);
}

static _Thread_local int worker_cpu = -1;      /* the CPU a worker is bound to */

static void on_zone_lock(const struct za_tp_event *ev, void *ctx)
{
	struct drain_state *st = ctx;
	if (worker_cpu < 0 || !ev->caller)
		return;
	struct cpu_holds *h = &st->cpu[worker_cpu];
	bool refill = !strcmp(ev->caller, "rmqueue_bulk");
	if (ev->type == ZA_TP_ZONE_LOCKED && refill) {
		h->wait[hist_bucket((long long)ev->wait_ns)]++;
		h->waits++;
	} else if (ev->type == ZA_TP_ZONE_LOCK_UNLOCK && !refill) {
		h->hold[hist_bucket((long long)ev->hold_ns)]++;
		h->holds++;
		if (ev->hold_ns > h->hold_max)
			h->hold_max = ev->hold_ns;
	}
}

static void *must_alloc(za_mm_t *mm)
{
	void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0);
	if (!p) {
		fprintf(stderr, "zabench drain: out of memory (%s); use fewer --pages or more "
				"--config memory=...\n", za_last_error());
		exit(1);
	}
	return p;
}

/* CPU 1: fills the buffers in turn, until the time is up. */
static void fill_buffers(struct drain_state *st)
{
	for (int i = 0; now_seconds() < st->deadline; i ^= 1) {
		for (unsigned int spins = 0; atomic_load(&st->full[i]);)
			backoff(&spins);
		for (long k = 0; k < st->pages; k++)
			st->buf[i][k] = must_alloc(st->mm);
		atomic_store(&st->full[i], true);
	}
	atomic_store(&st->stop, true);
}

/* CPU 0: frees each buffer CPU 1 filled, until it has stopped and both
 * are empty (stop seen before the look that found nothing). */
static long long free_buffers(struct drain_state *st)
{
	long long done = 0;
	for (int i = 0;; i ^= 1) {
		for (unsigned int spins = 0; !atomic_load(&st->full[i]);) {
			if (atomic_load(&st->stop) && !atomic_load(&st->full[i]))
				return done;
			backoff(&spins);
		}
		for (long k = 0; k < st->pages; k += FOLIO_BATCH) {    /* as an exit frees */
			long n = st->pages - k < FOLIO_BATCH ? st->pages - k : FOLIO_BATCH;
			za_free_pages_bulk(st->mm, &st->buf[i][k], (size_t)n, 0);
		}
		done += st->pages;
		atomic_store(&st->full[i], false);
	}
}

static void drain_worker(int i, void *arg)
{
	struct drain_state *st = arg;
	za_bind_cpu(st->mm, worker_cpu = i);
	if (i)
		fill_buffers(st);
	else
		atomic_store(&st->done, free_buffers(st));
	za_drain_pages(st->mm, i);
	za_bind_cpu(st->mm, worker_cpu = -1);
}

/* The 99th percentile of both CPUs' bulk-free holds, or refill waits;
 * scratch: HIST_BUCKETS counters. */
static double p99(const struct drain_state *st, bool holds, long long *scratch)
{
	long long total = 0;
	memset(scratch, 0, HIST_BUCKETS * sizeof(long long));
	for (int c = 0; c < CPUS; c++) {
		const long long *h = holds ? st->cpu[c].hold : st->cpu[c].wait;
		for (int k = 0; k < HIST_BUCKETS; k++)
			scratch[k] += h[k];
		total += holds ? st->cpu[c].holds : st->cpu[c].waits;
	}
	return hist_percentile(scratch, total, 99, 100);
}

static void drain_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct drain_state *st = b->state;
	if (za_nr_cpus(v->mm) < CPUS) {
		fprintf(stderr, "zabench drain: needs a system of %d CPUs (cpus=)\n", CPUS);
		exit(2);
	}
	st->mm = v->mm;
	for (int c = 0; c < CPUS; c++) {
		memset(st->cpu[c].hold, 0, HIST_BUCKETS * sizeof(long long));
		memset(st->cpu[c].wait, 0, HIST_BUCKETS * sizeof(long long));
		st->cpu[c].holds = st->cpu[c].waits = 0;
		st->cpu[c].hold_max = 0;
	}
	atomic_store(&st->done, 0);
	atomic_store(&st->stop, false);
	atomic_store(&st->full[0], false);
	atomic_store(&st->full[1], false);
	za_set_tracepoints(v->mm, on_zone_lock, st, ZA_TP_ZONE_LOCK_EVENTS);
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(CPUS, drain_worker, st);
	za_set_tracepoint(v->mm, NULL, NULL);

	long long *scratch = malloc(HIST_BUCKETS * sizeof(long long));
	it->value[st->m_hold99] = p99(st, true, scratch);
	it->value[st->m_wait99] = p99(st, false, scratch);
	free(scratch);
	unsigned long long longest = 0;
	for (int c = 0; c < CPUS; c++)
		longest = st->cpu[c].hold_max > longest ? st->cpu[c].hold_max : longest;
	it->value[st->m_hold_max] = (double)longest;
	it->ops = atomic_load(&st->done);
	it->value[st->m_pps] = (double)it->ops / wall;
}

static const char *const drain_report[] = {
	"--ab pcp_drain_chunks=1:2",
	"--ab bulkfree_outside_lock",
	NULL,
};

const struct experiment exp_drain = {
	.name = "drain",
	.summary = "CPU 1 allocates, CPU 0 frees what it allocated: bulk-free zone-lock holds "
		   "and refill waits",
	.config = "memory=1G,zones=Normal,kernel=6.18,cpus=2,vmstat_interval_ms=0",
	.threads = CPUS,
	.declare = drain_declare,
	.run = drain_run,
	.release = drain_release,
	.report_runs = drain_report,
};
