/*
 * A bounded single-producer single-consumer ring of pointers: the "socket"
 * between a sender and a receiver thread in netperf-udp, sockperf-udp and
 * hackbench.  A full or empty ring makes the caller back off (pause, then
 * yield), since with more threads than cores the other side may not run.
 */
#ifndef ZABENCH_QUEUE_H
#define ZABENCH_QUEUE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define RING_SIZE 256   /* power of two */

struct ring {
	_Alignas(64) atomic_size_t head;        /* next slot to read */
	_Alignas(64) atomic_size_t tail;        /* next slot to write */
	_Alignas(64) void *slot[RING_SIZE];
};

static inline bool ring_push(struct ring *r, void *p)
{
	size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (t - atomic_load_explicit(&r->head, memory_order_acquire) == RING_SIZE)
		return false;
	r->slot[t & (RING_SIZE - 1)] = p;
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return true;
}

static inline void *ring_pop(struct ring *r)
{
	size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (h == atomic_load_explicit(&r->tail, memory_order_acquire))
		return NULL;
	void *p = r->slot[h & (RING_SIZE - 1)];
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
	return p;
}

/* What the ring holds, as the reader sees it. */
static inline size_t ring_count(struct ring *r)
{
	return atomic_load_explicit(&r->tail, memory_order_acquire) -
	       atomic_load_explicit(&r->head, memory_order_relaxed);
}

/* Waiting for the other side: spin briefly, then give up the CPU. */
static inline void backoff(unsigned int *spins)
{
	if (++*spins >= 64)
		sched_yield();
#if defined(__x86_64__) || defined(__i386__)
	else
		__builtin_ia32_pause();
#endif
}

#endif
