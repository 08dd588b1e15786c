/*
 * Stress: more threads than cores allocate and free random orders 0..10
 * for a few seconds, some blocks freed by another thread, some order-0
 * ones in batches.  Every page has
 * an owner flag taken with an atomic exchange (a block handed out twice
 * trips it at once) and a tag written into each of its pages, checked at
 * free.  Afterwards everything drains back into whole max-order blocks.
 *
 * ZA_STRESS_SECONDS overrides the duration (default 2).
 */
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

enum { THREADS = 6, SLOTS = 24, SHARED = 64 };

struct block {
	void *addr;
	unsigned int order;
	uint64_t tag;
};

static za_mm_t *mm;
static _Atomic unsigned char *owner;        /* per pfn */
static _Atomic(struct block *) shared[SHARED];   /* blocks in transit between threads */
static atomic_long total_ops, failed_allocs;
static double seconds = 2.0;           /* each run's, ZA_STRESS_SECONDS */
static double deadline;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned long pfn_of(void *addr)
{
	return za_page_to_pfn(mm, za_virt_to_page(mm, addr));
}

static void take(struct block *b)
{
	unsigned long pfn = pfn_of(b->addr);
	for (unsigned long i = 0; i < 1UL << b->order; i++) {
		CHECK(atomic_exchange(&owner[pfn + i], 1) == 0);
		*(uint64_t *)((char *)b->addr + (i << ZA_PAGE_SHIFT)) = b->tag + i;
	}
}

/* Half the order-0 frees go in batches of BATCH (za_free_pages_bulk). */
enum { BATCH = 8 };
static _Thread_local void *batch[BATCH];
static _Thread_local int batched;

static void flush_batch(void)
{
	CHECK_EQ(za_free_pages_bulk(mm, batch, (size_t)batched, 0), 0);
	batched = 0;
}

static void give_back(struct block *b)
{
	unsigned long pfn = pfn_of(b->addr);
	for (unsigned long i = 0; i < 1UL << b->order; i++) {
		CHECK(*(uint64_t *)((char *)b->addr + (i << ZA_PAGE_SHIFT)) == b->tag + i);
		CHECK(atomic_exchange(&owner[pfn + i], 0) == 1);
	}
	if (b->order == 0 && (b->tag >> 16) % 2) {
		batch[batched++] = b->addr;
		if (batched == BATCH)
			flush_batch();
	} else {
		CHECK_EQ(za_free_pages(mm, b->addr, b->order), 0);
	}
	b->addr = NULL;
}

static unsigned int random_order(unsigned long long *rng)
{
	/* Mostly small orders, as real loads; every order appears. */
	unsigned int r = (unsigned int)(test_rand(rng) % 100);
	return r < 60 ? r % 4 : r < 90 ? 4 + r % 4 : 8 + r % 3;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned long long rng = 0x9e3779b97f4a7c15ULL * (unsigned long long)(id + 1);
	struct block mine[SLOTS] = { 0 };
	uint64_t seq = 0;
	long ops = 0;

	while (ops % 256 || now() < deadline) {
		struct block *b = &mine[test_rand(&rng) % SLOTS];
		ops++;
		if (b->addr) {
			if (test_rand(&rng) % 8)
				give_back(b);
			else {
				/* Hand it over; free whatever another thread left there. */
				struct block *s = malloc(sizeof(*s));
				*s = *b;
				b->addr = NULL;
				struct block *old = atomic_exchange(&shared[test_rand(&rng) % SHARED], s);
				if (old) {
					give_back(old);
					free(old);
				}
			}
			continue;
		}
		unsigned int order = random_order(&rng);
		za_gfp_t gfp = (za_gfp_t)(test_rand(&rng) % 3) << 3;   /* unmovable/movable/reclaimable */
		if (test_rand(&rng) % 4 == 0)
			gfp |= ZA_GFP_NOWAIT;
		b->addr = za_alloc_pages(mm, gfp, order);
		if (!b->addr) {
			CHECK_EQ(errno, ENOMEM);
			atomic_fetch_add(&failed_allocs, 1);
			continue;
		}
		b->order = order;
		b->tag = ((uint64_t)id << 56) | (++seq << 16);
		take(b);
	}
	for (int i = 0; i < SLOTS; i++)
		if (mine[i].addr)
			give_back(&mine[i]);
	flush_batch();
	atomic_fetch_add(&total_ops, ops);
	return NULL;
}

static void run(const char *config)
{
	mm = test_mm(config);
	long total = za_stat(mm, "nr_managed_pages");
	owner = calloc((size_t)total, 1);
	atomic_store(&total_ops, 0);
	atomic_store(&failed_allocs, 0);
	deadline = now() + seconds;

	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(za_verify(mm) == 0);          /* quiescent, the shared blocks still held */
	for (int i = 0; i < SHARED; i++) {
		struct block *b = atomic_exchange(&shared[i], NULL);
		if (b) {
			give_back(b);
			free(b);
		}
	}
	flush_batch();

	CHECK_EQ(za_stat(mm, "bad_free"), 0);
	CHECK_EQ(za_stat(mm, "pgalloc"), za_stat(mm, "pgfree"));
	check_fully_coalesced(mm, 10);
	CHECK(za_verify(mm) == 0);
	printf("  %-70s %8ld ops, %ld failed allocations, %lld contended zone locks\n", config,
	       atomic_load(&total_ops), atomic_load(&failed_allocs),
	       za_stat(mm, "zone_lock_contended"));
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(owner);
}

/* Two zones; per-CPU lists of order 0 only and the bulk free under the
 * zone lock; two nodes of three CPUs in debug mode. */
static void test_two_zones(void)
{
	run("memory=64M,zones=DMA32:16M+Normal");
}

static void test_order0_in_lock(void)
{
	run("memory=64M,zones=DMA32:16M+Normal,pcp_high_order=0,bulkfree_outside_lock=0");
}

static void test_two_nodes_debug(void)
{
	run("memory=128M,nodes=2,zones=DMA32:16M+Normal,cpus=3,debug=1");
}

/* 6.19's lists: auto-tuned high, decayed every 10 ms by the vmstat
 * worker, and drains a batch per hold with the per-CPU lock retaken
 * between -- by trylock, which fails when another of the threads sharing
 * the CPU holds it, and the free then leaves the rest. */
static void test_kernel_6_19(void)
{
	run("memory=64M,zones=DMA32:16M+Normal,kernel=6.19,vmstat_interval_ms=10");
}

/* The per-CPU-owned pageblocks RFC: refills claim whole pageblocks (high
 * is large enough for one), and the threads' frees of each other's pages
 * go back to the owning CPU's lists under that CPU's lock. */
static void test_own_pageblocks(void)
{
	run("memory=128M,zones=DMA32:16M+Normal,percpu_pagelist_high_fraction=8,"
	    "pcp_own_pageblocks=1");
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "two_zones", test_two_zones },
		{ "order0_in_lock", test_order0_in_lock },
		{ "two_nodes_debug", test_two_nodes_debug },
		{ "kernel_6_19", test_kernel_6_19 },
		{ "own_pageblocks", test_own_pageblocks },
	};
	const char *env = getenv("ZA_STRESS_SECONDS");
	if (env)
		seconds = atof(env);
	return run_test_cases("test_stress", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
