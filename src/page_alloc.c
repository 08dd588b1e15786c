/*
 * The page allocator's entry points: watermarks, the zonelist walk (fast
 * path at the low watermark, slow path at the min watermark), and the free
 * path with its checks.
 */
#include "internal.h"
#include "probes.h"
#include "pcp.h"
#include "mm_layers.h"
#include "vmscan.h"
#include "percpu.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* Every gfp bit the header defines: the zone limit, then the flags. */
#define ZA_GFP_VALID_MASK (ZA_GFP_ZONE_MASK | ZA_GFP_MOVABLE | ZA_GFP_RECLAIMABLE | ZA_GFP_ZERO | \
			   ZA_GFP_NOWAIT | ZA_GFP_THISNODE | ZA_GFP_BUDDY)
_Static_assert(ZA_MAX_ZONES <= ZA_GFP_ZONE_MASK, "ZA_GFP_ZONE(i) holds every zone index, plus 0 for none");

/* ------------------------------------------------------------------------
 * Watermarks
 * ------------------------------------------------------------------------ */
static unsigned long int_sqrt(unsigned long x)
{
	unsigned long r = 0;
	for (unsigned long bit = 1UL << (sizeof(long) * 8 - 2); bit; bit >>= 2) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
	}
	return r;
}

/* The kernel's default lowmem_reserve_ratio by zone name: DMA and DMA32 are
 * protected by 1/256 of the memory above them, Normal by 1/32. */
static int64_t default_reserve_ratio(const char *name)
{
	if (!strcasecmp(name, "Normal"))
		return 32;
	if (!strcasecmp(name, "HighMem") || !strcasecmp(name, "Movable"))
		return 0;
	return 256;
}

/* The kernel's per-CPU counter threshold (calculate_normal_threshold):
 * grows with CPUs and zone size, at most 125. */
static int stat_threshold(const struct za_mm *mm, const struct za_zone *z)
{
	int fls_cpus = (int)fls_u((unsigned int)mm->nr_cpus);
	int fls_mem = (int)fls_ul(z->nr_pages >> (27 - PAGE_SHIFT));      /* in 128 MiB */
	int t = 2 * fls_cpus * (1 + fls_mem);
	return t > 125 ? 125 : t;
}

/*
 * min_free_kbytes = 4 * sqrt(lowmem KiB), clamped to [128 KiB, 256 MiB],
 * split across zones by size into their min watermarks; low and high sit
 * max(min/4, managed * watermark_scale_factor / 10000) above the previous
 * mark.  lowmem_reserve[j] of zone i is the memory of zones i+1..j of the
 * node divided by zone i's ratio: what a request that could have used a
 * higher zone must leave behind in this one.
 */
void setup_zone_watermarks(struct za_mm *mm)
{
	struct za_config *cfg = &mm->cfg;
	unsigned long lowmem = mm->nr_pages;

	if (cfg->min_free_kbytes == ZA_AUTO) {
		unsigned long kb = int_sqrt((lowmem << (PAGE_SHIFT - 10)) * 16);
		cfg->min_free_kbytes = kb < 128 ? 128 : kb > 262144 ? 262144 : (int64_t)kb;
	}
	if (cfg->lowmem_reserve_ratio[0] == ZA_AUTO)
		for (int i = 0; i < mm->nr_zones; i++)
			cfg->lowmem_reserve_ratio[i] = default_reserve_ratio(cfg->zones[i].name);

	unsigned long pages_min = (unsigned long)cfg->min_free_kbytes >> (PAGE_SHIFT - 10);
	for (int n = 0; n < mm->nr_nodes; n++) {
		struct za_zone *zones = mm->nodes[n].zones;
		for (int i = 0; i < mm->nr_zones; i++) {
			struct za_zone *z = &zones[i];
			unsigned long tmp = (unsigned long)((unsigned __int128)pages_min * z->nr_pages / lowmem);
			unsigned long gap = z->nr_pages * (unsigned long)cfg->watermark_scale_factor / 10000;
			if (gap < tmp / 4)
				gap = tmp / 4;
			z->wmark[WMARK_MIN] = tmp;
			z->wmark[WMARK_LOW] = tmp + gap;
			z->wmark[WMARK_HIGH] = tmp + 2 * gap;
			store_relaxed(&z->alloc_batch, (long)gap);
			z->stat_threshold = stat_threshold(mm, z);

			unsigned long above = 0;
			int64_t ratio = cfg->lowmem_reserve_ratio[i];
			for (int j = 0; j < mm->nr_zones; j++) {
				if (j > i)
					above += zones[j].nr_pages;
				z->lowmem_reserve[j] = j > i && ratio ? above / (unsigned long)ratio : 0;
			}
		}
	}
}

/*
 * Would the zone still have more than `mark` free pages (plus the reserve
 * protecting it from requests that could use a higher zone) after this
 * allocation?  For order > 0 a block of at least that order must also be
 * free.  Lockless: a snapshot is good enough, as in the kernel.
 */
static inline __attribute__((always_inline)) bool
zone_watermark_ok(const struct za_zone *z, unsigned int order, unsigned long mark, int highest_zone)
{
	long free = load_relaxed(&z->nr_free_pages) - ((1L << order) - 1);
	if (free <= (long)(mark + z->lowmem_reserve[highest_zone]))
		return false;
	if (!order)
		return true;
	for (unsigned int o = order; o <= z->mm->max_order; o++)
		if (load_relaxed(&z->free_area[o].nr_free))
			return true;
	return false;
}

/* ------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------ */
struct alloc_context {
	struct za_zone **zonelist;
	int highest_zone;
	int mt;
	int cpu;
	int node;                       /* the local node, for fair_zone */
	unsigned int order;
	unsigned long nr_pages;         /* a run of this many pages (order: its block), or 0 */
	unsigned long dirty_lo, dirty_hi;       /* the run's pages that may hold data */
	bool buddy;                     /* ZA_GFP_BUDDY: not from the per-CPU lists */
	bool low_failed;                /* a zone failed the low watermark */
};

static struct za_page *rmqueue_buddy(struct za_zone *z, const struct alloc_context *ac,
				     bool pcp_busy, bool nofragment)
{
	unsigned int order = ac->order;
	int cpu = ac->cpu, mt = ac->mt;
	uint64_t t0 = zone_lock(z);
	struct za_page *page = buddy_rmqueue(z, order, mt, cpu, nofragment);
	zone_check_below_high(z);
	if (page) {
		set_page_order(page, order);
		page->zone = (uint8_t)z->id;
		set_page_mt(page, mt);
		set_page_flags(page, PG_alloc);
		ev_add(&z->stat, EV_PGALLOC, 1UL << order);
		if (z->mm->fair_zone)       /* no per-CPU share on this path */
			zone_charge_alloc_batch(z, cpu, 1L << order);
	}
	if (pcp_busy)
		ev_add(&z->stat, EV_PCP_TRYLOCK_FAIL, 1);
	zone_unlock(z, t0, NO_CAUSE);
	return page;
}

/* Under the zone lock: the run of ac->nr_pages at page, just off the free
 * lists, becomes allocated (a run beyond the largest block traces as one
 * of max_order). */
static void run_taken(struct za_zone *z, struct alloc_context *ac, struct za_page *page)
{
	struct za_mm *mm = z->mm;
	zone_check_below_high(z);
	if (!page)
		return;
	ac->dirty_lo = z->taken_dirty_lo;
	ac->dirty_hi = z->taken_dirty_hi;
	tp_zone_locked(z, ac->cpu, page_to_pfn(mm, page), ac->order, ac->mt);
	mark_run(z, page_to_pfn(mm, page), ac->nr_pages, ac->mt);
	ev_add(&z->stat, EV_PGALLOC, ac->nr_pages);
	if (mm->fair_zone)
		zone_charge_alloc_batch(z, ac->cpu, (long)ac->nr_pages);
}

/* A run of ac->nr_pages, placed by buddy_rmqueue_run(). */
static struct za_page *rmqueue_exact(struct za_zone *z, struct alloc_context *ac,
				     bool nofragment)
{
	uint64_t t0 = zone_lock(z);
	struct za_page *page = buddy_rmqueue_run(z, ac->order, ac->nr_pages, ac->mt, ac->cpu,
						  nofragment);
	run_taken(z, ac, page);
	zone_unlock(z, t0, NO_CAUSE);
	return page;
}

/* nofragment: alloc_nofragment's first pass (get_page_from_freelist). */
static inline __attribute__((always_inline)) struct za_page *
rmqueue(struct za_zone *z, struct alloc_context *ac, bool nofragment)
{
	struct za_page *page;
	if (ac->nr_pages)
		return rmqueue_exact(z, ac, nofragment);
	bool pcp = pcp_allowed_order(z->mm, ac->order) && !ac->buddy;
	if (pcp && pcp_alloc(z, ac->cpu, ac->order, ac->mt, nofragment, &page))
		return page;
	return rmqueue_buddy(z, ac, pcp, nofragment);
}

/* The watermark check; a zone with deferred blocks grows before it counts
 * as below a watermark or without a block of the order. */
static inline __attribute__((always_inline)) bool
zone_allows(struct za_zone *z, const struct alloc_context *ac, enum za_wmark wm)
{
	if (likely(zone_watermark_ok(z, ac->order, z->wmark[wm], ac->highest_zone)))
		return true;
	if (!zone_deferred_pages(z))
		return false;
	deferred_grow_zone(z, ac->order);
	return zone_watermark_ok(z, ac->order, z->wmark[wm], ac->highest_zone);
}

/*
 * The zonelist walk.  fair (the fast path with fair_zone=1) tries only the
 * local node's zones, which come first in the zonelist, and skips those
 * whose allocation batch is used up, so that each zone of the node gets
 * allocations in proportion to its size and ages at the same speed.  It
 * stops at the first zone of another node: remote zones take no part in
 * the round robin, and spilling to them is the slow path's decision, made
 * only once the local batches were reset and the local zones still fail.
 * nofragment (a constant but in get_page_nofragment): the local zones
 * only, without fallbacks that split another type's pageblock.
 */
static inline __attribute__((always_inline)) struct za_page *
get_page_from_freelist(struct alloc_context *ac, enum za_wmark wm, bool fair, bool nofragment)
{
	for (struct za_zone **zp = ac->zonelist; *zp; zp++) {
		struct za_zone *z = *zp;
		if ((fair || nofragment) && z->node != ac->node)
			break;
		if (z->idx > ac->highest_zone)
			continue;
		if (fair && pcp_batch_exhausted(z, ac->cpu))
			continue;
		if (!zone_allows(z, ac, wm)) {
			ev_add_atomic(&z->stat, EV_WMARK_FAIL, 1);
			ac->low_failed |= wm == WMARK_LOW;
			continue;
		}
		struct za_page *page = rmqueue(z, ac, nofragment);
		if (page)
			return page;
	}
	return NULL;
}

/*
 * alloc_nofragment (the kernel's ALLOC_NOFRAGMENT since 5.0): when the
 * preferred zone (the first the allocation may use) has a lower zone on
 * its node -- Normal above DMA32 -- the fast path first tries the node's
 * zones without splitting another migratetype's pageblock; only if they
 * all would have to (or the walk reaches another node) does it walk again
 * with fallbacks allowed.  The slow path never holds back.
 */
static __attribute__((noinline)) struct za_page *
get_page_nofragment(struct alloc_context *ac, bool fair)
{
	for (struct za_zone **zp = ac->zonelist; *zp; zp++) {
		if ((*zp)->idx > ac->highest_zone)
			continue;
		if ((*zp)->idx > 0) {
			struct za_page *page = get_page_from_freelist(ac, WMARK_LOW, fair, true);
			if (page)
				return page;
		}
		break;
	}
	return get_page_from_freelist(ac, WMARK_LOW, fair, false);
}

static void drain_zonelist(struct za_mm *mm, const struct alloc_context *ac)
{
	for (struct za_zone **zp = ac->zonelist; *zp; zp++)
		for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
			pcp_drain_cpu(*zp, cpu);
}

/* fair_zone: every local zone gets its batch back (high - low watermark). */
/* What the layers above hold free for their users (quicklists). */
static void drain_layers(struct za_mm *mm)
{
	for (int i = 0; i < NR_MM_LAYERS; i++)
		if (mm_layers[i].drain)
			mm_layers[i].drain(mm);
}

static void reset_alloc_batches(const struct alloc_context *ac)
{
	for (struct za_zone **zp = ac->zonelist; *zp; zp++)
		if ((*zp)->node == ac->node)
			store_relaxed(&(*zp)->alloc_batch,
				      (long)((*zp)->wmark[WMARK_HIGH] - (*zp)->wmark[WMARK_LOW]));
}

/* Wakes the kswapd of each zone that needs it (vmscan.c decides), and
 * counts an allocation that failed the low watermark while none was woken. */
static void wake_all_kswapds(struct za_mm *mm, const struct alloc_context *ac)
{
	bool woken = false;
	for (struct za_zone **zp = ac->zonelist; *zp; zp++)
		if ((*zp)->idx <= ac->highest_zone)
			woken |= wakeup_kswapd(*zp, ac->order, ac->highest_zone);
	if (ac->low_failed && !woken)
		ev_add_atomic(&mm->stat, EV_KSWAPD_WAKE_MISSED, 1);
}

/*
 * Rounds of direct reclaim without progress before ENOMEM.  Order-0 pages
 * freed by reclaim are progress only for orders the per-CPU lists cache
 * (there is no compaction to assemble larger blocks), so a costly order,
 * as in the kernel, gives up after one round.
 */
static int max_reclaim_retries(unsigned int order)
{
	return order > PCP_MAX_ORDER ? 1 : MAX_RECLAIM_RETRIES;
}

/*
 * The slow path, in the kernel's order: reset the fair batches and wake
 * kswapd; retry at the min watermark, ignoring the batches; then, if the
 * caller may wait, reclaim directly and retry, taking back what the
 * per-CPU lists and quicklists hold after the first failed round (never
 * counted as progress), until reclaim makes no progress
 * max_reclaim_retries() times in a row or nothing reclaimable is left.
 * Then ENOMEM, no OOM killer.
 */
static __attribute__((noinline)) struct za_page *
alloc_slowpath(struct za_mm *mm, struct alloc_context *ac, za_gfp_t gfp)
{
	ev_add_atomic(&mm->stat, EV_ALLOC_SLOWPATH, 1);
	if (mm->fair_zone)
		reset_alloc_batches(ac);
	wake_all_kswapds(mm, ac);
	struct za_page *page = get_page_from_freelist(ac, WMARK_MIN, false, false);
	int no_progress = 0;
	bool drained = false;
	while (!page && !(gfp & ZA_GFP_NOWAIT)) {
		unsigned long reclaimed = try_to_free_pages(mm, ac->zonelist, ac->highest_zone, ac->order);
		if ((page = get_page_from_freelist(ac, WMARK_MIN, false, false)))
			break;
		if (!drained) {         /* what the caches hold, once */
			drain_layers(mm);
			drain_zonelist(mm, ac);
			drained = true;
			if ((page = get_page_from_freelist(ac, WMARK_MIN, false, false)))
				break;
		}
		no_progress = reclaimed && ac->order <= PCP_MAX_ORDER ? 0 : no_progress + 1;
		if (no_progress >= max_reclaim_retries(ac->order) ||
		    !reclaimable_pages(mm, ac->zonelist))
			break;
	}
	if (!page) {
		ev_add_atomic(&mm->stat, EV_ALLOC_FAIL, 1);
		ZA_PROBE2(alloc_fail, ac->order, gfp);
		za_set_last_error("out of memory: no zone could satisfy an order-%u allocation",
				  ac->order);
		errno = ENOMEM;
	}
	return page;
}

static int gfp_migratetype(za_gfp_t gfp)
{
	if (gfp & ZA_GFP_MOVABLE)
		return MT_MOVABLE;
	return gfp & ZA_GFP_RECLAIMABLE ? MT_RECLAIMABLE : MT_UNMOVABLE;
}

static int gfp_highest_zone(const struct za_mm *mm, za_gfp_t gfp)
{
	int limit = (int)(gfp & ZA_GFP_ZONE_MASK) - 1;
	return limit < 0 || limit >= mm->nr_zones ? mm->nr_zones - 1 : limit;
}

static bool request_ok(const struct za_mm *mm, int nid, za_gfp_t gfp, unsigned int order)
{
	const za_gfp_t both = ZA_GFP_MOVABLE | ZA_GFP_RECLAIMABLE;
	return order <= mm->max_order && !(gfp & ~ZA_GFP_VALID_MASK) &&
	       (gfp & both) != both && nid >= -1 && nid < mm->nr_nodes;
}

static __attribute__((noinline)) void *bad_request(const struct za_mm *mm, int nid,
						    za_gfp_t gfp, unsigned int order)
{
	if (order > mm->max_order)
		za_set_last_error("za_alloc_pages: order %u above max_order %u", order, mm->max_order);
	else if (nid < -1 || nid >= mm->nr_nodes)
		za_set_last_error("za_alloc_pages_node: no node %d (the system has %d; -1 means "
				  "the current CPU's node)", nid, mm->nr_nodes);
	else
		za_set_last_error("za_alloc_pages: invalid gfp flags %#x", gfp);
	errno = EINVAL;
	return NULL;
}

/* The block at page, of the order, to its new owner. */
static inline __attribute__((always_inline)) void *
block_handed_out(za_mm_t *mm, struct za_page *page, za_gfp_t gfp, unsigned int order)
{
	set_page_private(page, 0);      /* the new owner's */
	void *addr = page_to_virt(mm, page);
	if (unlikely(gfp & ZA_GFP_ZERO))
		memset(addr, 0, PAGE_SIZE << order);
	return addr;
}

/* The allocation at page, to its new owner: a block of the order, or a
 * run, whose fresh pages read as zero already (ZA_GFP_ZERO clears the
 * span of the others). */
static void *handed_out(za_mm_t *mm, struct za_page *page, za_gfp_t gfp,
			const struct alloc_context *ac)
{
	if (!ac->nr_pages)
		return block_handed_out(mm, page, gfp, ac->order);
	void *addr = block_handed_out(mm, page, 0, ac->order);
	if ((gfp & ZA_GFP_ZERO) && ac->dirty_lo < ac->dirty_hi)
		memset(pfn_to_virt(mm, ac->dirty_lo), 0, (ac->dirty_hi - ac->dirty_lo) << PAGE_SHIFT);
	return addr;
}

/* The zones an allocation of gfp on node may use, in order. */
static struct za_zone **zonelist_of(za_mm_t *mm, int node, za_gfp_t gfp)
{
	return mm->zonelists[2 * node + !!(gfp & ZA_GFP_THISNODE)];
}

/*
 * The hit path: the zonelist walk's first steps when they succeed -- the
 * first local zone the flags allow whose fair batch is not used up passes
 * the low watermark, and the CPU's front of its list has a block -- the
 * same checks on the same zones and the same pop, without the walk's
 * context.  NULL leaves the walk to redo them and go further (a watermark
 * to count or a zone to grow, another node, a refill, a run, percpu=lock).
 */
static inline __attribute__((always_inline)) struct za_page *
alloc_hit(za_mm_t *mm, int node, int cpu, za_gfp_t gfp, unsigned int order)
{
	if ((gfp & ZA_GFP_BUDDY) || !pcp_use_front(mm, order) || !pcp_allowed_order(mm, order))
		return NULL;    /* no front to pop: percpu=lock (replays), other orders */
	int highest = gfp_highest_zone(mm, gfp);
	for (struct za_zone **zp = zonelist_of(mm, node, gfp); *zp && (*zp)->node == node; zp++) {
		struct za_zone *z = *zp;
		if (z->idx > highest || (mm->fair_zone && pcp_batch_exhausted(z, cpu)))
			continue;
		if (!zone_watermark_ok(z, order, z->wmark[WMARK_LOW], highest))
			return NULL;
		return pcp_alloc_front(z, order, gfp_migratetype(gfp));
	}
	return NULL;
}

/* The zonelist walk, and the slow path if it fails: out of line, so that
 * the hit path saves no registers for it. */
static __attribute__((noinline)) void *
alloc_pages_walk(za_mm_t *mm, int cpu, int node, za_gfp_t gfp, unsigned int order,
		 unsigned long nr_pages)
{
	struct alloc_context ac = {
		.zonelist = zonelist_of(mm, node, gfp),
		.highest_zone = gfp_highest_zone(mm, gfp),
		.mt = gfp_migratetype(gfp),
		.cpu = cpu,
		.node = node,
		.order = order,
		.nr_pages = nr_pages,
		.buddy = gfp & ZA_GFP_BUDDY,
	};
	struct za_page *page = unlikely(mm->alloc_nofragment) ?
			       get_page_nofragment(&ac, mm->fair_zone) :
			       get_page_from_freelist(&ac, WMARK_LOW, mm->fair_zone, false);
	if (unlikely(!page) && !(page = alloc_slowpath(mm, &ac, gfp)))
		return NULL;
	return handed_out(mm, page, gfp, &ac);
}

/* nr_pages: a run of that many pages (order is its block's), or 0 for a
 * block of the order. */
static inline __attribute__((always_inline)) void *
alloc_pages(za_mm_t *mm, int nid, za_gfp_t gfp, unsigned int order, unsigned long nr_pages)
{
	if (unlikely(!request_ok(mm, nid, gfp, order)))
		return bad_request(mm, nid, gfp, order);

	int cpu = this_cpu(mm);
	int node = nid < 0 ? mm->cpu_node[cpu] : nid;
	struct za_page *hit = nr_pages ? NULL : alloc_hit(mm, node, cpu, gfp, order);
	if (likely(hit))
		return block_handed_out(mm, hit, gfp, order);
	return alloc_pages_walk(mm, cpu, node, gfp, order, nr_pages);
}

void *za_alloc_pages_node(za_mm_t *mm, int nid, za_gfp_t gfp, unsigned int order)
{
	return alloc_pages(mm, nid, gfp, order, 0);
}

void *za_alloc_pages(za_mm_t *mm, za_gfp_t gfp, unsigned int order)
{
	return alloc_pages(mm, -1, gfp, order, 0);
}

/*
 * A run of n pages beyond the largest block, from zone z: the kernel's
 * alloc_contig_pages for free memory only (no migration, reclaim or
 * compaction).  The zone keeps its low watermark (and reserve), and one
 * with deferred blocks grows for the run, by n pages and a block: the
 * blocks it gets follow its last one, but a section boundary among them
 * can leave neither side n pages, so it may take another growth or two.
 * Only a zone that cannot grow lends the run another type's memory.
 */
#define GIANT_GROW_TRIES 3

static struct za_page *rmqueue_giant(struct za_zone *z, struct alloc_context *ac)
{
	unsigned long n = ac->nr_pages, grown_from = 0;
	for (int tries = 0;; tries++) {
		bool last = tries == GIANT_GROW_TRIES || !zone_deferred_pages(z);
		struct za_page *page = NULL;
		uint64_t t0 = zone_lock(z);
		if (zone_watermark_ok(z, 0, z->wmark[WMARK_LOW] + n, ac->highest_zone))
			page = buddy_rmqueue_giant(z, n, ac->mt, grown_from, last);
		run_taken(z, ac, page);
		zone_unlock(z, t0, NO_CAUSE);
		if (page || last)
			return page;
		grown_from = zone_init_end_pfn(z);
		deferred_grow_zone_by(z, n + (1UL << z->mm->max_order));
	}
}

static void *alloc_giant(za_mm_t *mm, za_gfp_t gfp, unsigned long n)
{
	if (unlikely(!request_ok(mm, -1, gfp, mm->max_order)))
		return bad_request(mm, -1, gfp, mm->max_order);
	if (n > run_max_pages(mm)) {
		za_set_last_error("za_alloc_pages_exact: %lu pages, above a section's %lu", n,
				  run_max_pages(mm));
		errno = EINVAL;
		return NULL;
	}
	int cpu = this_cpu(mm);
	struct alloc_context ac = {
		.highest_zone = gfp_highest_zone(mm, gfp),
		.mt = gfp_migratetype(gfp),
		.cpu = cpu,
		.order = mm->max_order,
		.nr_pages = n,
	};
	for (struct za_zone **zp = zonelist_of(mm, mm->cpu_node[cpu], gfp); *zp; zp++) {
		struct za_page *page = (*zp)->idx <= ac.highest_zone ? rmqueue_giant(*zp, &ac) : NULL;
		if (page)
			return handed_out(mm, page, gfp, &ac);
	}
	za_set_last_error("za_alloc_pages_exact: no zone has %lu free pages in a row", n);
	errno = ENOMEM;
	return NULL;
}

void *za_alloc_pages_exact(za_mm_t *mm, za_gfp_t gfp, size_t size)
{
	unsigned long n = size ? size_to_pages(size) : 1;
	if (n > 1)
		ZA_PROBE2(large_alloc, size, n);
	if (n > 1UL << mm->max_order)
		return alloc_giant(mm, gfp, n);
	unsigned int order = order_base_2(n);
	return alloc_pages(mm, -1, gfp, order, n == 1UL << order ? 0 : n);
}

/* ------------------------------------------------------------------------
 * Freeing
 * ------------------------------------------------------------------------ */
/* arg: how the caller described the block ("order 3", "size 20000"). */
static __attribute__((noinline, cold)) int bad_call(struct za_mm *mm, const char *fn,
						    const void *addr, const char *arg, const char *why)
{
	ev_add_atomic(&mm->stat, EV_BAD_FREE, 1);
	za_report_error(mm, "%s(%p, %s): %s", fn, addr, arg, why);
	errno = EINVAL;
	return -1;
}

static int bad_block(struct za_mm *mm, const char *fn, const void *addr, unsigned int order,
		     const char *why)
{
	char arg[32];
	snprintf(arg, sizeof(arg), "order %u", order);
	return bad_call(mm, fn, addr, arg, why);
}

int bad_run(struct za_mm *mm, const char *fn, const void *addr, size_t size, const char *why)
{
	char arg[40];
	snprintf(arg, sizeof(arg), "size %zu", size);
	return bad_call(mm, fn, addr, arg, why);
}

static int bad_free(struct za_mm *mm, const void *addr, unsigned int order, const char *why)
{
	return bad_block(mm, "za_free_pages", addr, order, why);
}

/* debug=1: no page inside the block may head a block of its own. */
const char *check_block_body(const struct za_mm *mm, unsigned long pfn, unsigned int order)
{
	for (unsigned long i = 1; i < 1UL << order; i++) {
		uint32_t f = page_flags(pfn_to_page(mm, pfn + i));
		if (f & (PG_buddy | PG_pcp))
			return "part of the block is already free (overlapping or double free)";
		if (f & PG_alloc)
			return "the block overlaps another allocated block (wrong order?)";
	}
	return NULL;
}

#define RUN_PIECE "part of a run of za_alloc_pages_exact (free it with za_free_pages_exact)"

const char *why_not_allocated(uint32_t flags)
{
	if (flags & PG_buddy)
		return "double free (the block is already in the buddy lists)";
	if (flags & PG_pcp)
		return "double free (the block is already on a per-CPU list)";
	return "not the start of an allocated block";
}

static __attribute__((noinline)) int free_to_buddy(struct za_zone *z, struct za_page *page,
						   unsigned int order, bool pcp_busy)
{
	struct za_mm *mm = z->mm;
	uint64_t t0 = zone_lock(z);
	buddy_free(z, page, order, pageblock_mt(mm, page_to_pfn(mm, page)));
	ev_add(&z->stat, EV_PGFREE, 1UL << order);
	if (pcp_busy)
		ev_add(&z->stat, EV_PCP_TRYLOCK_FAIL, 1);
	zone_unlock(z, t0, NO_CAUSE);
	return 0;
}

static inline __attribute__((always_inline)) int free_block(struct za_mm *mm, struct za_page *page,
							    unsigned int order)
{
	struct za_zone *z = mm->zone_by_id[page->zone];
	bool pcp = pcp_allowed_order(mm, order);
	if (likely(pcp) && pcp_free(z, page, order))
		return 0;
	return free_to_buddy(z, page, order, pcp);
}

/*
 * Everything the fast path does not handle: a block that is not an
 * allocated head of this order (reported), and debug=1, which checks every
 * page of the block and claims the head with an atomic exchange, so that
 * two threads freeing the same block at once cannot both succeed.
 */
static __attribute__((noinline)) int free_checked(struct za_mm *mm, struct za_page *page,
						  void *addr, unsigned int order)
{
	uint32_t flags = page_flags(page);
	if (!(flags & PG_alloc))
		return bad_free(mm, addr, order, why_not_allocated(flags));
	if (flags & PG_slab)
		return bad_free(mm, addr, order, "the block is a slab of an object cache");
	if (flags & PG_run)
		return bad_free(mm, addr, order, RUN_PIECE);
	if (flags & PG_large_kmalloc)
		return bad_free(mm, addr, order, "the block is kmalloc's (free it with za_kfree)");
	if (flags & PG_PAGECACHE)
		return bad_free(mm, addr, order, "the page is in the page cache (za_file_put_page)");
	if (page_order(page) != order) {
		char why[80];
		snprintf(why, sizeof(why), "freed with order %u, allocated with order %u",
			 order, page_order(page));
		return bad_free(mm, addr, order, why);
	}
	const char *why = check_block_body(mm, page_to_pfn(mm, page), order);
	if (why)
		return bad_free(mm, addr, order, why);
	flags = atomic_exchange_explicit(&page->flags, 0, memory_order_relaxed);
	if (!(flags & PG_alloc))
		return bad_free(mm, addr, order, why_not_allocated(flags));
	return free_block(mm, page, order);
}

/*
 * The checks of the default mode cost nothing on the fast path: the range
 * check is two instructions and the descriptor is read anyway to link the
 * block into a list.  Without debug=1, two threads freeing the same block
 * at the same instant can both pass them.
 */
int za_free_pages(za_mm_t *mm, void *addr, unsigned int order)
{
	if (unlikely(!addr_in_arena(mm, addr)))
		return bad_free(mm, addr, order, "address outside the arena");
	if (unlikely(order > mm->max_order))
		return bad_free(mm, addr, order, "order above max_order");
	if (unlikely((uintptr_t)addr & (PAGE_SIZE - 1)))
		return bad_free(mm, addr, order, "not the start of an allocated block");
	struct za_page *page = virt_to_page(mm, addr);
	if (unlikely((page_flags(page) & (PG_alloc | PG_OWNED)) != PG_alloc ||
		     page_order(page) != order || mm->debug))
		return free_checked(mm, page, addr, order);
	return free_block(mm, page, order);
}

/* za_free_pages_bulk: the block at addr if za_free_pages would free it
 * without a further check, else NULL. */
static struct za_page *plain_block(struct za_mm *mm, void *addr, unsigned int order)
{
	if (!addr_in_arena(mm, addr) || ((uintptr_t)addr & (PAGE_SIZE - 1)) || mm->debug)
		return NULL;
	struct za_page *page = virt_to_page(mm, addr);
	if ((page_flags(page) & (PG_alloc | PG_OWNED)) != PG_alloc || page_order(page) != order)
		return NULL;
	return page;
}

/* The lists a block's free goes to: the freeing CPU's, or with
 * pcp_own_pageblocks the owner's of its pageblock. */
static int free_target_cpu(const struct za_mm *mm, const struct za_page *page, int cpu)
{
	int owner = unlikely(mm->pcp_own_pageblocks) ? pageblock_owner(mm, page_to_pfn(mm, page)) : -1;
	return owner >= 0 ? owner : cpu;
}

#define FREE_BULK_RUN 31        /* the kernel's folio_batch */

/* A run of blocks for one zone and one CPU's lists: under one lock hold,
 * and what that could not take, one by one. */
static void free_run(struct za_mm *mm, struct za_zone *z, int cpu, struct za_page *const *run,
		     int n, unsigned int order)
{
	for (int i = 0; i < n; i++)
		set_page_flags(run[i], 0);      /* claimed: ours to free */
	int done = pcp_free_run(z, cpu, run, n, order, cpu != this_cpu(mm));
	while (done < n)
		free_block(mm, run[done++], order);
}

int za_free_pages_bulk(za_mm_t *mm, void *const *addrs, size_t n, unsigned int order)
{
	struct za_page *run[FREE_BULK_RUN];
	struct za_zone *run_zone = NULL;
	int run_cpu = -1, len = 0, ret = 0;
	bool pcp = order <= mm->max_order && pcp_allowed_order(mm, order);
	for (size_t i = 0; i < n; i++) {
		struct za_page *page = pcp ? plain_block(mm, addrs[i], order) : NULL;
		if (!page) {
			ret |= za_free_pages(mm, addrs[i], order);
			continue;
		}
		struct za_zone *z = mm->zone_by_id[page->zone];
		int cpu = free_target_cpu(mm, page, this_cpu(mm));
		if (len && (z != run_zone || cpu != run_cpu || len == FREE_BULK_RUN)) {
			free_run(mm, run_zone, run_cpu, run, len, order);
			len = 0;
		}
		/* Pending in the run: its repeat in the batch is a double free. */
		set_page_flags(page, PG_pcp);
		run_zone = z;
		run_cpu = cpu;
		run[len++] = page;
	}
	if (len)
		free_run(mm, run_zone, run_cpu, run, len, order);
	return ret ? -1 : 0;
}

/* ------------------------------------------------------------------------
 * Resizing in place
 * ------------------------------------------------------------------------ */
int za_resize_pages(za_mm_t *mm, void *addr, unsigned int order, unsigned int new_order)
{
	static const char fn[] = "za_resize_pages";
	if (!addr_in_arena(mm, addr) || ((uintptr_t)addr & (PAGE_SIZE - 1)))
		return bad_block(mm, fn, addr, order, "not the start of an allocated block");
	struct za_page *page = virt_to_page(mm, addr);
	if (page_flags(page) & PG_run)
		return bad_block(mm, fn, addr, order, RUN_PIECE);
	if ((page_flags(page) & (PG_alloc | PG_slab)) != PG_alloc || page_order(page) != order)
		return bad_block(mm, fn, addr, order, "not an allocated block of this order");
	if (new_order > mm->max_order)
		return bad_block(mm, fn, addr, order, "new order above max_order");
	struct za_zone *z = mm->zone_by_id[page->zone];
	unsigned long pfn = page_to_pfn(mm, page);
	bool done = true;
	uint64_t t0 = zone_lock(z);
	if (new_order < order) {
		buddy_shrink(z, pfn, order, new_order);
		ev_add(&z->stat, EV_PGFREE, (1UL << order) - (1UL << new_order));
	} else if (new_order > order && (done = buddy_grow(z, pfn, order, new_order))) {
		ev_add(&z->stat, EV_PGALLOC, (1UL << new_order) - (1UL << order));
	}
	if (done)
		set_page_order(page, new_order);
	zone_unlock(z, t0, NO_CAUSE);
	if (!done) {
		za_set_last_error("%s(%p): the pages above the block are not free", fn, addr);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}
