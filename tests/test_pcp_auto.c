/*
 * The per-CPU mechanisms of later kernels, each on a sequence whose
 * outcome is worked out by hand in the comments: za_bind_cpu, the kmem
 * tracepoints, auto-tuned high (growth on refill, alloc_factor, freeing
 * bursts, decay per vmstat tick), free_high in its two forms,
 * percpu_pagelist_high_fraction, the kernel= preset, and that a replay is
 * deterministic.  Exact counters throughout; za_verify at quiescent points.
 *
 * Most systems: 1G, DMA32:256M + Normal:768M, one CPU, fair_zone=0 (every
 * allocation from Normal), no kswapd, no timing, no vmstat thread.  Normal
 * has 196608 pages: batch 63; watermarks min 768, low 964, high 1160; with
 * pcp_high_auto=1 high_min = 964 (the low watermark over 1 CPU) and
 * high_max = 24576 (an eighth of the zone).
 */
#include "test.h"

#include <pthread.h>

#include <time.h>

#define BASE "memory=1G,zones=DMA32:256M+Normal,fair_zone=0,kswapd=0,lock_stats=0," \
	     "vmstat_interval_ms=0"
#define NORMAL 1                /* the zone id of node 0's Normal */
#define BATCH 63
#define HIGH_MIN 964
#define HIGH_MAX 24576

static za_mm_t *make(const char *extra)
{
	char config[512];
	snprintf(config, sizeof(config), BASE ",%s", extra);
	return test_mm(config);
}

/* One CPU's set of one zone, from the zoneinfo report. */
struct pageset {
	int count, high, batch, high_min, high_max;
};

static struct pageset pageset(za_mm_t *mm, const char *zone, int cpu)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f && za_report(mm, "zoneinfo", f) == 0);
	fclose(f);
	char head[64], at[32];
	snprintf(head, sizeof(head), "zone %8s\n", zone);
	snprintf(at, sizeof(at), "    cpu: %d\n", cpu);
	char *z = strstr(buf, head);
	CHECK(z);
	char *p = strstr(z, at);
	CHECK(p);
	struct pageset ps;
	CHECK(sscanf(p + strlen(at),
		     " count: %d high: %d batch: %d high_min: %d high_max: %d",
		     &ps.count, &ps.high, &ps.batch, &ps.high_min, &ps.high_max) == 5);
	free(buf);
	return ps;
}

/* ------------------------------------------------------------------------
 * Tracepoints
 * ------------------------------------------------------------------------ */
struct recorder {
	long n[3];                      /* by type */
	long refill;                    /* zone_locked with percpu_refill */
	long drained_pages;             /* sum of 2^order over drains */
	long zone_locked_by_order[11];
	struct za_tp_event first[3];    /* the first of each type */
	struct za_tp_event last_extfrag;
	long fragmenting, change_ownership;
	unsigned long long hash;        /* of every event, in order */
};

static void record(const struct za_tp_event *ev, void *ctx)
{
	struct recorder *r = ctx;
	CHECK(ev->type <= ZA_TP_PAGE_ALLOC_EXTFRAG);     /* za_set_tracepoint's only */
	if (!r->n[ev->type])
		r->first[ev->type] = *ev;
	r->n[ev->type]++;
	switch (ev->type) {
	case ZA_TP_PAGE_ALLOC_ZONE_LOCKED:
		r->refill += ev->percpu_refill;
		if (ev->order <= 10)
			r->zone_locked_by_order[ev->order]++;
		break;
	case ZA_TP_PAGE_PCPU_DRAIN:
		r->drained_pages += 1L << ev->order;
		break;
	case ZA_TP_PAGE_ALLOC_EXTFRAG:
		r->last_extfrag = *ev;
		r->fragmenting += ev->fragmenting;
		r->change_ownership += ev->change_ownership;
		/* the kernel's definitions */
		CHECK_EQ(ev->fragmenting, ev->fallback_order < 9);
		break;
	default:
		break;
	}
	unsigned long long words[] = { (unsigned long long)ev->type, (unsigned long long)ev->cpu,
				       (unsigned long long)ev->zone, ev->pfn, ev->order,
				       (unsigned long long)ev->migratetype };
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		r->hash = (r->hash ^ words[i]) * 0x100000001b3ULL;
}

static void test_tracepoints(void)
{
	za_mm_t *mm = make("cpus=1");
	struct recorder r = { 0 };
	za_set_tracepoint(mm, record, &r);

	/* A refill of an order-0 movable list: a batch of blocks, each traced
	 * as a per-CPU refill, on CPU 0, in Normal. */
	void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0);
	CHECK(p);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_ZONE_LOCKED], BATCH);
	CHECK_EQ(r.refill, BATCH);
	CHECK_EQ(r.first[0].cpu, 0);
	CHECK_EQ(r.first[0].zone, NORMAL);
	CHECK_EQ(r.first[0].order, 0);
	CHECK_EQ(r.first[0].migratetype, 1);
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN] + r.n[ZA_TP_PAGE_ALLOC_EXTFRAG], 0);

	/* An order-5 allocation: straight from the buddy lists, one event. */
	void *big = za_alloc_pages(mm, ZA_GFP_MOVABLE, 5);
	CHECK(big);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_ZONE_LOCKED], BATCH + 1);
	CHECK_EQ(r.refill, BATCH);
	CHECK_EQ(r.zone_locked_by_order[5], 1);
	CHECK_EQ(za_free_pages(mm, big, 5), 0);         /* to the buddy lists: no event */
	CHECK_EQ(za_free_pages(mm, p, 0), 0);           /* to the CPU's list: none */
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], 0);

	/* A drain: one event per block, the CPU's. */
	za_drain_pages(mm, 0);
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], BATCH);
	CHECK_EQ(r.drained_pages, BATCH);
	CHECK_EQ(r.first[ZA_TP_PAGE_PCPU_DRAIN].cpu, 0);

	/* Orders 1..3 refill too: batch >> order blocks. */
	void *q = za_alloc_pages(mm, ZA_GFP_MOVABLE, 2);
	CHECK(q);
	CHECK_EQ(r.zone_locked_by_order[2], BATCH >> 2);
	CHECK_EQ(za_free_pages(mm, q, 2), 0);

	/* The first unmovable allocation falls back to a movable max-order
	 * block and claims it (its two pageblocks) whole: not fragmenting,
	 * ownership changed.  Before 6.15 every block is traced as taken from
	 * the buddy lists, the fallback's too. */
	long locked = r.n[ZA_TP_PAGE_ALLOC_ZONE_LOCKED];
	void *u = za_alloc_pages(mm, 0, 0);
	CHECK(u);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_EXTFRAG], 1);
	CHECK_EQ(r.last_extfrag.order, 0);
	CHECK_EQ(r.last_extfrag.migratetype, 0);
	CHECK_EQ(r.last_extfrag.fallback_order, 10);
	CHECK_EQ(r.last_extfrag.fallback_migratetype, 1);
	CHECK_EQ(r.last_extfrag.fragmenting, 0);
	CHECK_EQ(r.last_extfrag.change_ownership, 1);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_ZONE_LOCKED] - locked, BATCH);
	CHECK_EQ(za_stat(mm, "pgfallback"), 1);
	CHECK_EQ(za_free_pages(mm, u, 0), 0);

	/* Off: nothing more is heard. */
	za_set_tracepoint(mm, NULL, NULL);
	long total = r.n[0] + r.n[1] + r.n[2];
	za_drain_all_pages(mm);
	CHECK_EQ(r.n[0] + r.n[1] + r.n[2], total);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* 6.15's form: a claim of a whole pageblock hands the block out
	 * without the zone_locked event. */
	mm = make("cpus=1,fallback_steal_smallest=1");
	memset(&r, 0, sizeof(r));
	za_set_tracepoint(mm, record, &r);
	u = za_alloc_pages(mm, 0, 0);
	CHECK(u);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_EXTFRAG], 1);
	CHECK_EQ(r.last_extfrag.change_ownership, 1);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_ZONE_LOCKED], BATCH - 1);
	CHECK_EQ(za_free_pages(mm, u, 0), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* Three max-order blocks and orders 8, 5, 4, 3 of a fourth, all movable:
 * in a zone of four 2M blocks, 200 pages stay free, in blocks of orders
 * 7, 6 and 3 of one pageblock. */
struct fragmenter {
	void *whole[3], *part[4];
};

static const unsigned int part_orders[4] = { 8, 5, 4, 3 };

static void fragment(za_mm_t *mm, struct fragmenter *f)
{
	for (int i = 0; i < 3; i++)
		CHECK((f->whole[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 9)));
	for (int i = 0; i < 4; i++)
		CHECK((f->part[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, part_orders[i])));
}

static void unfragment(za_mm_t *mm, struct fragmenter *f)
{
	for (int i = 0; i < 3; i++)
		CHECK_EQ(za_free_pages(mm, f->whole[i], 9), 0);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(za_free_pages(mm, f->part[i], part_orders[i]), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * A fragmenting fallback.  8M in one zone of max-order (= pageblock, 2M)
 * blocks; watermarks min 90, low 112.  fragment() leaves 200 pages free,
 * less than half a pageblock, all movable, nothing unmovable free.  The zone's batch is 1, so an
 * unmovable order-0 refill takes two blocks: two fallbacks, never claiming
 * (no pages alike, 200 free < 256), each fragmenting, no ownership change.
 * Before 6.15 each steals from the largest block and is traced as taken
 * from the buddy lists too; from 6.15 each first tries to claim at every
 * order, then steals the smallest block (order 3 first), without that
 * event.
 */
static void fragmenting_fallback(int steal_smallest)
{
	char config[256];
	snprintf(config, sizeof(config),
		 "memory=8M,zones=Normal,max_order=9,cpus=1,pcp_high_order=0,fair_zone=0,kswapd=0,"
		 "lock_stats=0,fallback_steal_smallest=%d", steal_smallest);
	za_mm_t *mm = test_mm(config);
	struct fragmenter f;
	fragment(mm, &f);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), 200);
	CHECK_EQ(za_stat(mm, "nr_free_blocks_order7") + za_stat(mm, "nr_free_blocks_order6") +
		 za_stat(mm, "nr_free_blocks_order3"), 3);

	struct recorder r = { 0 };
	za_set_tracepoint(mm, record, &r);
	void *u = za_alloc_pages(mm, 0, 0);
	CHECK(u);
	const int refill = 2;
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_EXTFRAG], refill);
	CHECK_EQ(r.fragmenting, refill);
	CHECK_EQ(r.change_ownership, 0);
	CHECK_EQ(r.first[ZA_TP_PAGE_ALLOC_EXTFRAG].migratetype, 0);
	CHECK_EQ(r.first[ZA_TP_PAGE_ALLOC_EXTFRAG].fallback_migratetype, 1);
	/* the largest block (order 7), or the smallest (order 3, then what
	 * its split left at order 0) */
	CHECK_EQ(r.first[ZA_TP_PAGE_ALLOC_EXTFRAG].fallback_order, steal_smallest ? 3 : 7);
	CHECK_EQ(r.last_extfrag.fallback_order, steal_smallest ? 0 : 6);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_ZONE_LOCKED], steal_smallest ? 0 : refill);
	CHECK_EQ(za_stat(mm, "pgfallback"), refill);
	CHECK_EQ(za_stat(mm, "pageblock_claim"), 0);
	CHECK_EQ(za_stat(mm, "nr_pageblocks_unmovable"), 0);

	CHECK_EQ(za_free_pages(mm, u, 0), 0);
	unfragment(mm, &f);
}

/*
 * alloc_nofragment (5.0's ALLOC_NOFRAGMENT).  16M: DMA32 and Normal of 8M
 * (4 pageblocks each).  fragment() leaves Normal 200 pages free, all in
 * movable blocks below a pageblock.  An unmovable allocation prefers
 * Normal; with alloc_nofragment it may not split those blocks there, so
 * it goes on to DMA32 and claims a whole free pageblock (not
 * fragmenting); without, it steals in Normal (fragmenting).  Normal's
 * batch is 1: a refill takes two blocks.
 */
static void nofragment_fallback(int nofragment)
{
	char config[256];
	snprintf(config, sizeof(config),
		 "memory=16M,zones=DMA32:8M+Normal,max_order=9,cpus=1,pcp_high_order=0,fair_zone=0,"
		 "kswapd=0,lock_stats=0,alloc_nofragment=%d", nofragment);
	za_mm_t *mm = test_mm(config);
	struct fragmenter f;
	fragment(mm, &f);
	CHECK_EQ(za_stat(mm, "nr_free_pages_Normal"), 200);
	CHECK_EQ(za_stat(mm, "nr_free_pages_DMA32"), 2048);

	struct recorder r = { 0 };
	za_set_tracepoint(mm, record, &r);
	void *u = za_alloc_pages(mm, 0, 0);
	CHECK(u);
	CHECK_EQ(za_page_zone(mm, za_virt_to_page(mm, u)), nofragment ? 0 : 1);
	CHECK_EQ(r.n[ZA_TP_PAGE_ALLOC_EXTFRAG], nofragment ? 1 : 2);
	CHECK_EQ(r.fragmenting, nofragment ? 0 : 2);
	CHECK_EQ(r.change_ownership, nofragment ? 1 : 0);
	CHECK_EQ(r.first[ZA_TP_PAGE_ALLOC_EXTFRAG].zone, nofragment ? 0 : 1);
	CHECK_EQ(za_stat(mm, "nr_pageblocks_unmovable_DMA32"), nofragment);

	CHECK_EQ(za_free_pages(mm, u, 0), 0);
	unfragment(mm, &f);
}

/* ------------------------------------------------------------------------
 * za_bind_cpu
 * ------------------------------------------------------------------------ */
static void test_bind_cpu(void)
{
	za_mm_t *mm = make("cpus=4");
	CHECK_EQ(za_bind_cpu(mm, 2), 0);
	CHECK_EQ(za_current_cpu(mm), 2);
	void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0);
	CHECK(p);
	for (int cpu = 0; cpu < 4; cpu++)
		CHECK_EQ(pageset(mm, "Normal", cpu).count, cpu == 2 ? BATCH - 1 : 0);
	CHECK_EQ(za_free_pages(mm, p, 0), 0);
	for (int cpu = 0; cpu < 4; cpu++)
		CHECK_EQ(pageset(mm, "Normal", cpu).count, cpu == 2 ? BATCH : 0);
	/* Another CPU, another set. */
	CHECK_EQ(za_bind_cpu(mm, 3), 0);
	CHECK((p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 1)));
	CHECK_EQ(pageset(mm, "Normal", 3).count, (BATCH >> 1 << 1) - 2);
	CHECK_EQ(pageset(mm, "Normal", 2).count, BATCH);
	CHECK_EQ(za_free_pages(mm, p, 1), 0);
	/* Bad CPUs are refused and change nothing. */
	errno = 0;
	CHECK_EQ(za_bind_cpu(mm, 4), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(za_last_error(), "no CPU 4");
	errno = 0;
	CHECK_EQ(za_bind_cpu(mm, -2), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(za_current_cpu(mm), 3);
	/* -1 unbinds: the machine's CPU again, whatever it is. */
	CHECK_EQ(za_bind_cpu(mm, -1), 0);
	int cpu = za_current_cpu(mm);
	CHECK(cpu >= 0 && cpu < 4);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* ------------------------------------------------------------------------
 * pcp_high_auto
 * ------------------------------------------------------------------------ */
static void **hold(size_t n)
{
	void **v = calloc(n, sizeof(void *));
	CHECK(v);
	return v;
}

/*
 * Refills grow: each takes batch << alloc_factor pages (alloc_factor one
 * more per refill, up to 5) and raises high by as much, up to high_max.
 * Refills 1..5 take 63, 126, 252, 504, 1008 (high 1027, 1153, 1405, 1909,
 * 2917), then 2016 each (high + 2016) until high_max at refill 16.
 */
static void test_auto_growth(void)
{
	za_mm_t *mm = make("cpus=1,pcp_high_auto=1");
	struct pageset ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.batch, BATCH);
	CHECK_EQ(ps.high_min, HIGH_MIN);
	CHECK_EQ(ps.high_max, HIGH_MAX);
	CHECK_EQ(ps.high, HIGH_MIN);

	enum { N = 24000 };
	void **v = hold(N);
	long taken = 0, high = HIGH_MIN;
	int refills = 0;
	for (int i = 0; i < N; i++) {
		CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
		if (i == taken) {               /* this allocation refilled */
			long size = (long)BATCH << (refills < 5 ? refills : 5);
			taken += size;
			high = high + size < HIGH_MAX ? high + size : HIGH_MAX;
			refills++;
			CHECK_EQ(za_stat(mm, "pcp_refill_pages"), taken);
			CHECK_EQ(pageset(mm, "Normal", 0).high, high);
		}
	}
	CHECK_EQ(refills, 16);
	CHECK_EQ(high, HIGH_MAX);
	CHECK_EQ(za_stat(mm, "pcp_refill"), 16);
	CHECK_EQ(taken, 63 + 126 + 252 + 504 + 1008 + 11 * 2016);
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
	free(v);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * alloc_factor: consecutive refills double (63, 126, 252); two frees halve
 * it twice (3 -> 0), so the next refill is 63 again.
 */
static void test_alloc_factor(void)
{
	za_mm_t *mm = make("cpus=1,pcp_high_auto=1");
	void **v = hold(1000);
	int n = 0;
	for (; n < 63 + 126 + 252; n++)
		CHECK((v[n] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "pcp_refill"), 3);
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 63 + 126 + 252);
	CHECK_EQ(za_free_pages(mm, v[--n], 0), 0);
	CHECK_EQ(za_free_pages(mm, v[--n], 0), 0);
	for (int i = 0; i < 3; i++)             /* the two freed, then a refill */
		CHECK((v[n++] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "pcp_refill"), 4);
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 63 + 126 + 252 + 63);
	CHECK_EQ(pageset(mm, "Normal", 0).high, HIGH_MIN + 63 + 126 + 252 + 63);
	/* A free after an allocation: the factor was 1, the next refill 63
	 * after one free (1 -> 0), not 126. */
	while (pageset(mm, "Normal", 0).count)
		CHECK((v[n++] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_free_pages(mm, v[--n], 0), 0);
	CHECK((v[n++] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK((v[n++] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 63 + 126 + 252 + 63 + 63);
	while (n)
		CHECK_EQ(za_free_pages(mm, v[--n], 0), 0);
	free(v);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* What a tick does to high: an eighth off, not below high_min (nor below
 * count - batch << 5, which is below it here). */
static int decayed(int high)
{
	int h = high - (high >> 3);
	return h > HIGH_MIN ? h : HIGH_MIN;
}

/* n order-0 movable pages, taken as CPU cpu (bound to it). */
static void **alloc_movable_on(za_mm_t *mm, int cpu, size_t n)
{
	void **v = hold(n);
	CHECK_EQ(za_bind_cpu(mm, cpu), 0);
	for (size_t i = 0; i < n; i++)
		CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	return v;
}

/* ... as CPU 0 of a fresh system would take them. */
static void **alloc_movable(za_mm_t *mm, size_t n)
{
	void **v = alloc_movable_on(mm, 0, n);
	za_bind_cpu(mm, -1);
	return v;
}

/* The zone-lock events seen, by caller, and their invariants. */
struct lock_recorder {
	_Atomic long contended, locked, locked_contended, unlocked;
	_Atomic long refill_locks, refill_pages, free_locks, free_pages, page_events;
};

static void record_locks(const struct za_tp_event *ev, void *ctx)
{
	struct lock_recorder *r = ctx;
	bool refill = ev->caller && !strcmp(ev->caller, "rmqueue_bulk");
	switch (ev->type) {
	case ZA_TP_ZONE_LOCK_CONTENDED:
		r->contended++;
		break;
	case ZA_TP_ZONE_LOCKED:
		r->locked++;
		r->locked_contended += ev->contended;
		*(refill ? &r->refill_locks : &r->free_locks) += 1;
		break;
	case ZA_TP_ZONE_LOCK_UNLOCK:
		r->unlocked++;
		*(refill ? &r->refill_pages : &r->free_pages) += ev->count;
		break;
	default:
		r->page_events++;
	}
}

/*
 * The zone-lock events (za_set_tracepoints, ZA_TP_ZONE_LOCK_EVENTS): one
 * locked and one unlock per hold on the bulk paths, as many as the
 * counters count refills and bulk frees, the unlocks' counts adding up to
 * their pages; no page event with that mask.  1000 allocations and frees
 * on CPU 0, then the same on two threads as CPUs 0 and 1, where some
 * holds may wait: each contended event is followed by a contended lock.
 */
struct locker {
	za_mm_t *mm;
	int cpu;
};

static void *churn_pages(void *arg)
{
	struct locker *l = arg;
	enum { N = 1000 };
	void **v = alloc_movable_on(l->mm, l->cpu, N);
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_free_pages(l->mm, v[i], 0), 0);
	free(v);
	za_bind_cpu(l->mm, -1);
	return NULL;
}

static void test_zone_lock_events(void)
{
	za_mm_t *mm = make("cpus=2");
	struct lock_recorder r = { 0 };
	za_set_tracepoints(mm, record_locks, &r, ZA_TP_ZONE_LOCK_EVENTS);
	for (int threads = 1; threads <= 2; threads++) {
		long long refills = za_stat(mm, "pcp_refill"), refill_pages = za_stat(mm, "pcp_refill_pages");
		long long frees = za_stat(mm, "pcp_bulkfree"), free_pages = za_stat(mm, "pcp_bulkfree_pages");
		long locks = r.refill_locks, rpages = r.refill_pages, flocks = r.free_locks, fpages = r.free_pages;
		struct locker l[2] = { { mm, 0 }, { mm, 1 } };
		pthread_t t[2];
		for (int i = 0; i < threads; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, churn_pages, &l[i]), 0);
		for (int i = 0; i < threads; i++)
			CHECK_EQ(pthread_join(t[i], NULL), 0);
		CHECK_EQ(r.refill_locks - locks, za_stat(mm, "pcp_refill") - refills);
		CHECK_EQ(r.refill_pages - rpages, za_stat(mm, "pcp_refill_pages") - refill_pages);
		CHECK_EQ(r.free_locks - flocks, za_stat(mm, "pcp_bulkfree") - frees);
		CHECK_EQ(r.free_pages - fpages, za_stat(mm, "pcp_bulkfree_pages") - free_pages);
		CHECK(r.refill_locks > locks && r.free_locks > flocks);
	}
	CHECK_EQ(r.locked, r.unlocked);
	CHECK_EQ(r.contended, r.locked_contended);
	CHECK_EQ(r.page_events, 0);
	za_set_tracepoint(mm, NULL, NULL);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * za_pcp_set_high, a replay's start: high as the tuning could have left
 * it, clamped to high_min..high_max, then kept by the free path and
 * decayed by the tick from there.  3000 allocations leave count 969 (as
 * below); with high set to 6000, their 3000 frees bring count to 3969 and
 * drain nothing; a tick takes an eighth off high (5250), still above
 * count.  Without pcp_high_auto high is fixed and the call leaves it.
 */
static void test_set_high(void)
{
	za_mm_t *mm = make("cpus=1,pcp_high_auto=1");
	struct recorder r = { 0 };
	enum { N = 3000 };
	void **v = alloc_movable(mm, N);
	CHECK_EQ(za_pcp_set_high(mm, 0, NORMAL, 0, 1 << 30), HIGH_MAX);
	CHECK_EQ(za_pcp_set_high(mm, 0, NORMAL, 0, 10), HIGH_MIN);
	CHECK_EQ(za_pcp_set_high(mm, 0, NORMAL, 0, 6000), 6000);
	CHECK_EQ(pageset(mm, "Normal", 0).high, 6000);
	za_set_tracepoint(mm, record, &r);
	for (int i = 0; i < N; i++)
		CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
	struct pageset ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.count, 969 + N);
	CHECK_EQ(ps.high, 6000);
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], 0);
	za_vmstat_tick(mm);
	ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.high, 5250);
	CHECK_EQ(ps.count, 969 + N);
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], 0);

	errno = 0;
	CHECK_EQ(za_pcp_set_high(mm, 1, NORMAL, 0, 6000), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(za_pcp_set_high(mm, 0, 2, 0, 6000), -1);
	CHECK_EQ(za_pcp_set_high(mm, 0, NORMAL, 1, 6000), -1);
	CHECK_EQ(za_pcp_set_high(mm, 0, NORMAL, -1, 6000), -1);
	za_set_tracepoint(mm, NULL, NULL);
	free(v);
	CHECK_EQ(za_mm_destroy(mm), 0);

	mm = make("cpus=1");
	int fixed = pageset(mm, "Normal", 0).high;
	CHECK_EQ(za_pcp_set_high(mm, 0, NORMAL, 0, 6000), fixed);
	CHECK_EQ(pageset(mm, "Normal", 0).high, fixed);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * Decay and a freeing burst.  3000 allocations: refills 1..6 take 63 ..
 * 2016 pages (3969), leaving count 969 and high 2917 + 2016 = 4933.  Each
 * tick takes an eighth off high; at the 13th it reaches high_min (964)
 * and the 5 pages above it are drained; the 14th changes nothing.
 * Then the 3000 pages are freed, count from 964 = high: each free adds one
 * to free_count (up to batch << 5 = 2016), and count reaching high drains
 * clamp(free_count, batch, high - batch) pages: at frees 1, 63, 126, 252,
 * 504 that is 63, 63, 126, 252, 504; at free 1008 the streak has outgrown
 * high (964 < 1008 + 63), so high becomes 1071 and 901 (964 - 63) go; at
 * free 2016 high becomes 2079 and 1008 (1071 - 63) go.  2917 pages in all,
 * 1047 left.
 */
static void test_auto_decay_and_burst(void)
{
	za_mm_t *mm = make("cpus=1,pcp_high_auto=1");
	struct recorder r = { 0 };
	enum { N = 3000 };
	void **v = alloc_movable(mm, N);
	struct pageset ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.count, 969);
	CHECK_EQ(ps.high, 4933);

	za_set_tracepoint(mm, record, &r);
	int high = 4933, ticks = 0;
	while (high > HIGH_MIN) {
		high = decayed(high);
		za_vmstat_tick(mm);
		ticks++;
		ps = pageset(mm, "Normal", 0);
		CHECK_EQ(ps.high, high);
		CHECK_EQ(ps.count, high < 969 ? high : 969);
		CHECK_EQ(r.drained_pages, high < 969 ? 969 - high : 0);
	}
	CHECK_EQ(ticks, 13);
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], 5);
	za_vmstat_tick(mm);
	CHECK_EQ(pageset(mm, "Normal", 0).high, HIGH_MIN);
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], 5);

	memset(&r, 0, sizeof(r));
	long long bulk_pages = za_stat(mm, "pcp_bulkfree_pages");
	static const struct { int at, pages, high; } drains[] = {
		{ 1, 63, 964 }, { 63, 63, 964 }, { 126, 126, 964 }, { 252, 252, 964 },
		{ 504, 504, 964 }, { 1008, 901, 1071 }, { 2016, 1008, 2079 },
	};
	size_t next = 0;
	long drained = 0;
	for (int i = 0; i < N; i++) {
		CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
		if (next < sizeof(drains) / sizeof(drains[0]) && i + 1 == drains[next].at) {
			drained += drains[next].pages;
			CHECK_EQ(pageset(mm, "Normal", 0).high, drains[next].high);
			next++;
		}
		CHECK_EQ(r.drained_pages, drained);
	}
	CHECK_EQ(drained, 2917);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages") - bulk_pages, 2917);
	ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.count, 1047);
	CHECK_EQ(ps.high, 2079);

	/* Idle ticks give back what is above the floor, in one hold (as
	 * 6.7 .. 6.18; test_drain_chunks has 6.19's batches): the count
	 * (1047) stays below high as 2079 decays to 1820, 1593, 1394, 1220,
	 * 1068, then 935 -> 964: 83 pages. */
	long long holds = za_stat(mm, "pcp_bulkfree");
	for (int i = 0; i < 6; i++)
		za_vmstat_tick(mm);
	ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.high, HIGH_MIN);
	CHECK_EQ(ps.count, HIGH_MIN);
	CHECK_EQ(r.drained_pages, 2917 + 83);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree") - holds, 1);
	free(v);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * pcp_drain_chunks=2 (6.19) changes how a drain holds the locks, not what it
 * drains: the freeing burst of auto_decay_and_burst (after its ticks took
 * high down to high_min) returns the same 2917 pages, in 7 bulk frees
 * (one zone-lock hold per drain: 63, 63, 126, 252, 504, 901, 1008)
 * without it (0, or 1: 6.10's drains of all of a CPU's lists only) and in
 * 47 with it (a batch of 63 each: 1 + 1 + 2 + 4 + 8 + 15 + 16); the ticks'
 * 83 pages in 1 and 2.
 */
static void test_drain_chunks(void)
{
	for (int chunks = 0; chunks <= 2; chunks++) {
		char config[96];
		snprintf(config, sizeof(config), "cpus=1,pcp_high_auto=1,pcp_drain_chunks=%d", chunks);
		za_mm_t *mm = make(config);
		struct recorder r = { 0 };
		enum { N = 3000 };
		void **v = alloc_movable(mm, N);
		for (int i = 0; i < 14; i++)    /* high down to high_min, as there */
			za_vmstat_tick(mm);
		za_set_tracepoint(mm, record, &r);
		long long holds = za_stat(mm, "pcp_bulkfree");
		for (int i = 0; i < N; i++)
			CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
		CHECK_EQ(r.drained_pages, 2917);
		CHECK_EQ(za_stat(mm, "pcp_bulkfree") - holds, chunks == 2 ? 47 : 7);
		holds = za_stat(mm, "pcp_bulkfree");
		for (int i = 0; i < 12; i++)
			za_vmstat_tick(mm);
		CHECK_EQ(pageset(mm, "Normal", 0).count, HIGH_MIN);
		CHECK_EQ(r.drained_pages, 2917 + 83);
		CHECK_EQ(za_stat(mm, "pcp_bulkfree") - holds, chunks == 2 ? 2 : 1);
		za_set_tracepoint(mm, NULL, NULL);
		free(v);
		CHECK(za_verify(mm) == 0);
		CHECK_EQ(za_mm_destroy(mm), 0);
	}
}

/*
 * percpu_pagelist_high_fraction pins high: with F = 8 both ends are
 * 196608 / 8 = 24576, so refills do not move it and ticks do not decay
 * it; refills still scale with alloc_factor.
 */
static void test_high_fraction_pins(void)
{
	za_mm_t *mm = make("cpus=1,pcp_high_auto=1,percpu_pagelist_high_fraction=8");
	struct pageset ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.high_min, 24576);
	CHECK_EQ(ps.high_max, 24576);
	void **v = hold(2000);
	for (int i = 0; i < 2000; i++)
		CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 63 + 126 + 252 + 504 + 1008 + 2016);
	za_vmstat_tick(mm);
	ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.high, 24576);
	CHECK_EQ(ps.count, 3969 - 2000);
	for (int i = 0; i < 2000; i++)
		CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
	CHECK_EQ(pageset(mm, "Normal", 0).high, 24576);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* The same fraction without tuning: the same fixed high, a batch per
	 * refill. */
	mm = make("cpus=1,percpu_pagelist_high_fraction=8");
	ps = pageset(mm, "Normal", 0);
	CHECK_EQ(ps.high, 24576);
	CHECK_EQ(ps.high_min, 24576);
	for (int i = 0; i < 200; i++)
		CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 4 * 63);
	for (int i = 0; i < 200; i++)
		CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
	free(v);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* The kernel's fixed high of 5.14..6.6 (pcp_high_order=2, no
	 * tuning): the low watermark's share, at least 4 batches; and F=0
	 * with tuning: 964 .. 24576. */
	mm = make("cpus=1,pcp_high_order=2");
	ps = pageset(mm, "Normal", 0);
	CHECK(ps.high == HIGH_MIN && ps.high_min == HIGH_MIN && ps.high_max == HIGH_MIN);
	CHECK_EQ(za_mm_destroy(mm), 0);
	mm = make("cpus=2,pcp_high_auto=1");
	ps = pageset(mm, "Normal", 1);
	CHECK_EQ(ps.high_min, HIGH_MIN / 2);
	CHECK_EQ(ps.high_max, HIGH_MAX / 2);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * pcp_high_min and pcp_high_max cap the tuned range (the malloc's
 * system: a process heap in a machine-sized zone).  2M and 8M are 512 and
 * 2048 pages.  Refills raise high as in test_auto_growth -- 575, 701, 953,
 * 1457 -- until the fifth meets the cap (1457 + 1008 > 2048); the sixth
 * leaves it there and takes what it leaves room for, 2048 - 63 = 1985
 * pages (3938 in all).  Ticks then decay high by an eighth to the capped
 * floor, draining what the count has above it.
 */
static int decayed_to(int high, int floor)
{
	int h = high - (high >> 3);
	return h > floor ? h : floor;
}

static void test_high_caps(void)
{
	za_mm_t *mm = make("cpus=1,pcp_high_auto=1,pcp_high_min=2M,pcp_high_max=8M");
	struct pageset ps = pageset(mm, "Normal", 0);
	CHECK(ps.high == 512 && ps.high_min == 512 && ps.high_max == 2048);
	enum { N = 3000 };
	void **v = hold(N);
	static const int highs[] = { 575, 701, 953, 1457, 2048, 2048 };
	long long refills = 0;
	for (int i = 0; i < N; i++) {
		CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
		if (za_stat(mm, "pcp_refill") != refills) {
			refills = za_stat(mm, "pcp_refill");
			CHECK(refills <= 6);
			CHECK_EQ(pageset(mm, "Normal", 0).high, highs[refills - 1]);
		}
	}
	CHECK_EQ(refills, 6);
	CHECK_EQ(za_stat(mm, "pcp_refill_pages"), 3938);
	CHECK_EQ(pageset(mm, "Normal", 0).count, 938);
	for (int high = 2048, ticks = 0; high > 512; ticks++) {
		CHECK(ticks < 12);
		high = decayed_to(high, 512);
		za_vmstat_tick(mm);
		ps = pageset(mm, "Normal", 0);
		CHECK_EQ(ps.high, high);
		CHECK_EQ(ps.count, high < 938 ? high : 938);
	}
	for (int i = 0; i < N; i++) {
		CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
		ps = pageset(mm, "Normal", 0);
		CHECK(ps.high <= 2048 && ps.count <= ps.high);
	}
	free(v);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* Caps above the kernel's range leave it; below 4 batches they
	 * stop there; a floor above the ceiling comes down to it. */
	static const struct { const char *caps; int high_min, high_max; } cases[] = {
		{ "pcp_high_min=1G,pcp_high_max=1G", HIGH_MIN, HIGH_MAX },
		{ "pcp_high_min=4K,pcp_high_max=64K", 4 * BATCH, 4 * BATCH },
		{ "pcp_high_min=8M,pcp_high_max=2M", 512, 512 },
		{ "pcp_high_max=16M", HIGH_MIN, 4096 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char config[128];
		snprintf(config, sizeof(config), "cpus=1,pcp_high_auto=1,%s", cases[i].caps);
		mm = make(config);
		ps = pageset(mm, "Normal", 0);
		CHECK_EQ(ps.high_min, cases[i].high_min);
		CHECK_EQ(ps.high_max, cases[i].high_max);
		CHECK_EQ(ps.high, cases[i].high_min);
		CHECK_EQ(za_mm_destroy(mm), 0);
	}
	/* Without tuning they cap nothing: the seeds' fixed high. */
	mm = make("cpus=1,pcp_high_max=64K");
	ps = pageset(mm, "Normal", 0);
	CHECK(ps.high == ps.high_max && ps.high > 4 * BATCH);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * pcp_refill_drain: a refill that the buddy lists can serve only from
 * memory no one used yet first returns what the lists hold of other
 * orders above high_min (1M: 256 pages).  500 order-1 blocks allocated
 * and freed leave c1 > 256 pages of order 1 on the lists; an order-2
 * allocation then misses, the order-1 excess (c1 - 256, whole blocks) goes
 * to the buddy lists, and the refill takes 15 order-2 blocks, one handed
 * out: 256 + 56 pages.  Without the switch the order-1 pages stay, and so
 * they do when an order-4 block freed just before left memory used before
 * in the buddy lists (case 2).
 */
static void test_refill_drain(void)
{
	for (int drain = 0; drain <= 2; drain++) {
		char config[128];
		snprintf(config, sizeof(config),
			 "cpus=1,pcp_high_auto=1,pcp_high_min=1M,pcp_high_max=8M,pcp_refill_drain=%d",
			 drain > 0);
		za_mm_t *mm = make(config);
		enum { N = 500 };
		void **v = hold(N);
		void *used = za_alloc_pages(mm, ZA_GFP_MOVABLE, 4);
		CHECK(used);
		for (int i = 0; i < N; i++)
			CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 1)));
		for (int i = 0; i < N; i++)
			CHECK_EQ(za_free_pages(mm, v[i], 1), 0);
		if (drain == 2)
			CHECK_EQ(za_free_pages(mm, used, 4), 0);
		int c1 = pageset(mm, "Normal", 0).count;
		CHECK(c1 > 256);
		long long bulk = za_stat(mm, "pcp_bulkfree_pages");
		void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 2);
		CHECK(p);
		CHECK_EQ(pageset(mm, "Normal", 0).count, (drain == 1 ? 256 : c1) + 56);
		CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages") - bulk, drain == 1 ? c1 - 256 : 0);
		CHECK_EQ(za_free_pages(mm, p, 2), 0);
		if (drain != 2)
			CHECK_EQ(za_free_pages(mm, used, 4), 0);
		free(v);
		CHECK(za_verify(mm) == 0);
		CHECK_EQ(za_mm_destroy(mm), 0);
	}
}

/* ------------------------------------------------------------------------
 * free_high
 * ------------------------------------------------------------------------ */

/*
 * 100 order-1 blocks held (4 refills of 31 blocks: 24 blocks, 48 pages,
 * stay on the list), then freed one after the other: free_count grows by
 * 2 a free and reaches a batch (64 >= 63) before free 33, when count is
 * 48 + 66 = 114.
 *   pcp_free_high=0: nothing drains (high 693 is never reached).
 *   =1 (5.18) and =2 (6.7) without a large cache: free 33 drains the
 *   lists (114 pages), and every later free its own 2 pages: 248.
 *   =2 with PCPF_FREE_HIGH_BATCH (llc_per_cpu above 3 batches): also only
 *   once a batch is on the lists: 114 at free 33, then 64 at frees 65 and
 *   97 (count 64 each time): 242, and 6 pages stay.
 *   =3 (6.16): free_count must reach batch + high_min / 2.
 */
static void free_streak(const char *config, long expect_drained, long expect_left)
{
	za_mm_t *mm = make(config);
	void *v[100];
	for (int i = 0; i < 100; i++)
		CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 1)));
	CHECK_EQ(pageset(mm, "Normal", 0).count, 48);
	long long before = za_stat(mm, "pcp_bulkfree_pages");
	for (int i = 0; i < 100; i++)
		CHECK_EQ(za_free_pages(mm, v[i], 1), 0);
	CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages") - before, expect_drained);
	CHECK_EQ(pageset(mm, "Normal", 0).count, expect_left);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/*
 * 60 order-1 and 60 order-0 blocks held (7 pages stay listed), freed in
 * turns, order 1 then order 0: free_count grows by 3 a pair.  5.18's
 * free_high needs no streak of high-order frees: the 22nd order-1 free
 * (free_count 63) drains all 72 pages, and each later one the 3 pages
 * since: 72 + 38 * 3 = 186, 1 page left.  6.7's needs two high-order
 * frees in a row, which this never has: nothing drains, 187 left.
 */
static void alternating(const char *config, long expect_drained, long expect_left)
{
	za_mm_t *mm = make(config);
	void *o1[60], *o0[60];
	for (int i = 0; i < 60; i++)
		CHECK((o1[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 1)));
	for (int i = 0; i < 60; i++)
		CHECK((o0[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	CHECK_EQ(pageset(mm, "Normal", 0).count, 7);
	for (int i = 0; i < 60; i++) {
		CHECK_EQ(za_free_pages(mm, o1[i], 1), 0);
		CHECK_EQ(za_free_pages(mm, o0[i], 0), 0);
	}
	CHECK_EQ(za_stat(mm, "pcp_bulkfree_pages"), expect_drained);
	CHECK_EQ(pageset(mm, "Normal", 0).count, expect_left);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void test_free_high(void)
{
	free_streak("cpus=1,pcp_free_high=0", 0, 248);
	free_streak("cpus=1,pcp_free_high=1", 248, 0);
	free_streak("cpus=1,pcp_free_high=2,llc_per_cpu=0", 248, 0);
	free_streak("cpus=1,pcp_free_high=2,llc_per_cpu=1M", 242, 6);
	free_streak("cpus=1,pcp_free_high=2,llc_per_cpu=756K", 248, 0);   /* 189 pages: not above 3 batches */
	/* 6.16: the streak must reach batch + high_min / 2 = 63 + 346: 100
	 * order-1 frees make free_count 200, and nothing drains */
	free_streak("cpus=1,pcp_free_high=3,llc_per_cpu=0", 0, 248);
	alternating("cpus=1,pcp_free_high=0", 0, 187);
	alternating("cpus=1,pcp_free_high=1", 186, 1);
	alternating("cpus=1,pcp_free_high=2,llc_per_cpu=0", 0, 187);
}

/* bulkfree_list_first (5.18): a drain for a high-order free takes the
 * freed block's list first.  Order-0 pages wait on the lists (7 after the
 * allocations); free_high's drain of 72 pages at the 22nd order-1 free
 * then takes the order-1 blocks first, so fewer blocks go than
 * round-robin would send. */
static void test_list_first(void)
{
	for (int first = 0; first <= 1; first++) {
		char config[128];
		snprintf(config, sizeof(config), "cpus=1,pcp_free_high=1,bulkfree_list_first=%d", first);
		za_mm_t *mm = make(config);
		struct recorder r = { 0 };
		void *o1[60], *o0[60];
		for (int i = 0; i < 60; i++)
			CHECK((o1[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 1)));
		for (int i = 0; i < 60; i++)
			CHECK((o0[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
		for (int i = 0; i < 60; i++)
			CHECK_EQ(za_free_pages(mm, o0[i], 0), 0);      /* 63 order-0 pages listed */
		za_set_tracepoint(mm, record, &r);
		for (int i = 0; i < 33; i++)                           /* 2 + 33 order-1 blocks */
			CHECK_EQ(za_free_pages(mm, o1[i], 1), 0);
		/* free_count was 60 (the order-0 frees) + 2 + 2: the 3rd
		 * order-1 free is a free_high, draining 63 + 2 * 5 pages; the
		 * rest drain their own. */
		CHECK_EQ(r.drained_pages, 63 + 10 + 30 * 2);
		CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], 63 + 5 + 30);
		/* With the freed list first, the first drained block is the
		 * order-1 block just freed's list's coldest; round-robin starts
		 * at the first order-0 list. */
		CHECK_EQ(r.first[ZA_TP_PAGE_PCPU_DRAIN].order, first ? 1 : 0);
		for (int i = 33; i < 60; i++)
			CHECK_EQ(za_free_pages(mm, o1[i], 1), 0);
		CHECK(za_verify(mm) == 0);
		CHECK_EQ(za_mm_destroy(mm), 0);
	}
}

/* ------------------------------------------------------------------------
 * The THP order on the per-CPU lists (pcp_high_order=2)
 * ------------------------------------------------------------------------ */
static void test_thp_lists(void)
{
	za_mm_t *mm = make("cpus=1,pcp_high_order=2");
	struct recorder r = { 0 };
	za_set_tracepoint(mm, record, &r);
	void *p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 9);
	CHECK(p);
	/* A refill of two blocks (batch >> 9 is 0: at least two). */
	CHECK_EQ(r.zone_locked_by_order[9], 2);
	CHECK_EQ(r.refill, 2);
	CHECK_EQ(za_stat(mm, "pcp_alloc_thp"), 1);
	CHECK_EQ(za_stat(mm, "pcp_alloc_miss_thp"), 1);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), 512);
	CHECK_EQ(za_free_pages(mm, p, 9), 0);
	CHECK_EQ(za_stat(mm, "pcp_free_thp"), 1);
	CHECK_EQ(za_stat(mm, "pgalloc"), 512);
	CHECK_EQ(za_stat(mm, "pgfree"), 512);
	/* Orders 1..3 have a list per migratetype: an unmovable order-1
	 * allocation does not take the movable blocks. */
	void *m = za_alloc_pages(mm, ZA_GFP_MOVABLE, 1);
	void *u = za_alloc_pages(mm, 0, 1);
	CHECK(m && u);
	CHECK_EQ(za_stat(mm, "pcp_alloc_miss_order1"), 2);
	CHECK_EQ(za_free_pages(mm, m, 1), 0);
	CHECK_EQ(za_free_pages(mm, u, 1), 0);
	za_drain_all_pages(mm);
	CHECK_EQ(r.n[ZA_TP_PAGE_PCPU_DRAIN], 2 + 2 * (BATCH >> 1));
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);

	/* Seed 000's lists: one per order, shared; no THP list. */
	mm = make("cpus=1,pcp_high_order=1");
	CHECK((m = za_alloc_pages(mm, ZA_GFP_MOVABLE, 1)));
	CHECK((u = za_alloc_pages(mm, 0, 1)));
	CHECK_EQ(za_stat(mm, "pcp_alloc_miss_order1"), 1);
	CHECK((p = za_alloc_pages(mm, ZA_GFP_MOVABLE, 9)));
	CHECK_EQ(za_stat(mm, "pcp_alloc_thp"), 0);
	CHECK_EQ(za_free_pages(mm, p, 9), 0);
	CHECK_EQ(za_free_pages(mm, m, 1), 0);
	CHECK_EQ(za_free_pages(mm, u, 1), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* ------------------------------------------------------------------------
 * The preset
 * ------------------------------------------------------------------------ */
static void expect_keys(const char *config, const char *const *want)
{
	za_mm_t *mm = test_mm(config);
	const char *s = za_mm_config_string(mm);
	for (; *want; want++) {
		char key[64];
		snprintf(key, sizeof(key), ",%s,", *want);
		char *padded = malloc(strlen(s) + 3);
		sprintf(padded, ",%s,", s);
		if (!strstr(padded, key)) {
			fprintf(stderr, "%s: '%s' not in %s\n", config, *want, s);
			exit(1);
		}
		free(padded);
	}
	/* The string round-trips, the preset first. */
	za_mm_t *again = test_mm(s);
	CHECK(!strcmp(s, za_mm_config_string(again)));
	CHECK_EQ(za_mm_destroy(again), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void expect_error(const char *config, const char *msg)
{
	errno = 0;
	za_mm_t *mm = za_mm_create(config);
	if (mm) {
		fprintf(stderr, "\"%s\" was accepted\n", config);
		exit(1);
	}
	CHECK_EQ(errno, EINVAL);
	CHECK_STR_HAS(za_last_error(), msg);
}

static void test_preset(void)
{
	static const char *const k618[] = {
		"kernel=6.18", "pcp_high_order=2", "bulkfree_outside_lock=0", "bulkfree_list_first=1",
		"pcp_high_auto=1", "pcp_free_high=3", "fallback_steal_smallest=1", "fair_zone=0",
		"alloc_nofragment=1",
		"kswapd_wake_high=1", "quicklists=0", "slub_max_order=3", "slub_big_system=0",
		"vmstat_interval_ms=1000", "pcp_batch_scale_max=5", "pcp_drain_chunks=1", NULL
	};
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=6.18", k618);
	static const char *const k619[] = { "kernel=6.19", "pcp_drain_chunks=2", "pcp_high_auto=1",
					    "pcp_free_high=3", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=6.19", k619);
	/* 6.18 opened sheaves to the caches that ask, 7.0 to all. */
	static const char *const k70[] = { "kernel=7.0", "slub_sheaves=2", "pcp_drain_chunks=2",
					   "pcp_high_auto=1", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=7.0", k70);
	static const char *const sheaves[] = { "slub_sheaves=1", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=6.18", sheaves);
	static const char *const no_sheaves[] = { "slub_sheaves=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=6.17", no_sheaves);
	/* A key after the preset overrides it; one before is overridden. */
	static const char *const after[] = { "kernel=6.18", "pcp_high_auto=0", "vmstat_interval_ms=0",
					     "pcp_free_high=3", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=6.18,pcp_high_auto=0", after);
	static const char *const before[] = { "pcp_high_auto=1", "fair_zone=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,vmstat_interval_ms=0,pcp_high_auto=0,"
		    "fair_zone=1,kernel=6.18", before);
	static const char *const k66[] = { "pcp_high_order=2", "pcp_free_high=1", "pcp_high_auto=0",
					   "bulkfree_outside_lock=0", "fallback_steal_smallest=0",
					   "vmstat_interval_ms=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=6.6.30", k66);
	static const char *const k50[] = { "alloc_nofragment=1", "pcp_high_order=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=5.0", k50);
	static const char *const k49[] = { "kernel=4.9", "alloc_nofragment=0", "pcp_high_order=0",
					   "bulkfree_outside_lock=0",
					   "bulkfree_list_first=0", "pcp_free_high=0", "fair_zone=0",
					   "kswapd_wake_high=1", "quicklists=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=4.9", k49);
	static const char *const k47[] = { "fair_zone=1", "bulkfree_outside_lock=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=4.7", k47);
	static const char *const k417[] = { "bulkfree_outside_lock=1", "pcp_high_order=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=4.17", k417);
	static const char *const k514[] = { "bulkfree_outside_lock=1", "pcp_high_order=2",
					    "pcp_free_high=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=5.14", k514);
	static const char *const k311[] = { "fair_zone=0", "kswapd_wake_high=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=3.11", k311);
	static const char *const k2623[] = { "kernel=2.6.23", "quicklists=1", "fair_zone=0", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0,kernel=2.6.23", k2623);
	static const char *const none[] = { "kernel=", "pcp_high_order=1", "fair_zone=1", NULL };
	expect_keys("memory=64M,zones=Normal,kswapd=0", none);

	expect_error("kernel=6.20", "key 'kernel': no release 6.20 known");
	expect_error("kernel=7.1", "key 'kernel': no release 7.1 known");
	expect_error("slub_sheaves=3", "'slub_sheaves'");
	expect_error("kernel=2.6", "key 'kernel'");
	expect_error("kernel=2.4.31", "key 'kernel'");
	expect_error("kernel=6", "for key 'kernel'");
	expect_error("kernel=6.x", "for key 'kernel'");
	expect_error("kernel=6.18-rc1", "for key 'kernel'");
	expect_error("kernel=6..18", "for key 'kernel'");
	expect_error("kernel=6.18.", "for key 'kernel'");
	expect_error("pcp_batch_scale_max=7", "'pcp_batch_scale_max'");
	expect_error("pcp_free_high=4", "'pcp_free_high'");
	expect_error("llc_per_cpu=lots", "'llc_per_cpu'");
}

/* ------------------------------------------------------------------------
 * Determinism: kswapd=0, lock_stats=0, vmstat_interval_ms=0, one thread
 * bound to a CPU: the same calls, the same counters and events.
 * ------------------------------------------------------------------------ */
struct replay_result {
	long long *stats;
	unsigned long long hash;
	long events;
};

static struct replay_result replay(const char *config)
{
	za_mm_t *mm = test_mm(config);
	struct recorder r = { 0 };
	za_set_tracepoint(mm, record, &r);
	enum { SLOTS = 1024 };
	static void *addr[SLOTS];
	static unsigned int ord[SLOTS];
	memset(addr, 0, sizeof(addr));
	unsigned long long rng = 42;
	for (int step = 0; step < 60000; step++) {
		if (step % 500 == 0)
			CHECK_EQ(za_bind_cpu(mm, (int)(test_rand(&rng) % 4)), 0);
		if (step % 2000 == 0)
			za_vmstat_tick(mm);
		int slot = (int)(test_rand(&rng) % SLOTS);
		if (addr[slot]) {
			CHECK_EQ(za_free_pages(mm, addr[slot], ord[slot]), 0);
			addr[slot] = NULL;
		} else {
			static const unsigned int orders[] = { 0, 0, 0, 0, 0, 0, 1, 1,
							       2, 2, 3, 3, 4, 5, 9, 0 };
			ord[slot] = orders[test_rand(&rng) % 16];
			za_gfp_t gfp = test_rand(&rng) % 3 ? ZA_GFP_MOVABLE :
				       test_rand(&rng) % 2 ? ZA_GFP_RECLAIMABLE : 0;
			CHECK((addr[slot] = za_alloc_pages(mm, gfp, ord[slot])));
		}
	}
	CHECK(za_verify(mm) == 0);
	struct replay_result res = { calloc((size_t)za_stat_count(), sizeof(long long)), r.hash,
				     r.n[0] + r.n[1] + r.n[2] };
	CHECK(res.stats);
	CHECK_EQ(za_stat_all(mm, res.stats, za_stat_count()), za_stat_count());
	for (int i = 0; i < SLOTS; i++)
		if (addr[i])
			CHECK_EQ(za_free_pages(mm, addr[i], ord[i]), 0);
	CHECK_EQ(za_bind_cpu(mm, -1), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	return res;
}

static void test_deterministic(void)
{
	static const char *const configs[] = {
		("memory=256M,zones=DMA32:64M+Normal,cpus=4,kswapd=0,lock_stats=0,kernel=6.18,"
		 "vmstat_interval_ms=0"),
		"memory=256M,zones=DMA32:64M+Normal,cpus=4,kswapd=0,lock_stats=0,kernel=4.9",
		"memory=256M,zones=DMA32:64M+Normal,cpus=4,kswapd=0,lock_stats=0",
	};
	for (size_t c = 0; c < sizeof(configs) / sizeof(configs[0]); c++) {
		struct replay_result a = replay(configs[c]), b = replay(configs[c]);
		CHECK(a.events > 10000);
		CHECK(a.hash == b.hash);
		CHECK_EQ(a.events, b.events);
		for (int i = 0; i < za_stat_count(); i++)
			if (a.stats[i] != b.stats[i]) {
				fprintf(stderr, "%s: %s differs: %lld vs %lld\n", configs[c],
					za_stat_name(i), a.stats[i], b.stats[i]);
				exit(1);
			}
		free(a.stats);
		free(b.stats);
	}
}

/* ------------------------------------------------------------------------
 * The vmstat worker: started only when asked for, stopped by destroy.
 * ------------------------------------------------------------------------ */
static void test_worker(void)
{
	/* pcp_high_auto's default interval is 1000 ms: a worker; a high
	 * above high_min decays without anyone calling the tick. */
	za_mm_t *mm = test_mm("memory=1G,zones=DMA32:256M+Normal,fair_zone=0,kswapd=0,cpus=1,"
			      "pcp_high_auto=1,vmstat_interval_ms=10");
	CHECK_STR_HAS(za_mm_config_string(mm), "vmstat_interval_ms=10,");
	void *v[300];
	CHECK_EQ(za_bind_cpu(mm, 0), 0);
	for (int i = 0; i < 300; i++)
		CHECK((v[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	for (int i = 0; i < 300; i++)
		CHECK_EQ(za_free_pages(mm, v[i], 0), 0);
	for (int tries = 0; pageset(mm, "Normal", 0).high > HIGH_MIN && tries < 500; tries++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	CHECK_EQ(pageset(mm, "Normal", 0).high, HIGH_MIN);
	CHECK_EQ(za_bind_cpu(mm, -1), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	mm = test_mm("memory=64M,zones=Normal,kswapd=0,pcp_high_auto=1");
	CHECK_STR_HAS(za_mm_config_string(mm), "vmstat_interval_ms=1000,");
	CHECK_EQ(za_mm_destroy(mm), 0);           /* joins a worker asleep for a second */
	mm = test_mm("memory=64M,zones=Normal,kswapd=0");
	CHECK_STR_HAS(za_mm_config_string(mm), "vmstat_interval_ms=0,");
	za_vmstat_tick(mm);                       /* nothing to do without tuning */
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* fallback_steal_smallest=0 and 1; alloc_nofragment=0 and 1. */
static void test_fragmenting_fallback_largest(void)
{
	fragmenting_fallback(0);
}

static void test_fragmenting_fallback_smallest(void)
{
	fragmenting_fallback(1);
}

static void test_nofragment_off(void)
{
	nofragment_fallback(0);
}

static void test_nofragment_on(void)
{
	nofragment_fallback(1);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "bind_cpu", test_bind_cpu },
		{ "tracepoints", test_tracepoints },
		{ "fragmenting_fallback_largest", test_fragmenting_fallback_largest },
		{ "fragmenting_fallback_smallest", test_fragmenting_fallback_smallest },
		{ "nofragment_off", test_nofragment_off },
		{ "nofragment_on", test_nofragment_on },
		{ "auto_growth", test_auto_growth },
		{ "alloc_factor", test_alloc_factor },
		{ "auto_decay_and_burst", test_auto_decay_and_burst },
		{ "set_high", test_set_high },
		{ "drain_chunks", test_drain_chunks },
		{ "zone_lock_events", test_zone_lock_events },
		{ "high_fraction_pins", test_high_fraction_pins },
		{ "high_caps", test_high_caps },
		{ "refill_drain", test_refill_drain },
		{ "free_high", test_free_high },
		{ "list_first", test_list_first },
		{ "thp_lists", test_thp_lists },
		{ "preset", test_preset },
		{ "deterministic", test_deterministic },
		{ "worker", test_worker },
	};
	unsetenv("ZA_CONFIG");
	return run_test_cases("test_pcp_auto", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
