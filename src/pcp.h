/*
 * The hit paths of the per-CPU page lists, inlined into the allocator's
 * entry points.  percpu=rseq: one restartable section on the list's front
 * (below).  percpu=lock, and whenever the front cannot serve: one trylock
 * on a CPU-local line, one list operation, one counter (pgalloc/pgfree and
 * the hits are derived from the per-order counts when read).  Misses and
 * overflows call into pcp.c.
 */
#ifndef ZA_PCP_H
#define ZA_PCP_H

#include "mmzone.h"
#include "percpu.h"

/* pcp.c */
void pcp_setup_lists(struct za_mm *mm);
void pcp_front_balance(struct za_zone *z, struct za_pcp *pcp, unsigned int pindex, bool freeing);
bool pcp_front_refill(struct za_zone *z, int cpu, unsigned int order, int mt, bool nofragment,
		      struct za_page **out);
bool pcp_front_spill(struct za_zone *z, int cpu, struct za_page *page, unsigned int order,
		     unsigned int pindex);
void pcp_fronts_stop(struct za_zone *z, struct za_pcp *pcp);
void pcp_fronts_start(struct za_pcp *pcp);
uint64_t pcp_front_events(const struct za_zone *z, enum za_event item);
long pcp_front_pages(const struct za_zone *z);
void pcp_init(struct za_zone *z, int nr_cpus);
void pcp_drain_cpu(struct za_zone *z, int cpu);
void pcp_refill(struct za_zone *z, struct za_pcp *pcp, unsigned int order, int mt,
		struct za_list *list, bool nofragment);
void pcp_free_batch(struct za_zone *z, struct za_pcp *pcp, unsigned int pindex);
int pcp_free_run(struct za_zone *z, int cpu, struct za_page *const *pages, int n,
		 unsigned int order, bool remote);
bool pcp_free_account(struct za_zone *z, struct za_pcp *pcp, unsigned int order, unsigned int pindex);
void pcp_decay(struct za_zone *z, int cpu);
void zone_check_below_high(struct za_zone *z);

/* zone->pcp_flags (the kernel's zone->flags bits the per-CPU lists read). */
enum {
	ZONE_BELOW_HIGH = 1u << 0,      /* a buddy allocation left it at or below high */
	ZONE_RECLAIM_ACTIVE = 1u << 1,  /* kswapd is balancing the zone's node */
};

/* The slot of the per-CPU events: the order, or PCP_THP_SLOT for the THP
 * order (pcp_list_index gives the hit paths theirs). */
static inline unsigned int pcp_order_slot(unsigned int order)
{
	return order <= PCP_MAX_ORDER ? order : PCP_THP_SLOT;
}

/* Does a per-CPU list cache this order? */
static inline bool pcp_allowed_order(const struct za_mm *mm, unsigned int order)
{
	if (likely(order == 0))
		return true;
	return order <= PCP_MAX_ORDER ? mm->pcp_high_order : order == mm->pcp_thp_order;
}

/*
 * The list of a block of this order and migratetype (mmzone.h's layout),
 * and the order's event slot: arithmetic for orders 0..3 (a table costs
 * the hit path a dependent load), where mm->pcp_mt_mask keeps the type
 * (3: a list per type) or drops it (0: seed 000's shared lists); the THP
 * lists tell movable (1) from the other types (0, 2).
 */
static inline unsigned int pcp_list_index(const struct za_mm *mm, int mt, unsigned int order,
					  unsigned int *slot)
{
	if (likely(order == 0)) {
		*slot = 0;
		return (unsigned int)mt;
	}
	if (likely(order <= PCP_MAX_ORDER)) {
		*slot = order;
		if (!mm->pcp_mt_mask)
			return MT_TYPES * order;
		/* a branch, not a select: a shared list does not wait for mt
		 * (on the free path, two dependent loads away) */
		__asm__ volatile("");
		return MT_TYPES * order + ((unsigned int)mt & mm->pcp_mt_mask);
	}
	*slot = PCP_THP_SLOT;
	return NR_LOWORDER_PCP_LISTS + ((unsigned int)mt & 1);
}

static inline unsigned int pindex_to_order(const struct za_mm *mm, unsigned int pindex)
{
	return pindex < NR_LOWORDER_PCP_LISTS ? pindex / MT_TYPES : mm->pcp_thp_order;
}

/*
 * fair_zone: the zone's allocation batch, seen from one CPU.  An allocation
 * charges the CPU's share; the share is folded into the zone's atomic
 * counter only every stat_threshold pages, and the CPU keeps the value it
 * got back as its view of the batch.  So the common allocation neither
 * writes nor reads a line other CPUs write -- the per-CPU scheme the seed's
 * review proposed instead of an atomic on every allocation.  The batch may
 * be seen up to cpus * threshold pages late.
 */
static inline void pcp_charge_alloc_batch(struct za_zone *z, struct za_pcp *pcp, int pages)
{
	int charged = load_relaxed(&pcp->batch_charged) + pages;
	store_relaxed(&pcp->batch_left, load_relaxed(&pcp->batch_left) - pages);
	if (unlikely(charged >= z->stat_threshold)) {
		long left = atomic_fetch_sub_explicit(&z->alloc_batch, charged, memory_order_relaxed);
		store_relaxed(&pcp->batch_left, (int)(left - charged));
		charged = 0;
	}
	store_relaxed(&pcp->batch_charged, charged);
}

/*
 * fair_zone: an allocation that did not come from the per-CPU lists (an
 * order they do not cache, a run, or lists busy) charges the zone's batch
 * itself, and the CPU's view follows the value it got back: otherwise that
 * view, lowered only by per-CPU hits, would stay positive while such
 * allocations spend the batch, and the fast path would never skip the zone.
 */
static inline void zone_charge_alloc_batch(struct za_zone *z, int cpu, long pages)
{
	struct za_pcp *pcp = &z->pcp[cpu];
	long left = atomic_fetch_sub_explicit(&z->alloc_batch, pages, memory_order_relaxed) - pages;
	store_relaxed(&pcp->batch_left, (int)(left - load_relaxed(&pcp->batch_charged)));
}

/* Has the zone's batch run out, as this CPU sees it?  Only then is the
 * zone's counter read, in case a reset refilled it. */
static inline bool pcp_batch_exhausted(struct za_zone *z, int cpu)
{
	struct za_pcp *pcp = &z->pcp[cpu];
	if (likely(load_relaxed(&pcp->batch_left) > 0))
		return false;
	int left = (int)(load_relaxed(&z->alloc_batch) - load_relaxed(&pcp->batch_charged));
	store_relaxed(&pcp->batch_left, left);
	return left <= 0;
}

static inline int pcp_count(const struct za_pcp *pcp)
{
	return load_relaxed(&pcp->count);
}

static inline int pcp_high(const struct za_pcp *pcp)
{
	return load_relaxed(&pcp->high);
}

static inline void pcp_add_count(struct za_pcp *pcp, int n)
{
	store_relaxed(&pcp->count, load_relaxed(&pcp->count) + n);
	VM_BUG_ON(NULL, load_relaxed(&pcp->count) < 0);
}

/*
 * percpu=rseq: the fronts.  Each list of orders 0..3 has a front, a stack
 * of up to front_full's capacity (2^k - 1 blocks, about a batch of pages)
 * of its most recently freed blocks, linked through lru.next.  The hit
 * paths pop and push it in one restartable section each and never take
 * the lock, so a thread preempted anywhere -- in a hit path (restarted) or
 * holding the lock in a slow path -- stops no other thread of its CPU.
 * A pop that finds the front empty, or a push that finds it full, takes
 * the lock path below, which also rebalances the front against the list
 * (pcp_front_balance): the list keeps count, high, batch and the drains
 * as the kernel has them, and the fronts are a layer above, their blocks
 * neither on the lists nor counted in count.
 *
 * The tally is rseq.h's counted stack: pushes are EV_PCP_FREE hits, pops
 * EV_PCP_ALLOC hits.
 */
static const struct rseq_link front_link = { .off = offsetof(struct za_page, lru.next) };

static inline struct rseq_percpu pcp_front_percpu(const struct za_zone *z, unsigned int pindex)
{
	struct rseq_percpu pc = z->front_pc;
	pc.shift = ZA_PCP_SHIFT;        /* a constant: an immediate in the sections */
	pc.base += pindex * sizeof(struct rseq_stack);
	pc.stop -= (long)(pindex * sizeof(struct rseq_stack));
	return pc;
}

/* Does this allocation or free go to a front? */
static inline bool pcp_use_front(const struct za_mm *mm, unsigned int order)
{
	return mm->pcp_front && order <= PCP_MAX_ORDER && percpu_unbound(mm);  /* pcp_front: rseq */
}

/* The top of the calling CPU's front of list pindex, as an allocated
 * block of mt, or NULL (empty, stopped, its tally due for a fold). */
static inline __attribute__((always_inline)) struct za_page *
pcp_front_pop(struct za_zone *z, unsigned int order, int mt, unsigned int pindex)
{
	struct rseq_percpu pc = pcp_front_percpu(z, pindex);
	void *top;
	if (unlikely(rseq_pop_retry(z->mm, &pc, &front_link, RSEQ_POP_ONE - 1, RSEQ_FOLD, &top) !=
		     RSEQ_OK))
		return NULL;
	struct za_page *page = top;
	VM_BUG_ON_PAGE(z->mm, page_flags(page) != PG_pcp || page_order(page) != order, page);
	set_page_mt(page, mt);
	set_page_flags(page, PG_alloc);
	return page;
}

/*
 * Returns false, doing nothing, when the CPU's lists are busy (another
 * thread on the same CPU, or a drain): the caller then uses the buddy
 * lists, as the kernel does when pcp_spin_trylock fails.  Otherwise stores
 * the block, or NULL if the zone has none of this order, in *out
 * (nofragment: for a refill, see buddy_rmqueue_bulk).
 */
static inline __attribute__((always_inline)) bool pcp_alloc(struct za_zone *z, int cpu, unsigned int order, int mt,
			     bool nofragment, struct za_page **out)
{
	struct za_pcp *pcp = &z->pcp[cpu];
	/* The list first: its lookup overlaps the lock's atomic. */
	unsigned int slot, pindex = pcp_list_index(z->mm, mt, order, &slot);
	bool front = pcp_use_front(z->mm, order);
	if (likely(front) && (*out = pcp_front_pop(z, order, mt, pindex)))
		return true;
	if (unlikely(!za_trylock(&pcp->lock)))
		return front && pcp_front_refill(z, cpu, order, mt, nofragment, out);

	struct za_list *list = &pcp->lists[pindex];
	struct za_page *page = NULL;
	if (unlikely(list_empty(list)))
		pcp_refill(z, pcp, order, mt, list, nofragment);
	if (likely(!list_empty(list))) {
		page = container_of(list->next, struct za_page, lru);
		VM_BUG_ON_PAGE(z->mm, (page_flags(page) & ~PG_pcp_buddy) != PG_pcp ||
				       page_order(page) != order, page);
		list_del(&page->lru);
		pcp_add_count(pcp, -(1 << order));
		set_page_mt(page, mt);
		set_page_flags(page, PG_alloc);
		pcp_ev_add(&pcp->stat, EV_PCP_ALLOC + slot, 1);
		if (z->mm->fair_zone)
			pcp_charge_alloc_batch(z, pcp, 1 << order);
	}
	if (front)
		pcp_front_balance(z, pcp, pindex, false);
	za_tryunlock(&pcp->lock);
	*out = page;
	return true;
}

/* A block from the calling CPU's front of its list, or NULL (a front empty
 * or stopped): the hit path of za_alloc_pages, which takes no lock and
 * reads the CPU in the section.  The order has fronts (pcp_use_front,
 * pcp_allowed_order): the caller asked. */
static inline __attribute__((always_inline)) struct za_page *
pcp_alloc_front(struct za_zone *z, unsigned int order, int mt)
{
	unsigned int slot, pindex = pcp_list_index(z->mm, mt, order, &slot);
	VM_BUG_ON(z->mm, !pcp_use_front(z->mm, order) || !pcp_allowed_order(z->mm, order));
	return pcp_front_pop(z, order, mt, pindex);
}

/* The flags of a block going onto a list of pcp's: PG_pcp, and with
 * pcp_own_pageblocks PG_pcp_buddy when that CPU owns its pageblock. */
static inline uint32_t pcp_list_flags(const struct za_zone *z, const struct za_pcp *pcp,
				      const struct za_page *page)
{
	const struct za_mm *mm = z->mm;
	if (likely(!mm->pcp_own_pageblocks) ||
	    pageblock_owner(mm, page_to_pfn(mm, page)) != (int)(pcp - z->pcp))
		return PG_pcp;
	return PG_pcp | PG_pcp_buddy;
}

/* The lock path of a free onto a CPU's lists, under their lock: returns
 * whether it is still held (pcp_drain_chunks may have let it go).  front:
 * the CPU is the caller's, and its fronts are in use.  remote: another
 * CPU's free routed here (pcp_own_pageblocks), which keeps only high: the
 * books of 6.7's tuning are the CPU's own frees. */
static inline __attribute__((always_inline)) bool pcp_put_locked(struct za_zone *z,
								 struct za_pcp *pcp,
								 struct za_page *page,
								 unsigned int order, int mt,
								 bool front, bool remote)
{
	const struct za_mm *mm = z->mm;
	unsigned int slot, pindex = pcp_list_index(mm, mt, order, &slot);
	/* the callers' checks: an allocated block of its own, or claimed (0) */
	VM_BUG_ON_PAGE(mm, (page_flags(page) & ~PG_alloc) || page_order(page) != order, page);
	set_page_mt(page, mt);
	set_page_flags(page, pcp_list_flags(z, pcp, page));
	list_add(&page->lru, &pcp->lists[pindex]);
	pcp_add_count(pcp, 1 << order);
	pcp_ev_add(&pcp->stat, EV_PCP_FREE + slot, 1);
	if (front)
		pcp_front_balance(z, pcp, pindex, true);
	if (unlikely(mm->pcp_track_free) && !remote)
		return pcp_free_account(z, pcp, order, pindex);
	while (unlikely(pcp_count(pcp) >= pcp_high(pcp)))  /* more than once only after a front joined */
		pcp_free_batch(z, pcp, pindex);
	return true;
}

/* As pcp_put_locked, the lock let go on return. */
static inline __attribute__((always_inline)) void pcp_free_locked(struct za_zone *z,
								  struct za_pcp *pcp,
								  struct za_page *page,
								  unsigned int order, int mt,
								  bool front, bool remote)
{
	if (pcp_put_locked(z, pcp, page, order, mt, front, remote))
		za_tryunlock(&pcp->lock);
}

/*
 * pcp_own_pageblocks: a block of a pageblock another CPU's lists claimed
 * goes onto that CPU's lists (the RFC's free routing), if their lock is
 * free; false sends it to the freeing CPU's, as without the switch.
 */
static inline bool pcp_free_to_owner(struct za_zone *z, int cpu, struct za_page *page,
				     unsigned int order, int mt)
{
	int owner = pageblock_owner(z->mm, page_to_pfn(z->mm, page));
	if (owner < 0 || owner == cpu)
		return false;
	VM_BUG_ON(z->mm, owner >= z->mm->nr_cpus);    /* set from a CPU of the system */
	struct za_pcp *pcp = &z->pcp[owner];
	if (!za_trylock(&pcp->lock))
		return false;
	pcp_ev_add(&pcp->stat, EV_PCP_REMOTE_FREE, 1);
	pcp_free_locked(z, pcp, page, order, mt, false, true);
	return true;
}

/* pcp_free's lock path, out of line (pcp.c): the front's hit saves no
 * registers for it. */
bool pcp_free_list(struct za_zone *z, struct za_page *page, unsigned int order, int mt,
		   unsigned int pindex, bool front);

/* As pcp_alloc: false when busy.  The CPU is read only when a list is
 * needed: a front's section reads its own. */
static inline __attribute__((always_inline)) bool pcp_free(struct za_zone *z, struct za_page *page, unsigned int order)
{
	/* The block's type and list first (a lockless read of its
	 * pageblock's type, as ever): they overlap the lock's atomic. */
	const struct za_mm *mm = z->mm;
	int mt = pageblock_mt(mm, page_to_pfn(mm, page));
	unsigned int slot, pindex = pcp_list_index(mm, mt, order, &slot);
	bool front = pcp_use_front(mm, order);
	if (unlikely(mm->pcp_own_pageblocks) && pcp_free_to_owner(z, this_cpu(mm), page, order, mt))
		return true;
	if (likely(front)) {
		/* The front's blocks are PG_pcp from the moment they are on it. */
		struct rseq_percpu pc = pcp_front_percpu(z, pindex);
		uint32_t flags = page_flags(page);
		set_page_mt(page, mt);
		set_page_flags(page, PG_pcp);
		if (likely(rseq_push_retry(z->mm, &pc, &front_link, page, page, RSEQ_PUSH_ONE + 1,
					   z->front_full[order], 0, 0) == RSEQ_OK))
			return true;
		set_page_flags(page, flags);
	}
	return pcp_free_list(z, page, order, mt, pindex, front);
}

#endif /* ZA_PCP_H */
