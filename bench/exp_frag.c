/*
 * frag: fragmentation under a random mix of orders and migratetypes.  Each
 * thread fills its share of memory to a random 50..90% over many rounds of
 * allocations and frees; then, with that memory still held and the per-CPU
 * lists drained, it measures how much of the free memory is still usable
 * as order-9 (pageblock-sized) blocks, and how many pageblocks hold blocks
 * of a migratetype other than their own.  With --ab pcp_high_order it
 * answers seed 000's worry: its order 1..3 lists are shared by all
 * migratetypes, so they can hand a movable pageblock's block to an
 * unmovable request.
 *
 * The random sequence depends only on the iteration and the thread, so
 * both variants see the same requests.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdlib.h>

#define ROUNDS 24

struct held {
	void *addr;
	unsigned int order;
};

struct frag_state {
	za_mm_t *mm;
	int threads, iteration;
	long share;                     /* pages per thread */
	struct held **held;             /* [thread][share] */
	long *nheld;
	atomic_llong allocs, failures;
	int m_free9, m_mixed;
};

static void frag_declare(struct bench *b)
{
	struct frag_state *st = calloc(1, sizeof(*st));
	st->threads = b->opts.threads;
	st->held = calloc((size_t)st->threads, sizeof(*st->held));
	st->nheld = calloc((size_t)st->threads, sizeof(long));
	st->m_free9 = bench_metric(b, "free_order9_pct", "%", HIGHER_IS_BETTER);
	st->m_mixed = bench_metric(b, "mixed_pageblocks", "pageblocks", LOWER_IS_BETTER);
	b->state = st;
}

static void frag_release(struct bench *b)
{
	struct frag_state *st = b->state;
	for (int i = 0; i < st->threads; i++)
		free(st->held[i]);
	free(st->held);
	free(st->nheld);
}

/* Mostly small blocks, as slab and page-cache loads make them. */
static unsigned int pick_order(uint64_t *rng)
{
	unsigned int r = (unsigned int)(bench_rand(rng) % 100);
	return r < 50 ? 0 : r < 65 ? 1 : r < 77 ? 2 : r < 87 ? 3 : r < 97 ? 4 + r % 5 : 9;
}

static za_gfp_t pick_migratetype(uint64_t *rng)
{
	unsigned int r = (unsigned int)(bench_rand(rng) % 10);
	return r < 6 ? ZA_GFP_MOVABLE : r < 9 ? 0 : ZA_GFP_RECLAIMABLE;
}

static void frag_worker(int i, void *arg)
{
	struct frag_state *st = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(st->iteration * 131 + i + 1);
	struct held *held = st->held[i];
	long n = 0, pages = 0, allocs = 0, failures = 0;

	for (int round = 0; round < ROUNDS; round++) {
		long target = st->share * (long)(50 + bench_rand(&rng) % 41) / 100;
		while (pages < target) {
			unsigned int order = pick_order(&rng);
			void *p = za_alloc_pages(st->mm, pick_migratetype(&rng) | ZA_GFP_NOWAIT, order);
			if (!p) {
				failures++;
				break;
			}
			held[n++] = (struct held){ p, order };
			pages += 1L << order;
			allocs++;
		}
		while (pages > target) {
			long k = (long)(bench_rand(&rng) % (uint64_t)n);
			za_free_pages(st->mm, held[k].addr, held[k].order);
			pages -= 1L << held[k].order;
			held[k] = held[--n];
		}
	}
	st->nheld[i] = n;
	atomic_fetch_add(&st->allocs, allocs);
	atomic_fetch_add(&st->failures, failures);
}

static void frag_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct frag_state *st = b->state;
	za_mm_t *mm = v->mm;
	st->mm = mm;
	st->iteration = v->niters;
	st->share = za_stat(mm, "nr_managed_pages") / st->threads;
	for (int i = 0; i < st->threads; i++)
		if (!st->held[i])
			st->held[i] = calloc((size_t)st->share, sizeof(struct held));
	atomic_store(&st->allocs, 0);
	run_threads(st->threads, frag_worker, st);

	za_drain_all_pages(mm);
	long long big = 0;
	for (int o = 9; o <= 14; o++) {
		char name[48];
		snprintf(name, sizeof(name), "nr_free_blocks_order%d", o);
		big += za_stat(mm, name) << o;
	}
	long long free_pages = za_stat(mm, "nr_free_pages");
	it->value[st->m_free9] = free_pages ? 100.0 * (double)big / (double)free_pages : 0;
	it->value[st->m_mixed] = (double)za_stat(mm, "nr_mixed_pageblocks");
	it->ops = atomic_load(&st->allocs);

	for (int i = 0; i < st->threads; i++)
		for (long k = 0; k < st->nheld[i]; k++)
			za_free_pages(mm, st->held[i][k].addr, st->held[i][k].order);
}

static const char *const frag_report[] = {
	"--ab pcp_high_order",
	"--ab pcp_own_pageblocks",
	NULL,
};

const struct experiment exp_frag = {
	.name = "frag",
	.summary = "random orders and migratetypes to 50-90% full: order-9 availability",
	.config = "memory=512M,zones=DMA32:128M+Normal",
	.threads = 2,
	.declare = frag_declare,
	.run = frag_run,
	.release = frag_release,
	.report_runs = frag_report,
};
