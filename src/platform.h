/*
 * The platform layer: compiler hints, relaxed counters, the cycle counter,
 * futexes and the OS memory primitives.  Everything machine-specific lives
 * here or in os.c/percpu.c.
 */
#ifndef ZA_PLATFORM_H
#define ZA_PLATFORM_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sanitizers.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ZA_CACHELINE 64
#define za_cacheline_aligned _Alignas(ZA_CACHELINE)
#define ZA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define relaxed memory_order_relaxed
#define load_relaxed(p)      atomic_load_explicit((p), memory_order_relaxed)
#define store_relaxed(p, v)  atomic_store_explicit((p), (v), memory_order_relaxed)

/*
 * A counter written only by whoever holds the lock that owns it (or by its
 * thread), read locklessly by folding code.  A relaxed load and store (no
 * read-modify-write instruction) is all the writer needs.  On x86-64 that
 * is one add to memory, which compilers do not make of the atomic pair (the
 * fast paths of malloc and free count every call): the add's store is one
 * aligned quadword, as atomic as the relaxed store.  Sanitizer builds keep
 * the pair, which they can see.
 */
typedef _Atomic uint64_t za_counter_t;

static inline void counter_add(za_counter_t *c, uint64_t n)
{
#if defined(__x86_64__) && !defined(ZA_TSAN) && !defined(ZA_ASAN)
	__asm__("addq %1, %0" : "+m"(*c) : "er"(n));
#else
	store_relaxed(c, load_relaxed(c) + n);
#endif
}

/* A counter bumped from anywhere, without a lock: only for rare events. */
static inline void counter_add_atomic(za_counter_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

uint64_t za_cycles_fallback(void);   /* nanoseconds, where there is no cycle counter */

/* A cheap, monotonic-enough cycle counter for lock hold times. */
static inline uint64_t za_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return za_cycles_fallback();
#endif
}

/* Nanoseconds per 2^32 cycles, calibrated once per process. */
uint64_t za_cycles_to_ns(uint64_t cycles);

void za_futex_wait(_Atomic uint32_t *addr, uint32_t val);
void za_futex_wait_timeout(_Atomic uint32_t *addr, uint32_t val, uint64_t ns);
void za_futex_wake(_Atomic uint32_t *addr, int nr);

/* OS memory (os.c).  Metadata never comes from malloc: the malloc front
 * end is built on this library and must not recurse into itself. */
void *za_os_alloc(size_t size);            /* zeroed, page aligned, or NULL */
void za_os_free(void *p, size_t size);
bool za_os_release(void *p, size_t size);  /* give the pages back, keep the range */
/*
 * Helper threads (os.c): the purge worker, kswapd, the vmstat worker.  A
 * helper takes no signal meant for the program (all blocked while it is
 * created, so it starts with them blocked; the creator's mask is kept in
 * *program_mask), names itself (za_thread_name: "za-purge", as top -H and
 * /proc/PID/task/TID/comm show it), and never keeps a process alive: it
 * sleeps in za_helper_sleep, which asks za_program_gone() about once a
 * second, and if no thread of the program is left, it calls
 * za_thread_exit(program_mask) -- the C library ends the process on it
 * then, under the program's mask -- and returns; otherwise, when it ends,
 * za_thread_exit(NULL).  za_thread_start returns pthread_create's
 * error.
 */
int za_thread_start(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
		    sigset_t *program_mask);
void za_thread_name(const char *name);     /* the calling thread's, 15 characters at most */
void za_thread_exit(const sigset_t *program_mask);
/* Sleeps until *word is not val or ns pass (UINT64_MAX: no limit); false
 * if the program is gone meanwhile. */
bool za_helper_sleep(_Atomic uint32_t *word, uint32_t val, uint64_t ns);
bool za_program_gone(void);
uint64_t za_now_ns(void);                  /* CLOCK_MONOTONIC_RAW */

#endif /* ZA_PLATFORM_H */
