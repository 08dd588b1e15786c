/*
 * rcu-free: the maple tree's pattern on 7.0 -- every operation allocates a
 * --size object (default 256 bytes, a maple_node) in place of one it
 * allocated earlier, which it frees with za_cache_free_rcu (kfree_rcu),
 * and a grace period ends every millisecond (za_rcu_barrier, from thread
 * 0): slub_sheaves=2's rcu_free sheaves, whose objects come back through
 * the barn as full sheaves, beside kvfree_rcu's batches to the slabs.
 *
 * Metrics: ops_per_sec, and waiting_objects -- the objects freed but not
 * yet free at a grace period's end (a mean over them): the memory the
 * grace period holds.  The counters that tell the paths: list_lock_acquire,
 * barn_get and barn_put, free_rcu_sheaf.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdlib.h>

#define WINDOW 64               /* live objects per thread */
#define GRACE_PERIOD 1e-3       /* seconds */

struct rf_state {
	za_mm_t *mm;
	za_cache_t *cache;
	double deadline;
	atomic_llong ops;
	long long grace_periods, waited;        /* thread 0's */
	int m_ops, m_waiting;
};

static void rf_declare(struct bench *b)
{
	struct rf_state *st = calloc(1, sizeof(*st));
	if (!b->opts.size)
		b->opts.size = 256;
	st->m_ops = bench_metric(b, "ops_per_sec", "ops/s", HIGHER_IS_BETTER);
	st->m_waiting = bench_metric(b, "waiting_objects", "objects", LOWER_IS_BETTER);
	b->state = st;
}

static void *must_alloc(struct rf_state *st)
{
	void *p = za_cache_alloc(st->cache, 0);
	if (!p) {
		fprintf(stderr, "zabench rcu-free: %s\n", za_last_error());
		exit(1);
	}
	return p;
}

/* Thread 0, now and then: the grace period ends if it is a millisecond old. */
static void maybe_end_grace_period(struct rf_state *st, double *since)
{
	double now = now_seconds();
	if (now - *since < GRACE_PERIOD)
		return;
	struct za_cache_info info;
	za_cache_info(st->cache, &info);
	st->waited += (long long)info.rcu_objects;
	st->grace_periods++;
	za_rcu_barrier(st->mm);
	*since = now;
}

static void rf_worker(int i, void *arg)
{
	struct rf_state *st = arg;
	void *live[WINDOW];
	long long ops = 0;
	double since = now_seconds();
	for (int k = 0; k < WINDOW; k++)
		live[k] = must_alloc(st);
	do {
		for (int k = 0; k < WINDOW; k++) {
			void *old = live[k];
			live[k] = must_alloc(st);
			za_cache_free_rcu(st->cache, old);
		}
		ops += WINDOW;
		if (i == 0 && ops % (16 * WINDOW) == 0)
			maybe_end_grace_period(st, &since);
	} while (now_seconds() < st->deadline);
	for (int k = 0; k < WINDOW; k++)
		za_cache_free(st->cache, live[k]);
	atomic_fetch_add(&st->ops, ops);
}

static void rf_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct rf_state *st = b->state;
	st->mm = v->mm;
	st->cache = variant_cache(v, 0, "maple_node", (size_t)b->opts.size);
	atomic_store(&st->ops, 0);
	st->grace_periods = st->waited = 0;
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(b->opts.threads, rf_worker, st);
	za_rcu_barrier(v->mm);
	it->ops = atomic_load(&st->ops);
	it->value[st->m_ops] = (double)it->ops / wall;
	it->value[st->m_waiting] = st->grace_periods ? (double)st->waited / (double)st->grace_periods : 0;
}

static const char *const rf_report[] = {
	"--ab slub_sheaves=0:2 --config kernel=7.0",
	"--threads 2 --ab slub_sheaves=0:2 --config kernel=7.0",
	NULL,
};

const struct experiment exp_rcu_free = {
	.name = "rcu-free",
	.summary = "alloc + za_cache_free_rcu (kfree_rcu) of --size objects, a grace period a millisecond",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.declare = rf_declare,
	.run = rf_run,
	.report_runs = rf_report,
	.notes = "With 7.0's sheaves (slub_sheaves=2) a CPU's kfree_rcu frees gather in its "
		 "rcu_free sheaf, and a full one comes back after the grace period as a full "
		 "sheaf of the barn: allocations take those objects without the slabs' list_lock. "
		 "Without, the objects go to their slabs in batches after the grace period.",
};
