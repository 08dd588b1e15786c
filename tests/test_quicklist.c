/*
 * Quicklists: LIFO reuse, per-CPU isolation, constructor and destructor
 * calls exactly when they must happen, the node-local rule, trim bounds,
 * the debug zero check, and exact accounting back to the buddy lists.
 */
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

static long ctors, dtors;

static void ctor(void *p)
{
	ctors++;
	memset((char *)p + 2048, 0x42, 2048);    /* a "kernel half", first word stays 0 */
}

static void dtor(void *p)
{
	(void)p;
	dtors++;
}

static void test_lifo_and_calls(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,cpus=1");
	ctors = dtors = 0;
	void *a = za_quicklist_alloc(mm, 0, 0, ctor);
	void *b = za_quicklist_alloc(mm, 0, 0, ctor);
	void *c = za_quicklist_alloc(mm, 0, 0, ctor);
	CHECK(a && b && c);
	CHECK_EQ(ctors, 3);
	CHECK_EQ(za_stat(mm, "quicklist_miss"), 3);
	CHECK_EQ(za_stat(mm, "bytes_zeroed"), 3 * 4096);
	CHECK_EQ(za_quicklist_free(mm, 0, dtor, a), 0);
	CHECK_EQ(za_quicklist_free(mm, 0, dtor, b), 0);
	CHECK_EQ(za_quicklist_free(mm, 0, dtor, c), 0);
	CHECK_EQ(dtors, 0);
	CHECK_EQ(za_quicklist_total_size(mm), 3);
	/* Last in, first out, already constructed: no constructor, no zeroing. */
	CHECK(za_quicklist_alloc(mm, 0, 0, ctor) == c);
	CHECK(za_quicklist_alloc(mm, 0, 0, ctor) == b);
	void *a2 = za_quicklist_alloc(mm, 0, 0, ctor);
	CHECK(a2 == a);
	CHECK_EQ(((unsigned char *)a2)[4095], 0x42);
	CHECK_EQ(((uint64_t *)a2)[0], 0);
	CHECK_EQ(ctors, 3);
	CHECK_EQ(za_stat(mm, "quicklist_hit"), 3);
	CHECK_EQ(za_stat(mm, "bytes_zeroed"), 3 * 4096);
	/* Lists are separate. */
	void *z = za_quicklist_alloc(mm, 1, 0, NULL);
	for (int i = 0; i < 4096; i++)
		CHECK(((unsigned char *)z)[i] == 0);
	CHECK_EQ(za_quicklist_free(mm, 1, NULL, z), 0);
	CHECK(za_quicklist_alloc(mm, 0, 0, ctor) != z);
	CHECK(za_quicklist_alloc(mm, 1, 0, NULL) == z);
	/* Bad input. */
	errno = 0;
	CHECK(za_quicklist_alloc(mm, 2, 0, NULL) == NULL && errno == EINVAL);
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK_EQ(za_quicklist_free(mm, 1, NULL, (char *)z + 8), -1);
	CHECK_STR_HAS(cap.last, "not a page of this system");
	void *big = za_alloc_pages(mm, 0, 1);
	CHECK_EQ(za_quicklist_free(mm, 1, NULL, big), -1);
	CHECK_STR_HAS(cap.last, "not an allocated order-0 page");
	za_free_pages(mm, big, 1);
	za_mm_destroy(mm);
}

/* Trim keeps max(free node pages / 16, min_pages), frees at most max_free. */
static void test_trim_bounds(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1");
	void *pages[800];
	for (int i = 0; i < 800; i++)
		CHECK((pages[i] = za_quicklist_alloc(mm, 0, 0, NULL)));
	for (int i = 0; i < 800; i++)
		CHECK_EQ(za_quicklist_free(mm, 0, dtor, pages[i]), 0);
	dtors = 0;
	long held = 800;
	for (int round = 0; round < 50; round++) {
		long keep = za_stat(mm, "nr_free_pages") / 16;
		if (keep < 25)
			keep = 25;
		long expect = held - keep < 16 ? held - keep : 16;
		if (expect < 0)
			expect = 0;
		CHECK_EQ(za_quicklist_trim(mm, 0, dtor, 25, 16), expect);
		held -= expect;
		CHECK_EQ((long)za_quicklist_total_size(mm), held);
	}
	CHECK(held > 25);                  /* bounded by free / 16, not by min_pages */
	CHECK_EQ(dtors, 800 - held);
	/* Below min_pages nothing goes. */
	CHECK_EQ(za_quicklist_trim(mm, 0, dtor, 10000, 16), 0);
	/* Memory pressure empties the lists, with the registered destructor. */
	CHECK_EQ(za_quicklist_shrink(mm), held);
	CHECK_EQ(dtors, 800);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), za_stat(mm, "nr_managed_pages"));
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* With debug=1 a page freed dirty is caught and goes back to the allocator. */
static void test_zero_check(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,debug=1");
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	unsigned char *p = za_quicklist_alloc(mm, 1, 0, NULL);
	p[1234] = 7;
	CHECK_EQ(za_quicklist_free(mm, 1, NULL, p), -1);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "not zero at offset 1234");
	CHECK_EQ(za_quicklist_total_size(mm), 0);
	/* A clean page is fine, and a constructed page is not checked. */
	p = za_quicklist_alloc(mm, 1, 0, NULL);
	CHECK_EQ(za_quicklist_free(mm, 1, NULL, p), 0);
	p = za_quicklist_alloc(mm, 0, 0, ctor);
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, p), 0);
	CHECK_EQ(cap.count, 1);
	CHECK_EQ(za_quicklist_shrink(mm), 2);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * A page leaving the quicklists drops its zeroed tag: its next owner, who
 * gets it from the page allocator (the same page: per-CPU lists are LIFO),
 * may write it and hand it to a constructed list without a false report.
 * Both ways out: a shrink, and the zero check sending a dirty page back.
 */
static void test_tag_cleared_on_release(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,debug=1,kswapd=0");
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	for (int way = 0; way < 2; way++) {
		unsigned char *p = za_quicklist_alloc(mm, 1, 0, NULL);
		CHECK(p);
		p[100] = (unsigned char)way;      /* dirty only on the second way */
		CHECK_EQ(za_quicklist_free(mm, 1, NULL, p), way ? -1 : 0);
		CHECK_EQ(za_quicklist_shrink(mm), way ? 0 : 1);
		CHECK_EQ(cap.count, way);
		unsigned char *q = za_alloc_pages(mm, 0, 0);
		CHECK(q == p);
		memset(q + 2048, 0x42, 2048);    /* as ctor() constructs */
		CHECK_EQ(za_quicklist_free(mm, 0, NULL, q), 0);
		CHECK(za_verify(mm) == 0);       /* kept as constructed */
		CHECK(za_quicklist_alloc(mm, 0, 0, NULL) == q);
		CHECK_EQ(za_quicklist_free(mm, 0, NULL, q), 0);
		CHECK_EQ(cap.count, way);
		CHECK_EQ(za_quicklist_shrink(mm), 1);
	}
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* za_verify walks the quicklists: a write over a cached page's link is
 * found and reported; undone, all holds again. */
static void test_verify_finds_corrupt_list(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	void *p = za_quicklist_alloc(mm, 0, 0, NULL), *q = za_quicklist_alloc(mm, 0, 0, NULL);
	CHECK(p && q);
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, p), 0);
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, q), 0);
	void *link;
	memcpy(&link, q, sizeof(link));
	memset(q, 0x5a, sizeof(link));                /* written after its free */
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	CHECK_EQ(za_verify(mm), -1);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "quicklist 0 of cpu 0");
	memcpy(q, &link, sizeof(link));
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_quicklist_shrink(mm), 2);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * Memory pressure empties the quicklists through reclaim: with kswapd=0 an
 * allocation that finds no free page reclaims directly (allocstall), and
 * the quicklist shrinker gives back every page, destructor first, before
 * the allocation could fail.
 */
static void test_shrunk_under_pressure(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	long total = za_stat(mm, "nr_managed_pages"), n = 0;
	enum { HELD = 512 };
	void **pages = calloc((size_t)total, sizeof(void *));
	for (int i = 0; i < HELD; i++)
		CHECK((pages[i] = za_quicklist_alloc(mm, 0, 0, NULL)));
	for (int i = 0; i < HELD; i++)
		CHECK_EQ(za_quicklist_free(mm, 0, dtor, pages[i]), 0);
	dtors = 0;
	CHECK_EQ(za_quicklist_total_size(mm), HELD);
	CHECK_EQ(za_stat(mm, "allocstall"), 0);
	while (za_quicklist_total_size(mm)) {
		CHECK(n < total - HELD);          /* the lists went before memory ran out */
		CHECK((pages[n++] = za_alloc_pages(mm, 0, 0)));
	}
	CHECK(za_stat(mm, "allocstall") > 0);
	CHECK(za_stat(mm, "slabs_scanned") > 0);
	CHECK_EQ(za_stat(mm, "quicklist_trim"), HELD);
	CHECK_EQ(dtors, HELD);
	CHECK_EQ(za_stat(mm, "alloc_fail"), 0);
	for (long i = 0; i < n; i++)
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
	check_fully_coalesced(mm, 10);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/* quicklists=0: every alloc a zeroed page plus the constructor, every free
 * the destructor plus a page free. */
static void test_switched_off(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,quicklists=0");
	ctors = dtors = 0;
	for (int i = 0; i < 10; i++) {
		void *p = za_quicklist_alloc(mm, 0, 0, ctor);
		CHECK(p);
		CHECK_EQ(za_quicklist_free(mm, 0, dtor, p), 0);
	}
	CHECK_EQ(ctors, 10);
	CHECK_EQ(dtors, 10);
	CHECK_EQ(za_quicklist_total_size(mm), 0);
	CHECK_EQ(za_stat(mm, "bytes_zeroed"), 10 * 4096);
	CHECK_EQ(za_stat(mm, "quicklist_hit"), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* The pages held per node are listed counters: in za_stat_name() for every
 * node a system may have, in the vmstat report for the nodes it has.  With
 * one CPU (on node 0), every list is node 0's. */
static void test_per_node_counters(void)
{
	za_mm_t *mm = test_mm("memory=64M,nodes=2,zones=Normal,cpus=1");
	void *p = za_quicklist_alloc(mm, 0, 0, NULL), *q = za_quicklist_alloc(mm, 1, 0, NULL);
	CHECK(p && q);
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, p), 0);
	CHECK_EQ(za_quicklist_free(mm, 1, NULL, q), 0);
	CHECK_EQ(za_stat(mm, "nr_quicklist_pages_node0"), 2);
	CHECK_EQ(za_stat(mm, "nr_quicklist_pages_node1"), 0);
	int listed = 0;
	for (int i = 0; i < za_stat_count(); i++)
		listed += !strncmp(za_stat_name(i), "nr_quicklist_pages_node", 23);
	CHECK_EQ(listed, 64);                 /* ZA_MAX_NODES */
	CHECK_EQ(za_stat(mm, "nr_quicklist_pages_node63"), 0);
	errno = 0;
	CHECK(za_stat(mm, "nr_quicklist_pages_node64") == -1 && errno == EINVAL);

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(za_report(mm, "vmstat", f) == 0);
	fclose(f);
	CHECK_STR_HAS(text, "\nnr_quicklist_pages_node0 2\n");
	CHECK_STR_HAS(text, "\nnr_quicklist_pages_node1 0\n");
	CHECK(!strstr(text, "nr_quicklist_pages_node2"));
	free(text);
	CHECK_EQ(za_quicklist_shrink(mm), 2);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* ------------------------------------------------------------------------
 * Per-CPU isolation and the node-local rule need two CPUs.
 * ------------------------------------------------------------------------ */
static za_mm_t *tmm;

static bool pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0 && za_current_cpu(tmm) == cpu;
}

struct op {
	int cpu;
	enum { ALLOC, FREE } what;
	void *page;
};

static void *run_op(void *arg)
{
	struct op *op = arg;
	CHECK(pin(op->cpu));
	if (op->what == ALLOC)
		op->page = za_quicklist_alloc(tmm, 0, 0, NULL);
	else
		CHECK_EQ(za_quicklist_free(tmm, 0, dtor, op->page), 0);
	return NULL;
}

static void *on_cpu(int cpu, int what, void *page)
{
	struct op op = { cpu, what, page };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, run_op, &op) == 0);
	pthread_join(t, NULL);
	return op.page;
}

static void test_cpus_and_nodes(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("  per-CPU and node tests skipped: one CPU\n");
		return;
	}
	/* Per-CPU isolation: a page freed on CPU 0 is not seen by CPU 1. */
	tmm = test_mm("memory=64M,zones=Normal,cpus=2");
	void *p = on_cpu(0, ALLOC, NULL);
	on_cpu(0, FREE, p);
	void *q = on_cpu(1, ALLOC, NULL);
	CHECK(q != p);
	CHECK(on_cpu(0, ALLOC, NULL) == p);
	CHECK_EQ(za_mm_destroy(tmm), 2);

	/* Node-local: CPU 1 is on node 1; its page freed on CPU 0 goes back to
	 * the page allocator, destructor first. */
	tmm = test_mm("memory=64M,nodes=2,zones=Normal,cpus=2");
	dtors = 0;
	p = on_cpu(1, ALLOC, NULL);
	CHECK_EQ(za_page_to_nid(tmm, za_virt_to_page(tmm, p)), 1);
	on_cpu(0, FREE, p);
	CHECK_EQ(dtors, 1);
	CHECK_EQ(za_quicklist_total_size(tmm), 0);
	q = on_cpu(1, ALLOC, NULL);
	on_cpu(1, FREE, q);                /* on its own node: kept */
	CHECK_EQ(dtors, 1);
	CHECK_EQ(za_stat(tmm, "nr_quicklist_pages_node1"), 1);
	CHECK_EQ(za_stat(tmm, "nr_quicklist_pages_node0"), 0);
	CHECK(za_verify(tmm) == 0);
	CHECK_EQ(za_mm_destroy(tmm), 0);
}

/*
 * The per-CPU mechanism the system runs (percpu=rseq: restartable sections,
 * or the lock): hits and frees counted exactly across the point where the
 * sections' tallies must be folded (2^20 hits), a page freed twice in a
 * row refused and reported, trim, verify and shrink exact.
 */
static void test_mechanism(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal,kswapd=0");
	printf("  quicklists: %s\n", za_percpu_mode(mm));
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0);    /* one CPU's list: LIFO */
	enum { PAIRS = (1 << 20) + 1000 };
	void *p = za_quicklist_alloc(mm, 0, 0, NULL);
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, p), 0);
	for (long i = 0; i < PAIRS; i++) {
		void *q = za_quicklist_alloc(mm, 0, 0, NULL);
		if (q != p || *(uint64_t *)q) {
			CHECK(q == p && !*(uint64_t *)q);
			break;
		}
		CHECK_EQ(za_quicklist_free(mm, 0, NULL, q), 0);
	}
	CHECK_EQ(za_stat(mm, "quicklist_hit"), PAIRS);
	CHECK_EQ(za_stat(mm, "quicklist_free"), PAIRS + 1);
	CHECK_EQ(za_stat(mm, "quicklist_miss"), 1);
	CHECK_EQ(za_quicklist_total_size(mm), 1);

	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	errno = 0;
	CHECK_EQ(za_quicklist_free(mm, 0, NULL, p), -1);
	CHECK(errno == EINVAL);
	CHECK_EQ(cap.count, 1);
	CHECK_STR_HAS(cap.last, "freed twice");
	CHECK_EQ(za_quicklist_total_size(mm), 1);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_quicklist_trim(mm, 0, NULL, 0, 16), 0);     /* kept: free / 16 */
	CHECK_EQ(za_quicklist_shrink(mm), 1);
	CHECK_EQ(za_stat(mm, "quicklist_trim"), 1);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "lifo_and_calls", test_lifo_and_calls },
		{ "trim_bounds", test_trim_bounds },
		{ "verify_finds_corrupt_list", test_verify_finds_corrupt_list },
		{ "zero_check", test_zero_check },
		{ "tag_cleared_on_release", test_tag_cleared_on_release },
		{ "shrunk_under_pressure", test_shrunk_under_pressure },
		{ "switched_off", test_switched_off },
		{ "per_node_counters", test_per_node_counters },
		{ "cpus_and_nodes", test_cpus_and_nodes },
		{ "mechanism", test_mechanism },
	};
	return run_test_cases("test_quicklist", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
