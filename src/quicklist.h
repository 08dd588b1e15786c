#ifndef ZA_QUICKLIST_H
#define ZA_QUICKLIST_H

#include "mm_layers.h"
#include "rseq.h"

enum ql_event {
	QL_HIT,
	QL_MISS,
	QL_FREE,
	QL_TRIM,                /* pages freed by trims and shrinks */
	QL_BYTES_ZEROED,        /* by quicklist users' allocations */
	NR_QL_EVENTS
};

/*
 * One list of one CPU: a stack threaded through the pages' first words.
 * stack.tally is rseq.h's counted stack: its length, and with percpu=rseq
 * the hits (pops, pushes) the sections made, folded into stat by a lock
 * holder.  The lock serialises everyone who is not a section; with
 * sections, a lock holder also stops the list (rseq_stop) before it
 * touches the stack.
 */
struct quicklist {
	struct rseq_stack stack;
	_Atomic uint32_t rseq_stop;
	za_trylock_t lock;
	za_counter_t stat[NR_QL_EVENTS];
} __attribute__((aligned(ZA_CACHELINE)));

/* The quicklist layer's hooks (mm_layers.c). */
int quicklist_init(struct za_mm *mm);
unsigned long quicklist_count(void *mm);
unsigned long quicklist_scan(void *mm, unsigned long nr);
void quicklist_drain(struct za_mm *mm);
long quicklist_pages(const struct za_mm *mm, int node);     /* node < 0: all */
void quicklist_stat_fold(struct za_mm *mm, uint64_t *totals);
const char *quicklist_event_name(int e);
void quicklist_lock_all(struct za_mm *mm, enum lock_all_mode mode);
int quicklist_verify(struct za_mm *mm);

#endif
