/*
 * repeat: allocate and free one block of --order in a loop.  With the block
 * cached on the per-CPU lists this is the cost of a hit: no zone lock.
 */
#include "bench.h"
#include "floor.h"

#include <stdatomic.h>
#include <stdlib.h>

struct repeat_state {
	za_mm_t *mm;
	unsigned int order;
	double deadline;
	atomic_llong pairs;
	_Atomic double busy;            /* summed thread time */
	int m_pair_ns;
	struct floor_book floor;
};

static void repeat_declare(struct bench *b)
{
	struct repeat_state *st = calloc(1, sizeof(*st));
	st->order = (unsigned int)b->opts.order;
	st->m_pair_ns = bench_metric(b, "pair_ns", "ns/pair", LOWER_IS_BETTER);
	b->state = st;
}

static void repeat_worker(int i, void *arg)
{
	struct repeat_state *st = arg;
	long long pairs = 0;
	double t0 = now_seconds(), t1;
	(void)i;
	do {
		for (int k = 0; k < 4096; k++) {
			void *p = za_alloc_pages(st->mm, ZA_GFP_KERNEL, st->order);
			if (!p) {
				fprintf(stderr, "zabench repeat: %s\n", za_last_error());
				exit(1);
			}
			za_free_pages(st->mm, p, st->order);
		}
		pairs += 4096;
	} while ((t1 = now_seconds()) < st->deadline);
	atomic_fetch_add(&st->pairs, pairs);
	double busy = atomic_load(&st->busy);
	while (!atomic_compare_exchange_weak(&st->busy, &busy, busy + (t1 - t0)))
		;
}

static void repeat_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct repeat_state *st = b->state;
	st->mm = v->mm;
	atomic_store(&st->pairs, 0);
	atomic_store(&st->busy, 0.0);
	st->deadline = now_seconds() + bench_seconds(b);
	run_threads(b->opts.threads, repeat_worker, st);
	it->ops = atomic_load(&st->pairs);
	it->value[st->m_pair_ns] = atomic_load(&st->busy) / (double)it->ops * 1e9;
	floor_measure(b, v, &st->floor);
}

static void repeat_print_floor(const struct bench *b, FILE *out)
{
	const struct repeat_state *st = b->state;
	floor_print(b, &st->floor, st->m_pair_ns, out);
}

static const char *const repeat_report[] = {
	"--order 0 --ab pcp_high_order",
	"--order 0 --ab fair_zone",             /* the fast-path cost of the batch charge */
	"--order 3 --ab pcp_high_order",
	"--order 0 --threads 2 --ab pcp_high_order",
	NULL,
};

const struct experiment exp_repeat = {
	.name = "repeat",
	.summary = "alloc+free of one block of --order in a loop (a per-CPU hit)",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.declare = repeat_declare,
	.run = repeat_run,
	.report_runs = repeat_report,
	.print_extra = repeat_print_floor,
	.notes = "alloc_slowpath is seed 003's fair zone policy (fair_zone=1, on in both "
		 "variants unless it is the switch), not memory pressure: allocstall, "
		 "kswapd_wakeup and pgscan stay at 0. Every allocation charges its zone's batch "
		 "(the gap between its high and low watermarks: 196 pages in Normal and 65 in "
		 "DMA32 here) even though the block is freed at once, and when every local "
		 "batch is spent the fast path fails and the slow path resets them, as the "
		 "seed's kernel did. So one allocation per 250-odd pages allocated enters it: "
		 "0.004 per op at order 0, 1/32 = 0.031 at order 3 (8 pages a block), 0 in the "
		 "before column of --ab fair_zone. That allocation is still served from the "
		 "per-CPU list, so a 100% per-CPU hit rate and this slow-path rate are both right.",
};
