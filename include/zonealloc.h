/*
 * zonealloc — the Linux kernel's physical memory allocation stack in user space.
 *
 * A memory system (za_mm_t) owns an "arena" of memory, which plays the role
 * of physical memory: its page frame numbers are split into NUMA nodes, each
 * node's into zones (e.g. DMA32 below Normal), and handed out in 4 KiB pages
 * by a buddy allocator with per-CPU page lists in front of it.  The arena's
 * virtual memory is mapped from the OS a section at a time (the kernel's
 * sparse memory model), wherever the OS puts it.  Every page has a
 * descriptor (struct page); addresses, page frame numbers and descriptors
 * convert into each other in O(1).
 *
 * Everything is an instance: two differently configured systems can live in
 * one process, which is how A/B measurements are made.  Every function here
 * is thread-safe.
 *
 * Errors: functions that can fail return NULL or -1 and set errno; the text
 * of the last error of the calling thread is available from za_last_error().
 * Misuse detected at run time (a bad free) is also reported through the
 * system's error handler (by default one line on stderr).
 */
#ifndef ZONEALLOC_H
#define ZONEALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

typedef struct za_mm za_mm_t;       /* a memory system: arena, nodes, zones */
typedef struct za_page za_page_t;   /* the descriptor of one 4 KiB page */

#define ZA_PAGE_SHIFT 12
#define ZA_PAGE_SIZE  (1UL << ZA_PAGE_SHIFT)

/* ------------------------------------------------------------------------
 * Creating a memory system
 *
 * The configuration is a kernel-command-line-like string of key=value pairs
 * separated by commas; NULL or "" means all defaults.  The environment
 * variable ZA_CONFIG is appended, so its keys override the string's.
 *
 *   kernel=              a preset: every switch of zonealloc's as a Linux
 *                        release had it, e.g. kernel=6.18, kernel=4.9 or
 *                        kernel=2.6.22 (X.Y.Z is X.Y; docs/pcp.md has the
 *                        table).  It sets the keys it covers where it
 *                        stands: keys after it override it, keys before it
 *                        are overridden.  Empty: no preset.  An unknown
 *                        release fails (EINVAL, naming the key)
 *   memory=1G            size of the arena (K/M/G/T suffixes, powers of 1024)
 *   nodes=1              fake NUMA nodes; memory is split evenly
 *   zones=DMA32:256M+Normal
 *                        zones of every node, lowest first; each NAME:SIZE,
 *                        the last one may omit SIZE and takes the rest.  At
 *                        most 4 zones; sizes are rounded down to whole
 *                        max-order blocks.
 *   cpus=auto            per-CPU structures; auto = the machine's CPUs
 *   max_order=10         largest block is 4 KiB << max_order (0..14)
 *   alloc_nofragment=0   1: as since 5.0, an allocation from a zone with a
 *                        lower one on its node (Normal above DMA32) tries
 *                        the node's zones without splitting another
 *                        migratetype's pageblock first, and falls back to
 *                        that only if they all would have to
 *   fallback_steal_smallest=0
 *                        1: as since 6.15, an allocation whose migratetype
 *                        has no free block tries to claim another type's
 *                        pageblock at every order, largest first, then
 *                        takes the smallest block of another type; 0: the
 *                        largest block, claimed or split
 *   pcp_high_order=1     seed 000: per-CPU lists also cache orders 1..3,
 *                        one list per order (high: 11 batches); 2: the
 *                        kernel's since 5.14, a list per migratetype for
 *                        each order 0..3 and for the THP (pageblock) order,
 *                        high from the low watermark; 0: order 0 only
 *   bulkfree_outside_lock=1
 *                        seed 001: a per-CPU bulk free picks its pages
 *                        before taking the zone lock
 *   bulkfree_list_first=0
 *                        1: as since 5.18, a per-CPU bulk free empties the
 *                        list of the block just freed first, then each list
 *                        in turn; 0: round robin, fuller lists faster
 *   percpu_pagelist_high_fraction=0
 *                        0: per-CPU high as the seeds set it, or tuned;
 *                        F >= 8: the node's CPUs may hold 1/F of the zone
 *                        between them, each at least 4 batches, and high is
 *                        not tuned (the kernel's sysctl)
 *   pcp_high_auto=0      1: as since 6.7, each CPU's high is tuned between
 *                        the low watermark's share and an eighth of the
 *                        zone's: raised by refills and freeing bursts,
 *                        lowered each vmstat tick (the pages above it go
 *                        back) and while the zone is below its high
 *                        watermark or kswapd reclaims it; refills double
 *                        while misses follow each other, and a freeing
 *                        streak drains more at once
 *   pcp_high_min=0, pcp_high_max=0
 *                        with pcp_high_auto=1, caps on each CPU's
 *                        high_min and high_max in bytes (each at least 4
 *                        batches); 0: no cap.  The malloc's system, a
 *                        process heap in a machine-sized zone, uses 2M
 *                        and 16M
 *   pcp_refill_drain=0   1: a refill that the buddy lists could serve
 *                        only from memory not used before first returns
 *                        what the CPU's lists hold of other orders beyond
 *                        high_min (not in the kernel; the malloc's system)
 *   pcp_decay_shift=3    with pcp_high_auto=1, the vmstat tick lowers a
 *                        CPU's high by high >> this (1..8; the kernel: an
 *                        eighth); the malloc's system, whose lists cost
 *                        RSS, by half
 *   pcp_batch_scale_max=5
 *                        the kernel's CONFIG_PCP_BATCH_SCALE_MAX (0..6):
 *                        refills and freeing streaks grow to batch << this
 *   pcp_free_high=0      a CPU freeing pages of orders 1..3 drains its
 *                        lists: 1 as 5.18, once a batch was freed since the
 *                        last allocations; 2 as 6.7, also only on the
 *                        second high-order free in a row, and up to batch
 *                        << pcp_batch_scale_max pages, keeping a batch when
 *                        llc_per_cpu holds more than 3 batches; 3 as 6.16,
 *                        as 2 once the streak reaches batch + high_min / 2
 *   pcp_drain_chunks=0   1: as 6.10, emptying a CPU's lists
 *                        (za_drain_pages) takes batch <<
 *                        pcp_batch_scale_max pages per per-CPU lock hold;
 *                        2: as 6.19, also a free that takes count over
 *                        high and the vmstat tick's decay return their
 *                        pages a batch per per-CPU and zone-lock hold, the
 *                        per-CPU lock dropped between batches (a free
 *                        whose retake fails leaves the rest); 0: all in
 *                        one hold of each
 *   pcp_own_pageblocks=0 the April 2026 RFC: a refill claims a whole free
 *                        pageblock for its CPU (when high can hold one),
 *                        and a block of it freed on another CPU goes back
 *                        onto the owner's lists; in no preset
 *   llc_per_cpu=auto     the last-level cache per CPU sharing it (the
 *                        kernel's per_cpu_data_slice_size); auto: this
 *                        machine's (0 if unknown)
 *   vmstat_interval_ms=auto
 *                        the period of the vmstat worker, a thread that
 *                        runs za_vmstat_tick(); auto: 1000 with
 *                        pcp_high_auto=1, else 0, and 0 starts no thread
 *   watermark_scale_factor=10
 *                        gap between min/low/high watermarks, in 1/10000
 *                        of the zone's pages
 *   min_free_kbytes=auto reserve below which only the slow path allocates
 *   lowmem_reserve_ratio=auto
 *                        per zone, colon separated (kernel: 256 for DMA and
 *                        DMA32, 32 for Normal); 0 = no protection
 *   lock_stats=1         time zone-lock holds with the cycle counter
 *   percpu=rseq          the per-CPU fast paths (page lists, SLUB CPU slab,
 *                        quicklists): restartable sequences, or lock, a
 *                        per-CPU trylock; rseq falls back to lock where it
 *                        cannot run (za_percpu_mode says why)
 *   percpu_index=cpu     what picks a thread's per-CPU structures: cpu, the
 *                        CPU it runs on, or cid, its mm_cid (Linux 6.3+), a
 *                        dense number below the process's running threads
 *   rseq_area=libc       whose rseq area the sections use: libc, the C
 *                        library's, or where it has no rseq support (glibc
 *                        before 2.35, other C libraries) one zonealloc
 *                        registers in each thread; own, zonealloc's also
 *                        where glibc registered none (a GLIBC_TUNABLES
 *                        setting switched it off)
 *   deferred_init=0      1: zones reach the buddy lists a few max-order blocks
 *                        at a time, as allocations need them (the kernel's
 *                        deferred struct page init); creating a system the
 *                        size of the machine then costs nothing until used
 *   section_size=auto    the sparse memory model's section: the unit in which
 *                        address space (and the page descriptors, 1/64 of
 *                        it) is taken from the OS; a power of two, 2M..64G,
 *                        at least the max-order block; auto = 64M (at most
 *                        a quarter of memory), or the max-order block if
 *                        larger
 *   malloc_cache=thread  where the malloc keeps freed small objects for
 *                        reuse: thread, per-thread sheaves; cpu, per-CPU
 *                        stacks (restartable sections; needs percpu=rseq)
 *   purge_delay_ms=1000  the malloc front end returns memory free this long
 *                        to the OS (0: never); za_purge() does it on demand
 *   purge_excess=1       and, while the program is busy, the free memory
 *                        beyond what its demand swung through lately
 *   publish=0            counters and reports in /dev/shm for other processes
 *                        (za_peek_open, zabench top); the malloc's: 1
 *   publish_interval_ms=1000 period of the publisher thread (0: no thread;
 *                        za_publish() and the malloc's purge worker publish)
 *   debug=0              check every free completely, report leaks on destroy
 *   hugepages=0          ask for transparent huge pages on the arena
 *   populate=0           pre-fault each section of the arena as it is mapped
 *                        (the whole arena at creation unless deferred_init=1)
 *
 * The keys of object caches, quicklists and reclaim are listed with them.
 *
 * Returns NULL with errno EINVAL for a bad configuration (the message names
 * the key), ENOMEM if the arena cannot be reserved.  Never aborts.
 * ------------------------------------------------------------------------ */
za_mm_t *za_mm_create(const char *config);

/*
 * Tears the system down and unmaps the arena.  Returns the number of pages
 * that were still allocated (0 if everything was freed); with debug=1 a
 * non-zero count is also printed.  Pages on per-CPU lists are not leaks.
 */
long za_mm_destroy(za_mm_t *mm);

/*
 * The full effective configuration, every key with its value (defaults and
 * "auto" resolved), in a form za_mm_create() accepts.  Owned by mm.
 */
const char *za_mm_config_string(const za_mm_t *mm);

/* The text of the calling thread's last error, or "" if none. */
const char *za_last_error(void);

/*
 * Where run-time misuse reports go (bad frees, corrupted pages).  fn gets
 * one line without a trailing newline.  NULL restores the default (stderr).
 */
typedef void (*za_error_fn)(const char *msg, void *ctx);
void za_mm_set_error_handler(za_mm_t *mm, za_error_fn fn, void *ctx);

/* ------------------------------------------------------------------------
 * Allocation flags (gfp)
 * ------------------------------------------------------------------------ */
typedef unsigned int za_gfp_t;

/* Zone limit: the highest zone index the allocation may use (default: any),
 * in the low bits (ZA_GFP_ZONE_MASK).  Zones are indexed from 0, lowest
 * first, as configured by zones=. */
#define ZA_GFP_ZONE_MASK     ((za_gfp_t)0x7)
#define ZA_GFP_ZONE(i)       ((za_gfp_t)(((i) + 1) & ZA_GFP_ZONE_MASK))
#define ZA_GFP_DMA32         ZA_GFP_ZONE(0)   /* only the lowest zone */
/* Migratetype (default unmovable); at most one of the two. */
#define ZA_GFP_MOVABLE       ((za_gfp_t)1 << 3)
#define ZA_GFP_RECLAIMABLE   ((za_gfp_t)1 << 4)
/* Return zeroed memory (a run of za_alloc_pages_exact is cleared only
 * where its pages were written before: those fresh from the OS, or
 * purged since, read as zero and stay untouched). */
#define ZA_GFP_ZERO          ((za_gfp_t)1 << 5)
#define ZA_GFP_NOWAIT        ((za_gfp_t)1 << 6)  /* never reclaim or sleep */
#define ZA_GFP_THISNODE      ((za_gfp_t)1 << 7)  /* no fallback to other nodes */
/* Straight from the buddy lists, past the per-CPU lists (the kernel's
 * rmqueue_buddy): a block that must not disturb what a CPU caches, such as
 * a replay's stand-in for a page allocated before its trace began. */
#define ZA_GFP_BUDDY         ((za_gfp_t)1 << 8)

#define ZA_GFP_KERNEL        ((za_gfp_t)0)

/* ------------------------------------------------------------------------
 * Pages
 * ------------------------------------------------------------------------ */

/*
 * Allocates 2^order contiguous pages, aligned to their size, from the
 * current CPU's node (or its fallbacks).  Returns NULL with errno EINVAL for
 * a bad order or flag combination, ENOMEM when no allowed zone can satisfy
 * the request.
 */
void *za_alloc_pages(za_mm_t *mm, za_gfp_t gfp, unsigned int order);

/* As za_alloc_pages(), preferring node nid: a node, or -1 for the current
 * CPU's node; any other value fails with EINVAL. */
void *za_alloc_pages_node(za_mm_t *mm, int nid, za_gfp_t gfp, unsigned int order);

/*
 * Frees a block returned by za_alloc_pages*() with the order it was
 * allocated with.  A free of an address outside the arena, not at the start
 * of an allocated block, with the wrong order, or of a block already free is
 * reported (address and reason) and ignored: returns -1 with errno EINVAL.
 * These checks always run; debug=1 adds a check of every page of the block.
 */
int za_free_pages(za_mm_t *mm, void *addr, unsigned int order);

/*
 * Frees n blocks of one order, each as za_free_pages() would (checked and
 * reported alike), as the kernel's free_unref_folios frees a batch: blocks
 * in a row bound for the same per-CPU lists go there under one hold of
 * their lock -- up to 31 at a time, the kernel's folio_batch.  Returns 0,
 * or -1 with errno EINVAL if any block was reported (the others are freed).
 */
int za_free_pages_bulk(za_mm_t *mm, void *const *addrs, size_t n, unsigned int order);

/*
 * Resizes an allocated block in place, as krealloc would for pages.
 * Shrinking frees the block's upper halves.  Growing takes the free blocks
 * above it; it works only if the block is the lower half at every step and
 * each of those buddies is free in the buddy lists (not on a per-CPU list):
 * otherwise -1 with errno ENOMEM, nothing changed.  A bad block is reported
 * (EINVAL).  The malloc front end's realloc grows page blocks this way.
 */
int za_resize_pages(za_mm_t *mm, void *addr, unsigned int order, unsigned int new_order);

/*
 * Allocations of any number of pages, as the kernel's alloc_pages_exact:
 * size rounded up to whole pages, contiguous and page aligned.  When the
 * page count is a power of two up to 4 KiB << max_order this is
 * za_alloc_pages() of that order; otherwise the pages beyond it are not
 * taken (not rounded up to a power of two), and consecutive such
 * allocations are placed one after the other where the pages there are
 * free, so that they fill memory densely.  Beyond the largest block, up to
 * a section (section_size), as the kernel's alloc_contig_pages but from
 * free pages only (no reclaim, compaction or migration): free pages in a
 * row within one section, the zone grown for them if it has deferred
 * blocks; NULL with ENOMEM if none has them, EINVAL above a section.
 * Errors as za_alloc_pages().
 */
void *za_alloc_pages_exact(za_mm_t *mm, za_gfp_t gfp, size_t size);

/* Frees an allocation of za_alloc_pages_exact() with the size it was
 * allocated with (checked and reported as za_free_pages() does). */
int za_free_pages_exact(za_mm_t *mm, void *addr, size_t size);

/* Resizes an allocation of za_alloc_pages_exact() in place: shrinking
 * frees the pages past the new size; growing takes the pages after it if
 * they are free (in the buddy lists), else -1 with ENOMEM, nothing changed. */
int za_resize_pages_exact(za_mm_t *mm, void *addr, size_t size, size_t new_size);

/* Grows an allocation of za_alloc_pages_exact() into the free pages around
 * it: those after it first, then as many before it as it still needs.
 * Returns its new start: addr, or lower, in which case its contents are
 * still at addr, for the caller to move (memmove: the ranges overlap).
 * NULL with ENOMEM, nothing changed, if too few pages around it are free;
 * with EINVAL (reported) for a bad call or a new size not larger. */
void *za_extend_pages_exact(za_mm_t *mm, void *addr, size_t size, size_t new_size);

/* Descriptor of the page containing addr, or NULL if addr is outside the arena. */
za_page_t *za_virt_to_page(const za_mm_t *mm, const void *addr);
void *za_page_to_virt(const za_mm_t *mm, const za_page_t *page);
/* Page frame number: the page's index in the arena. */
unsigned long za_page_to_pfn(const za_mm_t *mm, const za_page_t *page);
za_page_t *za_pfn_to_page(const za_mm_t *mm, unsigned long pfn);

/*
 * Gives the memory of free blocks back to the operating system
 * (madvise(MADV_DONTNEED)): the arena keeps its address range, the pages
 * cost nothing until used again.  Each call starts a new "purge epoch"; a
 * block is purged once it has been free for at least min_epochs calls
 * (0: every free block now), so calling this every T milliseconds with
 * min_epochs=2 gives back what has been free for at least T.  Pages on
 * per-CPU lists and in slabs are not free blocks: drain and shrink first
 * to include them.  Returns the pages given back (counter pgpurge).
 */
long za_purge(za_mm_t *mm, unsigned int min_epochs);

/*
 * As za_purge, and then, while the free blocks hold more than keep pages of
 * resident (dirty) memory, gives back more of them, the longest free first
 * (ZA_PURGE_KEEP_ALL: none).  A policy that keeps what the program's recent
 * swing in demand may take again (za_used_pages_peak) and gives back the
 * rest bounds a busy program's free resident memory, which ages alone
 * cannot: a block merged with a page freed just now is as young as it.
 */
#define ZA_PURGE_KEEP_ALL (~0UL)
long za_purge_keep(za_mm_t *mm, unsigned int min_epochs, unsigned long keep);

/* Pages out of the buddy lists (allocated, on per-CPU lists, in slabs):
 * the most there were at once since the last call (per zone, summed),
 * which starts a new period; *now (if not NULL) is how many there are now. */
unsigned long za_used_pages_peak(za_mm_t *mm, unsigned long *now);

/* Returns the per-CPU pages of cpu (or of every CPU if cpu < 0) to the buddy lists. */
void za_drain_pages(za_mm_t *mm, int cpu);
void za_drain_all_pages(za_mm_t *mm);

/* ------------------------------------------------------------------------
 * Object caches (SLUB)
 *
 * A cache hands out objects of one size from slabs: page-allocator blocks
 * of the order the kernel's calculation picks (see the slub_* keys).  Per
 * CPU it keeps a current slab and a few partial slabs, or with
 * slub_sheaves two arrays of free objects (sheaves) in front; allocation
 * and freeing there take no lock shared with other CPUs.
 * Objects may be freed from any thread.
 *
 * Configuration keys of za_mm_create for caches:
 *   slub_min_order=0, slub_max_order=3, slub_min_objects=0 (0: 4 * (fls(nr_cpus) + 1))
 *   nr_cpus=auto         the CPU count the sizing assumes (e.g. 224 for a big server)
 *   slub_sheaves=0       per-CPU sheaves and per-node barns in front of the slabs:
 *                        1 as 6.18, for caches created with ZA_SLAB_SHEAVES (32 objects
 *                        a sheaf); 2 as 7.0, for every cache but debug ones (the
 *                        kernel's sizing, 4..60 objects), and no CPU slab or CPU
 *                        partial list under them
 *   slub_big_system=1    seed 002: with nr_cpus >= 32, double min_objects and the
 *                        per-CPU partial sizes
 *   slub_debug=          debug letters for every cache ("FZPU"), or per cache
 *                        "FZ:kmalloc-64:dentry;P:kmalloc-*": F sanity checks,
 *                        Z red zones, P poisoning, U last alloc/free owner
 *   slab_freelist_random=0   shuffle the free list of new slabs
 *   slab_freelist_hardened=1 free pointers stored XOR a per-cache key and their
 *                        slot address; a corrupted one is reported, not followed
 * ------------------------------------------------------------------------ */
typedef struct za_kmem_cache za_cache_t;

#define ZA_SLAB_HWCACHE_ALIGN     (1u << 0)   /* align objects to cache lines */
#define ZA_SLAB_RECLAIM_ACCOUNT   (1u << 1)   /* slabs are reclaimable memory */
/* The free pointer in the object's second word instead of mid-object (the
 * kernel's freeptr_offset): a free object, and a new slab, touch no page
 * of the object but its first.  Objects of at least 16 bytes. */
#define ZA_SLAB_FREEPTR_EARLY     (1u << 2)
/* The cache asks for per-CPU sheaves of 32 objects (the kernel's
 * kmem_cache_args.sheaf_capacity, as vm_area_struct and maple_node do):
 * it gets them with slub_sheaves=1, and at least 32 with slub_sheaves=2. */
#define ZA_SLAB_SHEAVES           (1u << 3)
#define ZA_SLAB_CONSISTENCY_CHECKS (1u << 4)  /* debug F, for this cache */
#define ZA_SLAB_RED_ZONE          (1u << 5)   /* debug Z */
#define ZA_SLAB_POISON            (1u << 6)   /* debug P */
#define ZA_SLAB_STORE_USER        (1u << 7)   /* debug U */

/*
 * Creates a cache of objects of `size` bytes aligned to `align` (0: 8; a
 * power of two up to 4096), with an optional constructor run once per
 * object when its slab is created.  Returns NULL with errno EINVAL for a
 * bad name, size, alignment or flag.
 */
za_cache_t *za_cache_create(za_mm_t *mm, const char *name, size_t size, size_t align,
			    unsigned int flags, void (*ctor)(void *));
/* NULL with errno ENOMEM when no slab can be had. */
void *za_cache_alloc(za_cache_t *cache, za_gfp_t gfp);
/* 0, or -1 with errno EINVAL after reporting a pointer that is not an
 * object of this cache, or a double free (always for the most recently
 * freed object; with debug F or Z for any). */
int za_cache_free(za_cache_t *cache, void *obj);
/*
 * Deferred frees, as the kernel's kfree_rcu: the object is freed at the
 * end of the grace period, which zonealloc, having no RCU readers to wait
 * for, ends when the caller calls za_rcu_barrier() -- every object given
 * to za_cache_free_rcu() before that call is freed when it returns (and a
 * cache's when it is destroyed).  Until then the object counts as
 * allocated and its memory is left as it is (readers may still look).
 * With slub_sheaves the objects wait in each CPU's rcu_free sheaf (the
 * kernel's since 6.18), which after the grace period becomes a full sheaf
 * of its node's barn, ready for allocations without the slab lists;
 * otherwise in batches freed to the slabs in bulk.  0, or -1 with EINVAL
 * after reporting a pointer that is not an object of this cache, or
 * ENOMEM when no batch could be had (the object is not freed).
 */
int za_cache_free_rcu(za_cache_t *cache, void *obj);
void za_rcu_barrier(za_mm_t *mm);
/* All n or none (returns n or 0). */
size_t za_cache_alloc_bulk(za_cache_t *cache, za_gfp_t gfp, size_t n, void **objs);
void za_cache_free_bulk(za_cache_t *cache, size_t n, void **objs);
/* Flushes every CPU's slabs and frees all empty slabs; returns how many. */
long za_cache_shrink(za_cache_t *cache);
/* Shrinks every cache of the system; returns the slabs freed. */
long za_shrink_slabs(za_mm_t *mm);
/*
 * Destroys an empty cache and returns 0.  If objects are still allocated,
 * reports and returns their count, and the cache stays (its memory is not
 * pulled from under its users).
 */
long za_cache_destroy(za_cache_t *cache);

struct za_cache_info {
	const char *name;
	size_t object_size, size, align;        /* size: the stride, metadata included */
	unsigned int order, objects;            /* per slab */
	unsigned int cpu_partial_slabs, min_partial;
	unsigned int sheaf_capacity;            /* 0: no sheaves (slub_sheaves) */
	unsigned long sheaf_objects;            /* free objects its CPUs' sheaves and barns hold */
	unsigned long rcu_objects;              /* za_cache_free_rcu's, waiting for za_rcu_barrier */
	unsigned int debug;                     /* ZA_SLAB_* debug bits in force */
};
void za_cache_info(const za_cache_t *cache, struct za_cache_info *info);
/* slabinfo's <active_objs> and <num_objs>: the objects not free on the
 * node lists (those in the CPUs' sheaves and slabs count as active, as in
 * the kernel's), and every object of the slabs.  Walks the partial lists
 * under their locks (an observer's: not counted as the cache's). */
void za_cache_objects(const za_cache_t *cache, unsigned long *active, unsigned long *total);
/* A per-cache counter: alloc_fastpath, free_remote, list_lock_acquire, ... */
long long za_cache_stat(const za_cache_t *cache, const char *name);

/* ------------------------------------------------------------------------
 * kmalloc: size classes 8, 16, 32, 64, 96, 128, 192, 256, 512, 1K, 2K, 4K
 * and 8K from caches (kmalloc-<size>); larger sizes from the page
 * allocator, up to 4 KiB << max_order (beyond that: NULL, ENOMEM).
 * ------------------------------------------------------------------------ */
void *za_kmalloc(za_mm_t *mm, size_t size, za_gfp_t gfp);
void *za_kzalloc(za_mm_t *mm, size_t size, za_gfp_t gfp);
/* Like realloc: NULL p allocates, size 0 frees (and returns NULL). */
void *za_krealloc(za_mm_t *mm, void *p, size_t size, za_gfp_t gfp);
/* 0 (also for NULL), or -1 with errno EINVAL after reporting a pointer
 * kmalloc did not return -- including page-allocator blocks from
 * za_alloc_pages, quicklists or the page cache. */
int za_kfree(za_mm_t *mm, const void *p);
/* The usable size of a kmalloc'ed block, or 0 with errno EINVAL (reported,
 * except for NULL). */
size_t za_ksize(za_mm_t *mm, const void *p);

/* ------------------------------------------------------------------------
 * Quicklists (seed 004): per-CPU LIFO lists of pages in a known state.
 *
 * A page comes zeroed (no constructor) or as the constructor made it, and
 * must be freed in that same state with its first word zero: the lists are
 * threaded through that word, so a hit touches only the CPU's list and the
 * page's first cache line.  Pages stay on their node: a page freed on a
 * CPU of another node goes back to the page allocator (destructor first).
 * Keys: quicklists=1 (0: every alloc is a zeroed page plus the constructor,
 * every free the destructor plus a page free -- the world before the seed),
 * nr_quick=2 (lists per CPU, 1..16).  With debug=1 a free checks that a
 * page without constructor is really zero and reports the first dirty
 * offset.  Under memory pressure the allocator empties the lists.
 * ------------------------------------------------------------------------ */
void *za_quicklist_alloc(za_mm_t *mm, int nr, za_gfp_t gfp, void (*ctor)(void *));
/* 0, or -1 with errno EINVAL (reported) for a bad page or, in debug mode,
 * a dirty one (which goes back to the page allocator). */
int za_quicklist_free(za_mm_t *mm, int nr, void (*dtor)(void *), void *page);
/* Frees pages of this CPU's list nr beyond max(free node pages / 16,
 * min_pages), at most max_free; returns how many. */
long za_quicklist_trim(za_mm_t *mm, int nr, void (*dtor)(void *), unsigned long min_pages,
		       unsigned long max_free);
/* Empties every CPU's lists, with the destructor last passed to
 * za_quicklist_free for each list (memory pressure does this); returns
 * the pages freed. */
long za_quicklist_shrink(za_mm_t *mm);
/* Pages on all quicklists of all CPUs. */
unsigned long za_quicklist_total_size(za_mm_t *mm);

/* ------------------------------------------------------------------------
 * Page cache over real files, and reclaim (seed 003)
 *
 * File data is read and written through cache pages from the page
 * allocator, filled with direct I/O (O_DIRECT; where the filesystem refuses
 * it, buffered I/O with POSIX_FADV_DONTNEED, said once on stderr), so the
 * operating system's own cache neither hides misses nor doubles memory.
 * Pages live on their zone's active and inactive LRU lists and are
 * reclaimed by each node's kswapd thread and, when an allocation would
 * fail, by the allocating thread; dirty pages are written back first.
 * Keys: fair_zone=1 (allocations spread over the zones in proportion to
 * their size, so all zones age alike), kswapd_wake_high=1 (wake kswapd
 * whenever a zone is below its high watermark, not only its low one),
 * kswapd=1 (0: no background threads; allocations reclaim directly).
 * kswapd gives up on a node after 16 balance runs that free nothing, and is
 * not woken again until reclaim frees some of the node's pages.
 * Allocations of order > 3 fail after one direct reclaim round that frees
 * nothing.  The slab caches and quicklists register shrinkers; the per-CPU
 * page lists are drained by the allocation slow path, not by reclaim.
 * ------------------------------------------------------------------------ */
typedef struct za_file za_file_t;

/* flags: open(2)'s O_RDONLY/O_RDWR/O_CREAT/O_TRUNC; files are created 0644.
 * NULL with errno on failure. */
za_file_t *za_file_open(za_mm_t *mm, const char *path, int flags);
/* Bytes read (short at end of file), or -1 with errno (EIO, ENOMEM). */
long za_file_read(za_file_t *f, long offset, void *buf, size_t len);
/* Bytes written (all of them), or -1 with errno; extends the file. */
long za_file_write(za_file_t *f, long offset, const void *buf, size_t len);
/* Zero-copy: the cache page holding page index `index` (read in if need
 * be), referenced until za_file_put_page; it stays resident meanwhile.
 * NULL with errno on failure. */
void *za_file_get_page(za_file_t *f, unsigned long index);
/* dirty != 0: the page was written (the file grows to cover it). */
int za_file_put_page(za_file_t *f, void *page, int dirty);
/* Writes every dirty page back and sets the file's size; 0 or -1. */
int za_file_sync(za_file_t *f);
/* Syncs, drops the file's pages, closes.  0, or -1 (reported) if pages
 * were still referenced by get_page (they are not freed). */
int za_file_close(za_file_t *f);
long za_file_size(const za_file_t *f);

/*
 * Shrinkers: count() says how many pages a cache could give back, scan(nr)
 * gives back about nr of them and returns how many it did.  Each reclaim
 * pass asks every shrinker for count() >> priority (all of it at priority
 * 0).  Returns a handle for unregistering.
 */
void *za_shrinker_register(za_mm_t *mm, unsigned long (*count)(void *ctx),
			   unsigned long (*scan)(void *ctx, unsigned long nr), void *ctx);
void za_shrinker_unregister(za_mm_t *mm, void *handle);

/* ------------------------------------------------------------------------
 * The malloc front end
 *
 * The C allocation functions on one default memory system (the only
 * global of the library), created on first use with the machine's memory
 * size as its arena (memory=, grown on demand: deferred_init=1), one zone,
 * no kswapd; ZA_CONFIG overrides any key.  libzonealloc-malloc.so provides
 * the same functions as malloc, free, ... and the C++ operators new and
 * delete, for LD_PRELOAD or linking; here they are za_malloc etc., usable
 * beside the C library's malloc.
 *
 * Sizes up to 16 KiB come from size classes (16-byte steps to 128, then
 * four per power of two) through per-thread sheaves, a per-class barn and
 * slab caches malloc-<size>; larger ones from the page allocator, up to its
 * largest block; larger still from a direct mapping of their own.
 * Behaviour follows glibc's contract: malloc(0) returns a unique pointer,
 * realloc(p, 0) frees and returns NULL, calloc checks for overflow, errors
 * are NULL with errno ENOMEM (EINVAL for a bad alignment), posix_memalign
 * returns the error.
 *
 * Misuse ends the process with one line on stderr ("zonealloc: double free
 * of 0x... (malloc-64)") and abort(): a pointer zonealloc never returned,
 * one inside an object, a double free (malloc(0)'s pointers too), a sized
 * or aligned free that does not match the allocation, access through a
 * malloc(0) pointer (a SIGSEGV handler, installed at the first malloc(0),
 * reports it and delivers every other fault to the program's handler as
 * the kernel would).  With debug=1 also: writes past the requested size
 * (even by one byte), writes after free, use of a freed pointer in realloc
 * or malloc_usable_size.
 *
 * Free memory goes back to the OS once it has been free for
 * purge_delay_ms (default 1000; 0: never), by a background thread that
 * runs while there is work and never keeps the process alive after the
 * program's last thread ends; malloc_trim(0) does it at once.
 *
 * Statistics at exit, per process (a forked child prints its own):
 *   ZA_STATS=1   a summary -- peak and current RSS and what the arena's
 *                resident memory is made of, blocks allocated by order,
 *                sheaf, per-CPU slab and per-CPU list hit rates -- then
 *                the vmstat counters that are not zero and mean something
 *                here: no kswapd counters (the malloc's system has no
 *                kswapd), none of a node it lacks, and not nr_alloc_batch.
 *   ZA_STATS=2   the summary, then slabinfo, buddyinfo and every counter.
 *                nr_alloc_batch there is fair_zone's bookkeeping (a zone's
 *                budget of pages, reset to high - low watermark, which
 *                allocations draw below zero between resets), not a count.
 *   ZA_STATS=0 or unset: nothing.  Another value: one line on stderr
 *                naming ZA_STATS, then taken as 1.
 *   ZA_STATS_FILE=path (with ZA_STATS set): written to path rather than
 *                stderr, %p replaced by the pid (%% by %) so that each
 *                process, a forked child too, writes a file of its own,
 *                made anew; a path without %p is appended to by every
 *                process.  If it cannot be opened: one line on stderr with
 *                the path and the reason, then stderr.
 * On stderr, a program that closes stderr before exit (GNU coreutils do)
 * still prints: with ZA_STATS set and no ZA_STATS_FILE, the malloc keeps a
 * close-on-exec duplicate of stderr, numbered high (512, or half the
 * descriptor limit), used only if stderr is closed at exit.
 * ------------------------------------------------------------------------ */
struct mallinfo;
struct mallinfo2;
void *za_malloc(size_t size);
void za_free(void *ptr);
void *za_calloc(size_t count, size_t size);
void *za_realloc(void *ptr, size_t size);
void *za_reallocarray(void *ptr, size_t count, size_t size);
void *za_memalign(size_t align, size_t size);
void *za_aligned_alloc(size_t align, size_t size);
int za_posix_memalign(void **out, size_t align, size_t size);
void *za_valloc(size_t size);
void *za_pvalloc(size_t size);
size_t za_malloc_usable_size(void *ptr);
void za_free_sized(void *ptr, size_t size);
void za_free_aligned_sized(void *ptr, size_t align, size_t size);
/* Returns this thread's and the shared caches to the page allocator and
 * all free memory to the OS; 1 if any was returned. */
int za_malloc_trim(size_t pad);
struct mallinfo2 za_mallinfo2(void);
struct mallinfo za_mallinfo(void);
/* The ZA_STATS statistics, on demand: as ZA_STATS=2 asks if it is set so,
 * else as ZA_STATS=1. */
void za_malloc_stats(FILE *out);
/* The default memory system (created if need be), for za_stat/za_report. */
za_mm_t *za_malloc_system(void);

/* ------------------------------------------------------------------------
 * Topology
 * ------------------------------------------------------------------------ */
int za_nr_nodes(const za_mm_t *mm);
int za_nr_zones(const za_mm_t *mm);        /* per node */
int za_nr_cpus(const za_mm_t *mm);
const char *za_zone_name(const za_mm_t *mm, int zone);
int za_cpu_to_node(const za_mm_t *mm, int cpu);
int za_page_to_nid(const za_mm_t *mm, const za_page_t *page);
int za_page_zone(const za_mm_t *mm, const za_page_t *page);   /* zone index */
/* The CPU the calling thread runs on now, as an index into the system's
 * CPUs (the bound one, see za_bind_cpu). */
int za_current_cpu(const za_mm_t *mm);
/* The per-CPU mechanism in use, e.g. "rseq, indexed by CPU", and, where
 * percpu= or percpu_index= asked for what cannot run here, why not:
 * "lock, indexed by CPU: TSan cannot follow restartable sequences". */
const char *za_percpu_mode(const za_mm_t *mm);
/* The floor of the per-CPU fast paths on this machine: ns per restartable
 * push and pop of one pointer on the calling CPU's stack, by the sections
 * the system's fast paths run, with nothing else (timed over `pairs`).
 * -1 with errno ENOTSUP when the system's per-CPU paths are not
 * restartable sequences (percpu=lock), EINVAL for pairs <= 0, EAGAIN if
 * the thread kept migrating between a push and its pop. */
double za_percpu_floor_ns(za_mm_t *mm, long pairs);

/* ------------------------------------------------------------------------
 * Playing a recorded kernel: a thread as any CPU, the trace's clock, and
 * the kernel's kmem tracepoints
 *
 * A replay of a kernel trace runs every event on one thread, each as the
 * CPU that recorded it, at the trace's time.  These calls make that
 * possible on any machine: a 224-CPU trace replays on a laptop.
 * ------------------------------------------------------------------------ */

/*
 * From now on the calling thread acts as CPU cpu of mm (0..za_nr_cpus-1):
 * its allocations and frees use that CPU's per-CPU page lists, CPU slabs,
 * quicklists and counters, wherever the thread really runs.  cpu = -1
 * ends the binding.  Two threads bound to one CPU share its lists as two
 * tasks of one real CPU would (each section is still locked).  Returns 0,
 * or -1 with errno EINVAL for a CPU out of range.  A thread has one
 * binding at a time (binding to another system ends the first); threads
 * that never bind pay one predictable branch.  za_mm_destroy ends the
 * calling thread's binding to the system; other threads must end theirs
 * before it is destroyed.
 */
int za_bind_cpu(za_mm_t *mm, int cpu);

/*
 * CPU cpu's per-CPU high on zone zone (an index as za_page_zone's) of
 * node nid, set as the auto-tuning (pcp_high_auto=1) could have left it:
 * a replay's start, from the high each CPU shows in the recorded kernel's
 * /proc/zoneinfo.  Clamped to the CPU's high_min..high_max; without
 * pcp_high_auto high is fixed and stays.  Returns the high now in force,
 * or -1 with errno EINVAL for a node, zone or CPU out of range.
 */
int za_pcp_set_high(za_mm_t *mm, int nid, int zone, int cpu, int high);

/*
 * The vmstat worker's periodic work on every CPU (the kernel's
 * vmstat_update, every vmstat_interval_ms): with pcp_high_auto=1, each
 * CPU's auto-tuned per-CPU high decays and the pages above it are drained.
 * A system with vmstat_interval_ms > 0 runs it from a thread of its own;
 * with 0 (a replay: time is the trace's) nothing runs it but this call.
 */
void za_vmstat_tick(za_mm_t *mm);
/* ... on one CPU only, as that CPU's worker runs it (each CPU's runs at
 * its own time); nothing for a CPU beyond the system's. */
void za_vmstat_tick_cpu(za_mm_t *mm, int cpu);

/*
 * Tracepoints: zonealloc reports the kernel's kmem page events as it takes
 * them, with the kernel's meaning, so that a replay compares like with
 * like:
 *   ZA_TP_PAGE_ALLOC_ZONE_LOCKED  a block taken from the buddy lists;
 *                                 percpu_refill = the order is one the
 *                                 per-CPU lists cache (so, in practice,
 *                                 a refill), as the kernel reports it
 *   ZA_TP_PAGE_PCPU_DRAIN         a block given back from a CPU's lists
 *   ZA_TP_PAGE_ALLOC_EXTFRAG      a fallback to another migratetype's
 *                                 block; fragmenting when smaller than a
 *                                 pageblock, change_ownership when the
 *                                 pageblock became the request's type
 * and, asked for by za_set_tracepoints' mask, the zone-lock events
 * proposed for the kernel in 2026 (kmem:mm_zone_lock_contended,
 * mm_zone_locked, mm_zone_lock_unlock), on the bulk paths -- a refill
 * (caller "rmqueue_bulk") and a bulk free ("free_pcppages_bulk"); count
 * is the pages the hold is taken for (asked for, at the lock):
 *   ZA_TP_ZONE_LOCK_CONTENDED     the lock was held by another: waiting
 *   ZA_TP_ZONE_LOCKED             taken; contended, and wait_ns if so
 *   ZA_TP_ZONE_LOCK_UNLOCK        released; hold_ns since ZONE_LOCKED
 *                                 (zonealloc's: the kernel's consumer
 *                                 subtracts the timestamps)
 * fn runs on the thread that caused the event, possibly under a zone
 * lock: it must not call into mm.  NULL turns tracing off.  Change it only
 * while no other thread (nor the vmstat worker) uses the system: a
 * callback may still be running on another thread as it changes.  Costs nothing
 * on the per-CPU hit paths, which have no event.
 */
enum za_tracepoint {
	ZA_TP_PAGE_ALLOC_ZONE_LOCKED,
	ZA_TP_PAGE_PCPU_DRAIN,
	ZA_TP_PAGE_ALLOC_EXTFRAG,
	ZA_TP_ZONE_LOCK_CONTENDED,
	ZA_TP_ZONE_LOCKED,
	ZA_TP_ZONE_LOCK_UNLOCK,
};
#define ZA_TP_PAGE_EVENTS       0x7u    /* the three kmem page events */
#define ZA_TP_ZONE_LOCK_EVENTS  0x38u   /* the three zone-lock events */
struct za_tp_event {
	enum za_tracepoint type;
	int cpu;                /* drain: the CPU whose lists gave the pages;
				 * otherwise the allocating CPU */
	int zone;               /* node * za_nr_zones() + zone index */
	unsigned long pfn;
	unsigned int order;     /* extfrag: the allocation's order */
	int migratetype;        /* extfrag: the allocation's */
	int percpu_refill;      /* zone_locked */
	int fallback_order, fallback_migratetype;       /* extfrag */
	int count, contended;                           /* zone lock */
	unsigned long long wait_ns, hold_ns;            /* zone lock */
	const char *caller;                             /* zone lock */
	int fragmenting, change_ownership;              /* extfrag */
};
typedef void (*za_tracepoint_fn)(const struct za_tp_event *ev, void *ctx);
/* The page events (ZA_TP_PAGE_EVENTS) to fn. */
void za_set_tracepoint(za_mm_t *mm, za_tracepoint_fn fn, void *ctx);
/* The events whose bits (1u << type) are set in mask to fn. */
void za_set_tracepoints(za_mm_t *mm, za_tracepoint_fn fn, void *ctx, unsigned int mask);

/* ------------------------------------------------------------------------
 * Counters and reports (vmstat)
 *
 * za_stat() takes a counter name as listed by za_stat_name(); a counter kept
 * per zone may be suffixed with _<ZoneName> (e.g. "pgalloc_Normal",
 * "nr_free_pages_DMA32") to read that zone of every node.  Unknown names
 * return -1 with errno EINVAL.  Counters are folded from per-CPU parts on
 * read; on a busy system they are a consistent-enough snapshot, on a
 * quiescent one they are exact.
 * ------------------------------------------------------------------------ */
long long za_stat(za_mm_t *mm, const char *name);

/* Counter enumeration, for tools that snapshot everything (zabench). */
int za_stat_count(void);
const char *za_stat_name(int i);
/* How a counter aggregates: events count up (subtract two readings),
 * peaks hold a maximum (see za_stat_reset_peaks), gauges are a state. */
enum za_stat_kind { ZA_STAT_EVENT, ZA_STAT_PEAK, ZA_STAT_GAUGE };
enum za_stat_kind za_stat_kind(int i);
/* Fills vals[0..n) with every counter, in za_stat_name() order; returns the number filled. */
int za_stat_all(za_mm_t *mm, long long *vals, int n);
/* Restarts the peak counters (e.g. pcp_bulkfree_hold_max_ns) from zero, so
 * that a measurement does not see the maxima of what came before it. */
void za_stat_reset_peaks(za_mm_t *mm);

/*
 * Writes a kernel-format text report: "buddyinfo", "zoneinfo", "vmstat",
 * "pagetypeinfo", "slabinfo".  Returns 0, or -1 with errno EINVAL for an unknown name.
 */
int za_report(za_mm_t *mm, const char *what, FILE *out);

/* ------------------------------------------------------------------------
 * Publishing: a system seen from another process (zabench top)
 *
 * A system made with publish=1 keeps a segment, /dev/shm/zonealloc.<pid>.<n>
 * (the process's n-th published system; mode 0600), holding every counter
 * of za_stat_all and, while a reader watches, the reports of za_report, as
 * they were at the system's last publish: every publish_interval_ms from a
 * thread of its own, each round of the malloc's purge worker, and whenever
 * za_publish() is called.  No allocation or free writes it.  The segment
 * goes with za_mm_destroy (the malloc's when the process exits); one whose
 * process is gone is removed by the next za_peek_list.
 * ------------------------------------------------------------------------ */
/* Publishes now.  0, or -1 with errno: EINVAL publish=0, EBUSY a publish
 * under way, or why the segment could not be made (see za_last_error). */
int za_publish(za_mm_t *mm);
/* n of the system's segment (/dev/shm/zonealloc.<pid>.<n>), -1 (EINVAL) if
 * it has none in this process. */
int za_publish_id(za_mm_t *mm);

struct za_peek_entry {
	int pid;
	int system;                     /* n of the segment's name */
	char comm[32];
};
/* The published systems of this user's live processes, up to max of them
 * into out; returns how many there are (-1 with errno if /dev/shm cannot
 * be read).  Segments of processes that are gone are removed. */
int za_peek_list(struct za_peek_entry *out, int max);

typedef struct za_peek za_peek_t;
/* Opens process pid's published system n (0: its first) and reads it.
 * NULL with errno and za_last_error(): ENOENT none, EACCES another user's,
 * EPROTO not a segment or a layout this library does not read, ESRCH its
 * process is gone.  Opening marks the system watched: its publishes
 * render the reports for the next 10 seconds, renewed by each za_peek_read. */
za_peek_t *za_peek_open(int pid, int n);
/* A consistent copy of what is published now (after an exec, of the new
 * program's system n, if it publishes): 0, or -1 with errno
 * (EPROTO corrupt, EAGAIN mid-update for over a second, ESRCH gone). */
int za_peek_read(za_peek_t *p);
/* Of the last read: */
int za_peek_stat_count(const za_peek_t *p);
const char *za_peek_stat_name(const za_peek_t *p, int i);
enum za_stat_kind za_peek_stat_kind(const za_peek_t *p, int i);
long long za_peek_stat_value(const za_peek_t *p, int i);
/* By name; -1 with errno EINVAL if it has none. */
long long za_peek_stat(const za_peek_t *p, const char *name);
/* A report's text as of reports_time, or NULL (errno EINVAL: no such
 * report; EAGAIN: none rendered yet). */
const char *za_peek_report(const za_peek_t *p, const char *what);
/* CLOCK_REALTIME ns of the publish read, and of the one that rendered
 * the reports (0: none yet); publishes counts them. */
unsigned long long za_peek_time_ns(const za_peek_t *p);
unsigned long long za_peek_reports_time_ns(const za_peek_t *p);
unsigned long long za_peek_publishes(const za_peek_t *p);
int za_peek_pid(const za_peek_t *p);
const char *za_peek_comm(const za_peek_t *p);
const char *za_peek_config(const za_peek_t *p);
void za_peek_close(za_peek_t *p);

/*
 * Checks the system's invariants, each part under its locks: the page
 * allocator (free lists, block alignment, runs, per-CPU counts, free page
 * counters), the slab caches (every slab's free list and in-use count,
 * CPU slabs frozen, partial lists holding partial slabs, the counters), the
 * quicklists, the LRU lists and, for the malloc's system, its sheaves and
 * barns.  Returns 0 if all hold, else -1 (errno EINVAL) and reports the
 * first violation (after letting go of every lock).  Call it when no other
 * thread is allocating or freeing (the library's own background work is
 * held off meanwhile): a free pushes onto a slab's list without a lock.
 * Slow: for tests and debugging.
 */
int za_verify(za_mm_t *mm);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* ZONEALLOC_H */
