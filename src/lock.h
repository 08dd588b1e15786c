/*
 * Locks.
 *
 * za_lock_t is the zone lock (and later the slab list_lock): a spinlock that
 * spins briefly and then sleeps on a futex, because in user space the holder
 * can be preempted and more threads than CPUs is the normal case.  States:
 * 0 free, 1 held, 2 held with (possible) sleepers.
 *
 * za_trylock_t is the per-CPU lock of the kernel's pcp_spin_trylock: the fast
 * paths only ever try it and fall back to the zone when it is busy (another
 * thread on the same CPU, or a remote drain), so it never has sleepers and
 * is released with a plain store.
 *
 * With ZA_DEBUG_VM, both remember their holder, so that code which must run
 * under a lock can say so (za_lock_assert_held, the kernel's
 * lockdep_assert_held); without it they are what they were, a word.
 */
#ifndef ZA_LOCK_H
#define ZA_LOCK_H

#include "debug_vm.h"
#include "platform.h"
#include <sched.h>

typedef struct {
	_Atomic uint32_t word;
#ifdef ZA_DEBUG_VM
	_Atomic uintptr_t owner;
#endif
} za_lock_t;

#ifdef ZA_DEBUG_VM
/* A thread's identity: the address of a per-thread variable. */
extern __thread char za__thread_tag __attribute__((tls_model("initial-exec")));
#define lock_owner_set(l)   store_relaxed(&(l)->owner, (uintptr_t)&za__thread_tag)
#define lock_owner_clear(l) store_relaxed(&(l)->owner, 0)
#define lock_held_here(l)   (load_relaxed(&(l)->owner) == (uintptr_t)&za__thread_tag)
#else
#define lock_owner_set(l)   do { } while (0)
#define lock_owner_clear(l) do { } while (0)
#define lock_held_here(l)   true
#endif

/* The calling thread holds lock l (a za_lock_t or za_trylock_t), as the
 * comment of the function it is in says; mm's error handler hears it if
 * not.  ZA_DEBUG_VM only. */
#define za_lock_assert_held(mm, l) VM_BUG_ON((mm), !lock_held_here(l))

static inline bool za_lock_try(za_lock_t *l)
{
	uint32_t expect = 0;
	bool ok = atomic_compare_exchange_strong_explicit(&l->word, &expect, 1,
			memory_order_acquire, memory_order_relaxed);
	if (ok)
		lock_owner_set(l);
	return ok;
}

void za_lock_slow(za_lock_t *l);

static inline void za_lock(za_lock_t *l)
{
	if (!za_lock_try(l))
		za_lock_slow(l);
}

static inline void za_unlock(za_lock_t *l)
{
	lock_owner_clear(l);
	if (atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2)
		za_futex_wake(&l->word, 1);
}

typedef struct {
	_Atomic uint8_t held;
#ifdef ZA_DEBUG_VM
	_Atomic uintptr_t owner;
#endif
} za_trylock_t;

static inline bool za_trylock(za_trylock_t *l)
{
	bool ok = !atomic_exchange_explicit(&l->held, 1, memory_order_acquire);
	if (ok)
		lock_owner_set(l);
	return ok;
}

static inline void za_tryunlock(za_trylock_t *l)
{
	lock_owner_clear(l);
	atomic_store_explicit(&l->held, 0, memory_order_release);
}

/* For the rare callers that must have the per-CPU lock (drains). */
static inline void za_trylock_wait(za_trylock_t *l)
{
	for (int spins = 0; !za_trylock(l); spins++) {
		if (spins < 64)
			cpu_relax();
		else
			sched_yield();
	}
}

#endif /* ZA_LOCK_H */
