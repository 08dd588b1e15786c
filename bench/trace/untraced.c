/*
 * What the kernel did untraced, from what it traced (untraced.h).
 */
#include "untraced.h"
#include "array.h"
#include "live_map.h"
#include "prime.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define ALLOCATED (-1)

/*
 * What the pass knows of a page (a live_map entry, key its pfn): tag
 * ALLOCATED, or the CPU whose list it went onto at event `seen`; and in
 * gfp its migratetype (the allocation's, or the list's as far as known),
 * its order, and whether it went there freed without the trace having seen
 * it allocated (the free whose list the pass looks for).
 */
#define ST_MT(g)        ((int)((g) & 0xff))
#define ST_ORDER(g)     ((int)(((g) >> 8) & 0xff))
#define ST_UNSEEN       (1u << 16)

static uint32_t st_pack(int mt, int order, bool unseen)
{
	return (uint32_t)(mt & 0xff) | (uint32_t)(order & 0xff) << 8 | (unseen ? ST_UNSEEN : 0);
}

static void set_page(struct live *l, uint64_t seen, int cpu_or_allocated, int mt, int order, bool unseen)
{
	l->seen = seen;
	l->tag = cpu_or_allocated;
	l->gfp = st_pack(mt < 0 ? TMT_UNMOVABLE : mt, order, unseen);
}

static bool on_list(const struct live *l)
{
	return l->tag != ALLOCATED;
}

static int add_take(struct untraced *u, const struct live *l)
{
	struct untraced_take *t = array_grow(u->take, &u->takes_cap, u->ntakes, sizeof(*t));
	if (!t)
		return -1;
	u->take = t;
	t[u->ntakes++] = (struct untraced_take){ .after = l->seen, .pfn = l->key, .cpu = l->tag,
						  .migratetype = ST_MT(l->gfp) };
	return 0;
}

/* The page leaves the list it went onto at l->seen, shown to be mt's: if
 * it went there freed unseen, that free's list is known now.  Only orders
 * the lists keep: a free of another went to the buddy lists, where any
 * allocation (a fallback) may take it.  Highatomic and CMA pages sit on
 * the movable list. */
static int resolve_list(struct untraced *u, const struct live *l, int mt, int order)
{
	if (!on_list(l) || !(l->gfp & ST_UNSEEN) || ST_ORDER(l->gfp) != order || mt < 0 ||
	    prime_slot(order) < 0)
		return 0;
	struct untraced_list *t = array_grow(u->list, &u->lists_cap, u->nlists, sizeof(*t));
	if (!t)
		return -1;
	u->list = t;
	t[u->nlists++] = (struct untraced_list){ .at = l->seen,
						  .migratetype = mt < PRIME_MTS ? mt : TMT_MOVABLE };
	return 0;
}

/* A free of a page that sat on a list since it went there: a bulk
 * allocation took it (order 0 only: alloc_pages_bulk's).  Either way the
 * page is now on the freeing CPU's list, of the type it was last allocated
 * as. */
static int scan_free(struct untraced *u, struct live_map *pages, const struct trace_event *ev,
		     int cpu, uint64_t seen)
{
	struct live *l = map_find(pages, ev->pfn);
	bool unseen = !l;
	if (l && on_list(l)) {
		bool taken = !ev->order && !ST_ORDER(l->gfp);
		if (taken && (resolve_list(u, l, TMT_UNMOVABLE, 0) || add_take(u, l)))
			return -1;
		unseen = !taken && (l->gfp & ST_UNSEEN);
	}
	if (!l && !(l = map_get(pages, ev->pfn)))
		return -1;
	set_page(l, seen, cpu, unseen ? TMT_UNMOVABLE : ST_MT(l->gfp), ev->order, unseen);
	return 0;
}

#define NS_PER_SEC 1000000000ULL

/* A drain no free on its CPU set off (free_frozen_page_commit drains after
 * the free it commits, free_unref_folios among its batch's commits) is the
 * vmstat worker's: the first one of each CPU is kept.  Only page events
 * count as what came before (a kernel with the zone-lock events traces
 * mm_zone_locked between a free and its drain). */
static void note_tick(struct untraced *u, const struct trace_event *ev, enum trace_event_type *last)
{
	if (ev->type >= TEV_KMALLOC)
		return;
	enum trace_event_type before = last[ev->cpu];
	last[ev->cpu] = ev->type;
	if (ev->type != TEV_PCPU_DRAIN || before == TEV_PAGE_FREE || before == TEV_PAGE_FREE_BATCHED ||
	    before == TEV_PCPU_DRAIN || u->tick_ns[ev->cpu])
		return;
	u->tick_ns[ev->cpu] = ev->ts_ns ? ev->ts_ns : 1;
}

/* A refill, or since 6.15 a steal traced by its extfrag alone: the page is
 * on the CPU's list of that type. */
static int onto_list(struct live_map *pages, const struct trace_event *ev, int cpu, uint64_t seen)
{
	struct live *l = map_get(pages, ev->pfn);
	if (!l)
		return -1;
	set_page(l, seen, cpu, ev->migratetype, ev->order, false);
	return 0;
}

/* An event of a CPU beyond the system's is the replay's CPU mod nr_cpus
 * (as it plays it), but tells nothing of a vmstat worker's phase. */
static int scan_event(struct untraced *u, struct live_map *pages, const struct trace_event *ev,
		      uint64_t seen, enum trace_event_type *last)
{
	struct live *l;
	if (ev->cpu < 0)
		return 0;
	if (ev->cpu < u->nr_cpus)
		note_tick(u, ev, last);
	int cpu = ev->cpu % u->nr_cpus;
	if (ev->pfn == TRACE_NO_PFN)
		return 0;
	switch (ev->type) {
	case TEV_PAGE_ALLOC: {
		int mt = trace_alloc_migratetype(ev);
		if (!(l = map_get(pages, ev->pfn)) || resolve_list(u, l, mt, ev->order))
			return -1;
		set_page(l, seen, ALLOCATED, mt, ev->order, false);
		return 0;
	}
	case TEV_PAGE_FREE:
		return scan_free(u, pages, ev, cpu, seen);
	case TEV_ZONE_LOCKED:
		return ev->percpu_refill == 1 ? onto_list(pages, ev, cpu, seen) : 0;
	case TEV_EXTFRAG:
		return onto_list(pages, ev, cpu, seen);
	case TEV_PCPU_DRAIN:
		if (!(l = map_find(pages, ev->pfn)))
			return 0;
		if (resolve_list(u, l, ev->migratetype, ev->order))
			return -1;
		map_delete(pages, l);
		return 0;
	default:
		return 0;
	}
}

static int by_after(const void *a, const void *b)
{
	const struct untraced_take *x = a, *y = b;
	return x->after < y->after ? -1 : x->after > y->after;
}

static int by_at(const void *a, const void *b)
{
	const struct untraced_list *x = a, *y = b;
	return x->at < y->at ? -1 : x->at > y->at;
}

int untraced_scan(struct trace_reader *tr, int nr_cpus, struct untraced *u, char *err, size_t errlen)
{
	struct live_map pages = { 0 };
	struct trace_event ev;
	uint64_t seen = 0;
	int rc;
	*u = (struct untraced){ .nr_cpus = nr_cpus };
	enum trace_event_type *last = calloc((size_t)nr_cpus, sizeof(*last));
	u->tick_ns = calloc((size_t)nr_cpus, sizeof(*u->tick_ns));
	if (!last || !u->tick_ns || map_init(&pages, 12)) {
		free(last);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		last[cpu] = NR_TEV;
	while ((rc = trace_next(tr, &ev)) == 1 && !scan_event(u, &pages, &ev, seen++, last))
		;
	free(last);
	if (rc == 1)
		snprintf(err, errlen, "out of memory");
	else if (rc < 0)
		snprintf(err, errlen, "%s", trace_error(tr));
	free(pages.slot);
	if (u->ntakes)
		qsort(u->take, u->ntakes, sizeof(*u->take), by_after);
	if (u->nlists)
		qsort(u->list, u->nlists, sizeof(*u->list), by_at);
	return rc ? -1 : 0;
}

void untraced_free(struct untraced *u)
{
	free(u->take);
	free(u->list);
	free(u->tick_ns);
	*u = (struct untraced){ 0 };
}

const struct untraced_take *untraced_take_due(const struct untraced *u, struct untraced_cursor *c,
					      uint64_t seen)
{
	while (c->take < u->ntakes && u->take[c->take].after < seen)
		c->take++;
	return c->take < u->ntakes && u->take[c->take].after == seen ? &u->take[c->take++] : NULL;
}

/* The CPU's first worker run after after_ns: at its phase, else another
 * CPU's (the workers' timers are rounded to the same seconds), else a
 * second later. */
static uint64_t next_tick(const struct untraced *u, int cpu, uint64_t after_ns)
{
	uint64_t phase = 0;
	for (int c = 0; u && c < u->nr_cpus && !phase; c++)
		phase = u->tick_ns[(cpu + c) % u->nr_cpus];
	if (!phase)
		return after_ns + NS_PER_SEC;
	uint64_t next = after_ns - after_ns % NS_PER_SEC + phase % NS_PER_SEC;
	return next > after_ns ? next : next + NS_PER_SEC;
}

int tick_clock_init(struct tick_clock *c, const struct untraced *u, int nr_cpus)
{
	*c = (struct tick_clock){ .u = u && u->nr_cpus == nr_cpus ? u : NULL, .nr_cpus = nr_cpus,
				  .next = calloc((size_t)nr_cpus, sizeof(*c->next)) };
	return c->next ? 0 : -1;
}

#define MAX_CATCHUP_TICKS 64            /* decay reaches high_min well before */

void tick_clock_advance(struct tick_clock *c, const struct trace_event *ev,
			void (*fn)(void *ctx, int cpu), void *ctx)
{
	uint64_t ts = ev->ts_ns;
	if (ev->type == TEV_PCPU_DRAIN)
		return;
	for (int cpu = 0; cpu < c->nr_cpus; cpu++) {
		uint64_t *next = &c->next[cpu];
		if (!*next) {
			*next = next_tick(c->u, cpu, ts);
			continue;
		}
		for (int n = 0; ts >= *next && n < MAX_CATCHUP_TICKS; n++) {
			fn(ctx, cpu);
			*next += NS_PER_SEC;
		}
		if (ts >= *next)        /* a long quiet stretch: decay is done */
			*next = next_tick(c->u, cpu, ts);
	}
}

void tick_clock_release(struct tick_clock *c)
{
	free(c->next);
	c->next = NULL;
}

int untraced_list_type(const struct untraced *u, struct untraced_cursor *c, uint64_t seen, int guess)
{
	while (c->list < u->nlists && u->list[c->list].at < seen)
		c->list++;
	return c->list < u->nlists && u->list[c->list].at == seen ? u->list[c->list].migratetype : guess;
}
