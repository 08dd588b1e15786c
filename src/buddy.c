/*
 * The buddy allocator: per zone, free lists per order and migratetype.
 * Everything here but buddy_coalesce runs under the zone lock (asserted
 * at the entry points with zone_lock_assert_held).
 *
 * Invariants (checked by za_verify()):
 *  - a free block of order k starts at a pfn aligned to 2^k and lies in one
 *    zone; only its head page has PG_buddy, and page_order(page) == k;
 *  - two buddies are never both free at the same order (they would have
 *    merged: all three migratetypes are mergeable);
 *  - a free block sits on the list of its pageblock's migratetype, except
 *    the leftovers of a fallback steal, which stay on the list of the type
 *    they were taken from;
 *  - free_area[k].nr_free is the number of blocks on the order-k lists and
 *    zone->nr_free_pages the pages in all of them.  Pages on per-CPU lists
 *    are not free pages: they left the buddy lists under the lock.
 * With ZA_DEBUG_VM the list operations also check them as they go: a block
 * enters the lists aligned, of this zone and from no state, and leaves
 * them free and of the order it was listed at.
 */
#include "internal.h"

static const char *const mt_names[MT_TYPES] = { "Unmovable", "Movable", "Reclaimable" };

const char *migratetype_name(int mt)
{
	return mt_names[mt];
}

const int fallbacks[MT_TYPES][MT_TYPES - 1] = {
	[MT_UNMOVABLE]   = { MT_RECLAIMABLE, MT_MOVABLE },
	[MT_MOVABLE]     = { MT_RECLAIMABLE, MT_UNMOVABLE },
	[MT_RECLAIMABLE] = { MT_UNMOVABLE, MT_MOVABLE },
};

static void add_nr_free(struct za_free_area *area, long n)
{
	store_relaxed(&area->nr_free, load_relaxed(&area->nr_free) + (unsigned long)n);
	VM_BUG_ON(NULL, (long)load_relaxed(&area->nr_free) < 0);
}

void add_free_pages(struct za_zone *z, long n)
{
	long nr = load_relaxed(&z->nr_free_pages) + n;
	VM_BUG_ON(z->mm, nr < 0);
	store_relaxed(&z->nr_free_pages, nr);
	if (nr + z->nr_isolated < z->free_low)
		z->free_low = nr + z->nr_isolated;
}

/*
 * A free block is dirty when its memory was used since the arena got it
 * from the OS (or since it was last purged back to the OS); a dirty block
 * remembers the purge epoch it became free in (za_purge()).  Clean blocks
 * go to the tail of their list: the head is memory most recently used,
 * resident and likely cached, and a list with dirty blocks has one at its
 * head (but for a block waiting for its buddy, buddy_merge_likely).
 */
void add_to_free_list(struct za_zone *z, struct za_page *page, unsigned int order, int mt,
		      bool tail, bool dirty, unsigned long epoch)
{
	struct za_free_area *area = &z->free_area[order];
	zone_lock_assert_held(z);
	VM_BUG_ON_PAGE(z->mm, page_flags(page) || order > z->mm->max_order || mt >= MT_TYPES, page);
	VM_BUG_ON_PAGE(z->mm, page_to_pfn(z->mm, page) & ((1UL << order) - 1), page);
	VM_BUG_ON_PAGE(z->mm, pfn_zone(z->mm, page_to_pfn(z->mm, page)) != z, page);
	VM_BUG_ON_PAGE(z->mm, order < z->mm->max_order &&      /* they would have merged */
			      page_is_buddy(pfn_to_page(z->mm, page_to_pfn(z->mm, page) ^ (1UL << order)),
					    order), page);
	set_page_order(page, order);
	set_page_mt(page, mt);
	set_page_flags(page, dirty ? PG_buddy | PG_mem_dirty : PG_buddy);
	set_page_private(page, epoch);
	if (tail || !dirty)
		list_add_tail(&page->lru, &area->free_list[mt]);
	else
		list_add(&page->lru, &area->free_list[mt]);
	add_nr_free(area, 1);
}

/* Returns whether the block was dirty. */
bool del_from_free_list(struct za_zone *z, struct za_page *page, unsigned int order)
{
	bool dirty = page_flags(page) & PG_mem_dirty;
	zone_lock_assert_held(z);
	VM_BUG_ON_PAGE(z->mm, !page_is_buddy(page, order), page);
	list_del(&page->lru);
	set_page_flags(page, 0);
	add_nr_free(&z->free_area[order], -1);
	return dirty;
}

static void move_to_free_list(struct za_zone *z, struct za_page *page, unsigned int order, int mt)
{
	struct za_list *list = &z->free_area[order].free_list[mt];
	VM_BUG_ON_PAGE(z->mm, !page_is_buddy(page, order), page);
	list_del(&page->lru);
	set_page_mt(page, mt);
	if (page_flags(page) & PG_mem_dirty)
		list_add(&page->lru, list);
	else
		list_add_tail(&page->lru, list);
}

static void set_pageblock_range(struct za_mm *mm, unsigned long pfn, unsigned int order, int mt)
{
	unsigned long end = pfn + (1UL << order);
	for (; pfn < end; pfn += 1UL << mm->pageblock_order)
		set_pageblock_mt(mm, pfn, mt);
}

/*
 * Is the order+1 block containing this one likely to merge further soon?
 * If its buddy is already free, the block we are adding is the missing half
 * of a larger free block: put it at the tail so that it is not handed out
 * before its buddy comes back.
 */
static bool buddy_merge_likely(struct za_mm *mm, unsigned long pfn, unsigned int order)
{
	if (order + 1 >= mm->max_order)
		return false;
	unsigned long higher = pfn & ~(1UL << order);
	unsigned long higher_buddy = higher ^ (1UL << (order + 1));
	return page_is_buddy(pfn_to_page(mm, higher_buddy), order + 1);
}

/* pcp_own_pageblocks: a block back whole in the lists is no CPU's. */
static void disown_pageblocks(struct za_mm *mm, unsigned long pfn, unsigned int order)
{
	for (unsigned long p = pfn; p < pfn + (1UL << order); p += 1UL << mm->pageblock_order)
		if (pageblock_owner(mm, p) >= 0)
			set_pageblock_owner(mm, p, -1);
}

/*
 * pcp_own_pageblocks: the RFC's owned_blocks -- per zone and CPU, the
 * pageblocks the CPU owns that have fragments in the buddy lists, which
 * its next refill takes back (buddy_recover_fragments) before it claims
 * a new block.  A singly linked list through mm->pageblock_frag, under the
 * zone lock: an entry is 0 when the block is on no list, FRAG_LAST when
 * it is the last, else the next block's index + FRAG_LINK; the zone's
 * frag_head[cpu] is 0 or the first's index + FRAG_LINK.  A block disowned
 * while listed stays listed until the walk drops it.
 */
enum { FRAG_LAST = 1, FRAG_LINK = 2 };

static void frag_list_add(struct za_zone *z, unsigned long pfn)
{
	struct za_mm *mm = z->mm;
	unsigned long pb = pfn >> mm->pageblock_order;
	int owner = pageblock_owner(mm, pfn);
	if (owner < 0 || mm->pageblock_frag[pb])
		return;
	mm->pageblock_frag[pb] = z->frag_head[owner] ? z->frag_head[owner] : FRAG_LAST;
	z->frag_head[owner] = (uint32_t)(pb + FRAG_LINK);
}

/*
 * Frees a block into the lists, merging it with its buddy (pfn ^ 2^order)
 * for as long as the buddy is free at the same order.  Zones are aligned to
 * the largest block, so a buddy is always in the same zone.  The merged
 * block is dirty if any part was, as young as its youngest dirty part.
 */
static void free_block(struct za_zone *z, struct za_page *page, unsigned int order, int mt,
		       bool dirty, unsigned long epoch)
{
	struct za_mm *mm = z->mm;
	unsigned long pfn = page_to_pfn(mm, page);

	VM_BUG_ON_PAGE(mm, page_flags(page) & (PG_buddy | PG_slab | PG_run), page);
	set_page_flags(page, 0);
	while (order < mm->max_order) {
		unsigned long buddy_pfn = pfn ^ (1UL << order);
		struct za_page *buddy = pfn_to_page(mm, buddy_pfn);
		if (!page_is_buddy(buddy, order))
			break;
		VM_BUG_ON_PAGE(mm, pfn_zone(mm, buddy_pfn) != z, buddy);   /* zones are aligned */
		/* One merged block, one type: the freed block's wins. */
		if (order >= mm->pageblock_order && pageblock_mt(mm, buddy_pfn) != mt)
			set_pageblock_range(mm, buddy_pfn, order, mt);
		unsigned long buddy_epoch = page_private(buddy);
		if (del_from_free_list(z, buddy, order)) {
			epoch = dirty && epoch > buddy_epoch ? epoch : buddy_epoch;
			dirty = true;
		}
		ev_add(&z->stat, EV_BUDDY_MERGE, 1);
		pfn &= buddy_pfn;
		order++;
	}
	add_to_free_list(z, pfn_to_page(mm, pfn), order, mt, buddy_merge_likely(mm, pfn, order),
			 dirty, dirty ? epoch : 0);
	if (likely(!mm->pcp_own_pageblocks))
		return;
	if (order >= mm->pageblock_order)
		disown_pageblocks(mm, pfn, order);
	else
		frag_list_add(z, pfn);
}

void buddy_free(struct za_zone *z, struct za_page *page, unsigned int order, int mt)
{
	zone_lock_assert_held(z);
	add_free_pages(z, 1L << order);
	free_block(z, page, order, mt, true, load_relaxed(&z->mm->purge_epoch));
}

/*
 * Takes the free block of order high off its list and splits it down to
 * order low (the kernel's expand), freeing the upper halves as type mt, as
 * dirty or clean as the block was, and as old.
 */
void take_block(struct za_zone *z, struct za_page *page, unsigned int low, unsigned int high,
		int mt)
{
	unsigned long epoch = page_private(page);
	VM_BUG_ON_PAGE(z->mm, low > high, page);
	bool dirty = del_from_free_list(z, page, high);
	while (high > low) {
		high--;
		add_to_free_list(z, page + (1UL << high), high, mt, false, dirty, epoch);
		ev_add(&z->stat, EV_BUDDY_SPLIT, 1);
	}
	/* Whoever takes it sets the flags; until then they say what the
	 * memory was (buddy_rmqueue_run keeps that for what it gives back),
	 * and the order is the block's, for lockless walkers. */
	set_page_order(page, low);
	set_page_flags(page, dirty ? PG_mem_dirty : 0);
}

struct za_page *first_free(struct za_zone *z, unsigned int order, int mt)
{
	struct za_list *head = &z->free_area[order].free_list[mt];
	return list_empty(head) ? NULL : container_of(head->next, struct za_page, lru);
}

static struct za_page *rmqueue_smallest(struct za_zone *z, unsigned int order, int mt)
{
	for (unsigned int o = order; o <= z->mm->max_order; o++) {
		struct za_page *page = first_free(z, o, mt);
		if (page) {
			take_block(z, page, order, o, mt);
			return page;
		}
	}
	return NULL;
}

/* Size of the block a page heads, or 1 for a page inside a block. */
static unsigned long head_span(const struct za_page *page)
{
	return page_flags(page) & (PG_buddy | PG_pcp | PG_alloc) ? 1UL << page_order(page) : 1;
}

/*
 * May a fallback take a whole pageblock?  Large requests may (they would
 * fragment it anyway), and so may unmovable and reclaimable ones, which
 * are better off concentrated in few pageblocks.
 */
static bool can_claim_fallback(const struct za_mm *mm, unsigned int order, int start_mt)
{
	return order >= mm->pageblock_order / 2 || start_mt != MT_MOVABLE;
}

/* The first fallback type with a free block of this order, or -1. */
static int find_fallback(struct za_zone *z, unsigned int order, int start_mt)
{
	if (!load_relaxed(&z->free_area[order].nr_free))
		return -1;
	for (int i = 0; i < MT_TYPES - 1; i++)
		if (first_free(z, order, fallbacks[start_mt][i]))
			return fallbacks[start_mt][i];
	return -1;
}

/*
 * Tries to retag the pageblock holding page to start_mt.  Allowed when at
 * least half of the pageblock is free or already used compatibly: for a
 * movable request the movable pages, for the others (taking from a movable
 * block) the pages that are neither free nor movable.  On success all its
 * free blocks move to start_mt's lists.
 */
static bool try_claim_pageblock(struct za_zone *z, struct za_page *page, int start_mt)
{
	struct za_mm *mm = z->mm;
	unsigned long nr = 1UL << mm->pageblock_order;
	unsigned long start = page_to_pfn(mm, page) & ~(nr - 1), pfn;
	unsigned long free_pages = 0, movable_pages = 0, alike;
	int old_mt = pageblock_mt(mm, start);

	for (pfn = start; pfn < start + nr; pfn += head_span(pfn_to_page(mm, pfn))) {
		const struct za_page *p = pfn_to_page(mm, pfn);
		uint32_t f = page_flags(p);
		if (f & PG_buddy)
			free_pages += 1UL << page_order(p);
		else if ((f & PG_alloc) && page_mt(p) == MT_MOVABLE)
			movable_pages += 1UL << page_order(p);
	}
	if (start_mt == MT_MOVABLE)
		alike = movable_pages;
	else if (old_mt == MT_MOVABLE)
		alike = nr - free_pages - movable_pages;
	else
		alike = 0;
	if (free_pages + alike < nr / 2)
		return false;

	for (pfn = start; pfn < start + nr; pfn += head_span(pfn_to_page(mm, pfn))) {
		struct za_page *p = pfn_to_page(mm, pfn);
		if (page_flags(p) & PG_buddy)
			move_to_free_list(z, p, page_order(p), start_mt);
	}
	set_pageblock_mt(mm, start, start_mt);
	ev_add(&z->stat, EV_PAGEBLOCK_CLAIM, 1);
	return true;
}

/*
 * A fallback's tracepoint, where the kernel of its form has one: the
 * block handed out, taken from a free block of fallback_order of type fmt.
 * Fragmenting when that was less than a pageblock; the pageblock changed
 * ownership when it is now the request's type.
 */
static void trace_fallback(struct za_zone *z, int cpu, struct za_page *page, unsigned int order,
			   int start_mt, unsigned int fallback_order, int fmt)
{
	ev_add(&z->stat, EV_PGFALLBACK, 1);
	tp_extfrag(z, cpu, page, order, start_mt, fallback_order, fmt);
}

/*
 * fallback_steal_smallest=0: start_mt's lists are empty at every order >=
 * order.  Take the largest free block of a fallback type (approximating
 * the pageblock with the most free pages); claim its whole pageblock when
 * allowed; otherwise take one block without retagging anything (this
 * mixes the pageblock).  A movable request that may not claim takes the
 * smallest block instead, so that the mixing stays small.  Every block
 * handed out is traced as taken from the buddy lists (trace_locked), as
 * kernels before 6.15 did (their fallback moved the block to the
 * request's lists and took it from there).
 */
static struct za_page *rmqueue_fallback(struct za_zone *z, unsigned int order, int start_mt,
					int cpu, bool trace_locked, bool nofragment)
{
	struct za_mm *mm = z->mm;
	struct za_page *page;
	int fmt = -1;
	unsigned int o;

	for (o = mm->max_order + 1; o-- > order;)
		if ((fmt = find_fallback(z, o, start_mt)) >= 0)
			break;
	if (fmt < 0 || (nofragment && o < mm->pageblock_order))
		return NULL;
	bool can_claim = can_claim_fallback(mm, o, start_mt);
	if (!can_claim && start_mt == MT_MOVABLE && o > order)
		for (o = order; (fmt = find_fallback(z, o, start_mt)) < 0; o++)
			;

	struct za_page *block = first_free(z, o, fmt);
	if (o >= mm->pageblock_order) {
		set_pageblock_range(mm, page_to_pfn(mm, block), o, start_mt);
		ev_add(&z->stat, EV_PAGEBLOCK_CLAIM, 1);
		take_block(z, block, order, o, start_mt);
		page = block;
	} else if (can_claim && try_claim_pageblock(z, block, start_mt)) {
		page = rmqueue_smallest(z, order, start_mt);
	} else {
		take_block(z, block, order, o, fmt);
		page = block;
	}
	if (trace_locked)
		tp_zone_locked(z, cpu, page_to_pfn(mm, page), order, start_mt);
	trace_fallback(z, cpu, page, order, start_mt, o, fmt);
	return page;
}

/*
 * fallback_steal_smallest=1 (the kernel since 6.15), first: claim.  From
 * the largest order down, while the request may claim at that order
 * (can_claim_fallback: a movable request stops below half a pageblock),
 * try the first free block of a fallback type: a pageblock or larger is
 * retagged whole; a smaller one's pageblock is claimed when half of it is
 * free or compatible, and the request is then served from start_mt's
 * lists (traced as taken from them: the kernel takes it with
 * __rmqueue_smallest).  A failed claim goes on to the next order.
 */
static struct za_page *rmqueue_claim(struct za_zone *z, unsigned int order, int start_mt, int cpu,
				     bool trace_locked, bool nofragment)
{
	struct za_mm *mm = z->mm;
	unsigned int min_order = nofragment && order < mm->pageblock_order ? mm->pageblock_order : order;
	for (unsigned int o = mm->max_order + 1; o-- > min_order;) {
		if (!can_claim_fallback(mm, o, start_mt))
			break;
		int fmt = find_fallback(z, o, start_mt);
		if (fmt < 0)
			continue;
		struct za_page *page = first_free(z, o, fmt);
		if (o >= mm->pageblock_order) {
			set_pageblock_range(mm, page_to_pfn(mm, page), o, start_mt);
			ev_add(&z->stat, EV_PAGEBLOCK_CLAIM, 1);
			take_block(z, page, order, o, start_mt);
		} else if (try_claim_pageblock(z, page, start_mt)) {
			page = rmqueue_smallest(z, order, start_mt);
			if (trace_locked)
				tp_zone_locked(z, cpu, page_to_pfn(mm, page), order, start_mt);
		} else {
			continue;
		}
		trace_fallback(z, cpu, page, order, start_mt, o, fmt);
		return page;
	}
	return NULL;
}

/* ... then steal: the smallest free block of a fallback type, its
 * pageblock left as it is, the rest of the block on the fallback type's
 * lists. */
static struct za_page *rmqueue_steal(struct za_zone *z, unsigned int order, int start_mt, int cpu)
{
	for (unsigned int o = order; o <= z->mm->max_order; o++) {
		int fmt = find_fallback(z, o, start_mt);
		if (fmt < 0)
			continue;
		struct za_page *page = first_free(z, o, fmt);
		take_block(z, page, order, o, fmt);
		trace_fallback(z, cpu, page, order, start_mt, o, fmt);
		return page;
	}
	return NULL;
}

/*
 * One block of the order, off the lists and counted; cpu is the CPU
 * taking it, for the tracepoints.  trace_locked: trace it as taken from
 * the buddy lists (the zone_locked tracepoint), as the kernel does on the
 * path it took.  nofragment (alloc_nofragment, the kernel's
 * ALLOC_NOFRAGMENT): a fallback may only claim whole pageblocks, never
 * split another type's smaller block.
 */
struct za_page *rmqueue_block(struct za_zone *z, unsigned int order, int mt, int cpu,
			      bool trace_locked, bool nofragment)
{
	zone_lock_assert_held(z);
	struct za_page *page = rmqueue_smallest(z, order, mt);
	if (page) {
		if (trace_locked)
			tp_zone_locked(z, cpu, page_to_pfn(z->mm, page), order, mt);
	} else if (!z->mm->fallback_steal_smallest) {
		page = rmqueue_fallback(z, order, mt, cpu, trace_locked, nofragment);
	} else if (!(page = rmqueue_claim(z, order, mt, cpu, trace_locked, nofragment)) &&
		   !nofragment) {
		page = rmqueue_steal(z, order, mt, cpu);
	}
	if (page)
		add_free_pages(z, -(1L << order));
	return page;
}

struct za_page *buddy_rmqueue(struct za_zone *z, unsigned int order, int mt, int cpu,
			      bool nofragment)
{
	return rmqueue_block(z, order, mt, cpu, true, nofragment);
}

/*
 * pcp_own_pageblocks: a whole free pageblock of type mt for cpu's lists to
 * own (the RFC's phase 1: no fallback, no stealing), split off a larger
 * block if need be; NULL if there is none.  Traced as the refill's
 * order-`order` allocations, as buddy_rmqueue_bulk traces its blocks.
 */
struct za_page *buddy_claim_pageblock(struct za_zone *z, unsigned int order, int mt, int cpu)
{
	struct za_mm *mm = z->mm;
	zone_lock_assert_held(z);
	for (unsigned int o = mm->pageblock_order; o <= mm->max_order; o++) {
		struct za_page *page = first_free(z, o, mt);
		if (!page)
			continue;
		take_block(z, page, mm->pageblock_order, o, mt);
		add_free_pages(z, -(1L << mm->pageblock_order));
		set_pageblock_owner(mm, page_to_pfn(mm, page), cpu);
		ev_add(&z->stat, EV_PCP_BLOCK_CLAIM, 1);
		if (tracing(mm))
			for (unsigned long i = 0; i < 1UL << (mm->pageblock_order - order); i++)
				tp_zone_locked_slow(z, cpu, page_to_pfn(mm, page) + (i << order),
						    order, mt);
		return page;
	}
	return NULL;
}

/* The free blocks of at least `order` inside the pageblock at base, off
 * the lists and onto out with their own order; returns their pages. */
static unsigned long take_fragments(struct za_zone *z, unsigned long base, unsigned int order,
				    int mt, int cpu, struct za_list *out, unsigned long *blocks)
{
	struct za_mm *mm = z->mm;
	unsigned long got = 0;
	for (unsigned long pfn = base; pfn < base + (1UL << mm->pageblock_order);) {
		struct za_page *page = pfn_to_page(mm, pfn);
		unsigned long span = head_span(page);
		unsigned int o = page_order(page);
		if ((page_flags(page) & PG_buddy) && o >= order) {
			take_block(z, page, o, o, mt);
			if (tracing(mm))
				for (unsigned long i = 0; i < 1UL << (o - order); i++)
					tp_zone_locked_slow(z, cpu, pfn + (i << order), order, mt);
			list_add_tail(&page->lru, out);
			got += span;
			++*blocks;
		}
		pfn += span;
	}
	return got;
}

/*
 * pcp_own_pageblocks, the RFC's phase 0: the fragments (of at least
 * `order`) that drains put back in the buddy lists from the pageblocks of
 * type mt that cpu owns, taken back for its lists -- where they merge
 * again -- rather than a new block claimed.  A block's fragments go
 * together, and it leaves the CPU's list (a later drain lists it again);
 * blocks are taken until `pages` pages are.  Appended to out with their
 * own order; returns the pages taken, *blocks counts the blocks.
 */
unsigned long buddy_recover_fragments(struct za_zone *z, unsigned int order, int mt, int cpu,
				      unsigned long pages, struct za_list *out,
				      unsigned long *blocks)
{
	struct za_mm *mm = z->mm;
	unsigned long got = 0;
	zone_lock_assert_held(z);
	for (uint32_t *link = &z->frag_head[cpu]; *link >= FRAG_LINK && got < pages;) {
		unsigned long pb = *link - FRAG_LINK, base = pb << mm->pageblock_order;
		bool mine = pageblock_owner(mm, base) == cpu;
		if (mine && pageblock_mt(mm, base) != mt) {
			link = &mm->pageblock_frag[pb];
			continue;
		}
		uint32_t next = mm->pageblock_frag[pb];
		bool head = link == &z->frag_head[cpu];
		*link = next != FRAG_LAST ? next : head ? 0 : FRAG_LAST;
		mm->pageblock_frag[pb] = 0;
		if (mine)
			got += take_fragments(z, base, order, mt, cpu, out, blocks);
	}
	add_free_pages(z, -(long)got);
	if (got)
		ev_add(&z->stat, EV_PCP_BLOCK_RECOVER, 1);
	return got;
}

/*
 * A per-CPU refill: `pages` pages (a multiple of 2^order) as few whole free
 * blocks, appended to out with their own order for the caller to split
 * outside the lock.  Repeated order-`order` allocations would consume free
 * blocks smallest first and split the last one; taking those blocks whole
 * gives the same pages with one list operation per block instead of one
 * per page, which is what keeps the zone lock hold short.  Each order-
 * `order` block is traced as the kernel's repeated allocations would be.
 * With fallback_steal_smallest, once a fallback had to steal, the rest of
 * the refill steals too (the kernel's sticky rmqueue_mode: nothing it
 * could claim appears meanwhile).  Returns the pages taken (fewer if the
 * zone runs out); *blocks counts the whole blocks they came in.
 */
unsigned long buddy_rmqueue_bulk(struct za_zone *z, unsigned int order, unsigned long pages,
				 int mt, struct za_list *out, int cpu, bool nofragment,
				 unsigned long *blocks)
{
	struct za_mm *mm = z->mm;
	unsigned long got = 0;
	bool stealing = false;
	zone_lock_assert_held(z);
	while (got < pages) {
		unsigned long want = pages - got;
		struct za_page *page = NULL;
		unsigned int o = order;
		if (!stealing)
			for (o = order; o <= mm->max_order; o++)
				if ((page = first_free(z, o, mt)))
					break;
		if (page) {
			unsigned int keep = o;
			while ((1UL << keep) > want)
				keep--;
			take_block(z, page, keep, o, mt);
			o = keep;
			if (tracing(mm))
				for (unsigned long i = 0; i < 1UL << (o - order); i++)
					tp_zone_locked_slow(z, cpu, page_to_pfn(mm, page) + (i << order),
							    order, mt);
		} else if (!mm->fallback_steal_smallest) {
			if (!(page = rmqueue_fallback(z, order, mt, cpu, true, nofragment)))
				break;
			o = order;
		} else {
			if (!stealing && (page = rmqueue_claim(z, order, mt, cpu, true, nofragment))) {
				o = order;
			} else if (!nofragment && (page = rmqueue_steal(z, order, mt, cpu))) {
				o = order;
				stealing = true;
			} else {
				break;
			}
		}
		set_page_order(page, o);
		list_add_tail(&page->lru, out);
		got += 1UL << o;
		++*blocks;
	}
	add_free_pages(z, -(long)got);
	return got;
}

/* ------------------------------------------------------------------------
 * Coalescing a batch of blocks before they enter the lists
 * ------------------------------------------------------------------------ */
#define COALESCE_BITS 7
#define COALESCE_SLOTS (1U << COALESCE_BITS)
#define COALESCE_MASK (COALESCE_SLOTS - 1)
/* Linear probing stays short while the table is at most half full. */
_Static_assert(COALESCE_SLOTS >= 2 * BUDDY_COALESCE_MAX, "twice the largest batch");

/* Fibonacci hashing: the product's top bits. */
static unsigned int slot_of(unsigned long pfn)
{
	return (unsigned int)((pfn * 0x9E3779B97F4A7C15ULL) >> (64 - COALESCE_BITS));
}

static int coalesce_find(struct za_mm *mm, struct za_page **tab, unsigned long pfn,
			 unsigned int order)
{
	for (unsigned int i = slot_of(pfn); tab[i]; i = (i + 1) & COALESCE_MASK)
		if (page_to_pfn(mm, tab[i]) == pfn && page_order(tab[i]) == order)
			return (int)i;
	return -1;
}

/* Linear-probing delete: shift later entries of the run back over the hole. */
static void coalesce_remove(struct za_mm *mm, struct za_page **tab, unsigned int hole)
{
	unsigned int j = hole;
	tab[hole] = NULL;
	for (;;) {
		j = (j + 1) & COALESCE_MASK;
		if (!tab[j])
			return;
		unsigned int home = slot_of(page_to_pfn(mm, tab[j]));
		bool stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
		if (!stays) {
			tab[hole] = tab[j];
			tab[j] = NULL;
			hole = j;
		}
	}
}

/*
 * Merges the buddies among n blocks the caller owns (picked off a per-CPU
 * list, on no list, so no lock is needed): a block whose buddy is also in
 * the set merges with it, again and again, below the pageblock order, so
 * that the pieces share a pageblock and its migratetype.  Absorbed heads
 * get flags 0.  Returns how many blocks are left in blocks[]; the merges
 * done are added to *merges.  n is at most BUDDY_COALESCE_MAX.
 */
int buddy_coalesce(struct za_mm *mm, struct za_page **blocks, int n, unsigned long *merges)
{
	struct za_page *tab[COALESCE_SLOTS] = { 0 };
	VM_BUG_ON(mm, n > BUDDY_COALESCE_MAX);
	for (int k = 0; k < n; k++) {
		struct za_page *b = blocks[k];
		unsigned int o;
		VM_BUG_ON_PAGE(mm, page_flags(b) & (PG_buddy | PG_alloc), b);
		while ((o = page_order(b)) < mm->pageblock_order) {
			unsigned long pfn = page_to_pfn(mm, b);
			int i = coalesce_find(mm, tab, pfn ^ (1UL << o), o);
			if (i < 0)
				break;
			struct za_page *buddy = tab[i];
			coalesce_remove(mm, tab, (unsigned int)i);
			struct za_page *low = buddy < b ? buddy : b;
			set_page_flags(low == b ? buddy : b, 0);
			set_page_order(low, o + 1);
			b = low;
			(*merges)++;
		}
		unsigned int i = slot_of(page_to_pfn(mm, b));
		while (tab[i])
			i = (i + 1) & COALESCE_MASK;
		tab[i] = b;
	}
	int m = 0;
	for (unsigned int i = 0; i < COALESCE_SLOTS; i++)
		if (tab[i])
			blocks[m++] = tab[i];
	return m;
}

/* ------------------------------------------------------------------------
 * Resizing an allocated block in place (za_resize_pages)
 * ------------------------------------------------------------------------ */

/*
 * Grows the allocated block of `order` at pfn to new_order by taking the
 * free blocks above it: at every step the block must be the lower half,
 * and its buddy a free block of exactly that order in the lists.  Changes
 * nothing and returns false otherwise.
 */
bool buddy_grow(struct za_zone *z, unsigned long pfn, unsigned int order, unsigned int new_order)
{
	struct za_mm *mm = z->mm;
	zone_lock_assert_held(z);
	if (pfn & ((1UL << new_order) - 1))
		return false;                   /* an upper half somewhere on the way */
	for (unsigned int o = order; o < new_order; o++) {
		const struct za_page *buddy = pfn_to_page(mm, pfn + (1UL << o));
		if (!(page_flags(buddy) & PG_buddy) || page_order(buddy) != o)
			return false;
	}
	for (unsigned int o = order; o < new_order; o++)
		del_from_free_list(z, pfn_to_page(mm, pfn + (1UL << o)), o);
	add_free_pages(z, -((1L << new_order) - (1L << order)));
	return true;
}

/* Shrinks the allocated block of `order` at pfn to new_order, freeing its
 * upper halves (which cannot merge: their buddies are the block). */
void buddy_shrink(struct za_zone *z, unsigned long pfn, unsigned int order, unsigned int new_order)
{
	struct za_mm *mm = z->mm;
	VM_BUG_ON(mm, new_order > order);
	for (unsigned int o = order; o-- > new_order;) {
		unsigned long half = pfn + (1UL << o);
		buddy_free(z, pfn_to_page(mm, half), o, pageblock_mt(mm, half));
	}
}

/* ------------------------------------------------------------------------
 * Purging (page_reporting.c): dirty free blocks go back to the OS
 * ------------------------------------------------------------------------ */

/*
 * Takes up to max dirty free blocks that became free in epoch max_epoch or
 * before, the largest first but none larger than what is left of budget
 * pages, off the lists, so that their memory can be released without the
 * lock, stopping once they hold budget pages; returns how many are in
 * out[].  They count as neither free nor allocated until
 * buddy_free_purged().
 */
int buddy_isolate_dirty(struct za_zone *z, unsigned long max_epoch, long budget,
			struct za_page **out, int max)
{
	int n = 0;
	zone_lock_assert_held(z);
	for (unsigned int o = z->mm->max_order + 1; o-- > 0 && n < max;) {
		for (int mt = 0; mt < MT_TYPES && n < max; mt++) {
			struct za_list *head = &z->free_area[o].free_list[mt];
			for (struct za_list *l = head->next, *next; l != head && n < max; l = next) {
				next = l->next;
				struct za_page *page = container_of(l, struct za_page, lru);
				if (!(page_flags(page) & PG_mem_dirty) || page_private(page) > max_epoch ||
				    (1L << o) > budget)
					continue;
				del_from_free_list(z, page, o);
				set_page_order(page, o);
				z->nr_isolated += 1L << o;
				add_free_pages(z, -(1L << o));
				out[n++] = page;
				if ((budget -= 1L << o) <= 0)
					return n;
			}
		}
	}
	return n;
}

/* Adds up the zone's dirty free pages by the epochs they have been free:
 * by_age[a] for a in 0..nr_ages-2, the rest in by_age[nr_ages - 1]. */
void buddy_dirty_by_age(struct za_zone *z, unsigned long now, long *by_age, int nr_ages)
{
	zone_lock_assert_held(z);
	for (unsigned int o = 0; o <= z->mm->max_order; o++)
		for (int mt = 0; mt < MT_TYPES; mt++) {
			struct za_list *head = &z->free_area[o].free_list[mt];
			for (struct za_list *l = head->next; l != head; l = l->next) {
				struct za_page *page = container_of(l, struct za_page, lru);
				if (!(page_flags(page) & PG_mem_dirty))
					continue;
				unsigned long age = now - page_private(page);
				by_age[age < (unsigned long)nr_ages ? age : (unsigned long)nr_ages - 1] +=
					1L << o;
			}
		}
}

/* A block whose memory went back to the OS: free, and clean (it reads as
 * zero, which ZA_GFP_ZERO relies on); one the OS refused to take stays
 * dirty, as old as it was. */
void buddy_free_purged(struct za_zone *z, struct za_page *page, bool released)
{
	unsigned int order = page_order(page);
	z->nr_isolated -= 1L << order;
	add_free_pages(z, 1L << order);
	if (released)
		ev_add(&z->stat, EV_PGPURGE, 1UL << order);
	free_block(z, page, order, pageblock_mt(z->mm, page_to_pfn(z->mm, page)), !released,
		   released ? 0 : page_private(page));
}

/* Creation: hands a whole max-order block to the zone, no merging needed. */
void buddy_add_initial_block(struct za_zone *z, unsigned long pfn)
{
	struct za_mm *mm = z->mm;
	add_to_free_list(z, pfn_to_page(mm, pfn), mm->max_order, pageblock_mt(mm, pfn), true,
			 false, 0);
	add_free_pages(z, 1L << mm->max_order);
	z->free_low += 1L << mm->max_order;     /* more managed, none used */
}
