/*
 * Per-CPU page lists (seeds 000 and 001, and the kernel's later forms).
 *
 * Each (zone, CPU) has a set of lists of free blocks, protected by a
 * trylock that only threads running on that CPU (and drains) take, so a hit
 * writes only the CPU's own cache lines: no zone lock, no atomic on a
 * shared line.  Misses refill from the buddy lists in one zone-lock hold;
 * frees that push `count` to `high` return pages in one bulk free.
 *
 * What the switches change, each off as the seeds' kernel had it:
 *   pcp_high_order   0: order 0 only; 1: seed 000's shared lists for orders
 *                    1..3, high = 11 batches; 2: the kernel's layout since
 *                    5.14 (per migratetype for every order, plus the THP
 *                    order) and high from the low watermark.
 *   pcp_high_auto    6.7's tuning: high moves between high_min and
 *                    high_max -- up on refills and freeing bursts, down by
 *                    an eighth per vmstat tick, and while the zone is below
 *                    its high watermark or kswapd reclaims it; refills grow
 *                    (alloc_factor) on consecutive misses; a freeing streak
 *                    (free_count) drains more per bulk free.
 *   pcp_free_high    a CPU freeing high-order pages drains (5.18, 6.7).
 *   bulkfree_list_first   a bulk free empties the freed block's list
 *                    first, then each list in turn (5.18).
 *   bulkfree_outside_lock seed 001, below.
 * docs/pcp.md has the arithmetic and what differs from the kernel.
 *
 * Invariants: count == sum over the lists of 2^order; every block on lists[i]
 * has order pindex_to_order(i), PG_pcp on its head, and lies in this zone;
 * high_min <= high <= high_max.  Pages on these lists are neither free
 * (for the watermarks) nor allocated.  ZA_DEBUG_VM checks each block as it
 * leaves a list, high as it is set, and the count against the lists after
 * every refill and bulk free (pcp_check_count).
 *
 * The hit paths are inline in pcp.h; this file has the batch work.
 */
#include "pcp.h"
#include "probes.h"
#include "internal.h"
#include "percpu.h"

#include <errno.h>
#include <stdint.h>

static int min_int(int a, int b) { return a < b ? a : b; }
static int max_int(int a, int b) { return a > b ? a : b; }

/* The kernel's layout, or the seed's (see mmzone.h). */
void pcp_setup_lists(struct za_mm *mm)
{
	int mode = (int)mm->cfg.pcp_high_order;
	mm->pcp_high_order = (uint8_t)mode;
	mm->pcp_thp_order = (uint8_t)(mode == 2 && mm->pageblock_order > PCP_MAX_ORDER ?
				      mm->pageblock_order : 0);
	mm->pcp_mt_mask = mode == 2 ? 3 : 0;
	mm->nr_pcp_lists = 0;
	for (unsigned int i = 0; i < NR_PCP_LISTS; i++) {
		unsigned int order = pindex_to_order(mm, i);
		bool used = i < NR_LOWORDER_PCP_LISTS ?
				    order == 0 || (mode == 1 && i % MT_TYPES == 0) || mode == 2 :
				    mm->pcp_thp_order != 0;
		if (used)
			mm->pcp_lists[mm->nr_pcp_lists++] = (uint8_t)i;
	}
	mm->pcp_high_auto = mm->cfg.pcp_high_auto;
	mm->pcp_free_high = (uint8_t)mm->cfg.pcp_free_high;
	mm->pcp_batch_scale_max = (uint8_t)mm->cfg.pcp_batch_scale_max;
	mm->pcp_decay_shift = (uint8_t)mm->cfg.pcp_decay_shift;
	mm->pcp_drain_chunks = (uint8_t)mm->cfg.pcp_drain_chunks;
	mm->pcp_own_pageblocks = mm->cfg.pcp_own_pageblocks;
	mm->pcp_track_free = mm->pcp_high_auto || mm->pcp_free_high;
	/* The free-side books of 6.7's mechanisms are kept per free, under
	 * the lock: with them, every block goes through the lists. */
	mm->pcp_front = mm->percpu_rseq && !mm->pcp_track_free;
	mm->bulkfree_list_first = mm->cfg.bulkfree_list_first;
	mm->alloc_nofragment = mm->cfg.alloc_nofragment;
}

/*
 * The kernel's zone_batchsize(): about a quarter of 0.1% of the zone, at
 * most a quarter of 1 MiB's worth, rounded to 2^n - 1 so that batches of
 * different CPUs do not alias in the cache (63 for a zone of 256 MiB or
 * more).
 */
static int zone_batchsize(unsigned long managed)
{
	unsigned long batch = managed >> 10;
	if (batch > (1UL << 20) / PAGE_SIZE)
		batch = (1UL << 20) / PAGE_SIZE;
	batch /= 4;
	if (batch < 1)
		batch = 1;
	batch += batch / 2;
	while (batch & (batch - 1))
		batch &= batch - 1;
	return batch > 1 ? (int)batch - 1 : 1;
}

/* The kernel's zone_highsize(): `pages` shared by the CPUs of the zone's
 * node (all CPUs if it has none), each at least 4 batches. */
static int high_share(const struct za_zone *z, unsigned long pages, int batch)
{
	const struct za_mm *mm = z->mm;
	long cpus = 0;
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		cpus += mm->cpu_node[cpu] == z->node;
	long high = (long)pages / (cpus ? cpus : mm->nr_cpus);
	if (high > INT32_MAX / 2)
		high = INT32_MAX / 2;
	return high > 4L * batch ? (int)high : 4 * batch;
}

/*
 * pcp_high_min and pcp_high_max (bytes a CPU) cap the tuned range.  The
 * kernel sizes it for a machine's zone; a process heap's zone (the
 * malloc's) spans the machine's memory but holds only what one process
 * uses, and its lists must not keep a machine's share of it.  Each bound
 * stays at least 4 batches, as the kernel's, and high_min at most high_max.
 */
static void cap_high_range(const struct za_mm *mm, int batch, int *high_min, int *high_max)
{
	int *bound[] = { high_min, high_max };
	const uint64_t cap[] = { mm->cfg.pcp_high_min, mm->cfg.pcp_high_max };
	for (int i = 0; i < 2; i++) {
		uint64_t pages = cap[i] >> PAGE_SHIFT;
		if (pages < 4ULL * (uint64_t)batch)
			pages = 4ULL * (uint64_t)batch;
		if (cap[i] && (uint64_t)*bound[i] > pages)
			*bound[i] = (int)pages;
	}
	if (*high_min > *high_max)
		*high_min = *high_max;
}

/*
 * high_min and high_max.  percpu_pagelist_high_fraction=F (the kernel's
 * sysctl, F >= 8) pins both to 1/F of the zone shared by the node's CPUs,
 * which turns tuning off.  Otherwise with pcp_high_auto=1 (6.7) high moves
 * between the low watermark's share (so that full lists never push the
 * zone below it) and an eighth of the zone's, each capped by
 * pcp_high_min/pcp_high_max.  Without tuning: 6.7's floor
 * is 5.14's fixed high (pcp_high_order=2); the seeds' high was 6 batches,
 * and seed 000 made it room for one batch per order-0 migratetype plus a
 * batch of the largest cached order (11), so that one refill rarely forces
 * a drain on the next free.
 */
static void zone_high_range(const struct za_zone *z, int batch, int *high_min, int *high_max)
{
	const struct za_mm *mm = z->mm;
	long fraction = (long)mm->cfg.percpu_pagelist_high_fraction;
	if (fraction) {
		*high_min = *high_max = high_share(z, z->nr_pages / (unsigned long)fraction, batch);
	} else if (mm->pcp_high_auto) {
		*high_min = high_share(z, z->wmark[WMARK_LOW], batch);
		*high_max = high_share(z, z->nr_pages / 8, batch);
		cap_high_range(mm, batch, high_min, high_max);
	} else if (mm->pcp_high_order == 2) {
		*high_min = *high_max = high_share(z, z->wmark[WMARK_LOW], batch);
	} else {
		*high_min = *high_max = mm->pcp_high_order ? batch * MT_TYPES + (batch << PCP_MAX_ORDER)
							   : 6 * batch;
	}
}

/* PCPF_FREE_HIGH_BATCH (pcp_free_high=2): the CPU's slice of the last-level
 * cache (llc_per_cpu) holds more than 3 batches, so a drain for a
 * high-order free streak may leave a batch on the lists: they are still
 * in its cache for the next allocations. */
static bool free_high_batch(const struct za_mm *mm, int batch)
{
	return mm->cfg.llc_per_cpu / PAGE_SIZE > 3UL * (unsigned long)batch;
}

static void pcp_set_high(const struct za_mm *mm, struct za_pcp *pcp, int high)
{
	VM_BUG_ON(mm, high < pcp->high_min || high > pcp->high_max);
	store_relaxed(&pcp->high, high);
}

/* A front holds up to 2^k - 1 blocks, about a batch of pages: a push
 * that makes its length reach 2^k fails, as does one that must fold. */
static void front_capacity(struct za_zone *z, int batch)
{
	for (unsigned int order = 0; order <= PCP_MAX_ORDER; order++) {
		int blocks = max_int(batch >> order, 1), k = 0;
		while (blocks >> k)
			k++;
		z->front_full[order] = RSEQ_FOLD | 1ULL << k;
	}
}

void pcp_init(struct za_zone *z, int nr_cpus)
{
	int batch = zone_batchsize(z->nr_pages), high_min, high_max;
	zone_high_range(z, batch, &high_min, &high_max);
	front_capacity(z, batch);
	z->front_pc = (struct rseq_percpu){
		.base = (char *)&z->pcp[0].front[0],
		.stop = (long)offsetof(struct za_pcp, rseq_stop) - (long)offsetof(struct za_pcp, front),
		.shift = ZA_PCP_SHIFT,
		.nr = (unsigned int)nr_cpus,
		.index_tls = z->mm->rseq_cpu_offset,
	};
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct za_pcp *pcp = &z->pcp[cpu];
		pcp->batch = batch;
		pcp->high_min = high_min;
		pcp->high_max = high_max;
		pcp_set_high(z->mm, pcp, high_min);
		pcp->flags = free_high_batch(z->mm, batch) ? PCPF_FREE_HIGH_BATCH : 0;
		for (int i = 0; i < NR_PCP_LISTS; i++)
			list_init(&pcp->lists[i]);
	}
}

/* The CPU whose set this is. */
static int pcp_cpu(const struct za_zone *z, const struct za_pcp *pcp)
{
	return (int)(pcp - z->pcp);
}

/* Blocks this set has handed out (EV_PCP_ALLOC), or taken back
 * (EV_PCP_FREE), over every order slot. */
static uint64_t pcp_events(const struct za_pcp *pcp, enum za_event first)
{
	uint64_t n = 0;
	for (unsigned int slot = 0; slot < NR_PCP_ORDERS; slot++)
		n += load_relaxed(&pcp->stat.ev[first + slot]);
	return n;
}

/* Applies a halving per power of two: n of them at once. */
static int halve_times(int v, uint64_t n)
{
	return n >= 31 ? 0 : v >> n;
}

/* ------------------------------------------------------------------------
 * ZONE_BELOW_HIGH (pcp_high_auto)
 * ------------------------------------------------------------------------ */
/* Pages deferred_init has not yet given the buddy lists are free too. */
static bool zone_above_high(const struct za_zone *z)
{
	return load_relaxed(&z->nr_free_pages) + (long)zone_deferred_pages(z) >
	       (long)(z->wmark[WMARK_HIGH] + z->lowmem_reserve[z->mm->nr_zones - 1]);
}

/*
 * After taking pages from the buddy lists, under the zone lock: at or below
 * the high watermark, the zone's CPUs stop growing high and shrink it as
 * they free, so that their lists give pages back before reclaim must.  The
 * kernel notices this on the allocation fast path; zonealloc where the
 * free pages go down, which keeps the fast path as it was.
 */
void zone_check_below_high(struct za_zone *z)
{
	zone_lock_assert_held(z);
	if (z->mm->pcp_high_auto && !(load_relaxed(&z->pcp_flags) & ZONE_BELOW_HIGH) &&
	    !zone_above_high(z))
		atomic_fetch_or_explicit(&z->pcp_flags, ZONE_BELOW_HIGH, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * Refill
 * ------------------------------------------------------------------------ */

/*
 * pcp_own_pageblocks: does this CPU's refill claim a whole pageblock?
 * Only under the CPU's lock (not a front's refill, which runs while the
 * lock is busy and hands its blocks to a front of about a batch), for the
 * orders below a pageblock, in a zone of the CPU's node, and when the
 * lists can hold one: a block over high would go back with the next free.
 */
static bool claims_pageblocks(const struct za_zone *z, int cpu, unsigned int order, int hit_slot)
{
	const struct za_mm *mm = z->mm;
	const struct za_pcp *pcp = &z->pcp[cpu];
	return mm->pcp_own_pageblocks && hit_slot < 0 && order < mm->pageblock_order &&
	       z->node == mm->cpu_node[cpu] &&
	       pcp_count(pcp) + (1 << mm->pageblock_order) <= pcp_high(pcp);
}

/*
 * pcp_own_pageblocks, the RFC's refill phases 0 and 1: the fragments of
 * the CPU's own blocks that drains put back, then, if they are short of
 * `want` pages and a pageblock still fits under high, a whole free one
 * claimed -- which serves the refill however much it asked.  Returns the
 * pages taken onto out; phases 2 and 3, the usual refill, take the rest
 * when *short.
 */
static unsigned long rmqueue_owned(struct za_zone *z, int cpu, unsigned int order,
				   unsigned long want, int mt, struct za_list *out,
				   unsigned long *whole, bool *short_of_want)
{
	const struct za_pcp *pcp = &z->pcp[cpu];
	unsigned long block = 1UL << z->mm->pageblock_order;
	unsigned long pages = buddy_recover_fragments(z, order, mt, cpu, want, out, whole);
	*short_of_want = pages < want;
	if (!*short_of_want ||
	    (unsigned long)pcp_count(pcp) + pages + block > (unsigned long)pcp_high(pcp))
		return pages;
	struct za_page *owned = buddy_claim_pageblock(z, order, mt, cpu);
	if (!owned)
		return pages;
	list_add_tail(&owned->lru, out);        /* split below, outside the lock */
	++*whole;
	*short_of_want = false;
	return pages + block;
}

/*
 * Takes `blocks` blocks of one order from the buddy lists in a single
 * zone-lock hold, as whole free blocks (buddy_rmqueue_bulk), and splits
 * them onto the list after releasing the lock: the blocks are ours by then.
 * Cutting a block into n takes n - 1 splits, counted in the zone under its
 * lock (buddy_split adds them on read), as is a refill that also hands a
 * block out without the set's lock (front_refill: hit_slot, else -1).
 * The list stays in ascending physical order and its head is handed out
 * first.  With pcp_own_pageblocks the refill claims a whole free pageblock
 * instead, when there is one of the type, and the CPU owns it (buddy.c).
 * Returns how many blocks it got.
 */
static int rmqueue_bulk(struct za_zone *z, int cpu, unsigned int order, int blocks,
			struct za_list *list, int mt, bool nofragment, int hit_slot)
{
	struct za_list taken;
	list_init(&taken);
	uint64_t t0 = zone_lock_bulk(z, "rmqueue_bulk", blocks << order);
	unsigned long whole = 0, want = (unsigned long)blocks << order, pages = 0;
	bool short_of_want = true;
	if (claims_pageblocks(z, cpu, order, hit_slot))
		pages = rmqueue_owned(z, cpu, order, want, mt, &taken, &whole, &short_of_want);
	if (short_of_want)
		pages += buddy_rmqueue_bulk(z, order, want - pages, mt, &taken, cpu, nofragment,
					    &whole);
	zone_check_below_high(z);
	ev_add(&z->stat, EV_PCP_REFILL, 1);
	ev_add(&z->stat, EV_PCP_REFILL_PAGES, pages);
	ev_add(&z->stat, EV_PCP_SPLIT, (pages >> order) - whole);
	if (hit_slot >= 0 && pages) {
		ev_add(&z->stat, EV_PCP_ALLOC + (unsigned int)hit_slot, 1);
		ev_add(&z->stat, EV_PCP_ALLOC_MISS + (unsigned int)hit_slot, 1);
	}
	zone_unlock_bulk(z, t0, EV_PCP_REFILL_HOLD, "rmqueue_bulk", (int)pages);
	ZA_PROBE4(refill, cpu, order, pages, mt);

	while (!list_empty(&taken)) {
		struct za_page *block = container_of(taken.next, struct za_page, lru);
		VM_BUG_ON_PAGE(z->mm, page_order(block) < order || (page_flags(block) & ~PG_mem_dirty),
			       block);
		unsigned long n = 1UL << (page_order(block) - order);
		uint32_t flags = hit_slot < 0 ? pcp_list_flags(z, &z->pcp[cpu], block) : PG_pcp;
		list_del(&block->lru);
		for (unsigned long i = 0; i < n; i++) {
			struct za_page *page = block + (i << order);
			set_page_order(page, order);
			page->zone = (uint8_t)z->id;
			set_page_mt(page, mt);
			set_page_flags(page, flags);
			list_add_tail(&page->lru, list);
		}
	}
	return (int)(pages >> order);
}

/* Blocks per refill without pcp_high_auto: `batch` pages' worth, at least
 * two blocks. */
static int refill_blocks(const struct za_pcp *pcp, unsigned int order)
{
	int blocks = pcp->batch >> order;
	return blocks < 2 ? 2 : blocks;
}

/*
 * pcp_high_auto (the kernel's nr_pcp_alloc): blocks per refill.  A run of
 * order-0 refills without a free between them doubles the refill each
 * time (alloc_factor, up to batch << pcp_batch_scale_max), as long as
 * count stays a batch below high; every free halves it again -- lazily,
 * as the free path does not say: the frees since the last refill are in
 * EV_PCP_FREE.  Each refill also raises high by what it takes, unless
 * the zone is below its high watermark.  Higher orders take a batch's
 * worth of pages, at least two blocks.
 */
static int nr_pcp_alloc(struct za_zone *z, struct za_pcp *pcp, unsigned int order)
{
	const struct za_mm *mm = z->mm;
	uint64_t frees = pcp_events(pcp, EV_PCP_FREE);
	int factor = halve_times(pcp->alloc_factor, frees - pcp->frees_seen);
	int batch = pcp->batch, high = pcp_high(pcp);
	pcp->frees_seen = frees;
	if (high < batch) {
		pcp->alloc_factor = (uint8_t)factor;
		return 1;
	}
	int want = order ? batch : batch << factor;
	if (pcp->high_min != pcp->high_max && !(load_relaxed(&z->pcp_flags) & ZONE_BELOW_HIGH)) {
		high = min_int(high + want, pcp->high_max);
		pcp_set_high(mm, pcp, high);
	}
	if (!order) {
		int room = max_int(high - pcp_count(pcp) - batch, batch);
		if (want <= room && factor < mm->pcp_batch_scale_max)
			factor++;
		want = min_int(want, room);
	}
	pcp->alloc_factor = (uint8_t)factor;
	return want > 1 ? max_int(want >> order, 2) : want;
}

#ifdef ZA_DEBUG_VM
/* count is the pages on the lists (a walk of them all: debug builds only). */
static void pcp_check_count(struct za_zone *z, struct za_pcp *pcp)
{
	int pages = 0;
	for (unsigned int i = 0; i < NR_PCP_LISTS; i++)
		for (struct za_list *l = pcp->lists[i].next; l != &pcp->lists[i]; l = l->next)
			pages += 1 << pindex_to_order(z->mm, i);
	VM_BUG_ON(z->mm, pages != pcp_count(pcp));
	VM_BUG_ON(z->mm, pcp_high(pcp) < pcp->high_min || pcp_high(pcp) > pcp->high_max);
}
#else
static void pcp_check_count(struct za_zone *z, struct za_pcp *pcp)
{
	(void)z;
	(void)pcp;
}
#endif

static void drain_for_refill(struct za_zone *z, struct za_pcp *pcp, unsigned int order, int mt);

/* A miss: refill the list from the buddy lists (nofragment: without
 * fallbacks below a pageblock).  Under the per-CPU lock. */
void pcp_refill(struct za_zone *z, struct za_pcp *pcp, unsigned int order, int mt,
		struct za_list *list, bool nofragment)
{
	za_lock_assert_held(z->mm, &pcp->lock);
	if (z->mm->cfg.pcp_refill_drain && pcp_count(pcp) > pcp->high_min)
		drain_for_refill(z, pcp, order, mt);
	int blocks = z->mm->pcp_high_auto ? nr_pcp_alloc(z, pcp, order) : refill_blocks(pcp, order);
	int got = rmqueue_bulk(z, pcp_cpu(z, pcp), order, blocks, list, mt, nofragment, -1);
	pcp_add_count(pcp, got << order);
	pcp_check_count(z, pcp);
	if (got)
		pcp_ev_add(&pcp->stat, EV_PCP_ALLOC_MISS + pcp_order_slot(order), 1);
}

/* ------------------------------------------------------------------------
 * Bulk free
 * ------------------------------------------------------------------------ */

/*
 * pcp_own_pageblocks, the RFC's merge pass: a block a drain takes from the
 * lists of the CPU owning its pageblock takes its buddy with it when the
 * buddy's pages are all on those lists (PG_pcp_buddy: never on a front,
 * and only on the owner's lists, whose lock we hold), in whatever pieces,
 * and so on up to the pageblock while *budget has room for the buddy's
 * pages -- the zone lock then frees one block, not its pieces, and the
 * drain frees no more than it was asked.  Returns the block.
 */
static bool on_own_lists(const struct za_mm *mm, unsigned long pfn, unsigned int order)
{
	for (unsigned long p = pfn; p < pfn + (1UL << order); p += 1UL << page_order(pfn_to_page(mm, p)))
		if (page_flags(pfn_to_page(mm, p)) != (PG_pcp | PG_pcp_buddy))
			return false;
	return true;
}

static void take_pieces(struct za_zone *z, struct za_pcp *pcp, unsigned long pfn,
			unsigned int order, int *budget)
{
	const struct za_mm *mm = z->mm;
	for (unsigned long p = pfn, end = pfn + (1UL << order); p < end;) {
		struct za_page *piece = pfn_to_page(mm, p);
		unsigned int o = page_order(piece);
		list_del(&piece->lru);
		*budget -= 1 << o;
		pcp_add_count(pcp, -(1 << o));
		tp_pcpu_drain(z, pcp_cpu(z, pcp), piece, o);
		set_page_flags(piece, 0);
		pcp_ev_add(&pcp->stat, EV_PCP_MERGE, 1);     /* a piece joins the block */
		p += 1UL << o;
	}
}

static struct za_page *merge_on_lists(struct za_zone *z, struct za_pcp *pcp, struct za_page *page,
				      int *budget)
{
	const struct za_mm *mm = z->mm;
	unsigned long pfn = page_to_pfn(mm, page);
	unsigned int order = page_order(page);
	for (; order < mm->pageblock_order && (1 << order) <= *budget; order++) {
		unsigned long buddy_pfn = pfn ^ (1UL << order);
		if (!on_own_lists(mm, buddy_pfn, order))
			break;
		take_pieces(z, pcp, buddy_pfn, order, budget);
		set_page_flags(pfn_to_page(mm, pfn), 0);        /* a head again below */
		pfn &= buddy_pfn;
	}
	page = pfn_to_page(mm, pfn);
	set_page_order(page, order);
	set_page_flags(page, PG_pcp);
	return page;
}

/* The block at the cold end of the non-empty list pindex, off it: *budget
 * and the count lose its pages. */
static struct za_page *take_cold(struct za_zone *z, struct za_pcp *pcp, unsigned int pindex,
				 int *budget)
{
	struct za_list *list = &pcp->lists[pindex];
	struct za_page *page = container_of(list->prev, struct za_page, lru);
	unsigned int order = page_order(page);
	uint32_t flags = page_flags(page);
	VM_BUG_ON_PAGE(z->mm, (flags & ~PG_pcp_buddy) != PG_pcp ||
			       order != pindex_to_order(z->mm, pindex), page);
	list_del(&page->lru);
	*budget -= 1 << order;
	pcp_add_count(pcp, -(1 << order));
	tp_pcpu_drain(z, pcp_cpu(z, pcp), page, order);
	set_page_flags(page, PG_pcp);
	return flags & PG_pcp_buddy ? merge_on_lists(z, pcp, page, budget) : page;
}

/*
 * Picks the next block to bulk-free, from the cold end of a list; the
 * cursor walks mm->pcp_lists, the lists the layout uses.
 *
 * bulkfree_list_first=0 (before 5.18): round-robin over the lists, a list
 * given one more block per empty list skipped on the way to it, so fuller
 * lists drain faster; the last non-empty list drains completely.
 * =1 (5.18): the list of the block just freed first (pindex), each list
 * emptied before the next.
 */
struct bulk_cursor {
	unsigned int i;                 /* into mm->pcp_lists */
	unsigned int nlists;
	int batch_free;                 /* round-robin: blocks left for this list */
	bool started;                   /* list-first: the current list is chosen */
};

static struct bulk_cursor bulk_cursor_start(const struct za_mm *mm, unsigned int pindex)
{
	struct bulk_cursor c = { mm->nr_pcp_lists - 1, mm->nr_pcp_lists, 0, false };
	if (mm->bulkfree_list_first)
		for (unsigned int i = 0; i < c.nlists; i++)
			if (mm->pcp_lists[i] == pindex)
				c.i = (i + c.nlists - 1) % c.nlists;    /* the next one is pindex */
	return c;
}

static struct za_list *next_nonempty(const struct za_mm *mm, struct za_pcp *pcp, struct bulk_cursor *c)
{
	struct za_list *list;
	do {
		c->i = (c->i + 1) % c->nlists;
		list = &pcp->lists[mm->pcp_lists[c->i]];
		c->batch_free++;
	} while (list_empty(list));
	return list;
}

static struct za_page *pick_page(struct za_zone *z, struct za_pcp *pcp, void *cursor, int *budget)
{
	const struct za_mm *mm = z->mm;
	struct bulk_cursor *c = cursor;
	struct za_list *list = &pcp->lists[mm->pcp_lists[c->i]];
	if (mm->bulkfree_list_first) {
		if (!c->started || list_empty(list))
			list = next_nonempty(mm, pcp, c);
		c->started = true;
	} else if (c->batch_free <= 0 || list_empty(list)) {
		list = next_nonempty(mm, pcp, c);
		if (c->batch_free == (int)c->nlists)
			c->batch_free = *budget;
	}
	c->batch_free--;
	return take_cold(z, pcp, mm->pcp_lists[c->i], budget);
}

typedef struct za_page *(*pick_fn)(struct za_zone *z, struct za_pcp *pcp, void *arg, int *budget);

/* Up to BUDDY_COALESCE_MAX blocks that `pick` takes off the lists while
 * *budget (pages) lasts, those that are buddies of each other merged
 * first: one merge into the free lists instead of one per page, which is
 * most of the work when a run of pages is freed together.  How many
 * blocks are left in blocks[]. */
static int pick_chunk(struct za_zone *z, struct za_pcp *pcp, int *budget, pick_fn pick, void *arg,
		      struct za_page **blocks, unsigned long *merges)
{
	struct za_page *page;
	int n = 0;
	while (*budget > 0 && n < BUDDY_COALESCE_MAX && (page = pick(z, pcp, arg, budget)))
		blocks[n++] = page;
	return buddy_coalesce(z->mm, blocks, n, merges);
}

static void prefetch_buddies(const struct za_mm *mm, struct za_page **blocks, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned long pfn = page_to_pfn(mm, blocks[i]);
		__builtin_prefetch(pfn_to_page(mm, pfn ^ (1UL << page_order(blocks[i]))));
	}
}

/* A block back to the buddy lists.  Under the zone lock. */
static void free_block(struct za_zone *z, struct za_page *block)
{
	const struct za_mm *mm = z->mm;
	zone_lock_assert_held(z);
	buddy_free(z, block, page_order(block), pageblock_mt(mm, page_to_pfn(mm, block)));
}

#define BULK_FREE "free_pcppages_bulk"

/* A bulk free's events, then the zone lock it took at t0 released. */
static void bulk_free_done(struct za_zone *z, int pages, unsigned long merges, uint64_t t0)
{
	ev_add(&z->stat, EV_BUDDY_MERGE, merges);
	ev_add(&z->stat, EV_PCP_BULKFREE, 1);
	ev_add(&z->stat, EV_PCP_BULKFREE_PAGES, (uint64_t)pages);
	zone_unlock_bulk(z, t0, EV_PCP_BULKFREE_HOLD, BULK_FREE, pages);
	ZA_PROBE2(drain, z->id, pages);
}

static struct za_page *chain_next(const struct za_page *page)
{
	return (struct za_page *)(void *)page->lru.next;
}

/*
 * The kernel's free_pcppages_bulk: the blocks `pick` takes off the lists
 * while *budget (pages; a block may take it beyond) lasts, back to the
 * buddy lists in one zone-lock hold, however many there are -- what
 * bounds a hold is how much its callers ask for (pcp_drain_chunks).
 *
 * bulkfree_outside_lock=1 (seed 001): picking and merging happen before
 * the zone lock is taken -- the lists are ours while we hold the per-CPU
 * lock -- the picked blocks chained through their list links, with a
 * prefetch of the first chunk's buddies, so that the lock is held only
 * for the merges into the free lists.  =0: all of it under the zone lock.
 */
static void bulk_free(struct za_zone *z, struct za_pcp *pcp, int *budget, pick_fn pick, void *arg)
{
	bool outside = z->mm->bulkfree_outside_lock;
	struct za_page *chain = NULL, *last = NULL;
	unsigned long merges = 0;
	int before = *budget;
	za_lock_assert_held(z->mm, &pcp->lock);
	uint64_t t0 = outside ? 0 : zone_lock_bulk(z, BULK_FREE, before);
	while (*budget > 0) {
		struct za_page *blocks[BUDDY_COALESCE_MAX];
		int n = pick_chunk(z, pcp, budget, pick, arg, blocks, &merges);
		if (!n)
			break;
		if (!outside) {
			for (int i = 0; i < n; i++)
				free_block(z, blocks[i]);
			continue;
		}
		if (!chain)
			prefetch_buddies(z->mm, blocks, n);
		for (int i = 0; i < n; i++) {
			blocks[i]->lru.next = NULL;
			if (last)
				last->lru.next = (struct za_list *)(void *)blocks[i];
			else
				chain = blocks[i];
			last = blocks[i];
		}
	}
	if (outside)
		t0 = zone_lock_bulk(z, BULK_FREE, before - *budget);
	for (struct za_page *next; chain; chain = next) {
		next = chain_next(chain);
		free_block(z, chain);
	}
	bulk_free_done(z, before - *budget, merges, t0);
}

/* `pages` pages (or all there are) off the lists, pindex's first where
 * the order of the lists says so (any list for drains). */
static void free_pcppages_bulk(struct za_zone *z, struct za_pcp *pcp, int pages, unsigned int pindex)
{
	struct bulk_cursor cur = bulk_cursor_start(z->mm, pindex);
	int budget = pages < pcp_count(pcp) ? pages : pcp_count(pcp);
	if (budget > 0)
		bulk_free(z, pcp, &budget, pick_page, &cur);
	pcp_check_count(z, pcp);
}

/* For drain_for_refill: the cold end of the list *pindex, while it has
 * blocks. */
static struct za_page *pick_cold(struct za_zone *z, struct za_pcp *pcp, void *pindex, int *budget)
{
	unsigned int i = *(const unsigned int *)pindex;
	return list_empty(&pcp->lists[i]) ? NULL : take_cold(z, pcp, i, budget);
}

/*
 * pcp_refill_drain: before a refill of `order` that the buddy lists could
 * serve only from memory no one used yet, what the lists hold of other
 * orders above high_min goes back, cold end first, so that it merges there
 * and serves the refill instead.  A process heap moves from one size to
 * another: the blocks a tuned high keeps for one order are memory no other
 * order can use.
 */
static void drain_for_refill(struct za_zone *z, struct za_pcp *pcp, unsigned int order, int mt)
{
	const struct za_mm *mm = z->mm;
	uint64_t t0 = zone_lock(z);
	bool used = buddy_has_dirty(z, order, mt);
	zone_unlock(z, t0, NO_CAUSE);
	if (used)
		return;
	int excess = pcp_count(pcp) - pcp->high_min;
	for (unsigned int i = 0; i < mm->nr_pcp_lists && excess > 0; i++) {
		unsigned int pindex = mm->pcp_lists[i];
		struct za_list *list = &pcp->lists[pindex];
		if (pindex_to_order(mm, pindex) != order && !list_empty(list) && excess > 0)
			bulk_free(z, pcp, &excess, pick_cold, &pindex);
	}
	pcp_check_count(z, pcp);
}

/*
 * za_free_pages_bulk: a run of blocks of one order, all of zone z and
 * bound for cpu's lists (the freeing CPU's, or with pcp_own_pageblocks
 * their owner's: remote), freed onto the lists under one hold of their
 * lock -- the kernel's free_unref_folios, which frees a batch of folios
 * under one pcp lock hold.  Returns how many it freed: fewer when the lock
 * is busy, or a drain let it go; the caller frees the rest one by one.
 */
int pcp_free_run(struct za_zone *z, int cpu, struct za_page *const *pages, int n,
		 unsigned int order, bool remote)
{
	const struct za_mm *mm = z->mm;
	struct za_pcp *pcp = &z->pcp[cpu];
	if (!za_trylock(&pcp->lock))
		return 0;
	for (int i = 0; i < n;) {
		struct za_page *page = pages[i++];
		if (remote)
			pcp_ev_add(&pcp->stat, EV_PCP_REMOTE_FREE, 1);
		if (!pcp_put_locked(z, pcp, page, order, pageblock_mt(mm, page_to_pfn(mm, page)), false,
				    remote))
			return i;
	}
	za_tryunlock(&pcp->lock);
	return n;
}

/* count reached high: return a batch.  Under the per-CPU lock. */
void pcp_free_batch(struct za_zone *z, struct za_pcp *pcp, unsigned int pindex)
{
	za_lock_assert_held(z->mm, &pcp->lock);
	free_pcppages_bulk(z, pcp, pcp->batch, pindex);
}

/*
 * The limit the free path holds count to (the kernel's nr_pcp_high), and
 * the tuning of high on the way:
 *   - free_high: 0, all of it goes (pcp_high_auto: high also drops by
 *     batch << pcp_batch_scale_max);
 *   - without pcp_high_auto: high;
 *   - while kswapd reclaims the zone: high shrinks by the freeing streak
 *     (at least a batch), and the lists keep at most 4 batches;
 *   - high pinned (high_min == high_max): high;
 *   - below the high watermark: high shrinks likewise, and count is
 *     allowed only up to high_min;
 *   - else, count at high with a freeing streak longer than high leaves
 *     room for: high grows to hold it (this drain still happens).
 */
static int nr_pcp_high(struct za_zone *z, struct za_pcp *pcp, int batch, bool free_high)
{
	const struct za_mm *mm = z->mm;
	int high = pcp_high(pcp), shrink = max_int(pcp->free_count, batch);
	unsigned int zflags = load_relaxed(&z->pcp_flags);
	if (free_high) {
		if (mm->pcp_high_auto)
			pcp_set_high(mm, pcp, max_int(high - (batch << mm->pcp_batch_scale_max),
						      pcp->high_min));
		return 0;
	}
	if (!mm->pcp_high_auto)
		return high;
	if (zflags & ZONE_RECLAIM_ACTIVE) {
		pcp_set_high(mm, pcp, max_int(high - shrink, pcp->high_min));
		return min_int(batch << 2, pcp_high(pcp));
	}
	if (pcp->high_min == pcp->high_max)
		return high;
	if (zflags & ZONE_BELOW_HIGH) {
		pcp_set_high(mm, pcp, max_int(high - shrink, pcp->high_min));
		return max_int(pcp_count(pcp), pcp->high_min);
	}
	if (pcp_count(pcp) >= high && high < pcp->free_count + batch)
		pcp_set_high(mm, pcp, min_int(pcp->free_count + batch, pcp->high_max));
	return high;
}

/*
 * How many pages a free over the limit returns (the kernel's nr_pcp_free):
 * free_high, all (pcp_free_high=1, as 5.18) or up to batch <<
 * pcp_batch_scale_max (=2, as 6.7); with pcp_high_auto the freeing
 * streak, at least a batch and leaving at least a batch; else a batch.
 */
static int nr_pcp_free(const struct za_mm *mm, const struct za_pcp *pcp, int batch, int high,
		       bool free_high)
{
	if (free_high)
		return mm->pcp_free_high == 1 ? pcp_count(pcp)
					      : min_int(pcp_count(pcp), batch << mm->pcp_batch_scale_max);
	if (!mm->pcp_high_auto)
		return batch;
	if (high < batch)
		return 1;
	return min_int(max_int(pcp->free_count, batch), high - batch);
}

/* Pages per hold of a drain of `pages` that a free over the limit or the
 * decay asks for: a batch with pcp_drain_chunks=2 (6.19), else all. */
static int drain_chunk(const struct za_mm *mm, const struct za_pcp *pcp, int pages)
{
	return mm->pcp_drain_chunks == 2 ? pcp->batch : max_int(pages, 1);
}

/*
 * to_free pages back from a free over the limit: in one bulk free, or
 * with pcp_drain_chunks=2 (6.19) a batch per bulk free, the per-CPU lock
 * dropped between batches so that a free of thousands of pages (a large
 * tuned high, a long freeing streak) does not hold off the lock's other
 * users for all of it.  The retake is a trylock, as the free path's; if
 * it fails, or the thread now runs on another CPU, the rest stays on the
 * lists for a later free.  Returns whether the per-CPU lock is held.
 */
static bool free_over_high(struct za_zone *z, struct za_pcp *pcp, int to_free, unsigned int pindex)
{
	const struct za_mm *mm = z->mm;
	int chunk = drain_chunk(mm, pcp, to_free);
	for (;;) {
		int n = min_int(to_free, chunk);
		free_pcppages_bulk(z, pcp, n, pindex);
		to_free -= n;
		if (to_free <= 0 || !pcp_count(pcp))
			return true;
		za_tryunlock(&pcp->lock);
		if (this_cpu(mm) != pcp_cpu(z, pcp) || !za_trylock(&pcp->lock))
			return false;
	}
}

/* pcp_free_account's rest: a drain may be due, or high may change.
 * Entered under the per-CPU lock; returns whether it is still held. */
static bool pcp_free_tracked(struct za_zone *z, struct za_pcp *pcp, unsigned int pindex, bool free_high)
{
	const struct za_mm *mm = z->mm;
	int batch = pcp->batch;
	za_lock_assert_held(mm, &pcp->lock);
	int high = nr_pcp_high(z, pcp, batch, free_high);
	if (pcp_count(pcp) < high)
		return true;
	bool locked = free_over_high(z, pcp, nr_pcp_free(mm, pcp, batch, high, free_high), pindex);
	/* The drain may have lifted the zone back above its high watermark. */
	if ((load_relaxed(&z->pcp_flags) & ZONE_BELOW_HIGH) && zone_above_high(z))
		atomic_fetch_and_explicit(&z->pcp_flags, ~(unsigned int)ZONE_BELOW_HIGH,
					  memory_order_relaxed);
	return locked;
}

/*
 * pcp_high_auto / pcp_free_high: the free path's books (the kernel's
 * free_unref_page_commit), after the block went on its list.  Allocations
 * halve free_count; they are not told (the hit path stays as it was), so
 * the halvings of those since the last free are applied here, all at
 * once, before it is read.  free_high: a CPU freeing high-order pages
 * drains its lists -- with pcp_free_high=1 once free_count reaches a batch
 * (5.18), with 2 also only when the free before was of a high order too,
 * and, with PCPF_FREE_HIGH_BATCH, only once a batch is on the lists (6.7);
 * with 3 once free_count reaches half of high_min beyond a batch (6.16).
 * The rest, when a drain may be due or high may change, is
 * pcp_free_tracked's.  Out of line, so that the hit path without these
 * switches keeps its registers.  Entered under the per-CPU lock; returns
 * whether it is still held (pcp_drain_chunks=2 may have let it go).
 */
/* pcp_free_high=3 (6.16, "increase pcp->free_count threshold to trigger
 * free_high"): a freeing streak must also cover half of high_min before it
 * drains, so that ordinary frees of high orders stop flushing the lists. */
static int free_high_extra(const struct za_mm *mm, const struct za_pcp *pcp)
{
	return mm->pcp_free_high == 3 ? pcp->high_min / 2 : 0;
}

bool pcp_free_account(struct za_zone *z, struct za_pcp *pcp, unsigned int order, unsigned int pindex)
{
	const struct za_mm *mm = z->mm;
	int batch = pcp->batch;
	za_lock_assert_held(mm, &pcp->lock);
	uint64_t allocs = pcp_events(pcp, EV_PCP_ALLOC);
	int free_count = halve_times(pcp->free_count, allocs - pcp->allocs_seen);
	bool free_high = false;
	pcp->allocs_seen = allocs;
	if (order && order <= PCP_MAX_ORDER) {
		if (mm->pcp_free_high == 1)
			free_high = free_count >= batch;
		else if (mm->pcp_free_high)
			free_high = free_count >= batch + free_high_extra(mm, pcp) &&
				    (pcp->flags & PCPF_PREV_FREE_HIGH_ORDER) &&
				    (!(pcp->flags & PCPF_FREE_HIGH_BATCH) || pcp_count(pcp) >= batch);
		pcp->flags |= PCPF_PREV_FREE_HIGH_ORDER;
	} else {
		pcp->flags &= (uint8_t)~PCPF_PREV_FREE_HIGH_ORDER;
	}
	if (free_count < batch << mm->pcp_batch_scale_max)
		free_count += 1 << order;
	pcp->free_count = free_count;
	if (unlikely(free_high || load_relaxed(&z->pcp_flags) || pcp_count(pcp) >= pcp_high(pcp)))
		return pcp_free_tracked(z, pcp, pindex, free_high);
	return true;
}

/* ------------------------------------------------------------------------
 * percpu=rseq: the fronts (pcp.h)
 * ------------------------------------------------------------------------ */
/* A front's hits, from a tally taken off it, into the set's events. */
static void front_fold(struct za_pcp *pcp, unsigned int order, uint64_t tally)
{
	pcp_ev_add(&pcp->stat, EV_PCP_FREE + order, tally_pushes(tally));
	pcp_ev_add(&pcp->stat, EV_PCP_ALLOC + order, tally_pops(tally));
}

/* A chain taken off a front goes to the head of its list, in its order
 * (its top first: the most recently freed block stays the first out). */
static void chain_to_list(struct za_zone *z, struct za_pcp *pcp, unsigned int pindex,
			  struct za_page *chain)
{
	unsigned int order = pindex_to_order(z->mm, pindex);
	struct za_list *at = &pcp->lists[pindex];
	int blocks = 0;
	for (struct za_page *next; chain; chain = next, blocks++) {
		next = chain_next(chain);
		VM_BUG_ON_PAGE(z->mm, page_flags(chain) != PG_pcp || page_order(chain) != order, chain);
		set_page_flags(chain, pcp_list_flags(z, pcp, chain));
		list_add(&chain->lru, at);
		at = &chain->lru;
	}
	pcp_add_count(pcp, blocks << order);
}

/* Up to n blocks off the head of a list as a chain first..last, in the
 * list's order; returns how many. */
static int list_take_chain(struct za_list *list, int n, struct za_page **first,
			   struct za_page **last)
{
	int got = 0;
	*first = *last = NULL;
	for (; got < n && !list_empty(list); got++) {
		struct za_page *page = container_of(list->next, struct za_page, lru);
		list_del(&page->lru);
		set_page_flags(page, PG_pcp);   /* no PG_pcp_buddy off the lists */
		page->lru.next = NULL;
		if (*last)
			(*last)->lru.next = (struct za_list *)(void *)page;
		else
			*first = page;
		*last = page;
	}
	return got;
}

/* Cuts a chain after its first n >= 1 blocks (or fewer, *kept of them):
 * returns the rest; *last is the end of the part kept. */
static struct za_page *chain_cut(struct za_page *chain, int n, struct za_page **last, int *kept)
{
	*last = chain;
	*kept = chain ? 1 : 0;
	if (!chain)
		return NULL;
	for (; *kept < n && chain_next(*last); ++*kept)
		*last = chain_next(*last);
	struct za_page *rest = chain_next(*last);
	(*last)->lru.next = NULL;
	return rest;
}

/* A front holds up to this many blocks of its order. */
static int front_cap(const struct za_zone *z, unsigned int order)
{
	return (int)((z->front_full[order] & ~RSEQ_FOLD) - 1);
}

/* A front taken off (old) gets its top quarter -- the most recently freed
 * blocks -- pushed back; returns the rest, or the whole chain if the push
 * failed (the thread runs elsewhere now, or the front filled meanwhile). */
static struct za_page *front_keep_top(struct za_zone *z, const struct rseq_percpu *pc,
				      unsigned int order, struct rseq_stack old)
{
	struct za_page *last;
	int kept;
	struct za_page *rest = chain_cut(old.head, max_int(front_cap(z, order) / 4, 1), &last, &kept);
	if (kept && rseq_push_retry(z->mm, pc, &front_link, old.head, last, (uint64_t)kept,
				    z->front_full[order], 0, 0) != RSEQ_OK) {
		last->lru.next = (struct za_list *)(void *)rest;
		return old.head;
	}
	return rest;
}

/*
 * A chain of blocks of one order, ours (taken off a front, or never on
 * one), back to the buddy lists a chunk at a time.  With tally, the hits
 * it holds and one free (the block whose free called for this, in slot)
 * are counted under the first chunk's zone lock.
 */
static void chain_free(struct za_zone *z, struct za_page *chain, unsigned int order,
		       const uint64_t *tally, unsigned int slot)
{
	while (chain) {
		struct za_page *blocks[BUDDY_COALESCE_MAX];
		unsigned long merges = 0;
		int n = 0;
		for (; chain && n < BUDDY_COALESCE_MAX; chain = chain_next(chain))
			blocks[n++] = chain;
		int pages = n << order;
		n = buddy_coalesce(z->mm, blocks, n, &merges);
		prefetch_buddies(z->mm, blocks, n);
		uint64_t t0 = zone_lock_bulk(z, BULK_FREE, pages);
		for (int i = 0; i < n; i++)
			free_block(z, blocks[i]);
		if (tally) {
			ev_add(&z->stat, EV_PCP_FREE + order, tally_pushes(*tally));
			ev_add(&z->stat, EV_PCP_ALLOC + order, tally_pops(*tally));
			ev_add(&z->stat, EV_PCP_FREE + slot, 1);
			tally = NULL;
		}
		bulk_free_done(z, pages, merges, t0);
	}
}

/*
 * Under the set's lock, from the lock path of a hit path that found the
 * front of list pindex empty (an allocation) or full (a free), or unable
 * to count another hit: the front is taken off, its hits go to the events;
 * a free keeps the front's top quarter -- the most recently freed -- and
 * moves the rest to the head of the list; an allocation refills the front
 * to its capacity from the head of the list.  So a stream of either kind
 * comes here once per three quarters of a front, not once per block.  Each
 * step is one section on this CPU's front; if the thread runs elsewhere
 * now (or is bound, or the front filled up meanwhile), the blocks stay on
 * the list.  fair_zone: blocks moved to a front count as allocated.
 */
void pcp_front_balance(struct za_zone *z, struct za_pcp *pcp, unsigned int pindex, bool freeing)
{
	struct za_mm *mm = z->mm;
	unsigned int order = pindex_to_order(mm, pindex), cpu = (unsigned int)pcp_cpu(z, pcp);
	struct rseq_percpu pc = pcp_front_percpu(z, pindex);
	struct rseq_stack old;
	za_lock_assert_held(mm, &pcp->lock);
	if (rseq_take_retry(mm, &pc, cpu, &old) != RSEQ_OK)
		return;
	front_fold(pcp, order, old.tally);
	if (freeing) {
		chain_to_list(z, pcp, pindex, front_keep_top(z, &pc, order, old));
		return;
	}
	chain_to_list(z, pcp, pindex, old.head);
	struct za_page *first, *last;
	int got = list_take_chain(&pcp->lists[pindex], front_cap(z, order), &first, &last);
	if (!got)
		return;
	pcp_add_count(pcp, -(got << order));
	if (rseq_push_retry(mm, &pc, &front_link, first, last, (uint64_t)got,
			    z->front_full[order], 0, 0) != RSEQ_OK) {
		chain_to_list(z, pcp, pindex, first);
		return;
	}
	if (mm->fair_zone)
		pcp_charge_alloc_batch(z, pcp, got << order);
}

/*
 * percpu=rseq, the set's lock busy -- another thread of this CPU in a slow
 * path, perhaps preempted there: the hit paths' misses do not wait for it
 * and do not fall back to the buddy lists block by block either.  They go
 * between the front and the buddy lists a batch at a time, each batch one
 * zone-lock hold, as a refill or a bulk free would; the lists are not
 * touched, so the kernel's count, high and drains stay as they are.
 *
 * front_refill: an allocation whose front was empty takes a batch, hands
 * out its first block and pushes the rest onto the front of the CPU it
 * runs on now (or frees them again if that front filled up meanwhile, or
 * is stopped).  Stores the block or NULL (no memory) as pcp_alloc does.
 */
bool pcp_front_refill(struct za_zone *z, int cpu, unsigned int order, int mt, bool nofragment,
		      struct za_page **out)
{
	struct za_mm *mm = z->mm;
	unsigned int slot, pindex = pcp_list_index(mm, mt, order, &slot);
	struct za_list list;
	list_init(&list);
	int got = rmqueue_bulk(z, cpu, order, refill_blocks(&z->pcp[cpu], order), &list, mt,
			       nofragment, (int)slot);
	*out = NULL;
	if (!got)
		return true;
	if (mm->fair_zone)
		zone_charge_alloc_batch(z, cpu, got << order);
	struct za_page *page = container_of(list.next, struct za_page, lru);
	list_del(&page->lru);
	set_page_flags(page, PG_alloc);
	*out = page;
	struct za_page *first, *last;
	struct rseq_percpu pc = pcp_front_percpu(z, pindex);
	if (list_take_chain(&list, got - 1, &first, &last) &&
	    rseq_push_retry(mm, &pc, &front_link, first, last, (uint64_t)(got - 1),
			    z->front_full[order], 0, 0) != RSEQ_OK)
		chain_free(z, first, order, NULL, 0);
	return true;
}

/* The CPU's lists, under their lock, or false when another thread holds
 * it (a front's block then spills to the lists of the front, if it has
 * one). */
bool pcp_free_list(struct za_zone *z, struct za_page *page, unsigned int order, int mt,
		   unsigned int pindex, bool front)
{
	int cpu = this_cpu(z->mm);
	struct za_pcp *pcp = &z->pcp[cpu];
	if (unlikely(!za_trylock(&pcp->lock)))
		return front && pcp_front_spill(z, cpu, page, order, pindex);
	pcp_free_locked(z, pcp, page, order, mt, front, false);
	return true;
}

/*
 * front_spill: a free whose front was full takes the front off (on the CPU
 * it runs on, and only if it is not stopped: false otherwise), pushes its
 * top quarter back and frees the rest with the block to the buddy lists;
 * the front's hits and the block's free are counted with the first chunk,
 * under the zone lock.
 */
bool pcp_front_spill(struct za_zone *z, int cpu, struct za_page *page, unsigned int order,
		     unsigned int pindex)
{
	struct za_mm *mm = z->mm;
	struct rseq_percpu pc = pcp_front_percpu(z, pindex);
	struct rseq_stack old;
	if (rseq_take_retry(mm, &pc, (unsigned int)cpu, &old) != RSEQ_OK)
		return false;
	set_page_flags(page, PG_pcp);
	page->lru.next = (struct za_list *)(void *)front_keep_top(z, &pc, order, old);
	chain_free(z, page, order, &old.tally, pcp_order_slot(order));
	return true;
}

/* Another thread's (or CPU's) access to a set's fronts: under the set's
 * lock, stop them, fence, and move them to the lists; until
 * pcp_fronts_start, every section on them fails. */
void pcp_fronts_stop(struct za_zone *z, struct za_pcp *pcp)
{
	za_lock_assert_held(z->mm, &pcp->lock);
	if (!z->mm->pcp_front)
		return;
	rseq_index_stop(&pcp->rseq_stop);
	for (unsigned int pindex = 0; pindex < NR_LOWORDER_PCP_LISTS; pindex++) {
		struct rseq_stack *front = &pcp->front[pindex];
		front_fold(pcp, pindex_to_order(z->mm, pindex), front->tally);
		chain_to_list(z, pcp, pindex, front->head);
		*front = (struct rseq_stack){ NULL, 0 };
	}
}

void pcp_fronts_start(struct za_pcp *pcp)
{
	rseq_index_start(&pcp->rseq_stop);
}

/* The fronts' hits not yet folded: racy reads, exact at quiescence. */
uint64_t pcp_front_events(const struct za_zone *z, enum za_event item)
{
	bool alloc = item >= EV_PCP_ALLOC && item < EV_PCP_ALLOC + PCP_THP_SLOT;
	bool free = item >= EV_PCP_FREE && item < EV_PCP_FREE + PCP_THP_SLOT;
	if (!z->mm->pcp_front || (!alloc && !free))
		return 0;
	unsigned int order = item - (alloc ? EV_PCP_ALLOC : EV_PCP_FREE);
	uint64_t n = 0;
	for (int cpu = 0; cpu < z->mm->nr_cpus; cpu++)
		for (unsigned int t = 0; t < MT_TYPES; t++) {
			uint64_t tally = rseq_tally_load(&z->pcp[cpu].front[order * MT_TYPES + t]);
			n += alloc ? tally_pops(tally) : tally_pushes(tally);
		}
	return n;
}

/* Pages on the zone's fronts: racy, exact at quiescence. */
long pcp_front_pages(const struct za_zone *z)
{
	long n = 0;
	for (int cpu = 0; z->mm->pcp_front && cpu < z->mm->nr_cpus; cpu++)
		for (unsigned int pindex = 0; pindex < NR_LOWORDER_PCP_LISTS; pindex++) {
			uint64_t tally = rseq_tally_load(&z->pcp[cpu].front[pindex]);
			n += (long)(tally & RSEQ_LEN_MASK) << pindex_to_order(z->mm, pindex);
		}
	return n;
}

/* ------------------------------------------------------------------------
 * Drains and decay
 * ------------------------------------------------------------------------ */
/*
 * All of a CPU's lists back (the kernel's drain_pages_zone).  With
 * pcp_drain_chunks (6.10) batch << pcp_batch_scale_max pages per per-CPU
 * lock hold, the lock retaken between, as much as the count showed at
 * each hold; before, all of it in one.
 */
void pcp_drain_cpu(struct za_zone *z, int cpu)
{
	const struct za_mm *mm = z->mm;
	struct za_pcp *pcp = &z->pcp[cpu];
	for (bool first = true;; first = false) {
		za_trylock_wait(&pcp->lock);
		pcp_fronts_stop(z, pcp);
		int count = pcp_count(pcp);
		int n = mm->pcp_drain_chunks ? min_int(count, pcp->batch << mm->pcp_batch_scale_max)
					     : count;
		if (n) {        /* one drain however many holds */
			pcp_ev_add(&pcp->stat, EV_PCP_DRAIN, first);
			free_pcppages_bulk(z, pcp, n, 0);
		}
		pcp_fronts_start(pcp);
		za_tryunlock(&pcp->lock);
		if (count - n <= 0)
			return;
	}
}

/*
 * The vmstat tick's work on one CPU's set (pcp_high_auto; the kernel's
 * decay_pcp_high): high, if above high_min, drops by an eighth
 * (pcp_decay_shift) -- less while count is more than batch <<
 * pcp_batch_scale_max above the result,
 * never below high_min -- and whatever count has above high goes back in
 * one per-CPU lock hold, or (pcp_drain_chunks=2, 6.19) a batch per hold.
 */
void pcp_decay(struct za_zone *z, int cpu)
{
	const struct za_mm *mm = z->mm;
	struct za_pcp *pcp = &z->pcp[cpu];
	za_trylock_wait(&pcp->lock);
	int batch = pcp->batch, high = pcp_high(pcp);
	if (high > pcp->high_min) {
		high = max_int(max_int(pcp_count(pcp) - (batch << mm->pcp_batch_scale_max),
				       high - (high >> mm->pcp_decay_shift)), pcp->high_min);
		/* A count more than batch << S above high_max (a free that gave
		 * up its drain, pcp_drain_chunks=2, left it there) puts the
		 * kernel's high above high_max until its next refill; here high
		 * stays at high_max, and the tick drains as much as the
		 * kernel's. */
		pcp_set_high(mm, pcp, min_int(high, pcp->high_max));
	}
	int to_drain = pcp_count(pcp) - high;
	int chunk = drain_chunk(mm, pcp, to_drain);
	za_tryunlock(&pcp->lock);
	while (to_drain > 0) {
		int n = min_int(to_drain, chunk);
		za_trylock_wait(&pcp->lock);
		free_pcppages_bulk(z, pcp, n, 0);
		za_tryunlock(&pcp->lock);
		to_drain -= n;
	}
}

int za_pcp_set_high(za_mm_t *mm, int nid, int zone, int cpu, int high)
{
	if (nid < 0 || nid >= mm->nr_nodes || zone < 0 || zone >= mm->nr_zones ||
	    cpu < 0 || cpu >= mm->nr_cpus) {
		za_set_last_error("za_pcp_set_high: no node %d, zone %d or CPU %d", nid, zone, cpu);
		errno = EINVAL;
		return -1;
	}
	struct za_pcp *pcp = &mm->zone_by_id[nid * mm->nr_zones + zone]->pcp[cpu];
	za_trylock_wait(&pcp->lock);
	if (mm->pcp_high_auto)
		pcp_set_high(mm, pcp, min_int(max_int(high, pcp->high_min), pcp->high_max));
	high = pcp_high(pcp);
	za_tryunlock(&pcp->lock);
	return high;
}

void za_drain_pages(za_mm_t *mm, int cpu)
{
	if (cpu >= mm->nr_cpus) {
		errno = EINVAL;
		return;
	}
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++)
		for (int c = cpu < 0 ? 0 : cpu; c < (cpu < 0 ? mm->nr_cpus : cpu + 1); c++)
			pcp_drain_cpu(mm->zone_by_id[id], c);
}

void za_drain_all_pages(za_mm_t *mm)
{
	za_drain_pages(mm, -1);
}
