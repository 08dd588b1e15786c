/*
 * The start state of a replay, learnt from the trace in a first pass:
 * what each CPU's per-CPU lists must have held when the trace began, and
 * how many page allocations the trace has (so that the replay can choose
 * its warm-up).
 */
#ifndef ZABENCH_PRIME_H
#define ZABENCH_PRIME_H

#include "start_high.h"
#include "trace.h"

#include <stdint.h>

#define PRIME_SLOTS 5           /* orders 0..3, and the THP order */
#define PRIME_MTS   3           /* unmovable, movable, reclaimable */
#define PRIME_THP_ORDER 9       /* the pageblock order the kernel caches */

/* A CPU's lists for one zone, all orders together, in pages. */
struct prime_lists {
	int64_t net;                    /* pages added less pages taken, so far */
	int64_t low_at_drain;           /* least net before a drain that count
					 * reaching high set off (INT64_MAX: none) */
	struct high_track high;         /* up to their first drain by a free */
	int alloc_factor;               /* the kernel's, as the refills show it */
};

struct prime {
	int nr_cpus, nr_zones;          /* zones: the header's, + 1 for pfns in none */
	uint64_t page_allocs;           /* successful mm_page_alloc events */
	uint64_t mt_allocs[PRIME_MTS];  /* ... of each migratetype */
	bool zone_lock_events;          /* the trace has the zone-lock events */
	int64_t *net, *need;            /* [cpu][zone][slot][mt] blocks */
	struct prime_lists *lists;      /* [cpu][zone] */
};

/* The slot of an order, -1 for one the per-CPU lists do not cache; and
 * the order of a slot. */
int prime_slot(int order);
int prime_slot_order(int slot);

struct untraced;

/*
 * Reads the stream to its end, with what untraced_scan found the kernel
 * did untraced (NULL: nothing).  0, or -1 with the stream's
 * error in err.  p is ready for prime_need afterwards, and prime_free in
 * either case.
 */
int prime_scan(struct trace_reader *tr, const struct trace_header *h, int nr_cpus,
	       const struct untraced *u, struct prime *p, char *err, size_t errlen);
/* Blocks of the slot's order and type that the CPU's list for that zone
 * must have held at the start (zone == nr_zones - 1: pfns in no zone). */
int64_t prime_need(const struct prime *p, int cpu, int zone, int slot, int mt);
/* prime_need's blocks of every order and type, in pages. */
int64_t prime_need_pages(const struct prime *p, int cpu, int zone);
/*
 * The pages the CPU's lists for the zone held at the start: what they must
 * have held (prime_need's, in pages), at least `counted` (zoneinfo's count
 * for the trace's start, 0 if it has none), and, if a drain came right
 * after a free that could not set free_high off -- the count had reached
 * high, so high_min at least -- enough to have reached high_min there.
 */
int64_t prime_start_count(const struct prime *p, int cpu, int zone, int high_min, int64_t counted);
/* The tuned high the CPU's lists for header zone z started with, holding
 * `pages`, as the trace shows it (start_high.h). */
int64_t prime_start_high(const struct prime *p, int cpu, int zone, int64_t pages,
			 const struct trace_zone *z);
void prime_free(struct prime *p);

#endif
