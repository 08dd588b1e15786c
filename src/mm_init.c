/*
 * Creating and destroying a memory system: the layout of nodes and zones in
 * the arena, the metadata arrays, the zonelists, and the small accessors of
 * the public API.
 *
 * Creation touches no page descriptor except the head of each max-order
 * block: an all-zero descriptor is a valid "inside a block" descriptor, and
 * the descriptor array is reserved like the arena.  With deferred_init=1
 * (the kernel's deferred struct page init) not even those: a zone is handed
 * to the buddy lists a few blocks at a time as allocations need it, so a
 * system the size of the machine's memory starts in microseconds and costs
 * what it uses -- which is what a malloc needs.
 */
#include "internal.h"
#include "publish.h"
#include "mm_layers.h"
#include "pcp.h"
#include "percpu.h"
#include "rseq.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int layout_error(const char *key, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	za_set_last_error("config: key '%s': %s", key, msg);
	errno = EINVAL;
	return -1;
}

/* section_size=auto: SECTION_SIZE_AUTO, but no more than a quarter of the
 * memory (a small system under an address-space limit must not need more
 * for one section than it has), and at least the max-order block. */
static uint64_t auto_section_size(uint64_t memory, uint64_t block)
{
	uint64_t size = SECTION_SIZE_AUTO;
	while (size > memory / 4 && size > (2ULL << 20))
		size /= 2;
	return size > block ? size : block;
}

/*
 * The default zones follow the memory, as the kernel's do: a node with no
 * more than the default DMA32 zone and a block has only DMA32, all of it
 * (a machine that small has nothing above 4 GiB either).
 */
static void default_zones_fit(struct za_config *cfg, uint64_t node_bytes, uint64_t block)
{
	if (cfg->zones_given || node_bytes >= cfg->zones[0].bytes + block)
		return;
	cfg->zones[0].bytes = 0;
	cfg->zones[1] = (struct za_zone_spec){ 0 };
	cfg->nr_zones = 1;
}

/*
 * Resolves "auto" values and rounds sizes to whole max-order blocks, so
 * that every zone starts and ends on a block boundary and a buddy is always
 * in its block's zone.
 */
static int resolve_layout(struct za_config *cfg)
{
	uint64_t block = PAGE_SIZE << cfg->max_order;
	uint64_t node_bytes = cfg->memory / (uint64_t)cfg->nodes / block * block;
	uint64_t sum = 0;
	default_zones_fit(cfg, node_bytes, block);
	struct za_zone_spec *last = &cfg->zones[cfg->nr_zones - 1];

	if (cfg->section_size == (uint64_t)ZA_AUTO)
		cfg->section_size = auto_section_size(cfg->memory, block);
	if ((cfg->section_size & (cfg->section_size - 1)) || cfg->section_size < block ||
	    cfg->section_size < (2ULL << 20) || cfg->section_size > (64ULL << 30))
		return layout_error("section_size", "must be a power of two from 2M to 64G and at least "
				    "the max-order block (%llu bytes)", (unsigned long long)block);
	if (cfg->cpus == ZA_AUTO)
		cfg->cpus = machine_nr_cpus();
	if (cfg->percpu_pagelist_high_fraction && cfg->percpu_pagelist_high_fraction < 8)
		return layout_error("percpu_pagelist_high_fraction", "must be 0 or at least 8");
	if (cfg->nr_cpus == ZA_AUTO)
		cfg->nr_cpus = machine_nr_cpus();
	if (cfg->llc_per_cpu == (uint64_t)ZA_AUTO)
		cfg->llc_per_cpu = machine_llc_per_cpu();
	if (cfg->vmstat_interval_ms == ZA_AUTO)
		cfg->vmstat_interval_ms = cfg->pcp_high_auto ? 1000 : 0;
	if (cfg->slub_max_order > cfg->max_order || cfg->slub_min_order > cfg->slub_max_order)
		return layout_error("slub_max_order", "need slub_min_order <= slub_max_order <= max_order");
	if (node_bytes < block * (uint64_t)cfg->nr_zones)
		return layout_error("memory", "%llu bytes leave a zone of some node smaller than one "
				    "max-order block (%llu bytes)",
				    (unsigned long long)cfg->memory, (unsigned long long)block);
	for (int i = 0; i < cfg->nr_zones; i++) {
		struct za_zone_spec *zs = &cfg->zones[i];
		if (!zs->bytes)
			continue;
		zs->bytes = zs->bytes / block * block;
		if (!zs->bytes)
			return layout_error("zones", "zone %s is smaller than one max-order block",
					    zs->name);
		sum += zs->bytes;
	}
	if (last->bytes ? sum != node_bytes : sum + block > node_bytes)
		return layout_error("zones", "zone sizes add up to %lluM but each node has %lluM%s",
				    (unsigned long long)(sum >> 20),
				    (unsigned long long)(node_bytes >> 20),
				    last->bytes ? "" : ", which leaves the last zone less than one "
				    "max-order block");
	cfg->memory = node_bytes * (uint64_t)cfg->nodes;
	return 0;
}

static void init_zone(struct za_mm *mm, struct za_zone *z, int node, int idx,
		      unsigned long start_pfn, unsigned long nr_pages, struct za_pcp *pcp)
{
	z->mm = mm;
	z->node = node;
	z->idx = idx;
	z->id = node * mm->nr_zones + idx;
	z->name = mm->cfg.zones[idx].name;
	z->start_pfn = start_pfn;
	z->nr_pages = nr_pages;
	z->pcp = pcp;
	for (unsigned int o = 0; o <= mm->max_order; o++)
		for (int mt = 0; mt < MT_TYPES; mt++)
			list_init(&z->free_area[o].free_list[mt]);
	list_init(&z->lru[LRU_INACTIVE]);
	list_init(&z->lru[LRU_ACTIVE]);
	mm->zone_by_id[z->id] = z;
	store_relaxed(&z->first_deferred_pfn, start_pfn);
}

/*
 * A section comes online (sparse.c, under the hotplug lock): its pageblocks
 * start movable, as at boot, and its max-order blocks learn their zone (the
 * kernel's memmap_init_range).  Only present sections' entries are ever
 * read, so a system sized to a large machine writes -- makes resident --
 * the entries of the memory it uses, not of all it might.
 */
void memmap_init_section(struct za_mm *mm, unsigned long nr)
{
	unsigned long start = nr << pfn_section_shift(mm);
	unsigned long end = start + (1UL << pfn_section_shift(mm));
	if (end > mm->nr_pages)
		end = mm->nr_pages;
	unsigned long pageblock = 1UL << mm->pageblock_order;
	memset((void *)&mm->pageblock_mt[start >> mm->pageblock_order], MT_MOVABLE,
	       (end - start + pageblock - 1) >> mm->pageblock_order);
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		const struct za_zone *z = mm->zone_by_id[id];
		unsigned long from = z->start_pfn > start ? z->start_pfn : start;
		unsigned long to = z->start_pfn + z->nr_pages < end ? z->start_pfn + z->nr_pages : end;
		for (unsigned long pfn = from; pfn < to; pfn += 1UL << mm->max_order)
			mm->block_zone[pfn >> mm->max_order] = (uint8_t)z->id;
	}
}

/* deferred_init=0: every block of every zone in the buddy lists now. */
static int init_all_blocks(struct za_mm *mm)
{
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		struct za_zone *z = mm->zone_by_id[id];
		unsigned long pfn, end = z->start_pfn + z->nr_pages;
		for (pfn = z->start_pfn; pfn < end; pfn += 1UL << mm->max_order) {
			unsigned long nr = pfn_to_section_nr(mm, pfn);
			if (!section_present(mm, nr) && !sparse_add_section(mm, nr))
				return -1;
			zone_lock_quiet(z);     /* alone at creation, but buddy.c asserts it */
			buddy_add_initial_block(z, pfn);
			zone_unlock_quiet(z);
		}
		store_relaxed(&z->first_deferred_pfn, end);
	}
	return 0;
}

/* Does the zone need more blocks for an order-`order` allocation: is it
 * at or below `want` free pages, or without a free block that big? */
static bool zone_needs_growth(const struct za_zone *z, unsigned int order, long want)
{
	if (load_relaxed(&z->nr_free_pages) <= want)
		return true;
	for (unsigned int o = order; o <= z->mm->max_order; o++)
		if (load_relaxed(&z->free_area[o].nr_free))
			return false;
	return true;
}

/* Under the zone lock, hands over blocks while the zone needs them (or
 * fewer than at_least pages were handed over) and their section is
 * present; returns the pages handed over. */
static unsigned long grow_zone_locked(struct za_zone *z, unsigned int order, long want,
				      unsigned long at_least)
{
	struct za_mm *mm = z->mm;
	unsigned long pfn = zone_init_end_pfn(z), end = z->start_pfn + z->nr_pages, start = pfn;
	zone_lock_assert_held(z);
	for (; pfn < end && section_present(mm, pfn_to_section_nr(mm, pfn)) &&
	       (pfn - start < at_least || zone_needs_growth(z, order, want));
	     pfn += 1UL << mm->max_order)
		buddy_add_initial_block(z, pfn);
	atomic_store_explicit(&z->first_deferred_pfn, pfn, memory_order_release);
	return pfn - start;
}

static unsigned long max_lowmem_reserve(const struct za_zone *z)
{
	unsigned long reserve = 0;
	for (int i = 0; i < z->mm->nr_zones; i++)
		if (z->lowmem_reserve[i] > reserve)
			reserve = z->lowmem_reserve[i];
	return reserve;
}

/*
 * The kernel's deferred_grow_zone, and memory hotplug's onlining: hands
 * the zone's next uninitialised blocks to the buddy lists, adding their
 * sections first, until the zone is above its high watermark (and any
 * lowmem reserve) after an order-`order` allocation and has a free block
 * of that order.  A fragmented zone may lack the block however many pages
 * it has free: a fresh max-order block is then the cheapest way to serve
 * it.  Stops early when the zone has no deferred blocks left or the OS
 * refuses the next section; the caller checks the watermark again.
 */
static void grow_zone(struct za_zone *z, unsigned int order, long want, unsigned long at_least)
{
	struct za_mm *mm = z->mm;
	unsigned long handed = 0;
	while (handed < at_least || zone_needs_growth(z, order, want)) {
		unsigned long pfn = zone_init_end_pfn(z), nr = pfn_to_section_nr(mm, pfn);
		if (pfn >= z->start_pfn + z->nr_pages ||
		    (!section_present(mm, nr) && !sparse_add_section(mm, nr)))
			return;
		uint64_t t0 = zone_lock(z);
		unsigned long pages = grow_zone_locked(z, order, want,
						       handed < at_least ? at_least - handed : 0);
		zone_unlock(z, t0, NO_CAUSE);
		ev_add_atomic(&mm->stat, EV_ZONE_GROW, pages);
		handed += pages;
	}
}

void deferred_grow_zone(struct za_zone *z, unsigned int order)
{
	grow_zone(z, order, (long)(z->wmark[WMARK_HIGH] + max_lowmem_reserve(z)) + (1L << order), 0);
}

/* The same for a run beyond the largest block (rmqueue_giant): at least
 * `pages` more pages, in blocks that follow the zone's last one. */
void deferred_grow_zone_by(struct za_zone *z, unsigned long pages)
{
	grow_zone(z, 0, 0, pages);
}

/* Each node's fallback order: its own zones highest first, then the next
 * nodes' (fake NUMA has no distances: the next node is the nearest). */
static void build_zonelists(struct za_mm *mm, struct za_zone **lists)
{
	int per_list = mm->nr_nodes * mm->nr_zones + 1;
	for (int n = 0; n < mm->nr_nodes; n++) {
		struct za_zone **all = lists + (2 * n) * per_list;
		struct za_zone **local = lists + (2 * n + 1) * per_list;
		int k = 0;
		for (int d = 0; d < mm->nr_nodes; d++)
			for (int i = mm->nr_zones - 1; i >= 0; i--)
				all[k++] = &mm->nodes[(n + d) % mm->nr_nodes].zones[i];
		memcpy(local, all, sizeof(*all) * (size_t)mm->nr_zones);
		mm->zonelists[2 * n] = all;
		mm->zonelists[2 * n + 1] = local;
	}
}

static int init_layout(struct za_mm *mm)
{
	const struct za_config *cfg = &mm->cfg;
	mm->max_order = (unsigned int)cfg->max_order;
	mm->pageblock_order = mm->max_order < PAGEBLOCK_ORDER_DEFAULT ? mm->max_order
								     : PAGEBLOCK_ORDER_DEFAULT;
	mm->nr_nodes = (int)cfg->nodes;
	mm->nr_zones = cfg->nr_zones;
	mm->nr_cpus = (int)cfg->cpus;
	rseq_setup(mm);
	mm->bulkfree_outside_lock = cfg->bulkfree_outside_lock;
	mm->fallback_steal_smallest = cfg->fallback_steal_smallest;
	mm->lock_stats = cfg->lock_stats;
	mm->debug = cfg->debug;
	mm->fair_zone = cfg->fair_zone;
	mm->kswapd_wake_high = cfg->kswapd_wake_high;

	mm->nr_pages = cfg->memory >> PAGE_SHIFT;
	if (sparse_init(mm))
		return -1;
	int nr_zones = mm->nr_nodes * mm->nr_zones;
	size_t pageblocks = (mm->nr_pages >> mm->pageblock_order) + 1;
	mm->pageblock_mt = memblock_alloc(mm, pageblocks, 1);
	mm->pageblock_owner = memblock_alloc(mm, pageblocks * sizeof(uint16_t), sizeof(uint16_t));
	uint32_t *frag_heads = NULL;
	if (cfg->pcp_own_pageblocks) {
		mm->pageblock_frag = memblock_alloc_array(mm, pageblocks, uint32_t);
		frag_heads = memblock_alloc_array(mm, (size_t)nr_zones * (size_t)mm->nr_cpus, uint32_t);
	}
	mm->block_zone = memblock_alloc(mm, (mm->nr_pages >> mm->max_order) + 1, 1);
	mm->nodes = memblock_alloc_array(mm, mm->nr_nodes, struct za_node);
	mm->zone_by_id = memblock_alloc_array(mm, nr_zones, struct za_zone *);
	mm->cpu_node = memblock_alloc_array(mm, mm->nr_cpus, int);
	struct za_zone **lists = memblock_alloc_array(mm, 2 * (size_t)mm->nr_nodes *
							    (size_t)(nr_zones + 1), struct za_zone *);
	mm->zonelists = memblock_alloc_array(mm, 2 * mm->nr_nodes, struct za_zone **);
	struct za_pcp *pcp = memblock_alloc_array(mm, (size_t)nr_zones * (size_t)mm->nr_cpus,
						       struct za_pcp);
	mm->cpu_stat = memblock_alloc_array(mm, mm->nr_cpus, struct za_events);
	if (!mm->pageblock_mt || !mm->pageblock_owner || !mm->block_zone || !mm->nodes ||
	    !mm->zone_by_id || !mm->cpu_node || !lists || !mm->zonelists || !pcp || !mm->cpu_stat ||
	    (cfg->pcp_own_pageblocks && (!mm->pageblock_frag || !frag_heads))) {
		errno = ENOMEM;
		return -1;
	}

	unsigned long pfn = 0;
	for (int n = 0; n < mm->nr_nodes; n++) {
		mm->nodes[n].id = n;
		unsigned long node_end = pfn + (cfg->memory / (uint64_t)cfg->nodes >> PAGE_SHIFT);
		for (int i = 0; i < mm->nr_zones; i++) {
			uint64_t bytes = cfg->zones[i].bytes;
			unsigned long pages = bytes ? bytes >> PAGE_SHIFT : node_end - pfn;
			init_zone(mm, &mm->nodes[n].zones[i], n, i, pfn, pages,
				  pcp + (size_t)(n * mm->nr_zones + i) * (size_t)mm->nr_cpus);
			if (frag_heads)
				mm->nodes[n].zones[i].frag_head =
					frag_heads + (size_t)(n * mm->nr_zones + i) * (size_t)mm->nr_cpus;
			pfn += pages;
		}
	}
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		mm->cpu_node[cpu] = machine_cpu_to_node(cpu, mm->nr_nodes);
	build_zonelists(mm, lists);
	setup_zone_watermarks(mm);
	pcp_setup_lists(mm);
	for (int id = 0; id < nr_zones; id++)
		pcp_init(mm->zone_by_id[id], mm->nr_cpus);
	return cfg->deferred_init ? 0 : init_all_blocks(mm);
}

static void free_mm(struct za_mm *mm)
{
	sparse_release(mm);
	memblock_free_all(mm);
}

static int parse_config(struct za_config *cfg, const char *config)
{
	za_config_defaults(cfg);
	if (za_config_parse(cfg, config))
		return -1;
	const char *env = getenv("ZA_CONFIG");
	if (env && za_config_parse(cfg, env)) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s", za_last_error());
		za_set_last_error("ZA_CONFIG: %s", msg);
		return -1;
	}
	return resolve_layout(cfg);
}

/* Every layer gives back what it holds (also after a partial creation:
 * each exit copes with a layer never set up). */
static void exit_layers(struct za_mm *mm)
{
	for (int i = 0; i < NR_MM_LAYERS; i++)
		if (mm_layers[i].exit)
			mm_layers[i].exit(mm);
}

za_mm_t *za_mm_create(const char *config)
{
	struct za_config cfg;
	if (parse_config(&cfg, config))
		return NULL;
	struct za_mm *mm = memblock_create_mm();
	if (!mm) {
		za_set_last_error("za_mm_create: out of memory for the system's metadata");
		errno = ENOMEM;
		return NULL;
	}
	mm->cfg = cfg;
	if (init_layout(mm)) {
		int err = errno;
		za_set_last_error("za_mm_create: cannot reserve %llu bytes of arena and metadata",
				  (unsigned long long)cfg.memory);
		free_mm(mm);
		errno = err;
		return NULL;
	}
	size_t len = za_config_format(&mm->cfg, NULL, 0) + 1;
	if (!(mm->config_string = memblock_alloc(mm, len, 1))) {
		free_mm(mm);
		errno = ENOMEM;
		return NULL;
	}
	za_config_format(&mm->cfg, mm->config_string, len);
	for (int i = 0; i < NR_MM_LAYERS; i++) {
		if (mm_layers[i].init && mm_layers[i].init(mm)) {
			int err = errno;
			exit_layers(mm);
			free_mm(mm);
			errno = err;
			return NULL;
		}
	}
	if (vmstat_worker_start(mm) || publish_init(mm)) {
		int err = errno;
		vmstat_worker_stop(mm);
		exit_layers(mm);
		free_mm(mm);
		errno = err;
		return NULL;
	}
	return mm;
}

long za_mm_destroy(za_mm_t *mm)
{
	if (!mm)
		return 0;
	cpu_binding_forget(mm);
	publish_exit(mm);
	vmstat_worker_stop(mm);
	exit_layers(mm);
	za_drain_all_pages(mm);
	long leaked = (long)mm->nr_pages;
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++)
		leaked -= load_relaxed(&mm->zone_by_id[id]->nr_free_pages) +
			  (long)zone_deferred_pages(mm->zone_by_id[id]);
	if (leaked && mm->debug)
		za_report_error(mm, "za_mm_destroy: %ld pages (%ld KiB) still allocated",
				leaked, leaked << (PAGE_SHIFT - 10));
	free_mm(mm);
	return leaked;
}

const char *za_mm_config_string(const za_mm_t *mm)
{
	return mm->config_string;
}

void za_mm_set_error_handler(za_mm_t *mm, za_error_fn fn, void *ctx)
{
	mm->error_ctx = ctx;
	mm->error_fn = fn;
}

/* ------------------------------------------------------------------------
 * fork: every lock of the allocation paths, taken in the order the code
 * nests them -- the layers' (mm_layers.c) before the page allocator's
 * purge lock, per-CPU page lists, zone and LRU locks, and the hotplug lock,
 * a leaf -- so that a thread holding one of them can always finish and let
 * it go.  Open files' own locks are not included.
 * ------------------------------------------------------------------------ */
static void lock_pcp_lists(struct za_mm *mm, bool lock)
{
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++)
		for (int cpu = 0; cpu < mm->nr_cpus; cpu++) {
			za_trylock_t *l = &mm->zone_by_id[id]->pcp[cpu].lock;
			lock ? za_trylock_wait(l) : za_tryunlock(l);
		}
}

void mm_lock_all(struct za_mm *mm)
{
	for (int i = 0; i < NR_MM_LAYERS; i++)
		if (mm_layers[i].lock_all)
			mm_layers[i].lock_all(mm, LOCK_ALL);
	za_lock(&mm->purge_lock);
	lock_pcp_lists(mm, true);
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		za_lock(&mm->zone_by_id[id]->lock);
		za_lock(&mm->zone_by_id[id]->lru_lock);
	}
	za_lock(&mm->hotplug_lock);     /* a leaf: its holder maps a section, nothing else */
	za_lock(&mm->memblock.lock);    /* a leaf: its holder maps a chunk, nothing else */
}

void mm_unlock_all(struct za_mm *mm, bool in_child)
{
	za_unlock(&mm->memblock.lock);
	za_unlock(&mm->hotplug_lock);
	for (int id = mm->nr_nodes * mm->nr_zones - 1; id >= 0; id--) {
		za_unlock(&mm->zone_by_id[id]->lru_lock);
		za_unlock(&mm->zone_by_id[id]->lock);
	}
	lock_pcp_lists(mm, false);
	za_unlock(&mm->purge_lock);
	for (int i = NR_MM_LAYERS - 1; i >= 0; i--)
		if (mm_layers[i].lock_all)
			mm_layers[i].lock_all(mm, in_child ? UNLOCK_ALL_IN_CHILD : UNLOCK_ALL);
}

/* ------------------------------------------------------------------------
 * Conversions and topology
 * ------------------------------------------------------------------------ */
za_page_t *za_virt_to_page(const za_mm_t *mm, const void *addr)
{
	return virt_is_memory(mm, addr) ? virt_to_page(mm, addr) : NULL;
}

void *za_page_to_virt(const za_mm_t *mm, const za_page_t *page)
{
	return page_to_virt(mm, page);
}

unsigned long za_page_to_pfn(const za_mm_t *mm, const za_page_t *page)
{
	return page_to_pfn(mm, page);
}

za_page_t *za_pfn_to_page(const za_mm_t *mm, unsigned long pfn)
{
	return pfn < mm->nr_pages && section_present(mm, pfn_to_section_nr(mm, pfn)) ?
	       pfn_to_page(mm, pfn) : NULL;
}

int za_nr_nodes(const za_mm_t *mm) { return mm->nr_nodes; }
int za_nr_zones(const za_mm_t *mm) { return mm->nr_zones; }
int za_nr_cpus(const za_mm_t *mm) { return mm->nr_cpus; }
int za_current_cpu(const za_mm_t *mm) { return this_cpu(mm); }

const char *za_zone_name(const za_mm_t *mm, int zone)
{
	return zone >= 0 && zone < mm->nr_zones ? mm->cfg.zones[zone].name : NULL;
}

int za_cpu_to_node(const za_mm_t *mm, int cpu)
{
	return cpu >= 0 && cpu < mm->nr_cpus ? mm->cpu_node[cpu] : -1;
}

int za_page_to_nid(const za_mm_t *mm, const za_page_t *page)
{
	return pfn_zone(mm, page_to_pfn(mm, page))->node;
}

int za_page_zone(const za_mm_t *mm, const za_page_t *page)
{
	return pfn_zone(mm, page_to_pfn(mm, page))->idx;
}
