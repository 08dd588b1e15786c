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

/* When a migratetype's lists are empty, try these, in this order. */
static const int fallbacks[MT_TYPES][MT_TYPES - 1] = {
	[MT_UNMOVABLE]   = { MT_RECLAIMABLE, MT_MOVABLE },
	[MT_MOVABLE]     = { MT_RECLAIMABLE, MT_UNMOVABLE },
	[MT_RECLAIMABLE] = { MT_UNMOVABLE, MT_MOVABLE },
};

static bool page_is_buddy(const struct za_page *buddy, unsigned int order)
{
	return (page_flags(buddy) & PG_buddy) && page_order(buddy) == order;
}

static void add_nr_free(struct za_free_area *area, long n)
{
	store_relaxed(&area->nr_free, load_relaxed(&area->nr_free) + (unsigned long)n);
	VM_BUG_ON(NULL, (long)load_relaxed(&area->nr_free) < 0);
}

static void add_free_pages(struct za_zone *z, long n)
{
	store_relaxed(&z->nr_free_pages, load_relaxed(&z->nr_free_pages) + n);
	VM_BUG_ON(z->mm, load_relaxed(&z->nr_free_pages) < 0);
}

/*
 * A free block is dirty when its memory was used since the arena got it
 * from the OS (or since it was last purged back to the OS); a dirty block
 * remembers the purge epoch it became free in (za_purge()).  Clean blocks
 * go to the tail of their list: the head is memory most recently used,
 * resident and likely cached, and a list with dirty blocks has one at its
 * head (but for a block waiting for its buddy, buddy_merge_likely).
 */
static void add_to_free_list(struct za_zone *z, struct za_page *page,
			     unsigned int order, int mt, bool tail, bool dirty, unsigned long epoch)
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
static bool del_from_free_list(struct za_zone *z, struct za_page *page, unsigned int order)
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
static void take_block(struct za_zone *z, struct za_page *page, unsigned int low,
		       unsigned int high, int mt)
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

static struct za_page *first_free(struct za_zone *z, unsigned int order, int mt)
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
static struct za_page *rmqueue_block(struct za_zone *z, unsigned int order, int mt, int cpu,
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
 * Runs: allocations of any number of pages (za_alloc_pages_exact)
 *
 * A run [pfn, pfn + n) is made of its canonical pieces (run_piece_order in
 * mmzone.h): blocks aligned to their size, each a block of its own to the
 * rest of the allocator, so that freeing a run merges every piece with
 * whatever is free around it.
 * ------------------------------------------------------------------------ */

/* The free block in the lists holding pfn, or NULL. */
static struct za_page *free_block_holding(const struct za_mm *mm, unsigned long pfn)
{
	for (unsigned int o = 0; o <= mm->max_order; o++) {
		struct za_page *head = pfn_to_page(mm, pfn & ~((1UL << o) - 1));
		if (page_is_buddy(head, o))
			return head;
	}
	return NULL;
}

/* A range is about to be taken off the lists: no dirty page of it yet. */
static void taken_dirty_reset(struct za_zone *z)
{
	z->taken_dirty_lo = z->taken_dirty_hi = 0;
}

/* [pfn, end) of it came from a dirty block. */
static void taken_dirty_add(struct za_zone *z, unsigned long pfn, unsigned long end)
{
	if (z->taken_dirty_lo == z->taken_dirty_hi) {
		z->taken_dirty_lo = pfn;
		z->taken_dirty_hi = end;
		return;
	}
	if (pfn < z->taken_dirty_lo)
		z->taken_dirty_lo = pfn;
	if (end > z->taken_dirty_hi)
		z->taken_dirty_hi = end;
}

/*
 * The free block of `order` at pfn, off the lists, keeps only what lies
 * outside [start, end): halves wholly outside go back to the lists (as
 * dirty and as old as the block was), halves wholly inside are taken (and
 * counted in the taken range's dirty span if dirty), the others are split
 * again.  The halves put back cannot merge: each one's buddy holds taken
 * pages.
 */
static void carve(struct za_zone *z, unsigned long pfn, unsigned int order, unsigned long start,
		  unsigned long end, int mt, bool dirty, unsigned long epoch)
{
	unsigned long last = pfn + (1UL << order);
	if (last <= start || pfn >= end) {
		add_to_free_list(z, pfn_to_page(z->mm, pfn), order, mt, false, dirty, epoch);
	} else if (pfn < start || last > end) {
		VM_BUG_ON(z->mm, !order);       /* a page is either in or out */
		ev_add(&z->stat, EV_BUDDY_SPLIT, 1);
		carve(z, pfn, order - 1, start, end, mt, dirty, epoch);
		carve(z, pfn + (1UL << (order - 1)), order - 1, start, end, mt, dirty, epoch);
	} else if (dirty) {
		taken_dirty_add(z, pfn, last);
	}
}

/* Is every page of [pfn, pfn + n) free, in the zone's managed part, in
 * one section (so in one piece of address space) and in pageblocks of
 * type mt?  (What buddy_take_range takes.) */
bool buddy_range_free(struct za_zone *z, unsigned long pfn, unsigned long n, int mt)
{
	struct za_mm *mm = z->mm;
	unsigned long end = pfn + n, p, next;
	unsigned long pb = 1UL << mm->pageblock_order;
	zone_lock_assert_held(z);
	if (pfn < z->start_pfn || end > zone_init_end_pfn(z) || end <= pfn ||
	    pfn_to_section_nr(mm, pfn) != pfn_to_section_nr(mm, end - 1))
		return false;
	for (p = pfn & ~(pb - 1); p < end; p += pb)
		if (pageblock_mt(mm, p) != mt)
			return false;
	for (p = pfn; p < end; p = next) {
		struct za_page *b = free_block_holding(mm, p);
		if (!b)
			return false;
		next = page_to_pfn(mm, b) + (1UL << page_order(b));
	}
	return true;
}

/*
 * Takes the pages [pfn, pfn + n) out of the free lists if
 * buddy_range_free() says they may be; otherwise changes nothing and
 * returns false.  The caller marks the run allocated.
 */
bool buddy_take_range(struct za_zone *z, unsigned long pfn, unsigned long n, int mt)
{
	struct za_mm *mm = z->mm;
	unsigned long end = pfn + n, p, next;
	if (!buddy_range_free(z, pfn, n, mt))
		return false;
	taken_dirty_reset(z);
	for (p = pfn; p < end; p = next) {
		struct za_page *b = free_block_holding(mm, p);
		unsigned int order = page_order(b);
		unsigned long head = page_to_pfn(mm, b), epoch = page_private(b);
		int bmt = page_mt(b);
		bool dirty = del_from_free_list(z, b, order);
		next = head + (1UL << order);
		carve(z, head, order, pfn, end, bmt, dirty, epoch);
	}
	add_free_pages(z, -(long)n);
	return true;
}

/* Frees the run [pfn, pfn + n), piece by piece, each merging with the free
 * blocks around it. */
void buddy_free_range(struct za_zone *z, unsigned long pfn, unsigned long n)
{
	struct za_mm *mm = z->mm;
	unsigned long end = pfn + n;
	for (unsigned int o; pfn < end; pfn += 1UL << o) {
		o = run_piece_order(mm, pfn, end);
		buddy_free(z, pfn_to_page(mm, pfn), o, pageblock_mt(mm, pfn));
	}
}

/* Takes the run [pfn, pfn + n) out of the free block of `order` at its
 * head, already off the lists; the rest goes back as the block was. */
static void carve_run(struct za_zone *z, struct za_page *block, unsigned int order,
		      unsigned long n, bool dirty, unsigned long epoch)
{
	unsigned long pfn = page_to_pfn(z->mm, block);
	taken_dirty_reset(z);
	carve(z, pfn, order, pfn, pfn + n, pageblock_mt(z->mm, pfn), dirty, epoch);
	add_free_pages(z, (1L << order) - (long)n);
}

/* A free block that buddy_take_range may take for type mt: on mt's lists
 * and in a pageblock of type mt. */
static bool joins(const struct za_mm *mm, const struct za_page *b, int mt)
{
	return page_mt(b) == mt && pageblock_mt(mm, page_to_pfn(mm, b)) == mt;
}

/*
 * [pfn, end) and the free pages around it, as far as `reach` pages beyond
 * either end: [*lo, *hi).  Only blocks of type mt join, and only within
 * pfn's section (one piece of address space) and the zone's managed part
 * -- what buddy_take_range takes.
 */
void buddy_free_around(struct za_zone *z, unsigned long pfn, unsigned long end, int mt,
		       unsigned long reach, unsigned long *lo, unsigned long *hi)
{
	struct za_mm *mm = z->mm;
	unsigned int shift = pfn_section_shift(mm);
	unsigned long floor = pfn >> shift << shift, ceil = floor + (1UL << shift);
	unsigned long s = pfn, e = end;
	zone_lock_assert_held(z);
	struct za_page *b;
	if (floor < z->start_pfn)
		floor = z->start_pfn;
	if (ceil > zone_init_end_pfn(z))
		ceil = zone_init_end_pfn(z);
	while (s > floor && pfn - s < reach && (b = free_block_holding(mm, s - 1)) &&
	       joins(mm, b, mt) && page_to_pfn(mm, b) >= floor)
		s = page_to_pfn(mm, b);
	while (e < ceil && e - end < reach && (b = free_block_holding(mm, e)) && joins(mm, b, mt) &&
	       page_to_pfn(mm, b) + (1UL << page_order(b)) <= ceil)
		e = page_to_pfn(mm, b) + (1UL << page_order(b));
	*lo = s;
	*hi = e;
}

/* The free block of order o at pfn and the free pages around it. */
static void free_extent(struct za_zone *z, unsigned long pfn, unsigned int o, int mt,
			unsigned long reach, unsigned long *lo, unsigned long *hi)
{
	buddy_free_around(z, pfn, pfn + (1UL << o), mt, reach, lo, hi);
}

/* The smallest block of order >= `order` on mt's lists whose memory was
 * used since the OS gave it (resident, likely cached), looking at the
 * lists' heads, where such blocks are kept. */
static struct za_page *hot_block(struct za_zone *z, unsigned int order, int mt, unsigned int *o)
{
	for (*o = order; *o <= z->mm->max_order; (*o)++) {
		struct za_page *page = first_free(z, *o, mt);
		if (page && (page_flags(page) & PG_mem_dirty))
			return page;
	}
	return NULL;
}

/* Pages of the free range [pfn, end) that are fresh: never used, or
 * given back to the OS since. */
static unsigned long fresh_pages(const struct za_mm *mm, unsigned long pfn, unsigned long end)
{
	unsigned long fresh = 0;
	for (unsigned long p = pfn, next; p < end; p = next) {
		struct za_page *b = free_block_holding(mm, p);
		next = page_to_pfn(mm, b) + (1UL << page_order(b));
		if (!(page_flags(b) & PG_mem_dirty))
			fresh += (next < end ? next : end) - p;
	}
	return fresh;
}

/* Where in the free range [lo, hi) a run of n pages goes around the free
 * block of order o at pfn: from the block's start, or up to its end,
 * whichever takes fewer fresh pages (*fresh), the start on a tie. */
static unsigned long run_around(const struct za_mm *mm, unsigned long pfn, unsigned int o,
				unsigned long n, unsigned long lo, unsigned long hi, unsigned long *fresh)
{
	unsigned long from = pfn + n <= hi ? pfn : hi - n;
	unsigned long upto = pfn + (1UL << o) >= lo + n ? pfn + (1UL << o) - n : lo;
	unsigned long fresh_from = fresh_pages(mm, from, from + n);
	unsigned long fresh_upto = upto == from ? fresh_from : fresh_pages(mm, upto, upto + n);
	*fresh = fresh_upto < fresh_from ? fresh_upto : fresh_from;
	return fresh_upto < fresh_from ? upto : from;
}

/* Does a block of order >= `order` on mt's lists hold memory used before?
 * (pcp_refill_drain's question.) */
bool buddy_has_dirty(struct za_zone *z, unsigned int order, int mt)
{
	unsigned int o;
	zone_lock_assert_held(z);
	return hot_block(z, order, mt, &o) != NULL;
}

/* List entries a run's search looks at: it runs under the zone lock. */
#define EXTENT_SCAN 32

/* The run of n pages at pfn in a free range ending at limit, if free; the
 * runs after it follow on through the range, as through a block's rest:
 * fresh pages of it too, which are next to memory in use (measured better
 * for peak RSS than searching again, test_run_best_fit). */
static struct za_page *take_run_in(struct za_zone *z, unsigned long pfn, unsigned long n, int mt,
				   unsigned long limit)
{
	if (!buddy_take_range(z, pfn, n, mt))
		return NULL;
	z->exact_next = pfn + n;
	z->exact_limit = limit;
	return pfn_to_page(z->mm, pfn);
}

/*
 * A run of n pages (2^(order-1) < n < 2^order) around memory used before,
 * best fit.  A run needs n free pages in a row, not an aligned block of
 * `order`: the pieces freed runs leave are contiguous without being
 * buddies, and a range of n pages always holds a whole free block of
 * order >= order - 2 (any 2^(order-1) pages in a row hold an aligned
 * 2^(order-2), and free buddies merge).  So the dirty blocks of those
 * orders (the lists keep them first, but for a few) are where to look: each
 * one's free extent is measured, the smallest that holds n wins, and the
 * run starts at its block, moved back as far as the extent's end needs.
 * Only if at least half the run is memory used before: otherwise fresh
 * memory after the last run is as good, and keeps runs dense.  A run
 * beyond the largest block (order max_order + 1) has no such choice and
 * takes any memory used before; with `clean`, the fresh blocks are looked
 * at instead (after the dirty ones the lists keep first: the fresh ones
 * near them, in the memory the zone had first, pack runs tighter than the
 * blocks it got last -- bigbuf's peak RSS, 513 MiB against 536).  Returns
 * the run's first page, off the lists and counted, or NULL.
 */
static struct za_page *take_extent(struct za_zone *z, unsigned int order, unsigned long n, int mt,
				   bool clean)
{
	struct za_mm *mm = z->mm;
	unsigned long best = 0, fresh = 0, at = 0, limit = 0, lo, hi;
	unsigned long max_fresh = order > mm->max_order ? n : n / 2;
	int budget = EXTENT_SCAN;
	for (unsigned int o = order >= 2 ? order - 2 : 0; o <= mm->max_order && budget; o++) {
		struct za_list *head = &z->free_area[o].free_list[mt];
		for (struct za_list *l = head->next; l != head && budget && (best != n || fresh);
		     l = l->next, budget--) {
			struct za_page *page = container_of(l, struct za_page, lru);
			bool dirty = page_flags(page) & PG_mem_dirty;
			if (dirty == clean || !joins(mm, page, mt))
				continue;
			unsigned long pfn = page_to_pfn(mm, page), start, start_fresh;
			free_extent(z, pfn, o, mt, n, &lo, &hi);
			if (hi - lo < n || (best && hi - lo > best))
				continue;
			start = run_around(mm, pfn, o, n, lo, hi, &start_fresh);
			if (best == hi - lo && start_fresh >= fresh)
				continue;
			best = hi - lo;
			fresh = start_fresh;
			at = start;
			limit = hi;
		}
	}
	return best && fresh <= max_fresh ? take_run_in(z, at, n, mt, limit) : NULL;
}

/*
 * Takes the next run right after the zone's last one, if its pages are
 * free and either all in what is left of the block the last run was carved
 * from, or (when `fresh`) fresh memory: runs follow each other through a
 * block, and on into fresh memory, but do not roll on through other memory
 * used before, which the lists give most recently freed first.
 */
static struct za_page *take_next_run(struct za_zone *z, unsigned long n, int mt, bool fresh)
{
	struct za_mm *mm = z->mm;
	unsigned long pfn = z->exact_next, end = pfn + n;
	if (pfn < z->start_pfn || end > zone_init_end_pfn(z) || end <= pfn)
		return NULL;
	struct za_page *first = free_block_holding(mm, pfn), *last = free_block_holding(mm, end - 1);
	if (!first || !last)
		return NULL;
	if (end > z->exact_limit && (!fresh || (page_flags(first) & PG_mem_dirty) ||
				     (page_flags(last) & PG_mem_dirty)))
		return NULL;
	unsigned long limit = page_to_pfn(mm, last) + (1UL << page_order(last));
	if (!buddy_take_range(z, pfn, n, mt))
		return NULL;
	z->exact_next = end;
	if (end > z->exact_limit)
		z->exact_limit = limit;
	return pfn_to_page(mm, pfn);
}

/*
 * Where a run of n pages (2^(order-1) < n < 2^order) goes, memory used
 * before (resident, likely cached) first: after the zone's last run while
 * in the same block; else the most recently freed block of such memory,
 * carved from its head (the rest goes back at once); else the best fit
 * among the free ranges around such memory (take_extent); then fresh memory,
 * after the last run (consecutive runs fill fresh memory densely, whatever
 * their size), else the head of the block buddy_rmqueue() gives.  Returns
 * the run's first page, off the lists and counted; the caller marks it
 * allocated and traces it (cpu: the allocating CPU, for a fallback's
 * tracepoint).
 */
struct za_page *buddy_rmqueue_run(struct za_zone *z, unsigned int order, unsigned long n, int mt,
				  int cpu, bool nofragment)
{
	unsigned int o;
	zone_lock_assert_held(z);
	VM_BUG_ON(z->mm, n <= 1UL << (order - 1) || n >= 1UL << order);
	struct za_page *page = take_next_run(z, n, mt, false);
	if (page)
		return page;
	if ((page = hot_block(z, order, mt, &o))) {
		take_block(z, page, order, o, mt);
		add_free_pages(z, -(1L << order));
	} else if ((page = take_extent(z, order, n, mt, false)) ||
		   (page = take_next_run(z, n, mt, true))) {
		return page;
	} else if (!(page = rmqueue_block(z, order, mt, cpu, false, nofragment))) {
		return NULL;
	}
	/* take_block left the block's state in its flags and private word */
	carve_run(z, page, order, n, page_flags(page) & PG_mem_dirty, page_private(page));
	z->exact_next = page_to_pfn(z->mm, page) + n;
	z->exact_limit = page_to_pfn(z->mm, page) + (1UL << order);
	return page;
}

/* A run of type mt took the pages of another type's free range: the
 * pageblocks wholly inside it, which it is all of, become mt's. */
static void claim_run_pageblocks(struct za_zone *z, unsigned long pfn, unsigned long n, int mt)
{
	unsigned long nr = 1UL << z->mm->pageblock_order;
	for (unsigned long pb = ALIGN_UP(pfn, nr); pb + nr <= pfn + n; pb += nr) {
		set_pageblock_mt(z->mm, pb, mt);
		ev_add(&z->stat, EV_PAGEBLOCK_CLAIM, 1);
	}
}

/* The blocks a zone just got from pfn `from` on, which a search of a
 * large zone's lists may not reach (they are at the lists' tails): the
 * first free range of n pages around one of them, from the range's start
 * (the free pages the zone had before them first). */
static struct za_page *take_grown(struct za_zone *z, unsigned long from, unsigned long n, int mt)
{
	struct za_mm *mm = z->mm;
	unsigned long lo, hi;
	for (unsigned long pfn = from; pfn < zone_init_end_pfn(z); pfn += 1UL << mm->max_order) {
		struct za_page *b = free_block_holding(mm, pfn), *run;
		if (!b || !joins(mm, b, mt))
			continue;
		free_extent(z, page_to_pfn(mm, b), page_order(b), mt, n, &lo, &hi);
		if (hi - lo >= n && (run = take_run_in(z, lo, n, mt, hi)))
			return run;
	}
	return NULL;
}

/*
 * A run of n pages beyond the largest block (n <= a section's pages): the
 * best fit among the free ranges around the blocks of the top two orders
 * (any n free pages in a row hold a whole free block of order max_order -
 * 1), around memory used before first, then around any -- not fresh
 * memory after the last run, as below the largest block: the free ranges
 * around fresh blocks often hold memory used before, in smaller blocks
 * (zabench malloc's bigbuf: peak RSS 513 MiB, against 577 after the last
 * run) -- then in the blocks the zone got from pfn grown_from on (if not
 * 0), then, with `borrow` (the zone cannot grow), in another type's
 * memory, whose pageblocks the run fills become its type's.  Returns the
 * run's first page, off the lists and counted, or NULL.
 */
struct za_page *buddy_rmqueue_giant(struct za_zone *z, unsigned long n, int mt,
				    unsigned long grown_from, bool borrow)
{
	unsigned int order = z->mm->max_order + 1;
	zone_lock_assert_held(z);
	VM_BUG_ON(z->mm, n <= 1UL << z->mm->max_order || n > 1UL << pfn_section_shift(z->mm));
	struct za_page *page = take_extent(z, order, n, mt, false);
	if (!page)
		page = take_extent(z, order, n, mt, true);
	if (!page && grown_from)
		page = take_grown(z, grown_from, n, mt);
	for (int i = 0; !page && borrow && i < MT_TYPES - 1; i++)
		if ((page = take_extent(z, order, n, fallbacks[mt][i], true)))
			claim_run_pageblocks(z, page_to_pfn(z->mm, page), n, mt);
	return page;
}

/* ------------------------------------------------------------------------
 * Purging (page_reporting.c): dirty free blocks go back to the OS
 * ------------------------------------------------------------------------ */

/*
 * Takes up to max dirty free blocks that became free in epoch max_epoch or
 * before off the lists, so that their memory can be released without the
 * lock; returns how many are in out[].  They count as neither free nor
 * allocated until buddy_free_purged().
 */
int buddy_isolate_dirty(struct za_zone *z, unsigned long max_epoch, struct za_page **out, int max)
{
	int n = 0;
	zone_lock_assert_held(z);
	for (unsigned int o = z->mm->max_order + 1; o-- > 0 && n < max;) {
		for (int mt = 0; mt < MT_TYPES && n < max; mt++) {
			struct za_list *head = &z->free_area[o].free_list[mt];
			for (struct za_list *l = head->next, *next; l != head && n < max; l = next) {
				next = l->next;
				struct za_page *page = container_of(l, struct za_page, lru);
				if (!(page_flags(page) & PG_mem_dirty) || page_private(page) > max_epoch)
					continue;
				del_from_free_list(z, page, o);
				set_page_order(page, o);
				add_free_pages(z, -(1L << o));
				out[n++] = page;
			}
		}
	}
	return n;
}

/* A block whose memory went back to the OS: free, and clean (it reads as
 * zero, which ZA_GFP_ZERO relies on); one the OS refused to take stays
 * dirty, as old as it was. */
void buddy_free_purged(struct za_zone *z, struct za_page *page, bool released)
{
	unsigned int order = page_order(page);
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
}
