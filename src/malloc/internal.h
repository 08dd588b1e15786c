/*
 * The malloc front end's internal header: its shared types, and the calls
 * its files make of each other.
 *
 *   malloc.c        the entry points (malloc, free, realloc, ...), what a pointer is
 *   override.c      their C library and C++ names, for libzonealloc-malloc.so
 *   init.c          the default system's bootstrap, the classes' caches, fork
 *   thread_cache.c  a thread's cache: its life, its page blocks
 *   sheaf.c         per-thread sheaves and the per-class barns
 *   cpu_cache.c     malloc_cache=cpu: per-CPU object stacks instead of sheaves
 *   mappings.c      direct mappings and the mapping cache
 *   zero.c          malloc(0)'s addresses, the fault reporter
 *   debug.c         debug mode: headers, tails, poison and quarantines
 *   purge.c         the purge worker: free memory back to the OS
 *   stats.c         ZA_STATS and za_malloc_stats()
 *
 *   malloc(n), n <= 16 KiB  ->  this thread's sheaf of n's class
 *                                 -> the class's barn of full sheaves
 *                                   -> SLUB cache malloc-<size> (bulk)
 *   16 KiB < n <= 32 KiB    ->  an order-3 block (the per-CPU lists)
 *   32 KiB < n <= 64 MiB    ->  a run of whole pages (za_alloc_pages_exact):
 *                               a quarter of a section (16 MiB, the largest
 *                               block, under ulimit -v)
 *   beyond,                 ->  a direct mapping (mappings.c)
 *   or the arena is full
 *
 * Only the first step is the common path, and it is plain loads and stores
 * on memory only this thread touches: no atomic instruction, no lock.
 */
#ifndef ZA_MALLOC_INTERNAL_H
#define ZA_MALLOC_INTERNAL_H

#include "mmzone.h"
#include "rseq.h"
#include "sheaf.h"
#include "slab.h"

#include <pthread.h>

/* ------------------------------------------------------------------------
 * Size classes: 16-byte steps to 128, then four per power of two up to
 * 16 KiB, so no small request wastes more than a fifth of its object.
 * Every class is a multiple of 16 (malloc's alignment); a class that is a
 * multiple of a power of two `a` <= 4096 has every object aligned to `a`,
 * since slabs are page aligned.
 * ------------------------------------------------------------------------ */
#define NR_CLASSES      36
#define SMALL_MAX       16384
#define MALLOC_ALIGN    16
#define SHEAF_MAX_CAPACITY 64
#define SHEAF_FIRST_FILL 8

static inline unsigned int class_size(unsigned int c)
{
	if (c < 8)
		return 16 * (c + 1);
	unsigned int b = 7 + (c - 8) / 4, sub = (c - 8) % 4;
	return (1u << b) + (sub + 1) * (1u << (b - 2));
}

/* The class of n > 128 bytes: four classes per power of two. */
static inline unsigned int size_class_computed(size_t n)
{
	unsigned int x = (unsigned int)n - 1, b = fls_u(x) - 1;
	return 8 + (b - 7) * 4 + ((x >> (b - 2)) & 3);
}

/* Classes of sizes up to 1 KiB by 16-byte step: a load, no branch to
 * mispredict when sizes vary (malloc.c fills it). */
extern uint8_t class_by_step[1024 / 16 + 1];

/* The class of a request of n <= SMALL_MAX bytes (0 counts as 1). */
static inline unsigned int size_class(size_t n)
{
	if (likely(n <= 1024))
		return class_by_step[(n + 15) >> 4];
	return size_class_computed(n);
}

/* ------------------------------------------------------------------------
 * Sheaves and the barn (sheaf.c, on ../sheaf.h)
 * ------------------------------------------------------------------------ */
#define BLOCK_CACHE_SLOTS 8
#define BLOCK_CACHE_BYTES (2UL << 20)

/*
 * A thread's sheaves: per class a main one, which malloc pops and free
 * pushes, and a spare that is always either full or empty (Bonwick's
 * "previous magazine"), so that a thread alternating at a sheaf boundary
 * swaps instead of going to the barn.  Until a thread allocates, and after
 * it exits, its pointer leads to a static instance whose sheaves have
 * capacity 0, so that the fast paths need no test for it.
 */
struct thread_cache {
	za_counter_t alloc_hits, free_hits;     /* served by the main sheaf (count_hit) */
	/* What the slabs it fills sheaves from record as their owner (slab.h's
	 * slab info), 1..65535, beside what free writes: ids come round again
	 * after that many threads, and two threads with one id only share
	 * where some objects go (main or remote sheaf), never an object. */
	uint16_t id;
	struct sheaf *main[NR_CLASSES + 1];     /* + ZERO_SLOT, never filled */
	struct sheaf *spare[NR_CLASSES];
	/* Objects of slabs another thread filled its sheaves from: not reused
	 * here (they share cache lines with that thread's objects), but sent
	 * on whole through the barn. */
	struct sheaf *remote[NR_CLASSES];
	/* How many objects the next fill from the slab cache takes: a few at
	 * first, doubling with each fill up to the capacity, so that a thread
	 * using a class lightly holds little of it. */
	uint8_t fill[NR_CLASSES];
	unsigned int fills;             /* sheaves filled from the slab caches */
	za_counter_t alloc_misses, free_misses; /* went to the spare, barn or SLUB */
	/* Page blocks this thread freed last, oldest first, marked freed in
	 * their descriptors (a second free is a double free); malloc takes
	 * the newest of the size it needs. */
	void *blocks[BLOCK_CACHE_SLOTS];
	unsigned int block_pages[BLOCK_CACHE_SLOTS];
	unsigned int nr_blocks;
	size_t block_bytes;
	struct thread_cache *next, *prev;       /* every live thread's, under threads_lock */
	/* The thread's tcache, and what the purge worker last saw of its
	 * counters (under threads_lock: thread_caches_note_idle). */
	struct thread_cache *_Atomic *home;
	uint64_t activity;
	unsigned int idle_rounds;
	bool exited;                            /* the static "after exit" instance */
};

/*
 * Per class: the barn holds full sheaves (objects ready to go) and empty
 * ones (room for frees), exchanged whole under one lock.
 *
 * How many full sheaves it keeps follows the class's swing: a barn that
 * sent full sheaves back to the slab cache and then ran dry -- the program
 * freed more than it kept and then wanted it back -- doubles its limit, up
 * to RETAIN_MAX_BYTES of objects; each round of the purge worker gives
 * back half of what no thread took from it all round and halves the
 * limit's excess over the base (barns_decay).
 */
struct class_barn {
	struct barn b;                  /* its lists and lock */
	unsigned int max_full;          /* beyond this, full sheaves go back to SLUB */
	unsigned int base_full;         /* the limit when the class does not swing */
	unsigned int low_full;          /* fewest full sheaves since the last round */
	bool overflowed;                /* sent a full sheaf to SLUB since it ran dry */
	za_counter_t gets, puts;        /* exchanges, under the lock */
	uint64_t scan_seen;             /* gets + puts at the last barns_evict_idle */
} __attribute__((aligned(ZA_CACHELINE)));

#define RETAIN_MAX_BYTES (32UL << 20)

struct malloc_class {
	unsigned int size;
	unsigned int capacity;          /* of its sheaves */
	za_cache_t *_Atomic cache;      /* created on first use */
	/* The cache's slab geometry, copied before the cache is published:
	 * free finds an object's index from its page's slab info and these,
	 * one load from the class where the cache would be two. */
	uint64_t inv_odd;
	uintptr_t slab_mask;            /* a slab's size - 1, at the preferred order */
	unsigned int size_tz;
	unsigned int order, objects;    /* objects 0: debug mode */
} __attribute__((aligned(64)));        /* a class is a shift from the first */

/* thread_cache.c */
/* Read by its thread alone, but turned by the purge worker: atomic,
 * relaxed (a plain load). */
extern __thread struct thread_cache *_Atomic tcache __attribute__((tls_model("initial-exec")));
extern struct thread_cache boot_tcache, exited_tcache;
struct thread_cache *this_thread_cache(void);
void *block_alloc(unsigned long pages, size_t align, size_t requested);
void block_free(void *p, unsigned long pages);
void thread_cache_exit(void *tc);
void sheaves_flush_thread(void);
void thread_caches_note_idle(void);     /* the purge worker's round */

/* sheaf.c */
void *sheaf_alloc_slow(unsigned int c);
void *class_alloc_one(unsigned int c);  /* past every cache: NULL without memory */
void sheaf_free_slow(unsigned int c, void *obj);
void sheaves_give_back(struct thread_cache *tc);
void sheaves_empty(struct thread_cache *tc);
void sheaves_flush_barns(void);
void barns_decay(void);                /* the purge worker's round */
unsigned long barn_objects(unsigned int c);     /* in class c's full sheaves */
uint64_t barns_activity(void);
int malloc_verify(struct za_mm *mm);    /* za_verify's malloc layer: barns and sheaves */
/* stats.c: the malloc layer's events (mm_layers.c). */
#define NR_MALLOC_EVENTS 4
const char *malloc_event_name(int e);
void malloc_stat_fold(struct za_mm *mm, uint64_t *totals);
void malloc_rss_report(struct za_mm *mm, FILE *out);   /* za_report's "rss" */
void sheaves_fold_stats(uint64_t *alloc_hits, uint64_t *alloc_misses, uint64_t *free_hits,
			uint64_t *free_misses);
bool sheaves_after_fork_child(void);

/* ------------------------------------------------------------------------
 * Direct mappings (mappings.c)
 * ------------------------------------------------------------------------ */
void *mapping_alloc(size_t size, size_t align, size_t requested);
/* The mapping's usable size if p starts one (and the size and alignment
 * malloc was asked for, where not NULL), else 0. */
size_t mapping_size(const void *p, size_t *requested, size_t *align);
/* How many bytes from the start of mapping p may not be zero: reused
 * from the mapping cache (calloc clears them). */
size_t mapping_dirty(const void *p);
/* Frees p if it starts a mapping (into the mapping cache); false if not. */
bool mapping_free(void *p);
/* The same, straight back to the OS (debug mode's quarantine, whose
 * mappings have lost their access). */
bool mapping_unmap(void *p);
void *mapping_realloc(void *p, size_t size);
/* The purge worker's round: the mapping cache follows demand (everything:
 * idle, or malloc_trim). */
void mapping_cache_decay(bool everything);
struct mapping_stats {
	size_t count, bytes;            /* live mappings */
	size_t cached_bytes;            /* freed, kept for reuse */
	uint64_t maps, reuses, frees;   /* new mappings; requests the cache served; frees */
};
void mapping_stats(struct mapping_stats *st);
int mappings_verify(void);               /* za_verify's part: the table and the cache */
void mappings_lock(void);
void mappings_unlock(void);

/* ------------------------------------------------------------------------
 * The default instance (malloc.c)
 * ------------------------------------------------------------------------ */
struct za_malloc {
	za_mm_t *mm;
	uint64_t free_key;              /* signature of a freed small object */
	bool debug;
	bool cpu_cache;                 /* malloc_cache=cpu (cpu_cache.c) */
	bool count_hits;                /* ZA_STATS asked for statistics (count_hit) */
	bool address_limited;           /* ulimit -v at the start (init.c's create_system) */
	unsigned long large_max_pages;  /* the largest run: a quarter section */
	struct malloc_class classes[NR_CLASSES];
	struct class_barn barns[NR_CLASSES];
	/* Barns that may hold more than their base, a bit per class: set
	 * under the barn's lock as it goes beyond, cleared by the scan that
	 * finds it back (barns_evict_idle). */
	_Atomic uint64_t barns_retaining;
	za_cache_t *sheaf_cache, *thread_cache_cache;
	pthread_key_t thread_key;
	za_lock_t threads_lock;         /* the thread list, and class creation */
	struct thread_cache *threads;
	/* thread exits fold their counters here (atomically: rare) */
	za_counter_t exited_alloc_hits, exited_alloc_misses, exited_free_hits, exited_free_misses;
	za_counter_t idle_flushes;      /* idle threads' caches given back */
	/* Small objects free's fast path left to the full checks: aligned
	 * sized frees, objects of a fallback-order slab or of a section
	 * beyond the near table (atomically: rare, or a slow path anyway) */
	za_counter_t checked_small_frees;
	_Atomic uint32_t thread_ids;    /* thread caches made: the next id (thread_cache.c) */
};

extern struct za_malloc zm;

/* A hit of a thread's sheaves, counted only when statistics were asked for
 * (ZA_STATS): a count is a read-modify-write of one word per call, a chain
 * of store-to-load forwarding through every malloc and free of a thread,
 * which cost larson 12%, pairs 7% and threads 6% (interleaved runs of
 * build/malloc-suite BENCH 2 1). */
static inline __attribute__((always_inline)) void count_hit(za_counter_t *c)
{
	if (unlikely(zm.count_hits))
		counter_add(c, 1);
}

/* ------------------------------------------------------------------------
 * malloc_cache=cpu: per-CPU object stacks (cpu_cache.c)
 * ------------------------------------------------------------------------ */
/* An object's successor sits after its freed signature. */
static const struct rseq_link object_link = { .off = sizeof(uint64_t) };

struct cpu_objects {
	struct rseq_stack stack[NR_CLASSES];
	_Atomic uint32_t stop;
};

#define CPU_OBJECTS_SHIFT 10
_Static_assert(sizeof(struct cpu_objects) <= 1u << CPU_OBJECTS_SHIFT, "cpu_objects too large");

extern char *cpu_objects_base;

static inline struct rseq_percpu cpu_cache_percpu(za_mm_t *mm, unsigned int c)
{
	return (struct rseq_percpu){
		.base = cpu_objects_base + c * sizeof(struct rseq_stack),
		.stop = (long)offsetof(struct cpu_objects, stop) -
			(long)(c * sizeof(struct rseq_stack)),
		.shift = CPU_OBJECTS_SHIFT,
		.nr = (unsigned int)mm->nr_cpus,
		.index_tls = mm->rseq_cpu_offset,
	};
}

/* A stack holds fewer objects than its class's limit, a power of two: a
 * push that reaches it fails. */
static inline uint64_t cpu_cache_limit(unsigned int c)
{
	return 1ULL << order_base_2(2 * zm.classes[c].capacity);
}

bool cpu_cache_init(void);
/* The hit paths, out of line so that the sheaves' own stay short: an
 * object of class c (NULL and ENOMEM without memory), and obj (carrying
 * the freed signature) back. */
void *cpu_cache_alloc(unsigned int c);
void cpu_cache_free(unsigned int c, void *obj);
void cpu_cache_drain(void);
/* The CPUs' hits (folded and in the tallies) and misses, added. */
void cpu_cache_fold_stats(uint64_t *alloc_hits, uint64_t *alloc_misses, uint64_t *free_hits,
			  uint64_t *free_misses);
int cpu_cache_verify(void);             /* za_verify's part */
void cpu_cache_lock(bool lock);         /* fork */

/* init.c: the bootstrap, the boot heap, class caches, misuse. */
enum { BOOT_NONE, BOOT_RUNNING, BOOT_DONE, BOOT_FAILED };
extern _Atomic int malloc_boot_state;
/* The system's sparse view, copied once the system exists (until then
 * nothing is the arena's), so that classifying a pointer follows no
 * pointer to the system.  A thread may free before it ever allocated,
 * without having synchronised with the bootstrap: the view is published
 * by its last field (view_copy). */
extern struct sparse_view malloc_arena;
bool malloc_bootstrap(void);

/* True once the system exists; false for the creating thread's own calls
 * while it is created (they use the boot heap). */
static inline bool malloc_ready(void)
{
	return likely(atomic_load_explicit(&malloc_boot_state, memory_order_acquire) == BOOT_DONE) ||
	       malloc_bootstrap();
}

void *boot_alloc(size_t n);
bool in_boot_heap(const void *p);
size_t boot_size(const void *p);
za_cache_t *malloc_class_cache(unsigned int c);
void malloc_misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn, cold));

/* malloc.c */
struct za_page *malloc_block_head(const void *p);

/* Pages of a block of n bytes: whole pages, not a power of two of them --
 * but up to 2^PCP_MAX_ORDER pages, the power of two the per-CPU lists
 * serve without the zone lock (at most 16 KiB more). */
static inline unsigned long block_pages(size_t n)
{
	unsigned long pages = (unsigned long)(n >> PAGE_SHIFT) + !!(n & (PAGE_SIZE - 1));
	return pages <= 1UL << PCP_MAX_ORDER ? 1UL << get_order(n) : pages;
}

/* zero.c: malloc(0)'s inaccessible addresses (NULL: none left for
 * this alignment), their frees and sizes checked as any block's (misuse
 * ends the process), and the fault reporter. */
bool in_zero_region(const void *p);
void *zero_alloc(size_t align);
enum zero_state { ZERO_NONE, ZERO_LIVE, ZERO_FREED };
enum zero_state zero_state(const void *p);      /* p in the region */
void zero_mark_freed(const void *p);             /* a live one */
void malloc_fault_handler_install(void);
/* size_class(0): a slot past the classes whose sheaf is always empty. */
#define ZERO_SLOT NR_CLASSES

/* stats.c: reads ZA_STATS and ZA_STATS_FILE, and if asked for,
 * has the statistics printed at exit. */
void malloc_stats_init(void);

/* purge.c */
void purge_worker_kick(void);
void purge_worker_thread_exit(void);
void purge_worker_after_fork(bool parent_multithreaded);
void purge_worker_pause(struct za_mm *mm, bool pause);     /* za_verify (mm_layers.c) */

/* The class of the malloc slab object p (NR_CLASSES and more: not one),
 * from its page's slab info word. */
static inline unsigned int object_class(const void *p)
{
	return slab_info_tag(load_relaxed(view_slab_info(&malloc_arena, p)));
}

/* The id of the thread that last filled a sheaf from p's slab (slab.h's
 * slab info): p's objects belong in that thread's main sheaf, in any
 * other's remote one. */
static inline unsigned int object_owner(const void *p)
{
	return slab_info_owner(load_relaxed(view_slab_info(&malloc_arena, p)));
}

/*
 * A page block's descriptor (the head of its first piece: runs are made of
 * pieces, mmzone.h) carries a word in page->private, which belongs to the
 * owner of an allocated block: bit 0 freed (kept by a thread for reuse: a
 * second free is a double free), bits 1..6 the log2 of the alignment it
 * was asked for, bits 7..27 its pages (at most BLOCK_MAX_PAGES), bits
 * 28..63 how far the request fell short of them -- so that sized frees are
 * checked against the exact size and alignment malloc was asked for.  The
 * page allocator clears the word of every block it hands out, so a piece
 * head that reads 0 is inside some block, not the start of one.
 */
#define BLOCK_PAGES_SHIFT 7
#define BLOCK_SLACK_SHIFT 28
#define BLOCK_MAX_PAGES (1UL << 20)

static inline unsigned long block_word(const struct za_page *head)
{
	return page_private(head);
}

static inline unsigned long block_word_pages(unsigned long w)
{
	return (w >> BLOCK_PAGES_SHIFT) & ((1UL << (BLOCK_SLACK_SHIFT - BLOCK_PAGES_SHIFT)) - 1);
}

static inline size_t block_word_requested(unsigned long w)
{
	return (block_word_pages(w) << PAGE_SHIFT) - (w >> BLOCK_SLACK_SHIFT);
}

static inline size_t block_word_align(unsigned long w)
{
	return (size_t)1 << ((w >> 1) & 63);
}

/* requested <= pages' bytes, align a power of two; a freed block keeps
 * neither. */
static inline void set_block_word(struct za_page *head, unsigned long pages, size_t requested,
				  size_t align, bool freed)
{
	unsigned long slack = freed || !pages ? 0 : (pages << PAGE_SHIFT) - requested;
	unsigned long shift = freed || !pages ? 0 : order_base_2(align);
	VM_BUG_ON(zm.mm, pages > BLOCK_MAX_PAGES || (pages << PAGE_SHIFT) < requested);
	set_page_private(head, pages ? slack << BLOCK_SLACK_SHIFT | pages << BLOCK_PAGES_SHIFT |
					       shift << 1 | freed
				     : 0);
}

/* A freed small object carries this in its first word until allocated
 * again: a second free of it is a double free, whatever happened in
 * between.  Keyed per process and by address, so user data cannot match it
 * by accident. */
static inline uint64_t free_signature(const void *p)
{
	return zm.free_key ^ (uint64_t)(uintptr_t)p;
}

/* ------------------------------------------------------------------------
 * Debug mode (debug.c)
 * ------------------------------------------------------------------------ */
void malloc_debug_init(void);
/* A fault at addr in a quarantined block: reported (does not return). */
void debug_fault(const void *addr);
void malloc_debug_lock(bool lock);
void *debug_malloc(size_t size, size_t align, bool zero);
void debug_free(void *p, size_t expect_size, size_t expect_align, const char *fn);
size_t debug_usable_size(const void *p, const char *fn);

#endif /* ZA_MALLOC_INTERNAL_H */
