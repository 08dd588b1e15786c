/*
 * The kernel's untraced bulk allocations, inferred (bulk_alloc.h).
 */
#include "bulk_alloc.h"
#include "live_map.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define MT_UNMOVABLE 0
#define ALLOCATED (-1)                  /* a page's state: a traced allocation's */

/*
 * What the first pass knows of a page (live_map entry, key pfn): allocated
 * (tag ALLOCATED, gfp its migratetype), or on a CPU's order-0 list since
 * event `seen` (tag the CPU, gfp the list's migratetype).
 */
static bool on_list(const struct live *l)
{
	return l->tag != ALLOCATED;
}

static struct live *page_state(struct live_map *pages, uint64_t pfn)
{
	struct live *l = map_find(pages, pfn);
	return l ? l : map_insert(pages, pfn);
}

static int add_take(struct bulk_takes *bt, const struct live *l)
{
	if (bt->n == bt->cap) {
		size_t cap = bt->cap ? bt->cap * 2 : 256;
		struct bulk_take *t = realloc(bt->take, cap * sizeof(*t));
		if (!t)
			return -1;
		bt->take = t;
		bt->cap = cap;
	}
	bt->take[bt->n++] = (struct bulk_take){ .after = l->seen, .pfn = l->key, .cpu = l->tag,
						 .migratetype = (int)l->gfp };
	return 0;
}

static int by_after(const void *a, const void *b)
{
	const struct bulk_take *x = a, *y = b;
	return x->after < y->after ? -1 : x->after > y->after;
}

/* A free of an order-0 page: if it sat on a list since it went there, a
 * bulk allocation took it.  Then it is on the freeing CPU's list, of the
 * type it was last allocated as. */
static int scan_free(struct bulk_takes *bt, struct live_map *pages, const struct trace_event *ev,
		     uint64_t seen)
{
	struct live *l = map_find(pages, ev->pfn);
	int mt = MT_UNMOVABLE;
	if (ev->order) {
		if (l)
			map_delete(pages, l);
		return 0;
	}
	if (l && on_list(l)) {
		if (add_take(bt, l))
			return -1;
		mt = (int)l->gfp;
	} else if (l) {
		mt = (int)l->gfp;
	} else if (!(l = map_insert(pages, ev->pfn))) {
		return -1;
	}
	*l = (struct live){ .key = ev->pfn, .seen = seen, .tag = ev->cpu, .gfp = (uint32_t)mt };
	return 0;
}

static int scan_event(struct bulk_takes *bt, struct live_map *pages, const struct trace_event *ev,
		      uint64_t seen, int nr_cpus)
{
	struct live *l;
	if (ev->pfn == TRACE_NO_PFN || ev->cpu < 0 || ev->cpu >= nr_cpus)
		return 0;
	switch (ev->type) {
	case TEV_PAGE_ALLOC:
		if (!(l = page_state(pages, ev->pfn)))
			return -1;
		*l = (struct live){ .key = ev->pfn, .tag = ALLOCATED,
				    .gfp = (uint32_t)trace_alloc_migratetype(ev) };
		return 0;
	case TEV_PAGE_FREE:
		return scan_free(bt, pages, ev, seen);
	case TEV_ZONE_LOCKED:
		if (ev->percpu_refill != 1 || ev->order)
			return 0;
		if (!(l = page_state(pages, ev->pfn)))
			return -1;
		*l = (struct live){ .key = ev->pfn, .seen = seen, .tag = ev->cpu,
				    .gfp = (uint32_t)(ev->migratetype < 0 ? MT_UNMOVABLE : ev->migratetype) };
		return 0;
	case TEV_PCPU_DRAIN:
		if ((l = map_find(pages, ev->pfn)))
			map_delete(pages, l);
		return 0;
	default:
		return 0;
	}
}

int bulk_scan(struct trace_reader *tr, int nr_cpus, struct bulk_takes *bt, char *err, size_t errlen)
{
	struct live_map pages;
	struct trace_event ev;
	uint64_t seen = 0;
	int rc;
	*bt = (struct bulk_takes){ 0 };
	if (map_init(&pages, 12)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	while ((rc = trace_next(tr, &ev)) == 1 && !scan_event(bt, &pages, &ev, seen++, nr_cpus))
		;
	if (rc == 1)
		snprintf(err, errlen, "out of memory");
	else if (rc < 0)
		snprintf(err, errlen, "%s", trace_error(tr));
	free(pages.slot);
	qsort(bt->take, bt->n, sizeof(*bt->take), by_after);
	return rc ? -1 : 0;
}

void bulk_free(struct bulk_takes *bt)
{
	free(bt->take);
	*bt = (struct bulk_takes){ 0 };
}

const struct bulk_take *bulk_take_due(const struct bulk_takes *bt, size_t *next, uint64_t seen)
{
	while (*next < bt->n && bt->take[*next].after < seen)
		(*next)++;
	return *next < bt->n && bt->take[*next].after == seen ? &bt->take[(*next)++] : NULL;
}
