/*
 * Counters (folded from their per-CPU, per-zone and global parts on read)
 * and the kernel-format text reports.
 */
#include "internal.h"
#include "mm_layers.h"
#include "pcp.h"
#include "worker.h"

#include <errno.h>
#include <string.h>

struct event_info {
	const char *name;
	bool is_max;        /* fold by maximum, not sum */
	bool cycles;        /* stored in cycles, read in ns */
};

_Static_assert(NR_PCP_ORDERS == 5, "event_info names each per-CPU order slot");

static const struct event_info event_info[NR_EVENTS] = {
	[EV_PGALLOC] = { .name = "pgalloc" },
	[EV_PGFREE] = { .name = "pgfree" },
	[EV_PCP_ALLOC + 0] = { .name = "pcp_alloc_order0" },
	[EV_PCP_ALLOC + 1] = { .name = "pcp_alloc_order1" },
	[EV_PCP_ALLOC + 2] = { .name = "pcp_alloc_order2" },
	[EV_PCP_ALLOC + 3] = { .name = "pcp_alloc_order3" },
	[EV_PCP_ALLOC + PCP_THP_SLOT] = { .name = "pcp_alloc_thp" },
	[EV_PCP_ALLOC_MISS + 0] = { .name = "pcp_alloc_miss_order0" },
	[EV_PCP_ALLOC_MISS + 1] = { .name = "pcp_alloc_miss_order1" },
	[EV_PCP_ALLOC_MISS + 2] = { .name = "pcp_alloc_miss_order2" },
	[EV_PCP_ALLOC_MISS + 3] = { .name = "pcp_alloc_miss_order3" },
	[EV_PCP_ALLOC_MISS + PCP_THP_SLOT] = { .name = "pcp_alloc_miss_thp" },
	[EV_PCP_FREE + 0] = { .name = "pcp_free_order0" },
	[EV_PCP_FREE + 1] = { .name = "pcp_free_order1" },
	[EV_PCP_FREE + 2] = { .name = "pcp_free_order2" },
	[EV_PCP_FREE + 3] = { .name = "pcp_free_order3" },
	[EV_PCP_FREE + PCP_THP_SLOT] = { .name = "pcp_free_thp" },
	[EV_PCP_REFILL] = { .name = "pcp_refill" },
	[EV_PCP_REFILL_PAGES] = { .name = "pcp_refill_pages" },
	[EV_PCP_REFILL_HOLD] = { .name = "pcp_refill_hold_ns", .cycles = true },
	[EV_PCP_BULKFREE] = { .name = "pcp_bulkfree" },
	[EV_PCP_BULKFREE_PAGES] = { .name = "pcp_bulkfree_pages" },
	[EV_PCP_BULKFREE_HOLD] = { .name = "pcp_bulkfree_hold_ns", .cycles = true },
	[EV_PCP_BULKFREE_HOLD_MAX] = { .name = "pcp_bulkfree_hold_max_ns", .is_max = true, .cycles = true },
	[EV_PCP_DRAIN] = { .name = "pcp_drain" },
	[EV_PCP_SPLIT] = { .name = "pcp_split" },
	[EV_PCP_REMOTE_FREE] = { .name = "pcp_remote_free" },
	[EV_PCP_BLOCK_CLAIM] = { .name = "pcp_block_claim" },
	[EV_PCP_BLOCK_RECOVER] = { .name = "pcp_block_recover" },
	[EV_PCP_MERGE] = { .name = "pcp_merge" },
	[EV_PCP_TRYLOCK_FAIL] = { .name = "pcp_trylock_fail" },
	[EV_ZONE_LOCK_ACQUIRE] = { .name = "zone_lock_acquire" },
	[EV_ZONE_LOCK_CONTENDED] = { .name = "zone_lock_contended" },
	[EV_ZONE_LOCK_HOLD] = { .name = "zone_lock_hold_ns", .cycles = true },
	[EV_ZONE_LOCK_WAIT] = { .name = "zone_lock_wait_ns", .cycles = true },
	[EV_BUDDY_SPLIT] = { .name = "buddy_split" },
	[EV_BUDDY_MERGE] = { .name = "buddy_merge" },
	[EV_PGFALLBACK] = { .name = "pgfallback" },
	[EV_PAGEBLOCK_CLAIM] = { .name = "pageblock_claim" },
	[EV_PGPURGE] = { .name = "pgpurge" },
	[EV_PGSCAN_KSWAPD] = { .name = "pgscan_kswapd" },
	[EV_PGSCAN_DIRECT] = { .name = "pgscan_direct" },
	[EV_PGSTEAL_KSWAPD] = { .name = "pgsteal_kswapd" },
	[EV_PGSTEAL_DIRECT] = { .name = "pgsteal_direct" },
	[EV_PGACTIVATE] = { .name = "pgactivate" },
	[EV_PGDEACTIVATE] = { .name = "pgdeactivate" },
	[EV_PGROTATED] = { .name = "pgrotated" },
	[EV_PGWRITE_RECLAIM] = { .name = "pgwrite_reclaim" },
	[EV_PGCACHE_HIT] = { .name = "pgcache_hit" },
	[EV_PGMAJFAULT] = { .name = "pgmajfault" },
	[EV_RSEQ_ABORT] = { .name = "rseq_abort" },
	[EV_KSWAPD_WAKEUP] = { .name = "kswapd_wakeup" },
	[EV_KSWAPD_LOW_WMARK_HIT_QUICKLY] = { .name = "kswapd_low_wmark_hit_quickly" },
	[EV_KSWAPD_HIGH_WMARK_HIT_QUICKLY] = { .name = "kswapd_high_wmark_hit_quickly" },
	[EV_KSWAPD_WAKE_MISSED] = { .name = "kswapd_wake_missed" },
	[EV_ALLOCSTALL] = { .name = "allocstall" },
	[EV_SLABS_SCANNED] = { .name = "slabs_scanned" },
	[EV_WMARK_FAIL] = { .name = "wmark_fail" },
	[EV_ALLOC_SLOWPATH] = { .name = "alloc_slowpath" },
	[EV_ALLOC_FAIL] = { .name = "alloc_fail" },
	[EV_BAD_FREE] = { .name = "bad_free" },
	[EV_SECTION_ADD] = { .name = "section_add" },
	[EV_SECTION_ADD_FAIL] = { .name = "section_add_fail" },
	[EV_ZONE_GROW] = { .name = "zone_grow_pages" },
};

/* Gauges: current state rather than events. */
enum gauge {
	G_NR_FREE_PAGES,
	G_NR_PCP_PAGES,
	G_NR_PCP_FRONT_PAGES,        /* ... of which on the fronts (percpu=rseq, pcp.h) */
	G_NR_MANAGED_PAGES,
	G_NR_ALLOCATED_PAGES,
	G_NR_MIXED_PAGEBLOCKS,
	G_NR_SLAB_PAGES,
	G_NR_QUICKLIST_PAGES,
	G_NR_ACTIVE_FILE,
	G_NR_INACTIVE_FILE,
	G_NR_DIRTY,
	G_NR_ALLOC_BATCH,
	G_NR_SECTIONS,               /* present sections (sparse.c) */
	G_NR_FREE_PAGES_MT,          /* + migratetype: pages on its free lists */
	G_NR_PAGEBLOCKS_MT = G_NR_FREE_PAGES_MT + MT_TYPES,   /* + migratetype: managed pageblocks of it */
	G_PCP_ALLOC_HIT = G_NR_PAGEBLOCKS_MT + MT_TYPES,   /* + per-CPU order: served without a refill */
	G_NR_FREE_BLOCKS = G_PCP_ALLOC_HIT + NR_PCP_ORDERS,   /* + order */
	/* + node: pages on the quicklists of the node's CPUs.  Names are
	 * process-wide, so every node a system may have gets one. */
	G_NR_QUICKLIST_PAGES_NODE = G_NR_FREE_BLOCKS + ZA_MAX_ORDER_LIMIT + 1,
	NR_GAUGES = G_NR_QUICKLIST_PAGES_NODE + ZA_MAX_NODES
};

static const char *const gauge_fixed_names[] = {
	"nr_free_pages", "nr_pcp_pages", "nr_pcp_front_pages", "nr_managed_pages", "nr_allocated_pages",
	"nr_mixed_pageblocks", "nr_slab_pages", "nr_quicklist_pages", "nr_active_file",
	"nr_inactive_file", "nr_dirty", "nr_alloc_batch", "nr_sections", "nr_free_pages_unmovable",
	"nr_free_pages_movable", "nr_free_pages_reclaimable", "nr_pageblocks_unmovable",
	"nr_pageblocks_movable", "nr_pageblocks_reclaimable", "pcp_alloc_hit_order0",
	"pcp_alloc_hit_order1", "pcp_alloc_hit_order2", "pcp_alloc_hit_order3", "pcp_alloc_hit_thp",
};
_Static_assert(ZA_ARRAY_SIZE(gauge_fixed_names) == G_NR_FREE_BLOCKS, "one name per gauge");
_Static_assert(MT_UNMOVABLE == 0 && MT_MOVABLE == 1 && MT_RECLAIMABLE == 2, "names by type");

#define NODE_NAME(n) "nr_quicklist_pages_node" #n
#define NODE_NAMES10(tens)                                                            \
	NODE_NAME(tens##0), NODE_NAME(tens##1), NODE_NAME(tens##2), NODE_NAME(tens##3), \
	NODE_NAME(tens##4), NODE_NAME(tens##5), NODE_NAME(tens##6), NODE_NAME(tens##7), \
	NODE_NAME(tens##8), NODE_NAME(tens##9)

static const char *gauge_name(int g)
{
	static const char *const order_names[] = {
		"nr_free_blocks_order0", "nr_free_blocks_order1", "nr_free_blocks_order2",
		"nr_free_blocks_order3", "nr_free_blocks_order4", "nr_free_blocks_order5",
		"nr_free_blocks_order6", "nr_free_blocks_order7", "nr_free_blocks_order8",
		"nr_free_blocks_order9", "nr_free_blocks_order10", "nr_free_blocks_order11",
		"nr_free_blocks_order12", "nr_free_blocks_order13", "nr_free_blocks_order14",
	};
	static const char *const node_names[] = {
		NODE_NAMES10(), NODE_NAMES10(1), NODE_NAMES10(2), NODE_NAMES10(3), NODE_NAMES10(4),
		NODE_NAMES10(5), NODE_NAME(60), NODE_NAME(61), NODE_NAME(62), NODE_NAME(63),
	};
	_Static_assert(ZA_ARRAY_SIZE(order_names) == ZA_MAX_ORDER_LIMIT + 1, "one name per order");
	_Static_assert(ZA_ARRAY_SIZE(node_names) == ZA_MAX_NODES, "one name per node");
	if (g < G_NR_FREE_BLOCKS)
		return gauge_fixed_names[g];
	if (g < G_NR_QUICKLIST_PAGES_NODE)
		return order_names[g - G_NR_FREE_BLOCKS];
	return node_names[g - G_NR_QUICKLIST_PAGES_NODE];
}

/* ------------------------------------------------------------------------
 * Folding
 * ------------------------------------------------------------------------ */
static uint64_t fold(uint64_t acc, uint64_t v, enum za_event item)
{
	return event_info[item].is_max ? (v > acc ? v : acc) : acc + v;
}

static uint64_t zone_event_raw(const struct za_zone *z, enum za_event item)
{
	uint64_t v = load_relaxed(&z->stat.ev[item]);
	if (item < NR_PCP_EVENTS) {
		for (int cpu = 0; cpu < z->mm->nr_cpus; cpu++)
			v = fold(v, load_relaxed(&z->pcp[cpu].stat.ev[item]), item);
		v += pcp_front_events(z, item);
	}
	return v;
}

/* The fast paths count blocks by order only; pages follow from them.  A
 * refill's splits outside the zone lock are buddy splits too. */
static uint64_t zone_event(const struct za_zone *z, enum za_event item)
{
	uint64_t v = zone_event_raw(z, item);
	if (item == EV_PGALLOC || item == EV_PGFREE)
		for (unsigned int slot = 0; slot < NR_PCP_ORDERS; slot++)
			v += zone_event_raw(z, (item == EV_PGALLOC ? EV_PCP_ALLOC : EV_PCP_FREE) + slot)
			     << (slot == PCP_THP_SLOT ? z->mm->pcp_thp_order : slot);
	if (item == EV_BUDDY_SPLIT)
		v += zone_event_raw(z, EV_PCP_SPLIT);
	return v;
}

static int nr_all_zones(const struct za_mm *mm)
{
	return mm->nr_nodes * mm->nr_zones;
}

/* zone_idx < 0: every zone plus the global part. */
static uint64_t event_value(const struct za_mm *mm, enum za_event item, int zone_idx)
{
	uint64_t v = zone_idx < 0 ? load_relaxed(&mm->stat.ev[item]) : 0;
	if (zone_idx < 0)
		for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
			v += load_relaxed(&mm->cpu_stat[cpu].ev[item]);
	for (int id = 0; id < nr_all_zones(mm); id++)
		if (zone_idx < 0 || mm->zone_by_id[id]->idx == zone_idx)
			v = fold(v, zone_event(mm->zone_by_id[id], item), item);
	return event_info[item].cycles ? za_cycles_to_ns(v) : v;
}

static long pcp_pages(const struct za_zone *z)
{
	long n = pcp_front_pages(z);
	for (int cpu = 0; cpu < z->mm->nr_cpus; cpu++)
		n += load_relaxed(&z->pcp[cpu].count);
	return n;
}

/* Does any block in the pageblock belong to another migratetype? */
static bool pageblock_is_mixed(const struct za_mm *mm, unsigned long start)
{
	int mt = pageblock_mt(mm, start);
	unsigned long pfn = start, end = start + (1UL << mm->pageblock_order);
	while (pfn < end) {
		const struct za_page *p = pfn_to_page(mm, pfn);
		uint32_t f = page_flags(p);
		if ((f & (PG_alloc | PG_pcp)) && page_mt(p) != mt)
			return true;
		pfn += f ? 1UL << page_order(p) : 1;
	}
	return false;
}

/* What the buddy lists manage: the zone less its deferred part. */
static long zone_managed_pages(const struct za_zone *z)
{
	return (long)(z->nr_pages - zone_deferred_pages(z));
}

static unsigned long list_length(const struct za_list *head)
{
	unsigned long n = 0;
	for (const struct za_list *l = head->next; l != head; l = l->next)
		n++;
	return n;
}

/* Pages on a migratetype's free lists.  No counter is kept per type, so
 * the lists are walked, under the zone lock taken quietly (as a report
 * takes it): the sum over the types is then the zone's nr_free_pages. */
static long free_pages_of_type(struct za_zone *z, int mt)
{
	long n = 0;
	zone_lock_quiet(z);
	for (unsigned int o = 0; o <= z->mm->max_order; o++)
		n += (long)list_length(&z->free_area[o].free_list[mt]) << o;
	zone_unlock_quiet(z);
	return n;
}

static long mixed_pageblocks(const struct za_zone *z, int mt)
{
	const struct za_mm *mm = z->mm;
	long n = 0;
	unsigned long step = 1UL << mm->pageblock_order;
	for (unsigned long pfn = z->start_pfn; pfn < zone_init_end_pfn(z); pfn += step)
		if ((mt < 0 || pageblock_mt(mm, pfn) == mt) && pageblock_is_mixed(mm, pfn))
			n++;
	return n;
}

/* The zone's managed pageblocks of a migratetype. */
static long pageblocks_of_type(const struct za_zone *z, int mt)
{
	const struct za_mm *mm = z->mm;
	long n = 0;
	for (unsigned long pfn = z->start_pfn; pfn < zone_init_end_pfn(z);
	     pfn += 1UL << mm->pageblock_order)
		n += pageblock_mt(mm, pfn) == mt;
	return n;
}

static long zone_gauge(struct za_zone *z, enum gauge g)
{
	switch (g) {
	case G_NR_FREE_PAGES:
		return load_relaxed(&z->nr_free_pages);
	case G_NR_PCP_PAGES:
		return pcp_pages(z);
	case G_NR_PCP_FRONT_PAGES:
		return pcp_front_pages(z);
	case G_NR_MANAGED_PAGES:
		return zone_managed_pages(z);
	case G_NR_ALLOCATED_PAGES:
		return zone_managed_pages(z) - load_relaxed(&z->nr_free_pages) - pcp_pages(z);
	case G_NR_MIXED_PAGEBLOCKS:
		return mixed_pageblocks(z, -1);
	case G_NR_ACTIVE_FILE:
		return load_relaxed(&z->nr_lru[LRU_ACTIVE]);
	case G_NR_INACTIVE_FILE:
		return load_relaxed(&z->nr_lru[LRU_INACTIVE]);
	case G_NR_DIRTY:
		return load_relaxed(&z->nr_dirty);
	case G_NR_ALLOC_BATCH:
		return load_relaxed(&z->alloc_batch);
	case G_NR_SLAB_PAGES:
		return load_relaxed(&z->nr_slab_pages);
	case G_NR_QUICKLIST_PAGES:
	default:
		break;
	}
	if (g >= G_NR_FREE_PAGES_MT && g < G_NR_PAGEBLOCKS_MT)
		return free_pages_of_type(z, (int)(g - G_NR_FREE_PAGES_MT));
	if (g >= G_NR_PAGEBLOCKS_MT && g < G_PCP_ALLOC_HIT)
		return pageblocks_of_type(z, (int)(g - G_NR_PAGEBLOCKS_MT));
	if (g < G_NR_FREE_BLOCKS) {
		enum za_event o = (enum za_event)(g - G_PCP_ALLOC_HIT);
		return (long)(zone_event(z, EV_PCP_ALLOC + o) - zone_event(z, EV_PCP_ALLOC_MISS + o));
	}
	unsigned int order = (unsigned int)(g - G_NR_FREE_BLOCKS);
	return order <= z->mm->max_order ? (long)load_relaxed(&z->free_area[order].nr_free) : 0;
}

static long gauge_value(struct za_mm *mm, enum gauge g, int zone_idx)
{
	long (*held_pages)(const struct za_mm *, int) = mm_layers[LAYER_QUICKLIST].held_pages;
	if (g == G_NR_QUICKLIST_PAGES)
		return held_pages(mm, -1);        /* kept per CPU, not per zone */
	if (g == G_NR_SECTIONS)
		return (long)load_relaxed(&mm->nr_present_sections);   /* not per zone */
	if (g >= G_NR_QUICKLIST_PAGES_NODE)
		return held_pages(mm, (int)(g - G_NR_QUICKLIST_PAGES_NODE));
	long v = 0;
	for (int id = 0; id < nr_all_zones(mm); id++)
		if (zone_idx < 0 || mm->zone_by_id[id]->idx == zone_idx)
			v += zone_gauge(mm->zone_by_id[id], g);
	return v;
}

/* ------------------------------------------------------------------------
 * Lookup by name
 * ------------------------------------------------------------------------ */
/* The index space: the page allocator's events, then each layer's events
 * in table order, then the gauges. */
static int layer_events_base(int layer)
{
	int base = NR_EVENTS;
	for (int l = 0; l < layer; l++)
		base += mm_layers[l].nr_events;
	return base;
}

#define GAUGE_BASE layer_events_base(NR_MM_LAYERS)

int za_stat_count(void)
{
	return GAUGE_BASE + NR_GAUGES;
}

/* The layer whose events hold index i (>= NR_EVENTS, < GAUGE_BASE); *first
 * is its first index. */
static int layer_of_stat(int i, int *first)
{
	int l = 0;
	*first = NR_EVENTS;
	while (i >= *first + mm_layers[l].nr_events)
		*first += mm_layers[l++].nr_events;
	return l;
}

const char *za_stat_name(int i)
{
	if (i < 0 || i >= za_stat_count())
		return NULL;
	if (i < NR_EVENTS)
		return event_info[i].name;
	if (i >= GAUGE_BASE)
		return gauge_name(i - GAUGE_BASE);
	int first, l = layer_of_stat(i, &first);
	return mm_layers[l].event_name(i - first);
}

/* The layers' event totals, each folded once per read of many counters
 * (a fold walks every cache or CPU of the layer). */
struct layer_totals {
	bool folded[NR_MM_LAYERS];
	uint64_t v[NR_MM_LAYERS][MAX_LAYER_EVENTS];
};

static long long stat_value(struct za_mm *mm, int i, int zone_idx, struct layer_totals *t)
{
	if (i < NR_EVENTS)
		return (long long)event_value(mm, (enum za_event)i, zone_idx);
	if (i >= GAUGE_BASE)
		return gauge_value(mm, (enum gauge)(i - GAUGE_BASE), zone_idx);
	int first, l = layer_of_stat(i, &first);
	if (!t->folded[l]) {
		mm_layers[l].fold_events(mm, t->v[l]);
		t->folded[l] = true;
	}
	return (long long)t->v[l][i - first];
}

static int find_stat(const char *name, size_t len)
{
	for (int i = 0; i < za_stat_count(); i++)
		if (strlen(za_stat_name(i)) == len && !strncmp(za_stat_name(i), name, len))
			return i;
	return -1;
}

long long za_stat(za_mm_t *mm, const char *name)
{
	size_t len = strlen(name);
	int i = find_stat(name, len);
	struct layer_totals t = { 0 };
	if (i >= 0)
		return stat_value(mm, i, -1, &t);
	/* "<counter>_<Zone>" */
	for (int zi = 0; zi < mm->nr_zones; zi++) {
		const char *zn = mm->cfg.zones[zi].name;
		size_t zl = strlen(zn);
		if (len > zl + 1 && name[len - zl - 1] == '_' && !strcmp(name + len - zl, zn) &&
		    (i = find_stat(name, len - zl - 1)) >= 0)
			return stat_value(mm, i, zi, &t);
	}
	errno = EINVAL;
	return -1;
}

enum za_stat_kind za_stat_kind(int i)
{
	if (i < NR_EVENTS)
		return event_info[i].is_max ? ZA_STAT_PEAK : ZA_STAT_EVENT;
	if (i < GAUGE_BASE)
		return ZA_STAT_EVENT;           /* the layers' events */
	enum gauge g = (enum gauge)(i - GAUGE_BASE);
	return g >= G_PCP_ALLOC_HIT && g < G_NR_FREE_BLOCKS ? ZA_STAT_EVENT : ZA_STAT_GAUGE;
}

/* Racy against a concurrent update of the same peak, which then survives:
 * harmless for a maximum.  Peaks are kept per zone and globally only. */
void za_stat_reset_peaks(za_mm_t *mm)
{
	for (int item = 0; item < NR_EVENTS; item++) {
		if (!event_info[item].is_max)
			continue;
		store_relaxed(&mm->stat.ev[item], 0);
		for (int id = 0; id < nr_all_zones(mm); id++) {
			struct za_zone *z = mm->zone_by_id[id];
			store_relaxed(&z->stat.ev[item], 0);
		}
	}
}

int za_stat_all(za_mm_t *mm, long long *vals, int n)
{
	int count = za_stat_count() < n ? za_stat_count() : n;
	struct layer_totals t = { 0 };
	for (int i = 0; i < count; i++)
		vals[i] = stat_value(mm, i, -1, &t);
	return count;
}

/* ------------------------------------------------------------------------
 * Reports, in the kernel's /proc formats
 * ------------------------------------------------------------------------ */
static void report_buddyinfo(struct za_mm *mm, FILE *out)
{
	for (int id = 0; id < nr_all_zones(mm); id++) {
		struct za_zone *z = mm->zone_by_id[id];
		fprintf(out, "Node %d, zone %8s ", z->node, z->name);
		for (unsigned int o = 0; o <= mm->max_order; o++)
			fprintf(out, "%6lu ", load_relaxed(&z->free_area[o].nr_free));
		fputc('\n', out);
	}
}

static void report_zoneinfo(struct za_mm *mm, FILE *out)
{
	for (int id = 0; id < nr_all_zones(mm); id++) {
		struct za_zone *z = mm->zone_by_id[id];
		fprintf(out, "Node %d, zone %8s\n", z->node, z->name);
		fprintf(out, "  pages free     %ld\n", load_relaxed(&z->nr_free_pages));
		fprintf(out, "        boost    0\n");
		fprintf(out, "        min      %lu\n", z->wmark[WMARK_MIN]);
		fprintf(out, "        low      %lu\n", z->wmark[WMARK_LOW]);
		fprintf(out, "        high     %lu\n", z->wmark[WMARK_HIGH]);
		fprintf(out, "        spanned  %lu\n", z->nr_pages);
		fprintf(out, "        present  %lu\n", z->nr_pages);
		fprintf(out, "        managed  %ld\n", zone_managed_pages(z));
		fprintf(out, "        protection: (");
		for (int j = 0; j < mm->nr_zones; j++)
			fprintf(out, "%s%lu", j ? ", " : "", z->lowmem_reserve[j]);
		fprintf(out, ")\n");
		for (int g = 0; g < G_PCP_ALLOC_HIT; g++)   /* the per-zone gauges */
			if (g != G_NR_QUICKLIST_PAGES && g != G_NR_SECTIONS)
				fprintf(out, "      %-24s %ld\n", gauge_name(g), zone_gauge(z, (enum gauge)g));
		for (int e = 0; e < NR_EVENTS; e++) {
			uint64_t v = zone_event(z, (enum za_event)e);
			fprintf(out, "      %-24s %llu\n", event_info[e].name,
				(unsigned long long)(event_info[e].cycles ? za_cycles_to_ns(v) : v));
		}
		fprintf(out, "  pagesets\n");
		for (int cpu = 0; cpu < mm->nr_cpus; cpu++) {
			const struct za_pcp *pcp = &z->pcp[cpu];
			fprintf(out, "    cpu: %d\n", cpu);
			fprintf(out, "              count: %d\n", load_relaxed(&pcp->count));
			fprintf(out, "              high:  %d\n", pcp_high(pcp));
			fprintf(out, "              batch: %d\n", pcp->batch);
			fprintf(out, "              high_min: %d\n", pcp->high_min);
			fprintf(out, "              high_max: %d\n", pcp->high_max);
		}
	}
}

/* The per-node counters of nodes this system does not have are listed
 * (names are process-wide) but left out of its report. */
static bool stat_applies(const struct za_mm *mm, int i)
{
	return i < GAUGE_BASE + G_NR_QUICKLIST_PAGES_NODE ||
	       i - (GAUGE_BASE + G_NR_QUICKLIST_PAGES_NODE) < mm->nr_nodes;
}

/*
 * What a summary (the malloc's ZA_STATS=1) shows, by group, beside leaving
 * out every counter that is zero:
 *   - the page allocator's, the slab caches', the quicklists', the page
 *     cache's and direct reclaim's events and the gauges of memory: each
 *     when it is not zero (a layer not in use counts nothing);
 *   - kswapd's events only on a system with kswapd threads: without them
 *     kswapd_wake_missed counts every failed low watermark, which
 *     wmark_fail already does;
 *   - not nr_alloc_batch: fair_zone's bookkeeping, a per-zone budget of
 *     pages that allocations draw below zero between its resets;
 *   - the per-node counters of the nodes the system has (as report_vmstat).
 */
bool stat_in_summary(const struct za_mm *mm, int i)
{
	if (i == GAUGE_BASE + G_NR_ALLOC_BATCH)
		return false;
	if (!mm->cfg.kswapd)
		switch (i) {
		case EV_PGSCAN_KSWAPD:
		case EV_PGSTEAL_KSWAPD:
		case EV_KSWAPD_WAKEUP:
		case EV_KSWAPD_LOW_WMARK_HIT_QUICKLY:
		case EV_KSWAPD_HIGH_WMARK_HIT_QUICKLY:
		case EV_KSWAPD_WAKE_MISSED:
			return false;
		default:
			break;
		}
	return stat_applies(mm, i);
}

static void report_vmstat(struct za_mm *mm, FILE *out)
{
	struct layer_totals t = { 0 };
	for (int i = 0; i < za_stat_count(); i++)
		if (stat_applies(mm, i))
			fprintf(out, "%s %lld\n", za_stat_name(i), stat_value(mm, i, -1, &t));
	for (int zi = 0; zi < mm->nr_zones; zi++)
		fprintf(out, "pgalloc_%s %lld\n", mm->cfg.zones[zi].name,
			stat_value(mm, EV_PGALLOC, zi, &t));
}

static void report_pagetypeinfo(struct za_mm *mm, FILE *out)
{
	fprintf(out, "Page block order: %u\nPages per block:  %lu\n\n", mm->pageblock_order,
		1UL << mm->pageblock_order);
	fprintf(out, "%-43s ", "Free pages count per migrate type at order");
	for (unsigned int o = 0; o <= mm->max_order; o++)
		fprintf(out, "%6u ", o);
	fputc('\n', out);
	for (int id = 0; id < nr_all_zones(mm); id++) {
		struct za_zone *z = mm->zone_by_id[id];
		zone_lock_quiet(z);
		for (int mt = 0; mt < MT_TYPES; mt++) {
			fprintf(out, "Node %4d, zone %8s, type %12s ", z->node, z->name,
				migratetype_name(mt));
			for (unsigned int o = 0; o <= mm->max_order; o++)
				fprintf(out, "%6lu ", list_length(&z->free_area[o].free_list[mt]));
			fputc('\n', out);
		}
		zone_unlock_quiet(z);
	}
	for (int pass = 0; pass < 2; pass++) {
		fprintf(out, "\n%-23s", pass ? "Number of mixed blocks " : "Number of blocks type ");
		for (int mt = 0; mt < MT_TYPES; mt++)
			fprintf(out, "%12s ", migratetype_name(mt));
		fputc('\n', out);
		for (int id = 0; id < nr_all_zones(mm); id++) {
			struct za_zone *z = mm->zone_by_id[id];
			fprintf(out, "Node %d, zone %8s ", z->node, z->name);
			for (int mt = 0; mt < MT_TYPES; mt++) {
				long n = pass ? mixed_pageblocks(z, mt) : pageblocks_of_type(z, mt);
				fprintf(out, "%12ld ", n);
			}
			fputc('\n', out);
		}
	}
}

int za_report(za_mm_t *mm, const char *what, FILE *out)
{
	static const struct {
		const char *name;
		void (*fn)(struct za_mm *, FILE *);
	} reports[] = {
		{ "buddyinfo", report_buddyinfo },
		{ "zoneinfo", report_zoneinfo },
		{ "vmstat", report_vmstat },
		{ "pagetypeinfo", report_pagetypeinfo },
	};
	for (size_t i = 0; i < ZA_ARRAY_SIZE(reports); i++) {
		if (!strcmp(what, reports[i].name)) {
			reports[i].fn(mm, out);
			return 0;
		}
	}
	for (int l = 0; l < NR_MM_LAYERS; l++) {
		if (mm_layers[l].report_name && !strcmp(what, mm_layers[l].report_name)) {
			mm_layers[l].report(mm, out);
			return 0;
		}
	}
	za_set_last_error("za_report: unknown report '%s'", what);
	errno = EINVAL;
	return -1;
}

/* ------------------------------------------------------------------------
 * Tracepoints: the kernel's kmem page events, to a hook
 * ------------------------------------------------------------------------ */
void za_set_tracepoints(za_mm_t *mm, za_tracepoint_fn fn, void *ctx, unsigned int mask)
{
	atomic_store_explicit(&mm->tp_fn, NULL, memory_order_release);
	mm->tp_ctx = ctx;
	mm->tp_mask = mask;
	atomic_store_explicit(&mm->tp_fn, mask ? fn : NULL, memory_order_release);
}

void za_set_tracepoint(za_mm_t *mm, za_tracepoint_fn fn, void *ctx)
{
	za_set_tracepoints(mm, fn, ctx, ZA_TP_PAGE_EVENTS);
}

void tp_emit(struct za_mm *mm, const struct za_tp_event *ev)
{
	za_tracepoint_fn fn = atomic_load_explicit(&mm->tp_fn, memory_order_acquire);
	if (fn && (mm->tp_mask & 1u << ev->type))
		fn(ev, mm->tp_ctx);
}

/* ------------------------------------------------------------------------
 * The zone-lock events on the bulk paths (zone_lock_bulk): the lock taken
 * as zone_lock takes it, timed whatever lock_stats says.
 * ------------------------------------------------------------------------ */
static void tp_zone_lock(struct za_zone *z, enum za_tracepoint type, const char *caller, int count,
			 bool contended, uint64_t wait, uint64_t hold)
{
	struct za_tp_event ev = {
		.type = type, .cpu = za_current_cpu(z->mm), .zone = z->id, .count = count,
		.contended = contended, .wait_ns = za_cycles_to_ns(wait), .hold_ns = za_cycles_to_ns(hold),
		.caller = caller,
	};
	tp_emit(z->mm, &ev);
}

uint64_t zone_lock_traced(struct za_zone *z, const char *caller, int count)
{
	uint64_t wait = 0;
	bool contended = !za_lock_try(&z->lock);
	if (contended) {
		tp_zone_lock(z, ZA_TP_ZONE_LOCK_CONTENDED, caller, count, true, 0, 0);
		wait = zone_lock_contended(z, true);
	}
	ev_add(&z->stat, EV_ZONE_LOCK_ACQUIRE, 1);
	tp_zone_lock(z, ZA_TP_ZONE_LOCKED, caller, count, contended, wait, 0);
	return za_cycles();
}

void zone_unlock_traced(struct za_zone *z, uint64_t t0, int cause, const char *caller, int count)
{
	uint64_t held = za_cycles() - t0;
	zone_unlock(z, t0, cause);
	tp_zone_lock(z, ZA_TP_ZONE_LOCK_UNLOCK, caller, count, false, 0, held);
}

/* percpu_refill as the kernel computes it: the order is one the per-CPU
 * lists cache (and the type one of theirs, as ours all are). */
void tp_zone_locked_slow(struct za_zone *z, int cpu, unsigned long pfn, unsigned int order, int mt)
{
	struct za_tp_event ev = {
		.type = ZA_TP_PAGE_ALLOC_ZONE_LOCKED, .cpu = cpu, .zone = z->id, .pfn = pfn,
		.order = order, .migratetype = mt, .percpu_refill = pcp_allowed_order(z->mm, order),
	};
	tp_emit(z->mm, &ev);
}

void tp_pcpu_drain_slow(struct za_zone *z, int cpu, const struct za_page *page, unsigned int order)
{
	struct za_tp_event ev = {
		.type = ZA_TP_PAGE_PCPU_DRAIN, .cpu = cpu, .zone = z->id,
		.pfn = page_to_pfn(z->mm, page), .order = order, .migratetype = page_mt(page),
	};
	tp_emit(z->mm, &ev);
}

void tp_extfrag_slow(struct za_zone *z, int cpu, const struct za_page *page, unsigned int order,
		     int start_mt, unsigned int fallback_order, int fallback_mt)
{
	const struct za_mm *mm = z->mm;
	unsigned long pfn = page_to_pfn(mm, page);
	struct za_tp_event ev = {
		.type = ZA_TP_PAGE_ALLOC_EXTFRAG, .cpu = cpu, .zone = z->id, .pfn = pfn,
		.order = order, .migratetype = start_mt, .fallback_order = (int)fallback_order,
		.fallback_migratetype = fallback_mt,
		.fragmenting = fallback_order < mm->pageblock_order,
		.change_ownership = pageblock_mt(mm, pfn) == start_mt,
	};
	tp_emit(z->mm, &ev);
}

/* ------------------------------------------------------------------------
 * The vmstat worker (the kernel's vmstat_update on every CPU)
 *
 * The tick's work is a function of the system's state only: the same
 * calls give the same result whenever it runs.  Only the worker's waiting
 * between ticks uses the clock.
 * ------------------------------------------------------------------------ */
/* Per zone, as the CPU's worker would: the decay of the auto-tuned high
 * (pcp_decay).  Nothing without pcp_high_auto. */
void za_vmstat_tick_cpu(za_mm_t *mm, int cpu)
{
	if (!mm->pcp_high_auto || cpu < 0 || cpu >= mm->nr_cpus)
		return;
	for (int id = 0; id < nr_all_zones(mm); id++)
		pcp_decay(mm->zone_by_id[id], cpu);
}

void za_vmstat_tick(za_mm_t *mm)
{
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		za_vmstat_tick_cpu(mm, cpu);
}

/* vmstat_interval_ms > 0: the worker (worker.h).  0, or -1 with errno. */
int vmstat_worker_start(struct za_mm *mm)
{
	if (mm->cfg.vmstat_interval_ms <= 0)
		return 0;
	mm->vmstat_worker = worker_start(mm, "za-vmstat", (uint64_t)mm->cfg.vmstat_interval_ms * 1000000u,
					 za_vmstat_tick);
	if (!mm->vmstat_worker) {
		za_set_last_error("za_mm_create: cannot start the vmstat worker (vmstat_interval_ms=0 "
				  "runs without it)");
		return -1;
	}
	return 0;
}

void vmstat_worker_stop(struct za_mm *mm)
{
	worker_stop(&mm->vmstat_worker);
}
