/*
 * The shared types of the page allocator: page descriptors, zones, per-CPU
 * page sets, nodes and the memory system (the kernel's mmzone.h and
 * mm_types.h in one small header).
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
struct vmstat_worker;

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
	/* percpu=rseq: a push that sets a bit of this fails (pcp.h) */
	uint64_t front_full[PCP_MAX_ORDER + 1];
	/* ZONE_BELOW_HIGH, ZONE_RECLAIM_ACTIVE (pcp_high_auto): read by the
	 * free path with the line above, written only when they change. */
	_Atomic unsigned int pcp_flags;
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
	int nr_cpu_bindings;            /* threads bound by za_bind_cpu (percpu.h) */
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
	uint8_t pcp_free_high, pcp_batch_scale_max;
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
	/* The vmstat worker (vmstat.c), when vmstat_interval_ms > 0. */
	struct vmstat_worker *vmstat_worker;

	struct za_events stat __attribute__((aligned(ZA_CACHELINE)));
	struct za_events *cpu_stat;     /* [nr_cpus]: frequent events of no lock */
};

/* ------------------------------------------------------------------------
 * Conversions
 *
 * A present section is one mapping: a header page, its pages' slab info
 * words (slab.h), the descriptors of its pages, then its memory, aligned
 * to the section size.  So from an address in a section's memory, and
 * from one of its descriptors, the other is arithmetic; only pfns need a
 * load (of the section table or the header).  Blocks never cross sections
 * (a section holds whole max-order blocks).
 * ------------------------------------------------------------------------ */
/* The default section size (section_size=auto; mm_init.c makes it smaller
 * for small systems, larger for a larger max-order block): the unit in
 * which the arena takes address space from the OS.  Runs of pages cannot
 * cross a section, so a section much larger than the largest run keeps
 * the space left at a section's end small. */
#define SECTION_SIZE_AUTO (64ULL << 20)

struct mem_section_header {
	unsigned long start_pfn;
};

static inline uintptr_t section_size(const struct za_mm *mm)
{
	return ~mm->view.mask + 1;
}

static inline unsigned int pfn_section_shift(const struct za_mm *mm)
{
	return mm->view.shift - PAGE_SHIFT;
}

static inline unsigned long pfn_to_section_nr(const struct za_mm *mm, unsigned long pfn)
{
	return pfn >> pfn_section_shift(mm);
}

/* Bytes of descriptors per section. */
static inline uintptr_t section_memmap_size(const struct za_mm *mm)
{
	return mm->view.memmap_size;
}

static inline struct za_page *section_memmap(const struct za_mm *mm, uintptr_t mem)
{
	return (struct za_page *)(mem - section_memmap_size(mm));
}

static inline const struct mem_section_header *section_header(const struct za_mm *mm, uintptr_t mem)
{
	return (const struct mem_section_header *)(mem - mm->view.info_below - PAGE_SIZE);
}

/* The memory of the section whose descriptors hold p: the next section
 * boundary above them. */
static inline uintptr_t page_section_mem(const struct za_mm *mm, const struct za_page *p)
{
	return ((uintptr_t)p + section_size(mm)) & mm->view.mask;
}

static inline unsigned long page_section_index(const struct za_mm *mm, const struct za_page *p)
{
	return (unsigned long)(p - section_memmap(mm, page_section_mem(mm, p)));
}

/* Acquire: whoever finds a section present sees its header (sparse.c
 * publishes it with a release). */
static inline bool section_present(const struct za_mm *mm, unsigned long nr)
{
	return atomic_load_explicit(&mm->section_mem[nr], memory_order_acquire) != NULL;
}

static inline void *page_to_virt(const struct za_mm *mm, const struct za_page *p)
{
	return (char *)page_section_mem(mm, p) + (page_section_index(mm, p) << PAGE_SHIFT);
}

/* A page's slab info word (slab.h), in the array below its section's
 * descriptors: sixteen pages' words to a cache line, against one
 * descriptor, for the free path that reads one per object. */
static inline _Atomic uint32_t *page_slab_info(const struct za_mm *mm, const struct za_page *p)
{
	uintptr_t mem = page_section_mem(mm, p);
	return (_Atomic uint32_t *)(mem - mm->view.info_below) + page_section_index(mm, p);
}

static inline unsigned long page_to_pfn(const struct za_mm *mm, const struct za_page *p)
{
	return section_header(mm, page_section_mem(mm, p))->start_pfn + page_section_index(mm, p);
}

/* pfn must be in a present section. */
static inline struct za_page *pfn_to_page(const struct za_mm *mm, unsigned long pfn)
{
	uintptr_t mem = (uintptr_t)load_relaxed(&mm->section_mem[pfn_to_section_nr(mm, pfn)]);
	return section_memmap(mm, mem) + (pfn & ((1UL << pfn_section_shift(mm)) - 1));
}

static inline void *pfn_to_virt(const struct za_mm *mm, unsigned long pfn)
{
	char *mem = load_relaxed(&mm->section_mem[pfn_to_section_nr(mm, pfn)]);
	return mem + ((pfn & ((1UL << pfn_section_shift(mm)) - 1)) << PAGE_SHIFT);
}

/* Is addr in the memory of a present section?  One bit of the section map,
 * indexed by the address alone. */
static inline bool view_has(const struct sparse_view *v, const void *addr)
{
	const unsigned long bits = 8 * sizeof(unsigned long);
	unsigned long nbits = atomic_load_explicit(&v->map_bits, memory_order_acquire);
	unsigned long bit = (uintptr_t)addr >> v->shift;
	return bit < nbits && (load_relaxed(&v->map[bit / bits]) >> (bit % bits) & 1);
}

/* Publishes a copy of a system's view (the malloc's). */
static inline void view_copy(struct sparse_view *dst, const struct sparse_view *src)
{
	dst->map = src->map;
	dst->mask = src->mask;
	dst->memmap_size = src->memmap_size;
	dst->info_below = src->info_below;
	dst->shift = src->shift;
	dst->near = src->near;
	store_relaxed(&dst->near_base, load_relaxed(&src->near_base));
	atomic_store_explicit(&dst->near_n, atomic_load_explicit(&src->near_n, memory_order_acquire),
			      memory_order_release);
	atomic_store_explicit(&dst->map_bits, load_relaxed(&src->map_bits), memory_order_release);
}

/* The descriptor of addr, which view_has(). */
static inline struct za_page *view_page(const struct sparse_view *v, const void *addr)
{
	uintptr_t mem = (uintptr_t)addr & v->mask;
	return (struct za_page *)(mem - v->memmap_size) + (((uintptr_t)addr - mem) >> PAGE_SHIFT);
}

/* The slab info word of addr's page (page_slab_info), which view_has(). */
static inline _Atomic uint32_t *view_slab_info(const struct sparse_view *v, const void *addr)
{
	uintptr_t mem = (uintptr_t)addr & v->mask;
	return (_Atomic uint32_t *)(mem - v->info_below) + (((uintptr_t)addr - mem) >> PAGE_SHIFT);
}

/* addr's index in the near table, if below near_n. */
static inline uintptr_t near_piece(const struct sparse_view *v, const void *addr)
{
	return ((uintptr_t)addr >> v->shift) - load_relaxed(&v->near_base);
}

/*
 * Is addr in the memory of a present section the near table holds?  Then
 * *word is its page's slab info word (else view_has() may still say yes).
 * Where view_has() and view_slab_info() take a bit test and the arithmetic
 * from the section's start, this is a bound and a load: what free's fast
 * path asks of every pointer.
 */
static inline bool view_near_slab_info(const struct sparse_view *v, const void *addr,
				       _Atomic uint32_t **word)
{
	unsigned long n = atomic_load_explicit(&v->near_n, memory_order_acquire);  /* base first */
	uintptr_t piece = near_piece(v, addr);
	if (piece >= n)
		return false;
	uintptr_t words = atomic_load_explicit(&v->near[piece], memory_order_acquire);
	*word = (_Atomic uint32_t *)(words + ((uintptr_t)addr >> PAGE_SHIFT) * sizeof(uint32_t));
	return words != 0;
}

static inline bool addr_in_arena(const struct za_mm *mm, const void *addr)
{
	return view_has(&mm->view, addr);
}

/* Is addr a page of the system's memory: in the arena, and not in the part
 * of the last section beyond `memory`, which is mapped but has no pfns? */
static inline bool virt_is_memory(const struct za_mm *mm, const void *addr);

/* addr must be in the arena. */
static inline struct za_page *virt_to_page(const struct za_mm *mm, const void *addr)
{
	return view_page(&mm->view, addr);
}

/* The first page of the order-`order` block holding page p: blocks are
 * naturally aligned within their section. */
static inline struct za_page *page_block_start(const struct za_mm *mm, struct za_page *p,
					       unsigned int order)
{
	return p - (page_section_index(mm, p) & ((1UL << order) - 1));
}

static inline unsigned long virt_to_pfn(const struct za_mm *mm, const void *addr)
{
	uintptr_t mem = (uintptr_t)addr & mm->view.mask;
	return section_header(mm, mem)->start_pfn + (((uintptr_t)addr - mem) >> PAGE_SHIFT);
}

static inline bool virt_is_memory(const struct za_mm *mm, const void *addr)
{
	return addr_in_arena(mm, addr) && virt_to_pfn(mm, addr) < mm->nr_pages;
}

static inline struct za_zone *pfn_zone(const struct za_mm *mm, unsigned long pfn)
{
	return mm->zone_by_id[mm->block_zone[pfn >> mm->max_order]];
}

static inline int pageblock_mt(const struct za_mm *mm, unsigned long pfn)
{
	return load_relaxed(&mm->pageblock_mt[pfn >> mm->pageblock_order]);
}

static inline void set_pageblock_mt(struct za_mm *mm, unsigned long pfn, int mt)
{
	store_relaxed(&mm->pageblock_mt[pfn >> mm->pageblock_order], (uint8_t)mt);
}

/* The end of what the buddy lists manage: the zone's end, or where its
 * deferred (not yet initialised) part begins. */
static inline unsigned long zone_init_end_pfn(const struct za_zone *z)
{
	return load_relaxed(&z->first_deferred_pfn);
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
static inline uint64_t zone_lock(struct za_zone *z)
{
	bool timing = z->mm->lock_stats;
	if (unlikely(!za_lock_try(&z->lock))) {
		uint64_t t0 = timing ? za_cycles() : 0;
		za_lock_slow(&z->lock);
		ev_add(&z->stat, EV_ZONE_LOCK_CONTENDED, 1);
		if (timing)
			ev_add(&z->stat, EV_ZONE_LOCK_WAIT, za_cycles() - t0);
	}
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

/* ------------------------------------------------------------------------
 * Interfaces between the files
 * ------------------------------------------------------------------------ */
/*
 * The order of the first piece of the run [pfn, end): the largest block
 * that starts at pfn (aligned to its size) and fits.  A run is its pieces,
 * largest first where the alignment allows: every run of pages has one
 * such decomposition, so that whoever frees a run finds the blocks that
 * were allocated.
 */
static inline unsigned int run_piece_order(const struct za_mm *mm, unsigned long pfn,
					   unsigned long end)
{
	unsigned int align = pfn ? (unsigned int)__builtin_ctzl(pfn) : mm->max_order;
	unsigned int fit = fls_ul(end - pfn) - 1;
	unsigned int o = align < fit ? align : fit;
	return o < mm->max_order ? o : mm->max_order;
}

/* buddy.c — all under the zone lock */
bool buddy_range_free(struct za_zone *z, unsigned long pfn, unsigned long n, int mt);
bool buddy_take_range(struct za_zone *z, unsigned long pfn, unsigned long n, int mt);
bool buddy_has_dirty(struct za_zone *z, unsigned int order, int mt);
void buddy_free_range(struct za_zone *z, unsigned long pfn, unsigned long n);
/* cpu: the CPU taking the pages, for the tracepoints; nofragment: no
 * fallback below a pageblock (alloc_nofragment). */
struct za_page *buddy_rmqueue_run(struct za_zone *z, unsigned int order, unsigned long n, int mt,
				  int cpu, bool nofragment);
void buddy_free_around(struct za_zone *z, unsigned long pfn, unsigned long end, int mt,
		       unsigned long reach, unsigned long *lo, unsigned long *hi);
struct za_page *buddy_rmqueue_giant(struct za_zone *z, unsigned long n, int mt,
				    unsigned long grown_from, bool borrow);
struct za_page *buddy_rmqueue(struct za_zone *z, unsigned int order, int mt, int cpu,
			      bool nofragment);
unsigned long buddy_rmqueue_bulk(struct za_zone *z, unsigned int order, unsigned long pages,
				 int mt, struct za_list *out, int cpu, bool nofragment,
				 unsigned long *blocks);
int buddy_isolate_dirty(struct za_zone *z, unsigned long max_epoch, struct za_page **out, int max);
void buddy_free_purged(struct za_zone *z, struct za_page *page, bool released);
bool buddy_grow(struct za_zone *z, unsigned long pfn, unsigned int order, unsigned int new_order);
void buddy_shrink(struct za_zone *z, unsigned long pfn, unsigned int order, unsigned int new_order);
#define BUDDY_COALESCE_MAX 64
int buddy_coalesce(struct za_mm *mm, struct za_page **blocks, int n, unsigned long *merges);
void buddy_free(struct za_zone *z, struct za_page *page, unsigned int order, int mt);
void buddy_add_initial_block(struct za_zone *z, unsigned long pfn);
const char *migratetype_name(int mt);

/* page_alloc.c */
void setup_zone_watermarks(struct za_mm *mm);

/* memblock.c: metadata, zeroed, packed into chunks from the OS and freed
 * together at destroy.  The system's descriptor comes first, in the first
 * chunk; align is a power of two up to PAGE_SIZE. */
struct za_mm *memblock_create_mm(void);
void *memblock_alloc(struct za_mm *mm, size_t size, size_t align);
void memblock_free_all(struct za_mm *mm);
/* An array of n elements of type T. */
#define memblock_alloc_array(mm, n, T) \
	((T *)memblock_alloc((mm), (size_t)(n) * sizeof(T), _Alignof(T)))

/* mm_init.c: a section's pageblock types and block zones, as it comes online. */
void memmap_init_section(struct za_mm *mm, unsigned long nr);

/* mm_init.c: every lock of the allocation paths, for fork. */
void mm_lock_all(struct za_mm *mm);
void mm_unlock_all(struct za_mm *mm, bool in_child);

/* mm_init.c: hands deferred blocks to the buddy lists until the zone is
 * above its high watermark by the request and has a block of its order,
 * or has none left, or the OS refuses their section. */
void deferred_grow_zone(struct za_zone *z, unsigned int order);
void deferred_grow_zone_by(struct za_zone *z, unsigned long pages);

/* sparse.c: the section table and map; adding a section's memory (false
 * when the OS refuses it); unmapping them all. */
int sparse_init(struct za_mm *mm);
bool sparse_add_section(struct za_mm *mm, unsigned long nr);
void sparse_release(struct za_mm *mm);


/* vmstat.c: does counter i (za_stat_name's index) belong in a summary of
 * this system, if it is not zero? */
bool stat_in_summary(const struct za_mm *mm, int i);

/* vmstat.c: the kmem tracepoints (za_set_tracepoint), each nothing but a
 * load of the hook when none is set.  cpu: the CPU whose lists gave the
 * block (drain) or the allocating CPU. */
void tp_emit(struct za_mm *mm, const struct za_tp_event *ev);
void tp_zone_locked_slow(struct za_zone *z, int cpu, unsigned long pfn, unsigned int order, int mt);
void tp_pcpu_drain_slow(struct za_zone *z, int cpu, const struct za_page *page, unsigned int order);
void tp_extfrag_slow(struct za_zone *z, int cpu, const struct za_page *page, unsigned int order,
		     int start_mt, unsigned int fallback_order, int fallback_mt);

static inline bool tracing(const struct za_mm *mm)
{
	return unlikely(atomic_load_explicit(&mm->tp_fn, memory_order_acquire) != NULL);
}

/* A block of `order` at pfn taken from the buddy lists for type mt. */
static inline void tp_zone_locked(struct za_zone *z, int cpu, unsigned long pfn, unsigned int order,
				  int mt)
{
	if (tracing(z->mm))
		tp_zone_locked_slow(z, cpu, pfn, order, mt);
}

/* A block leaving a CPU's lists for the buddy lists. */
static inline void tp_pcpu_drain(struct za_zone *z, int cpu, const struct za_page *page,
				    unsigned int order)
{
	if (tracing(z->mm))
		tp_pcpu_drain_slow(z, cpu, page, order);
}

/* A fallback: page, of `order` for start_mt, from a free block of
 * fallback_order of fallback_mt. */
static inline void tp_extfrag(struct za_zone *z, int cpu, const struct za_page *page,
			      unsigned int order, int start_mt, unsigned int fallback_order,
			      int fallback_mt)
{
	if (tracing(z->mm))
		tp_extfrag_slow(z, cpu, page, order, start_mt, fallback_order, fallback_mt);
}

/* vmstat.c: the vmstat worker thread, when vmstat_interval_ms > 0. */
int vmstat_worker_start(struct za_mm *mm);
void vmstat_worker_stop(struct za_mm *mm);

/* debug.c */
void za_report_error(struct za_mm *mm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* za_verify's checks, in every layer's verify hook: a broken invariant is
 * recorded ("verify: ...", za_last_error) and the hook returns -1, letting
 * go of its locks on the way out; za_verify reports it then, so that no
 * error handler runs under the allocator's locks (it may allocate). */
#define VERIFY(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			za_set_last_error("verify: " __VA_ARGS__);             \
			return -1;                                             \
		}                                                              \
	} while (0)

/* percpu.h has the CPU lookup; mm_init.c the system's layout. */

#endif /* ZA_MMZONE_H */
