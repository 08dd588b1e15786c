#ifndef ZA_QUICKLIST_H
#define ZA_QUICKLIST_H

#include "mm_layers.h"

enum ql_event {
	QL_HIT,
	QL_MISS,
	QL_FREE,
	QL_TRIM,                /* pages freed by trims and shrinks */
	QL_BYTES_ZEROED,        /* by quicklist users' allocations */
	NR_QL_EVENTS
};

/* One list of one CPU: a stack threaded through the pages' first words. */
struct quicklist {
	za_trylock_t lock;
	void *page;
	_Atomic long nr_pages;
	za_counter_t stat[NR_QL_EVENTS];
} __attribute__((aligned(ZA_CACHELINE)));

/* The quicklist layer's hooks (mm_layers.c). */
long quicklist_pages(const struct za_mm *mm, int node);     /* node < 0: all */
void quicklist_stat_fold(struct za_mm *mm, uint64_t *totals);
const char *quicklist_event_name(int e);
void quicklist_exit(struct za_mm *mm);
void quicklist_lock_all(struct za_mm *mm, enum lock_all_mode mode);
int quicklist_verify(struct za_mm *mm);

#endif
