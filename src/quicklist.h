#ifndef ZA_QUICKLIST_H
#define ZA_QUICKLIST_H

#include "mmzone.h"

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

long quicklist_pages(const struct za_mm *mm, int node);     /* node < 0: all */
void quicklist_stat_fold(const struct za_mm *mm, uint64_t totals[NR_QL_EVENTS]);
const char *quicklist_event_name(int e);

#endif
