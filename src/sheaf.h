/*
 * Sheaves and barns: the mechanism under SLUB's per-CPU sheaves
 * (slub_sheaf.c, the kernel's since 7.0) and the malloc's per-thread ones
 * (malloc/sheaf.c).  Each keeps its own policy -- when to swap, trade,
 * refill, flush -- on the same two structures:
 *
 * A sheaf is an array of free objects of one cache, popped and pushed at
 * its end.  A barn holds whole sheaves, full ones (objects ready to go)
 * and empty ones (room for frees), exchanged one for the other under its
 * lock: a CPU or thread whose sheaf ran empty trades it for a full one,
 * one whose sheaf filled up trades it for an empty one, and a producer
 * and a consumer of one kind of object pass it along a sheaf at a time.
 *
 * A full sheaf on a barn holds exactly its capacity, an empty one nothing:
 * whoever takes one knows which it got without looking.  The static
 * empty_sheaf has capacity 0, so that "empty" and "full" both hold for it
 * and every fast path misses on it; it is no one's and on no barn.
 */
#ifndef ZA_SHEAF_H
#define ZA_SHEAF_H

#include "mm_layers.h"

struct sheaf {
	unsigned int size;              /* objects held */
	unsigned int capacity;          /* 0 only for the static empty sheaf */
	struct sheaf *next;             /* on a barn list */
	void *objects[];
};

extern struct sheaf empty_sheaf;

struct barn {
	za_lock_t lock;
	struct sheaf *full, *empty;
	unsigned int nr_full, nr_empty;
};

static inline void sheaf_swap(struct sheaf **a, struct sheaf **b)
{
	struct sheaf *t = *a;
	*a = *b;
	*b = t;
}

/* Under the barn's lock: a full (or empty) sheaf onto its list, off it
 * (NULL if none), or traded for one of the other kind (NULL if none: give
 * stays the caller's). */
void barn_add(struct za_mm *mm, struct barn *b, struct sheaf *s, bool full);
struct sheaf *barn_take(struct za_mm *mm, struct barn *b, bool full);
struct sheaf *barn_trade(struct za_mm *mm, struct barn *b, struct sheaf *give, bool give_full);
/* The same two, taking the lock. */
void barn_put(struct za_mm *mm, struct barn *b, struct sheaf *s, bool full);
struct sheaf *barn_get(struct za_mm *mm, struct barn *b, bool full);

/* za_verify: a barn's lists hold sheaves of `capacity`, full and empty,
 * as many as it counts ("what" names it in the report).  Under its lock. */
int barn_verify(struct za_mm *mm, struct barn *b, unsigned int capacity, const char *what);

#endif /* ZA_SHEAF_H */
