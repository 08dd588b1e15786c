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
 * ZA_DEBUG_VM checks each block as it leaves a list, and the count against
 * the lists after every refill and bulk free (pcp_check_count).
 *
 * The hit paths are inline in pcp.h; this file has the batch work.
 */
#include "pcp.h"

#include <errno.h>
#include <stdint.h>

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
 * percpu_pagelist_high_fraction=F (the kernel's sysctl, F >= 8) instead
 * gives the CPUs of the zone's node 1/F of the zone between them, each at
 * least 4 batches.
 */
static int zone_highsize(const struct za_zone *z, int batch)
{
	const struct za_mm *mm = z->mm;
	long fraction = (long)mm->cfg.percpu_pagelist_high_fraction;
	if (fraction) {
		long cpus = 0;
		for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
			cpus += mm->cpu_node[cpu] == z->node;
		long high = (long)z->nr_pages / fraction / (cpus ? cpus : mm->nr_cpus);
		return high > 4L * batch ? (int)(high < INT32_MAX / 2 ? high : INT32_MAX / 2) : 4 * batch;
	}
	return mm->pcp_high_order ? batch * MT_TYPES + (batch << PCP_MAX_ORDER) : 6 * batch;
}

void pcp_init(struct za_zone *z, int nr_cpus)
{
	int batch = zone_batchsize(z->nr_pages);
	int high = zone_highsize(z, batch);
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct za_pcp *pcp = &z->pcp[cpu];
		pcp->batch = batch;
		pcp->high = high;
		for (int i = 0; i < NR_PCP_LISTS; i++)
			list_init(&pcp->lists[i]);
	}
}

/*
 * Takes `blocks` blocks of one order from the buddy lists in a single
 * zone-lock hold, as whole free blocks (buddy_rmqueue_bulk), and splits
 * them onto the list after releasing the lock: the blocks are ours by then.
 * Cutting a block into n takes n - 1 splits; they are counted in the CPU's
 * set (we hold its lock, not the zone's) and buddy_split adds them on read.
 * The list stays in ascending physical order and its head is handed out
 * first.  Returns how many blocks it got.
 */
static int rmqueue_bulk(struct za_zone *z, struct za_pcp *pcp, unsigned int order, int blocks,
			struct za_list *list, int mt)
{
	struct za_list taken;
	unsigned long splits = 0;
	list_init(&taken);
	uint64_t t0 = zone_lock(z);
	unsigned long pages = buddy_rmqueue_bulk(z, order, (unsigned long)blocks << order, mt, &taken);
	ev_add(&z->stat, EV_PCP_REFILL, 1);
	ev_add(&z->stat, EV_PCP_REFILL_PAGES, pages);
	zone_unlock(z, t0, EV_PCP_REFILL_HOLD);

	while (!list_empty(&taken)) {
		struct za_page *block = container_of(taken.next, struct za_page, lru);
		VM_BUG_ON_PAGE(z->mm, page_order(block) < order || (page_flags(block) & ~PG_mem_dirty),
			       block);
		unsigned long n = 1UL << (page_order(block) - order);
		list_del(&block->lru);
		for (unsigned long i = 0; i < n; i++) {
			struct za_page *page = block + (i << order);
			set_page_order(page, order);
			page->zone = (uint8_t)z->id;
			set_page_mt(page, mt);
			set_page_flags(page, PG_pcp);
			list_add_tail(&page->lru, list);
		}
		splits += n - 1;
	}
	pcp_ev_add(&pcp->stat, EV_PCP_SPLIT, splits);
	return (int)(pages >> order);
}

/* Blocks per refill: `batch` pages' worth, at least two blocks. */
static int refill_blocks(const struct za_pcp *pcp, unsigned int order)
{
	int blocks = pcp->batch >> order;
	return blocks < 2 ? 2 : blocks;
}

#ifdef ZA_DEBUG_VM
/* count is the pages on the lists (a walk of them all: debug builds only). */
static void pcp_check_count(struct za_zone *z, struct za_pcp *pcp)
{
	int pages = 0;
	for (unsigned int i = 0; i < NR_PCP_LISTS; i++)
		for (struct za_list *l = pcp->lists[i].next; l != &pcp->lists[i]; l = l->next)
			pages += 1 << pindex_to_order(i);
	VM_BUG_ON(z->mm, pages != pcp_count(pcp));
}
#else
static void pcp_check_count(struct za_zone *z, struct za_pcp *pcp)
{
	(void)z;
	(void)pcp;
}
#endif

/* A miss: refill the list from the buddy lists.  Under the per-CPU lock. */
void pcp_refill(struct za_zone *z, struct za_pcp *pcp, unsigned int order, int mt,
		struct za_list *list)
{
	za_lock_assert_held(z->mm, &pcp->lock);
	int got = rmqueue_bulk(z, pcp, order, refill_blocks(pcp, order), list, mt);
	pcp_add_count(pcp, got << order);
	pcp_check_count(z, pcp);
	if (got)
		pcp_ev_add(&pcp->stat, EV_PCP_ALLOC_MISS + order, 1);
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

static struct za_page *pick_page(struct za_zone *z, struct za_pcp *pcp, struct bulk_cursor *c,
				 int *budget)
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
	VM_BUG_ON_PAGE(z->mm, page_flags(page) != PG_pcp ||
			      page_order(page) != pindex_to_order(c->pindex), page);
	list_del(&page->lru);
	c->batch_free--;
	*budget -= 1 << page_order(page);
	pcp_add_count(pcp, -(1 << page_order(page)));
	return page;
}

/*
 * Returns `pages` pages (or all there are) to the buddy lists, in chunks of
 * at most BUDDY_COALESCE_MAX blocks, one zone-lock hold per chunk.  Blocks
 * of a chunk that are buddies of each other are merged first: one merge
 * into the free lists instead of one per page, which is most of the work
 * when a run of pages is freed together.
 *
 * bulkfree_outside_lock=1 (seed 001): picking and coalescing happen before
 * the zone lock is taken -- the lists are ours while we hold the per-CPU
 * lock -- with a prefetch of each buddy's descriptor, so that the lock is
 * held only for the merges into the free lists, which then mostly hit the
 * cache.  =0: all of it under the zone lock.
 */
static void free_pcppages_bulk(struct za_zone *z, struct za_pcp *pcp, int pages)
{
	struct za_mm *mm = z->mm;
	unsigned int nlists = mm->pcp_high_order ? NR_PCP_LISTS : MT_TYPES;
	struct bulk_cursor cur = { nlists - 1, nlists, 0 };
	int budget = pages < pcp_count(pcp) ? pages : pcp_count(pcp);
	bool outside = mm->bulkfree_outside_lock;

	za_lock_assert_held(mm, &pcp->lock);
	while (budget > 0) {
		struct za_page *blocks[BUDDY_COALESCE_MAX];
		unsigned long merges = 0;
		uint64_t t0 = outside ? 0 : zone_lock(z);
		int n = 0, before = budget;
		while (budget > 0 && n < BUDDY_COALESCE_MAX)
			blocks[n++] = pick_page(z, pcp, &cur, &budget);
		n = buddy_coalesce(mm, blocks, n, &merges);
		if (outside) {
			for (int i = 0; i < n; i++) {
				unsigned long pfn = page_to_pfn(mm, blocks[i]);
				__builtin_prefetch(pfn_to_page(mm, pfn ^ (1UL << page_order(blocks[i]))));
			}
			t0 = zone_lock(z);
		}
		for (int i = 0; i < n; i++)
			buddy_free(z, blocks[i], page_order(blocks[i]),
				   pageblock_mt(mm, page_to_pfn(mm, blocks[i])));
		ev_add(&z->stat, EV_BUDDY_MERGE, merges);
		ev_add(&z->stat, EV_PCP_BULKFREE, 1);
		ev_add(&z->stat, EV_PCP_BULKFREE_PAGES, (uint64_t)(before - budget));
		zone_unlock(z, t0, EV_PCP_BULKFREE_HOLD);
	}
	pcp_check_count(z, pcp);
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
		pcp_ev_add(&pcp->stat, EV_PCP_DRAIN, 1);
		free_pcppages_bulk(z, pcp, pcp_count(pcp));
	}
	za_tryunlock(&pcp->lock);
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
