/*
 * publish: what zabench top costs the process it watches and itself, on a
 * system of --size slab caches (default 100) of 50 objects each and two
 * nodes: a watched publish (counters folded, the five reports rendered)
 * and a reader's za_peek_read of it, each timed alone.
 */
#include "bench.h"

#include <stdlib.h>
#include <unistd.h>

#define OBJECTS_PER_CACHE 50

/* A variant's caches and their objects, made at its first iteration (they
 * live as long as its system does) and freed before it is destroyed. */
struct filled {
	za_cache_t **caches;
	void **objs;                    /* OBJECTS_PER_CACHE a cache */
	long nr_caches;
};

struct pub_state {
	struct filled filled[MAX_VARIANTS];
	int m_publish_us, m_read_us;
};

static void pub_declare(struct bench *b)
{
	struct pub_state *st = calloc(1, sizeof(*st));
	if (!b->opts.size)
		b->opts.size = 100;
	st->m_publish_us = bench_metric(b, "publish_us", "us/publish", LOWER_IS_BETTER);
	st->m_read_us = bench_metric(b, "read_us", "us/read", LOWER_IS_BETTER);
	b->state = st;
}

static struct filled *filled_of(struct bench *b, const struct variant *v)
{
	struct pub_state *st = b->state;
	return &st->filled[v - b->variants];
}

static void fill(struct filled *f, za_mm_t *mm, long caches)
{
	if (f->caches)
		return;
	f->caches = calloc((size_t)caches, sizeof(*f->caches));
	f->objs = calloc((size_t)caches * OBJECTS_PER_CACHE, sizeof(void *));
	for (long c = 0; f->caches && f->objs && c < caches; c++, f->nr_caches++) {
		char name[32];
		snprintf(name, sizeof(name), "publish-%ld", c);
		za_cache_t *cache = f->caches[c] = za_cache_create(mm, name, 32 + 8 * (size_t)c, 0, 0, NULL);
		for (int k = 0; cache && k < OBJECTS_PER_CACHE; k++)
			f->objs[c * OBJECTS_PER_CACHE + k] = za_cache_alloc(cache, ZA_GFP_KERNEL);
	}
}

static void pub_cleanup(struct bench *b, struct variant *v)
{
	struct filled *f = filled_of(b, v);
	for (long c = 0; c < f->nr_caches; c++) {
		for (int k = 0; f->caches[c] && k < OBJECTS_PER_CACHE; k++)
			if (f->objs[c * OBJECTS_PER_CACHE + k])
				za_cache_free(f->caches[c], f->objs[c * OBJECTS_PER_CACHE + k]);
		za_cache_destroy(f->caches[c]);
	}
	free(f->caches);
	free(f->objs);
	*f = (struct filled){ 0 };
}

static void pub_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct pub_state *st = b->state;
	fill(filled_of(b, v), v->mm, b->opts.size);
	za_peek_t *p = za_peek_open(getpid(), za_publish_id(v->mm));  /* watched from now on */
	if (!p || za_publish(v->mm)) {
		fprintf(stderr, "zabench publish: %s (run with publish=1)\n", za_last_error());
		exit(1);
	}
	double publish = 0, read = 0, deadline = now_seconds() + bench_seconds(b);
	long long n = 0;
	do {
		double t0 = now_seconds();
		za_publish(v->mm);
		double t1 = now_seconds();
		za_peek_read(p);
		read += now_seconds() - t1;
		publish += t1 - t0;
		n++;
	} while (now_seconds() < deadline);
	za_peek_close(p);
	it->ops = n;
	it->value[st->m_publish_us] = publish / (double)n * 1e6;
	it->value[st->m_read_us] = read / (double)n * 1e6;
}

static const char *const pub_report[] = {
	"--size 100",
	NULL,
};

const struct experiment exp_publish = {
	.name = "publish",
	.summary = "zabench top's cost: a watched publish of --size caches on 2 nodes, and a read of it",
	.config = "memory=1G,nodes=2,kswapd=0,publish=1,publish_interval_ms=0",
	.threads = 1,
	.declare = pub_declare,
	.run = pub_run,
	.report_runs = pub_report,
	.cleanup = pub_cleanup,
};
