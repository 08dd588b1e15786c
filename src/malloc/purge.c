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
 * each CPU's tuned page-list high (by up to half: pcp_decay_shift) and
 * sent what lies above it to the buddy lists.  When a round saw no page allocated or
 * freed, no mapping and no sheaf exchanged at a barn, the process is idle:
 * the caches above the buddy lists -- barns, slabs, per-CPU page lists --
 * are emptied into them first, so that what they hold is purged too a
 * delay later, and the mapping cache is given back.  Busy rounds give back
 * half of what each barn held unused all round (barns_decay), what the
 * mapping cache holds beyond recent demand (mappings.c), and (purge_excess)
 * the free resident memory beyond the arena's recent swing in demand
 * (arena_allowance), after sorting the slab caches' partial slabs so that
 * the emptiest empty out.
 * A thread that made no call for two rounds gives its sheaves and blocks
 * back at its next call (thread_caches_note_idle).  After three quiet
 * rounds (idle, nothing purged) nothing dirty is left, and the worker
 * ends; the next kick starts another.  So a quiet process has no thread of
 * ours, and a busy one has a helper that never keeps it alive (platform.h):
 * when a thread of the program exits, the worker looks at once whether it
 * was the last, and at every round.
 */
#include "internal.h"
#include "slab.h"
#include "publish.h"

enum { PURGER_OFF, PURGER_RUNNING, PURGER_NEVER };

static struct {
	_Atomic int state;
	_Atomic uint32_t wake;          /* futex word, bumped by a thread's exit */
	atomic_bool exit_seen;          /* a thread exited since the worker last looked */
	za_lock_t round;                /* held by the worker for a round's work */
	sigset_t program_mask;          /* of the thread that started the worker */
	unsigned long arena_swing;      /* pages kept for the demand's swing */
} purger;

/* Pages allocated and freed, mappings made, reused and freed, sheaves
 * exchanged at the barns. */
static long long page_activity(za_mm_t *mm)
{
	struct mapping_stats vs;
	mapping_stats(&vs);
	return za_stat(mm, "pgalloc") + za_stat(mm, "pgfree") +
	       (long long)(vs.maps + vs.reuses + vs.frees + barns_activity());
}

#define EXIT_POLL_NS 1000000u           /* the first look after a thread's exit */
#define EXIT_POLL_MAX_NS 500000000u

/*
 * Sleeps until the next round is due; false once the program is gone
 * (za_helper_sleep looks about once a second).  A thread's exit
 * (purge_worker_thread_exit) may have been the program's last, but the
 * thread is still finishing as it says so: the worker looks after 1, 2, 4,
 * ... ms, and starts over at 1 ms on the next exit -- at most a look per
 * exit or millisecond, whichever is fewer.
 */
static bool sleep_round(uint64_t period_ns)
{
	uint64_t start = za_now_ns(), poll = 0;
	for (;;) {
		uint32_t seq = atomic_load(&purger.wake);
		if (atomic_exchange(&purger.exit_seen, false))
			poll = EXIT_POLL_NS;
		uint64_t slept = za_now_ns() - start;
		if (slept >= period_ns)
			return true;
		uint64_t nap = period_ns - slept;
		if (!poll) {
			if (!za_helper_sleep(&purger.wake, seq, nap))
				return false;
			continue;
		}
		za_futex_wait_timeout(&purger.wake, seq, nap < poll ? nap : poll);
		if (za_program_gone())
			return false;
		poll = poll < EXIT_POLL_MAX_NS ? 2 * poll : 0;
	}
}

/*
 * What a busy round keeps of the free resident memory: the most the
 * arena's demand rose above today's during the round, or half of what the
 * last round kept for that, whichever is more, and a quarter of what is
 * in use (with less, the fragments between bigbuf's buffers, which its
 * next buffers reuse, went back and were faulted in again: +55% system
 * time; with a quarter, the same faults as without purging).  The rest
 * goes back, whatever its age (a busy program's free blocks keep merging
 * with pages freed just now: they never grow old).
 * So a program reuses what it swings through, round after round, and
 * memory a phase of more demand left behind goes back within a few rounds.
 */
#define ARENA_SLACK_SHIFT 2

static unsigned long arena_allowance(za_mm_t *mm)
{
	unsigned long in_use, peak = za_used_pages_peak(mm, &in_use);
	unsigned long swing = peak > in_use ? peak - in_use : 0;
	purger.arena_swing = swing > purger.arena_swing / 2 ? swing : purger.arena_swing / 2;
	return purger.arena_swing + (in_use >> ARENA_SLACK_SHIFT);
}

/* One round: the caches above the buddy lists emptied into them if the
 * process was idle (else the barns decayed), the per-CPU lists' highs
 * lowered, old free blocks purged, the mapping cache trimmed to demand,
 * idle threads noted.  Returns the pages purged. */
static long purge_round(za_mm_t *mm, bool idle)
{
	VM_BUG_ON(mm, atomic_load(&purger.state) == PURGER_OFF);        /* a worker runs */
	za_lock(&purger.round);
	if (idle) {
		sheaves_flush_barns();
		cpu_cache_drain();
		slab_shrink_reclaim(mm);
		za_drain_all_pages(mm);
	} else {
		barns_decay();
		if (mm->cfg.purge_excess)
			slab_sort_partials(mm);
	}
	za_vmstat_tick(mm);
	unsigned long keep = arena_allowance(mm);       /* every round: it starts the next period */
	if (idle || !mm->cfg.purge_excess)
		keep = ZA_PURGE_KEEP_ALL;
	long purged = za_purge_keep(mm, 3, keep);
	mapping_cache_decay(idle);
	thread_caches_note_idle();
	za_unlock(&purger.round);
	if (mm->publisher)
		za_publish(mm);
	return purged;
}

/* Quiet rounds in a row after which nothing dirty is left: a block freed
 * before the first is purged by the third (za_purge's three epochs). */
#define QUIET_ROUNDS 3

/* Quiet: the worker may end, and a kick start another.  A kick between
 * the last look and the store saw RUNNING and left: if anything happened
 * since `seen`, the worker stays, unless a kick already started another. */
static bool worker_retires(za_mm_t *mm, long long seen)
{
	int off = PURGER_OFF;
	atomic_store(&purger.state, PURGER_OFF);
	return page_activity(mm) == seen ||
	       !atomic_compare_exchange_strong(&purger.state, &off, PURGER_RUNNING);
}

static void *purge_worker(void *arg)
{
	za_mm_t *mm = arg;
	uint64_t period_ns = (uint64_t)mm->cfg.purge_delay_ms * 500000u;
	long long seen = page_activity(mm);
	int quiet = 0;
	za_thread_name("za-purge");
	while (sleep_round(period_ns)) {
		long long now = page_activity(mm);
		bool idle = now == seen;
		long purged = purge_round(mm, idle);
		seen = page_activity(mm);
		quiet = idle && !purged && now == seen ? quiet + 1 : 0;
		if (quiet == QUIET_ROUNDS && worker_retires(mm, seen)) {
			za_thread_exit(NULL);
			return NULL;
		}
		quiet %= QUIET_ROUNDS;
	}
	atomic_store(&purger.state, PURGER_NEVER);      /* the process ends now */
	za_thread_exit(&purger.program_mask);
	return NULL;
}

/* A worker's stack is a program thread's (the C library's default): when
 * the program is gone, the process's exit -- its atexit handlers, its
 * destructors -- runs on it.  Under an address-space limit (ulimit -v),
 * which the reservation counts against, 256 KiB. */
#define LIMITED_STACK (256 << 10)

/* The state is RUNNING before the thread exists, so that no kick starts a
 * second one, and a worker that retires at once is not followed by a
 * store that would say it runs. */
static void start_worker(void)
{
	VM_BUG_ON(zm.mm, atomic_load(&purger.state) != PURGER_RUNNING);
	pthread_attr_t attr;
	pthread_t thread;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (zm.address_limited)
		pthread_attr_setstacksize(&attr, LIMITED_STACK);
	if (za_thread_start(&thread, &attr, purge_worker, zm.mm, &purger.program_mask))
		atomic_store(&purger.state, PURGER_NEVER);
	pthread_attr_destroy(&attr);
}

/* Memory went back to the page allocator: make sure the worker runs.
 * Costs one load when it does.  Called with no lock held. */
void purge_worker_kick(void)
{
	int state = load_relaxed(&purger.state);
	if (likely(state != PURGER_OFF))
		return;
	if (zm.mm->cfg.purge_delay_ms &&
	    atomic_compare_exchange_strong(&purger.state, &state, PURGER_RUNNING))
		start_worker();
}

/* A thread of the program is exiting (its cache's destructor): if it is
 * the last, the worker must not outlive it.  The first exit since the
 * worker last looked wakes it; a worker that is not asleep finds the flag. */
void purge_worker_thread_exit(void)
{
	if (!atomic_exchange(&purger.exit_seen, true) &&
	    load_relaxed(&purger.state) == PURGER_RUNNING) {
		atomic_fetch_add(&purger.wake, 1);
		za_futex_wake(&purger.wake, 1);
	}
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

/* The system's segment (publish=1, the malloc's default) is refreshed by
 * the worker's rounds, and its name goes when the process exits: a
 * destructor, not atexit, which the first malloc may be called from. */
__attribute__((destructor)) static void publish_at_exit(void)
{
	if (zm.mm)
		publish_unlink(zm.mm);
}

/* The child of a fork has no worker.  It starts its own when needed,
 * unless the parent was multithreaded: such a child may only make calls
 * that are async-signal-safe (POSIX), and creating a thread is not. */
void purge_worker_after_fork(bool parent_multithreaded)
{
	atomic_store(&purger.state, parent_multithreaded ? PURGER_NEVER : PURGER_OFF);
	atomic_store(&purger.exit_seen, false);
	purger.round = (za_lock_t){ 0 };        /* the worker may have held it */
}
