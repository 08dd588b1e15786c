/*
 * The sparse memory model: sections of address space taken from the OS as
 * zones grow into them, conversions across sections, growth of a
 * fragmented zone, address-space limits, the section_size key, and the
 * near table that free's fast path reads.  Links the library's objects:
 * the near table is internal (mmzone.h, malloc/internal.h).
 */
#include "test.h"
#include "malloc/internal.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECTION_PAGES 4096L             /* section_size=16M */

/* pfn -> page -> address -> page -> pfn, and the address arithmetic
 * inside the page's section. */
static void check_round_trip(za_mm_t *mm, unsigned long pfn)
{
	za_page_t *page = za_pfn_to_page(mm, pfn);
	CHECK(page);
	char *addr = za_page_to_virt(mm, page);
	CHECK(za_virt_to_page(mm, addr) == page);
	CHECK(za_virt_to_page(mm, addr + 4095) == page);
	CHECK_EQ(za_page_to_pfn(mm, page), pfn);
	unsigned long first = pfn & ~(SECTION_PAGES - 1);
	CHECK(addr == (char *)za_page_to_virt(mm, za_pfn_to_page(mm, first)) +
		      (pfn - first) * ZA_PAGE_SIZE);
}

/* Sections appear as the zone grows, one mapping each, and nothing else of
 * the address space is the arena's. */
static void test_sections_on_demand(void)
{
	za_mm_t *mm = test_mm("memory=256M,zones=Normal,cpus=1,kswapd=0,deferred_init=1,"
			      "section_size=16M");
	long total = 256L << (20 - 12);
	CHECK_EQ(za_stat(mm, "nr_sections"), 0);
	CHECK(za_pfn_to_page(mm, 0) == NULL);           /* not present yet */
	int local;
	CHECK(za_virt_to_page(mm, &local) == NULL);
	CHECK(za_virt_to_page(mm, NULL) == NULL);

	void *p = za_alloc_pages(mm, 0, 0);
	CHECK(p);
	long sections = za_stat(mm, "nr_sections");
	CHECK(sections >= 1 && sections < total / SECTION_PAGES);
	CHECK_EQ(za_stat(mm, "section_add"), sections);
	CHECK_EQ(za_stat(mm, "zone_grow_pages"), za_stat(mm, "nr_managed_pages"));
	CHECK(za_pfn_to_page(mm, (unsigned long)total - 1) == NULL);
	CHECK_EQ(za_free_pages(mm, p, 0), 0);

	/* Everything, page by page: every section, every pfn converts. */
	void **pages = malloc(sizeof(void *) * (size_t)total);
	long n = 0;
	while ((pages[n] = za_alloc_pages(mm, ZA_GFP_NOWAIT, 0)))
		n++;
	CHECK_EQ(za_stat(mm, "nr_sections"), total / SECTION_PAGES);
	CHECK_EQ(za_stat(mm, "nr_managed_pages"), total);
	for (unsigned long pfn = 0; pfn < (unsigned long)total; pfn += 997)
		check_round_trip(mm, pfn);
	check_round_trip(mm, (unsigned long)total - 1);
	for (long i = 0; i < n; i++)
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* Eager: every section at creation. */
	mm = test_mm("memory=256M,zones=DMA32:64M+Normal,cpus=1,kswapd=0,section_size=16M");
	CHECK_EQ(za_stat(mm, "nr_sections"), total / SECTION_PAGES);
	CHECK_EQ(za_stat(mm, "nr_managed_pages"), total);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

static long free_blocks_from(za_mm_t *mm, unsigned int order)
{
	char name[64];
	long n = 0;
	for (; order <= 10; order++) {
		snprintf(name, sizeof(name), "nr_free_blocks_order%u", order);
		n += za_stat(mm, name);
	}
	return n;
}

/*
 * A zone whose free memory is all in small pieces grows by a fresh
 * max-order block for a large request, however many pages it has free:
 * the request must not fail while the system has memory it never used.
 */
static void test_grow_when_fragmented(void)
{
	/* Small watermarks: the zone grows only when it must. */
	za_mm_t *mm = test_mm("memory=512M,zones=Normal,cpus=1,kswapd=0,deferred_init=1,"
			      "pcp_high_order=0,min_free_kbytes=128,watermark_scale_factor=1");
	/* Order-1 blocks: not cached per CPU (pcp_high_order=0), so the free
	 * lists show exactly what is free. */
	long n = 0, cap = 32768;
	void **pages = malloc(sizeof(void *) * (size_t)cap);
	while (n < 8192 || free_blocks_from(mm, 10)) {
		CHECK(n < cap);
		CHECK((pages[n++] = za_alloc_pages(mm, 0, 1)));
	}
	/* Every other one back, but the last (alone in its block, it would
	 * give the block back whole): plenty free, nothing as large as 4 MiB. */
	for (long i = 0; i < n - 1; i += 2)
		CHECK_EQ(za_free_pages(mm, pages[i], 1), 0);
	CHECK(za_stat(mm, "nr_free_pages") >= n - 2);
	CHECK_EQ(free_blocks_from(mm, 10), 0);

	long grown = za_stat(mm, "zone_grow_pages"), managed = za_stat(mm, "nr_managed_pages");
	char *big = za_alloc_pages(mm, ZA_GFP_MOVABLE | ZA_GFP_NOWAIT, 10);
	CHECK(big);
	memset(big, 7, 4 << 20);
	CHECK_EQ(za_stat(mm, "zone_grow_pages"), grown + 1024);
	CHECK_EQ(za_page_to_pfn(mm, za_virt_to_page(mm, big)), managed);
	CHECK(za_verify(mm) == 0);

	CHECK_EQ(za_free_pages(mm, big, 10), 0);
	for (long i = 1; i < n; i += 2)
		CHECK_EQ(za_free_pages(mm, pages[i], 1), 0);
	if (n % 2)
		CHECK_EQ(za_free_pages(mm, pages[n - 1], 1), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/*
 * Under an address-space limit a system larger than the limit is created
 * (it takes address space only as it grows), allocates until the OS
 * refuses the next section, then fails with ENOMEM -- and is whole again
 * once it gives its pages back.  In a child: the limit is the process's.
 */
static void limited_child(void)
{
	struct rlimit as = { 512UL << 20, 512UL << 20 };
	CHECK(setrlimit(RLIMIT_AS, &as) == 0);
	za_mm_t *mm = test_mm("memory=8G,zones=Normal,cpus=1,kswapd=0,deferred_init=1,"
			      "max_order=10,section_size=16M");
	long cap = 1 << 20, n = 0;
	void **blocks = mmap(NULL, sizeof(void *) * (size_t)cap, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(blocks != MAP_FAILED);
	while (n < cap && (blocks[n] = za_alloc_pages(mm, 0, 8)))
		n++;
	CHECK_EQ(errno, ENOMEM);
	long mib = n;                                   /* order 8: 1 MiB each */
	CHECK(mib > 256 && mib < 512);
	CHECK(za_stat(mm, "section_add_fail") > 0);
	CHECK(za_stat(mm, "nr_sections") * 16 <= 512);
	check_accounting(mm, n << 8);
	for (long i = 0; i < n; i++)
		CHECK_EQ(za_free_pages(mm, blocks[i], 8), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
	exit(0);
}

static void test_address_space_limit(void)
{
#ifdef ZA_ASAN
	printf("test_sparse: address-space limit skipped (ASan's shadow needs terabytes)\n");
	return;
#endif
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid)
		limited_child();
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* memory=20M in 16M sections: the second section is mapped whole, but its
 * last 12M are no memory of the system -- no pfn, no descriptor to free. */
static void test_partial_last_section(void)
{
	za_mm_t *mm = test_mm("memory=20M,zones=Normal,cpus=1,kswapd=0,section_size=16M");
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	char *last = za_page_to_virt(mm, za_pfn_to_page(mm, 5119));
	char *beyond = last + 8 * 4096;          /* in the mapping, past the end */
	CHECK(za_virt_to_page(mm, last) != NULL);
	CHECK(za_virt_to_page(mm, beyond) == NULL);
	CHECK_EQ(za_free_pages_exact(mm, beyond, 3 * 4096), -1);
	CHECK_EQ(za_resize_pages_exact(mm, beyond, 3 * 4096, 4096), -1);
	CHECK_EQ(za_free_pages(mm, beyond, 0), -1);
	CHECK_EQ(cap.count, 3);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void test_section_size_key(void)
{
	static const char *bad[] = {
		"section_size=3M", "section_size=1M", "section_size=128G",
		"max_order=12,section_size=8M",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		CHECK(za_mm_create(bad[i]) == NULL);
		CHECK_EQ(errno, EINVAL);
		CHECK_STR_HAS(za_last_error(), "section_size");
	}
	/* auto: 64M, no more than a quarter of the memory, at least the
	 * max-order block */
	za_mm_t *mm = test_mm("memory=1G,zones=Normal,max_order=12,deferred_init=1");
	CHECK_STR_HAS(za_mm_config_string(mm), "section_size=64M");
	CHECK_EQ(za_mm_destroy(mm), 0);
	mm = test_mm("memory=64M,zones=Normal,max_order=10");
	CHECK_STR_HAS(za_mm_config_string(mm), "section_size=16M");
	CHECK_EQ(za_mm_destroy(mm), 0);
	mm = test_mm("memory=256M,zones=Normal,max_order=14");
	CHECK_STR_HAS(za_mm_config_string(mm), "section_size=64M");
	CHECK_EQ(za_stat(mm, "nr_sections"), 4);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Does the near table say what the section map says of addr, and give
 * the same slab info word? */
static bool near_agrees(const struct sparse_view *v, const char *addr)
{
	_Atomic uint32_t *word;
	bool near = view_near_slab_info(v, addr, &word);
	return near == view_has(v, addr) && (!near || word == view_slab_info(v, addr));
}

/* The near table answers for every page of every section and for the
 * addresses around them as the map does; a section it does not reach is
 * still the arena's, through the map. */
static void test_near_table(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0,section_size=16M");
	const struct sparse_view *v = &mm->view;
	CHECK_EQ(load_relaxed(&v->near_n), NEAR_PIECES);
	for (unsigned long pfn = 0; pfn < 4 * SECTION_PAGES; pfn++) {
		char *page = za_page_to_virt(mm, za_pfn_to_page(mm, pfn));
		_Atomic uint32_t *word;
		CHECK(view_near_slab_info(v, page + pfn % 4096, &word));
		CHECK(word == view_slab_info(v, page));
		CHECK(near_agrees(v, page - 1) && near_agrees(v, page + 4096));
	}
	int local;
	CHECK(near_agrees(v, (char *)&local) && near_agrees(v, NULL));
	/* The last section's memory beyond `memory`: no pfns, no slab. */
	za_mm_t *part = test_mm("memory=20M,zones=Normal,cpus=1,kswapd=0,section_size=16M");
	char *beyond = (char *)za_page_to_virt(part, za_pfn_to_page(part, 5119)) + 8 * 4096;
	_Atomic uint32_t *w;
	CHECK(view_near_slab_info(&part->view, beyond, &w) && *w == 0);
	CHECK(near_agrees(&part->view, beyond));
	CHECK_EQ(za_mm_destroy(part), 0);
	CHECK(near_agrees(v, (char *)UINTPTR_MAX) && near_agrees(v, (char *)(UINTPTR_MAX >> 17)));

	struct sparse_view moved;
	view_copy(&moved, v);
	store_relaxed(&moved.near_base, load_relaxed(&moved.near_base) + NEAR_PIECES);
	char *first = za_page_to_virt(mm, za_pfn_to_page(mm, 0));
	_Atomic uint32_t *word;
	CHECK(!view_near_slab_info(&moved, first, &word) && view_has(&moved, first));
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* The malloc with no section in its near table: every free takes the
 * full checks, which find every object, and contents are kept. */
static void test_malloc_beyond_near_table(void)
{
	void *small = za_malloc(16);            /* the malloc's system exists */
	_Atomic uint32_t *word;
	CHECK(view_near_slab_info(&malloc_arena, small, &word));        /* its fast path's */
	CHECK(word == view_slab_info(&malloc_arena, small));
	za_free(small);
	unsigned long near_n = atomic_load(&malloc_arena.near_n);
	uint64_t checked = atomic_load(&zm.checked_small_frees);
	atomic_store(&malloc_arena.near_n, 0);
	enum { N = 3000 };
	static unsigned char *p[N];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			size_t n = 1 + (size_t)(i * 37 % 20000);
			CHECK((p[i] = za_malloc(n)));
			memset(p[i], i & 0xff, n);
		}
		for (int i = 0; i < N; i += 2) {
			size_t n = 1 + (size_t)(i * 37 % 20000);
			CHECK_EQ(p[i][n - 1], i & 0xff);
			CHECK(za_malloc_usable_size(p[i]) >= n);
			za_free(p[i]);
		}
		for (int i = 1; i < N; i += 2)
			za_free(p[i]);
	}
	CHECK(za_verify(za_malloc_system()) == 0);
	/* every free of a small object was counted as checked */
	size_t smalls = 0;
	for (int i = 0; i < N; i++)
		smalls += (1 + (size_t)(i * 37 % 20000)) <= SMALL_MAX;
	CHECK_EQ(atomic_load(&zm.checked_small_frees) - checked, 3 * smalls);
	atomic_store(&malloc_arena.near_n, near_n);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "sections_on_demand", test_sections_on_demand },
		{ "grow_when_fragmented", test_grow_when_fragmented },
		{ "address_space_limit", test_address_space_limit },
		{ "partial_last_section", test_partial_last_section },
		{ "section_size_key", test_section_size_key },
		{ "near_table", test_near_table },
		{ "malloc_beyond_near_table", test_malloc_beyond_near_table },
	};
	return run_test_cases("test_sparse", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
