/*
 * purger: the flow behind the April 2026 RFC for per-CPU-owned pageblocks
 * (Johannes Weiner, "mm: page_alloc: per-cpu pageblock buddy allocator"):
 * a user-space allocator's pages are faulted in on every CPU and purged
 * back by one thread.  --threads N allocating threads, each bound to its
 * own CPU of the system (0..N-1), allocate order-0 pages and pass them,
 * through a ring each, to one purger thread bound to CPU N, which frees
 * them.  Every allocating CPU's lists only empty and refill; the purger's
 * only fill and drain: both under the zone lock, whatever high is.
 *
 * The system needs N + 1 CPUs (cpus=8 by default: up to 7 allocating);
 * on a machine with fewer cores the threads share them, as za_bind_cpu
 * lets them.
 *
 * Metric: pages_per_sec (allocated and freed).  The counters that tell the
 * mechanism: zone_lock_acquire, pcp refills and drains, per page.
 */
#include "bench.h"
#include "queue.h"

#include <stdatomic.h>
#include <stdlib.h>

struct purger_state {
	za_mm_t *mm;
	int allocators;
	double deadline;
	struct ring *rings;             /* [allocators]: allocator i -> the purger */
	atomic_int running;             /* allocators not yet done */
	atomic_llong freed;
	int m_pps;
};

static void purger_declare(struct bench *b)
{
	struct purger_state *st = calloc(1, sizeof(*st));
	st->allocators = b->opts.threads;
	st->rings = aligned_alloc(64, sizeof(struct ring) * (size_t)st->allocators);
	st->m_pps = bench_metric(b, "pages_per_sec", "pages/s", HIGHER_IS_BETTER);
	b->state = st;
}

static void purger_release(struct bench *b)
{
	struct purger_state *st = b->state;
	free(st->rings);
}

/* CPU i: allocates until the time is up, each page into its ring. */
static void allocate(struct purger_state *st, struct ring *r)
{
	while (now_seconds() < st->deadline) {
		void *p = za_alloc_pages(st->mm, ZA_GFP_MOVABLE | ZA_GFP_ZERO, 0);
		if (!p) {
			fprintf(stderr, "zabench purger: out of memory (%s)\n", za_last_error());
			exit(1);
		}
		for (unsigned int spins = 0; !ring_push(r, p);)
			backoff(&spins);
	}
	atomic_fetch_sub(&st->running, 1);
}

/* A batch of FOLIO_BATCH pages off a ring (or what is left once the
 * allocators are done), freed in one za_free_pages_bulk; returns how
 * many.  Waiting for a whole batch keeps the purger from freeing each page
 * the moment it is allocated, in step with its CPU's next allocation: a
 * purger frees what accumulated, in batches. */
static int purge_batch(za_mm_t *mm, struct ring *r, bool done)
{
	void *batch[FOLIO_BATCH];
	int n = 0;
	if (!done && ring_count(r) < FOLIO_BATCH)
		return 0;
	while (n < FOLIO_BATCH && (batch[n] = ring_pop(r)))
		n++;
	if (n && za_free_pages_bulk(mm, batch, (size_t)n, 0)) {
		fprintf(stderr, "zabench purger: %s\n", za_last_error());
		exit(1);
	}
	return n;
}

/* CPU N: frees what every ring holds, a batch at a time as the kernel's
 * page-table teardown does (free_unref_folios), until the allocators are
 * done and the rings empty (done seen before the pass that found nothing). */
static void purge(struct purger_state *st)
{
	long long freed = 0;
	for (;;) {
		bool done = !atomic_load(&st->running), found = false;
		for (int i = 0; i < st->allocators; i++)
			for (int n; (n = purge_batch(st->mm, &st->rings[i], done)); found = true)
				freed += n;
		if (done && !found)
			break;
		if (!found) {
			unsigned int spins = 0;
			backoff(&spins);
		}
	}
	atomic_store(&st->freed, freed);
}

static void purger_worker(int i, void *arg)
{
	struct purger_state *st = arg;
	za_bind_cpu(st->mm, i);
	if (i < st->allocators)
		allocate(st, &st->rings[i]);
	else
		purge(st);
	za_drain_pages(st->mm, i);
	za_bind_cpu(st->mm, -1);
}

static void purger_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct purger_state *st = b->state;
	if (za_nr_cpus(v->mm) < st->allocators + 1) {
		fprintf(stderr, "zabench purger: --threads %d needs a system of %d CPUs (cpus=)\n",
			st->allocators, st->allocators + 1);
		exit(2);
	}
	st->mm = v->mm;
	for (int i = 0; i < st->allocators; i++)
		atomic_store(&st->rings[i].head, 0), atomic_store(&st->rings[i].tail, 0);
	atomic_store(&st->running, st->allocators);
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(st->allocators + 1, purger_worker, st);
	it->ops = atomic_load(&st->freed);
	it->value[st->m_pps] = (double)it->ops / wall;
}

static const char *const purger_report[] = {
	"--threads 1 --ab pcp_own_pageblocks",
	"--threads 3 --ab pcp_own_pageblocks",
	NULL,
};

const struct experiment exp_purger = {
	.name = "purger",
	.summary = "N CPUs allocate pages, one purger CPU frees them (the per-CPU-owned pageblocks RFC's case)",
	.config = "memory=1G,zones=Normal,kernel=7.0,cpus=8,vmstat_interval_ms=0",
	.threads = 3,
	.declare = purger_declare,
	.run = purger_run,
	.release = purger_release,
	.report_runs = purger_report,
	.notes = "The allocating CPUs' lists only refill and the purger's only drain: with "
		 "today's per-CPU lists every page crosses the zone lock twice, in batches. With "
		 "pcp_own_pageblocks (the RFC) a refill claims a whole pageblock and the purger's "
		 "frees -- 31 pages per za_free_pages_bulk, as the kernel's folio_batch -- go back "
		 "to the owning CPU's lists (pcp_remote_free), under that CPU's lock: an "
		 "allocation that finds it busy takes the zone lock instead.",
};
