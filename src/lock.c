/*
 * The slow path of the zone lock.  Spin first, reading the word until it
 * looks free: holds are a few microseconds, and sleeping costs far more
 * than that in wake-up latency.  Only a holder that stays away longer than
 * the spin budget (preempted, most likely: more threads than CPUs) sends
 * waiters to sleep on the futex.  A sleeper marks the word 2 so that the
 * releaser knows to wake someone.
 */
#include "lock.h"

#define SPIN_CYCLES (100 * 1000)   /* some 30-50 us */

void za_lock_slow(za_lock_t *l)
{
	uint64_t start = za_cycles();
	do {
		cpu_relax();
		if (load_relaxed(&l->word) == 0 && za_lock_try(l))
			return;
	} while (za_cycles() - start < SPIN_CYCLES);
	while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
		za_futex_wait(&l->word, 2);
	lock_owner_set(l);
}

#ifdef ZA_DEBUG_VM
__thread char za__thread_tag __attribute__((tls_model("initial-exec")));
#endif
