/*
 * Bad input: configuration errors name their key, bad requests fail with
 * EINVAL, bad frees are reported with the address and the reason and leave
 * the allocator intact.
 */
#include "test.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

static void expect_config_error(const char *config, const char *key_in_message)
{
	errno = 0;
	za_mm_t *mm = za_mm_create(config);
	if (mm) {
		fprintf(stderr, "config \"%s\" was accepted\n", config);
		exit(1);
	}
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(za_last_error(), key_in_message);
}

static void test_config_errors(void)
{
	expect_config_error("bogus=1", "'bogus'");
	expect_config_error("memory", "not key=value");
	expect_config_error("memory=", "'memory'");
	expect_config_error("memory=12Q", "'memory'");
	expect_config_error("memory=0", "'memory'");
	expect_config_error("memory=1M", "'memory'");            /* smaller than two 4M blocks */
	expect_config_error("nodes=0", "'nodes'");
	expect_config_error("nodes=65", "'nodes'");
	expect_config_error("nodes=x", "'nodes'");
	expect_config_error("cpus=-3", "'cpus'");
	expect_config_error("max_order=15", "'max_order'");
	expect_config_error("pcp_high_order=3", "'pcp_high_order'");
	expect_config_error("bulkfree_outside_lock=maybe", "'bulkfree_outside_lock'");
	expect_config_error("watermark_scale_factor=0", "'watermark_scale_factor'");
	expect_config_error("min_free_kbytes=5", "'min_free_kbytes'");
	expect_config_error("percpu_pagelist_high_fraction=4", "'percpu_pagelist_high_fraction'");
	expect_config_error("lowmem_reserve_ratio=a:b", "'lowmem_reserve_ratio'");
	expect_config_error("zones=", "'zones'");
	expect_config_error("zones=DMA32+Normal", "'zones'");       /* only the last may omit a size */
	expect_config_error("zones=A:1M+B:1M+C:1M+D:1M+E", "'zones'");
	expect_config_error("zones=A:64M+A", "'zones'");
	expect_config_error("zones=A:64M+", "'zones'");
	expect_config_error("zones=Bad-Name:64M+Normal", "'zones'");
	expect_config_error("memory=64M,zones=DMA32:2M+Normal", "'zones'");   /* below one block */
	expect_config_error("memory=64M,zones=DMA32:64M+Normal", "'zones'");  /* nothing left */
	expect_config_error("memory=64M,zones=DMA32:16M+Normal:16M", "'zones'");
	expect_config_error("debug=1,,hugepages=2", "'hugepages'");

	/* ZA_CONFIG is appended: it overrides, and its errors say where they came from. */
	setenv("ZA_CONFIG", "memory=64M,zones=Normal,pcp_high_order=0", 1);
	za_mm_t *mm = test_mm("memory=2G,pcp_high_order=1");
	CHECK_STR_HAS(za_mm_config_string(mm), "memory=64M,");
	CHECK_STR_HAS(za_mm_config_string(mm), "pcp_high_order=0");
	CHECK_EQ(za_mm_destroy(mm), 0);
	setenv("ZA_CONFIG", "memroy=64M", 1);
	expect_config_error("", "ZA_CONFIG: config: unknown key 'memroy'");
	unsetenv("ZA_CONFIG");
}

/* The effective configuration lists every key, resolved, and round-trips. */
static void test_config_string(void)
{
	static const char *const keys[] = {
		"memory=", "nodes=", "zones=", "cpus=", "max_order=", "pcp_high_order=",
		"bulkfree_outside_lock=", "percpu_pagelist_high_fraction=", "watermark_scale_factor=",
		"min_free_kbytes=",
		"lowmem_reserve_ratio=", "lock_stats=", "debug=", "hugepages=", "populate=",
	};
	za_mm_t *mm = test_mm(" memory = 102M , zones=Low:10M+Normal,cpus=3,");
	const char *s = za_mm_config_string(mm);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		CHECK_STR_HAS(s, keys[i]);
	/* 102M rounds down to whole 4M blocks, Low:10M to 8M; autos resolved. */
	CHECK_STR_HAS(s, "memory=100M,");
	CHECK_STR_HAS(s, "zones=Low:8M+Normal,");
	CHECK_STR_HAS(s, "cpus=3,");
	CHECK(!strstr(s, "=auto"));
	za_mm_t *again = test_mm(s);
	CHECK(!strcmp(s, za_mm_config_string(again)));
	CHECK_EQ(za_mm_destroy(again), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void test_bad_requests(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,nodes=1");
	errno = 0;
	CHECK(za_alloc_pages(mm, 0, 11) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(za_last_error(), "order");
	errno = 0;
	CHECK(za_alloc_pages(mm, ZA_GFP_MOVABLE | ZA_GFP_RECLAIMABLE, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(za_alloc_pages(mm, 1u << 20, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(za_alloc_pages_node(mm, 1, 0, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* -1 is "the current CPU's node"; no other negative node exists. */
	const int bad_nids[] = { -2, -7, -1000, INT_MIN };
	for (size_t i = 0; i < sizeof(bad_nids) / sizeof(bad_nids[0]); i++) {
		errno = 0;
		CHECK(za_alloc_pages_node(mm, bad_nids[i], 0, 0) == NULL);
		CHECK_EQ(errno, EINVAL);
		CHECK_STR_HAS(za_last_error(), "no node -");
	}
	void *page = za_alloc_pages_node(mm, -1, 0, 0);
	CHECK(page);
	CHECK_EQ(za_free_pages(mm, page, 0), 0);
	errno = 0;
	CHECK_EQ(za_stat(mm, "no_such_counter"), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(za_stat(mm, "pgalloc_NoSuchZone"), -1);
	errno = 0;
	CHECK_EQ(za_report(mm, "meminfo", stdout), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void expect_bad_free(za_mm_t *mm, struct captured *cap, void *addr, unsigned int order,
			    const char *reason)
{
	char addr_text[32];
	int before = cap->count;
	errno = 0;
	CHECK_EQ(za_free_pages(mm, addr, order), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(cap->count, before + 1);
	snprintf(addr_text, sizeof(addr_text), "%p", addr);
	CHECK_STR_HAS(cap->last, addr_text);
	CHECK_STR_HAS(cap->last, reason);
	CHECK(za_verify(mm) == 0);
}

static void bad_frees(const char *config)
{
	za_mm_t *mm = test_mm(config);
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	int on_stack;
	char *a = za_alloc_pages(mm, 0, 0);
	char *b = za_alloc_pages(mm, 0, 5);
	CHECK(a && b);

	expect_bad_free(mm, &cap, &on_stack, 0, "outside the arena");
	expect_bad_free(mm, &cap, NULL, 0, "outside the arena");
	expect_bad_free(mm, &cap, a + 8, 0, "not the start of an allocated block");
	expect_bad_free(mm, &cap, b + ZA_PAGE_SIZE, 0, "not the start of an allocated block");
	expect_bad_free(mm, &cap, b + 2 * ZA_PAGE_SIZE, 1, "not the start of an allocated block");
	expect_bad_free(mm, &cap, b, 4, "allocated with order 5");
	expect_bad_free(mm, &cap, b, 6, "allocated with order 5");
	expect_bad_free(mm, &cap, b, 12, "order above max_order");
	CHECK_EQ(za_free_pages(mm, a, 0), 0);
	expect_bad_free(mm, &cap, a, 0, "double free (the block is already on a per-CPU list)");
	CHECK_EQ(za_free_pages(mm, b, 5), 0);
	expect_bad_free(mm, &cap, b, 5, "double free (the block is already in the buddy lists)");
	/* A page that was never handed out. */
	char *c = za_alloc_pages(mm, 0, 3);
	expect_bad_free(mm, &cap, c + 8 * ZA_PAGE_SIZE * 64, 0, "");
	CHECK_EQ(za_free_pages(mm, c, 3), 0);
	/* Blocks a layer above keeps: kmalloc's large blocks, page cache pages. */
	void *big = za_kmalloc(mm, 5 * ZA_PAGE_SIZE, 0);
	CHECK(big);
	expect_bad_free(mm, &cap, big, 3, "the block is kmalloc's (free it with za_kfree)");
	CHECK_EQ(za_kfree(mm, big), 0);
	char path[] = "/tmp/za_badinput_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	za_file_t *f = za_file_open(mm, path, O_RDWR);
	CHECK(f);
	void *cached = za_file_get_page(f, 0);
	CHECK(cached);
	expect_bad_free(mm, &cap, cached, 0, "the page is in the page cache");
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, cached), -1);
	CHECK_STR_HAS(cap.last, "not an allocated order-0 page of the caller's");
	CHECK_EQ(za_file_put_page(f, cached, 0), 0);
	CHECK_EQ(za_file_close(f), 0);
	unlink(path);
	CHECK_EQ(za_stat(mm, "bad_free"), cap.count - 1);       /* the quicklist's is its own */

	/* Nothing was corrupted: everything still coalesces. */
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* za_free_pages_bulk: each bad block reported as za_free_pages would (a
 * repeat within the batch as a double free), the good ones freed. */
static void bad_frees_bulk(const char *config)
{
	za_mm_t *mm = test_mm(config);
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	int on_stack;
	char *a[40];
	for (int i = 0; i < 40; i++)
		CHECK((a[i] = za_alloc_pages(mm, 0, 0)));
	void *batch[45];
	int n = 0;
	for (int i = 0; i < 40; i++) {
		batch[n++] = a[i];
		if (i == 3)
			batch[n++] = &on_stack;
		if (i == 5)
			batch[n++] = a[5];
		if (i == 33)
			batch[n++] = a[2] + 8;
	}
	batch[n++] = a[39];             /* in the run not yet freed */
	batch[n++] = a[0];              /* in the run already freed */
	errno = 0;
	CHECK_EQ(za_free_pages_bulk(mm, batch, (size_t)n, 0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(cap.count, 5);
	CHECK_STR_HAS(cap.last, "double free");
	CHECK_EQ(za_stat(mm, "bad_free"), 5);
	check_accounting(mm, 0);
	CHECK_EQ(za_free_pages_bulk(mm, batch, 0, 0), 0);
	char *b = za_alloc_pages(mm, 0, 5);
	CHECK(b);
	void *wrong[] = { b };
	CHECK_EQ(za_free_pages_bulk(mm, wrong, 1, 4), -1);
	CHECK_STR_HAS(cap.last, "allocated with order 5");
	CHECK_EQ(za_free_pages_bulk(mm, wrong, 1, 5), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void test_bad_frees_bulk(void)
{
	bad_frees_bulk("memory=64M,zones=Normal,cpus=1");
}

static void test_bad_frees_bulk_debug(void)
{
	bad_frees_bulk("memory=64M,zones=Normal,cpus=1,debug=1");
}

/* destroy reports leaks by count; with debug=1 also as a message. */
static void test_leak_report(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,debug=1");
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK(za_alloc_pages(mm, 0, 2));
	CHECK(za_alloc_pages(mm, ZA_GFP_MOVABLE, 7));
	CHECK_EQ(za_mm_destroy(mm), 4 + 128);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "132 pages");
}

/* Bad frees in the default mode, then in debug mode with no per-CPU lists
 * of orders 1..3. */
static void test_bad_frees(void)
{
	bad_frees("memory=64M,zones=Normal,cpus=1");
}

static void test_bad_frees_debug(void)
{
	bad_frees("memory=64M,zones=Normal,cpus=1,debug=1,pcp_high_order=0");
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "config_errors", test_config_errors },
		{ "config_string", test_config_string },
		{ "bad_requests", test_bad_requests },
		{ "bad_frees", test_bad_frees },
		{ "bad_frees_debug", test_bad_frees_debug },
		{ "bad_frees_bulk", test_bad_frees_bulk },
		{ "bad_frees_bulk_debug", test_bad_frees_bulk_debug },
		{ "leak_report", test_leak_report },
	};
	return run_test_cases("test_badinput", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
