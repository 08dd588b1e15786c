/*
 * Restartable sequences: per-CPU stacks updated with plain loads and one
 * commit store, no lock and no atomic instruction (percpu=rseq).
 *
 * The kernel keeps a preempted task off its per-CPU lists by disabling
 * preemption.  User space cannot; instead the kernel restarts it: a thread
 * that is preempted, migrated or signalled while its instruction pointer is
 * inside a registered critical section resumes at the section's abort
 * handler, not where it was.  So a section that reads the current CPU's
 * index, reads the stack, and ends with a single store that publishes
 * everything it decided, either ran alone on that CPU from its first
 * instruction to its commit, or did nothing visible.  The kernel checks the
 * four signature bytes before every abort handler (RSEQ_SIG, glibc's).
 *
 * Every per-CPU fast path in zonealloc is one of three sections on one
 * shape of data, struct rseq_stack -- {head, tally}, 16 bytes committed by
 * one 16-byte store:
 *   pop       the top element; head = its successor.
 *   push      a chain first..last on top; last's successor = old head.
 *   take      the whole {head, tally}, leaving {NULL, 0}: how a slow path
 *             takes a stack apart (it installs one with
 *             rseq_stack_publish).
 * head is an element whose successor pointer sits at a fixed offset inside
 * it (a page descriptor's lru.next, a free object's free pointer, a
 * quicklist page's first word).  tally is the user's: a 64-bit word that
 * each section adds a delta to, and refuses (fails, changing nothing) if
 * the sum has a bit of a mask set.  Each user lays out in it what must
 * change with the head -- a length whose top bit is the stack's capacity,
 * hit counters whose top bits ask for a fold, a slab's pfn -- so that its
 * counters stay per-CPU and inside the section.
 *
 * A stack is owned by its index (CPU or mm_cid): only sections running as
 * that index touch it.  Anyone else -- a drain of another CPU's lists, a
 * verifier, a slab flush -- first sets the index's stop word, which every
 * section reads, then calls rseq_fence(): when it returns, every section
 * that started before the stop word was set has aborted or committed, and
 * every later one fails.  The stopper then owns the stacks until it clears
 * the word.  Stops happen under the index's per-CPU lock, so at most one
 * thread owns a stopped index.
 *
 * Where rseq is unavailable (no glibc registration, an architecture without
 * the sections below, TSan, which cannot follow stores made in assembly)
 * the memory system uses the per-CPU trylock instead: rseq_setup() says why.
 */
#ifndef ZA_RSEQ_H
#define ZA_RSEQ_H

#include "platform.h"

struct za_mm;

struct rseq_stack {
	void *head;
	uint64_t tally;
} __attribute__((aligned(16)));

/* The sections' assembly writes a stack's words as plain words, so they
 * are not _Atomic; C code reads and sets them relaxed, through these. */
static inline void *rseq_head_load(const struct rseq_stack *s)
{
	return __atomic_load_n(&s->head, __ATOMIC_RELAXED);
}

static inline uint64_t rseq_tally_load(const struct rseq_stack *s)
{
	return __atomic_load_n(&s->tally, __ATOMIC_RELAXED);
}

static inline void rseq_tally_store(struct rseq_stack *s, uint64_t v)
{
	__atomic_store_n(&s->tally, v, __ATOMIC_RELAXED);
}

/* Where a family of per-CPU stacks is: the stack of index i lies at
 * base + (i << shift); its stop word at stop bytes from the stack. */
struct rseq_percpu {
	char *base;
	long stop;
	unsigned int shift;
	unsigned int nr;                /* indices: a larger one fails */
	long index_tls;                 /* thread pointer to the index (cpu_id or mm_cid) */
};

/*
 * How an element keeps its successor: at `off` bytes, stored as
 * next ^ key ^ (bswap64(slot address) & swap) -- the hardened free
 * pointers of slub.c -- and a popped element's successor other than NULL
 * must lie in [base, base + span), a pair of words at `range` bytes from
 * the stack (the CPU slab's extent, written before the stack is opened):
 * a hardened link always has its range.  All zero but off: a plain
 * pointer, unchecked.
 */
struct rseq_link {
	long off;
	uint64_t key, swap;
	long range;
};

enum rseq_status {
	RSEQ_OK,
	RSEQ_FAIL,      /* empty, full, a mask bit, another index, stopped: nothing done */
	RSEQ_ABORTED,   /* preempted, migrated or signalled: nothing done, try again */
	RSEQ_MISMATCH,  /* pop: successor out of range; push: guard unmet.  Nothing done */
};

/*
 * The tally of a counted stack (pcp.h's fronts, quicklist.c's lists): its
 * length, then its hits -- pushes and pops -- in 20-bit fields whose next
 * bit, once set, fails every section until a lock path folds them into
 * the user's events.
 */
#define RSEQ_LEN_MASK   ((1ULL << 20) - 1)
#define RSEQ_PUSH_ONE   (1ULL << 20)
#define RSEQ_POP_ONE    (1ULL << 41)
#define RSEQ_HITS_MASK  ((1ULL << 21) - 1)            /* a field, shifted down */
#define RSEQ_FOLD       ((1ULL << 40) | (1ULL << 61))

static inline uint64_t tally_pushes(uint64_t t) { return (t / RSEQ_PUSH_ONE) & RSEQ_HITS_MASK; }
static inline uint64_t tally_pops(uint64_t t) { return (t / RSEQ_POP_ONE) & RSEQ_HITS_MASK; }

/* The process's rseq area: thread pointer to rseq_cs (0: no rseq). */
extern long rseq_cs_tls;

/*
 * Chooses mm's per-CPU mechanism from percpu= and percpu_index= and what the
 * process and machine offer; sets mm->percpu_rseq, mm->rseq_cpu_offset (the
 * index this_cpu() reads) and mm->percpu_mode (what za_percpu_mode says).
 */
void rseq_setup(struct za_mm *mm);
/* With the process's own rseq area (mm->rseq_own_area): registers the
 * calling thread's, once; false if the kernel refused it. */
bool rseq_thread_register(void);
/* Waits until no section that began before it can still commit. */
void rseq_fence(void);

/* A stopper's side of the protocol above, on one index's stop word (under
 * the index's lock): rseq_index_mark sets it -- several marks may share one
 * rseq_fence --, rseq_index_stop marks and fences, rseq_index_start lets
 * the sections in again. */
static inline void rseq_index_mark(_Atomic uint32_t *stop)
{
	store_relaxed(stop, 1);
}

static inline void rseq_index_stop(_Atomic uint32_t *stop)
{
	rseq_index_mark(stop);
	rseq_fence();
}

static inline void rseq_index_start(_Atomic uint32_t *stop)
{
	atomic_store_explicit(stop, 0, memory_order_release);
}
/* An abort, counted on the calling CPU (rseq_abort). */
void rseq_count_abort(struct za_mm *mm);

#if defined(__x86_64__)
#include "rseq_x86_64.h"
#else
/* No sections on this architecture: rseq_setup() keeps the lock.  An own
 * rseq area still makes this_cpu() two loads; its signature guards
 * nothing here. */
#define RSEQ_ARCH_NONE 1
#define RSEQ_SIG 0x53053053u
static inline int rseq_pop(const struct rseq_percpu *pc, const struct rseq_link *lk,
			   uint64_t delta, uint64_t fail, void **out)
{
	(void)pc, (void)lk, (void)delta, (void)fail, (void)out;
	return RSEQ_FAIL;
}
static inline int rseq_push(const struct rseq_percpu *pc, const struct rseq_link *lk,
			    void *first, void *last, uint64_t delta, uint64_t fail,
			    uint64_t guard_mask, uint64_t guard)
{
	(void)pc, (void)lk, (void)first, (void)last, (void)delta, (void)fail;
	(void)guard_mask, (void)guard;
	return RSEQ_FAIL;
}
static inline int rseq_take(const struct rseq_percpu *pc, unsigned int index,
			    struct rseq_stack *old)
{
	(void)pc, (void)index, (void)old;
	return RSEQ_FAIL;
}
#endif

/* The sections with their retries: each abort is counted and the section
 * run again, on whatever CPU the thread is now. */
static inline __attribute__((always_inline)) int rseq_pop_retry(struct za_mm *mm, const struct rseq_percpu *pc,
				 const struct rseq_link *lk, uint64_t delta, uint64_t fail,
				 void **out)
{
	int st;
	while (unlikely((st = rseq_pop(pc, lk, delta, fail, out)) == RSEQ_ABORTED))
		rseq_count_abort(mm);
	return st;
}

static inline __attribute__((always_inline)) int rseq_push_retry(struct za_mm *mm, const struct rseq_percpu *pc,
				  const struct rseq_link *lk, void *first, void *last,
				  uint64_t delta, uint64_t fail, uint64_t guard_mask, uint64_t guard)
{
	int st;
	while (unlikely((st = rseq_push(pc, lk, first, last, delta, fail, guard_mask, guard)) ==
			RSEQ_ABORTED))
		rseq_count_abort(mm);
	return st;
}

/* A take on index `index` only: fails if the thread is elsewhere. */
static inline __attribute__((always_inline)) int rseq_take_retry(struct za_mm *mm, const struct rseq_percpu *pc,
				  unsigned int index, struct rseq_stack *old)
{
	int st;
	while (unlikely((st = rseq_take(pc, index, old)) == RSEQ_ABORTED))
		rseq_count_abort(mm);
	return st;
}

/* A stack written whole by its owner -- a stopper, or the holder of a
 * stack no section writes (slub.c's taken stacks): sections read it
 * entirely old or entirely new. */
static inline void rseq_stack_publish(struct rseq_stack *dst, struct rseq_stack v)
{
#if defined(__x86_64__)
	/* movdqa: a single 16-byte store, atomic on processors with AVX
	 * (rseq_setup requires it) */
	__asm__ volatile("movq %1, %%xmm0\n\t"
			 "movq %2, %%xmm1\n\t"
			 "punpcklqdq %%xmm1, %%xmm0\n\t"
			 "movdqa %%xmm0, %0"
			 : "=m"(*dst) : "r"(v.head), "r"(v.tally) : "xmm0", "xmm1", "memory");
#else
	*dst = v;
#endif
}

#endif /* ZA_RSEQ_H */
