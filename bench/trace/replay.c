/*
 * Replaying a kernel's kmem trace through a memory system.
 *
 * One thread plays every event in the trace's time order, each as the CPU
 * that recorded it (za_bind_cpu), so each CPU's per-CPU lists see what the
 * kernel's saw.  Time is the trace's: a vmstat tick per second of it, and
 * nothing else runs (the mirror configuration has no kswapd, no lock
 * timing, no vmstat thread), so two replays of one trace do exactly the
 * same thing.
 *
 * The kernel's pfns are not ours: an allocation maps the pfn the trace
 * names to the block zonealloc returned, and a free finds it there.  A
 * free of a pfn allocated before the trace began is still a page the
 * kernel's per-CPU list received, so the model receives one too: a
 * stand-in block taken straight from the buddy lists (ZA_GFP_BUDDY, with
 * the tracepoints muted: the kernel took that page long ago), then freed
 * through the normal path.
 *
 * The kernel's untraced allocations are: a page its bulk allocator took
 * off a CPU's list (found by a first pass, untraced.h) is allocated from
 * that CPU's list right after the event that put it there.
 *
 * The kernel's tracepoint events (refills, drains, fallbacks) are not
 * replayed: they are what the model must reproduce, counted on the
 * kernel's side of the fidelity table, while zonealloc's own tracepoints
 * count the model's side.
 */
#include "bench.h"
#include "replay.h"
#include "untraced.h"
#include "live_map.h"
#include "prime.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * The replayer
 * ------------------------------------------------------------------------ */
#define MAX_CACHES 512

struct trace_cache {
	char name[40];
	uint32_t size;
	za_cache_t *cache;
};

struct replayer {
	za_mm_t *mm;
	const struct replay_opts *o;
	struct replay_result *r;
	const struct trace_header *h;
	struct live_map pages, objects;
	int bound_cpu;
	bool muted;                     /* stand-ins: not the model's doing */
	bool counting;                  /* past the warm-up: both sides count */
	const struct trace_event *playing;      /* the trace's event at hand */
	const struct untraced *untraced;        /* what the kernel did untraced */
	struct untraced_cursor at;
	const struct untraced_take *take;       /* a bulk allocation due after the event */
	int unseen_type;                /* the list a free of a page never seen allocated goes to */
	uint64_t allocs_seen;
	struct tick_clock clock;        /* each CPU's vmstat worker */
	/* header zone -> model zone index; -1 for one with no model zone,
	 * or that the header named only after the replay began */
	int model_zone[TRACE_MAX_ZONES];
	int unzoned_zone;               /* the model zone of pfns in no zone (-1: the
					 * gfp flags choose) */
	int ncaches;
	struct trace_cache caches[MAX_CACHES];
};

const char *replay_problem_name(enum replay_problem p)
{
	static const char *const names[NR_REPLAY_PROBLEMS] = {
		[RP_ALLOC_FAILED] = "allocations zonealloc could not satisfy",
		[RP_LIVE_PFN] = "allocations of a pfn already allocated (its free was lost)",
		[RP_UNTRACED_FREE] = "allocations of a page table's (or its batch's) pfn whose free was not traced",
		[RP_LIVE_OBJECT] = "allocations of a live object (its free was not traced)",
		[RP_ORDER_MISMATCH] = "frees whose order differs from the allocation's",
		[RP_KERNEL_FAILED] = "allocations that failed in the kernel (page=(null))",
		[RP_UNKNOWN_OBJECT] = "slab frees of objects allocated before the trace",
		[RP_OUTSIDE_ZONES] = "pfns in no zone of the header (zone chosen by gfp)",
		[RP_CPU_BEYOND] = "events of a CPU beyond the system's (played as CPU mod cpus)",
	};
	return names[p];
}

const char *replay_problem_key(enum replay_problem p)
{
	static const char *const keys[NR_REPLAY_PROBLEMS] = {
		[RP_ALLOC_FAILED] = "alloc_failed", [RP_LIVE_PFN] = "live_pfn",
		[RP_UNTRACED_FREE] = "untraced_free",
		[RP_LIVE_OBJECT] = "live_object",
		[RP_ORDER_MISMATCH] = "order_mismatch", [RP_KERNEL_FAILED] = "kernel_failed",
		[RP_UNKNOWN_OBJECT] = "unknown_object", [RP_OUTSIDE_ZONES] = "outside_zones",
		[RP_CPU_BEYOND] = "cpu_beyond",
	};
	return keys[p];
}

bool replay_problem_expected(enum replay_problem p)
{
	return p == RP_KERNEL_FAILED || p == RP_LIVE_OBJECT || p == RP_UNKNOWN_OBJECT ||
	       p == RP_UNTRACED_FREE;
}

static void problem(struct replayer *rp, enum replay_problem p, const struct trace_event *ev)
{
	uint64_t n = rp->r->problems[p]++;
	if (n < RP_FIRST_LINES)
		rp->r->first_lines[p][n] = ev->line;
}

/* A model event as the kernel's tracepoint prints it (--model-trace): the
 * pfn is zonealloc's, the time and line the trace's event being played. */
static void write_model_event(const struct replayer *rp, const struct za_tp_event *e)
{
	const struct trace_event *ev = rp->playing;
	unsigned long long ns = ev ? ev->ts_ns : 0;
	char fields[160];
	switch (e->type) {
	case ZA_TP_PAGE_ALLOC_ZONE_LOCKED:
		snprintf(fields, sizeof(fields), "mm_page_alloc_zone_locked: pfn=0x%lx order=%u "
			 "migratetype=%d percpu_refill=%d", e->pfn, e->order, e->migratetype,
			 e->percpu_refill);
		break;
	case ZA_TP_PAGE_PCPU_DRAIN:
		snprintf(fields, sizeof(fields), "mm_page_pcpu_drain: pfn=0x%lx order=%u migratetype=%d",
			 e->pfn, e->order, e->migratetype);
		break;
	case ZA_TP_PAGE_ALLOC_EXTFRAG:
		snprintf(fields, sizeof(fields), "mm_page_alloc_extfrag: pfn=0x%lx alloc_order=%u "
			 "fallback_order=%d alloc_migratetype=%d fallback_migratetype=%d "
			 "fragmenting=%d change_ownership=%d", e->pfn, e->order, e->fallback_order,
			 e->migratetype, e->fallback_migratetype, e->fragmenting, e->change_ownership);
		break;
	default:
		return;
	}
	fprintf(rp->o->model_trace, "%16s-%-7d [%03d] ..... %llu.%06llu: %s line=%llu\n",
		"zonealloc", 0, e->cpu, ns / 1000000000ULL, ns % 1000000000ULL / 1000ULL, fields,
		ev ? (unsigned long long)ev->line : 0ULL);
}

/* zonealloc's own tracepoints: the model's side of the table. */
static void model_tracepoint(const struct za_tp_event *e, void *ctx)
{
	struct replayer *rp = ctx;
	if (rp->muted || !rp->counting)
		return;
	if (rp->o->model_trace)
		write_model_event(rp, e);
	struct fidelity *f = &rp->r->model;
	switch (e->type) {
	case ZA_TP_PAGE_ALLOC_ZONE_LOCKED:
		fidelity_zone_locked(f, e->cpu, (int)e->order, e->percpu_refill);
		break;
	case ZA_TP_PAGE_PCPU_DRAIN:
		fidelity_drain(f, e->cpu, (int)e->order);
		break;
	case ZA_TP_PAGE_ALLOC_EXTFRAG:
		fidelity_extfrag(f, e->cpu, (int)e->order, e->fragmenting, e->change_ownership);
		break;
	case ZA_TP_ZONE_LOCKED:
		fidelity_zone_lock(f, e->cpu, e->contended);
		break;
	default:
		break;
	}
}

static int zone_named(za_mm_t *mm, const char *name)
{
	for (int z = 0; z < za_nr_zones(mm); z++)
		if (!strcmp(za_zone_name(mm, z), name))
			return z;
	return -1;
}

/* The model zone of each header zone, by name within the node.  A trace
 * without zoneinfo has its pfns in no zone: the lists the first pass
 * learnt are then Normal's, where the gfp flags put most allocations
 * (page_gfp); with zoneinfo, the pfns outside its zones are few. */
static void map_zones(struct replayer *rp)
{
	for (int t = 0; t < TRACE_MAX_ZONES; t++)
		rp->model_zone[t] = -1;
	for (int t = 0; t < rp->h->nr_zones; t++)
		rp->model_zone[t] = zone_named(rp->mm, rp->h->zones[t].name);
	rp->unzoned_zone = rp->h->nr_zones ? -1 : zone_named(rp->mm, "Normal");
}

/* The model zone of header zone t (t == nr_zones: pfns in no zone), or -1. */
static int model_zone_of(const struct replayer *rp, int t)
{
	return t < rp->h->nr_zones ? rp->model_zone[t] : rp->unzoned_zone;
}

/* The node of header zone t, or 0 for pfns in no zone. */
static int header_node(const struct replayer *rp, int t)
{
	return t < rp->h->nr_zones ? rp->h->zones[t].node : 0;
}

/* The zone limit the gfp flags ask for, as the kernel's gfp_zone(). */
static za_gfp_t gfp_zone_limit(za_mm_t *mm, uint32_t gfp)
{
	int z = -1;
	if (gfp & TGFP_DMA)
		z = zone_named(mm, "DMA");
	else if (gfp & TGFP_DMA32)
		z = zone_named(mm, "DMA32");
	else if (!(gfp & TGFP_MOVABLE) || !(gfp & TGFP_HIGHMEM))
		z = zone_named(mm, "Normal");
	return z < 0 ? 0 : ZA_GFP_ZONE(z);
}

/* The model zone and node of header zone t (t == nr_zones: pfns in no
 * zone, where the gfp flags choose). */
static za_gfp_t zone_gfp(const struct replayer *rp, int t, int *node)
{
	int zone = model_zone_of(rp, t), nid = header_node(rp, t);
	*node = zone >= 0 && nid < za_nr_nodes(rp->mm) ? nid : -1;
	return zone < 0 ? 0 : ZA_GFP_ZONE(zone);
}

/* The gfp flag of a migratetype (unmovable: none). */
static za_gfp_t type_gfp(int mt)
{
	return mt == 1 ? ZA_GFP_MOVABLE : mt == 2 ? ZA_GFP_RECLAIMABLE : 0;
}

/* The request for a page event: migratetype, zone, and may it reclaim. */
static za_gfp_t page_gfp(struct replayer *rp, const struct trace_event *ev, int *nid)
{
	za_gfp_t gfp = type_gfp(trace_alloc_migratetype(ev));
	if (!(ev->gfp & TGFP_DIRECT_RECLAIM))
		gfp |= ZA_GFP_NOWAIT;
	int tz = rp->o->zones == ZONE_BY_PFN ? trace_pfn_zone(rp->h, ev->pfn) : -1;
	*nid = -1;
	za_gfp_t zone = tz >= 0 ? zone_gfp(rp, tz, nid) : 0;
	if (zone)
		return gfp | zone;
	if (rp->o->zones == ZONE_BY_PFN && rp->h->nr_zones)
		problem(rp, RP_OUTSIDE_ZONES, ev);
	return gfp | gfp_zone_limit(rp->mm, ev->gfp);
}

/* A page mmu_gather frees: a page table's flags (pagetable_alloc:
 * GFP_PGTABLE_USER, order 0) or its table batch's (tlb_remove_table's
 * __get_free_page(GFP_NOWAIT)).  6.18 frees some of them without
 * mm_page_free: each recording of a fork-heavy job or a build shows one or
 * two allocated again with no free since. */
static bool freed_by_mmu_gather(const struct live *l)
{
	bool table = (l->gfp & (TGFP_ACCOUNT | TGFP_ZERO)) == (TGFP_ACCOUNT | TGFP_ZERO) &&
		     !(l->gfp & (TGFP_MOVABLE | TGFP_RECLAIMABLE));
	bool table_batch = l->gfp == TGFP_KSWAPD_RECLAIM;
	return !l->tag && (table || table_batch);
}

static void replay_page_alloc(struct replayer *rp, const struct trace_event *ev)
{
	if (ev->pfn == TRACE_NO_PFN) {
		problem(rp, RP_KERNEL_FAILED, ev);
		return;
	}
	struct live *l = map_find(&rp->pages, ev->pfn);
	if (l) {                /* its free was lost: give the old block back */
		problem(rp, freed_by_mmu_gather(l) ? RP_UNTRACED_FREE : RP_LIVE_PFN, ev);
		za_free_pages(rp->mm, l->addr, (unsigned int)l->tag);
		map_delete(&rp->pages, l);
	}
	int nid;
	za_gfp_t gfp = page_gfp(rp, ev, &nid);
	void *addr = za_alloc_pages_node(rp->mm, nid, gfp, (unsigned int)ev->order);
	if (!addr || !(l = map_insert(&rp->pages, ev->pfn))) {
		if (addr)
			za_free_pages(rp->mm, addr, (unsigned int)ev->order);
		problem(rp, RP_ALLOC_FAILED, ev);
		return;
	}
	l->addr = addr;
	l->tag = ev->order;
	l->gfp = ev->gfp;
}

/* A block for a pfn the kernel allocated before the trace began, of the
 * list the trace shows it on (untraced.h), else movable, as most of a
 * running system's pages are. */
static void *stand_in(struct replayer *rp, const struct trace_event *ev)
{
	struct trace_event as_alloc = *ev;
	as_alloc.migratetype = rp->unseen_type;         /* decides its list, whatever the gfp */
	as_alloc.gfp = TGFP_DIRECT_RECLAIM;
	int nid;
	za_gfp_t gfp = page_gfp(rp, &as_alloc, &nid) | ZA_GFP_BUDDY;
	rp->muted = true;
	void *addr = za_alloc_pages_node(rp->mm, nid, gfp, (unsigned int)ev->order);
	rp->muted = false;
	return addr;
}

static void replay_page_free(struct replayer *rp, const struct trace_event *ev)
{
	struct live *l = map_find(&rp->pages, ev->pfn);
	if (!l) {
		void *addr = stand_in(rp, ev);
		rp->r->early_frees++;
		if (addr)
			za_free_pages(rp->mm, addr, (unsigned int)ev->order);
		else
			problem(rp, RP_ALLOC_FAILED, ev);
		return;
	}
	if (l->tag != ev->order)
		problem(rp, RP_ORDER_MISMATCH, ev);
	za_free_pages(rp->mm, l->addr, (unsigned int)l->tag);
	map_delete(&rp->pages, l);
}

/* The cache of a kmem_cache event: by the trace's name (or object size
 * for kernels before name=), created on first sight.  -1 if none can be. */
static int trace_cache(struct replayer *rp, const struct trace_event *ev)
{
	char name[40];
	if (ev->cache[0])
		snprintf(name, sizeof(name), "%s", ev->cache);
	else
		snprintf(name, sizeof(name), "size-%u", ev->bytes_alloc);
	for (int i = 0; i < rp->ncaches; i++)
		if (!strcmp(rp->caches[i].name, name))
			return i;
	if (rp->ncaches == MAX_CACHES || !ev->bytes_alloc)
		return -1;
	struct trace_cache *c = &rp->caches[rp->ncaches];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->size = ev->bytes_alloc;
	c->cache = za_cache_create(rp->mm, c->name, c->size, 0, kernel_cache_flags(c->name), NULL);
	return c->cache ? rp->ncaches++ : -1;
}

static void free_object(struct replayer *rp, struct live *l)
{
	if (l->tag < 0)
		za_kfree(rp->mm, l->addr);
	else
		za_cache_free(rp->caches[l->tag].cache, l->addr);
	map_delete(&rp->objects, l);
}

static void replay_slab_alloc(struct replayer *rp, const struct trace_event *ev)
{
	if (!ev->ptr)
		return;         /* the kernel's own failure */
	struct live *l = map_find(&rp->objects, ev->ptr);
	if (l) {
		problem(rp, RP_LIVE_OBJECT, ev);
		free_object(rp, l);
	}
	za_gfp_t gfp = ev->gfp & TGFP_DIRECT_RECLAIM ? ZA_GFP_KERNEL : ZA_GFP_NOWAIT;
	int tag = -1;
	void *addr;
	if (ev->type == TEV_KMALLOC)
		addr = za_kmalloc(rp->mm, ev->bytes_req ? ev->bytes_req : 1, gfp);
	else
		addr = (tag = trace_cache(rp, ev)) < 0 ? NULL : za_cache_alloc(rp->caches[tag].cache, gfp);
	if (!addr || !(l = map_insert(&rp->objects, ev->ptr))) {
		if (addr)
			tag < 0 ? za_kfree(rp->mm, addr) : za_cache_free(rp->caches[tag].cache, addr);
		problem(rp, RP_ALLOC_FAILED, ev);
		return;
	}
	l->addr = addr;
	l->tag = tag;
}

static void replay_slab_free(struct replayer *rp, const struct trace_event *ev)
{
	if (!ev->ptr)
		return;         /* kfree(NULL) */
	struct live *l = map_find(&rp->objects, ev->ptr);
	if (l)
		free_object(rp, l);
	else
		problem(rp, RP_UNKNOWN_OBJECT, ev);
}

/* A run of the CPU's vmstat worker, when the trace's clock says
 * (untraced.h's tick_clock). */
static void vmstat_tick(void *ctx, int cpu)
{
	za_vmstat_tick_cpu(((struct replayer *)ctx)->mm, cpu);
}

static void act_as(struct replayer *rp, const struct trace_event *ev)
{
	int cpu = ev->cpu, nr = za_nr_cpus(rp->mm);
	if (cpu >= nr) {
		problem(rp, RP_CPU_BEYOND, ev);
		cpu %= nr;
	}
	if (cpu != rp->bound_cpu)
		za_bind_cpu(rp->mm, rp->bound_cpu = cpu);
}

static void play(struct replayer *rp, const struct trace_event *ev)
{
	bool page = rp->o->events & REPLAY_PAGE, slab = rp->o->events & REPLAY_SLAB;
	switch (ev->type) {
	case TEV_PAGE_ALLOC:
		if (page)
			replay_page_alloc(rp, ev);
		break;
	case TEV_PAGE_FREE:
		if (page)
			replay_page_free(rp, ev);
		break;
	case TEV_KMALLOC:
	case TEV_CACHE_ALLOC:
		if (slab)
			replay_slab_alloc(rp, ev);
		break;
	case TEV_KFREE:
	case TEV_CACHE_FREE:
		if (slab)
			replay_slab_free(rp, ev);
		break;
	default:
		/* The kernel's own bookkeeping, counted, not played; and
		 * mm_page_free_batched, which the kernel emits for a page
		 * whose mm_page_free (free_pages_prepare) came just before:
		 * the same free, committed to a per-CPU list in a batch. */
		break;
	}
}

/* The page the kernel's bulk allocator took off the CPU's list right after
 * the event that put it there (untraced.h): may reclaim, as vmalloc's
 * GFP_KERNEL. */
static void play_take(struct replayer *rp, const struct trace_event *ev)
{
	struct trace_event taken = *ev;
	taken.type = TEV_PAGE_ALLOC;
	taken.order = 0;
	taken.migratetype = rp->take->migratetype;
	taken.gfp = TGFP_DIRECT_RECLAIM | TGFP_KSWAPD_RECLAIM | TGFP_IO | TGFP_FS;
	replay_page_alloc(rp, &taken);
	rp->r->bulk_takes++;
}

/* n blocks of the order and type from the buddy lists onto the bound CPU's
 * list: what the kernel's list held before the first event. */
static void fill_list(struct replayer *rp, int t, int order, int mt, int64_t n)
{
	int node;
	za_gfp_t gfp = zone_gfp(rp, t, &node) | type_gfp(mt) | ZA_GFP_BUDDY;
	void **blocks = n > 0 ? malloc(sizeof(void *) * (size_t)n) : NULL;
	int64_t got = 0;
	while (blocks && got < n && (blocks[got] = za_alloc_pages_node(rp->mm, node, gfp, (unsigned int)order)))
		got++;
	while (got)
		za_free_pages(rp->mm, blocks[--got], (unsigned int)order);
	free(blocks);
}

/* The type the trace allocates least: where pages the zoneinfo counted on
 * a CPU's lists, beyond what the trace needed of them, sat. */
static int idle_type(const struct prime *p)
{
	int mt = 0;
	for (int i = 1; i < PRIME_MTS; i++)
		if (p->mt_allocs[i] < p->mt_allocs[mt])
			mt = i;
	return mt;
}

/* The pages the kernel's lists for header zone t held on the CPU when the
 * trace began (prime.c): zoneinfo's count is of then unless it was taken
 * at another time (an excerpt's, of the recording's start seconds earlier;
 * this machine's, of now). */
static int64_t start_count(const struct replayer *rp, const struct prime *p, int cpu, int t)
{
	const struct trace_zone *z = t < rp->h->nr_zones ? &rp->h->zones[t] : NULL;
	int64_t counted = z && cpu < TRACE_PCP_CPUS && !rp->h->zoneinfo_later ? z->pcp_count[cpu] : 0;
	return prime_start_count(p, cpu, t, z ? z->high_min : 0, counted);
}

/* Sets the tuned high of the CPU's lists for header zone t; false if the
 * header has no such zone or CPU. */
static bool set_start_high(struct replayer *rp, int cpu, int t, int64_t high)
{
	int zone = model_zone_of(rp, t), nid = header_node(rp, t);
	if (cpu >= TRACE_PCP_CPUS || zone < 0)
		return false;
	za_pcp_set_high(rp->mm, nid < za_nr_nodes(rp->mm) ? nid : 0, zone, cpu,
			high < INT_MAX ? (int)high : INT_MAX);
	return true;
}

/* The tuned high the CPU's lists for header zone t start at, holding
 * `pages`: at least those (a free past high would have drained them), and
 * the zoneinfo's high if it was taken at the trace's start.  One taken at
 * another time (an excerpt's, this machine's) says nothing of the trace's
 * high: the trace shows it instead (start_high.h). */
static int64_t start_high(const struct replayer *rp, const struct prime *p, int cpu, int t,
			  int64_t pages)
{
	if (t >= rp->h->nr_zones)       /* no zoneinfo: no high shown */
		return pages;
	const struct trace_zone *z = &rp->h->zones[t];
	int64_t shown = rp->h->zoneinfo_later ? prime_start_high(p, cpu, t, pages, z) : z->pcp_high[cpu];
	return pages > shown ? pages : shown;
}

/*
 * Each CPU's lists start as the kernel's were (prime.c): with what they
 * must have held, and with at least the pages their count shows, the rest
 * on the list the trace uses least.  Stand-ins from the buddy lists,
 * freed as that CPU with the tracepoints muted, under the largest high
 * (so count reaching high drains none of them); then high is the one the
 * zoneinfo shows for the CPU, or for a zoneinfo of another time the one the trace shows
 * (start_high.h), or the count if more: its decay by the vmstat worker is
 * what drains lists the kernel filled before the trace began.  The fill is
 * a freeing streak, so free_high (pcp_free_high) may still drain the lists
 * of orders 1..3 when their fill is long; filling the highest orders
 * first, while the streak is short, was tried: no row of the scorecard
 * moved across 25%, two across 10% the wrong way.
 */
static void warm_start(struct replayer *rp, const struct prime *p)
{
	int cpus = za_nr_cpus(rp->mm) < p->nr_cpus ? za_nr_cpus(rp->mm) : p->nr_cpus;
	rp->muted = true;
	for (int cpu = 0; cpu < cpus; cpu++) {
		za_bind_cpu(rp->mm, rp->bound_cpu = cpu);
		for (int t = 0; t < p->nr_zones; t++) {
			int64_t pages = start_count(rp, p, cpu, t);
			bool tuned = set_start_high(rp, cpu, t, INT_MAX);
			for (int slot = 0; slot < PRIME_SLOTS; slot++)
				for (int mt = 0; mt < PRIME_MTS; mt++)
					fill_list(rp, t, prime_slot_order(slot), mt,
						  prime_need(p, cpu, t, slot, mt));
			fill_list(rp, t, 0, idle_type(p), pages - prime_need_pages(p, cpu, t));
			if (tuned)
				set_start_high(rp, cpu, t, start_high(rp, p, cpu, t, pages));
		}
	}
	rp->muted = false;
}

/* Gives back everything the trace left allocated, so the system can be
 * destroyed clean; not the model's doing, so not counted. */
static void release_all(struct replayer *rp)
{
	rp->muted = true;
	for (size_t i = 0; i < (size_t)1 << rp->objects.bits; i++)
		while (rp->objects.slot[i].key != NO_KEY)
			free_object(rp, &rp->objects.slot[i]);
	for (size_t i = 0; i < (size_t)1 << rp->pages.bits; i++)
		if (rp->pages.slot[i].key != NO_KEY)
			za_free_pages(rp->mm, rp->pages.slot[i].addr, (unsigned int)rp->pages.slot[i].tag);
	for (int i = 0; i < rp->ncaches; i++)
		za_cache_destroy(rp->caches[i].cache);
	za_set_tracepoint(rp->mm, NULL, NULL);
	za_bind_cpu(rp->mm, -1);
}

static int replay_stream(struct replayer *rp, struct trace_reader *tr, char *err, size_t errlen)
{
	struct trace_event ev;
	uint64_t first_ts = 0, last_ts = 0;
	bool first = true;
	int rc;
	while ((rc = trace_next(tr, &ev)) == 1) {
		rp->r->events++;
		if (!rp->counting) {
			rp->allocs_seen += ev.type == TEV_PAGE_ALLOC;
			rp->counting = rp->allocs_seen > rp->r->warmup_allocs;
			rp->r->warmup_events += !rp->counting;
		}
		if (rp->counting && first) {
			first_ts = ev.ts_ns;
			first = false;
		}
		last_ts = ev.ts_ns;
		if (rp->counting)
			fidelity_count_kernel(&rp->r->kernel, &ev);
		if (!rp->mm)
			continue;
		tick_clock_advance(&rp->clock, &ev, vmstat_tick, rp);
		act_as(rp, &ev);
		rp->take = untraced_take_due(rp->untraced, &rp->at, rp->r->events - 1);
		rp->unseen_type = untraced_list_type(rp->untraced, &rp->at, rp->r->events - 1, TMT_MOVABLE);
		rp->playing = &ev;
		play(rp, &ev);
		if (rp->take && (rp->o->events & REPLAY_PAGE))
			play_take(rp, &ev);
	}
	rp->playing = NULL;
	rp->r->trace_ns = last_ts - first_ts;
	FILE *f = fmemopen(rp->r->lines_not_used, sizeof(rp->r->lines_not_used), "w");
	if (f) {
		trace_print_skipped(tr, f);
		fclose(f);
	}
	rp->r->model.page_allocs = rp->r->kernel.page_allocs;
	if (rc < 0)
		snprintf(err, errlen, "%s", trace_error(tr));
	return rc < 0 ? -1 : 0;
}

/* path's first n characters and suffix, if that names a readable file. */
static bool side_file_at(const char *path, size_t n, const char *suffix, char *out, size_t len)
{
	return snprintf(out, len, "%.*s%s", (int)n, path, suffix) < (int)len && !access(out, R_OK);
}

const char *replay_side_file(const char *path, const char *suffix, char *out, size_t len)
{
	static const char *const ends[] = { ".zst", ".xz", ".gz", ".trace", ".txt", ".dat" };
	size_t n = strlen(path);
	if (side_file_at(path, n, suffix, out, len))
		return out;
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		size_t e = strlen(ends[i]);
		if (n > e && !strncmp(path + n - e, ends[i], e) &&
		    side_file_at(path, n -= e, suffix, out, len))
			return out;
	}
	return NULL;
}

/* The pfns of a trace's first page events that must all lie in this
 * machine's zones for its zoneinfo to stand in for the trace's. */
#define LOCAL_FIT_EVENTS 20000

/* Whether the trace's first page events (at least one) all name pfns in
 * the zones of `local` and CPUs below `cpus`. */
static bool pfns_fit(const char *path, const struct trace_header *local, int cpus)
{
	char err[256];
	struct trace_reader *tr = trace_open(path, err, sizeof(err));
	struct trace_event ev;
	int seen = 0, rc = 0;
	if (!tr)
		return false;
	while (seen < LOCAL_FIT_EVENTS && (rc = trace_next(tr, &ev)) > 0) {
		if (ev.type >= TEV_KMALLOC || ev.pfn == TRACE_NO_PFN)      /* page events only */
			continue;
		if (trace_pfn_zone(local, ev.pfn) < 0 || ev.cpu >= cpus)
			break;
		seen++;
	}
	bool fit = seen == LOCAL_FIT_EVENTS || (seen && rc == 0);
	trace_close(tr);
	return fit;
}

bool replay_local_zoneinfo(const char *path, struct replay_opts *o, struct trace_header *h)
{
	static const char proc[] = "/proc/zoneinfo";
	struct trace_header *local = malloc(sizeof(*local));     /* h with this machine's zones */
	char err[256];
	bool ok = local && !o->zoneinfo && !h->nr_zones;
	if (ok) {
		*local = *h;
		ok = !trace_read_zoneinfo(proc, local, err, sizeof(err));
	}
	int cpus = 0;
	for (int z = 0; ok && z < local->nr_zones; z++)
		if (local->zones[z].nr_pagesets > cpus)
			cpus = local->zones[z].nr_pagesets;
	ok = ok && (!h->nr_cpus || cpus == h->nr_cpus) && pfns_fit(path, local, cpus);
	if (ok) {
		*h = *local;
		h->zoneinfo_later = h->zoneinfo_here = true;    /* as replay_open marks it */
		o->zoneinfo = proc;
		o->zoneinfo_here = true;
	}
	free(local);
	return ok;
}

struct trace_reader *replay_open(const char *path, const struct replay_opts *o,
				 struct trace_header *h, char *err, size_t errlen)
{
	struct trace_reader *tr = trace_open(path, err, errlen);
	if (!tr)
		return NULL;
	*h = *trace_header(tr);
	if ((o->zoneinfo && trace_read_zoneinfo(o->zoneinfo, h, err, errlen)) ||
	    (o->sysctl && trace_read_sysctl(o->sysctl, h, err, errlen))) {
		trace_close(tr);
		return NULL;
	}
	h->zoneinfo_later |= o->zoneinfo_here;
	h->zoneinfo_here |= o->zoneinfo_here;
	return tr;
}

/* The first passes: what the kernel did untraced (untraced.h; u NULL: a
 * pass with no model to play it), then what the lists held and the
 * trace's length. */
static int prime_trace(const char *path, const struct replay_opts *o, struct trace_header *h,
		       int nr_cpus, struct untraced *u, struct prime *p, char *err, size_t errlen)
{
	struct trace_reader *tr;
	if (u) {
		if (!(tr = replay_open(path, o, h, err, errlen)))
			return -1;
		int rc = untraced_scan(tr, nr_cpus, u, err, errlen);
		trace_close(tr);
		if (rc)
			return -1;
	}
	if (!(tr = replay_open(path, o, h, err, errlen)))
		return -1;
	int rc = prime_scan(tr, h, nr_cpus, u, p, err, errlen);
	if (!rc && !trace_events(tr)) {         /* a header, or lines none of which was one */
		snprintf(err, errlen, "%s: no kmem event in its %" PRIu64 " lines", path,
			 trace_lines(tr));
		rc = -1;
	}
	trace_close(tr);
	return rc;
}

/* Enough page allocations for the tuned highs to settle, and never more
 * than a tenth of the trace: the lists start as the kernel's were. */
static uint64_t auto_warmup(uint64_t page_allocs)
{
	uint64_t tenth = page_allocs / 10;
	return tenth < REPLAY_WARMUP_MAX ? tenth : REPLAY_WARMUP_MAX;
}

int replay_trace(za_mm_t *mm, const char *path, const struct replay_opts *o,
		 struct replay_result *r, char *err, size_t errlen)
{
	struct replayer *rp = calloc(1, sizeof(*rp));
	struct trace_header *h = malloc(sizeof(*h));
	struct trace_reader *tr = NULL;
	struct prime start = { 0 };
	struct untraced untraced = { 0 };
	int nr_cpus = mm ? za_nr_cpus(mm) : 1;
	struct tick_clock clock = { 0 };
	int rc = -1;
	if (!rp || !h || map_init(&rp->pages, 12) || map_init(&rp->objects, 12)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (prime_trace(path, o, h, nr_cpus, mm ? &untraced : NULL, &start, err, errlen))
		goto fail;
	if (tick_clock_init(&clock, &untraced, nr_cpus)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!(tr = replay_open(path, o, h, err, errlen)))
		goto fail;
	r->warmup_allocs = o->warmup == REPLAY_WARMUP_AUTO ? auto_warmup(start.page_allocs) : o->warmup;
	*rp = (struct replayer){ .mm = mm, .o = o, .r = r, .h = h, .bound_cpu = -1,
				 .counting = !r->warmup_allocs, .pages = rp->pages,
				 .objects = rp->objects, .untraced = &untraced, .clock = clock };
	if (mm) {
		map_zones(rp);
		za_set_tracepoints(mm, model_tracepoint, rp, ZA_TP_PAGE_EVENTS |
				   (start.zone_lock_events ? ZA_TP_ZONE_LOCK_EVENTS : 0));
		if (!o->empty_start)
			warm_start(rp, &start);
	}
	rc = replay_stream(rp, tr, err, errlen);
	if (mm)
		release_all(rp);
	trace_close(tr);
fail:
	if (rp) {
		free(rp->pages.slot);
		free(rp->objects.slot);
	}
	free(rp);
	free(h);
	tick_clock_release(&clock);
	prime_free(&start);
	untraced_free(&untraced);
	return rc;
}
