/*
 * SLUB's per-CPU sheaves and per-node barns (slub_sheaves, Linux 7.0):
 * the exact counters of the refill, swap, trade
 * and flush paths on one CPU (hand-derived below), the barn's limit, the
 * 6.18 opt-in, a cache that cannot have them, and every object handed
 * out once with its contents kept.  The kernel's capacities are among
 * test_slub's order_calculation cases; the threaded run with remote frees
 * and an owner flag per object is its threads_sheaves.
 */
#include "test.h"

#include <pthread.h>
#include <stdint.h>

/* Every object once, with a pattern of its own, kept until it is freed. */
static void fill(void **objs, int from, int to, size_t size)
{
	for (int i = from; i < to; i++)
		memset(objs[i], i & 0xff, size);
}

static void check_filled(void **objs, int n, size_t size)
{
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < size; k++)
			CHECK_EQ(((unsigned char *)objs[i])[k], i & 0xff);
}

/* Every page back to the buddy lists once the slabs are shrunk (the
 * sheaves' own memory, kmalloc objects, included), then the system gone. */
static void destroy_all_returned(za_mm_t *mm)
{
	za_shrink_slabs(mm);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), za_stat(mm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static unsigned long held(za_cache_t *c)
{
	struct za_cache_info info;
	za_cache_info(c, &info);
	return info.sheaf_objects;
}

static long long stat_of(za_cache_t *c, const char *name)
{
	long long v = za_cache_stat(c, name);
	CHECK(v >= 0);
	return v;
}

#define CHECK_STATS(c, ...)                                                          \
	do {                                                                         \
		const struct { const char *name; long long want; } want_[] = { __VA_ARGS__ }; \
		for (size_t i_ = 0; i_ < sizeof(want_) / sizeof(want_[0]); i_++)    \
			if (stat_of((c), want_[i_].name) != want_[i_].want)          \
				check_failed(__FILE__, __LINE__, "%s: %lld, want %lld",  \
					     want_[i_].name, stat_of((c), want_[i_].name), \
					     want_[i_].want);                        \
	} while (0)

/*
 * One CPU, 64-byte objects: sheaves of 60, slabs of 64.
 *
 * Allocating 180: the first allocation finds no sheaf, asks the empty
 * barn, allocates a sheaf and refills it from a new slab (60 of its 64);
 * the 61st finds main empty and no spare, asks the barn, allocates a
 * second sheaf, refills it from the first slab's 4 and a new slab's 56,
 * and keeps the empty one as spare; the 121st refills the spare from the
 * second slab's 8 and a third slab's 52.  Three barn misses, two sheaves,
 * three slabs, two partial slabs taken.
 *
 * Freeing the 180: main fills (60), swaps with the empty spare (120),
 * then main and spare are full and the barn has no empty sheaf to trade:
 * a third sheaf is allocated and the full main goes to the barn (180).
 * Shrinking flushes main, spare and the barn's full sheaf: 180 objects,
 * three sheaves freed, three slabs freed.
 */
static void test_exact_counters(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,nr_cpus=2,kswapd=0,kernel=7.0");
	za_cache_t *c = za_cache_create(mm, "exact", 64, 0, 0, NULL);
	struct za_cache_info info;
	za_cache_info(c, &info);
	CHECK_EQ(info.sheaf_capacity, 60);
	CHECK_EQ(info.objects, 64);
	enum { N = 180 };
	void *objs[N];
	for (int i = 0; i < N; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	fill(objs, 0, N, 64);
	CHECK_STATS(c, { "alloc_fastpath", 180 }, { "barn_get_fail", 3 }, { "barn_get", 0 },
		    { "sheaf_alloc", 2 }, { "sheaf_refill", 180 }, { "alloc_slab", 3 },
		    { "node_partial_alloc", 2 }, { "alloc_slowpath", 0 }, { "alloc_from_new_slab", 0 });
	CHECK_EQ(held(c), 0);
	CHECK(za_verify(mm) == 0);
	check_filled(objs, N, 64);
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	CHECK_STATS(c, { "free_fastpath", 180 }, { "sheaf_alloc", 3 }, { "barn_put", 1 },
		    { "barn_put_fail", 0 }, { "sheaf_flush", 0 }, { "free_slowpath", 0 },
		    { "bad_free", 0 });
	CHECK_EQ(held(c), 180);                 /* main, spare and the barn's full one */
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_shrink(c), 3);
	CHECK_STATS(c, { "sheaf_flush", 180 }, { "sheaf_free", 3 }, { "free_slab", 3 });
	CHECK_EQ(held(c), 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	destroy_all_returned(mm);
}

static unsigned long waiting(za_cache_t *c)
{
	struct za_cache_info info;
	za_cache_info(c, &info);
	return info.rcu_objects;
}

static bool among(void *const *objs, int n, const void *p)
{
	for (int i = 0; i < n; i++)
		if (objs[i] == p)
			return true;
	return false;
}

/*
 * za_cache_free_rcu (kfree_rcu through sheaves, 6.18): 150 objects freed
 * wait -- two full rcu_free sheaves of 60 and 30 in the CPU's -- with
 * their contents, and no allocation gets one; at the grace period's end
 * the two full sheaves go to the barn whole and the 30 to their slabs;
 * the next 120 allocations are served from the barn, with those objects.
 * Without sheaves (kernel=6.12) the objects wait in batches and go to the
 * slabs.
 */
static void free_rcu(const char *config, bool sheaves)
{
	za_mm_t *mm = test_mm(config);
	za_cache_t *c = za_cache_create(mm, "rcu", 64, 0, 0, NULL);
	enum { N = 150 };
	void *objs[N], *more[N];
	for (int i = 0; i < N; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	fill(objs, 0, N, 64);
	long long sheaf_allocs = stat_of(c, "sheaf_alloc"), barn_puts = stat_of(c, "barn_put");
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_cache_free_rcu(c, objs[i]), 0);
	CHECK_EQ(waiting(c), N);
	CHECK_STATS(c, { "free_rcu_sheaf", sheaves ? N : 0 }, { "free_rcu_sheaf_fail", 0 },
		    { "sheaf_alloc", sheaf_allocs + (sheaves ? 3 : 0) });
	for (int i = 0; i < N; i++) {
		CHECK((more[i] = za_cache_alloc(c, 0)));
		CHECK(!among(objs, N, more[i]));
	}
	check_filled(objs, N, 64);              /* readers may still look */
	CHECK(za_verify(mm) == 0);
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_cache_free(c, more[i]), 0);
	za_rcu_barrier(mm);
	CHECK_EQ(waiting(c), 0);
	if (sheaves) {
		CHECK_STATS(c, { "barn_put", barn_puts + 2 + 1 });  /* + one of more's */
		long long slabs = stat_of(c, "alloc_slab"), gets = stat_of(c, "barn_get");
		for (int i = 0; i < 2 * 60; i++)
			CHECK((more[i] = za_cache_alloc(c, 0)));
		CHECK_EQ(stat_of(c, "alloc_slab"), slabs);
		CHECK(stat_of(c, "barn_get") > gets);
		for (int i = 0; i < 2 * 60; i++)
			CHECK_EQ(za_cache_free(c, more[i]), 0);
	}
	/* A pointer that is not an object of the cache is reported. */
	void *p = za_cache_alloc(c, 0);
	CHECK(p);
	errno = 0;
	CHECK_EQ(za_cache_free_rcu(c, (char *)p + 1), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(stat_of(c, "bad_free"), 1);
	CHECK_EQ(za_cache_free_rcu(c, p), 0);   /* destroy ends its wait */
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	destroy_all_returned(mm);
}

static void test_free_rcu(void)
{
	free_rcu("memory=64M,zones=Normal,cpus=1,nr_cpus=2,kswapd=0,kernel=7.0", true);
}

static void test_free_rcu_no_sheaves(void)
{
	free_rcu("memory=64M,zones=Normal,cpus=1,nr_cpus=2,kswapd=0,kernel=6.12", false);
}

/*
 * The barn keeps ten full sheaves.  Allocating 1200 objects takes two
 * sheaves, refilled in turn; freeing them fills main and the spare, then
 * puts a full sheaf in the barn every 60 frees (each with a new empty
 * sheaf) until it holds ten, at the 661st; from the 721st, every 60 frees
 * find the barn at its limit, flush the spare's 60 to the slabs and make
 * it main: 8 times.  What stays -- main, spare and ten -- serves the next
 * 720 allocations without a slab: 10 sheaves from the barn.
 */
static void test_barn_limit(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,nr_cpus=2,kswapd=0,kernel=7.0");
	za_cache_t *c = za_cache_create(mm, "barn", 64, 0, 0, NULL);
	enum { N = 1200, KEPT = 12 * 60 };
	void **objs = calloc(N, sizeof(void *));
	for (int i = 0; i < N; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	CHECK_STATS(c, { "sheaf_alloc", 2 }, { "barn_get_fail", 20 });
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	CHECK_STATS(c, { "barn_put", 10 }, { "sheaf_alloc", 12 }, { "barn_put_fail", 8 },
		    { "sheaf_flush", N - KEPT });
	CHECK_EQ(held(c), KEPT);
	CHECK(za_verify(mm) == 0);
	long long slabs = stat_of(c, "alloc_slab"), refilled = stat_of(c, "sheaf_refill");
	for (int i = 0; i < KEPT; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	fill(objs, 0, KEPT, 64);
	check_filled(objs, KEPT, 64);
	CHECK_STATS(c, { "barn_get", 10 }, { "alloc_slab", slabs }, { "sheaf_refill", refilled });
	za_cache_free_bulk(c, KEPT, objs);
	CHECK_EQ(za_cache_stat(c, "bad_free"), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(objs);
}

/* 6.18: a cache that asks gets sheaves of 32 in front of the CPU slab it
 * keeps (its refills are the CPU slab's bulk allocations); one that does
 * not ask is the 6.12 cache. */
static void test_opt_in_6_18(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,nr_cpus=2,kswapd=0,kernel=6.18");
	za_cache_t *vma = za_cache_create(mm, "vm_area_struct", 200, 0, ZA_SLAB_SHEAVES, NULL);
	za_cache_t *other = za_cache_create(mm, "anon_vma", 104, 0, 0, NULL);
	enum { N = 100 };
	void *a[N], *b[N];
	for (int i = 0; i < N; i++) {
		CHECK((a[i] = za_cache_alloc(vma, 0)));
		CHECK((b[i] = za_cache_alloc(other, 0)));
	}
	fill(a, 0, N, 200);
	/* Refills at the 1st, 33rd, 65th and 97th, two sheaves in turn. */
	CHECK_STATS(vma, { "sheaf_refill", 128 }, { "barn_get_fail", 4 }, { "sheaf_alloc", 2 });
	/* 6.18's counters: the sheaves' hits apart from the CPU slab's fast
	 * path, which served the refills' objects. */
	CHECK_STATS(vma, { "alloc_cpu_sheaf", N }, { "free_cpu_sheaf", 0 });
	CHECK_EQ(held(vma), 128 - N);
	CHECK(stat_of(vma, "alloc_from_new_slab") > 0);         /* the CPU slab's bulk path */
	CHECK_STATS(other, { "sheaf_alloc", 0 }, { "sheaf_refill", 0 });
	CHECK(stat_of(other, "alloc_fastpath") > 0);
	check_filled(a, N, 200);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(za_cache_free(vma, a[i]), 0);
		CHECK_EQ(za_cache_free(other, b[i]), 0);
	}
	CHECK_STATS(vma, { "free_cpu_sheaf", N }, { "alloc_cpu_sheaf", N });
	CHECK_EQ(held(vma), 128);
	CHECK_EQ(held(other), 0);
	CHECK_STATS(other, { "alloc_cpu_sheaf", 0 }, { "free_cpu_sheaf", 0 });
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(vma), 0);
	CHECK_EQ(za_cache_destroy(other), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* The object a sheaf took last, freed again, is caught (as the CPU
 * slab's free path catches the object its freelist took last). */
static void test_double_free(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1,nr_cpus=2,kswapd=0,kernel=7.0");
	za_cache_t *c = za_cache_create(mm, "double", 48, 0, 0, NULL);
	void *a = za_cache_alloc(c, 0), *b = za_cache_alloc(c, 0);
	CHECK(a && b);
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK_EQ(za_cache_free(c, a), 0);
	errno = 0;
	CHECK_EQ(za_cache_free(c, a), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "double free");
	CHECK_STATS(c, { "bad_free", 1 }, { "free_fastpath", 1 });
	CHECK_EQ(za_cache_free(c, b), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* An object of another node's slab bypasses the sheaves: a CPU of node 1
 * frees what a CPU of node 0 allocated (cpus=2,nodes=2: one CPU each). */
static void test_remote_node_bypass(void)
{
	za_mm_t *mm = test_mm("memory=128M,nodes=2,zones=Normal,cpus=2,nr_cpus=2,kswapd=0,"
			      "kernel=7.0");
	CHECK(za_cpu_to_node(mm, 0) != za_cpu_to_node(mm, 1));
	za_cache_t *c = za_cache_create(mm, "remote", 64, 0, 0, NULL);
	enum { N = 100 };
	void *objs[N];
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	for (int i = 0; i < N; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	CHECK_EQ(za_bind_cpu(mm, 1), 0);
	long long before = stat_of(c, "free_fastpath");
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	CHECK_STATS(c, { "free_fastpath", before }, { "free_slowpath", N }, { "bad_free", 0 });
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_bind_cpu(mm, -1), 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Shrinking takes the sheaves' objects back, and the sheaves: after a
 * churn of kmalloc and a cache (each with sheaves, the sheaves themselves
 * kmalloc objects), one za_shrink_slabs leaves no slab page behind. */
static void test_shrink_returns_everything(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=2,kswapd=0,kernel=7.0");
	za_cache_t *c = za_cache_create(mm, "shrink", 700, 0, 0, NULL);
	enum { N = 3000 };
	void **k = calloc(N, sizeof(void *)), **o = calloc(N, sizeof(void *));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			CHECK((k[i] = za_kmalloc(mm, 40 + (size_t)(i * 7 + round) % 300, 0)));
			CHECK((o[i] = za_cache_alloc(c, 0)));
		}
		fill(o, 0, N, 700);
		check_filled(o, N, 700);
		for (int i = 0; i < N; i++) {
			CHECK_EQ(za_cache_free(c, o[i]), 0);
			CHECK_EQ(za_kfree(mm, k[i]), 0);
		}
	}
	CHECK(za_stat(mm, "slab_sheaf_alloc") > 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	destroy_all_returned(mm);
	free(k);
	free(o);
}

/* Two CPUs bulk-allocate and bulk-free at once, each object stamped with
 * its thread and round and checked before it goes back, while one of them
 * shrinks the cache now and then (the sheaves flushed under the other's
 * feet).  Every object once: no stamp overwritten. */
enum { BULK_ROUNDS = 3000, BULK_N = 100 };

struct bulk_thread {
	za_mm_t *mm;
	za_cache_t *cache;
	int cpu;
};

static void *bulk_worker(void *arg)
{
	struct bulk_thread *bt = arg;
	void *objs[BULK_N];
	CHECK_EQ(za_bind_cpu(bt->mm, bt->cpu), 0);
	for (int round = 0; round < BULK_ROUNDS; round++) {
		size_t n = 1 + (size_t)(round * 7 + bt->cpu) % BULK_N;
		CHECK_EQ(za_cache_alloc_bulk(bt->cache, 0, n, objs), n);
		uint64_t stamp = (uint64_t)bt->cpu << 32 | (uint64_t)round << 8;
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 8; k++)
				((uint64_t *)objs[i])[k] = stamp + i;
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 8; k++)
				CHECK(((uint64_t *)objs[i])[k] == stamp + i);
		za_cache_free_bulk(bt->cache, n, objs);
		if (bt->cpu == 0 && round % 500 == 0)
			za_cache_shrink(bt->cache);
	}
	CHECK_EQ(za_bind_cpu(bt->mm, -1), 0);
	return NULL;
}

static void test_concurrent_bulk(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=2,kswapd=0,kernel=7.0");
	za_cache_t *c = za_cache_create(mm, "concurrent", 64, 0, 0, NULL);
	struct bulk_thread bt[2] = { { mm, c, 0 }, { mm, c, 1 } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, bulk_worker, &bt[i]) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(za_cache_stat(c, "bad_free"), 0);
	CHECK(za_cache_stat(c, "free_fastpath") > 0 && za_cache_stat(c, "alloc_fastpath") > 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	destroy_all_returned(mm);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "exact_counters", test_exact_counters },
		{ "free_rcu", test_free_rcu },
		{ "free_rcu_no_sheaves", test_free_rcu_no_sheaves },
		{ "barn_limit", test_barn_limit },
		{ "opt_in_6_18", test_opt_in_6_18 },
		{ "double_free", test_double_free },
		{ "remote_node_bypass", test_remote_node_bypass },
		{ "shrink_returns_everything", test_shrink_returns_everything },
		{ "concurrent_bulk", test_concurrent_bulk },
	};
	return run_test_cases("test_slub_sheaves", argc, argv, cases,
			      sizeof(cases) / sizeof(cases[0]));
}
