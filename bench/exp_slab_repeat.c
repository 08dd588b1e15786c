/*
 * slab-repeat: za_cache_alloc + za_cache_free of one --size object in a
 * loop, per thread: the cost of the CPU-local fast paths.
 */
#include "bench.h"
#include "floor.h"

#include <stdatomic.h>
#include <stdlib.h>

struct sr_state {
	za_cache_t *cache;
	double deadline;
	atomic_llong pairs;
	_Atomic double busy;
	int m_pair_ns;
	struct floor_book floor;
};

static void sr_declare(struct bench *b)
{
	struct sr_state *st = calloc(1, sizeof(*st));
	if (!b->opts.size)
		b->opts.size = 64;
	st->m_pair_ns = bench_metric(b, "pair_ns", "ns/pair", LOWER_IS_BETTER);
	b->state = st;
}

static void sr_worker(int i, void *arg)
{
	struct sr_state *st = arg;
	long long pairs = 0;
	double t0 = now_seconds(), t1;
	(void)i;
	do {
		for (int k = 0; k < 4096; k++) {
			void *p = za_cache_alloc(st->cache, 0);
			if (!p) {
				fprintf(stderr, "zabench slab-repeat: %s\n", za_last_error());
				exit(1);
			}
			za_cache_free(st->cache, p);
		}
		pairs += 4096;
	} while ((t1 = now_seconds()) < st->deadline);
	atomic_fetch_add(&st->pairs, pairs);
	double busy = atomic_load(&st->busy);
	while (!atomic_compare_exchange_weak(&st->busy, &busy, busy + (t1 - t0)))
		;
}

static void sr_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct sr_state *st = b->state;
	st->cache = variant_cache(v, 0, "slab-repeat", (size_t)b->opts.size);
	atomic_store(&st->pairs, 0);
	atomic_store(&st->busy, 0.0);
	st->deadline = now_seconds() + bench_seconds(b);
	run_threads(b->opts.threads, sr_worker, st);
	it->ops = atomic_load(&st->pairs);
	it->value[st->m_pair_ns] = atomic_load(&st->busy) / (double)it->ops * 1e9;
	floor_measure(b, v, &st->floor);
}

static void sr_print_floor(const struct bench *b, FILE *out)
{
	const struct sr_state *st = b->state;
	floor_print(b, &st->floor, st->m_pair_ns, out);
}

static const char *const sr_report[] = {
	"--size 64",
	"--size 64 --threads 2",
	"--size 64 --ab slub_sheaves=0:2 --config kernel=7.0",
	NULL,
};

const struct experiment exp_slab_repeat = {
	.name = "slab-repeat",
	.summary = "za_cache_alloc + za_cache_free of one --size object in a loop",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.declare = sr_declare,
	.run = sr_run,
	.report_runs = sr_report,
	.print_extra = sr_print_floor,
};
