/*
 * Buddy allocator: coalescing, exact split/merge counts, migratetype
 * fallback, zone limits, watermarks and the lowmem reserve.
 */
#include "test.h"

#include <stdbool.h>
#include <sys/mman.h>

#include <stdint.h>

struct block {
	void *addr;
	unsigned int order;
};

/* Marks the pages of a block as owned; fails if any already was. */
static void own_pages(za_mm_t *mm, unsigned char *owned, void *addr, unsigned int order, int set)
{
	unsigned long pfn = za_page_to_pfn(mm, za_virt_to_page(mm, addr));
	CHECK((pfn & ((1UL << order) - 1)) == 0);
	for (unsigned long i = 0; i < 1UL << order; i++) {
		CHECK(owned[pfn + i] == !set);
		owned[pfn + i] = (unsigned char)set;
	}
}

/* Allocate everything in random orders, free in random order: all coalesces. */
static void fill_and_coalesce(const char *config)
{
	za_mm_t *mm = test_mm(config);
	long total = za_stat(mm, "nr_managed_pages");
	unsigned char *owned = calloc((size_t)total, 1);
	struct block *blocks = calloc((size_t)total, sizeof(*blocks));
	unsigned long long rng = 42;
	long n = 0, held = 0;
	int failures = 0;

	while (failures < 64) {
		unsigned int order = (unsigned int)(test_rand(&rng) % 11);
		za_gfp_t gfp = (test_rand(&rng) & 1) ? ZA_GFP_MOVABLE : 0;
		void *p = za_alloc_pages(mm, gfp | ZA_GFP_NOWAIT, order);
		if (!p) {
			CHECK_EQ(errno, ENOMEM);
			failures++;
			continue;
		}
		own_pages(mm, owned, p, order, 1);
		blocks[n++] = (struct block){ p, order };
		held += 1L << order;
	}
	check_accounting(mm, held);
	/* Order 0 can still squeeze out the last pages above the min watermark. */
	void *p;
	while ((p = za_alloc_pages(mm, 0, 0))) {
		own_pages(mm, owned, p, 0, 1);
		blocks[n++] = (struct block){ p, 0 };
		held++;
	}
	check_accounting(mm, held);
	CHECK(held > total * 9 / 10);

	for (long i = n - 1; i > 0; i--) {
		long j = (long)(test_rand(&rng) % (unsigned long long)(i + 1));
		struct block t = blocks[i];
		blocks[i] = blocks[j];
		blocks[j] = t;
	}
	for (long i = 0; i < n; i++) {
		own_pages(mm, owned, blocks[i].addr, blocks[i].order, 0);
		CHECK_EQ(za_free_pages(mm, blocks[i].addr, blocks[i].order), 0);
		held -= 1L << blocks[i].order;
		if (i % 997 == 0)
			check_accounting(mm, held);
	}
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_stat(mm, "bad_free"), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(owned);
	free(blocks);
}

/*
 * A fresh zone is all order-10 blocks: an order-k block from it takes 10-k
 * splits, and freeing it takes 10-k merges.  Orders 0..3 come through the
 * per-CPU lists, whose refill (batch = 3 pages for this 64M zone) takes
 * whole blocks and splits them onto the list: order 0 takes an order-1
 * and an order-0 block (9 + 1 splits in the buddy lists, 1 on the list),
 * orders 1..3 take one order-k+1 block split in two (9-k + 1).  The drain
 * merges all of it back, so splits == merges exactly.
 */
static void test_split_merge(void)
{
	static const long long pcp_splits[] = { 11, 9, 8, 7 };
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1");
	long long pages = 0;
	for (unsigned int order = 0; order <= 10; order++) {
		long long expect = order <= 3 ? pcp_splits[order] : 10 - order;
		long long split0 = za_stat(mm, "buddy_split"), merge0 = za_stat(mm, "buddy_merge");
		void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, order);
		CHECK(p);
		CHECK_EQ(za_stat(mm, "buddy_split") - split0, expect);
		CHECK_EQ(za_stat(mm, "nr_free_blocks_order10"), 15);
		CHECK_EQ(za_free_pages(mm, p, order), 0);
		za_drain_all_pages(mm);
		CHECK_EQ(za_stat(mm, "buddy_merge") - merge0, expect);
		CHECK_EQ(za_stat(mm, "buddy_split"), za_stat(mm, "buddy_merge"));
		CHECK_EQ(za_stat(mm, "nr_free_blocks_order10"), 16);
		pages += 1LL << order;
	}
	/* pgalloc/pgfree count pages, per zone too. */
	CHECK_EQ(za_stat(mm, "pgalloc"), pages);
	CHECK_EQ(za_stat(mm, "pgalloc_Normal"), za_stat(mm, "pgalloc"));
	CHECK_EQ(za_stat(mm, "pgfree"), za_stat(mm, "pgalloc"));
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Pageblocks of a migratetype in the (single) Normal zone, from pagetypeinfo. */
static long blocks_of_type(za_mm_t *mm, const char *type)
{
	static const char *const types[] = { "Unmovable", "Movable", "Reclaimable" };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(za_report(mm, "pagetypeinfo", f) == 0);
	fclose(f);
	char *row = strstr(text, "Number of blocks type");
	CHECK(row);
	row = strstr(row, "  Normal ");
	CHECK(row);
	row += strlen("  Normal ");
	long v = -1;
	for (int i = 0; i < 3; i++) {
		long n = strtol(row, &row, 10);
		if (!strcmp(types[i], type))
			v = n;
	}
	free(text);
	return v;
}

/*
 * All pageblocks start movable.  An unmovable request claims a whole
 * pageblock range (the free blocks are larger than a pageblock); later
 * unmovable requests are served from it without further fallbacks.
 */
static void test_migratetype_fallback(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,pcp_high_order=0");
	CHECK_EQ(blocks_of_type(mm, "Movable"), 32);
	CHECK_EQ(blocks_of_type(mm, "Unmovable"), 0);

	void *p = za_alloc_pages(mm, ZA_GFP_KERNEL, 4);
	CHECK(p);
	CHECK_EQ(za_stat(mm, "pgfallback"), 1);
	CHECK_EQ(za_stat(mm, "pageblock_claim"), 1);
	CHECK_EQ(blocks_of_type(mm, "Unmovable"), 2);  /* an order-10 block = 2 pageblocks */
	void *q = za_alloc_pages(mm, ZA_GFP_KERNEL, 4);
	CHECK(q);
	CHECK_EQ(za_stat(mm, "pgfallback"), 1);
	void *r = za_alloc_pages(mm, ZA_GFP_RECLAIMABLE, 5);
	CHECK(r);
	CHECK_EQ(za_stat(mm, "pgfallback"), 2);
	/* The largest fallback block is a movable order-10 one: claimed whole. */
	CHECK_EQ(blocks_of_type(mm, "Reclaimable"), 2);
	/* Movable requests never needed to fall back. */
	void *m = za_alloc_pages(mm, ZA_GFP_MOVABLE, 4);
	CHECK(m);
	CHECK_EQ(za_stat(mm, "pgfallback"), 2);
	CHECK_EQ(za_stat(mm, "nr_mixed_pageblocks"), 0);

	CHECK_EQ(za_free_pages(mm, p, 4), 0);
	CHECK_EQ(za_free_pages(mm, q, 4), 0);
	CHECK_EQ(za_free_pages(mm, r, 5), 0);
	CHECK_EQ(za_free_pages(mm, m, 4), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Free pages of each migratetype in one zone, and that they add up to the
 * zone's free pages. */
static void check_free_by_type(za_mm_t *mm, const char *zone, long long unmovable,
			       long long movable, long long reclaimable)
{
	static const char *const types[] = { "unmovable", "movable", "reclaimable" };
	const long long expect[] = { unmovable, movable, reclaimable };
	char name[64];
	for (int t = 0; t < 3; t++) {
		snprintf(name, sizeof(name), "nr_free_pages_%s_%s", types[t], zone);
		CHECK_EQ(za_stat(mm, name), expect[t]);
	}
	snprintf(name, sizeof(name), "nr_free_pages_%s", zone);
	CHECK_EQ(za_stat(mm, name), unmovable + movable + reclaimable);
}

/*
 * nr_free_pages_<type>: all free pages start movable.  An unmovable and a
 * reclaimable order-4 request each claim a whole order-10 block of the
 * Normal zone (1008 of its pages stay free, on the claimer's lists); freed,
 * each block merges back whole under the type that claimed it.
 */
static void test_free_pages_per_type(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=DMA32:16M+Normal,cpus=1,fair_zone=0,kswapd=0");
	check_free_by_type(mm, "DMA32", 0, 4096, 0);
	check_free_by_type(mm, "Normal", 0, 12288, 0);
	void *p = za_alloc_pages(mm, ZA_GFP_KERNEL, 4), *r = za_alloc_pages(mm, ZA_GFP_RECLAIMABLE, 4);
	CHECK(p && r);
	check_free_by_type(mm, "Normal", 1008, 12288 - 2048, 1008);
	CHECK_EQ(za_stat(mm, "nr_free_pages_unmovable") + za_stat(mm, "nr_free_pages_movable") +
		 za_stat(mm, "nr_free_pages_reclaimable"), za_stat(mm, "nr_free_pages"));
	CHECK_EQ(za_free_pages(mm, p, 4), 0);
	CHECK_EQ(za_free_pages(mm, r, 4), 0);
	check_free_by_type(mm, "Normal", 1024, 12288 - 2048, 1024);
	check_free_by_type(mm, "DMA32", 0, 4096, 0);
	bool listed = false;
	for (int i = 0; i < za_stat_count(); i++)
		listed |= !strcmp(za_stat_name(i), "nr_free_pages_reclaimable");
	CHECK(listed);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * A movable request that may not claim (small block, movable) takes a block
 * from another type's pageblock without retagging it: that pageblock is
 * then mixed.
 */
static void test_steal_mixes_pageblock(void)
{
	za_mm_t *mm = test_mm("memory=8M,zones=Normal,cpus=1,pcp_high_order=0,max_order=9");
	long total = za_stat(mm, "nr_managed_pages");
	void **pages = calloc((size_t)total, sizeof(void *));
	long n = 0;
	/* Unmovable order-0 pages claim both pageblocks (each a whole order-9 block). */
	while ((pages[n] = za_alloc_pages(mm, ZA_GFP_NOWAIT, 0)))
		n++;
	CHECK_EQ(blocks_of_type(mm, "Unmovable"), 4);
	/* Free every other page: lots of free order-0 blocks, all unmovable. */
	for (long i = 0; i < n; i += 2)
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	za_drain_all_pages(mm);
	void *m = za_alloc_pages(mm, ZA_GFP_MOVABLE | ZA_GFP_NOWAIT, 0);
	CHECK(m);
	CHECK(za_stat(mm, "nr_mixed_pageblocks") >= 1);
	CHECK_EQ(za_free_pages(mm, m, 0), 0);
	for (long i = 1; i < n; i += 2)
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	check_fully_coalesced(mm, 9);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/*
 * The default zones follow the memory: up to the default DMA32 zone and a
 * block, a node is one DMA32 zone of all its pages (every page allocated,
 * ZA_GFP_DMA32 or not, is in zone 0); beyond, DMA32:256M+Normal.  Zones
 * given are kept as given, and refused when they do not fit.
 */
static void test_default_zones(void)
{
	static const struct { const char *memory; long dma32_pages, normal_pages; } want[] = {
		{ "64M", 16384, -1 }, { "256M", 65536, -1 }, { "260M", 65536, 1024 },
		{ "1G", 65536, 196608 },
	};
	char config[64];
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(config, sizeof(config), "memory=%s,max_order=10,cpus=1", want[i].memory);
		za_mm_t *mm = test_mm(config);
		CHECK_EQ(za_stat(mm, "nr_managed_pages_DMA32"), want[i].dma32_pages);
		CHECK_EQ(za_stat(mm, "nr_managed_pages_Normal"), want[i].normal_pages);
		CHECK_STR_HAS(za_mm_config_string(mm), want[i].normal_pages < 0 ? "zones=DMA32,"
										  : "zones=DMA32:256M+Normal,");
		void *p = za_alloc_pages(mm, 0, 0);
		CHECK(p && za_page_zone(mm, za_virt_to_page(mm, p)) == 0 + (want[i].normal_pages > 0));
		CHECK_EQ(za_free_pages(mm, p, 0), 0);
		CHECK_EQ(za_mm_destroy(mm), 0);
	}
	errno = 0;
	CHECK(!za_mm_create("memory=64M,zones=DMA32:256M+Normal"));
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(za_last_error(), "'zones'");
}

/* ZA_GFP_DMA32 never leaves the lowest zone; default requests may use it
 * but must leave its lowmem reserve behind. */
static void test_zone_limits_and_reserve(void)
{
	za_mm_t *mm = test_mm("memory=256M,zones=DMA32:64M+Normal,cpus=1");
	long dma_total = za_stat(mm, "nr_managed_pages_DMA32");
	long normal_total = za_stat(mm, "nr_managed_pages_Normal");
	CHECK_EQ(dma_total, 16384);
	CHECK_EQ(normal_total, 49152);
	void **pages = calloc((size_t)(dma_total + normal_total), sizeof(void *));
	long n = 0;

	/* Default requests: Normal first, then DMA32 down to min + reserve. */
	while ((pages[n] = za_alloc_pages(mm, 0, 0)))
		n++;
	za_drain_all_pages(mm);
	long dma_free = za_stat(mm, "nr_free_pages_DMA32");
	CHECK(dma_free >= 49152 / 256);             /* lowmem_reserve = Normal / 256 */
	CHECK(za_stat(mm, "nr_free_pages_Normal") < normal_total / 100);
	CHECK(za_stat(mm, "wmark_fail") > 0);
	CHECK(za_stat(mm, "alloc_fail") >= 1);

	/* DMA32-only requests may go below the reserve, never into Normal. */
	long dma_only = 0;
	void *p;
	while ((p = za_alloc_pages(mm, ZA_GFP_DMA32, 0))) {
		CHECK_EQ(za_page_zone(mm, za_virt_to_page(mm, p)), 0);
		pages[n++] = p;
		dma_only++;
	}
	CHECK(dma_only > 0);
	for (long i = 0; i < n; i++)
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	check_fully_coalesced(mm, 10);

	/* Higher orders too. */
	for (int i = 0; i < 100; i++) {
		p = za_alloc_pages(mm, ZA_GFP_DMA32 | ZA_GFP_MOVABLE, (unsigned int)(i % 8));
		CHECK(p);
		CHECK_EQ(za_page_zone(mm, za_virt_to_page(mm, p)), 0);
		CHECK_EQ(za_free_pages(mm, p, (unsigned int)(i % 8)), 0);
	}
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

static long zoneinfo_value(za_mm_t *mm, const char *zone, const char *key)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(za_report(mm, "zoneinfo", f) == 0);
	fclose(f);
	char header[64];
	snprintf(header, sizeof(header), "zone %8s\n", zone);
	char *sec = strstr(text, header);
	CHECK(sec);
	char *at = strstr(sec, key);
	CHECK(at);
	long v = strtol(at + strlen(key), NULL, 10);
	free(text);
	return v;
}

/* The kernel's formulas, computed by hand for 1 GiB = 256M DMA32 + 768M Normal:
 * min_free_kbytes = sqrt(1048576 * 16) = 4096 KiB = 1024 pages, split 1:3;
 * gap = max(min / 4, managed * 10 / 10000). */
static void test_watermark_formulas(void)
{
	za_mm_t *mm = test_mm("memory=1G,zones=DMA32:256M+Normal,cpus=1");
	CHECK_STR_HAS(za_mm_config_string(mm), "min_free_kbytes=4096");
	CHECK_STR_HAS(za_mm_config_string(mm), "lowmem_reserve_ratio=256:32");
	CHECK_EQ(zoneinfo_value(mm, "DMA32", "min "), 256);
	CHECK_EQ(zoneinfo_value(mm, "DMA32", "low "), 256 + 65);
	CHECK_EQ(zoneinfo_value(mm, "DMA32", "high "), 256 + 130);
	CHECK_EQ(zoneinfo_value(mm, "Normal", "min "), 768);
	CHECK_EQ(zoneinfo_value(mm, "Normal", "low "), 768 + 196);
	CHECK_EQ(zoneinfo_value(mm, "Normal", "high "), 768 + 392);
	CHECK_EQ(zoneinfo_value(mm, "DMA32", "protection: (0, "), 196608 / 256);
	/* batch: 196608 >> 10 = 192 -> 48 -> 72 -> 64 - 1; seed 000 high = 11 * batch. */
	CHECK_EQ(zoneinfo_value(mm, "Normal", "batch: "), 63);
	CHECK_EQ(zoneinfo_value(mm, "Normal", "high:  "), 11 * 63);
	CHECK_EQ(za_mm_destroy(mm), 0);

	mm = test_mm("memory=1G,zones=DMA32:256M+Normal,cpus=1,pcp_high_order=0,watermark_scale_factor=100");
	CHECK_EQ(zoneinfo_value(mm, "Normal", "high:  "), 6 * 63);
	CHECK_EQ(zoneinfo_value(mm, "Normal", "low "), 768 + 1966);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* The kernel's percpu_pagelist_high_fraction: 1/F of the zone per CPU. */
	mm = test_mm("memory=1G,zones=DMA32:256M+Normal,cpus=2,percpu_pagelist_high_fraction=8");
	CHECK_EQ(zoneinfo_value(mm, "Normal", "high:  "), 196608 / 8 / 2);
	CHECK_EQ(zoneinfo_value(mm, "DMA32", "high:  "), 65536 / 8 / 2);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Free pages far above the watermark are not enough for order k: a free
 * block of order >= k must exist. */
static void test_high_order_watermark(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,pcp_high_order=0");
	long total = za_stat(mm, "nr_managed_pages");
	void **pages = calloc((size_t)total, sizeof(void *));
	long n = 0, held = 0;
	while ((pages[n] = za_alloc_pages(mm, 0, 0)))
		n++;
	/* Free the even pages: no two free pages are buddies. */
	for (long i = 0; i < n; i++) {
		if (za_page_to_pfn(mm, za_virt_to_page(mm, pages[i])) & 1)
			held++;
		else
			CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	}
	za_drain_all_pages(mm);
	/* Besides the freed pages only what was below the min watermark is free:
	 * fewer than 256 pages, so no order-8 block can exist. */
	CHECK(za_stat(mm, "nr_free_pages") > total / 3);
	CHECK(za_stat(mm, "nr_free_pages") - za_stat(mm, "nr_free_blocks_order0") < 256);
	CHECK(za_alloc_pages(mm, 0, 8) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(za_alloc_pages(mm, 0, 0) != NULL);   /* order 0 is fine */
	za_drain_all_pages(mm);
	CHECK_EQ(za_mm_destroy(mm), held + 1);     /* destroy reports what is still held */
	free(pages);
}

/* deferred_init: nothing reaches the buddy lists at creation; the zone grows
 * as allocations need it, until exactly as much is allocatable as in an
 * eagerly initialised system. */
static long fill_order0(za_mm_t *mm, void ***out)
{
	long n = 0, cap = 1 << 16;
	void **pages = malloc(sizeof(void *) * (size_t)cap);
	while ((pages[n] = za_alloc_pages(mm, ZA_GFP_NOWAIT, 0)))
		n++;
	*out = pages;
	return n;
}

static void test_deferred_init(void)
{
	za_mm_t *eager = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0");
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,deferred_init=1");
	long total = 64L << (20 - 12);
	CHECK_EQ(za_stat(mm, "nr_managed_pages"), 0);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), 0);
	void *p = za_alloc_pages(mm, 0, 3);
	CHECK(p);
	/* Grown past the high watermark, by whole max-order blocks, not all. */
	long managed = za_stat(mm, "nr_managed_pages");
	CHECK(managed > 0 && managed < total && managed % 1024 == 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_free_pages(mm, p, 3), 0);
	za_drain_all_pages(mm);         /* the order-3 block must not sit on a list */

	void **a, **b;
	long na = fill_order0(eager, &a), nb = fill_order0(mm, &b);
	CHECK_EQ(nb, na);
	CHECK_EQ(za_stat(mm, "nr_managed_pages"), total);
	check_accounting(mm, nb);
	for (long i = 0; i < nb; i++)
		CHECK_EQ(za_free_pages(mm, b[i], 0), 0);
	for (long i = 0; i < na; i++)
		CHECK_EQ(za_free_pages(eager, a[i], 0), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
	CHECK_EQ(za_mm_destroy(eager), 0);
	free(a);
	free(b);
}

static bool resident(const void *p, size_t len)
{
	unsigned char vec[64];
	CHECK(len <= sizeof(vec) << 12);
	CHECK(mincore((void *)p, len, vec) == 0);
	for (size_t i = 0; i < len >> 12; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}

/* za_purge gives back free blocks old enough: epochs count calls. */
static void test_purge(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0");
	CHECK_EQ(za_purge(mm, 0), 0);                 /* nothing was ever written */
	char *p = za_alloc_pages(mm, 0, 4);
	CHECK(p);
	memset(p, 0xab, 16 << 12);
	CHECK_EQ(za_free_pages(mm, p, 4), 0);
	CHECK(resident(p, 16 << 12));
	CHECK_EQ(za_purge(mm, 2), 0);                 /* freed in this epoch */
	long purged = za_purge(mm, 2);                /* ... now two calls old */
	CHECK(purged >= 16);
	CHECK_EQ(za_stat(mm, "pgpurge"), purged);
	CHECK(!resident(p, 16 << 12));
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_purge(mm, 0), 0);                 /* all clean now */

	/* A clean block reads as zero; min_epochs=1 takes what was freed
	 * before the call. */
	char *q = za_alloc_pages(mm, 0, 4);
	for (int i = 0; i < 16 << 12; i++)
		CHECK_EQ(q[i], 0);
	memset(q, 1, 16 << 12);
	CHECK_EQ(za_free_pages(mm, q, 4), 0);
	CHECK(za_purge(mm, 1) >= 16);
	CHECK(!resident(q, 16 << 12));
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

enum { UNMERGED_POOL = 32 };

/* Of UNMERGED_POOL written order-4 blocks in pool, n whose buddies are
 * among the rest move to blocks[]: each is a block of its own when freed
 * while the pool's are allocated. */
static void alloc_unmergeable(za_mm_t *mm, char **pool, char **blocks, int n)
{
	int found = 0;
	for (int i = 0; i < UNMERGED_POOL; i++) {
		CHECK((pool[i] = za_alloc_pages(mm, 0, 4)));
		memset(pool[i], 0x5a, 16 << 12);
	}
	for (int i = 0; i < UNMERGED_POOL && found < n; i++) {
		uintptr_t buddy = (uintptr_t)pool[i] ^ ((uintptr_t)16 << 12);
		for (int j = 0; j < UNMERGED_POOL && pool[i]; j++)
			if ((uintptr_t)pool[j] == buddy) {
				blocks[found++] = pool[i];
				pool[i] = NULL;
			}
	}
	CHECK_EQ(found, n);
}

/* za_purge_keep: beyond keep dirty pages, the longest free go back first,
 * however young; within keep, none. */
static void test_purge_keep(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0");
	char *pool[UNMERGED_POOL], *b[4];
	alloc_unmergeable(mm, pool, b, 4);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(za_free_pages(mm, b[i], 4), 0);
	CHECK_EQ(za_purge_keep(mm, 100, ZA_PURGE_KEEP_ALL), 0);    /* too young by age */
	for (int i = 2; i < 4; i++)
		CHECK_EQ(za_free_pages(mm, b[i], 4), 0);
	CHECK_EQ(za_purge_keep(mm, 100, 64), 0);                   /* 64 dirty pages kept */
	CHECK_EQ(za_purge_keep(mm, 100, 32), 32);
	CHECK(!resident(b[0], 16 << 12) && !resident(b[1], 16 << 12));     /* the older two */
	CHECK(resident(b[2], 16 << 12) && resident(b[3], 16 << 12));
	CHECK_EQ(za_purge_keep(mm, 100, 0), 32);                   /* freed just now, too */
	CHECK(!resident(b[2], 16 << 12) && !resident(b[3], 16 << 12));
	CHECK_EQ(za_stat(mm, "pgpurge"), 64);
	CHECK_EQ(za_purge_keep(mm, 0, 0), 0);                      /* all clean */
	CHECK(za_verify(mm) == 0);
	for (int i = 0; i < UNMERGED_POOL; i++)
		CHECK(!pool[i] || za_free_pages(mm, pool[i], 4) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* za_used_pages_peak: the most pages out of the lists at once since the
 * last call, and how many are out now. */
static void test_used_pages_peak(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0");
	unsigned long base, now;
	za_used_pages_peak(mm, &base);
	char *a = za_alloc_pages(mm, 0, 6), *c = za_alloc_pages(mm, 0, 5);
	CHECK(a && c);
	CHECK_EQ(za_free_pages(mm, a, 6), 0);
	CHECK_EQ(za_used_pages_peak(mm, &now), base + 96);
	CHECK_EQ(now, base + 32);
	CHECK_EQ(za_used_pages_peak(mm, &now), base + 32);        /* a new period */
	za_purge(mm, 0);                                           /* isolated blocks count as free */
	CHECK_EQ(za_used_pages_peak(mm, NULL), base + 32);
	CHECK_EQ(za_free_pages(mm, c, 5), 0);
	CHECK_EQ(za_used_pages_peak(mm, &now), base + 32);
	CHECK_EQ(now, base);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* za_resize_pages: shrink frees the upper halves, grow takes free buddies
 * above the block and fails (changing nothing) when one is in use or the
 * block is an upper half. */
static void test_resize_in_place(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,pcp_high_order=0");
	long total = za_stat(mm, "nr_managed_pages");
	char *p = za_alloc_pages(mm, 0, 6);             /* 64 pages, lower half of its buddy */
	CHECK(p);
	CHECK_EQ(za_page_to_pfn(mm, za_virt_to_page(mm, p)) % 128, 0);
	memset(p, 5, 64 << 12);
	CHECK_EQ(za_resize_pages(mm, p, 6, 2), 0);      /* keep 4 pages */
	check_accounting(mm, 4);
	CHECK_EQ(za_resize_pages(mm, p, 2, 6), 0);      /* and take the 60 back */
	check_accounting(mm, 64);
	for (int i = 0; i < 64 << 12; i += 4096)
		CHECK_EQ(p[i], i < (4 << 12) ? 5 : p[i]);   /* the kept part is intact */
	CHECK_EQ(za_resize_pages(mm, p, 6, 7), 0);      /* the upper 64 were free */
	check_accounting(mm, 128);

	/* A block in the way: growing fails and changes nothing. */
	CHECK_EQ(za_resize_pages(mm, p, 7, 2), 0);
	char *q = za_alloc_pages(mm, 0, 0);
	CHECK(q == p + (4 << 12));                      /* the freed half comes back first */
	errno = 0;
	CHECK_EQ(za_resize_pages(mm, p, 2, 3), -1);
	CHECK_EQ(errno, ENOMEM);
	check_accounting(mm, 5);
	/* An upper half cannot grow down. */
	CHECK_EQ(za_resize_pages(mm, q, 0, 1), -1);
	/* Bad input is reported. */
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK_EQ(za_resize_pages(mm, p, 3, 4), -1);     /* wrong order */
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(za_resize_pages(mm, p, 2, 15), -1);
	CHECK_EQ(cap.count, 2);
	CHECK_STR_HAS(cap.last, "za_resize_pages");
	CHECK_EQ(za_free_pages(mm, q, 0), 0);
	CHECK_EQ(za_free_pages(mm, p, 2), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), total);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static unsigned long pfn_of(za_mm_t *mm, const void *p)
{
	return za_page_to_pfn(mm, za_virt_to_page(mm, p));
}

/*
 * Runs of any number of pages: exactly the pages asked for leave the free
 * lists, consecutive runs sit one after the other, a run never crosses a
 * section (its address range is contiguous), and freeing merges each piece.
 */
static void test_exact_runs(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,section_size=16M");
	long total = za_stat(mm, "nr_managed_pages");
	char *a = za_alloc_pages_exact(mm, 0, 5 * 4096 - 100);  /* 5 pages */
	CHECK(a);
	check_accounting(mm, 5);
	char *b = za_alloc_pages_exact(mm, 0, 3 * 4096);
	CHECK(b && pfn_of(mm, b) == pfn_of(mm, a) + 5 && b == a + 5 * 4096);
	check_accounting(mm, 8);
	memset(a, 1, 5 * 4096);
	memset(b, 2, 3 * 4096);

	/* Bad frees are reported and change nothing. */
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK_EQ(za_free_pages_exact(mm, a, 6 * 4096), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(cap.last, "za_free_pages_exact");
	CHECK_EQ(za_free_pages_exact(mm, a + 4096, 4 * 4096), -1);
	CHECK_EQ(za_free_pages_exact(mm, a, (1UL << 20) * 4096), -1);
	CHECK_EQ(za_resize_pages_exact(mm, a, 4 * 4096, 2 * 4096), -1);
	CHECK_EQ(cap.count, 4);
	check_accounting(mm, 8);

	/* Growing in place needs the next pages free; shrinking frees the tail. */
	errno = 0;
	CHECK_EQ(za_resize_pages_exact(mm, a, 5 * 4096, 7 * 4096), -1);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(za_resize_pages_exact(mm, b, 3 * 4096, 300 * 4096), 0);
	check_accounting(mm, 305);
	CHECK_EQ(b[3 * 4096 - 1], 2);
	memset(b, 3, 300 * 4096);
	CHECK_EQ(za_resize_pages_exact(mm, b, 300 * 4096, 9 * 4096), 0);
	check_accounting(mm, 14);
	CHECK_EQ(b[9 * 4096 - 1], 3);
	CHECK_EQ(a[5 * 4096 - 1], 1);

	/* A run is freed and resized as a whole: not by its pieces, not with
	 * the order calls (a is 5 pages: pieces of 4 and 1 pages, or 1 and
	 * 4, or 1, 2, 2, by its alignment). */
	unsigned long pa = pfn_of(mm, a);
	unsigned int first_order = pa % 4 == 0 ? 2 : pa % 2 ? 0 : 1;
	char *second = a + (4096UL << first_order);
	int bad = za_stat(mm, "bad_free");
	CHECK_EQ(za_free_pages(mm, a, first_order), -1);
	CHECK_STR_HAS(cap.last, "part of a run");
	CHECK_EQ(za_resize_pages(mm, a, first_order, first_order + 1), -1);
	CHECK_EQ(za_free_pages(mm, second, 0), -1);
	CHECK_EQ(za_free_pages_exact(mm, second, 4096), -1);
	CHECK_EQ(za_stat(mm, "bad_free"), bad + 4);
	check_accounting(mm, 14);

	CHECK_EQ(za_free_pages_exact(mm, a, 5 * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, a, 5 * 4096), -1);    /* double free */
	CHECK_STR_HAS(cap.last, "double free");
	CHECK_EQ(za_free_pages_exact(mm, b, 9 * 4096), 0);
	CHECK_EQ(za_stat(mm, "bad_free"), 9);
	za_mm_set_error_handler(mm, NULL, NULL);
	check_fully_coalesced(mm, 10);

	/* 1000-page runs fill each 4096-page section densely, and never cross
	 * into the next one (the address range would not be contiguous). */
	char *runs[64];
	long held = 0;
	for (int i = 0; i < 64; i++) {
		CHECK((runs[i] = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, 1000 * 4096)));
		unsigned long first = pfn_of(mm, runs[i]), last = pfn_of(mm, runs[i] + 999 * 4096);
		CHECK_EQ(last - first, 999);
		CHECK_EQ(first / 4096, last / 4096);
		if (i && pfn_of(mm, runs[i - 1]) % 4096 + 2000 <= 4096)    /* room after it */
			CHECK(runs[i] == runs[i - 1] + 1000 * 4096);
		memset(runs[i], i, 1000 * 4096);
		held += 1000;
		if (held > total * 3 / 4)
			break;
	}
	check_accounting(mm, held);
	for (int i = 0; held > 0; i++, held -= 1000) {
		CHECK_EQ(runs[i][999 * 4096], (char)i);
		CHECK_EQ(za_free_pages_exact(mm, runs[i], 1000 * 4096), 0);
	}
	check_fully_coalesced(mm, 10);

	/* A power of two of pages is a block of that order. */
	long hits = za_stat(mm, "pcp_alloc_order3");
	char *c = za_alloc_pages_exact(mm, 0, 8 * 4096);
	CHECK(c && za_stat(mm, "pcp_alloc_order3") == hits + 1);
	CHECK_EQ(za_free_pages(mm, c, 3), 0);
	errno = 0;
	CHECK(za_alloc_pages_exact(mm, 0, (16UL << 20) + 1) == NULL);   /* above a section */
	CHECK_EQ(errno, EINVAL);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), total);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* A run that ends at its section's end cannot grow into the next
	 * section, free as its pages are. */
	mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,max_order=12,section_size=16M");
	char *x = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, 3000 * 4096);
	char *y = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, 1096 * 4096);
	CHECK(x && y && pfn_of(mm, x) == 0 && pfn_of(mm, y) == 3000);
	errno = 0;
	CHECK_EQ(za_resize_pages_exact(mm, y, 1096 * 4096, 1200 * 4096), -1);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(za_resize_pages_exact(mm, x, 3000 * 4096, 2000 * 4096), 0);
	check_accounting(mm, 3096);
	CHECK_EQ(za_free_pages_exact(mm, x, 2000 * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, y, 1096 * 4096), 0);
	check_fully_coalesced(mm, 12);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * A run goes into the best-fitting free range around memory used before
 * when no whole free block of memory used before holds it: freed runs
 * leave contiguous pieces that are not buddies.  Runs fill the first 4096
 * pages: A [0,1000), B [1000,1400), C [1400,2600), D [2600,2920), E to
 * 4096.  Freeing B and D leaves dirty ranges of 400 and 320 pages whose
 * largest blocks are of order 8 (1024..1280) and 7 (2688..2816), below the
 * 300-page run's order 9.  The first 300-page run takes D's range, the
 * smaller, ending at its end: [2620,2920); the second B's, from its order-8
 * block: [1024,1324); the third fits in neither and takes fresh memory.
 */
static void test_run_best_fit(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,max_order=12,section_size=16M");
	static const unsigned long pages[] = { 1000, 400, 1200, 320, 1176 };
	char *run[5];
	unsigned long at = 0;
	for (int i = 0; i < 5; i++) {
		CHECK((run[i] = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, pages[i] * 4096)));
		CHECK_EQ(pfn_of(mm, run[i]), at);
		memset(run[i], 'a' + i, pages[i] * 4096);
		at += pages[i];
	}
	CHECK_EQ(za_free_pages_exact(mm, run[1], 400 * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, run[3], 320 * 4096), 0);
	char *fit[3];
	for (int i = 0; i < 3; i++) {
		CHECK((fit[i] = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, 300 * 4096)));
		memset(fit[i], 'x' + i, 300 * 4096);
	}
	CHECK_EQ(pfn_of(mm, fit[0]), 2620);
	CHECK_EQ(pfn_of(mm, fit[1]), 1024);
	CHECK(pfn_of(mm, fit[2]) >= 4096);
	check_accounting(mm, 1000 + 1200 + 1176 + 3 * 300);
	static const int kept[] = { 0, 2, 4 };
	for (int k = 0; k < 3; k++) {
		int i = kept[k];
		CHECK(run[i][0] == 'a' + i && run[i][pages[i] * 4096 - 1] == 'a' + i);
		CHECK_EQ(za_free_pages_exact(mm, run[i], pages[i] * 4096), 0);
	}
	for (int i = 0; i < 3; i++) {
		CHECK(fit[i][0] == 'x' + i && fit[i][300 * 4096 - 1] == 'x' + i);
		CHECK_EQ(za_free_pages_exact(mm, fit[i], 300 * 4096), 0);
	}
	check_fully_coalesced(mm, 12);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * Runs beyond the largest block (1024 pages here, in sections of 4096):
 * free pages in a row within one section, never across one, which the
 * zone (deferred_init) grows for; a freed one's memory serves the next
 * such run; an
 * unmovable run, when only movable memory is free, takes it and claims
 * the pageblocks it fills; a run above a section is refused.
 */
static void test_giant_runs(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,section_size=16M,"
			      "deferred_init=1");
	enum { N = 1500 };
	char *run[3];
	long grown = za_stat(mm, "zone_grow_pages");
	for (int i = 0; i < 3; i++) {
		CHECK((run[i] = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, N * 4096)));
		CHECK_EQ(pfn_of(mm, run[i]) / 4096, (pfn_of(mm, run[i]) + N - 1) / 4096);
		memset(run[i], 'a' + i, N * 4096);
	}
	CHECK(za_stat(mm, "zone_grow_pages") > grown);
	check_accounting(mm, 3 * N);

	unsigned long freed = pfn_of(mm, run[1]);
	CHECK_EQ(za_free_pages_exact(mm, run[1], N * 4096), 0);
	char *again = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, (N - 100) * 4096);
	CHECK(again && pfn_of(mm, again) >= freed && pfn_of(mm, again) < freed + N);
	CHECK(again[0] == 'b');                 /* reused as it was left */

	long claimed = za_stat(mm, "pageblock_claim");
	char *unmovable = za_alloc_pages_exact(mm, 0, N * 4096);
	CHECK(unmovable);
	CHECK(za_stat(mm, "pageblock_claim") - claimed >= N / 512 - 1);
	check_accounting(mm, 4 * N - 100);

	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	errno = 0;
	CHECK(za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, (4096 + 1) * 4096) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(za_last_error(), "above a section");
	CHECK_EQ(za_free_pages_exact(mm, run[0], (4096 + 1) * 4096), -1);
	CHECK_STR_HAS(cap.last, "above a section");
	za_mm_set_error_handler(mm, NULL, NULL);

	CHECK_EQ(za_free_pages_exact(mm, unmovable, N * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, again, (N - 100) * 4096), 0);
	CHECK(run[0][N * 4096 - 1] == 'a' && run[2][0] == 'c');
	CHECK_EQ(za_free_pages_exact(mm, run[0], N * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, run[2], N * 4096), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * A zone whose lists hold more blocks than a run's search looks at (32
 * entries): 40 dirty order-9 blocks, each between two allocated ones, come
 * first, and no range around them holds 1500 pages.  The run takes the
 * blocks the zone grows for it, which the search does not reach.
 */
static void test_giant_run_past_search(void)
{
	za_mm_t *mm = test_mm("memory=256M,zones=Normal,cpus=1,kswapd=0,section_size=16M,"
			      "deferred_init=1");
	enum { BLOCKS = 80, N = 1500 };
	char *b[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) {
		CHECK((b[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 9)));
		memset(b[i], i, 512 * 4096);
	}
	for (int i = 0; i < BLOCKS; i += 2)
		CHECK_EQ(za_free_pages(mm, b[i], 9), 0);
	char *run = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, N * 4096);
	CHECK(run);
	memset(run, 'r', N * 4096);
	check_accounting(mm, BLOCKS / 2 * 512 + N);
	CHECK_EQ(za_free_pages_exact(mm, run, N * 4096), 0);
	for (int i = 1; i < BLOCKS; i += 2) {
		CHECK(b[i][0] == (char)i);
		CHECK_EQ(za_free_pages(mm, b[i], 9), 0);
	}
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * A run grows into the free pages around it: after it first, then before
 * it.  Runs A [0,1000), B [1000,1400), C [1400,2600): with A freed, B
 * cannot grow forward (C), so grown to 900 pages it takes A's last 500:
 * [500,1400), its contents still at 1000 for the caller to move; then
 * with the pages after C free, C grows forward in place.  Too few free
 * pages: ENOMEM, nothing changed; a size not larger, or above a section:
 * EINVAL.
 */
static void test_extend_run(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,max_order=12,section_size=16M");
	static const unsigned long pages[] = { 1000, 400, 1200 };
	char *run[3];
	for (int i = 0; i < 3; i++) {
		CHECK((run[i] = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, pages[i] * 4096)));
		memset(run[i], 'a' + i, pages[i] * 4096);
	}
	CHECK(pfn_of(mm, run[0]) == 0 && pfn_of(mm, run[1]) == 1000 && pfn_of(mm, run[2]) == 1400);
	CHECK_EQ(za_free_pages_exact(mm, run[0], 1000 * 4096), 0);
	char *b = za_extend_pages_exact(mm, run[1], 400 * 4096, 900 * 4096);
	CHECK(b && pfn_of(mm, b) == 500);
	CHECK(run[1][0] == 'b' && run[1][400 * 4096 - 1] == 'b');     /* not moved yet */
	memmove(b, run[1], 400 * 4096);
	check_accounting(mm, 900 + 1200);
	char *c = za_extend_pages_exact(mm, run[2], 1200 * 4096, 1500 * 4096);
	CHECK(c == run[2]);
	check_accounting(mm, 900 + 1500);

	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	errno = 0;
	CHECK(za_extend_pages_exact(mm, b, 900 * 4096, 1500 * 4096) == NULL);    /* 500 free */
	CHECK_EQ(errno, ENOMEM);
	CHECK(za_extend_pages_exact(mm, b, 900 * 4096, 900 * 4096) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(cap.last, "not larger");
	CHECK(za_extend_pages_exact(mm, b, 900 * 4096, (4096 + 1) * 4096UL) == NULL);
	CHECK_STR_HAS(cap.last, "above a section");
	CHECK(za_extend_pages_exact(mm, b + 4096, 899 * 4096, 1000 * 4096) == NULL);
	CHECK_EQ(cap.count, 3);
	za_mm_set_error_handler(mm, NULL, NULL);
	check_accounting(mm, 900 + 1500);

	CHECK(b[0] == 'b' && b[400 * 4096 - 1] == 'b' && c[1200 * 4096 - 1] == 'c');
	CHECK_EQ(za_free_pages_exact(mm, b, 900 * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, c, 1500 * 4096), 0);
	check_fully_coalesced(mm, 12);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static bool all_zero(const char *p, unsigned long pages)
{
	for (unsigned long i = 0; i < pages * 4096; i += 512)
		if (p[i])
			return false;
	return true;
}

/*
 * ZA_GFP_ZERO clears only the pages of a run that were written before:
 * those fresh from the OS read as zero already and are not touched.  A
 * [0,700) and B [700,1024) fill the first block and are written; A freed,
 * a zeroed run of 600 pages takes its memory, cleared; another goes to
 * fresh memory, where no page becomes resident until read.  Then, in a
 * second system, a run over both: X [0,256) stays, Y [256,512) is written
 * and freed (its buddy X keeps it from merging), [512,1024) is fresh; a
 * zeroed run of 500 pages takes [256,756), Y's pages cleared and the
 * fresh 244 untouched.
 */
static void test_zeroed_runs(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,section_size=16M");
	char *a = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, 700 * 4096);
	char *b = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, 324 * 4096);
	CHECK(a && b && pfn_of(mm, a) == 0 && pfn_of(mm, b) == 700);
	memset(a, 0xaa, 700 * 4096);
	memset(b, 0xbb, 324 * 4096);
	CHECK_EQ(za_free_pages_exact(mm, a, 700 * 4096), 0);
	char *c = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE | ZA_GFP_ZERO, 600 * 4096);
	CHECK(c == a && all_zero(c, 600));
	char *d = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE | ZA_GFP_ZERO, 600 * 4096);
	CHECK(d && pfn_of(mm, d) >= 1024);
	CHECK_EQ(resident_pages(d, 600 * 4096), 0);
	CHECK(all_zero(d, 600));
	check_accounting(mm, 324 + 600 + 600);
	CHECK_EQ(za_free_pages_exact(mm, b, 324 * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, c, 600 * 4096), 0);
	CHECK_EQ(za_free_pages_exact(mm, d, 600 * 4096), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);

	mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,section_size=16M");
	char *x = za_alloc_pages(mm, ZA_GFP_MOVABLE, 8), *y = za_alloc_pages(mm, ZA_GFP_MOVABLE, 8);
	CHECK(x && y && pfn_of(mm, x) == 0 && pfn_of(mm, y) == 256);
	memset(y, 0xcc, 256 * 4096);
	CHECK_EQ(za_free_pages(mm, y, 8), 0);
	char *e = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE | ZA_GFP_ZERO, 500 * 4096);
	CHECK(e == y);
	CHECK_EQ(resident_pages(e + 256 * 4096, 244 * 4096), 0);
	CHECK(all_zero(e, 500));
	check_accounting(mm, 256 + 500);
	CHECK_EQ(za_free_pages_exact(mm, e, 500 * 4096), 0);
	CHECK_EQ(za_free_pages(mm, x, 8), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* A purge the OS refuses (the pages are locked) leaves the blocks dirty,
 * unpurged: a zeroed run of their memory is cleared all the same.  Not
 * under ASan, whose mlock locks nothing; nor where the OS lets this
 * process lock no memory. */
static void test_purge_refused(void)
{
#ifdef ZA_ASAN
	return;
#endif
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,section_size=16M");
	char *a = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE, 600 * 4096);
	CHECK(a);
	memset(a, 0xdd, 600 * 4096);
	CHECK_EQ(za_free_pages_exact(mm, a, 600 * 4096), 0);
	if (mlock(a, 600 * 4096) == 0) {
		long long purged = za_stat(mm, "pgpurge");
		za_purge(mm, 0);
		CHECK_EQ(za_stat(mm, "pgpurge"), purged);
		char *z = za_alloc_pages_exact(mm, ZA_GFP_MOVABLE | ZA_GFP_ZERO, 600 * 4096);
		CHECK(z == a && all_zero(z, 600));
		CHECK_EQ(munlock(a, 600 * 4096), 0);
		CHECK_EQ(za_free_pages_exact(mm, z, 600 * 4096), 0);
	}
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* fill_and_coalesce on two zones; per-CPU lists of order 0 only; two nodes
 * with the bulk free under the lock; debug mode. */
static void test_fill_and_coalesce(void)
{
	fill_and_coalesce("memory=64M,zones=DMA32:16M+Normal,cpus=2");
}

static void test_fill_and_coalesce_order0(void)
{
	fill_and_coalesce("memory=64M,zones=DMA32:16M+Normal,cpus=2,pcp_high_order=0");
}

static void test_fill_and_coalesce_two_nodes(void)
{
	fill_and_coalesce("memory=64M,nodes=2,zones=DMA32:8M+Normal,cpus=3,bulkfree_outside_lock=0");
}

static void test_fill_and_coalesce_debug(void)
{
	fill_and_coalesce("memory=64M,zones=Normal,cpus=1,debug=1");
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "fill_and_coalesce", test_fill_and_coalesce },
		{ "fill_and_coalesce_order0", test_fill_and_coalesce_order0 },
		{ "fill_and_coalesce_two_nodes", test_fill_and_coalesce_two_nodes },
		{ "fill_and_coalesce_debug", test_fill_and_coalesce_debug },
		{ "split_merge", test_split_merge },
		{ "migratetype_fallback", test_migratetype_fallback },
		{ "free_pages_per_type", test_free_pages_per_type },
		{ "steal_mixes_pageblock", test_steal_mixes_pageblock },
		{ "default_zones", test_default_zones },
		{ "zone_limits_and_reserve", test_zone_limits_and_reserve },
		{ "watermark_formulas", test_watermark_formulas },
		{ "high_order_watermark", test_high_order_watermark },
		{ "deferred_init", test_deferred_init },
		{ "purge", test_purge },
		{ "purge_keep", test_purge_keep },
		{ "used_pages_peak", test_used_pages_peak },
		{ "resize_in_place", test_resize_in_place },
		{ "exact_runs", test_exact_runs },
		{ "run_best_fit", test_run_best_fit },
		{ "giant_runs", test_giant_runs },
		{ "giant_run_past_search", test_giant_run_past_search },
		{ "extend_run", test_extend_run },
		{ "zeroed_runs", test_zeroed_runs },
		{ "purge_refused", test_purge_refused },
	};
	return run_test_cases("test_buddy", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
