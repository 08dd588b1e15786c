/*
 * The slow path of the zone lock: spin a little (the holder is usually
 * running and about to release), then sleep on the futex.  A waiter marks
 * the word 2 so that the releaser knows to wake someone.
 */
#include "lock.h"

#define SPIN_TRIES 100

void za_lock_slow(za_lock_t *l)
{
	for (int i = 0; i < SPIN_TRIES; i++) {
		cpu_relax();
		if (load_relaxed(&l->word) == 0 && za_lock_try(l))
			return;
	}
	while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
		za_futex_wait(&l->word, 2);
}
