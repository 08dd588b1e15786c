/*
 * Per-CPU page lists (seeds 000 and 001).
 *
 * Each (zone, CPU) has a set of lists of free blocks, protected by a
 * trylock that only threads running on that CPU (and drains) take, so a hit
 * writes only the CPU's own cache lines: no zone lock, no atomic on a
 * shared line.  Misses refill `batch` pages from the buddy lists in one
 * zone-lock hold; frees that push `count` to `high` return `batch` pages in
 * one bulk free.
 *
 * Invariants: count == sum over the lists of 2^order; every block on lists[i]
 * has order pindex_to_order(i), PG_pcp on its head, and lies in this zone.
 * Pages on these lists are neither free (for the watermarks) nor allocated.
 *
 * The hit paths are inline in pcp.h; this file has the batch work.
 */
#include "pcp.h"

/*
 * The kernel's zone_batchsize(): about a quarter of 0.1% of the zone, at
 * most 256 KiB worth, rounded to 2^n - 1 so that batches of different
 * CPUs do not alias in the cache.
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

/*
 * high: 6 * batch before seed 000.  With high-order lists, seed 000 makes it
 * room for one batch per order-0 migratetype plus a batch of the largest
 * cached order, so a single refill rarely forces a drain on the next free.
 */
static int zone_highsize(int batch, bool high_order)
{
	return high_order ? batch * MT_TYPES + (batch << PCP_MAX_ORDER) : 6 * batch;
}

void pcp_init(struct za_zone *z, int nr_cpus)
{
	int batch = zone_batchsize(z->nr_pages);
	int high = zone_highsize(batch, z->mm->pcp_high_order);
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct za_pcp *pcp = &z->pcp[cpu];
		pcp->batch = batch;
		pcp->high = high;
		for (int i = 0; i < NR_PCP_LISTS; i++)
			list_init(&pcp->lists[i]);
	}
}

/*
 * Takes up to `blocks` blocks of one order from the buddy lists in a single
 * zone-lock hold and appends them to list (so the list stays in ascending
 * physical order and the head is handed out first).  Returns how many.
 */
static int rmqueue_bulk(struct za_zone *z, unsigned int order, int blocks,
			struct za_list *list, int mt)
{
	int got = 0;
	uint64_t t0 = zone_lock(z);
	for (; got < blocks; got++) {
		struct za_page *page = buddy_rmqueue(z, order, mt);
		if (!page)
			break;
		page->order = (uint8_t)order;
		page->zone = (uint8_t)z->id;
		set_page_mt(page, mt);
		set_page_flags(page, PG_pcp);
		list_add_tail(&page->lru, list);
	}
	ev_add(&z->stat, EV_PCP_REFILL, 1);
	ev_add(&z->stat, EV_PCP_REFILL_PAGES, (uint64_t)got << order);
	zone_unlock(z, t0, EV_PCP_REFILL_HOLD);
	return got;
}

/* Blocks per refill: `batch` pages' worth, at least two blocks. */
static int refill_blocks(const struct za_pcp *pcp, unsigned int order)
{
	int blocks = pcp->batch >> order;
	return blocks < 2 ? 2 : blocks;
}

/* A miss: refill the list from the buddy lists.  Under the per-CPU lock. */
void pcp_refill(struct za_zone *z, struct za_pcp *pcp, unsigned int order, int mt,
		struct za_list *list)
{
	int got = rmqueue_bulk(z, order, refill_blocks(pcp, order), list, mt);
	pcp_add_count(pcp, got << order);
	if (got)
		ev_add(&pcp->stat, EV_PCP_ALLOC_MISS + order, 1);
}

/*
 * Picks the next block to bulk-free, round-robin over the lists, from the
 * cold end.  A list is given one more block per empty list skipped on the
 * way to it, so fuller lists drain faster; the last non-empty list drains
 * completely.
 */
struct bulk_cursor {
	unsigned int pindex, nlists;
	int batch_free;
};

static struct za_page *pick_page(struct za_pcp *pcp, struct bulk_cursor *c, int *budget)
{
	struct za_list *list = &pcp->lists[c->pindex];
	if (c->batch_free <= 0 || list_empty(list)) {
		do {
			c->batch_free++;
			c->pindex = (c->pindex + 1) % c->nlists;
			list = &pcp->lists[c->pindex];
		} while (list_empty(list));
		if (c->batch_free == (int)c->nlists)
			c->batch_free = *budget;
	}
	struct za_page *page = container_of(list->prev, struct za_page, lru);
	list_del(&page->lru);
	c->batch_free--;
	*budget -= 1 << page->order;
	pcp_add_count(pcp, -(1 << page->order));
	return page;
}

static void merge_page(struct za_zone *z, struct za_page *page)
{
	buddy_free(z, page, page->order, pageblock_mt(z->mm, page_to_pfn(z->mm, page)));
}

/*
 * Returns `pages` pages (or all there are) to the buddy lists.
 *
 * bulkfree_outside_lock=1 (seed 001): the pages are picked onto a private
 * list first -- the lists are ours while we hold the per-CPU lock -- with a
 * prefetch of each buddy's descriptor, so that the zone lock is held only
 * for the merges, which then mostly hit the cache.  =0: pick and merge in
 * one pass under the zone lock.
 */
static void free_pcppages_bulk(struct za_zone *z, struct za_pcp *pcp, int pages)
{
	struct za_mm *mm = z->mm;
	unsigned int nlists = mm->pcp_high_order ? NR_PCP_LISTS : MT_TYPES;
	struct bulk_cursor cur = { nlists - 1, nlists, 0 };
	int budget = pages < pcp_count(pcp) ? pages : pcp_count(pcp);
	int freed = budget;
	uint64_t t0;

	if (budget <= 0)
		return;
	if (mm->bulkfree_outside_lock) {
		struct za_list picked;
		list_init(&picked);
		while (budget > 0) {
			struct za_page *page = pick_page(pcp, &cur, &budget);
			unsigned long pfn = page_to_pfn(mm, page);
			__builtin_prefetch(pfn_to_page(mm, pfn ^ (1UL << page->order)));
			list_add_tail(&page->lru, &picked);
		}
		t0 = zone_lock(z);
		while (!list_empty(&picked)) {
			struct za_page *page = container_of(picked.next, struct za_page, lru);
			list_del(&page->lru);
			merge_page(z, page);
		}
	} else {
		t0 = zone_lock(z);
		while (budget > 0)
			merge_page(z, pick_page(pcp, &cur, &budget));
	}
	ev_add(&z->stat, EV_PCP_BULKFREE, 1);
	ev_add(&z->stat, EV_PCP_BULKFREE_PAGES, (uint64_t)freed);
	zone_unlock(z, t0, EV_PCP_BULKFREE_HOLD);
}

/* count reached high: return a batch.  Under the per-CPU lock. */
void pcp_free_batch(struct za_zone *z, struct za_pcp *pcp)
{
	free_pcppages_bulk(z, pcp, pcp->batch);
}

void pcp_drain_cpu(struct za_zone *z, int cpu)
{
	struct za_pcp *pcp = &z->pcp[cpu];
	za_trylock_wait(&pcp->lock);
	if (pcp_count(pcp)) {
		ev_add(&pcp->stat, EV_PCP_DRAIN, 1);
		free_pcppages_bulk(z, pcp, pcp_count(pcp));
	}
	za_tryunlock(&pcp->lock);
}
