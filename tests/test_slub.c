/*
 * SLUB object caches: the kernel's slab order calculation on hand-computed
 * cases (including seed 002's 224-CPU server), alignment and placement,
 * constructors, shrinking, destroy, exact accounting back to the buddy
 * lists (slabs of the fallback order too), and a multi-threaded run with
 * remote frees where every object carries a tag and an owner flag (no
 * object is handed out twice).
 */
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

struct order_case {
	const char *config;
	size_t size;
	unsigned int order, objects, cpu_partial_slabs;
	unsigned int flags, sheaf_capacity;     /* slub_sheaves: sheaf_capacity given flags */
};

/* min_objects = 4 * (fls(nr_cpus) + 1), doubled by slub_big_system when
 * nr_cpus >= 32; the first order from get_order(min_objects * size) up to
 * slub_max_order that wastes at most 1/16, then 1/8, 1/4, 1/2. */
static const struct order_case order_cases[] = {
	/* 12 objects wanted; 4096 % 64 == 0: order 0, 64 objects; 120 * 2 / 64 -> 4 */
	{ "nr_cpus=2", 64, 0, 64, 4, 0, 0 },
	/* 20 wanted (3840 bytes): order 0 wastes 64 <= 256; 120 * 2 / 21 -> 12 */
	{ "nr_cpus=8", 192, 0, 21, 12, 0, 0 },
	/* 20 wanted, but order 3 holds only 16: order 3 */
	{ "nr_cpus=8", 2048, 3, 16, 3, 0, 0 },
	/* 20 wanted (14000 bytes): order 2 wastes 284 <= 1024 */
	{ "nr_cpus=8", 700, 2, 23, 5, 0, 0 },
	/* 16 wanted, 10 fit in order 3, which wastes 2768: > 1/16, <= 1/8 */
	{ "nr_cpus=4", 3000, 3, 10, 5, 0, 0 },
	/* Seed 002, a 224-CPU server, a 200-byte vma: 36 objects, order 1 ... */
	{ "nr_cpus=224,slub_big_system=0", 200, 1, 40, 6, 0, 0 },
	/* ... doubled to 72 with the patch: order 2; cpu partial 120 -> 240 objects */
	{ "nr_cpus=224,slub_big_system=1,slub_max_order=4", 200, 2, 81, 6, 0, 0 },
	/* 1024 bytes: order 3 (32 objects) before, order 4 (64) after */
	{ "nr_cpus=224,slub_big_system=0", 1024, 3, 32, 2, 0, 0 },
	{ "nr_cpus=224,slub_big_system=1,slub_max_order=4", 1024, 4, 64, 2, 0, 0 },
	/* Below 32 CPUs the switch changes nothing. */
	{ "nr_cpus=16,slub_big_system=1", 1024, 3, 32, 2, 0, 0 },
	/* An explicit slub_min_objects is not doubled. */
	{ "nr_cpus=224,slub_big_system=1,slub_max_order=4,slub_min_objects=4", 1024, 0, 4, 24, 0, 0 },
	/* Nothing fits slub_max_order=0: the smallest order that holds one. */
	{ "nr_cpus=8,slub_max_order=0", 5000, 1, 1, 12, 0, 0 },
	/* slub_min_order raises small caches. */
	{ "nr_cpus=8,slub_min_order=2", 64, 2, 256, 1, 0, 0 },
	/* Sheaves, 7.0: 60 under 256 bytes, 26 under 1024, 12 under a page,
	 * 4 beyond, each grown to fill its kmalloc bucket with the kernel's
	 * 32-byte header (26 -> 240 bytes -> kmalloc-256 -> 28), at least 32
	 * for a cache that asks; no CPU partial list under them.  6.18: 32
	 * for the caches that ask, none for the rest.  None for debug caches. */
	{ "nr_cpus=2,kernel=7.0", 64, 0, 64, 0, 0, 60 },
	{ "nr_cpus=2,kernel=7.0", 256, 0, 16, 0, 0, 28 },
	{ "nr_cpus=2,kernel=7.0", 1024, 2, 16, 0, 0, 12 },
	{ "nr_cpus=2,kernel=7.0", 4096, 3, 8, 0, 0, 4 },
	{ "nr_cpus=2,kernel=7.0", 1024, 2, 16, 0, ZA_SLAB_SHEAVES, 32 },
	{ "nr_cpus=2,kernel=7.0", 64, 0, 64, 0, ZA_SLAB_SHEAVES, 60 },
	{ "nr_cpus=2,kernel=6.18", 200, 0, 20, 12, ZA_SLAB_SHEAVES, 32 },
	{ "nr_cpus=2,kernel=6.18", 200, 0, 20, 12, 0, 0 },
	{ "nr_cpus=2,kernel=6.12", 200, 0, 20, 12, ZA_SLAB_SHEAVES, 0 },
	{ "nr_cpus=2,kernel=7.0,slub_debug=F", 64, 0, 64, 0, 0, 0 },
};

static void test_order_calculation(void)
{
	for (size_t i = 0; i < sizeof(order_cases) / sizeof(order_cases[0]); i++) {
		const struct order_case *c = &order_cases[i];
		char config[256];
		snprintf(config, sizeof(config), "memory=64M,zones=Normal,%s", c->config);
		za_mm_t *mm = test_mm(config);
		za_cache_t *cache = za_cache_create(mm, "t", c->size, 0, c->flags, NULL);
		CHECK(cache);
		struct za_cache_info info;
		za_cache_info(cache, &info);
		if (info.order != c->order || info.objects != c->objects ||
		    info.cpu_partial_slabs != c->cpu_partial_slabs ||
		    info.sheaf_capacity != c->sheaf_capacity) {
			fprintf(stderr, "%s size %zu flags %#x: order %u objects %u cpu_partial_slabs %u "
					"sheaf_capacity %u, expected %u %u %u %u\n", c->config, c->size,
				c->flags, info.order, info.objects, info.cpu_partial_slabs,
				info.sheaf_capacity, c->order, c->objects, c->cpu_partial_slabs,
				c->sheaf_capacity);
			exit(1);
		}
		/* slabinfo shows the same. */
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		za_report(mm, "slabinfo", f);
		fclose(f);
		char expect[64];
		snprintf(expect, sizeof(expect), " %4u %4u : tunables", c->objects, 1u << c->order);
		CHECK_STR_HAS(text, expect);
		free(text);
		CHECK_EQ(za_cache_destroy(cache), 0);
		CHECK_EQ(za_mm_destroy(mm), 0);
	}
}

/* The pfn of the slab (a block of that order) holding obj. */
static unsigned long slab_of(za_mm_t *mm, const void *obj, unsigned int order)
{
	return za_page_to_pfn(mm, za_virt_to_page(mm, obj)) & ~((1UL << order) - 1);
}

/*
 * An object lies in a slab of its cache: in a block of the cache's order
 * (slabs are page-allocator blocks, aligned to their size), at a multiple
 * of the stride, below objects-per-slab strides.  Which cache a slab
 * belongs to is not public: another cache refuses it as "an object of
 * another cache" (and leaves it allocated), its own cache frees it.
 */
static void check_in_own_slab(za_mm_t *mm, za_cache_t *c, za_cache_t *foreign, void *obj,
			      struct captured *cap)
{
	struct za_cache_info info;
	za_cache_info(c, &info);
	unsigned long head = slab_of(mm, obj, info.order);
	size_t off = (size_t)((char *)obj - (char *)za_page_to_virt(mm, za_pfn_to_page(mm, head)));
	CHECK(off % info.size == 0 && off / info.size < info.objects);
	int reports = cap->count;
	CHECK_EQ(za_cache_free(foreign, obj), -1);
	CHECK_EQ(cap->count, reports + 1);
	CHECK_STR_HAS(cap->last, "an object of another cache");
	/* Every offset inside the stride is refused by its own cache too. */
	for (size_t k = 1; k < info.size; k += k < 16 ? 1 : info.size / 7 + 1) {
		CHECK_EQ(za_cache_free(c, (char *)obj + k), -1);
		CHECK_EQ(cap->count, reports + 2);
		CHECK_STR_HAS(cap->last, "not the start of an object");
		reports++;
	}
}

static void test_alignment_and_placement(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=2");
	static const size_t aligns[] = { 0, 8, 16, 64, 256, 4096 };
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	za_cache_t *foreign = za_cache_create(mm, "foreign", 64, 0, 0, NULL);
	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
		for (size_t size = 1; size < 3000; size = size * 3 + 1) {
			za_cache_t *c = za_cache_create(mm, "aligned", size, aligns[a], 0, NULL);
			CHECK(c);
			struct za_cache_info info;
			za_cache_info(c, &info);
			void *objs[200];
			for (int i = 0; i < 200; i++) {
				CHECK((objs[i] = za_cache_alloc(c, ZA_GFP_ZERO)));
				CHECK(((uintptr_t)objs[i] & (info.align - 1)) == 0);
				CHECK(aligns[a] == 0 || ((uintptr_t)objs[i] & (aligns[a] - 1)) == 0);
				for (size_t b = 0; b < size; b++)
					CHECK(((unsigned char *)objs[i])[b] == 0);
				memset(objs[i], 0xab, size);
				check_in_own_slab(mm, c, foreign, objs[i], &cap);
			}
			CHECK_EQ(za_cache_stat(c, "order_fallback"), 0);   /* every slab of info.order */
			for (int i = 0; i < 200; i++)
				CHECK_EQ(za_cache_free(c, objs[i]), 0);
			CHECK_EQ(za_cache_destroy(c), 0);
		}
	}
	CHECK_EQ(za_cache_destroy(foreign), 0);
	/* HWCACHE_ALIGN rounds to cache lines, or to a fraction for small objects. */
	za_cache_t *c = za_cache_create(mm, "hw", 40, 0, ZA_SLAB_HWCACHE_ALIGN, NULL);
	struct za_cache_info info;
	za_cache_info(c, &info);
	CHECK_EQ(info.align, 64);
	CHECK_EQ(info.size, 64);
	CHECK_EQ(za_cache_destroy(c), 0);
	c = za_cache_create(mm, "hw-small", 20, 0, ZA_SLAB_HWCACHE_ALIGN, NULL);
	za_cache_info(c, &info);
	CHECK_EQ(info.align, 32);
	CHECK_EQ(za_cache_destroy(c), 0);

	/* Bad arguments. */
	errno = 0;
	CHECK(!za_cache_create(mm, "x", 0, 0, 0, NULL) && errno == EINVAL);
	CHECK(!za_cache_create(mm, "x", 64, 24, 0, NULL) && errno == EINVAL);
	CHECK(!za_cache_create(mm, "x", 64, 0, 1u << 20, NULL) && errno == EINVAL);
	CHECK(!za_cache_create(mm, "", 64, 0, 0, NULL) && errno == EINVAL);
	CHECK(!za_cache_create(mm, "x", 64u << 20, 0, 0, NULL) && errno == EINVAL);
	CHECK_STR_HAS(za_last_error(), "za_cache_create(x)");
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* The constructor runs once per object, when its slab is made; objects
 * come out constructed and are returned constructed. */
static atomic_long ctor_calls;

static void ctor(void *p)
{
	atomic_fetch_add(&ctor_calls, 1);
	memset(p, 0x5c, 48);
}

static void test_constructor(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=2");
	atomic_store(&ctor_calls, 0);
	za_cache_t *c = za_cache_create(mm, "ctor", 48, 0, 0, ctor);
	struct za_cache_info info;
	za_cache_info(c, &info);
	void *objs[5000];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 5000; i++) {
			CHECK((objs[i] = za_cache_alloc(c, 0)));
			for (int b = 0; b < 48; b++)
				CHECK(((unsigned char *)objs[i])[b] == 0x5c);
		}
		for (int i = 0; i < 5000; i++)
			CHECK_EQ(za_cache_free(c, objs[i]), 0);
	}
	long long slabs = za_cache_stat(c, "alloc_slab");
	CHECK(slabs > 0);
	CHECK_EQ(atomic_load(&ctor_calls), slabs * info.objects);
	CHECK(atomic_load(&ctor_calls) < 3 * 5000);       /* not once per allocation */
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * za_cache_shrink sorts the partial slabs as the kernel's does: the fewest
 * free objects first, so the next allocations fill the fullest slab; the
 * empty one is freed.
 */
static void test_shrink_sorts_partial(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0");
	za_cache_t *c = za_cache_create(mm, "sorted", 200, 0, 0, NULL);
	struct za_cache_info info;
	za_cache_info(c, &info);
	enum { SLABS = 4, MAX_OBJS = 4096 };
	CHECK(info.objects > 8 && SLABS * info.objects <= MAX_OBJS);
	/* Whole slabs of objects: allocate until SLABS slabs are full. */
	static void *objs[MAX_OBJS];
	unsigned long slab[SLABS];
	unsigned int n = 0, count[SLABS] = { 0 };
	void **mine[SLABS];
	for (int s = 0; s < SLABS; s++)
		mine[s] = calloc(info.objects, sizeof(void *));
	while (n < MAX_OBJS) {
		CHECK((objs[n] = za_cache_alloc(c, 0)));
		unsigned long at = slab_of(mm, objs[n++], info.order);
		int s = 0;
		for (; s < SLABS && count[s] && slab[s] != at; s++)
			;
		if (s == SLABS)
			continue;               /* a slab beyond the first ones */
		slab[s] = at;
		mine[s][count[s]++] = objs[n - 1];
		if (count[SLABS - 1] == info.objects)
			break;
	}
	for (int s = 0; s < SLABS; s++)
		CHECK_EQ(count[s], info.objects);
	/* Free: 5 of slab 0, 2 of slab 1, all of slab 2, 7 of slab 3. */
	const unsigned int frees[SLABS] = { 5, 2, info.objects, 7 };
	for (int s = 0; s < SLABS; s++)
		for (unsigned int i = 0; i < frees[s]; i++)
			CHECK_EQ(za_cache_free(c, mine[s][i]), 0);
	CHECK(za_cache_shrink(c) >= 1);                 /* slab 2, empty */
	for (int i = 0; i < 2; i++) {                   /* slab 1's two free objects */
		void *p = za_cache_alloc(c, 0);
		CHECK_EQ(slab_of(mm, p, info.order), slab[1]);
		mine[1][i] = p;
	}
	for (int s = 0; s < SLABS; s++) {
		for (unsigned int i = s == 1 ? 0 : frees[s]; i < info.objects && s != 2; i++)
			CHECK_EQ(za_cache_free(c, mine[s][i]), 0);
		free(mine[s]);
	}
	for (unsigned int i = 0; i < n; i++) {          /* the rest: beyond the four slabs */
		unsigned long at = slab_of(mm, objs[i], info.order);
		bool counted = false;
		for (int s = 0; s < SLABS; s++)
			counted |= at == slab[s];
		if (!counted)
			CHECK_EQ(za_cache_free(c, objs[i]), 0);
	}
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Shrink frees every empty slab; destroy refuses while objects live; after
 * everything is freed and shrunk, every page is back in the buddy lists. */
static void test_shrink_destroy_accounting(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=2,kswapd=0");
	long total = za_stat(mm, "nr_managed_pages");
	za_cache_t *c = za_cache_create(mm, "acct", 200, 0, 0, NULL);
	enum { N = 20000 };
	void **objs = calloc(N, sizeof(void *));
	for (int i = 0; i < N; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	CHECK(za_stat(mm, "nr_slab_pages") > 0);
	/* Free all but 3 objects, then destroy: the three are reported. */
	for (int i = 3; i < N; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK_EQ(za_cache_destroy(c), 3);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "3 objects still allocated");
	/* The cache is still usable.  Destroy's shrink left only the slabs of
	 * the three objects; freed, those stay (fewer than min_partial), all
	 * empty: the shrink must free exactly them. */
	struct za_cache_info info;
	za_cache_info(c, &info);
	long slabs = 0;
	for (int i = 0; i < 3; i++) {
		bool seen = false;
		for (int j = 0; j < i; j++)
			seen |= slab_of(mm, objs[j], info.order) == slab_of(mm, objs[i], info.order);
		slabs += !seen;
	}
	CHECK_EQ(za_stat(mm, "nr_slab_pages"), slabs << info.order);   /* the only cache with slabs */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	CHECK_EQ(za_cache_stat(c, "alloc_slab") - za_cache_stat(c, "free_slab"), slabs);
	CHECK_EQ(za_cache_shrink(c), slabs);
	CHECK_EQ(za_cache_stat(c, "alloc_slab") - za_cache_stat(c, "free_slab"), 0);
	CHECK_EQ(za_stat(mm, "nr_slab_pages"), 0);
	CHECK_EQ(za_cache_shrink(c), 0);
	CHECK_EQ(za_cache_destroy(c), 0);

	/* kmalloc caches too: shrink them all and every page is free again. */
	for (int i = 0; i < N; i++)
		CHECK((objs[i] = za_kmalloc(mm, (size_t)(i % 2000) + 1, 0)));
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_kfree(mm, objs[i]), 0);
	za_shrink_slabs(mm);
	CHECK_EQ(za_stat(mm, "nr_slab_pages"), 0);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), total);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(objs);
}

/* kmalloc: every size class, the large path, ksize, krealloc, kzalloc. */
static void test_kmalloc(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=2");
	static const size_t classes[] = { 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192 };
	size_t prev = 0;
	for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++) {
		for (size_t size = prev + 1; size <= classes[k]; size += (classes[k] - prev + 6) / 7) {
			char *p = za_kmalloc(mm, size, 0);
			CHECK(p);
			CHECK_EQ(za_ksize(mm, p), classes[k]);
			memset(p, 0x77, size);
			CHECK_EQ(za_kfree(mm, p), 0);
		}
		prev = classes[k];
	}
	/* Large: straight from the page allocator, order from the size. */
	char *big = za_kmalloc(mm, 8193, 0);
	CHECK(big);
	CHECK_EQ(za_ksize(mm, big), 16384);
	CHECK(((uintptr_t)big & 16383) == 0);
	CHECK_EQ(za_kfree(mm, big), 0);
	big = za_kmalloc(mm, 4u << 20, 0);
	CHECK(big);
	CHECK_EQ(za_kfree(mm, big), 0);
	errno = 0;
	CHECK(za_kmalloc(mm, (4u << 20) + 1, 0) == NULL);
	CHECK_EQ(errno, ENOMEM);

	/* kzalloc zeroes; krealloc keeps contents, grows and shrinks. */
	unsigned char *z = za_kmalloc(mm, 100, 0);
	memset(z, 0xee, 100);
	CHECK_EQ(za_kfree(mm, z), 0);
	z = za_kzalloc(mm, 100, 0);
	for (int i = 0; i < 100; i++)
		CHECK(z[i] == 0);
	for (int i = 0; i < 100; i++)
		z[i] = (unsigned char)i;
	unsigned char *r = za_krealloc(mm, z, 5000, 0);
	CHECK(r && za_ksize(mm, r) == 8192);
	for (int i = 0; i < 100; i++)
		CHECK(r[i] == i);
	unsigned char *r2 = za_krealloc(mm, r, 50, 0);
	CHECK(r2 == r);                       /* fits where it is */
	r2 = za_krealloc(mm, r2, 20000, 0);
	for (int i = 0; i < 50; i++)
		CHECK(r2[i] == i);
	CHECK(za_krealloc(mm, r2, 0, 0) == NULL);
	CHECK_EQ(za_kfree(mm, NULL), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * kfree, ksize and krealloc take only kmalloc's blocks: a large kmalloc
 * block is marked as such, other page-allocator blocks (plain, quicklist)
 * are reported and left alone, and the mark goes with the kfree.
 */
static void test_kmalloc_rejects_other_pages(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,kswapd=0");
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	void *page = za_alloc_pages(mm, 0, 2), *ql = za_quicklist_alloc(mm, 0, 0, NULL);
	CHECK(page && ql);
	CHECK_EQ(za_kfree(mm, page), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(cap.last, "za_kfree");
	CHECK_STR_HAS(cap.last, "not from kmalloc");
	CHECK_EQ(za_kfree(mm, ql), -1);
	CHECK_STR_HAS(cap.last, "not from kmalloc");
	errno = 0;
	CHECK_EQ(za_ksize(mm, page), 0);
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(cap.last, "za_ksize");
	CHECK(za_krealloc(mm, page, 100000, 0) == NULL);
	CHECK_STR_HAS(cap.last, "za_krealloc");
	CHECK_EQ(cap.count, 4);
	/* Still theirs: freed by their own allocators. */
	CHECK_EQ(za_free_pages(mm, page, 2), 0);
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, ql), 0);

	/* A large kmalloc block, freed twice; the page allocator hands the
	 * same block out again (LIFO per-CPU list), no longer kmalloc's. */
	char *big = za_kmalloc(mm, 3 * 4096, 0);
	CHECK(big);
	CHECK_EQ(za_ksize(mm, big), 16384);
	CHECK_EQ(za_kfree(mm, big + 4096), -1);
	CHECK_STR_HAS(cap.last, "not the start of a kmalloc'ed block");
	CHECK_EQ(za_kfree(mm, big), 0);
	CHECK_EQ(za_kfree(mm, big), -1);
	CHECK_STR_HAS(cap.last, "not the start of a kmalloc'ed block");
	CHECK(za_alloc_pages(mm, 0, 2) == big);
	CHECK_EQ(za_kfree(mm, big), -1);
	CHECK_STR_HAS(cap.last, "not from kmalloc");
	CHECK_EQ(za_free_pages(mm, big, 2), 0);
	CHECK_EQ(cap.count, 7);
	CHECK_EQ(za_stat(mm, "bad_free"), 0);     /* nothing reached the page allocator */
	CHECK_EQ(za_quicklist_shrink(mm), 1);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* ------------------------------------------------------------------------
 * Threads, remote frees, ownership
 * ------------------------------------------------------------------------ */
enum { THREADS = 4, SLOTS = 512, SHARED = 64, OBJ = 96, ROUNDS = 60000 };

static za_mm_t *smm;
static za_cache_t *scache;
static _Atomic unsigned char *owned;            /* per 32 bytes of the arena, by pfn */
static _Atomic(uint64_t *) shared[SHARED];

static _Atomic unsigned char *owner_flag(void *p)
{
	unsigned long pfn = za_page_to_pfn(smm, za_virt_to_page(smm, p));
	return &owned[(pfn * ZA_PAGE_SIZE + ((uintptr_t)p & (ZA_PAGE_SIZE - 1))) / 32];
}

static void take(uint64_t *p, uint64_t tag)
{
	CHECK(atomic_exchange(owner_flag(p), 1) == 0);
	for (int i = 0; i < OBJ / 8; i++)
		p[i] = tag ^ (uint64_t)i;
}

/* An object freed with za_cache_free_rcu keeps its owner flag until the
 * grace period ends (za_rcu_barrier after the threads): handed out again
 * before that, it trips take's check. */
enum { MAX_WAITING = THREADS * ROUNDS };
static void **waiting;
static atomic_long nr_waiting;
static bool rcu_frees;                  /* one free in eight, in threads_rcu */

static void give(uint64_t *p)
{
	uint64_t tag = p[0];
	for (int i = 0; i < OBJ / 8; i++)
		CHECK(p[i] == (tag ^ (uint64_t)i));
	if (rcu_frees && tag % 8 == 0) {
		waiting[atomic_fetch_add(&nr_waiting, 1)] = p;
		CHECK_EQ(za_cache_free_rcu(scache, p), 0);
		return;
	}
	CHECK(atomic_exchange(owner_flag(p), 0) == 1);
	CHECK_EQ(za_cache_free(scache, p), 0);
}

/* The grace period's end: what waited is free, and no one's. */
static void end_grace_period(void)
{
	za_rcu_barrier(smm);
	for (long i = 0; i < atomic_load(&nr_waiting); i++)
		CHECK(atomic_exchange(owner_flag(waiting[i]), 0) == 1);
	atomic_store(&nr_waiting, 0);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned long long rng = 0x1234567ULL * (unsigned long long)(id + 1);
	uint64_t *mine[SLOTS] = { 0 };
	for (long n = 0; n < ROUNDS; n++) {
		int k = (int)(test_rand(&rng) % SLOTS);
		if (!mine[k]) {
			CHECK((mine[k] = za_cache_alloc(scache, 0)));
			take(mine[k], ((uint64_t)id << 48) | (uint64_t)n);
		} else if (test_rand(&rng) % 4) {
			give(mine[k]);
			mine[k] = NULL;
		} else {                /* another thread will free it */
			uint64_t *old = atomic_exchange(&shared[test_rand(&rng) % SHARED], mine[k]);
			mine[k] = NULL;
			if (old)
				give(old);
		}
	}
	for (int k = 0; k < SLOTS; k++)
		if (mine[k])
			give(mine[k]);
	return NULL;
}

static void threads(const char *config)
{
	waiting = calloc(MAX_WAITING, sizeof(void *));
	smm = test_mm(config);
	scache = za_cache_create(smm, "threads", OBJ, 0, 0, NULL);
	owned = calloc((size_t)za_stat(smm, "nr_managed_pages") * ZA_PAGE_SIZE / 32, 1);
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(za_verify(smm) == 0);         /* quiescent, shared objects still live */
	for (int i = 0; i < SHARED; i++) {
		uint64_t *p = atomic_exchange(&shared[i], NULL);
		if (p)
			give(p);
	}
	end_grace_period();
	CHECK_EQ(za_cache_stat(scache, "bad_free"), 0);
	struct za_cache_info info;
	za_cache_info(scache, &info);
	if (info.sheaf_capacity)        /* every CPU frees into its sheaves */
		CHECK(za_cache_stat(scache, "free_fastpath") > 0);
	else if (!info.debug)           /* debug caches have no CPU slabs */
		CHECK(za_cache_stat(scache, "free_slowpath") > 0);      /* remote frees happened */
	CHECK(za_verify(smm) == 0);
	CHECK_EQ(za_cache_destroy(scache), 0);
	za_shrink_slabs(smm);
	za_drain_all_pages(smm);
	CHECK_EQ(za_stat(smm, "nr_free_pages"), za_stat(smm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(smm), 0);
	free(owned);
	free(waiting);
}

/* Bulk: all n or none, every object distinct and of the cache, and the
 * frees of whole runs of one slab keep the accounting exact.  With
 * sheaves, what they hold goes first and the rest to the slabs. */
static void bulk(const char *config)
{
	za_mm_t *mm = test_mm(config);
	za_cache_t *c = za_cache_create(mm, "bulk", 48, 0, 0, NULL);
	enum { N = 3000 };
	void **objs = calloc(N, sizeof(void *));
	CHECK_EQ(za_cache_alloc_bulk(c, ZA_GFP_ZERO, N, objs), N);
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 48; k++)
			CHECK_EQ(((unsigned char *)objs[i])[k], 0);
		memset(objs[i], i & 0xff, 48);
	}
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 48; k++)
			CHECK_EQ(((unsigned char *)objs[i])[k], i & 0xff);   /* no overlap */
	/* Interleave halves so that runs of one slab are broken up too. */
	za_cache_free_bulk(c, N / 2, objs);
	for (int i = N / 2; i + 1 < N; i += 2) {
		void *t = objs[i];
		objs[i] = objs[i + 1];
		objs[i + 1] = t;
	}
	za_cache_free_bulk(c, N - N / 2, objs + N / 2);
	CHECK_EQ(za_cache_stat(c, "bad_free"), 0);
	/* A foreign pointer in a batch is reported, the rest freed. */
	CHECK_EQ(za_cache_alloc_bulk(c, 0, 2, objs), 2);
	struct za_cache_info info;
	za_cache_info(c, &info);
	if (info.sheaf_capacity)        /* the frees filled them, the two came from them */
		CHECK(za_cache_stat(c, "free_fastpath") > 0 && za_cache_stat(c, "alloc_fastpath") == 2);
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	void *batch[3] = { objs[0], (char *)objs[1] + 8, objs[1] };
	za_cache_free_bulk(c, 3, batch);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "not the start of an object");
	CHECK_EQ(za_cache_destroy(c), 0);
	za_shrink_slabs(mm);            /* the sheaves were kmalloc objects */
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), za_stat(mm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(objs);
}

/* The system's slab events only grow: a destroyed cache's stay in them. */
static void test_events_survive_destroy(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	za_cache_t *c = za_cache_create(mm, "gone", 64, 0, 0, NULL);
	void *objs[10];
	for (int i = 0; i < 10; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	for (int i = 0; i < 10; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	long long allocs = za_stat(mm, "slab_alloc_fastpath") + za_stat(mm, "slab_alloc_slowpath");
	long long slabs = za_stat(mm, "slab_alloc_slab");
	CHECK(allocs >= 10 && slabs == 1);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_stat(mm, "slab_alloc_fastpath") + za_stat(mm, "slab_alloc_slowpath"), allocs);
	CHECK_EQ(za_stat(mm, "slab_alloc_slab"), 1);
	CHECK_EQ(za_stat(mm, "slab_free_slab"), 1);     /* the shrink before the destroy */
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void test_bulk(void)
{
	bulk("memory=64M,zones=Normal,cpus=2,kswapd=0");
}

static void test_bulk_sheaves(void)
{
	bulk("memory=64M,zones=Normal,cpus=2,kswapd=0,kernel=7.0");
}

/*
 * A bulk allocation that no slab can serve takes its objects from new
 * slabs without linking them: each is handed out once, constructed once
 * with the rest of its slab, and the last slab's remaining objects wait on
 * the node's partial list, where the next allocation finds them.
 */
static void bulk_from_new_slabs(const char *config)
{
	za_mm_t *mm = test_mm(config);
	atomic_store(&ctor_calls, 0);
	za_cache_t *c = za_cache_create(mm, "bulk-new", 48, 0, 0, ctor);
	struct za_cache_info info;
	za_cache_info(c, &info);
	unsigned int n = 2 * info.objects + info.objects / 2;
	CHECK(n < 256);                 /* each object gets its own byte below */
	void *objs[256];
	CHECK_EQ(za_cache_alloc_bulk(c, 0, n, objs), n);
	CHECK_EQ(za_cache_stat(c, "alloc_slab"), 3);
	CHECK_EQ(za_cache_stat(c, "alloc_from_new_slab"), n);
	CHECK_EQ(za_cache_stat(c, "alloc_fastpath"), 0);
	CHECK_EQ(atomic_load(&ctor_calls), 3 * (long)info.objects);
	for (unsigned int i = 0; i < n; i++) {
		for (int k = 0; k < 48; k++)
			CHECK_EQ(((unsigned char *)objs[i])[k], 0x5c);
		memset(objs[i], (int)i, 48);
	}
	for (unsigned int i = 0; i < n; i++)
		for (int k = 0; k < 48; k++)
			CHECK_EQ(((unsigned char *)objs[i])[k], i);     /* no overlap */
	CHECK(za_verify(mm) == 0);
	CHECK((objs[n] = za_cache_alloc(c, 0)));
	CHECK_EQ(za_cache_stat(c, "alloc_slab"), 3);            /* the partial slab's */
	CHECK_EQ(za_cache_stat(c, "node_partial_alloc"), 1);
	CHECK_EQ(((unsigned char *)objs[n])[0], 0x5c);
	za_cache_free_bulk(c, n + 1, objs);
	CHECK_EQ(za_cache_stat(c, "bad_free"), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), za_stat(mm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Memory runs out inside a slab allocation, under the CPU slab's lock:
 * reclaim's slab shrinker must not wait for that lock.  ENOMEM, no hang. */
static void test_exhaustion(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	enum { N = 16 << 14 };
	void **objs = calloc(N, sizeof(void *));
	long n = 0;
	while (n < N && (objs[n] = za_kmalloc(mm, 64, 0)))
		n++;
	CHECK(n > 0 && n < N);
	CHECK_EQ(errno, ENOMEM);
	CHECK(za_stat(mm, "alloc_fail") > 0);
	for (long i = 0; i < n; i++)
		CHECK_EQ(za_kfree(mm, objs[i]), 0);
	za_shrink_slabs(mm);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), za_stat(mm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(objs);
}

/* The num_objs column of the cache's slabinfo line. */
static long slabinfo_objects(za_mm_t *mm, const char *name)
{
	char line[512];
	long objs = -1;
	FILE *f = tmpfile();
	CHECK(f && za_report(mm, "slabinfo", f) == 0);
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		char n[64];
		long active, total;
		if (sscanf(line, "%63s %ld %ld", n, &active, &total) == 3 && !strcmp(n, name))
			objs = total;
	}
	fclose(f);
	return objs;
}

/*
 * With no free block of the preferred order, a cache makes slabs of its
 * fallback order (allocate_slab): memory cut into single pages, every
 * other one allocated, leaves no order-1 block anywhere.  The node counts
 * slabs of either order apart, and the pages, objects and events that
 * follow from them stay exact: slabinfo's object count, nr_slab_pages,
 * alloc_slab against free_slab, and za_verify's walk of every slab.
 */
static void test_order_fallback(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,nr_cpus=2,kswapd=0");
	enum { PAGES = 4096, N = 40 };
	static void *pages[PAGES], *blocks[64];
	static unsigned int block_order[64];
	long npages = 0, nblocks = 0;
	while (npages < PAGES && (pages[npages] = za_alloc_pages(mm, 0, 0)))
		npages++;
	CHECK(npages > 1024);
	for (long i = 0; i < npages; i += 2)            /* every other page back */
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	za_drain_all_pages(mm);
	/* The block the watermarks kept from the single pages, now above them. */
	for (unsigned int order = 10; order > 0; order--)
		while (nblocks < 64 && (blocks[nblocks] = za_alloc_pages(mm, 0, order)))
			block_order[nblocks++] = order;
	CHECK(nblocks > 0);

	za_cache_t *c = za_cache_create(mm, "fallback", 2048, 0, 0, NULL);
	struct za_cache_info info;
	za_cache_info(c, &info);
	long fallback_objects = 4096 / (long)info.size; /* 2 KiB objects fall back to order 0 */
	CHECK(info.order > 0 && info.objects > fallback_objects);
	void *objs[N];
	for (int i = 0; i < N; i++) {
		CHECK((objs[i] = za_cache_alloc(c, 0)));
		memset(objs[i], i, 2048);
	}
	long fallbacks = (long)za_cache_stat(c, "order_fallback");
	CHECK(fallbacks >= N / fallback_objects - 1);   /* every slab but perhaps one */
	/* Nothing freed yet: each fallback made a slab, each other slab is
	 * of the preferred order. */
	long preferred = (long)za_cache_stat(c, "alloc_slab") - fallbacks;
	CHECK_EQ(slabinfo_objects(mm, "fallback"),
		 preferred * (long)info.objects + fallbacks * fallback_objects);
	CHECK_EQ(za_stat(mm, "nr_slab_pages"), (preferred << info.order) + fallbacks);
	CHECK(za_verify(mm) == 0);

	for (int i = 0; i < N; i++) {
		CHECK(((unsigned char *)objs[i])[2047] == (unsigned char)i);
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	}
	za_cache_shrink(c);
	CHECK_EQ(za_stat(mm, "nr_slab_pages"), 0);
	CHECK_EQ(slabinfo_objects(mm, "fallback"), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	for (long i = 1; i < npages; i += 2)
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	for (long i = 0; i < nblocks; i++)
		CHECK_EQ(za_free_pages(mm, blocks[i], block_order[i]), 0);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), za_stat(mm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * A new slab is allocated with the CPU's lock let go (the allocation may
 * reclaim, whose locks fork and za_verify hold while they wait for the CPU
 * locks).  One thread's slab allocation is held in its constructor; another
 * thread of the same CPU meanwhile takes the CPU's slow path and installs a
 * slab of its own.  The first, back, keeps the CPU's slab and files its new
 * one on the node's list: two slabs, both allocations through the CPU, one
 * object each, everything accounted for.
 */
static _Atomic int held_in_ctor, ctor_release;
static _Thread_local bool hold_my_ctor;

static void holding_ctor(void *p)
{
	memset(p, 0x11, 64);
	if (hold_my_ctor && !atomic_exchange(&held_in_ctor, 1))
		while (!atomic_load(&ctor_release))
			sched_yield();
}

static void *alloc_held(void *cache)
{
	hold_my_ctor = true;
	return za_cache_alloc(cache, 0);
}

static void test_new_slab_lets_cpu_go(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	za_cache_t *c = za_cache_create(mm, "held", 64, 0, 0, holding_ctor);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, alloc_held, c) == 0);
	while (!atomic_load(&held_in_ctor))
		sched_yield();
	void *mine = za_cache_alloc(c, 0), *theirs;
	CHECK(mine);
	atomic_store(&ctor_release, 1);
	pthread_join(t, &theirs);
	CHECK(theirs && theirs != mine);
	CHECK_EQ(za_cache_stat(c, "alloc_slab"), 2);
	CHECK_EQ(za_cache_stat(c, "alloc_slowpath"), 2);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_free(c, mine), 0);
	CHECK_EQ(za_cache_free(c, theirs), 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * za_verify walks the slab layer: a use-after-free write over a free
 * object's link is found (the free list no longer holds object starts of
 * its slab) and reported with the cache's name; undone, all holds again.
 */
static void test_verify_finds_corrupt_freelist(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	za_cache_t *c = za_cache_create(mm, "uaf", 64, 0, 0, NULL);
	void *a = za_cache_alloc(c, 0), *b = za_cache_alloc(c, 0);
	CHECK(a && b);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_free(c, a), 0);
	unsigned char saved[64];
	memcpy(saved, a, sizeof(saved));
	memset(a, 0x5a, sizeof(saved));
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK_EQ(za_verify(mm), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "cache uaf");
	CHECK_STR_HAS(cap.last, "not an object start");
	memcpy(a, saved, sizeof(saved));
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_free(c, b), 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Cache descriptors share their pages (memblock) and a destroyed cache's
 * is the next one's: creating and destroying caches does not grow the
 * system's metadata.  Many caches overflow a metadata chunk; each still
 * works, with random freelists too (their permutation is allocated apart). */
static void cache_descriptors_reused(const char *config)
{
	enum { N = 120 };
	za_mm_t *mm = test_mm(config);
	za_cache_t *first[N], *again[N];
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "desc-%d", i);
		CHECK((first[i] = za_cache_create(mm, name, 16 + 8 * (size_t)i, 0, 0, NULL)));
		for (int j = 0; j < i; j++)
			CHECK(first[j] != first[i]);
		void *obj = za_cache_alloc(first[i], 0);
		CHECK(obj);
		memset(obj, 0xa5, 16 + 8 * (size_t)i);
		CHECK_EQ(za_cache_free(first[i], obj), 0);
	}
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_cache_destroy(first[i]), 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "again-%d", i);
		CHECK((again[i] = za_cache_create(mm, name, 4000 - 8 * (size_t)i, 64, 0, NULL)));
		bool reused = false;
		for (int j = 0; j < N; j++)
			reused |= again[i] == first[j];
		CHECK(reused);
		void *obj = za_cache_alloc(again[i], 0);
		CHECK(obj && (uintptr_t)obj % 64 == 0);
		CHECK_EQ(za_cache_free(again[i], obj), 0);
		struct za_cache_info info;
		za_cache_info(again[i], &info);
		CHECK(!strcmp(info.name, name) && info.object_size == 4000 - 8 * (unsigned int)i);
	}
	CHECK(za_verify(mm) == 0);
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_cache_destroy(again[i]), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* The configurations of the cases above that take one ("_random":
 * slab_freelist_random=1). */
static void test_bulk_from_new_slabs(void)
{
	bulk_from_new_slabs("memory=16M,zones=Normal,cpus=1,kswapd=0");
}

static void test_bulk_from_new_slabs_random(void)
{
	bulk_from_new_slabs("memory=16M,zones=Normal,cpus=1,kswapd=0,slab_freelist_random=1");
}

static void test_cache_descriptors_reused(void)
{
	cache_descriptors_reused("memory=16M,zones=Normal,cpus=2,kswapd=0");
}

static void test_cache_descriptors_reused_64_cpus(void)
{
	cache_descriptors_reused("memory=16M,zones=Normal,cpus=64,kswapd=0,slab_freelist_random=1");
}

static void test_threads(void)
{
	threads("memory=128M,zones=Normal");
}

static void test_threads_one_cpu(void)
{
	threads("memory=128M,zones=Normal,cpus=1,nodes=1");
}

static void test_threads_two_nodes_random(void)
{
	threads("memory=128M,nodes=2,zones=Normal,slab_freelist_random=1");
}

static void test_threads_debug(void)
{
	threads("memory=128M,zones=Normal,slub_debug=FZPU");
}

/* Linux 7.0's sheaves and barns in place of the CPU slabs. */
static void test_threads_sheaves(void)
{
	threads("memory=128M,zones=Normal,kernel=7.0");
}

static void test_threads_sheaves_two_nodes(void)
{
	threads("memory=128M,nodes=2,zones=Normal,slub_sheaves=2,slab_freelist_random=1");
}

/* za_cache_free_rcu from every thread, through the CPUs' rcu_free sheaves
 * (and, another node's objects or a busy CPU, the batches), then without
 * sheaves. */
static void test_threads_rcu(void)
{
	rcu_frees = true;
	threads("memory=128M,nodes=2,zones=Normal,kernel=7.0");
	threads("memory=128M,zones=Normal,kernel=6.12");
	rcu_frees = false;
}

/* Grace periods ending while the threads free through them: za_rcu_barrier
 * in a loop beside the frees and allocations; everything accounted for at
 * the end. */
static atomic_bool barriers_stop;

static void *barrier_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&barriers_stop))
		za_rcu_barrier(smm);
	return NULL;
}

static void *rcu_worker(void *arg)
{
	long id = (long)arg;
	unsigned long long rng = 0x9e3779b9ULL * (unsigned long long)(id + 1);
	void *mine[SLOTS] = { 0 };
	for (long n = 0; n < ROUNDS / 4; n++) {
		int k = (int)(test_rand(&rng) % SLOTS);
		if (!mine[k])
			CHECK((mine[k] = za_cache_alloc(scache, 0)));
		else {
			CHECK_EQ(za_cache_free_rcu(scache, mine[k]), 0);
			mine[k] = NULL;
		}
	}
	for (int k = 0; k < SLOTS; k++)
		CHECK_EQ(za_cache_free_rcu(scache, mine[k]), 0);        /* NULL: nothing */
	return NULL;
}

static void rcu_barrier_concurrent(const char *config)
{
	smm = test_mm(config);
	scache = za_cache_create(smm, "rcu", OBJ, 0, 0, NULL);
	pthread_t t[THREADS], b;
	atomic_store(&barriers_stop, false);
	CHECK(pthread_create(&b, NULL, barrier_loop, NULL) == 0);
	for (long i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, rcu_worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&barriers_stop, true);
	pthread_join(b, NULL);
	CHECK(za_verify(smm) == 0);
	CHECK_EQ(za_cache_destroy(scache), 0);
	za_shrink_slabs(smm);
	za_drain_all_pages(smm);
	CHECK_EQ(za_stat(smm, "nr_free_pages"), za_stat(smm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(smm), 0);
}

static void test_rcu_barrier_concurrent(void)
{
	rcu_barrier_concurrent("memory=128M,zones=Normal,kernel=7.0");        /* rcu_free sheaves */
	rcu_barrier_concurrent("memory=128M,zones=Normal,kernel=6.12");       /* per-CPU batches */
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "order_calculation", test_order_calculation },
		{ "alignment_and_placement", test_alignment_and_placement },
		{ "constructor", test_constructor },
		{ "shrink_destroy_accounting", test_shrink_destroy_accounting },
		{ "shrink_sorts_partial", test_shrink_sorts_partial },
		{ "kmalloc", test_kmalloc },
		{ "kmalloc_rejects_other_pages", test_kmalloc_rejects_other_pages },
		{ "events_survive_destroy", test_events_survive_destroy },
		{ "bulk", test_bulk },
		{ "bulk_sheaves", test_bulk_sheaves },
		{ "bulk_from_new_slabs", test_bulk_from_new_slabs },
		{ "bulk_from_new_slabs_random", test_bulk_from_new_slabs_random },
		{ "cache_descriptors_reused", test_cache_descriptors_reused },
		{ "cache_descriptors_reused_64_cpus", test_cache_descriptors_reused_64_cpus },
		{ "exhaustion", test_exhaustion },
		{ "order_fallback", test_order_fallback },
		{ "verify_finds_corrupt_freelist", test_verify_finds_corrupt_freelist },
		{ "new_slab_lets_cpu_go", test_new_slab_lets_cpu_go },
		{ "threads", test_threads },
		{ "threads_one_cpu", test_threads_one_cpu },
		{ "threads_two_nodes_random", test_threads_two_nodes_random },
		{ "threads_debug", test_threads_debug },
		{ "threads_sheaves", test_threads_sheaves },
		{ "threads_sheaves_two_nodes", test_threads_sheaves_two_nodes },
		{ "threads_rcu", test_threads_rcu },
		{ "rcu_barrier_concurrent", test_rcu_barrier_concurrent },
	};
	return run_test_cases("test_slub", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
