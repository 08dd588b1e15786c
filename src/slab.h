/*
 * SLUB's types, shared by slub.c (the allocator), slub_debug.c (checks and
 * reports) and kmalloc.c.
 *
 * A slab is a page-allocator block of the cache's order carved into
 * objects of `size` bytes.  Free objects hold a (hardened) pointer to the
 * next free object at `offset`.  Its descriptor keeps, in one 64-bit word
 * changed by compare-and-swap, the slab's own free list and counters:
 *
 *   bits  0..15  index of the first free object, SLAB_NONE if none
 *   bits 16..31  inuse: objects not on the slab's free list
 *   bits 32..46  objects in the slab
 *   bit  47      frozen: the slab is some CPU's current slab
 *   bits 48..63  a tag bumped by every change
 *
 * Only the CPU that froze a slab allocates from it; anyone may push frees
 * onto its list.  Objects per slab are limited to 32767 (as in the kernel),
 * so an index fits.
 */
#ifndef ZA_SLAB_H
#define ZA_SLAB_H

#include "mm_layers.h"
#include "sheaf.h"

#include <limits.h>

#define SLAB_NONE        0xFFFFu
#define MAX_OBJS_PER_SLAB 32767u

static inline unsigned int st_head(uint64_t s) { return (unsigned int)(s & 0xFFFF); }
static inline unsigned int st_inuse(uint64_t s) { return (unsigned int)((s >> 16) & 0xFFFF); }
static inline unsigned int st_objects(uint64_t s) { return (unsigned int)((s >> 32) & 0x7FFF); }
static inline bool st_frozen(uint64_t s) { return (s >> 47) & 1; }

static inline uint64_t st_make(uint64_t old, unsigned int head, unsigned int inuse, bool frozen)
{
	uint64_t tag = ((old >> 48) + 1) & 0xFFFF;
	return (uint64_t)head | (uint64_t)inuse << 16 | (uint64_t)st_objects(old) << 32 |
	       (uint64_t)frozen << 47 | tag << 48;
}

/* The one way to read the word: whole, with acquire (its free list head is
 * then safe to follow); it is written by compare-and-swap (slub.c's
 * slab_update) and once at the slab's creation. */
static inline uint64_t slab_state(const struct za_page *slab)
{
	return atomic_load_explicit(&slab->slab_state, memory_order_acquire);
}

/* The objects of a slab, fixed for its life: no ordering needed. */
static inline unsigned int slab_objects(const struct za_page *slab)
{
	return st_objects(load_relaxed(&slab->slab_state));
}

/* Debug flags (slub_debug letters). */
enum {
	SLAB_CONSISTENCY_CHECKS = 1u << 0,   /* F */
	SLAB_RED_ZONE = 1u << 1,             /* Z */
	SLAB_POISON = 1u << 2,               /* P */
	SLAB_STORE_USER = 1u << 3,           /* U */
	SLAB_DEBUG_FLAGS = 0xF,
};

/* Per-cache events; summed over caches by za_stat() as slab_<name>. */
enum slab_event {
	/* per CPU, under the CPU's lock */
	SL_ALLOC_FASTPATH,
	SL_ALLOC_SLOWPATH,
	SL_FREE_FASTPATH,
	SL_CPU_PARTIAL_ALLOC,
	SL_CPU_PARTIAL_FREE,
	SL_CPU_PARTIAL_DRAIN,
	SL_ALLOC_REFILL,
	SL_ALLOC_FROM_NEW_SLAB,         /* objects a bulk took straight from new slabs */
	SL_DEACTIVATE,
	NR_SLAB_CPU_EVENTS,
	/* per node, under list_lock */
	SL_NODE_PARTIAL_ALLOC = NR_SLAB_CPU_EVENTS,
	SL_NODE_PARTIAL_FREE,
	SL_LIST_LOCK_ACQUIRE,
	SL_LIST_LOCK_CONTENDED,
	NR_SLAB_NODE_EVENTS,
	/* per cache, atomic */
	SL_FREE_SLOWPATH = NR_SLAB_NODE_EVENTS,
	SL_FREE_REMOTE,
	SL_ALLOC_SLAB,                  /* these two from the nodes' slab counts */
	SL_FREE_SLAB,
	SL_ORDER_FALLBACK,
	SL_BAD_FREE,
	/* slub_sheaves (slub_sheaf.c), the kernel's names */
	SL_ALLOC_CPU_SHEAF,             /* 6.18: from a CPU's sheaves (7.0: alloc_fastpath) */
	SL_FREE_CPU_SHEAF,              /* 6.18: into them (7.0: free_fastpath) */
	SL_SHEAF_FLUSH,                 /* objects flushed from a sheaf to slabs */
	SL_SHEAF_REFILL,                /* objects refilled into a sheaf from slabs */
	SL_SHEAF_ALLOC,                 /* empty sheaves allocated (kmalloc) */
	SL_SHEAF_FREE,                  /* ... and freed */
	SL_BARN_GET,                    /* a full sheaf from the barn */
	SL_BARN_GET_FAIL,               /* ... none there */
	SL_BARN_PUT,                    /* a full sheaf onto the barn */
	SL_BARN_PUT_FAIL,               /* ... over its limit, or no empty one to trade */
	SL_FREE_RCU_SHEAF,              /* za_cache_free_rcu: into a CPU's rcu_free sheaf */
	SL_FREE_RCU_SHEAF_FAIL,         /* ... which could not take it: to the cache's batch */
	NR_SLAB_EVENTS
};
_Static_assert(NR_SLAB_EVENTS <= sizeof(((struct za_mm *)0)->retired_slab_events) / sizeof(uint64_t),
	       "za_mm keeps a destroyed cache's events");

struct kmem_cache_cpu {
	/* percpu=rseq (slub.c): the CPU freelist as the restartable fast
	 * paths see it, unless taken (then freelist below is it). */
	struct rseq_stack stack;
	_Atomic uint32_t rseq_stop;
	bool rseq_taken;                /* under lock: the stack is closed */
	uint8_t rseq_pinned;            /* under lock: a holder let go of the lock while taken */
	za_trylock_t lock;
	char *base;                     /* slab's first object ... (these two adjacent: */
	size_t span;                    /* ... its objects' extent    the sections' range check) */
	void *freelist;                 /* objects of `slab` only this CPU takes */
	struct za_page *slab;           /* frozen */
	unsigned int objects;           /* ... and how many */
	struct za_page *partial;        /* unfrozen slabs with free objects */
	struct sheaf *rcu_batch;        /* za_cache_free_rcu's, filling (slab_common.c) */
	za_counter_t stat[NR_SLAB_CPU_EVENTS];
} __attribute__((aligned(4 * ZA_CACHELINE)));

/* A power of two, so that the sections find a CPU's by a shift. */
#define SLAB_CPU_SHIFT 8
_Static_assert(sizeof(struct kmem_cache_cpu) == 1 << SLAB_CPU_SHIFT, "kmem_cache_cpu: 4 lines");

/*
 * slub_sheaves: a CPU's sheaves of a cache (slub_sheaf.c).  main is what
 * the fast paths pop and push (empty_sheaf until the CPU's first miss);
 * spare is full, empty or NULL.  Under lock, a trylock as the kernel's
 * local_trylock: a thread that finds it busy takes the slab paths.
 */
struct slub_percpu_sheaves {
	za_trylock_t lock;
	struct sheaf *main, *spare;
	struct sheaf *rcu_free;         /* za_cache_free_rcu's, filling (slab_common.c) */
	za_counter_t allocs, frees;     /* served by main */
} __attribute__((aligned(ZA_CACHELINE)));

/*
 * za_cache_free_rcu (slab_common.c): the objects waiting for the end of
 * the grace period, under lock: the CPUs' full rcu_free sheaves and
 * batches (kvfree_rcu's, for the objects no sheaf took), and the batch
 * of those whose CPU's was busy.
 */
struct rcu_waiting {
	za_lock_t lock;
	struct sheaf *batch;            /* filling */
	struct sheaf *sheaves, *batches;        /* full, chained through next */
	_Atomic long objects;           /* waiting, all of them */
};

struct kmem_cache_node {
	za_lock_t list_lock;
	_Atomic unsigned long nr_partial;       /* written under list_lock */
	struct za_list partial;
	/* Slabs made and freed, of the cache's order [0] and of its fallback
	 * order [1] (a slab has no other).  The node's slabs, their pages and
	 * objects follow (node_slab_counts), and so do the alloc_slab and
	 * free_slab events: making or freeing a slab is one atomic operation
	 * here, beside the zone's nr_slab_pages.  A count per quantity and
	 * the event apart took four, most of allocate_slab's time when
	 * zabench malloc's sizes cycles its classes through new slabs. */
	_Atomic long slabs_made[2], slabs_freed[2];
	za_counter_t stat[NR_SLAB_NODE_EVENTS];
} __attribute__((aligned(ZA_CACHELINE)));

struct slab_counts {
	long slabs, pages, objects;
};

struct track {                           /* U: who last allocated / freed */
	void *caller;
	int cpu;
	int tid;
	uint64_t when_ns;
};

struct za_kmem_cache {
	/* Hot, read-only after creation. */
	struct za_mm *mm;
	struct kmem_cache_cpu *cpu_slab;  /* [mm->nr_cpus] */
	unsigned int size;              /* object stride, metadata included */
	unsigned int object_size;       /* what the user asked for */
	unsigned int offset;            /* of the free pointer within the object */
	unsigned int red_left_pad;      /* Z: bytes before each object */
	unsigned int inuse;             /* offset of the metadata after the object */
	uint64_t recip;                 /* ceil(2^64 / size): offset -> index by multiply */
	uint64_t inv_odd;               /* size's odd part's inverse mod 2^64 ... */
	unsigned int size_tz;           /* ... and its trailing zero bits: object_exact_index */
	unsigned long random;           /* free pointer hardening key, 0 if off */
	struct rseq_link link;          /* percpu=rseq: the free pointer, for the sections */
	unsigned int debug;             /* SLAB_* debug flags */
	/* slub_sheaves: objects per sheaf, 0 for a cache without them (debug,
	 * not asked for, or the malloc's); then the CPU slabs and partial
	 * lists are off as well with slub_sheaves=2 (7.0 removed them).  Read
	 * by every allocation and free, beside debug. */
	unsigned int sheaf_capacity;
	bool cpu_slab_off;
	unsigned int order, objects;    /* preferred slab size */
	unsigned int min_order, min_objects;   /* fallback when that fails */
	unsigned int cpu_partial_slabs;
	unsigned int min_partial;
	unsigned int align;
	unsigned int flags;             /* ZA_SLAB_* */
	struct slub_percpu_sheaves *cpu_sheaves;        /* [mm->nr_cpus] */
	struct barn *barn;                              /* [mm->nr_nodes] */
	struct rcu_waiting rcu;
	unsigned int owner_tag;         /* for the cache's creator (malloc's class), < 255; or SLAB_NO_TAG */
	void (*ctor)(void *);
	uint16_t *random_seq;           /* slab_freelist_random: a permutation */

	char name[32];
	struct za_kmem_cache *next;     /* mm's list of caches (or of free descriptors) */
	struct kmem_cache_node *node;   /* [mm->nr_nodes] */
	za_counter_t stat[NR_SLAB_EVENTS];   /* the atomic ones */
};

/* The node's slabs of s, and their pages and objects. */
static inline struct slab_counts node_slab_counts(const struct za_kmem_cache *s,
						  const struct kmem_cache_node *n)
{
	/* Freed first: a slab counted freed was counted made before. */
	long freed[2] = { atomic_load(&n->slabs_freed[0]), atomic_load(&n->slabs_freed[1]) };
	long preferred = atomic_load(&n->slabs_made[0]) - freed[0];
	long fallback = atomic_load(&n->slabs_made[1]) - freed[1];
	return (struct slab_counts){
		.slabs = preferred + fallback,
		.pages = (preferred << s->order) + (fallback << s->min_order),
		.objects = preferred * s->objects + fallback * s->min_objects,
	};
}

/* The node of a slab (an allocated block: its head names its zone). */
static inline int slab_nid(const struct za_mm *mm, const struct za_page *slab)
{
	return mm->zone_by_id[slab->zone]->node;
}

/* Which of the node's counts a slab of `order` is in. */
static inline unsigned int slab_count_index(const struct za_kmem_cache *s, unsigned int order)
{
	return order != s->order;
}

/*
 * Every page of a slab has an info word (mmzone.h's page_slab_info), kept
 * apart from its descriptor in a denser array because a lockless free
 * reads it for every object: the cache's owner tag + 1 (bits 0..7; 0 for
 * a cache without one, and on every page outside a slab), the slab's order
 * (8..15), and the id of its owner (16..31; 0 for none): for the malloc,
 * the thread that last filled a sheaf from it.  The creator learns its tag
 * (the malloc, an object's class) and where the slab starts from this
 * word alone.  Written last when a slab is made and cleared first when it
 * goes (slub.c), with acquire here: a word that shows a tag is a whole
 * slab's.  The owner changes while the slab lives, tag and order never.
 */
#define SLAB_NO_TAG UINT_MAX

static inline uint32_t slab_info_make(unsigned int tag, unsigned int order, unsigned int owner)
{
	return ((tag + 1) & 0xFF) | order << 8 | owner << 16;
}

static inline unsigned int slab_info_tag(uint32_t info)
{
	return (info & 0xFF) - 1u;
}

static inline unsigned int slab_info_order(uint32_t info)
{
	return (info >> 8) & 0xFF;
}

static inline unsigned int slab_info_owner(uint32_t info)
{
	return info >> 16;
}

static inline uint32_t slab_info(const struct za_mm *mm, const struct za_page *page)
{
	return atomic_load_explicit(page_slab_info(mm, page), memory_order_acquire);
}

static inline unsigned int slab_page_tag(const struct za_mm *mm, const struct za_page *page)
{
	return slab_info_tag(slab_info(mm, page));
}

/* The pages of a live slab get a new owner; their tag and order stay. */
static inline void slab_set_owner(const struct za_mm *mm, const struct za_page *slab,
				  unsigned int owner)
{
	_Atomic uint32_t *info = page_slab_info(mm, slab);
	for (unsigned long i = 0; i < 1UL << page_order(slab); i++)
		atomic_store_explicit(&info[i], (load_relaxed(&info[i]) & 0xFFFF) | owner << 16,
				      memory_order_release);     /* continues allocate_slab's */
}

/* Object address <-> index within a slab. */
static inline char *slab_base(const struct za_kmem_cache *s, const struct za_page *slab)
{
	return page_to_virt(s->mm, slab) + s->red_left_pad;
}

static inline void *slab_object(const struct za_kmem_cache *s, const struct za_page *slab,
				unsigned int idx)
{
	return idx == SLAB_NONE ? NULL : slab_base(s, slab) + (size_t)idx * s->size;
}

/* off / size, exactly, for any offset within a slab (off < 2^64 / size). */
static inline size_t object_div(const struct za_kmem_cache *s, size_t off)
{
	return (size_t)(((unsigned __int128)off * s->recip) >> 64);
}

static inline unsigned int slab_index(const struct za_kmem_cache *s, const struct za_page *slab,
				      const void *obj)
{
	return (unsigned int)object_div(s, (size_t)((const char *)obj - slab_base(s, slab)));
}

/*
 * off / size if off is a multiple of size, else a number above any
 * object index: exact division by a multiply with the inverse of size's
 * odd part, then a rotation by its trailing zero bits, which brings any
 * remainder into the high bits (Granlund and Montgomery's divisibility
 * test).  One multiply, where a division and its check take two.
 */
static inline size_t exact_index(uint64_t inv_odd, unsigned int size_tz, size_t off)
{
	uint64_t q = (uint64_t)off * inv_odd;
	return (size_t)(q >> size_tz | q << ((64 - size_tz) & 63));
}

static inline size_t object_exact_index(const struct za_kmem_cache *s, size_t off)
{
	return exact_index(s->inv_odd, s->size_tz, off);
}

/*
 * The one definition of "an object start of a slab": off, the distance
 * from the slab's first object (slab_base()), is a multiple of the object
 * size below its `objects` objects.  *idx is the object's index, also when
 * off is inside an object (then false).
 */
static inline bool slab_object_at(const struct za_kmem_cache *s, size_t off, unsigned int objects,
				  size_t *idx)
{
	size_t q = object_exact_index(s, off);
	if (likely(q < objects)) {
		*idx = q;
		return true;
	}
	*idx = object_div(s, off);
	return false;
}

/* Is p an object start of the slab whose first object is at base, of
 * `objects` objects?  (For a run of objects of one slab: base once.) */
static inline bool object_at(const struct za_kmem_cache *s, const char *base, unsigned int objects,
			     const void *p)
{
	size_t idx;
	return slab_object_at(s, (size_t)((const char *)p - base), objects, &idx);
}

/* Is p NULL or an object start of this slab of `objects` objects? */
static inline bool object_in_slab(const struct za_kmem_cache *s, const struct za_page *slab,
				  const void *p, unsigned int objects)
{
	return !p || object_at(s, slab_base(s, slab), objects, p);
}

/* The slab holding addr (inside the arena), or NULL if it is not a slab. */
static inline struct za_page *virt_to_slab(const struct za_mm *mm, const void *addr)
{
	struct za_page *page = virt_to_page(mm, addr);
	uint32_t f = page_flags(page);
	if (f & PG_tail)
		page = (struct za_page *)page_private(page);
	else if (!(f & PG_slab))
		return NULL;
	return page;
}

/* slub.c */
int slab_free_object(struct za_page *slab, void *obj, void *caller);   /* kfree */
void cache_link_init(struct za_kmem_cache *s);     /* the free pointer as the sections see it */
void lock_node(struct kmem_cache_node *n);          /* list_lock, counted */
void unlock_node(struct kmem_cache_node *n);
void *slab_alloc_caller(struct za_kmem_cache *s, za_gfp_t gfp, void *caller);
void slab_stat_fold(struct za_mm *mm, uint64_t *totals);
void slab_stat_retire(struct za_kmem_cache *s);        /* under caches_lock */
unsigned long sheaf_objects(const struct za_kmem_cache *s);
const char *slab_event_name(int i);
long slab_shrink_reclaim(struct za_mm *mm);
long slab_sort_partials(struct za_mm *mm);
unsigned long slab_count(void *mm);
unsigned long slab_scan(void *mm, unsigned long nr);

/* slub.c: the slab paths under the sheaves (slub_sheaf.c). */
void *slab_alloc_nosheaf(struct za_kmem_cache *s, za_gfp_t gfp, int node);
unsigned int slab_refill_objects(struct za_kmem_cache *s, za_gfp_t gfp, int node, unsigned int n,
				 void **objs);
void slab_free_objects(struct za_kmem_cache *s, size_t n, void **objs);
void cache_stat(struct za_kmem_cache *s, enum slab_event e);
void cache_stat_add(struct za_kmem_cache *s, enum slab_event e, unsigned long n);

/* kmalloc.c: where sheaves come from. */
struct za_kmem_cache *kmalloc_slab(struct za_mm *mm, size_t size);
size_t kmalloc_size_roundup(size_t size);

/* slub_sheaf.c: slub_sheaves, Linux 7.0's per-CPU layer. */
unsigned int calculate_sheaf_capacity(const struct za_kmem_cache *s);
void *alloc_from_pcs(struct za_kmem_cache *s, za_gfp_t gfp, int cpu);
int free_to_pcs(struct za_kmem_cache *s, struct za_page *slab, void *obj, int cpu);
size_t alloc_from_pcs_bulk(struct za_kmem_cache *s, int cpu, size_t n, void **objs);
size_t free_to_pcs_bulk(struct za_kmem_cache *s, int cpu, size_t n, void **objs);
void pcs_flush_cpu(struct za_kmem_cache *s, int cpu, bool wait);
struct sheaf *sheaf_kmalloc(struct za_mm *mm, unsigned int capacity, za_gfp_t gfp);
void sheaf_kfree(struct za_mm *mm, struct sheaf *sh);
bool free_to_pcs_rcu(struct za_kmem_cache *s, struct za_page *slab, void *obj, int cpu);
struct sheaf *pcs_take_rcu(struct za_kmem_cache *s, int cpu);
void rcu_free_sheaf(struct za_kmem_cache *s, struct sheaf *sh);
int rcu_batch_add(struct za_kmem_cache *s, void *obj);
void barn_shrink(struct za_kmem_cache *s);
int pcs_verify(struct za_kmem_cache *s);

/* slab_common.c: a cache made in two steps, the layer's exit, fork locks, report. */
struct za_kmem_cache *cache_prepare(za_mm_t *mm, const char *name, size_t size, size_t align,
				    unsigned int flags, void (*ctor)(void *));
void cache_disable_sheaves(struct za_kmem_cache *s);   /* before cache_publish */
void cache_publish(struct za_kmem_cache *s);
void slub_destroy_all(struct za_mm *mm);
void slab_lock_all(struct za_mm *mm, bool lock);
void slab_layer_lock_all(struct za_mm *mm, enum lock_all_mode mode);
void slabinfo_report(struct za_mm *mm, FILE *out);

/* slub_verify.c */
int slab_verify(struct za_mm *mm);

/* slub_debug.c: checks and reports of debug caches. */
unsigned int slub_debug_flags_for(const struct za_mm *mm, const char *cache_name);
unsigned int debug_metadata_size(const struct za_kmem_cache *s);
void debug_init_object(struct za_kmem_cache *s, void *obj);
bool debug_alloc_check(struct za_kmem_cache *s, void *obj, void *caller);
/* Under list_lock; free_head is the slab's free list (to find double frees). */
bool debug_free_check(struct za_kmem_cache *s, struct za_page *slab, void *obj, void *caller,
		      void *free_head);
void *debug_get_freepointer(const struct za_kmem_cache *s, void *obj);
/* percpu=rseq, under c's lock: its freelist into c->freelist (from any
 * thread: stops and fences), and back. */
void cpu_take_stopped(struct za_kmem_cache *s, struct kmem_cache_cpu *c);
void cpu_give(struct za_kmem_cache *s, struct kmem_cache_cpu *c);
void slab_report(struct za_kmem_cache *s, const void *obj, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));


#endif /* ZA_SLAB_H */
