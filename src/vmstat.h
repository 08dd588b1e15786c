/*
 * Event counters (the kernel's vm_event_item).
 *
 * Each counter lives in up to three places, chosen by who may write it
 * without an atomic instruction:
 *   - a CPU's per-CPU page set, written under that set's trylock;
 *   - a zone, written under the zone lock;
 *   - the memory system, bumped atomically (rare events only).
 * Reading folds all of them.  Counters ending in _ns are kept in cycles and
 * converted on read.
 */
#ifndef ZA_VMSTAT_H
#define ZA_VMSTAT_H

#include "platform.h"

/* Orders above this are "costly": not cached per CPU (the kernel's
 * PAGE_ALLOC_COSTLY_ORDER), but for the THP order (the pageblock order)
 * with pcp_high_order=2.  The per-CPU events are kept by order slot:
 * orders 0..3, then the THP order (pcp.h's pcp_order_slot). */
#define PCP_MAX_ORDER 3
#define PCP_THP_SLOT (PCP_MAX_ORDER + 1)
#define NR_PCP_ORDERS (PCP_MAX_ORDER + 2)

enum za_event {
	/* per-CPU, + order slot 0..PCP_THP_SLOT */
	EV_PCP_ALLOC,               /* allocations served by the lists */
	EV_PCP_ALLOC_MISS = EV_PCP_ALLOC + NR_PCP_ORDERS,   /* ... of which had to refill first */
	EV_PCP_FREE = EV_PCP_ALLOC_MISS + NR_PCP_ORDERS,
	EV_PCP_DRAIN = EV_PCP_FREE + NR_PCP_ORDERS,
	EV_PCP_SPLIT,               /* refilled blocks split onto the lists, outside the zone lock */
	EV_PCP_REMOTE_FREE,         /* pcp_own_pageblocks: frees onto the owner's lists, counted there */
	EV_PCP_MERGE,               /* ... buddies a drain merged on the owner's lists */
	NR_PCP_EVENTS,              /* the per-CPU sets keep only the events above */
	/* per zone; reading adds the per-CPU lists' share, counted by order above */
	EV_PGALLOC = NR_PCP_EVENTS, /* pages allocated */
	EV_PGFREE,                  /* pages freed */
	/* per zone */
	EV_PCP_REFILL,
	EV_PCP_REFILL_PAGES,
	EV_PCP_REFILL_HOLD,
	EV_PCP_BULKFREE,
	EV_PCP_BULKFREE_PAGES,
	EV_PCP_BULKFREE_HOLD,
	EV_PCP_BULKFREE_HOLD_MAX,
	EV_PCP_TRYLOCK_FAIL,
	EV_ZONE_LOCK_ACQUIRE,
	EV_ZONE_LOCK_CONTENDED,
	EV_ZONE_LOCK_HOLD,
	EV_ZONE_LOCK_WAIT,
	EV_BUDDY_SPLIT,                 /* reading adds EV_PCP_SPLIT */
	EV_BUDDY_MERGE,
	EV_PGFALLBACK,
	EV_PAGEBLOCK_CLAIM,
	EV_PCP_BLOCK_CLAIM,             /* pcp_own_pageblocks: whole pageblocks a refill claimed */
	EV_PCP_BLOCK_RECOVER,           /* ... refills that took owned blocks' fragments back */
	EV_PGPURGE,                     /* free pages given back to the OS */
	/* per zone, under the zone's lru_lock */
	EV_PGSCAN_KSWAPD,
	EV_PGSCAN_DIRECT,
	EV_PGSTEAL_KSWAPD,
	EV_PGSTEAL_DIRECT,
	EV_PGACTIVATE,
	EV_PGDEACTIVATE,
	EV_PGROTATED,                   /* put back on the inactive list: a second chance, or in use */
	EV_PGWRITE_RECLAIM,             /* dirty pages written by reclaim */
	/* per CPU of the memory system, atomic on a CPU-local line */
	EV_PGCACHE_HIT,
	EV_PGMAJFAULT,                  /* page cache misses: read from the file */
	EV_RSEQ_ABORT,                  /* restartable sections restarted (rseq.h) */
	/* memory system, atomic */
	EV_KSWAPD_WAKEUP,
	EV_KSWAPD_LOW_WMARK_HIT_QUICKLY,
	EV_KSWAPD_HIGH_WMARK_HIT_QUICKLY,
	EV_KSWAPD_WAKE_MISSED,          /* failed the low watermark, no kswapd woken */
	EV_ALLOCSTALL,                  /* direct reclaim entries */
	EV_SLABS_SCANNED,               /* objects asked of shrinkers */
	EV_WMARK_FAIL,
	EV_ALLOC_SLOWPATH,
	EV_ALLOC_FAIL,
	EV_BAD_FREE,
	EV_SECTION_ADD,                 /* sections mapped (sparse.c) */
	EV_SECTION_ADD_FAIL,            /* ... refused by the OS */
	EV_ZONE_GROW,                   /* pages handed to the buddy lists by deferred_grow_zone */
	NR_EVENTS
};

struct za_events {
	za_counter_t ev[NR_EVENTS];
} __attribute__((aligned(ZA_CACHELINE)));

/* The per-CPU sets' share: small, so that a set stays four cache lines. */
struct za_pcp_events {
	za_counter_t ev[NR_PCP_EVENTS];
};

static inline void pcp_ev_add(struct za_pcp_events *e, enum za_event item, uint64_t n)
{
	counter_add(&e->ev[item], n);
}

static inline void ev_add(struct za_events *e, enum za_event item, uint64_t n)
{
	counter_add(&e->ev[item], n);
}

static inline void ev_max(struct za_events *e, enum za_event item, uint64_t v)
{
	if (v > load_relaxed(&e->ev[item]))
		store_relaxed(&e->ev[item], v);
}

static inline void ev_add_atomic(struct za_events *e, enum za_event item, uint64_t n)
{
	counter_add_atomic(&e->ev[item], n);
}

#endif /* ZA_VMSTAT_H */
