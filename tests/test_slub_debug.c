/*
 * Every SLUB misuse detection fires on the misuse it targets, reports the
 * cache, the object and what was found, and leaves the process running
 * with consistent caches.
 */
#include "test.h"

#include <stdint.h>

static struct captured cap;

static za_mm_t *make(const char *config)
{
	za_mm_t *mm = test_mm(config);
	memset(&cap, 0, sizeof(cap));
	za_mm_set_error_handler(mm, capture_error, &cap);
	return mm;
}

static void expect_report(int before, const char *cache, const char *what, const void *obj)
{
	char addr[32];
	CHECK_EQ(cap.count, before + 1);
	CHECK_STR_HAS(cap.last, cache);
	CHECK_STR_HAS(cap.last, what);
	snprintf(addr, sizeof(addr), "%p", obj);
	CHECK_STR_HAS(cap.last, addr);
}

/* Default mode: a free of the most recently freed object, bad pointers. */
static void test_default_mode(void)
{
	za_mm_t *mm = make("memory=64M,zones=Normal,cpus=1");
	za_cache_t *c = za_cache_create(mm, "plain", 64, 0, 0, NULL);
	za_cache_t *other = za_cache_create(mm, "other", 64, 0, 0, NULL);
	char *a = za_cache_alloc(c, 0), *b = za_cache_alloc(c, 0);
	CHECK_EQ(za_cache_free(c, a), 0);
	CHECK_EQ(za_cache_free(c, a), -1);
	CHECK_EQ(errno, EINVAL);
	expect_report(0, "plain", "double free", a);

	CHECK_EQ(za_cache_free(c, b + 1), -1);
	expect_report(1, "plain", "not the start of an object", b + 1);
	CHECK_EQ(za_cache_free(other, b), -1);
	expect_report(2, "other", "an object of another cache", b);
	int local;
	CHECK_EQ(za_cache_free(c, &local), -1);
	expect_report(3, "plain", "outside the arena", &local);
	CHECK_EQ(za_kfree(mm, b + 8), -1);
	expect_report(4, "plain", "not the start of an object", b + 8);
	void *page = za_alloc_pages(mm, 0, 0);
	CHECK_EQ(za_cache_free(c, page), -1);
	expect_report(5, "plain", "not in a slab", page);
	/* The page allocator refuses to free a slab's pages directly. */
	CHECK_EQ(za_free_pages(mm, (void *)((uintptr_t)b & ~(uintptr_t)4095), 0), -1);
	CHECK_STR_HAS(cap.last, "slab");
	CHECK_EQ(za_free_pages(mm, page, 0), 0);

	/* A corrupted free pointer is reported, not followed. */
	char *objs[8];
	for (int i = 0; i < 8; i++)
		objs[i] = za_cache_alloc(c, 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	memset(objs[7], 0x41, 64);           /* a write after free over the list */
	int before = cap.count;
	char *x = za_cache_alloc(c, 0);
	CHECK(x == objs[7]);
	expect_report(before, "plain", "corrupted free pointer", objs[7]);
	/* The allocator carries on from fresh memory. */
	for (int i = 0; i < 100; i++) {
		char *y = za_cache_alloc(c, 0);
		CHECK(y && y != objs[7]);
		memset(y, 1, 64);
	}
	CHECK_EQ(za_cache_stat(c, "bad_free"), 5);
	za_mm_destroy(mm);      /* the object with the corrupted pointer and what it dropped stay lost */
}

/* F: a double free anywhere in the slab's free list, not only the last one. */
static void test_consistency_checks(void)
{
	za_mm_t *mm = make("memory=64M,zones=Normal,slub_debug=F");
	za_cache_t *c = za_cache_create(mm, "checked", 100, 0, 0, NULL);
	void *a = za_cache_alloc(c, 0), *b = za_cache_alloc(c, 0);
	CHECK_EQ(za_cache_free(c, a), 0);
	CHECK_EQ(za_cache_free(c, b), 0);
	CHECK_EQ(za_cache_free(c, a), -1);
	expect_report(0, "checked", "double free", a);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * F: a write after free over a free pointer, then a free into the same
 * slab.  The double-free walk meets the corrupted pointer: it reports it,
 * naming the object that holds it, and stops instead of following it; the
 * free itself goes ahead.  Hardened or not, the pointer decodes to garbage.
 */
static void consistency_corrupted_list(const char *config)
{
	za_mm_t *mm = make(config);
	za_cache_t *c = za_cache_create(mm, "walked", 64, 0, 0, NULL);
	char *a = za_cache_alloc(c, 0), *b = za_cache_alloc(c, 0), *d = za_cache_alloc(c, 0);
	CHECK_EQ(za_cache_free(c, a), 0);
	CHECK_EQ(za_cache_free(c, b), 0);     /* the list: b -> a */
	memset(b, 0x41, 64);                  /* a write after free over b's free pointer */
	CHECK_EQ(za_cache_free(c, d), 0);
	expect_report(0, "walked", "corrupted free pointer", b);
	za_mm_destroy(mm);      /* b's list is broken: the cache is not destroyed */
}

/* Z: writes just past or before the object, and double frees. */
static void test_red_zones(void)
{
	za_mm_t *mm = make("memory=64M,zones=Normal,slub_debug=Z:zoned");
	za_cache_t *c = za_cache_create(mm, "zoned", 24, 0, 0, NULL);
	za_cache_t *plain = za_cache_create(mm, "unzoned", 24, 0, 0, NULL);
	struct za_cache_info info;
	za_cache_info(c, &info);
	CHECK(info.debug & ZA_SLAB_RED_ZONE);
	za_cache_info(plain, &info);
	CHECK(!info.debug);

	unsigned char *p = za_cache_alloc(c, 0);
	p[24] = 1;                           /* one byte past */
	CHECK_EQ(za_cache_free(c, p), 0);    /* reported, and still freed */
	expect_report(0, "zoned", "write past the end of object", p);
	p = za_cache_alloc(c, 0);
	p[-1] = 1;
	CHECK_EQ(za_cache_free(c, p), 0);
	expect_report(1, "zoned", "write before the start of object", p);
	p = za_cache_alloc(c, 0);
	CHECK_EQ(za_cache_free(c, p), 0);
	CHECK_EQ(za_cache_free(c, p), -1);
	expect_report(2, "zoned", "double free", p);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_cache_destroy(plain), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* P: a write to a free object is found when it is handed out again; the
 * object is kept out of use.  U: reports name the last owners. */
static void test_poison_and_owner(void)
{
	za_mm_t *mm = make("memory=64M,zones=Normal,slub_debug=PU:poisoned");
	za_cache_t *c = za_cache_create(mm, "poisoned", 40, 0, 0, NULL);
	unsigned char *p = za_cache_alloc(c, 0);
	CHECK_EQ(za_cache_free(c, p), 0);
	for (int i = 0; i < 40; i++)
		CHECK(p[i] == (i == 39 ? 0xa5 : 0x6b));
	p[13] = 0;                           /* write after free */
	unsigned char *q = za_cache_alloc(c, 0);
	CHECK(q && q != p);
	expect_report(0, "poisoned", "write after free", p);
	CHECK_STR_HAS(cap.last, "offset 13");
	CHECK_STR_HAS(cap.last, "last allocated by");
	CHECK_EQ(za_cache_free(c, q), 0);
	/* The corrupt object stays out of use: destroy counts it. */
	CHECK_EQ(za_cache_destroy(c), 1);
	CHECK_EQ(cap.count, 2);
	CHECK_STR_HAS(cap.last, "1 objects still allocated");
	za_mm_destroy(mm);
}

/* A constructor turns poisoning off (the object keeps its constructed
 * state) but red zones still work. */
static void ctor(void *p)
{
	memset(p, 7, 32);
}

static void test_ctor_with_debug(void)
{
	za_mm_t *mm = make("memory=64M,zones=Normal,slub_debug=FZP");
	za_cache_t *c = za_cache_create(mm, "ctor", 32, 0, 0, ctor);
	unsigned char *p = za_cache_alloc(c, 0);
	for (int i = 0; i < 32; i++)
		CHECK(p[i] == 7);
	CHECK_EQ(za_cache_free(c, p), 0);
	p = za_cache_alloc(c, 0);
	for (int i = 0; i < 32; i++)
		CHECK(p[i] == 7);
	p[32] = 0;
	CHECK_EQ(za_cache_free(c, p), 0);
	expect_report(0, "ctor", "write past the end", p);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* With slab_freelist_hardened (the default) and without. */
static void test_consistency_corrupted_list(void)
{
	consistency_corrupted_list("memory=64M,zones=Normal,slub_debug=F");
}

static void test_consistency_corrupted_list_unhardened(void)
{
	consistency_corrupted_list("memory=64M,zones=Normal,slub_debug=F,slab_freelist_hardened=0");
}

/* A bad slub_debug string names the key. */
static void test_bad_flags(void)
{
	errno = 0;
	CHECK(za_mm_create("slub_debug=FQ") == NULL && errno == EINVAL);
	CHECK_STR_HAS(za_last_error(), "'slub_debug'");
	CHECK(za_mm_create("slub_debug=F:") == NULL);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "default_mode", test_default_mode },
		{ "consistency_checks", test_consistency_checks },
		{ "consistency_corrupted_list", test_consistency_corrupted_list },
		{ "consistency_corrupted_list_unhardened", test_consistency_corrupted_list_unhardened },
		{ "red_zones", test_red_zones },
		{ "poison_and_owner", test_poison_and_owner },
		{ "ctor_with_debug", test_ctor_with_debug },
		{ "bad_flags", test_bad_flags },
	};
	return run_test_cases("test_slub_debug", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
