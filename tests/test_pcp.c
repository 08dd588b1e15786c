/*
 * Per-CPU page lists: refill and drain arithmetic, exact accounting at every
 * quiescent point, for both values of pcp_high_order and
 * bulkfree_outside_lock.  cpus=1 folds every CPU onto one set of lists so
 * that the numbers do not depend on where the thread runs; fair_zone=0
 * keeps every allocation in the Normal zone.
 */
#include "test.h"

static char config[256];

static za_mm_t *make(int high_order, int outside)
{
	snprintf(config, sizeof(config),
		 "memory=1G,zones=DMA32:256M+Normal,cpus=1,pcp_high_order=%d,bulkfree_outside_lock=%d,"
		 "fair_zone=0",
		 high_order, outside);
	return test_mm(config);
}

/* batch = 63 for the 768M Normal zone; high = 11 * 63 (seed 000) or 6 * 63. */
static void refill_and_bulkfree(int high_order, int outside)
{
	za_mm_t *mm = make(high_order, outside);
	const int batch = 63, high = high_order ? 11 * batch : 6 * batch;

	void *p = za_alloc_pages(mm, 0, 0);
	CHECK(p);
	CHECK_EQ(za_stat(mm, "pcp_alloc_miss_order0"), 1);
	CHECK_EQ(za_stat(mm, "pcp_refill"), 1);
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), batch);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), batch - 1);
	CHECK_EQ(za_stat(mm, "zone_lock_acquire"), 1);
	check_accounting(mm, 1);

	/* Hits take no zone lock. */
	for (int i = 0; i < 1000; i++) {
		void *q = za_alloc_pages(mm, 0, 0);
		CHECK(q);
		CHECK_EQ(za_free_pages(mm, q, 0), 0);
	}
	CHECK_EQ(za_stat(mm, "pcp_alloc_hit_order0"), 1000);
	CHECK_EQ(za_stat(mm, "zone_lock_acquire"), 1);

	/* Hold high pages, then free them: every time count reaches high, one
	 * bulk free of batch pages. */
	void **held = calloc((size_t)high + 1, sizeof(void *));
	held[0] = p;
	for (int i = 1; i <= high; i++)
		CHECK((held[i] = za_alloc_pages(mm, 0, 0)));
	check_accounting(mm, high + 1);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree"), 0);
	/* The lists stay below high; percpu=rseq's fronts hold at most a
	 * front's capacity (about a batch) above them. */
	for (int i = 0; i <= high; i++) {
		CHECK_EQ(za_free_pages(mm, held[i], 0), 0);
		check_accounting(mm, high - i);
		CHECK(za_stat(mm, "nr_pcp_pages") - za_stat(mm, "nr_pcp_front_pages") < high);
		CHECK(za_stat(mm, "nr_pcp_front_pages") <= batch);
	}
	long long bulk = za_stat(mm, "pcp_bulkfree");
	CHECK(bulk >= 1);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages"), bulk * batch);
	CHECK(za_stat(mm, "pcp_bulkfree_hold_ns") > 0);
	CHECK(za_stat(mm, "pcp_bulkfree_hold_max_ns") <= za_stat(mm, "pcp_bulkfree_hold_ns"));
	CHECK(za_stat(mm, "zone_lock_hold_ns") >= za_stat(mm, "pcp_bulkfree_hold_ns") +
						       za_stat(mm, "pcp_refill_hold_ns"));

	/* A drain empties the lists and is counted. */
	long long pcp = za_stat(mm, "nr_pcp_pages");
	CHECK(pcp > 0);
	za_drain_pages(mm, 0);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), 0);
	CHECK_EQ(za_stat(mm, "pcp_drain"), 1);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages"), bulk * batch + pcp);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(held);
}

/* Orders 1..3 are cached only with pcp_high_order=1 (seed 000). */
static void high_order_lists(int high_order)
{
	za_mm_t *mm = make(high_order, 1);
	for (unsigned int order = 1; order <= 3; order++) {
		long long locks = za_stat(mm, "zone_lock_acquire");
		for (int i = 0; i < 100; i++) {
			void *p = za_alloc_pages(mm, 0, order);
			CHECK(p);
			CHECK_EQ(za_free_pages(mm, p, order), 0);
		}
		long long taken = za_stat(mm, "zone_lock_acquire") - locks;
		char name[64];
		snprintf(name, sizeof(name), "pcp_alloc_hit_order%u", order);
		if (high_order) {
			CHECK_EQ(taken, 1);                 /* the one refill */
			CHECK_EQ(za_stat(mm, name), 99);
		} else {
			CHECK_EQ(taken, 200);               /* one per alloc and per free */
			CHECK_EQ(za_stat(mm, name), 0);
		}
	}
	/* Refills of order k bring batch >> k blocks (at least two). */
	if (high_order)
		CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 31 * 2 + 15 * 4 + 7 * 8);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Random orders 0..5, random frees: the books balance after every step. */
static void random_accounting(int high_order, int outside)
{
	za_mm_t *mm = make(high_order, outside);
	enum { SLOTS = 4096 };
	void *addr[SLOTS] = { 0 };
	unsigned int ord[SLOTS] = { 0 };
	unsigned long long rng = 7 + (unsigned long long)high_order * 2 + (unsigned long long)outside;
	long held = 0;
	for (int step = 0; step < 40000; step++) {
		int slot = (int)(test_rand(&rng) % SLOTS);
		if (addr[slot]) {
			CHECK_EQ(za_free_pages(mm, addr[slot], ord[slot]), 0);
			held -= 1L << ord[slot];
			addr[slot] = NULL;
		} else {
			ord[slot] = (unsigned int)(test_rand(&rng) % 6);
			za_gfp_t gfp = (za_gfp_t)(test_rand(&rng) % 3 == 0 ? ZA_GFP_MOVABLE : 0);
			CHECK((addr[slot] = za_alloc_pages(mm, gfp, ord[slot])));
			memset(addr[slot], slot & 0xff, 64);
			held += 1L << ord[slot];
		}
		if (step % 1000 == 0) {
			check_accounting(mm, held);
			CHECK(za_verify(mm) == 0);
		}
	}
	check_accounting(mm, held);
	for (int i = 0; i < SLOTS; i++)
		if (addr[i]) {
			CHECK(((unsigned char *)addr[i])[63] == (i & 0xff));
			CHECK_EQ(za_free_pages(mm, addr[i], ord[i]), 0);
		}
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * pcp_own_pageblocks (the April 2026 RFC): a refill claims a whole free
 * pageblock of 512 pages for its CPU, in one zone-lock hold; a page of it
 * freed by another CPU goes back onto the owner's lists (pcp_remote_free,
 * no zone lock), where the owner takes it again.  Once drained and merged
 * back whole, the block is no CPU's: a free of a page another CPU then
 * takes from it goes to that CPU's lists.
 */
static void test_own_pageblocks(void)
{
	/* high 16384 pages (a pageblock fits), batch 63 */
	za_mm_t *mm = test_mm("memory=1G,zones=Normal,cpus=2,fair_zone=0,kswapd=0,"
			      "vmstat_interval_ms=0,percpu_pagelist_high_fraction=8,"
			      "pcp_own_pageblocks=1");
	/* zone-lock acquisitions of the allocator only (za_verify takes them) */
	long long locks = za_stat(mm, "zone_lock_acquire");
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0);
	CHECK(p);
	CHECK_EQ(za_stat(mm, "pcp_block_claim"), 1);
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 512);
	CHECK_EQ(za_bind_cpu(mm, 1), 0);
	CHECK_EQ(za_free_pages(mm, p, 0), 0);          /* CPU 0's page, freed by CPU 1 */
	CHECK_EQ(za_stat(mm, "pcp_remote_free"), 1);
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	void *block[512];                               /* the block serves CPU 0 whole */
	for (int i = 0; i < 512; i++)
		CHECK((block[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	check_accounting(mm, 512);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), 0);
	CHECK_EQ(za_bind_cpu(mm, 1), 0);
	for (int i = 0; i < 511; i++)
		CHECK_EQ(za_free_pages(mm, block[i], 0), 0);
	CHECK_EQ(za_bind_cpu(mm, 0), 0);                /* and again, freed on CPU 1 */
	for (int i = 0; i < 511; i++)
		CHECK((block[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_bind_cpu(mm, 1), 0);
	for (int i = 0; i < 512; i++)
		CHECK_EQ(za_free_pages(mm, block[i], 0), 0);
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	CHECK_EQ(za_stat(mm, "zone_lock_acquire"), locks + 1);  /* the one claim */
	CHECK_EQ(za_stat(mm, "pcp_remote_free"), 1 + 511 + 512);
	CHECK_EQ(za_stat(mm, "pcp_block_claim"), 1);
	CHECK_EQ(za_stat(mm, "pcp_refill"), 1);
	check_accounting(mm, 0);
	/* Drained, the block merges back whole and is no one's: CPU 1 takes
	 * a block of its own, and its page freed by CPU 0 goes back to it. */
	za_drain_all_pages(mm);
	CHECK_EQ(za_bind_cpu(mm, 1), 0);
	CHECK((p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "pcp_block_claim"), 2);
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	CHECK_EQ(za_free_pages(mm, p, 0), 0);
	CHECK_EQ(za_stat(mm, "pcp_remote_free"), 1 + 511 + 512 + 1);
	CHECK_EQ(za_bind_cpu(mm, -1), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * pcp_own_pageblocks, the RFC's merge pass and refill phase 0: the pages
 * of an owned block freed back to the owner's lists (its own frees and
 * remote ones alike) merge there when drained, and the zone lock frees one
 * block, not its pages; a drained fragment of a block the CPU still owns
 * comes back whole with its next refill instead of a new block claimed.
 */
static void test_own_pageblocks_merge(void)
{
	za_mm_t *mm = test_mm("memory=1G,zones=Normal,cpus=2,fair_zone=0,kswapd=0,"
			      "vmstat_interval_ms=0,percpu_pagelist_high_fraction=8,"
			      "pcp_own_pageblocks=1");
	void *block[512];
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	for (int i = 0; i < 512; i++)
		CHECK((block[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	for (int i = 1; i < 512; i++)                   /* one block, in order */
		CHECK((char *)block[i] == (char *)block[0] + (size_t)i * ZA_PAGE_SIZE);
	CHECK_EQ(za_stat(mm, "pcp_block_claim"), 1);
	/* The lower half back, half of it by CPU 1, drained: 255 merges on
	 * the lists, one order-8 block to the buddy lists. */
	for (int i = 0; i < 256; i++) {
		CHECK_EQ(za_bind_cpu(mm, i & 1), 0);
		CHECK_EQ(za_free_pages(mm, block[i], 0), 0);
	}
	CHECK_EQ(za_stat(mm, "pcp_remote_free"), 128);
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	long long bulkfrees = za_stat(mm, "pcp_bulkfree");
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "pcp_merge"), 255);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree"), bulkfrees + 1);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages"), 256);
	check_accounting(mm, 256);
	/* The next refill takes that fragment back (phase 0): one zone-lock
	 * hold, no new block claimed, the block's pages handed out again. */
	long long locks = za_stat(mm, "zone_lock_acquire");
	void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0);
	CHECK((char *)p >= (char *)block[0] && (char *)p < (char *)block[0] + 256 * ZA_PAGE_SIZE);
	CHECK_EQ(za_stat(mm, "pcp_block_recover"), 1);
	CHECK_EQ(za_stat(mm, "pcp_block_claim"), 1);
	CHECK_EQ(za_stat(mm, "zone_lock_acquire"), locks + 1);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), 255);
	CHECK_EQ(za_free_pages(mm, p, 0), 0);
	/* All of it back: the block merges on the lists whole (511 more
	 * merges) and, drained, is no one's (za_verify). */
	for (int i = 256; i < 512; i++)
		CHECK_EQ(za_free_pages(mm, block[i], 0), 0);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "pcp_merge"), 255 + 511);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages"), 256 + 512);
	CHECK_EQ(za_bind_cpu(mm, -1), 0);
	check_accounting(mm, 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * za_free_pages_bulk: a batch goes onto the lists as the same frees one by
 * one would (counted alike), and with pcp_own_pageblocks onto the lists of
 * the CPU owning each block's pageblock, without the zone lock.
 */
static void test_free_pages_bulk(void)
{
	za_mm_t *mm = test_mm("memory=1G,zones=Normal,cpus=2,fair_zone=0,kswapd=0,"
			      "vmstat_interval_ms=0,percpu_pagelist_high_fraction=8,"
			      "pcp_own_pageblocks=1");
	void *pages[100];
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	for (int i = 0; i < 100; i++)
		CHECK((pages[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "pcp_block_claim"), 1);
	long long locks = za_stat(mm, "zone_lock_acquire");
	long long frees = za_stat(mm, "pcp_free_order0");
	CHECK_EQ(za_bind_cpu(mm, 1), 0);
	CHECK_EQ(za_free_pages_bulk(mm, pages, 100, 0), 0);
	CHECK_EQ(za_stat(mm, "pcp_remote_free"), 100);
	CHECK_EQ(za_stat(mm, "pcp_free_order0"), frees + 100);
	CHECK_EQ(za_stat(mm, "pgfree"), 100);
	CHECK_EQ(za_stat(mm, "zone_lock_acquire"), locks);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), 512);     /* all on CPU 0's lists */
	/* And CPU 0 hands them out again without the zone lock. */
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	for (int i = 0; i < 100; i++)
		CHECK((pages[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "zone_lock_acquire"), locks);
	CHECK_EQ(za_free_pages_bulk(mm, pages, 100, 0), 0);
	CHECK_EQ(za_stat(mm, "pcp_remote_free"), 100);
	CHECK_EQ(za_bind_cpu(mm, -1), 0);
	check_accounting(mm, 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Each with the defaults, pcp_high_order=0 ("_order0") and
 * bulkfree_outside_lock=0 ("_in_lock"). */
static void test_refill_and_bulkfree_order0_in_lock(void)
{
	refill_and_bulkfree(0, 0);
}

static void test_random_accounting_order0_in_lock(void)
{
	random_accounting(0, 0);
}

static void test_refill_and_bulkfree_order0(void)
{
	refill_and_bulkfree(0, 1);
}

static void test_random_accounting_order0(void)
{
	random_accounting(0, 1);
}

static void test_high_order_lists_order0(void)
{
	high_order_lists(0);
}

static void test_refill_and_bulkfree_in_lock(void)
{
	refill_and_bulkfree(1, 0);
}

static void test_random_accounting_in_lock(void)
{
	random_accounting(1, 0);
}

static void test_refill_and_bulkfree(void)
{
	refill_and_bulkfree(1, 1);
}

static void test_random_accounting(void)
{
	random_accounting(1, 1);
}

static void test_high_order_lists(void)
{
	high_order_lists(1);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "refill_and_bulkfree_order0_in_lock", test_refill_and_bulkfree_order0_in_lock },
		{ "random_accounting_order0_in_lock", test_random_accounting_order0_in_lock },
		{ "refill_and_bulkfree_order0", test_refill_and_bulkfree_order0 },
		{ "random_accounting_order0", test_random_accounting_order0 },
		{ "high_order_lists_order0", test_high_order_lists_order0 },
		{ "refill_and_bulkfree_in_lock", test_refill_and_bulkfree_in_lock },
		{ "random_accounting_in_lock", test_random_accounting_in_lock },
		{ "refill_and_bulkfree", test_refill_and_bulkfree },
		{ "random_accounting", test_random_accounting },
		{ "high_order_lists", test_high_order_lists },
		{ "own_pageblocks", test_own_pageblocks },
		{ "own_pageblocks_merge", test_own_pageblocks_merge },
		{ "free_pages_bulk", test_free_pages_bulk },
	};
	return run_test_cases("test_pcp", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
