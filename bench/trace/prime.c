/*
 * What the kernel's per-CPU lists must have held when a trace began.
 *
 * A list's contents follow from the kernel's own events: a refill adds
 * the blocks it takes (mm_page_alloc_zone_locked, percpu_refill=1, one
 * event a block), an allocation of a cached order takes one unless the
 * buddy lists served it directly (a zone-locked event of its pfn, not a
 * refill, just before it), a free of a cached order adds one to the
 * freeing CPU's list, and a drain takes one (mm_page_pcpu_drain).  A list
 * never holds fewer than no blocks, so the lowest its running balance
 * reaches below zero is what it held at the start, at least.  The trace
 * does not say which list a free went to (the pageblock's migratetype):
 * the block's allocation in the trace says, else movable, what most of a
 * running system's pages are.  Since 6.15 a refill that steals a block
 * from another type's pageblock traces only mm_page_alloc_extfrag (one
 * that claims the pageblock, a zone-locked event of the block first): such
 * an extfrag adds a block too.  A drain_all_pages() drains other CPUs'
 * lists on the CPU that calls it; its events are taken as that CPU's.
 *
 * The lists' whole count says more, through the kernel's rule for high: a
 * free that leaves count at or above high drains, and high is never below
 * high_min.  So a drain right after a free that could not have been
 * free_high's shows the count had reached high_min at least.
 *
 * Pages the kernel's untraced bulk allocations took (untraced.h) come off
 * their list right after the event that put them there, as the replay
 * takes them, and are of the take's type when freed again; a page the
 * trace never saw allocated goes onto the list the trace shows it on.
 */
#include "prime.h"
#include "untraced.h"
#include "live_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int prime_slot(int order)
{
	return order >= 0 && order < PRIME_SLOTS - 1 ? order : order == PRIME_THP_ORDER ? PRIME_SLOTS - 1 : -1;
}

static int64_t *cell(int64_t *a, const struct prime *p, int cpu, int zone, int slot, int mt)
{
	return &a[(((size_t)cpu * (size_t)p->nr_zones + (size_t)zone) * PRIME_SLOTS + (size_t)slot) *
		  PRIME_MTS + (size_t)mt];
}

static struct prime_lists *lists_of(const struct prime *p, int cpu, int zone)
{
	return &p->lists[(size_t)cpu * (size_t)p->nr_zones + (size_t)zone];
}

/* One block onto (+1) or off (-1) the CPU's list; off below the lowest
 * balance yet deepens what it must have held.  The lists of the block's
 * zone, or NULL if the block is of no list's order or type. */
static struct prime_lists *move(struct prime *p, const struct trace_header *h,
				const struct trace_event *ev, int mt, int delta)
{
	int slot = prime_slot(ev->order), zone = trace_pfn_zone(h, ev->pfn);
	mt = mt >= PRIME_MTS ? 1 : mt;  /* highatomic and CMA blocks: the movable list */
	if (slot < 0 || mt < 0 || ev->cpu < 0 || ev->cpu >= p->nr_cpus)
		return NULL;
	zone = zone < 0 ? p->nr_zones - 1 : zone;
	int64_t *net = cell(p->net, p, ev->cpu, zone, slot, mt);
	int64_t *need = cell(p->need, p, ev->cpu, zone, slot, mt);
	*net += delta;
	if (-*net > *need)
		*need = -*net;
	struct prime_lists *l = lists_of(p, ev->cpu, zone);
	l->net += delta * ((int64_t)1 << ev->order);
	return l;
}

int prime_slot_order(int slot)
{
	return slot < PRIME_SLOTS - 1 ? slot : PRIME_THP_ORDER;
}

struct scan {
	struct prime *p;
	const struct trace_header *h;
	struct live_map types;          /* pfn -> migratetype of its allocation */
	bool oom;
	struct cpu_seen {
		uint64_t direct_pfn;    /* the last buddy-served pfn */
		struct trace_event last;        /* the last page event of the lists' */
		struct prime_lists *refill;     /* a refill in progress: its lists, */
		int refill_zone, refill_order;  /* ... zone and order, */
		int refill_blocks;              /* ... and blocks so far */
	} *cpu;                         /* [nr_cpus] */
};

static void scan_free_state(struct scan *s)
{
	free(s->types.slot);
	free(s->cpu);
}

static void scan_alloc(struct scan *s, const struct trace_event *ev)
{
	if (ev->pfn == TRACE_NO_PFN)
		return;
	s->p->page_allocs++;
	int mt = trace_alloc_migratetype(ev);
	if (mt < PRIME_MTS)
		s->p->mt_allocs[mt]++;
	struct live *l = map_get(&s->types, ev->pfn);
	if (l)
		l->tag = mt;
	bool in_range = ev->cpu >= 0 && ev->cpu < s->p->nr_cpus;
	if (!in_range || s->cpu[ev->cpu].direct_pfn != ev->pfn)
		move(s->p, s->h, ev, mt, -1);
	if (in_range)           /* a zone-locked event serves the allocation right after it */
		s->cpu[ev->cpu].direct_pfn = TRACE_NO_PFN;
}

/* A page the trace never saw allocated goes onto the list the trace shows
 * it on later, else the movable one. */
static void scan_free(struct scan *s, const struct trace_event *ev, int unseen_type)
{
	struct live *l = map_find(&s->types, ev->pfn);
	struct prime_lists *lists = move(s->p, s->h, ev, l ? l->tag : unseen_type, +1);
	if (lists && high_track_free(&lists->high, lists->net))
		s->oom = true;
	if (lists)
		lists->alloc_factor >>= 1;
	if (l)
		map_delete(&s->types, l);
}

/* The bulk allocation's page off its list, typed for its next free. */
static void scan_take(struct scan *s, const struct trace_event *ev, const struct untraced_take *take)
{
	struct trace_event taken = *ev;
	taken.cpu = take->cpu;
	taken.order = 0;
	move(s->p, s->h, &taken, take->migratetype, -1);
	struct live *l = map_get(&s->types, take->pfn);
	if (l)
		l->tag = take->migratetype;
	else
		s->oom = true;
}

/*
 * Could a free of this order drain whatever high was (free_high: a CPU
 * freeing orders 1..3 in a row)?  Since 6.16 only once its freeing streak
 * reaches batch + high_min / 2, and the streak (free_count) stops growing
 * at batch << CONFIG_PCP_BATCH_SCALE_MAX (5, the default), which one
 * order-3 free may pass by 7: never where high_min is above about 62
 * batches, as in every zone of a few GiB.  A trace without a release is of
 * the newest, as mirror.c takes it.
 */
static bool free_high_possible(const struct trace_header *h, int zone, int order)
{
	int release = trace_release(h);
	if (order < 1 || order > 3)
		return false;
	if (zone < 0 || (release && release < 6016))
		return true;
	const struct trace_zone *z = &h->zones[zone];
	return (int64_t)z->batch + z->high_min / 2 <= ((int64_t)z->batch << PCP_BATCH_SCALE_MAX) + 7;
}

/*
 * A drain's first block right after a free to the same zone's lists: that
 * free took count to high, unless it could have set free_high off.
 * (Drains while reclaim is active start lower, at 4 batches: the bound
 * takes the trace to have run with memory to spare, as every trace of the
 * corpus.)
 */
static void scan_drain(struct scan *s, const struct trace_event *ev)
{
	int zone = trace_pfn_zone(s->h, ev->pfn);
	int cpu = ev->cpu;
	bool cpu_known = cpu >= 0 && cpu < s->p->nr_cpus;
	const struct trace_event *last = cpu_known ? &s->cpu[cpu].last : NULL;
	bool after_free = last && last->type == TEV_PAGE_FREE &&
			  trace_pfn_zone(s->h, last->pfn) == zone && prime_slot(last->order) >= 0;
	bool reached_high = after_free && !free_high_possible(s->h, zone, last->order);
	int64_t before = cpu_known ? lists_of(s->p, cpu, zone < 0 ? s->p->nr_zones - 1 : zone)->net : 0;
	struct prime_lists *lists = move(s->p, s->h, ev, ev->migratetype, -1);
	if (lists && reached_high && before < lists->low_at_drain)
		lists->low_at_drain = before;
	if (lists && after_free)
		s->oom |= high_track_drained(&lists->high, reached_high) != 0;
}

/* A block stolen for the lists: no zone-locked event of it came first. */
static void scan_steal(struct scan *s, const struct trace_event *ev)
{
	bool claimed = ev->cpu >= 0 && ev->cpu < s->p->nr_cpus &&
		       s->cpu[ev->cpu].last.type == TEV_ZONE_LOCKED && s->cpu[ev->cpu].last.pfn == ev->pfn;
	if (!claimed)
		move(s->p, s->h, ev, ev->migratetype, +1);
}

/*
 * A refill ends with the next event of its CPU: how much it raised high.
 * The kernel's nr_pcp_alloc raises high by the batch it asks for, batch
 * << alloc_factor for order 0 (a plain batch above), and takes fewer when
 * high is near; a refill that got all it asked for doubles the next one,
 * a free halves it, and one that took more than the factor so far says
 * what it was.  One block alone is no refill but an allocation the
 * buddy lists served (its zone-locked event says percpu_refill=1 for any
 * order the lists keep).
 */
static void end_refill(struct scan *s, struct cpu_seen *c)
{
	struct prime_lists *l = c->refill;
	c->refill = NULL;
	if (!l || c->refill_blocks < 2 || c->refill_zone >= s->h->nr_zones)
		return;
	int batch = s->h->zones[c->refill_zone].batch, took = c->refill_blocks << c->refill_order;
	int asked = c->refill_order ? batch : batch << l->alloc_factor;
	while (!c->refill_order && asked < took && l->alloc_factor < PCP_BATCH_SCALE_MAX)
		asked = batch << ++l->alloc_factor;     /* a streak from before the trace */
	if (!c->refill_order && took >= asked && l->alloc_factor < PCP_BATCH_SCALE_MAX)
		l->alloc_factor++;
	s->oom |= high_track_raise(&l->high, asked) != 0;
}

static void scan_refill(struct scan *s, const struct trace_event *ev, struct prime_lists *l)
{
	struct cpu_seen *c = &s->cpu[ev->cpu];
	int zone = trace_pfn_zone(s->h, ev->pfn);
	if (c->refill != l || c->refill_order != ev->order) {
		end_refill(s, c);
		*c = (struct cpu_seen){ .direct_pfn = c->direct_pfn, .last = c->last, .refill = l,
					.refill_zone = zone < 0 ? s->h->nr_zones : zone,
					.refill_order = ev->order };
	}
	c->refill_blocks++;
}

static void scan_event(struct scan *s, const struct trace_event *ev, int unseen_type)
{
	bool cpu_known = ev->cpu >= 0 && ev->cpu < s->p->nr_cpus;
	struct prime_lists *lists;
	if (cpu_known && ev->type != TEV_ZONE_LOCKED && ev->type != TEV_EXTFRAG)
		end_refill(s, &s->cpu[ev->cpu]);
	switch (ev->type) {
	case TEV_PAGE_ALLOC:
		scan_alloc(s, ev);
		break;
	case TEV_PAGE_FREE:
		scan_free(s, ev, unseen_type);
		break;
	case TEV_ZONE_LOCKED:
		if (ev->percpu_refill == 1 && (lists = move(s->p, s->h, ev, ev->migratetype, +1)))
			scan_refill(s, ev, lists);
		else if (cpu_known)
			s->cpu[ev->cpu].direct_pfn = ev->pfn;
		break;
	case TEV_PCPU_DRAIN:
		scan_drain(s, ev);
		break;
	case TEV_EXTFRAG:
		if (trace_release(s->h) >= 6015 || !trace_release(s->h))
			scan_steal(s, ev);
		break;
	case TEV_ZONE_LOCK_LOCKED:
		s->p->zone_lock_events = true;
		return;
	default:
		return;
	}
	if (cpu_known) {
		s->cpu[ev->cpu].last = *ev;
	}
}

/* A run of the CPU's vmstat worker (as the replay plays them): a tick in
 * the high tracks of its lists. */
static void scan_tick(void *ctx, int cpu)
{
	struct scan *s = ctx;
	for (int zone = 0; zone < s->p->nr_zones; zone++) {
		struct prime_lists *l = lists_of(s->p, cpu, zone);
		if (high_track_tick(&l->high, l->net))
			s->oom = true;
	}
}

int prime_scan(struct trace_reader *tr, const struct trace_header *h, int nr_cpus,
	       const struct untraced *u, struct prime *p, char *err, size_t errlen)
{
	struct scan s = { .p = p, .h = h };
	size_t cells = (size_t)nr_cpus * (size_t)(h->nr_zones + 1) * PRIME_SLOTS * PRIME_MTS;
	*p = (struct prime){ .nr_cpus = nr_cpus, .nr_zones = h->nr_zones + 1 };
	size_t nr_lists = (size_t)nr_cpus * (size_t)p->nr_zones;
	p->net = calloc(cells, sizeof(*p->net));
	p->need = calloc(cells, sizeof(*p->need));
	p->lists = calloc(nr_lists, sizeof(*p->lists));
	for (size_t i = 0; p->lists && i < nr_lists; i++)
		p->lists[i].low_at_drain = INT64_MAX;
	s.cpu = calloc((size_t)nr_cpus, sizeof(*s.cpu));
	if (!p->net || !p->need || !p->lists || !s.cpu || map_init(&s.types, 12)) {
		snprintf(err, errlen, "out of memory");
		scan_free_state(&s);
		return -1;
	}
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		s.cpu[cpu] = (struct cpu_seen){ .direct_pfn = TRACE_NO_PFN, .last.type = NR_TEV };
	struct trace_event ev;
	static const struct untraced none;
	struct untraced_cursor at = { 0 };
	uint64_t seen = 0;
	int rc = 0;
	u = u ? u : &none;
	struct tick_clock clock;
	if (tick_clock_init(&clock, u, nr_cpus)) {
		snprintf(err, errlen, "out of memory");
		scan_free_state(&s);
		return -1;
	}
	while (!s.oom && (rc = trace_next(tr, &ev)) == 1) {
		tick_clock_advance(&clock, &ev, scan_tick, &s);
		const struct untraced_take *take = untraced_take_due(u, &at, seen);
		scan_event(&s, &ev, untraced_list_type(u, &at, seen++, TMT_MOVABLE));
		if (take)
			scan_take(&s, &ev, take);
	}
	tick_clock_release(&clock);
	if (s.oom)
		snprintf(err, errlen, "out of memory");
	else if (rc < 0)
		snprintf(err, errlen, "%s", trace_error(tr));
	scan_free_state(&s);
	return rc < 0 || s.oom ? -1 : 0;
}

int64_t prime_need_pages(const struct prime *p, int cpu, int zone)
{
	int64_t pages = 0;
	for (int slot = 0; slot < PRIME_SLOTS; slot++)
		for (int mt = 0; mt < PRIME_MTS; mt++)
			pages += prime_need(p, cpu, zone, slot, mt) << prime_slot_order(slot);
	return pages;
}

int64_t prime_start_count(const struct prime *p, int cpu, int zone, int high_min, int64_t counted)
{
	int64_t pages = prime_need_pages(p, cpu, zone);
	const struct prime_lists *l = lists_of(p, cpu, zone);
	if (counted > pages)
		pages = counted;
	if (l->low_at_drain != INT64_MAX && high_min - l->low_at_drain > pages)
		pages = high_min - l->low_at_drain;
	return pages;
}

int64_t prime_start_high(const struct prime *p, int cpu, int zone, int64_t pages,
			 const struct trace_zone *z)
{
	return high_track_start(&lists_of(p, cpu, zone)->high, pages, z);
}

int64_t prime_need(const struct prime *p, int cpu, int zone, int slot, int mt)
{
	return *cell(p->need, p, cpu, zone, slot, mt);
}

void prime_free(struct prime *p)
{
	for (int i = 0; p->lists && i < p->nr_cpus * p->nr_zones; i++)
		high_track_release(&p->lists[i].high);
	free(p->net);
	free(p->need);
	free(p->lists);
	p->net = p->need = NULL;
	p->lists = NULL;
}
