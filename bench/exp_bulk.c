/*
 * bulk and rand: each thread allocates --pages blocks of --order, then
 * frees them all.  bulk frees its own blocks in allocation order; rand
 * frees in random order, and half of what each thread frees was allocated
 * by another thread (merging across the buddy tree, remote frees).
 *
 * Metrics: alloc_ns and free_ns per block (time per thread, averaged), and
 * pages_per_sec over all threads (pages allocated and freed per second of
 * wall time).
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct bulk_state {
	za_mm_t *mm;
	unsigned int order;
	long blocks;                    /* per thread */
	int threads;
	bool random;
	double deadline;
	void ***own;                    /* [thread][blocks] */
	void ***to_free;                /* rand: [thread][blocks] */
	pthread_barrier_t phase;
	atomic_bool stop;
	atomic_llong done;              /* blocks allocated and freed */
	_Atomic double alloc_time, free_time;
	int m_alloc, m_free, m_pps;
};

static void add_time(_Atomic double *acc, double t)
{
	double old = atomic_load(acc);
	while (!atomic_compare_exchange_weak(acc, &old, old + t))
		;
}

static void declare(struct bench *b, bool random)
{
	struct bulk_state *st = calloc(1, sizeof(*st));
	st->order = (unsigned int)b->opts.order;
	st->blocks = b->opts.pages ? b->opts.pages : 8192;
	st->threads = b->opts.threads;
	st->random = random;
	st->own = calloc((size_t)st->threads, sizeof(void **));
	st->to_free = calloc((size_t)st->threads, sizeof(void **));
	for (int i = 0; i < st->threads; i++) {
		st->own[i] = calloc((size_t)st->blocks, sizeof(void *));
		st->to_free[i] = calloc((size_t)st->blocks, sizeof(void *));
	}
	st->m_alloc = bench_metric(b, "alloc_ns", "ns/block", LOWER_IS_BETTER);
	st->m_free = bench_metric(b, "free_ns", "ns/block", LOWER_IS_BETTER);
	st->m_pps = bench_metric(b, "pages_per_sec", "pages/s", HIGHER_IS_BETTER);
	b->state = st;
}

static void bulk_release(struct bench *b)
{
	struct bulk_state *st = b->state;
	for (int i = 0; i < st->threads; i++) {
		free(st->own[i]);
		free(st->to_free[i]);
	}
	free(st->own);
	free(st->to_free);
}

static void bulk_declare(struct bench *b) { declare(b, false); }
static void rand_declare(struct bench *b) { declare(b, true); }

static void alloc_all(struct bulk_state *st, void **slot)
{
	for (long k = 0; k < st->blocks; k++) {
		if (!(slot[k] = za_alloc_pages(st->mm, ZA_GFP_KERNEL, st->order))) {
			fprintf(stderr, "zabench: out of memory (%s); use fewer --pages or more "
					"--config memory=...\n", za_last_error());
			exit(1);
		}
	}
}

/* rand: my even blocks and the next thread's odd ones, shuffled. */
static void pick_frees(struct bulk_state *st, int i, uint64_t *rng)
{
	void **out = st->to_free[i];
	void **next = st->own[(i + 1) % st->threads];
	for (long k = 0; k < st->blocks; k++)
		out[k] = k % 2 ? next[k] : st->own[i][k];
	for (long k = st->blocks - 1; k > 0; k--) {
		long j = (long)(bench_rand(rng) % (uint64_t)(k + 1));
		void *t = out[k];
		out[k] = out[j];
		out[j] = t;
	}
}

static void bulk_worker(int i, void *arg)
{
	struct bulk_state *st = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
	double alloc_t = 0, free_t = 0;
	long long done = 0;
	for (;;) {
		double t0 = now_seconds();
		alloc_all(st, st->own[i]);
		alloc_t += now_seconds() - t0;
		void **victims = st->own[i];
		if (st->random) {
			pthread_barrier_wait(&st->phase);
			pick_frees(st, i, &rng);
			pthread_barrier_wait(&st->phase);
			victims = st->to_free[i];
		}
		double t1 = now_seconds();
		for (long k = 0; k < st->blocks; k++)
			za_free_pages(st->mm, victims[k], st->order);
		free_t += now_seconds() - t1;
		done += st->blocks;
		if (!st->random) {
			if (now_seconds() >= st->deadline)
				break;
			continue;
		}
		/* rand: every thread does the same number of rounds (the frees
		 * of a round need the other threads' allocations). */
		pthread_barrier_wait(&st->phase);
		if (i == 0)
			atomic_store(&st->stop, now_seconds() >= st->deadline);
		pthread_barrier_wait(&st->phase);
		if (atomic_load(&st->stop))
			break;
	}
	add_time(&st->alloc_time, alloc_t);
	add_time(&st->free_time, free_t);
	atomic_fetch_add(&st->done, done);
}

static void bulk_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct bulk_state *st = b->state;
	st->mm = v->mm;
	atomic_store(&st->done, 0);
	atomic_store(&st->alloc_time, 0.0);
	atomic_store(&st->free_time, 0.0);
	atomic_store(&st->stop, false);
	pthread_barrier_init(&st->phase, NULL, (unsigned)st->threads);
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(st->threads, bulk_worker, st);
	pthread_barrier_destroy(&st->phase);
	it->ops = atomic_load(&st->done);
	it->value[st->m_alloc] = atomic_load(&st->alloc_time) / (double)it->ops * 1e9;
	it->value[st->m_free] = atomic_load(&st->free_time) / (double)it->ops * 1e9;
	it->value[st->m_pps] = (double)(it->ops << st->order) / wall;
}

static const char *const bulk_report[] = {
	"--order 0 --threads 1 --ab bulkfree_outside_lock",
	"--order 0 --threads 2 --ab bulkfree_outside_lock",
	"--order 2 --threads 2 --ab pcp_high_order",
	"--order 0 --threads 1 --ab pcp_own_pageblocks",
	"--order 0 --threads 2 --ab pcp_own_pageblocks",
	NULL,
};

static const char *const rand_report[] = {
	"--order 0 --threads 2 --ab bulkfree_outside_lock",
	"--order 1 --threads 2 --ab pcp_high_order",
	"--order 0 --threads 2 --ab pcp_own_pageblocks",
	NULL,
};

const struct experiment exp_bulk = {
	.name = "bulk",
	.summary = "each thread allocates --pages blocks of --order, then frees them",
	.config = "memory=2G,zones=DMA32:512M+Normal",
	.threads = 1,
	.declare = bulk_declare,
	.run = bulk_run,
	.release = bulk_release,
	.report_runs = bulk_report,
};

const struct experiment exp_rand = {
	.name = "rand",
	.summary = "as bulk, freed in random order, half by another thread",
	.config = "memory=2G,zones=DMA32:512M+Normal",
	.threads = 2,
	.declare = rand_declare,
	.run = bulk_run,
	.release = bulk_release,
	.report_runs = rand_report,
};
