/*
 * Runs: allocations of any number of pages (za_alloc_pages_exact), beside
 * the blocks of a power of two the buddy allocator deals in.
 *
 * A run [pfn, pfn + n) is made of its canonical pieces (run_piece_order in
 * internal.h): blocks aligned to their size, each a block of its own to
 * the rest of the allocator, so that freeing a run merges every piece with
 * whatever is free around it; the first piece records the run's length.
 * Here: where a run goes and how its range leaves and rejoins the free
 * lists (under the zone lock, with buddy.c's list primitives), how its
 * pieces are marked, and freeing, resizing and extending one.  Allocating
 * one is the allocation path's (page_alloc.c), with a run's length in its
 * context.
 */
#include "internal.h"
#include "pcp.h"

#include <errno.h>
#include <string.h>

/* Marks the run [pfn, pfn + n), just taken off the free lists, allocated:
 * each piece a block of its own, the first one knowing the run's length.
 * Under the zone lock. */
void mark_run(struct za_zone *z, unsigned long pfn, unsigned long n, int mt)
{
	struct za_mm *mm = z->mm;
	unsigned long end = pfn + n;
	zone_lock_assert_held(z);
	pfn_to_page(mm, pfn)->run_pages = (unsigned int)n;
	for (unsigned int o; pfn < end; pfn += 1UL << o) {
		struct za_page *piece = pfn_to_page(mm, pfn);
		VM_BUG_ON_PAGE(mm, page_flags(piece) & ~PG_mem_dirty, piece);
		o = run_piece_order(mm, pfn, end);
		set_page_order(piece, o);
		piece->zone = (uint8_t)z->id;
		set_page_mt(piece, mt);
		set_page_private(piece, 0);
		set_page_flags(piece, PG_alloc | PG_run);
	}
}

/* The run's pieces lose their marks (it is being freed or resized; a
 * block of an order is a run of one piece).  Under the zone lock. */
void unmark_run(struct za_mm *mm, unsigned long pfn, unsigned long n)
{
	unsigned long end = pfn + n;
	struct za_page *head = pfn_to_page(mm, pfn);
	zone_lock_assert_held(pfn_zone(mm, pfn));
	head->run_pages = 0;
	for (unsigned int o; pfn < end; pfn += 1UL << o) {
		struct za_page *piece = pfn_to_page(mm, pfn);
		o = run_piece_order(mm, pfn, end);
		VM_BUG_ON_PAGE(mm, (page_flags(piece) & (PG_alloc | PG_run)) !=
				   (PG_alloc | (page_flags(head) & PG_run)) || page_order(piece) != o,
			       piece);
		if (piece != head)
			set_page_flags(piece, 0);
	}
	set_page_flags(head, 0);        /* last: the checks above compare with it */
}

/* ------------------------------------------------------------------------
 * Placing runs and taking ranges off the free lists (under the zone lock)
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
	long free_low = z->free_low;
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
	/* The block went whole and its tail came back: the demand's low saw
	 * the run only (za_used_pages_peak). */
	long now_free = load_relaxed(&z->nr_free_pages) + z->nr_isolated;
	z->free_low = free_low < now_free ? free_low : now_free;
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
 * Freeing, resizing and extending a run
 * ------------------------------------------------------------------------ */

/* Why the pages [pfn, pfn + n) are not an allocated run of that size, or
 * NULL.  Under the zone lock, so that two frees of one run cannot both
 * pass; debug=1 also checks the pages inside the pieces. */
static const char *check_run(const struct za_mm *mm, unsigned long pfn, unsigned long n)
{
	unsigned long end = pfn + n, start = pfn;
	zone_lock_assert_held(pfn_zone(mm, pfn));
	if (pfn_to_section_nr(mm, pfn) != pfn_to_section_nr(mm, end - 1))
		return "the size does not match the allocation";
	/* A block of an order is a run of its pages; of a run's pieces, only
	 * the first knows the run's length (the others: 0). */
	const struct za_page *head = pfn_to_page(mm, pfn);
	uint32_t run = page_flags(head) & PG_run;
	unsigned long len = run ? head->run_pages : 1UL << page_order(head);
	if ((page_flags(head) & PG_alloc) && len != n)
		return run && !len ? "inside a run of za_alloc_pages_exact" :
				     "the size does not match the allocation";
	for (unsigned int o; pfn < end; pfn += 1UL << o) {
		uint32_t f = page_flags(pfn_to_page(mm, pfn));
		const char *why;
		o = run_piece_order(mm, pfn, end);
		if (!(f & PG_alloc))
			return pfn == start ? why_not_allocated(f) : "the size does not match the allocation";
		if (f & PG_slab)
			return "the block is a slab of an object cache";
		if (page_order(pfn_to_page(mm, pfn)) != o || (f & PG_run) != run)
			return "the size does not match the allocation";
		if (mm->debug && (why = check_block_body(mm, pfn, o)))
			return why;
	}
	return NULL;
}

/* Why addr cannot start a run of n pages, before looking at the pages. */
static const char *bad_run_address(const struct za_mm *mm, const void *addr, unsigned long n)
{
	if (!virt_is_memory(mm, addr))
		return "address outside the arena";
	if ((uintptr_t)addr & (PAGE_SIZE - 1))
		return "not the start of an allocated block";
	return n > run_max_pages(mm) ? "size above a section" : NULL;
}

int za_free_pages_exact(za_mm_t *mm, void *addr, size_t size)
{
	static const char fn[] = "za_free_pages_exact";
	unsigned long n = size ? size_to_pages(size) : 1;
	const char *why = bad_run_address(mm, addr, n);
	if (why)
		return bad_run(mm, fn, addr, size, why);
	unsigned long pfn = virt_to_pfn(mm, addr);
	if (!(page_flags(virt_to_page(mm, addr)) & PG_run) && !(n & (n - 1)) && !(pfn & (n - 1)))
		return za_free_pages(mm, addr, order_base_2(n));        /* a block of an order */
	struct za_zone *z = pfn_zone(mm, pfn);
	uint64_t t0 = zone_lock(z);
	if (!(why = check_run(mm, pfn, n))) {
		unmark_run(mm, pfn, n);
		buddy_free_range(z, pfn, n);
		ev_add(&z->stat, EV_PGFREE, n);
	}
	zone_unlock(z, t0, NO_CAUSE);
	return why ? bad_run(mm, fn, addr, size, why) : 0;
}

/* Under the zone lock: the run of n pages at pfn is now the run of m
 * pages at start, which holds it; the owner's word (the head's private)
 * moves to the new head. */
static void remark_run(struct za_zone *z, unsigned long pfn, unsigned long n,
		       unsigned long start, unsigned long m, int mt)
{
	struct za_page *head = pfn_to_page(z->mm, pfn);
	unsigned long owner = page_private(head);
	unmark_run(z->mm, pfn, n);
	set_page_private(head, 0);
	mark_run(z, start, m, mt);
	set_page_private(pfn_to_page(z->mm, start), owner);
}

/* Under the zone lock: the run of n pages at pfn becomes m pages long. */
static bool resize_run(struct za_zone *z, unsigned long pfn, unsigned long n, unsigned long m)
{
	struct za_mm *mm = z->mm;
	zone_lock_assert_held(z);
	int mt = page_mt(pfn_to_page(mm, pfn));
	if (m > n && (pfn_to_section_nr(mm, pfn) != pfn_to_section_nr(mm, pfn + m - 1) ||
		      !buddy_take_range(z, pfn + n, m - n, mt)))
		return false;           /* a run is one piece of address space */
	zone_check_below_high(z);
	remark_run(z, pfn, n, pfn, m, mt);
	if (m < n)
		buddy_free_range(z, pfn + m, n - m);
	ev_add(&z->stat, m > n ? EV_PGALLOC : EV_PGFREE, m > n ? m - n : n - m);
	return true;
}

/*
 * Under the zone lock: the run of n pages at pfn becomes one of m > n
 * pages at *start <= pfn, taking the free pages after it, then as many
 * before it as it still needs; false, nothing changed, if they are too
 * few.  The old head's owner word goes to the new head.
 */
static bool extend_run(struct za_zone *z, unsigned long pfn, unsigned long n, unsigned long m,
		       unsigned long *start)
{
	struct za_mm *mm = z->mm;
	unsigned long lo, hi;
	int mt = page_mt(pfn_to_page(mm, pfn));
	buddy_free_around(z, pfn, pfn + n, mt, m - n, &lo, &hi);
	if (hi - lo < m)
		return false;
	unsigned long after = hi - (pfn + n) < m - n ? hi - (pfn + n) : m - n;
	*start = pfn - (m - n - after);
	if ((after && !buddy_range_free(z, pfn + n, after, mt)) ||
	    (*start < pfn && !buddy_range_free(z, *start, pfn - *start, mt)))
		return false;
	bool taken = (!after || buddy_take_range(z, pfn + n, after, mt)) &&
		     (*start == pfn || buddy_take_range(z, *start, pfn - *start, mt));
	VM_BUG_ON(mm, !taken);
	zone_check_below_high(z);
	remark_run(z, pfn, n, *start, m, mt);
	ev_add(&z->stat, EV_PGALLOC, m - n);
	return true;
}

/*
 * za_resize_pages_exact and za_extend_pages_exact: the checks, then
 * resize_run or extend_run under the zone lock.  *start: where the run
 * starts after.  0, or -1 with EINVAL (reported) for a bad call, ENOMEM
 * (not reported) when the pages it needs are not free.
 */
static int change_run(za_mm_t *mm, const char *fn, void *addr, size_t size, size_t new_size,
		      bool extend, unsigned long *start)
{
	unsigned long n = size ? size_to_pages(size) : 1, m = new_size ? size_to_pages(new_size) : 1;
	const char *why = bad_run_address(mm, addr, n);
	if (!why && m > run_max_pages(mm))
		why = "new size above a section";
	else if (!why && extend && m <= n)
		why = "new size not larger";
	if (why)
		return bad_run(mm, fn, addr, size, why);
	unsigned long pfn = virt_to_pfn(mm, addr);
	struct za_zone *z = pfn_zone(mm, pfn);
	bool done = true;
	*start = pfn;
	uint64_t t0 = zone_lock(z);
	if (!(why = check_run(mm, pfn, n)) && m != n)
		done = extend ? extend_run(z, pfn, n, m, start) : resize_run(z, pfn, n, m);
	zone_unlock(z, t0, NO_CAUSE);
	if (why)
		return bad_run(mm, fn, addr, size, why);
	if (!done) {
		za_set_last_error("%s(%p): %s", fn, addr,
				  extend ? "too few free pages around the allocation"
					 : "the pages after the allocation are not free");
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void *za_extend_pages_exact(za_mm_t *mm, void *addr, size_t size, size_t new_size)
{
	unsigned long start;
	if (change_run(mm, "za_extend_pages_exact", addr, size, new_size, true, &start))
		return NULL;
	return pfn_to_virt(mm, start);
}

int za_resize_pages_exact(za_mm_t *mm, void *addr, size_t size, size_t new_size)
{
	unsigned long start;
	return change_run(mm, "za_resize_pages_exact", addr, size, new_size, false, &start);
}
