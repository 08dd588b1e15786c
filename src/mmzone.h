/*
 * The shared types of the page allocator: page descriptors, zones, per-CPU
 * page sets, nodes and the memory system (the kernel's mmzone.h and
 * mm_types.h in one small header), and the zone lock.  The conversions
 * between addresses, pfns and descriptors follow in memory_model.h (the
 * kernel's); what the allocator's files call of each other is in
 * internal.h (the kernel's mm/internal.h).
 */
#ifndef ZA_MMZONE_H
#define ZA_MMZONE_H

#include "zonealloc.h"

#include <pthread.h>
#include "bitops.h"
#include "config.h"
#include "lock.h"
#include "platform.h"
#include "rseq.h"
#include "vmstat.h"

struct za_kmem_cache;
struct quicklist;
struct za_file;
struct kswapd;
struct za_worker;
struct za_publisher;

#define PAGE_SHIFT ZA_PAGE_SHIFT
#define PAGE_SIZE  ZA_PAGE_SIZE

/* PCP_MAX_ORDER, the largest order cached per CPU, is in vmstat.h: the
 * per-CPU events are counted by order. */
#define PAGEBLOCK_ORDER_DEFAULT 9

enum za_migratetype {
	MT_UNMOVABLE,
	MT_MOVABLE,
	MT_RECLAIMABLE,
	MT_TYPES
};

/*
 * Per-CPU list layout, the kernel's since 5.14: for each order 0..3 one list
 * per migratetype (pindex 3 * order + mt), then two for the THP order (the
 * pageblock order), non-movable and movable.  pcp_high_order=1 (seed 000)
 * uses only the first list of each order 1..3, shared by all migratetypes,
 * and no THP lists; pcp_high_order=0 the order-0 lists (pcp.h's
 * pcp_list_index).
 */
#define NR_LOWORDER_PCP_LISTS (MT_TYPES * (PCP_MAX_ORDER + 1))
#define NR_PCP_LISTS (NR_LOWORDER_PCP_LISTS + 2)

_Static_assert(MT_UNMOVABLE == 0 && MT_MOVABLE == 1 && MT_RECLAIMABLE == 2,
	       "pcp_list_index's masks rely on the numbering");

/* ------------------------------------------------------------------------
 * Intrusive doubly linked lists
 * ------------------------------------------------------------------------ */
struct za_list {
	struct za_list *next, *prev;
};

static inline void list_init(struct za_list *h) { h->next = h->prev = h; }
static inline bool list_empty(const struct za_list *h) { return h->next == h; }

static inline void list_insert(struct za_list *n, struct za_list *prev, struct za_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add(struct za_list *n, struct za_list *h) { list_insert(n, h, h->next); }
static inline void list_add_tail(struct za_list *n, struct za_list *h) { list_insert(n, h->prev, h); }

static inline void list_del(struct za_list *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
}

/* The entries of `list` go to the head of h, in order; list is left stale. */
static inline void list_splice(struct za_list *list, struct za_list *h)
{
	if (list_empty(list))
		return;
	struct za_list *first = list->next, *last = list->prev, *at = h->next;
	first->prev = h;
	h->next = first;
	last->next = at;
	at->prev = last;
}

#define container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

/* ------------------------------------------------------------------------
 * Page descriptors
 *
 * Only the head page of a block carries state; the other pages of the block
 * keep flags 0.  A descriptor that was never used is all zero, which is why
 * creating a system does not need to touch the descriptor array.
 * ------------------------------------------------------------------------ */
enum {
	PG_buddy = 1u << 0,    /* head of a free block in the buddy lists */
	PG_pcp   = 1u << 1,    /* head of a free block on a per-CPU list */
	PG_alloc = 1u << 2,    /* head of an allocated block */
	/* Set by the owner of an allocated block (slub.c): */
	PG_slab  = 1u << 3,    /* the block is a slab; slab_cache and slab_state are valid */
	PG_slab_partial = 1u << 4,   /* ... on its node's partial list (under list_lock) */
	PG_tail  = 1u << 5,    /* inside a slab: private is the slab's head descriptor;
				* slab_cache and order are the slab's too (slub.c) */
	/* Free blocks (buddy.c): the memory was written since the OS gave it
	 * (or took it back, page_reporting.c); private is the purge epoch the
	 * block became free in. */
	PG_mem_dirty = 1u << 6,
	/* With PG_pcp (pcp_own_pageblocks): on a list (not a front) of the CPU
	 * that owns its pageblock, where a drain may merge it with its buddy. */
	PG_pcp_buddy = 1u << 7,
	/* Page cache pages (filemap.c, vmscan.c), changed with atomic bit ops: */
	PG_lru        = 1u << 8,    /* on its zone's LRU lists (under lru_lock) */
	PG_active     = 1u << 9,    /* ... the active one */
	PG_referenced = 1u << 10,   /* accessed since the last aging step */
	PG_dirty      = 1u << 11,   /* newer than the file */
	PG_uptodate   = 1u << 12,   /* holds the file's data */
	PG_locked     = 1u << 13,   /* I/O in progress, or being reclaimed */
	PG_io_error   = 1u << 14,   /* the read failed */
	/* kmalloc.c: a block kmalloc took from the page allocator (the
	 * kernel's PageLargeKmalloc); cleared before it is freed. */
	PG_large_kmalloc = 1u << 15,
	/* page_alloc.c: a piece of a run of za_alloc_pages_exact (mmzone.h's
	 * run_piece_order); the run is freed or resized only as a whole. */
	PG_run = 1u << 16,
	/* An allocated block one of the layers above keeps its own: not to be
	 * freed or reused through the page allocator's entry points. */
	PG_PAGECACHE = PG_lru | PG_active | PG_referenced | PG_dirty | PG_uptodate | PG_locked |
		       PG_io_error,
	PG_OWNED = PG_slab | PG_run | PG_large_kmalloc | PG_PAGECACHE,
};

struct za_page {
	/* Atomic (relaxed, so plain moves) because the buddy merge and the
	 * pageblock walks of one CPU read the head of a neighbouring block that
	 * another CPU may be allocating or freeing; PG_buddy itself only
	 * changes under the zone lock. */
	_Atomic uint32_t flags;
	_Atomic uint8_t order;  /* order of the block this page heads */
	_Atomic uint8_t mt;     /* migratetype it was allocated or freed with */
	uint8_t zone;           /* global zone id (node * nr_zones + index) */
	union {
		struct za_list lru;     /* buddy free list, per-CPU list, slab partial list */
		struct {                /* a slab on a CPU's partial list (slub.c) */
			struct za_page *next;
			unsigned long slabs;    /* on the list from here on */
		} cpu_partial;
	};
	/* Free for the owner of an allocated block: page_private() and
	 * set_page_private(), relaxed, since lockless readers (virt_to_slab
	 * of a tail page, a malloc free asking a page block's word) may read
	 * it while the owner writes it. */
	_Atomic unsigned long private;
	union {
		struct {        /* slabs (PG_slab): the cache, and the slab's free list
				 * and counters in one word so that they change together */
			struct za_kmem_cache *slab_cache;
			_Atomic uint64_t slab_state;
		};
		struct {        /* page cache pages */
			struct za_file *mapping;
			unsigned long index;    /* in pages, within the file */
		};
	};
	_Atomic int refcount;   /* page cache: the index holds one, users one each */
	/* The first piece of a live run of za_alloc_pages_exact: the run's
	 * pages (under the zone lock); 0 on every other descriptor. */
	unsigned int run_pages;
} __attribute__((aligned(64)));

/* One cache line, and a power of two: page <-> pfn is a shift. */
_Static_assert(sizeof(struct za_page) == 64, "a page descriptor is one cache line");

static inline uint32_t page_flags(const struct za_page *p) { return load_relaxed(&p->flags); }
static inline unsigned long page_private(const struct za_page *p) { return load_relaxed(&p->private); }
static inline void set_page_private(struct za_page *p, unsigned long v) { store_relaxed(&p->private, v); }
static inline bool test_page_flag(const struct za_page *p, uint32_t f) { return page_flags(p) & f; }
static inline void set_page_flag(struct za_page *p, uint32_t f)
{
	atomic_fetch_or_explicit(&p->flags, f, memory_order_release);
}
static inline void clear_page_flag(struct za_page *p, uint32_t f)
{
	atomic_fetch_and_explicit(&p->flags, ~f, memory_order_release);
}
/* Returns whether the bit was set before. */
static inline bool test_and_set_page_flag(struct za_page *p, uint32_t f)
{
	return atomic_fetch_or_explicit(&p->flags, f, memory_order_acq_rel) & f;
}
static inline bool test_and_clear_page_flag(struct za_page *p, uint32_t f)
{
	return atomic_fetch_and_explicit(&p->flags, ~f, memory_order_acq_rel) & f;
}
static inline void set_page_flags(struct za_page *p, uint32_t f) { store_relaxed(&p->flags, f); }
static inline unsigned int page_order(const struct za_page *p) { return load_relaxed(&p->order); }
static inline void set_page_order(struct za_page *p, unsigned int o) { store_relaxed(&p->order, (uint8_t)o); }
static inline int page_mt(const struct za_page *p) { return load_relaxed(&p->mt); }
static inline void set_page_mt(struct za_page *p, int mt) { store_relaxed(&p->mt, (uint8_t)mt); }

/* ------------------------------------------------------------------------
 * Per-CPU page sets: one per (zone, CPU), on its own cache lines.
 * ------------------------------------------------------------------------ */
/* pcp->flags (the kernel's PCPF_*). */
enum {
	PCPF_PREV_FREE_HIGH_ORDER = 1 << 0,    /* the last free was of order 1..3 */
	PCPF_FREE_HIGH_BATCH = 1 << 1,         /* keep a batch when free_high drains */
};

struct za_pcp {
	/* The hit paths': the lock, the count, high; the free path's when
	 * pcp_high_auto or pcp_free_high track it: flags and free_count. */
	za_trylock_t lock;
	uint8_t flags;                  /* PCPF_* */
	uint8_t alloc_factor;           /* pcp_high_auto: refills are batch << alloc_factor */
	_Atomic int count;              /* pages (not blocks) on all lists */
	_Atomic int high;               /* free down when count reaches this */
	int batch;                      /* refill / drain unit, in pages */
	/* fair_zone (pcp.h): this CPU's charge not yet folded into the zone,
	 * and its view of the zone's batch (read without the lock). */
	_Atomic int batch_charged, batch_left;
	/* Pages freed recently without allocations in between: += 2^order per
	 * free (up to batch << pcp_batch_scale_max), halved per allocation --
	 * lazily: a free first applies the halvings of the allocations since
	 * the last one it saw (allocs_seen), counted anyway by EV_PCP_ALLOC. */
	int free_count;
	struct za_list lists[NR_PCP_LISTS];
	struct za_pcp_events stat;
	/* Slow paths only. */
	int high_min, high_max;         /* high's range; equal: not tuned */
	uint64_t allocs_seen;           /* EV_PCP_ALLOC total free_count last saw */
	uint64_t frees_seen;            /* EV_PCP_FREE total alloc_factor last saw */
	/* percpu=rseq (pcp.h): the lists' fronts, each a stack of the
	 * list's most recently freed blocks that the hit paths use without
	 * the lock; the order-0 fronts share the stop word's line. */
	_Alignas(ZA_CACHELINE) _Atomic uint32_t rseq_stop;
	struct rseq_stack front[NR_LOWORDER_PCP_LISTS];
} __attribute__((aligned(16 * ZA_CACHELINE)));

/* A power of two, so that finding a CPU's set is a shift. */
#define ZA_PCP_SHIFT 10
_Static_assert(sizeof(struct za_pcp) == 1 << ZA_PCP_SHIFT, "struct za_pcp should be 16 cache lines");
_Static_assert(offsetof(struct za_pcp, front[MT_TYPES]) - offsetof(struct za_pcp, rseq_stop) <= ZA_CACHELINE,
	       "the order-0 fronts in the stop word's line");
_Static_assert(offsetof(struct za_pcp, free_count) < ZA_CACHELINE, "the hit paths' fields in the first line");

/* ------------------------------------------------------------------------
 * Zones
 * ------------------------------------------------------------------------ */
enum za_wmark { WMARK_MIN, WMARK_LOW, WMARK_HIGH, NR_WMARK };

struct za_free_area {
	struct za_list free_list[MT_TYPES];
	_Atomic unsigned long nr_free;  /* blocks of this order, every type */
};

struct za_zone {
	/* Read-mostly after creation. */
	struct za_mm *mm;
	struct za_pcp *pcp;             /* [mm->nr_cpus] */
	uint32_t *frag_head;            /* [mm->nr_cpus], pcp_own_pageblocks (buddy.c) */
	/* percpu=rseq: a push that sets a bit of this fails (pcp.h) */
	uint64_t front_full[PCP_MAX_ORDER + 1];
	/* ZONE_BELOW_HIGH, ZONE_RECLAIM_ACTIVE (pcp_high_auto): read by the
	 * free path with the line above, written only when they change. */
	_Atomic unsigned int pcp_flags;
	/* percpu=rseq: where the fronts of list 0 are (pcp.h's
	 * pcp_front_percpu), so that a hit path reads it, not mm's. */
	struct rseq_percpu front_pc;
	unsigned long start_pfn;
	unsigned long nr_pages;         /* spanned == present */
	unsigned long wmark[NR_WMARK];
	unsigned long lowmem_reserve[ZA_MAX_ZONES];
	int node, idx, id;              /* idx within the node, id = node * nr_zones + idx */
	const char *name;
	int stat_threshold;             /* fair_zone: per-CPU charge folded beyond this */

	/* The lock word has a line of its own: waiters spin reading it, and
	 * must not steal the lines the holder is writing. */
	za_lock_t lock __attribute__((aligned(ZA_CACHELINE)));

	/* Written under the lock. */
	_Atomic long nr_free_pages __attribute__((aligned(ZA_CACHELINE)));   /* pages in the buddy lists */
	/* The demand the purge policy follows (za_used_pages_peak): the
	 * fewest pages the lists held since it last looked, counting blocks
	 * off them for purging (nr_isolated) as free, and raised by what the
	 * zone grew by since, so that managed - free_low is the most pages
	 * that were in use at once. */
	long free_low;
	long nr_isolated;
	/* deferred_init: the zone's blocks from here on were never given to
	 * the buddy lists (mm_init.c grows the zone on demand). */
	_Atomic unsigned long first_deferred_pfn;
	/* za_alloc_pages_exact: where the last run ended, and the end of the
	 * block it was carved from (buddy_rmqueue_run) */
	unsigned long exact_next, exact_limit;
	/* The pages of the range last taken off the lists (buddy_take_range,
	 * a run carved from a block) that came from dirty blocks, as one span
	 * [lo, hi) holding them all; lo == hi when every page was fresh, and
	 * reads as zero (ZA_GFP_ZERO clears only the span). */
	unsigned long taken_dirty_lo, taken_dirty_hi;
	struct za_free_area free_area[ZA_MAX_ORDER_LIMIT + 1];
	struct za_events stat;

	/* fair_zone (seed 003): what the fast path may still allocate here
	 * before the zone counts as full; reset in the slow path. */
	_Atomic long alloc_batch __attribute__((aligned(ZA_CACHELINE)));
	/* Pages in slabs (the kernel's NR_SLAB_*): slub.c adds and subtracts
	 * as slabs come and go (rare: atomic). */
	_Atomic long nr_slab_pages;

	/* The file LRU lists (vmscan.c), under lru_lock. */
	za_lock_t lru_lock __attribute__((aligned(ZA_CACHELINE)));
	struct za_list lru[2];          /* LRU_INACTIVE, LRU_ACTIVE */
	_Atomic long nr_lru[2];
	_Atomic long nr_dirty;
} __attribute__((aligned(ZA_CACHELINE)));

enum { LRU_INACTIVE, LRU_ACTIVE };

struct za_node {
	int id;
	struct za_zone zones[ZA_MAX_ZONES];
	struct kswapd *kswapd;          /* vmscan.c */
};

/* ------------------------------------------------------------------------
 * The memory system
 * ------------------------------------------------------------------------ */
/* kmalloc's size classes, kmalloc-8 .. kmalloc-8k (kmalloc.c). */
#define NR_KMALLOC_CACHES 13

/*
 * What the address -> descriptor conversions need (mmzone.h), read-only
 * once the system exists.  The malloc keeps a copy where free() finds it
 * without a pointer to follow.
 */
struct sparse_view {
	/* A bit per section-sized piece of address space: it is a present
	 * section's memory (set by sparse.c, never cleared). */
	_Atomic unsigned long *map;
	_Atomic unsigned long map_bits; /* 0: no address is the arena's; set last */
	uintptr_t mask;                 /* ~(section size - 1) */
	uintptr_t memmap_size;          /* bytes of descriptors below a section's memory */
	uintptr_t info_below;           /* from a section's slab info words to its memory */
	unsigned int shift;             /* log2 of the section size */
	/* The near table: for the NEAR_PIECES section-sized pieces of address
	 * space from near_base, around where the OS places sections (sparse.c),
	 * each present section's slab info words less its first page number,
	 * so that an address's word is one load and one index away
	 * (view_near_slab_info); 0 elsewhere.  The map stays the whole truth:
	 * a section beyond the table is only in it.  near_n is NEAR_PIECES,
	 * or 0 when the system could not place the table; set last. */
	_Atomic uintptr_t *near;
	_Atomic uintptr_t near_base;
	_Atomic unsigned long near_n;
};

#define NEAR_PIECES     4096UL
#define NEAR_ABOVE      (NEAR_PIECES / 4)   /* of where the first section lands; the rest below */

struct za_mm {
	/* Hot, read-only after creation.  The sparse memory model (sparse.c):
	 * the pfn space [0, nr_pages) is cut into sections of 2^view.shift
	 * bytes, each mapped where the OS puts it, when a zone first grows
	 * into it. */
	struct sparse_view view;
	char *_Atomic *section_mem;     /* [nr_sections]: a present section's memory, else NULL */
	unsigned long nr_pages;
	unsigned long nr_sections;
	_Atomic uint8_t *pageblock_mt;  /* migratetype per pageblock */
	/* pcp_own_pageblocks: per pageblock, the CPU whose lists claimed it
	 * whole, + 1 (0: none); set under the zone lock by the claim, cleared
	 * when the block merges back whole in the buddy lists, read by frees
	 * without a lock (a stale owner only sends a free to another list). */
	_Atomic uint16_t *pageblock_owner;
	/* ... and the lists of owned pageblocks with fragments in the buddy
	 * lists, one per zone and CPU (buddy.c's frag_*), under the zone lock. */
	uint32_t *pageblock_frag;
	uint8_t *block_zone;            /* zone id per max-order block */
	struct za_zone **zone_by_id;
	int *cpu_node;                  /* [nr_cpus] */
	/* Per node, two NULL-terminated fallback lists: [2n] this node's zones
	 * highest first, then the other nodes' by distance; [2n+1] this node's
	 * zones only (ZA_GFP_THISNODE). */
	struct za_zone ***zonelists;
	unsigned int max_order, pageblock_order;
	int nr_nodes, nr_zones, nr_cpus;
	long rseq_cpu_offset;           /* thread pointer to rseq cpu_id or mm_cid, 0 without rseq */
	bool percpu_rseq;               /* the fast paths are restartable sections (rseq.h) */
	bool rseq_own_area;             /* threads register rseq_cpu_offset's area themselves */
	_Atomic int nr_cpu_bindings;    /* threads bound by za_bind_cpu (percpu.h) */
	bool bulkfree_outside_lock, lock_stats, debug;
	bool fair_zone, kswapd_wake_high;
	/* The per-CPU lists (pcp.h): which orders they cache, how a
	 * migratetype picks a list of orders 1..3 (pcp_list_index), and
	 * whether the free path keeps the books of pcp_high_auto and
	 * pcp_free_high. */
	uint8_t pcp_high_order;
	uint8_t pcp_thp_order;          /* 0: the THP order is not cached */
	uint8_t pcp_mt_mask;
	bool pcp_track_free;
	bool pcp_front;                 /* percpu=rseq, and no free-side books to keep */
	uint8_t pcp_lists[NR_PCP_LISTS], nr_pcp_lists;  /* the lists in use, in pindex order */
	bool pcp_high_auto, bulkfree_list_first, fallback_steal_smallest, alloc_nofragment;
	uint8_t pcp_free_high, pcp_batch_scale_max, pcp_decay_shift;
	uint8_t pcp_drain_chunks;
	bool pcp_own_pageblocks;
	struct za_node *nodes;

	struct za_config cfg;
	char *config_string;
	char percpu_mode[256];          /* za_percpu_mode() */
	za_lock_t hotplug_lock;         /* sections are added one at a time */
	char *last_section;             /* the latest one's memory: where to put the next */
	_Atomic unsigned long nr_present_sections;
	struct memblock {               /* memblock.c: the chunks metadata comes from */
		za_lock_t lock;
		struct memblock_chunk *chunks;  /* the head is the one being filled */
	} memblock;
	za_error_fn error_fn;
	void *error_ctx;
	_Atomic unsigned long purge_epoch;      /* page_reporting.c: za_purge's clock */
	za_lock_t purge_lock;                   /* one purge at a time */

	/* SLUB */
	struct za_kmem_cache *caches;   /* every cache, under caches_lock */
	za_lock_t caches_lock;
	struct za_kmem_cache *free_caches;      /* destroyed caches' descriptors, under caches_lock */
	/* The events of destroyed caches, which the system's totals keep
	 * (events only grow), under caches_lock: slab.h's enum slab_event. */
	uint64_t retired_slab_events[32];
	struct za_kmem_cache *_Atomic kmalloc_caches[NR_KMALLOC_CACHES];   /* made on first use */

	/* reclaim (vmscan.c) */
	struct shrinker *shrinkers;     /* under shrinker_lock */
	za_lock_t shrinker_lock;
	pthread_rwlock_t reclaim_lock;  /* reclaim reads, file close writes */
	struct za_file *files;          /* open files, under files_lock */
	za_lock_t files_lock;

	/* quicklists: list nr of cpu at quicklists + (cpu << ql_shift), + nr */
	struct quicklist *quicklists;
	int nr_quick;
	unsigned int ql_shift;
	bool quicklists_on;
	bool ql_rseq;                   /* restartable sections (one node only) */
	void (*_Atomic quicklist_dtor[16])(void *);   /* last seen per list, for shrinking */

	/* Tracepoints (za_set_tracepoint): looked at on slow paths only. */
	_Atomic(za_tracepoint_fn) tp_fn;
	void *tp_ctx;                   /* written before tp_fn (release) */
	unsigned int tp_mask;           /* ... as is this: 1u << the types delivered */
	/* The vmstat worker (vmstat.c), when vmstat_interval_ms > 0. */
	struct za_worker *vmstat_worker;
	/* publish=1 (publish.c): the segment zabench top reads. */
	struct za_publisher *publisher;

	struct za_events stat __attribute__((aligned(ZA_CACHELINE)));
	struct za_events *cpu_stat;     /* [nr_cpus]: frequent events of no lock */
};

/* The end of what the buddy lists manage: the zone's end, or where its
 * deferred (not yet initialised) part begins.  Acquire, against the
 * grower's release: a lockless walk up to it (vmstat's pageblock counts)
 * then sees the pageblock types memmap_init_section wrote for a section
 * another thread onlined. */
static inline unsigned long zone_init_end_pfn(const struct za_zone *z)
{
	return atomic_load_explicit(&z->first_deferred_pfn, memory_order_acquire);
}

static inline unsigned long zone_deferred_pages(const struct za_zone *z)
{
	return z->start_pfn + z->nr_pages - zone_init_end_pfn(z);
}

static inline long mm_slab_pages(const struct za_mm *mm)
{
	long n = 0;
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++)
		n += load_relaxed(&mm->zone_by_id[id]->nr_slab_pages);
	return n;
}

static inline long node_free_pages(const struct za_mm *mm, int node)
{
	long n = 0;
	for (int i = 0; i < mm->nr_zones; i++)
		n += load_relaxed(&mm->nodes[node].zones[i].nr_free_pages);
	return n;
}

/* ------------------------------------------------------------------------
 * Zone lock, with the counters that explain contention: acquisitions,
 * contended acquisitions, time waited and time held (cycles), the hold also
 * charged to its cause (refill, bulk free, or the generic hold only).
 * ------------------------------------------------------------------------ */
/* The zone lock, found taken: waits for it, counted.  The wait in cycles
 * if timed (lock_stats, or a caller that wants it), else 0. */
static inline uint64_t zone_lock_contended(struct za_zone *z, bool timed)
{
	uint64_t t0 = timed ? za_cycles() : 0, wait;
	za_lock_slow(&z->lock);
	wait = timed ? za_cycles() - t0 : 0;
	ev_add(&z->stat, EV_ZONE_LOCK_CONTENDED, 1);
	if (z->mm->lock_stats)
		ev_add(&z->stat, EV_ZONE_LOCK_WAIT, wait);
	return wait;
}

static inline uint64_t zone_lock(struct za_zone *z)
{
	bool timing = z->mm->lock_stats;
	if (unlikely(!za_lock_try(&z->lock)))
		zone_lock_contended(z, timing);
	ev_add(&z->stat, EV_ZONE_LOCK_ACQUIRE, 1);
	return timing ? za_cycles() : 0;
}

/*
 * Releases the lock taken at t0.  cause, if not NO_CAUSE, is the event that
 * also accumulates this hold (EV_PCP_REFILL_HOLD, EV_PCP_BULKFREE_HOLD);
 * bulk frees also keep their longest hold.
 */
#define NO_CAUSE (-1)
static inline void zone_unlock(struct za_zone *z, uint64_t t0, int cause)
{
	if (z->mm->lock_stats) {
		uint64_t held = za_cycles() - t0;
		ev_add(&z->stat, EV_ZONE_LOCK_HOLD, held);
		if (cause != NO_CAUSE)
			ev_add(&z->stat, (enum za_event)cause, held);
		if (cause == EV_PCP_BULKFREE_HOLD)
			ev_max(&z->stat, EV_PCP_BULKFREE_HOLD_MAX, held);
	}
	za_unlock(&z->lock);
}

/* For inspection (reports, verification): takes the lock without counting,
 * so that looking does not change what is measured. */
static inline void zone_lock_quiet(struct za_zone *z)
{
	if (!za_lock_try(&z->lock))
		za_lock_slow(&z->lock);
}

static inline void zone_unlock_quiet(struct za_zone *z)
{
	za_unlock(&z->lock);
}

/* The caller holds the zone lock (ZA_DEBUG_VM). */
#define zone_lock_assert_held(z) za_lock_assert_held((z)->mm, &(z)->lock)

#include "memory_model.h"

#endif /* ZA_MMZONE_H */
