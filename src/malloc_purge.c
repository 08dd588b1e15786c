/*
 * The purge worker: the malloc front end's background policy for giving
 * memory back to the operating system, so that a process's RSS falls
 * after a peak.
 *
 * One thread, started the first time memory goes back to the page
 * allocator (a large free, a barn overflow) or a barn raises its limit,
 * wakes every purge_delay_ms/2.  Each round it purges the free blocks
 * that have been free for at least purge_delay_ms (za_purge with three
 * epochs: two whole rounds), after the kernel's vmstat tick has lowered
 * each CPU's tuned page-list high (by up to an eighth) and sent what lies
 * above it to the buddy lists.  When a round saw no page allocated or
 * freed, no mapping and no sheaf exchanged at a barn, the process is idle:
 * the caches above the buddy lists -- barns, slabs, per-CPU page lists --
 * are emptied into them first, so that what they hold is purged too a
 * delay later, and the mapping cache is given back.  Busy rounds give back
 * half of what each barn held unused all round (barns_decay) and what the
 * mapping cache holds beyond recent demand (vmalloc.c).
 * A thread that made no call for two rounds gives its sheaves and blocks
 * back at its next call (thread_caches_note_idle).  After three quiet
 * rounds (idle, nothing purged) nothing dirty is left, and the worker
 * sleeps until the next kick.
 */
#include "malloc_internal.h"
#include "slab.h"

#include <signal.h>

enum { PURGER_OFF, PURGER_STARTING, PURGER_RUNNING, PURGER_IDLE, PURGER_NEVER };

static struct {
	_Atomic int state;
	_Atomic uint32_t wake;          /* futex word, bumped by a kick */
	za_lock_t round;                /* held by the worker for a round's work */
} purger;

/* Pages allocated and freed, mappings made, reused and freed, sheaves
 * exchanged at the barns. */
static long long page_activity(za_mm_t *mm)
{
	struct vmalloc_stats vs;
	vmalloc_stats(&vs);
	return za_stat(mm, "pgalloc") + za_stat(mm, "pgfree") +
	       (long long)(vs.maps + vs.reuses + vs.frees + barns_activity());
}

static void sleep_until_kicked(void)
{
	for (;;) {
		uint32_t seq = atomic_load(&purger.wake);
		if (atomic_load(&purger.state) != PURGER_IDLE)
			return;
		za_futex_wait(&purger.wake, seq);
	}
}

/* Quiet rounds in a row after which nothing dirty is left: a block freed
 * before the first is purged by the third (za_purge's three epochs). */
#define QUIET_ROUNDS 3

static void *purge_worker(void *arg)
{
	za_mm_t *mm = arg;
	uint64_t period_ns = (uint64_t)mm->cfg.purge_delay_ms * 500000u;
	long long seen = page_activity(mm);
	int quiet = 0;
	for (;;) {
		za_futex_wait_timeout(&purger.wake, atomic_load(&purger.wake), period_ns);
		long long now = page_activity(mm);
		bool idle = now == seen;
		za_lock(&purger.round);
		if (idle) {
			sheaves_flush_barns();
			cpu_cache_drain();
			slab_shrink_reclaim(mm);
			za_drain_all_pages(mm);
		} else {
			barns_decay();
		}
		za_vmstat_tick(mm);
		long purged = za_purge(mm, 3);
		vmalloc_decay(idle);
		thread_caches_note_idle();
		za_unlock(&purger.round);
		seen = page_activity(mm);
		quiet = idle && !purged && now == seen ? quiet + 1 : 0;
		if (quiet == QUIET_ROUNDS) {
			atomic_store(&purger.state, PURGER_IDLE);
			/* A kick between the last look and the store saw RUNNING
			 * and left: look again before sleeping. */
			int state = PURGER_IDLE;
			if (page_activity(mm) == seen ||
			    !atomic_compare_exchange_strong(&purger.state, &state, PURGER_RUNNING))
				sleep_until_kicked();
			seen = page_activity(mm);
			quiet = 0;
		}
	}
	return NULL;
}

/* A thread that takes no signal meant for the program. */
static void start_worker(void)
{
	pthread_attr_t attr;
	pthread_t thread;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 << 10);
	int err = za_thread_start(&thread, &attr, purge_worker, zm.mm);
	pthread_attr_destroy(&attr);
	atomic_store(&purger.state, err ? PURGER_NEVER : PURGER_RUNNING);
}

/* Memory went back to the page allocator: make sure the worker runs.
 * Costs one load when it does.  Called with no lock held. */
void purge_worker_kick(void)
{
	int state = load_relaxed(&purger.state);
	if (likely(state == PURGER_RUNNING || state == PURGER_STARTING || state == PURGER_NEVER))
		return;
	if (state == PURGER_IDLE) {
		if (atomic_compare_exchange_strong(&purger.state, &state, PURGER_RUNNING)) {
			atomic_fetch_add(&purger.wake, 1);
			za_futex_wake(&purger.wake, 1);
		}
		return;
	}
	if (zm.mm->cfg.purge_delay_ms &&
	    atomic_compare_exchange_strong(&purger.state, &state, PURGER_STARTING))
		start_worker();
}

/* za_verify of the malloc's system: no round of the worker meanwhile
 * (its flushes free objects into slabs the check is walking). */
void purge_worker_pause(struct za_mm *mm, bool pause)
{
	if (mm != zm.mm)
		return;
	if (pause)
		za_lock(&purger.round);
	else
		za_unlock(&purger.round);
}

/* The child of a fork has no worker.  It starts its own when needed,
 * unless the parent was multithreaded: such a child may only make calls
 * that are async-signal-safe (POSIX), and creating a thread is not. */
void purge_worker_after_fork(bool parent_multithreaded)
{
	atomic_store(&purger.state, parent_multithreaded ? PURGER_NEVER : PURGER_OFF);
	purger.round = (za_lock_t){ 0 };        /* the worker may have held it */
}
