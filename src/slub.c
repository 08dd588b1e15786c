/*
 * SLUB object caches on the page allocator (seed 002).
 *
 * Per CPU, a cache has a current slab whose free objects only that CPU
 * takes (its freelist), and a short list of partial slabs; per node, a
 * partial list under list_lock.  The fast paths -- take from the CPU's
 * freelist, free into the CPU's current slab -- run under the CPU's
 * trylock, touching no line another CPU writes.  Everything else works on
 * the slab's own state word (slab.h) with compare-and-swap, taking the
 * node's list_lock only to move slabs between lists:
 *
 *   new slab -> CPU slab (frozen) -> full (on no list) -> a free puts it on
 *   the freeing CPU's partial list -> node partial list (when that list
 *   overflows) -> empty: freed to the page allocator beyond min_partial.
 *
 * A bulk allocation that finds no partial slab takes its objects from new
 * slabs without linking them; a new slab it leaves objects in goes onto
 * the node partial list, one it takes whole onto no list (full).
 *
 * percpu=rseq: the two fast paths are restartable sections on the CPU's
 * stack (below) and take no lock; everything else still runs under the
 * CPU's trylock, with the stack taken off for the time (cpu_take).
 *
 * Lock order: a CPU's trylock, then list_lock, then the zone lock.
 *
 * Invariants: a slab on a node partial list has PG_slab_partial and at
 * least one free object on its own free list; a frozen slab is exactly one
 * CPU's c->slab; inuse counts the objects not on the slab's free list (so
 * the CPU slab's free objects count as in use); the objects of a slab are
 * its allocated + its CPU freelist + its free list.  ZA_DEBUG_VM checks them
 * where slabs change hands (list moves, freezes, discards) and every object
 * handed out; the lock comments below are za_lock_assert_held calls there.
 */
#include "slab.h"
#include "probes.h"
#include "internal.h"
#include "percpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Counters
 * ------------------------------------------------------------------------ */
/* The names za_stat() knows them by; za_cache_stat() also takes them
 * without the "slab_" prefix. */
static const char *const slab_event_names[NR_SLAB_EVENTS] = {
	[SL_ALLOC_FASTPATH] = "slab_alloc_fastpath",
	[SL_ALLOC_SLOWPATH] = "slab_alloc_slowpath",
	[SL_FREE_FASTPATH] = "slab_free_fastpath",
	[SL_CPU_PARTIAL_ALLOC] = "slab_cpu_partial_alloc",
	[SL_CPU_PARTIAL_FREE] = "slab_cpu_partial_free",
	[SL_CPU_PARTIAL_DRAIN] = "slab_cpu_partial_drain",
	[SL_ALLOC_REFILL] = "slab_alloc_refill",
	[SL_ALLOC_FROM_NEW_SLAB] = "slab_alloc_from_new_slab",
	[SL_DEACTIVATE] = "slab_deactivate",
	[SL_NODE_PARTIAL_ALLOC] = "slab_node_partial_alloc",
	[SL_NODE_PARTIAL_FREE] = "slab_node_partial_free",
	[SL_LIST_LOCK_ACQUIRE] = "list_lock_acquire",
	[SL_LIST_LOCK_CONTENDED] = "list_lock_contended",
	[SL_FREE_SLOWPATH] = "slab_free_slowpath",
	[SL_FREE_REMOTE] = "slab_free_remote",
	[SL_ALLOC_SLAB] = "slab_alloc_slab",
	[SL_FREE_SLAB] = "slab_free_slab",
	[SL_ORDER_FALLBACK] = "slab_order_fallback",
	[SL_BAD_FREE] = "slab_bad_free",
	[SL_ALLOC_CPU_SHEAF] = "slab_alloc_cpu_sheaf",
	[SL_FREE_CPU_SHEAF] = "slab_free_cpu_sheaf",
	[SL_SHEAF_FLUSH] = "slab_sheaf_flush",
	[SL_SHEAF_REFILL] = "slab_sheaf_refill",
	[SL_SHEAF_ALLOC] = "slab_sheaf_alloc",
	[SL_SHEAF_FREE] = "slab_sheaf_free",
	[SL_BARN_GET] = "slab_barn_get",
	[SL_BARN_GET_FAIL] = "slab_barn_get_fail",
	[SL_BARN_PUT] = "slab_barn_put",
	[SL_BARN_PUT_FAIL] = "slab_barn_put_fail",
	[SL_FREE_RCU_SHEAF] = "slab_free_rcu_sheaf",
	[SL_FREE_RCU_SHEAF_FAIL] = "slab_free_rcu_sheaf_fail",
};

const char *slab_event_name(int i)
{
	return slab_event_names[i];
}

static void cpu_stat(struct kmem_cache_cpu *c, enum slab_event e)
{
	counter_add(&c->stat[e], 1);
}

static void node_stat(struct kmem_cache_node *n, enum slab_event e)
{
	counter_add(&n->stat[e], 1);
}

void cache_stat(struct za_kmem_cache *s, enum slab_event e)
{
	counter_add_atomic(&s->stat[e], 1);
}

void cache_stat_add(struct za_kmem_cache *s, enum slab_event e, unsigned long n)
{
	counter_add_atomic(&s->stat[e], n);
}

/* ------------------------------------------------------------------------
 * percpu=rseq: the CPU freelist as a stack of rseq.h
 *
 * The fast paths pop and push the stack of their CPU in one restartable
 * section each.  Its tally holds the CPU slab's tag (pfn + 1, 0 for none)
 * -- a push commits only if the object's slab has the tag, so an object
 * never joins another slab's CPU freelist -- and the fast paths' counts in
 * two 15-bit fields whose next bit, once set, fails them until a lock path
 * folds the counts into the CPU's events.
 *
 * Everything else keeps the classic code on c->freelist, under the CPU's
 * lock, with the stack taken (cpu_take: one section moving the freelist
 * to c->freelist and leaving {NULL, tag 0}, on which every pop finds
 * nothing and every push a mismatch) and given back (cpu_give: one
 * 16-byte store, since nobody else writes a taken stack).  A lock path
 * that lets go of the lock while the stack is taken pins it, so that
 * another holder does not give it back under its feet.  A thread not on
 * the CPU (flush, verify) stops the CPU's sections and fences first.
 * ------------------------------------------------------------------------ */
#define SLUB_TAG_MASK   0xffffffffULL
#define SLUB_ALLOC_ONE  (1ULL << 32)
#define SLUB_FREE_ONE   (1ULL << 48)
#define SLUB_FOLD       ((1ULL << 47) | (1ULL << 63))

static inline struct rseq_percpu cpu_percpu(const struct za_kmem_cache *s)
{
	return (struct rseq_percpu){
		.base = (char *)&s->cpu_slab[0].stack,
		.stop = (long)offsetof(struct kmem_cache_cpu, rseq_stop) -
			(long)offsetof(struct kmem_cache_cpu, stack),
		.shift = SLAB_CPU_SHIFT,
		.nr = (unsigned int)s->mm->nr_cpus,
		.index_tls = s->mm->rseq_cpu_offset,
	};
}

static uint64_t slab_tag(const struct za_mm *mm, const struct za_page *slab)
{
	return slab ? page_to_pfn(mm, slab) + 1 : 0;
}

static uint64_t tally_allocs(uint64_t tally) { return (tally >> 32) & 0xffff; }
static uint64_t tally_frees(uint64_t tally) { return tally >> 48; }

static void cpu_fold(struct kmem_cache_cpu *c, uint64_t tally)
{
	counter_add(&c->stat[SL_ALLOC_FASTPATH], tally_allocs(tally));
	counter_add(&c->stat[SL_FREE_FASTPATH], tally_frees(tally));
}

/* Under c's lock: false, doing nothing, if the thread runs on another CPU
 * now (the caller then acts as if the lock were busy). */
static bool cpu_take(struct za_kmem_cache *s, struct kmem_cache_cpu *c, int cpu)
{
	struct rseq_percpu pc = cpu_percpu(s);
	struct rseq_stack old;
	za_lock_assert_held(s->mm, &c->lock);
	if (!s->mm->percpu_rseq || c->rseq_taken)
		return true;
	if (rseq_take_retry(s->mm, &pc, (unsigned int)cpu, &old) != RSEQ_OK)
		return false;
	VM_BUG_ON(s->mm, c->freelist);
	cpu_fold(c, old.tally);
	c->freelist = old.head;
	c->rseq_taken = true;
	return true;
}

/* The same from anywhere: stop the CPU's sections, fence, take. */
void cpu_take_stopped(struct za_kmem_cache *s, struct kmem_cache_cpu *c)
{
	za_lock_assert_held(s->mm, &c->lock);
	if (!s->mm->percpu_rseq || c->rseq_taken)
		return;
	rseq_index_stop(&c->rseq_stop);
	cpu_fold(c, c->stack.tally);
	c->freelist = c->stack.head;
	rseq_stack_publish(&c->stack, (struct rseq_stack){ NULL, 0 });
	c->rseq_taken = true;
	rseq_index_start(&c->rseq_stop);        /* taken: closed to them anyway */
}

/* Under c's lock: the stack back, with the slab's extent (the pops' range
 * check) written before it opens. */
void cpu_give(struct za_kmem_cache *s, struct kmem_cache_cpu *c)
{
	za_lock_assert_held(s->mm, &c->lock);
	if (!c->rseq_taken || c->rseq_pinned)
		return;
	VM_BUG_ON(s->mm, c->freelist && !c->slab);
	rseq_stack_publish(&c->stack, (struct rseq_stack){ c->freelist, slab_tag(s->mm, c->slab) });
	c->freelist = NULL;
	c->rseq_taken = false;
}

static inline __attribute__((always_inline)) void *cpu_pop(struct za_kmem_cache *s)
{
	struct rseq_percpu pc = cpu_percpu(s);
	void *obj;
	return rseq_pop_retry(s->mm, &pc, &s->link, SLUB_ALLOC_ONE, SLUB_FOLD, &obj) == RSEQ_OK ? obj
												  : NULL;
}

/* The free pointer as the sections read and write it. */
void cache_link_init(struct za_kmem_cache *s)
{
	bool hardened = s->random != 0;
	s->link = (struct rseq_link){
		.off = s->offset,
		.key = s->random,
		.swap = hardened ? ~0ULL : 0,
		.range = hardened ? (long)offsetof(struct kmem_cache_cpu, base) -
					    (long)offsetof(struct kmem_cache_cpu, stack) : 0,
	};
}

/* What the CPUs' sheaves served: alloc_fastpath and free_fastpath with
 * 7.0's sheaves (no CPU slab under them), alloc_cpu_sheaf and
 * free_cpu_sheaf with 6.18's (the CPU slab's freelist is the fast path). */
static uint64_t sheaf_event(const struct za_kmem_cache *s, int e)
{
	bool alloc = e == SL_ALLOC_FASTPATH || e == SL_ALLOC_CPU_SHEAF;
	bool fast = e == SL_ALLOC_FASTPATH || e == SL_FREE_FASTPATH;
	uint64_t v = 0;
	if (fast != s->cpu_slab_off)
		return 0;
	for (int cpu = 0; cpu < s->mm->nr_cpus; cpu++) {
		const struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
		v += load_relaxed(alloc ? &pcs->allocs : &pcs->frees);
	}
	return v;
}

static uint64_t cache_event(const struct za_kmem_cache *s, int e)
{
	uint64_t v = load_relaxed(&s->stat[e]);
	if (e == SL_ALLOC_FASTPATH || e == SL_FREE_FASTPATH || e == SL_ALLOC_CPU_SHEAF ||
	    e == SL_FREE_CPU_SHEAF)
		v += sheaf_event(s, e);
	if (e < NR_SLAB_CPU_EVENTS)
		for (int cpu = 0; cpu < s->mm->nr_cpus; cpu++) {
			uint64_t tally = rseq_tally_load(&s->cpu_slab[cpu].stack);
			v += load_relaxed(&s->cpu_slab[cpu].stat[e]);
			v += e == SL_ALLOC_FASTPATH ? tally_allocs(tally) :
			     e == SL_FREE_FASTPATH ? tally_frees(tally) : 0;
		}
	else if (e < NR_SLAB_NODE_EVENTS)
		for (int n = 0; n < s->mm->nr_nodes; n++)
			v += load_relaxed(&s->node[n].stat[e]);
	else if (e == SL_ALLOC_SLAB || e == SL_FREE_SLAB)
		for (int n = 0; n < s->mm->nr_nodes; n++) {
			_Atomic long *count = e == SL_ALLOC_SLAB ? s->node[n].slabs_made :
								   s->node[n].slabs_freed;
			v += (uint64_t)(atomic_load(&count[0]) + atomic_load(&count[1]));
		}
	return v;
}

/* Objects in the cache's sheaves, its CPUs' and its barns': what went in
 * (refills, frees) less what came out (allocations, flushes); exact when
 * no thread is in the middle of moving one. */
unsigned long sheaf_objects(const struct za_kmem_cache *s)
{
	uint64_t in = sheaf_event(s, SL_FREE_FASTPATH) + sheaf_event(s, SL_FREE_CPU_SHEAF) +
		      load_relaxed(&s->stat[SL_SHEAF_REFILL]);
	uint64_t out = sheaf_event(s, SL_ALLOC_FASTPATH) + sheaf_event(s, SL_ALLOC_CPU_SHEAF) +
		       load_relaxed(&s->stat[SL_SHEAF_FLUSH]);
	return in > out ? (unsigned long)(in - out) : 0;
}

/* A cache goes: its events stay in the system's totals. */
void slab_stat_retire(struct za_kmem_cache *s)
{
	za_lock_assert_held(s->mm, &s->mm->caches_lock);
	for (int e = 0; e < NR_SLAB_EVENTS; e++)
		s->mm->retired_slab_events[e] += cache_event(s, e);
}

void slab_stat_fold(struct za_mm *mm, uint64_t *totals)
{
	za_lock(&mm->caches_lock);
	memcpy(totals, mm->retired_slab_events, sizeof(uint64_t) * NR_SLAB_EVENTS);
	for (const struct za_kmem_cache *s = mm->caches; s; s = s->next)
		for (int e = 0; e < NR_SLAB_EVENTS; e++)
			totals[e] += cache_event(s, e);
	za_unlock(&mm->caches_lock);
}

long long za_cache_stat(const za_cache_t *s, const char *name)
{
	for (int e = 0; e < NR_SLAB_EVENTS; e++) {
		const char *n = slab_event_names[e];
		if (!strcmp(n, name) || (!strncmp(n, "slab_", 5) && !strcmp(n + 5, name)))
			return (long long)cache_event(s, e);
	}
	errno = EINVAL;
	return -1;
}

/* ------------------------------------------------------------------------
 * Free pointers, hardened: stored XOR a per-cache key and the byte-swapped
 * address of the slot, so that a pointer written over an object by a bug
 * decodes to garbage that fails the range check instead of being followed.
 * ------------------------------------------------------------------------ */
static inline void *get_freepointer(const struct za_kmem_cache *s, void *obj)
{
	uintptr_t *slot = (uintptr_t *)((char *)obj + s->offset);
	uintptr_t v = *slot;
	if (s->random)
		v ^= s->random ^ __builtin_bswap64((uint64_t)(uintptr_t)slot);
	return (void *)v;
}

static inline void set_freepointer(const struct za_kmem_cache *s, void *obj, void *next)
{
	uintptr_t *slot = (uintptr_t *)((char *)obj + s->offset);
	uintptr_t v = (uintptr_t)next;
	if (s->random)
		v ^= s->random ^ __builtin_bswap64((uint64_t)(uintptr_t)slot);
	*slot = v;
}

void *debug_get_freepointer(const struct za_kmem_cache *s, void *obj)
{
	return get_freepointer(s, obj);
}

static __attribute__((noinline, cold)) void *corrupt_freepointer(struct za_kmem_cache *s,
								  void *obj, void *next)
{
	slab_report(s, obj, "corrupted free pointer in free object %p (decodes to %p): "
		    "the rest of this free list is dropped", obj, next);
	return NULL;
}

/* Follows a free pointer only if it decodes to an object of the same slab. */
static void *next_free(struct za_kmem_cache *s, struct za_page *slab, void *obj)
{
	void *next = get_freepointer(s, obj);
	if (likely(!s->random || object_in_slab(s, slab, next, slab_objects(slab))))
		return next;
	return corrupt_freepointer(s, obj, next);
}

/* The fast path's version: a range check against the CPU slab. */
static inline void *cpu_next_free(struct za_kmem_cache *s, struct kmem_cache_cpu *c, void *obj)
{
	void *next = get_freepointer(s, obj);
	if (likely(!s->random || !next || (size_t)((char *)next - c->base) < c->span))
		return next;
	return corrupt_freepointer(s, obj, next);
}

/* ------------------------------------------------------------------------
 * The slab state word
 * ------------------------------------------------------------------------ */
static bool slab_update(struct za_page *slab, uint64_t *old, uint64_t new)
{
	return atomic_compare_exchange_weak_explicit(&slab->slab_state, old, new,
						     memory_order_acq_rel, memory_order_acquire);
}

/* Takes the whole free list of a slab on no list, freezing it (the caller
 * becomes its CPU) or not (slub_sheaves=2's refill: the slab stays on no
 * list, full, until a free files it). */
static void *take_freelist(struct za_kmem_cache *s, struct za_page *slab, bool freeze)
{
	uint64_t old = slab_state(slab);
	VM_BUG_ON_PAGE(s->mm, st_frozen(old) || (page_flags(slab) & PG_slab_partial) ||
			      slab->slab_cache != s, slab);
	while (!slab_update(slab, &old, st_make(old, SLAB_NONE, st_objects(old), freeze)))
		;
	return slab_object(s, slab, st_head(old));
}

static void *freeze_slab(struct za_kmem_cache *s, struct za_page *slab)
{
	return take_freelist(s, slab, true);
}

/* The CPU slab ran dry: take what other CPUs freed into it meanwhile.  If
 * nothing, the slab is full: unfreeze it, on no list. */
static void *get_freelist(struct za_kmem_cache *s, struct za_page *slab)
{
	uint64_t old = slab_state(slab);
	while (!slab_update(slab, &old, st_make(old, SLAB_NONE, st_objects(old),
						  st_head(old) != SLAB_NONE)))
		;
	return slab_object(s, slab, st_head(old));
}

/* ------------------------------------------------------------------------
 * Node partial lists
 * ------------------------------------------------------------------------ */
static struct kmem_cache_node *slab_node(struct za_kmem_cache *s, struct za_page *slab)
{
	return &s->node[slab_nid(s->mm, slab)];
}

/* obj is an object start of a slab of s (ZA_DEBUG_VM's check of every
 * object handed out: inside its slab, at a multiple of the object size). */
static inline bool is_object_of(struct za_kmem_cache *s, const void *obj)
{
	struct za_page *slab = addr_in_arena(s->mm, obj) ? virt_to_slab(s->mm, obj) : NULL;
	return slab && slab->slab_cache == s && object_in_slab(s, slab, obj, slab_objects(slab));
}

void lock_node(struct kmem_cache_node *n)
{
	if (unlikely(!za_lock_try(&n->list_lock))) {
		za_lock_slow(&n->list_lock);
		node_stat(n, SL_LIST_LOCK_CONTENDED);
	}
	node_stat(n, SL_LIST_LOCK_ACQUIRE);
}

void unlock_node(struct kmem_cache_node *n)
{
	za_unlock(&n->list_lock);
}

/* A listed slab is an unfrozen slab of the node's cache with a free object
 * (frees only add to it; only a taker that removed it first pops). */
static void add_partial(struct kmem_cache_node *n, struct za_page *slab, bool tail)
{
	struct za_mm *mm = slab->slab_cache->mm;
	za_lock_assert_held(mm, &n->list_lock);
	VM_BUG_ON_PAGE(mm, (page_flags(slab) & (PG_slab | PG_slab_partial)) != PG_slab ||
			   st_frozen(slab_state(slab)) || st_head(slab_state(slab)) == SLAB_NONE ||
			   slab_node(slab->slab_cache, slab) != n, slab);
	if (tail)
		list_add_tail(&slab->lru, &n->partial);
	else
		list_add(&slab->lru, &n->partial);
	store_relaxed(&n->nr_partial, load_relaxed(&n->nr_partial) + 1);
	set_page_flags(slab, page_flags(slab) | PG_slab_partial);
}

/* add_partial under its node's lock, for a slab with a free object that
 * is on no list. */
static void add_partial_locked(struct za_kmem_cache *s, struct za_page *slab, bool tail)
{
	struct kmem_cache_node *n = slab_node(s, slab);
	lock_node(n);
	add_partial(n, slab, tail);
	unlock_node(n);
}

static void remove_partial(struct kmem_cache_node *n, struct za_page *slab)
{
	za_lock_assert_held(slab->slab_cache->mm, &n->list_lock);
	VM_BUG_ON_PAGE(slab->slab_cache->mm, !(page_flags(slab) & PG_slab_partial), slab);
	list_del(&slab->lru);
	store_relaxed(&n->nr_partial, load_relaxed(&n->nr_partial) - 1);
	set_page_flags(slab, page_flags(slab) & ~PG_slab_partial);
}

/* ------------------------------------------------------------------------
 * Slabs from and to the page allocator
 * ------------------------------------------------------------------------ */
static za_gfp_t slab_gfp(const struct za_kmem_cache *s, za_gfp_t gfp)
{
	za_gfp_t keep = gfp & (ZA_GFP_NOWAIT | ZA_GFP_THISNODE | ZA_GFP_ZONE_MASK);
	return keep | (s->flags & ZA_SLAB_RECLAIM_ACCOUNT ? ZA_GFP_RECLAIMABLE : 0);
}

/* A new slab of s; its first `take` objects (in the order its free list
 * would have them) go to objs, allocated, and only the rest are linked. */
static struct za_page *allocate_slab(struct za_kmem_cache *s, za_gfp_t gfp, int node,
				     unsigned int take, void **objs)
{
	struct za_mm *mm = s->mm;
	unsigned int order = s->order, objects = s->objects;
	void *addr = NULL;
	/* The preferred order may not wait: fall back to the smallest that fits. */
	if (order > s->min_order)
		addr = za_alloc_pages_node(mm, node, slab_gfp(s, gfp) | ZA_GFP_NOWAIT, order);
	if (!addr) {
		if (order > s->min_order)
			cache_stat(s, SL_ORDER_FALLBACK);
		order = s->min_order;
		objects = s->min_objects;
		addr = za_alloc_pages_node(mm, node, slab_gfp(s, gfp), order);
		if (!addr)
			return NULL;
	}
	struct za_page *slab = virt_to_page(mm, addr);
	for (unsigned long i = 1; i < 1UL << order; i++) {
		set_page_private(&slab[i], (unsigned long)slab);
		slab[i].slab_cache = s;
		set_page_order(&slab[i], order);
		set_page_flags(&slab[i], PG_tail);
	}
	slab->slab_cache = s;
	set_page_private(slab, 0);

	/* Link the objects; they are constructed once, here, for their whole
	 * life in the slab, as the kernel does.  A shuffled slab walks the
	 * cache's permutation from a random point, skipping indices beyond a
	 * fallback slab's objects.  Those taken are never linked: a taker
	 * that fills a sheaf from a new slab writes into no object it hands
	 * out (each may be a page of its own, its first touch the owner's).
	 * The cache's fields are read once: a store to objs could alias them. */
	const uint16_t *seq = s->random_seq;
	void (*ctor)(void *) = s->ctor;
	bool debug = s->debug;
	char *base = slab_base(s, slab);
	size_t size = s->size;
	unsigned int n = seq ? s->objects : objects;
	unsigned int start = seq ? (unsigned int)(za_cycles() % n) : 0;
	unsigned int i = 0;
	void *first = NULL, *prev = NULL;
	/* A slab in address order with nothing to construct hands out its
	 * first objects without the loop's per-object tests. */
	if (!seq && !debug && !ctor)
		for (; i < take && i < objects; i++)
			objs[i] = base + (size_t)i * size;
	unsigned int taken = i;
	for (; i < n; i++) {
		unsigned int idx = seq ? seq[(start + i) % n] : i;
		if (idx >= objects)
			continue;
		void *obj = base + idx * size;
		if (debug)
			debug_init_object(s, obj);
		if (ctor)
			ctor(obj);
		if (taken < take) {
			objs[taken++] = obj;
			continue;
		}
		if (prev)
			set_freepointer(s, prev, obj);
		else
			first = obj;
		prev = obj;
	}
	if (prev)
		set_freepointer(s, prev, NULL);
	unsigned int head = first ? slab_index(s, slab, first) : SLAB_NONE;
	atomic_store_explicit(&slab->slab_state,
			      (uint64_t)head | (uint64_t)taken << 16 | (uint64_t)objects << 32,
			      memory_order_relaxed);
	set_page_flags(slab, PG_alloc | PG_slab);
	/* Last, released: a lockless reader that finds the tag finds the
	 * slab whole (slab.h's slab info). */
	_Atomic uint32_t *info = page_slab_info(mm, slab);
	for (unsigned long page = 0; page < 1UL << order; page++)
		atomic_store_explicit(&info[page], slab_info_make(s->owner_tag, order, 0),
				      memory_order_release);

	struct kmem_cache_node *kn = slab_node(s, slab);
	atomic_fetch_add(&mm->zone_by_id[slab->zone]->nr_slab_pages, 1L << order);
	atomic_fetch_add(&kn->slabs_made[slab_count_index(s, order)], 1);
	ZA_PROBE2(slab_new, s->name, order);
	return slab;
}

/* An empty slab on no list, of no CPU, back to the page allocator. */
static void discard_slab(struct za_kmem_cache *s, struct za_page *slab)
{
	unsigned int order = page_order(slab);
	VM_BUG_ON_PAGE(s->mm, (page_flags(slab) & PG_slab_partial) || st_inuse(slab_state(slab)) ||
			      st_frozen(slab_state(slab)), slab);
	struct kmem_cache_node *n = slab_node(s, slab);
	long left = atomic_fetch_sub(&s->mm->zone_by_id[slab->zone]->nr_slab_pages, 1L << order);
	VM_BUG_ON_PAGE(s->mm, left < 1L << order, slab);
	VM_BUG_ON_PAGE(s->mm, order != s->order && order != s->min_order, slab);
	atomic_fetch_add(&n->slabs_freed[slab_count_index(s, order)], 1);
	_Atomic uint32_t *info = page_slab_info(s->mm, slab);
	for (unsigned long i = 0; i < 1UL << order; i++)         /* first: see allocate_slab */
		store_relaxed(&info[i], 0);
	for (unsigned long i = 1; i < 1UL << order; i++) {
		set_page_flags(&slab[i], 0);
		set_page_order(&slab[i], 0);
		set_page_private(&slab[i], 0);
		slab[i].slab_cache = NULL;
	}
	set_page_flags(slab, PG_alloc);
	ZA_PROBE2(slab_discard, s->name, order);
	za_free_pages(s->mm, za_page_to_virt(s->mm, slab), order);
}

/* ------------------------------------------------------------------------
 * CPU slabs
 * ------------------------------------------------------------------------ */

/*
 * Returns a CPU slab's remaining CPU freelist to the slab, unfreezes it,
 * and files it: freed if empty and the node has min_partial slabs, on the
 * node partial list if it has free objects, on no list if full.
 */
static void deactivate_slab(struct za_kmem_cache *s, struct za_page *slab, void *freelist)
{
	void *tail = NULL;
	unsigned int nfree = 0;
	VM_BUG_ON_PAGE(s->mm, !st_frozen(slab_state(slab)), slab);
	for (void *p = freelist; p; p = next_free(s, slab, p)) {
		tail = p;
		nfree++;
	}
	uint64_t old = slab_state(slab), new;
	do {
		unsigned int head = st_head(old);
		if (tail) {
			set_freepointer(s, tail, slab_object(s, slab, head));
			head = slab_index(s, slab, freelist);
		}
		new = st_make(old, head, st_inuse(old) - nfree, false);
	} while (!slab_update(slab, &old, new));

	struct kmem_cache_node *n = slab_node(s, slab);
	if (!st_inuse(new) && load_relaxed(&n->nr_partial) >= s->min_partial) {
		discard_slab(s, slab);
	} else if (st_head(new) != SLAB_NONE) {
		add_partial_locked(s, slab, true);
	}
}

/* Files a chain of slabs on their nodes' partial lists, freeing the empty
 * ones the nodes do not need: a CPU's partial slabs, at the tail (and
 * counted), or slabs a refill took off the list and left, back at the
 * head, where it found them. */
static void put_partials(struct za_kmem_cache *s, struct za_page *slab, bool refill)
{
	struct za_page *discard = NULL;
	while (slab) {
		struct za_page *next = slab->cpu_partial.next;
		struct kmem_cache_node *n = slab_node(s, slab);
		lock_node(n);
		if (!st_inuse(slab_state(slab)) && load_relaxed(&n->nr_partial) >= s->min_partial) {
			slab->cpu_partial.next = discard;
			discard = slab;
		} else {
			add_partial(n, slab, !refill);
			if (!refill)
				node_stat(n, SL_NODE_PARTIAL_FREE);
		}
		unlock_node(n);
		slab = next;
	}
	while (discard) {
		struct za_page *next = discard->cpu_partial.next;
		discard_slab(s, discard);
		discard = next;
	}
}

/* A slab that was full got a free object: put it on this CPU's partial
 * list (the CPU will soon allocate from it), draining the list to the node
 * first if it is full.  If the CPU's lock is busy, onto the node's list. */
static void put_cpu_partial(struct za_kmem_cache *s, struct za_page *slab, int cpu)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	if (!za_trylock(&c->lock)) {
		struct kmem_cache_node *n = slab_node(s, slab);
		lock_node(n);
		add_partial(n, slab, true);
		node_stat(n, SL_NODE_PARTIAL_FREE);
		unlock_node(n);
		return;
	}
	struct za_page *old = c->partial, *drain = NULL;
	unsigned long slabs = 0;
	VM_BUG_ON_PAGE(s->mm, st_frozen(slab_state(slab)) || (page_flags(slab) & PG_slab_partial), slab);
	if (old && old->cpu_partial.slabs >= s->cpu_partial_slabs) {
		drain = old;
		old = NULL;
	} else if (old) {
		slabs = old->cpu_partial.slabs;
	}
	slab->cpu_partial.slabs = slabs + 1;
	slab->cpu_partial.next = old;
	c->partial = slab;
	cpu_stat(c, SL_CPU_PARTIAL_FREE);
	if (drain) {
		put_partials(s, drain, false);
		cpu_stat(c, SL_CPU_PARTIAL_DRAIN);
	}
	za_tryunlock(&c->lock);
}

/*
 * Takes a slab from the node's partial list for this CPU, and moves up to
 * half of cpu_partial_slabs more onto the CPU's partial list, all in one
 * list_lock hold.  Under the CPU's lock.
 */
static struct za_page *get_partial(struct za_kmem_cache *s, struct kmem_cache_cpu *c, int node)
{
	struct kmem_cache_node *n = &s->node[node];
	za_lock_assert_held(s->mm, &c->lock);
	if (!load_relaxed(&n->nr_partial))
		return NULL;
	struct za_page *got = NULL;
	unsigned long slabs = c->partial ? c->partial->cpu_partial.slabs : 0;
	lock_node(n);
	while (!list_empty(&n->partial)) {
		struct za_page *slab = container_of(n->partial.next, struct za_page, lru);
		remove_partial(n, slab);
		node_stat(n, SL_NODE_PARTIAL_ALLOC);
		if (!got) {
			got = slab;
		} else {
			slab->cpu_partial.next = c->partial;
			slab->cpu_partial.slabs = ++slabs;
			c->partial = slab;
		}
		if (slabs > s->cpu_partial_slabs / 2)
			break;
	}
	unlock_node(n);
	return got;
}

/* The CPU's lock is let go while a new slab is allocated: the allocation
 * may reclaim, and reclaim takes locks (reclaim's own, the cache list)
 * that fork and za_verify hold while they wait for the CPU locks -- the
 * kernel too lets go of its CPU slab for new_slab.  Back under the lock,
 * another thread of this CPU may have refilled the CPU slab meanwhile. */
static void cpu_let_go(struct kmem_cache_cpu *c)
{
	c->rseq_pinned++;
	za_tryunlock(&c->lock);
}

static void cpu_take_back(struct kmem_cache_cpu *c)
{
	za_trylock_wait(&c->lock);
	c->rseq_pinned--;
}

/* A new slab for the CPU, or, if the CPU's slab was refilled meanwhile,
 * for its node's partial list (and NULL): the CPU keeps its own. */
static struct za_page *new_slab_unlocked(struct za_kmem_cache *s, struct kmem_cache_cpu *c,
					 za_gfp_t gfp, int node)
{
	cpu_let_go(c);
	struct za_page *slab = allocate_slab(s, gfp, node, 0, NULL);
	cpu_take_back(c);
	if (slab && c->freelist) {
		add_partial_locked(s, slab, true);
		slab = NULL;
	}
	return slab;
}

/*
 * A bulk allocation that finds no free object in the slabs of this CPU and
 * its node takes up to `want` objects straight from a new slab, without
 * linking them (allocate_slab), as the kernel's alloc_from_new_slab does;
 * the slab goes to no CPU: onto its node's partial list with the objects
 * left, or, full, onto no list.  Returns how many it took, 0 without memory.
 */
static unsigned int take_from_new_slab(struct za_kmem_cache *s, za_gfp_t gfp, int node,
				       unsigned int want, void **objs)
{
	struct za_page *slab = allocate_slab(s, gfp, node, want, objs);
	unsigned int got = slab ? st_inuse(slab_state(slab)) : 0;
	if (slab && got < slab_objects(slab))
		add_partial_locked(s, slab, false);
	return got;
}

static unsigned int bulk_from_new_slab(struct za_kmem_cache *s, struct kmem_cache_cpu *c,
				       za_gfp_t gfp, int node, unsigned int want, void **objs)
{
	cpu_let_go(c);
	unsigned int got = take_from_new_slab(s, gfp, node, want, objs);
	cpu_take_back(c);
	return got;
}

/* The frozen slab becomes the CPU slab; obj, its first free object, is
 * returned and the rest become the CPU freelist. */
static void *install_cpu_slab(struct za_kmem_cache *s, struct kmem_cache_cpu *c,
			      struct za_page *slab, void *obj)
{
	VM_BUG_ON_PAGE(s->mm, !st_frozen(slab_state(slab)) || slab->slab_cache != s, slab);
	c->slab = slab;
	c->base = slab_base(s, slab);
	c->objects = slab_objects(slab);
	c->span = (size_t)c->objects * s->size;
	c->freelist = next_free(s, slab, obj);
	return obj;
}

/* The CPU freelist is empty: refill it from what other CPUs freed into the
 * CPU slab, else from a partial slab of the CPU or its node.  NULL if none
 * has a free object.  Under the CPU's lock. */
static void *refill_cpu_freelist(struct za_kmem_cache *s, struct kmem_cache_cpu *c, int node)
{
	struct za_page *slab = c->slab;
	void *obj;
	za_lock_assert_held(s->mm, &c->lock);
	VM_BUG_ON(s->mm, c->freelist);
	cpu_stat(c, SL_ALLOC_SLOWPATH);
	if (slab) {
		if ((obj = get_freelist(s, slab))) {
			cpu_stat(c, SL_ALLOC_REFILL);
			c->freelist = next_free(s, slab, obj);
			return obj;
		}
		c->slab = NULL;         /* full: now on no list */
	}
	while ((slab = c->partial)) {
		c->partial = slab->cpu_partial.next;
		if ((obj = freeze_slab(s, slab))) {
			cpu_stat(c, SL_CPU_PARTIAL_ALLOC);
			return install_cpu_slab(s, c, slab, obj);
		}
	}
	if ((slab = get_partial(s, c, node)))
		return install_cpu_slab(s, c, slab, freeze_slab(s, slab));
	return NULL;
}

/* No slab of the CPU or its node has a free object: a new CPU slab.
 * Under the CPU's lock, let go meanwhile. */
static void *new_cpu_slab(struct za_kmem_cache *s, struct kmem_cache_cpu *c, za_gfp_t gfp,
			  int node)
{
	struct za_page *slab = new_slab_unlocked(s, c, gfp, node);
	void *obj = c->freelist;
	if (obj) {                      /* refilled meanwhile */
		c->freelist = next_free(s, c->slab, obj);
		return obj;
	}
	if (!slab)
		return NULL;
	if (c->slab) {                  /* installed meanwhile, and used up */
		cpu_stat(c, SL_DEACTIVATE);
		deactivate_slab(s, c->slab, NULL);
	}
	return install_cpu_slab(s, c, slab, freeze_slab(s, slab));
}

/* The CPU freelist is empty.  Under the CPU's lock (let go while a new
 * slab is allocated). */
static void *alloc_slowpath(struct za_kmem_cache *s, struct kmem_cache_cpu *c, za_gfp_t gfp,
			    int node)
{
	void *obj = refill_cpu_freelist(s, c, node);
	return obj ? obj : new_cpu_slab(s, c, gfp, node);
}

/* ------------------------------------------------------------------------
 * Objects straight from a node's slabs: when this CPU's lock is busy, and
 * for debug caches, which have no CPU freelists so that every operation is
 * seen (and checked) under the list_lock.
 * ------------------------------------------------------------------------ */

/* Takes one object off the free list of a slab the caller has taken off
 * every list (or that nobody else knows yet): the only taker, so the pop
 * cannot suffer ABA; frees may push concurrently. */
static void *pop_object(struct za_kmem_cache *s, struct za_page *slab, bool *emptied)
{
	uint64_t old = slab_state(slab), new;
	void *obj;
	do {
		if (st_head(old) == SLAB_NONE)
			return NULL;
		obj = slab_object(s, slab, st_head(old));
		void *next = next_free(s, slab, obj);
		new = st_make(old, next ? slab_index(s, slab, next) : SLAB_NONE, st_inuse(old) + 1,
			      st_frozen(old));
	} while (!slab_update(slab, &old, new));
	*emptied = st_head(new) == SLAB_NONE;
	return obj;
}

/*
 * The slab is taken off the list before the pop: a slab with no free
 * object must be on no list when a free can see it, since that free then
 * files it on a CPU partial list (the kernel never pops from listed slabs
 * of caches with CPU partials; we do, when the CPU's lock is busy).
 */
static void *alloc_single(struct za_kmem_cache *s, za_gfp_t gfp, int node)
{
	struct kmem_cache_node *n = &s->node[node];
	bool emptied;
	void *obj = NULL;
	lock_node(n);
	while (!obj && !list_empty(&n->partial)) {
		struct za_page *slab = container_of(n->partial.next, struct za_page, lru);
		remove_partial(n, slab);
		node_stat(n, SL_NODE_PARTIAL_ALLOC);
		if ((obj = pop_object(s, slab, &emptied)) && !emptied)
			add_partial(n, slab, false);
	}
	unlock_node(n);
	if (obj)
		return obj;

	struct za_page *slab = allocate_slab(s, gfp, node, 0, NULL);
	if (!slab)
		return NULL;
	obj = pop_object(s, slab, &emptied);
	if (!emptied)
		add_partial_locked(s, slab, false);
	return obj;
}

/* ------------------------------------------------------------------------
 * Freeing into a slab that is not this CPU's (the kernel's __slab_free)
 * ------------------------------------------------------------------------ */
static bool has_cpu_partial(const struct za_kmem_cache *s)
{
	return s->cpu_partial_slabs > 0;
}

/*
 * Frees a chain of cnt objects of one slab, linked head .. tail, with one
 * update of the slab's state (the kernel's __slab_free with a detached
 * freelist).
 */
static void free_slowpath(struct za_kmem_cache *s, struct za_page *slab, void *head, void *tail,
			  unsigned int cnt, int cpu)
{
	struct kmem_cache_node *n = NULL;
	bool on_partial = false, was_frozen;
	unsigned int prior, inuse;
	uint64_t old = slab_state(slab), new;
	unsigned int head_idx = slab_index(s, slab, head);
	if (!s->cpu_slab_off)           /* 7.0 counts objects, in the callers */
		cache_stat(s, SL_FREE_SLOWPATH);
	do {
		if (n) {
			unlock_node(n);
			n = NULL;
		}
		prior = st_head(old);
		was_frozen = st_frozen(old);
		inuse = st_inuse(old) - cnt;
		set_freepointer(s, tail, slab_object(s, slab, prior));
		new = st_make(old, head_idx, inuse, was_frozen);
		if ((!inuse || prior == SLAB_NONE) && !was_frozen &&
		    (!has_cpu_partial(s) || prior != SLAB_NONE)) {
			n = slab_node(s, slab);
			lock_node(n);
			on_partial = page_flags(slab) & PG_slab_partial;
		}
	} while (!slab_update(slab, &old, new));

	if (!n) {
		if (was_frozen)
			cache_stat(s, SL_FREE_REMOTE);     /* into another CPU's slab */
		else if (prior == SLAB_NONE)
			put_cpu_partial(s, slab, cpu);     /* was full */
		return;
	}
	if (prior != SLAB_NONE && !on_partial) {
		unlock_node(n);         /* on some CPU's partial list: its CPU files it */
		return;
	}
	if (!inuse && load_relaxed(&n->nr_partial) >= s->min_partial) {
		if (prior != SLAB_NONE)
			remove_partial(n, slab);
		unlock_node(n);
		discard_slab(s, slab);
		return;
	}
	if (prior == SLAB_NONE) {
		add_partial(n, slab, true);
		node_stat(n, SL_NODE_PARTIAL_FREE);
	}
	unlock_node(n);
}

/* Frees into a node's slab under list_lock: debug caches, whose checks
 * see the slab's free list stable. */
static bool free_single(struct za_kmem_cache *s, struct za_page *slab, void *obj, void *caller)
{
	struct kmem_cache_node *n = slab_node(s, slab);
	lock_node(n);
	uint64_t old = slab_state(slab), new;
	if (!debug_free_check(s, slab, obj, caller, slab_object(s, slab, st_head(old)))) {
		unlock_node(n);
		return false;
	}
	do {
		set_freepointer(s, obj, slab_object(s, slab, st_head(old)));
		new = st_make(old, slab_index(s, slab, obj), st_inuse(old) - 1, false);
	} while (!slab_update(slab, &old, new));
	bool listed = page_flags(slab) & PG_slab_partial;
	if (!st_inuse(new) && load_relaxed(&n->nr_partial) >= s->min_partial) {
		if (listed)
			remove_partial(n, slab);
		unlock_node(n);
		discard_slab(s, slab);
		return true;
	}
	if (!listed)
		add_partial(n, slab, true);
	unlock_node(n);
	return true;
}

/* ------------------------------------------------------------------------
 * The entry points
 * ------------------------------------------------------------------------ */
/* The CPU freelist under its lock (all of percpu=lock; rseq's misses):
 * false if the lock is busy, or rseq's thread runs on another CPU now. */
static inline __attribute__((always_inline)) bool cpu_alloc_locked(struct za_kmem_cache *s,
								   struct kmem_cache_cpu *c, int cpu,
			     za_gfp_t gfp, int node, void **objp)
{
	if (unlikely(!za_trylock(&c->lock)))
		return false;
	if (unlikely(!cpu_take(s, c, cpu))) {
		za_tryunlock(&c->lock);
		return false;
	}
	void *obj = c->freelist;
	if (likely(obj)) {
		c->freelist = cpu_next_free(s, c, obj);
		cpu_stat(c, SL_ALLOC_FASTPATH);
	} else {
		obj = alloc_slowpath(s, c, gfp, node);
	}
	cpu_give(s, c);
	za_tryunlock(&c->lock);
	*objp = obj;
	return true;
}

/* The CPU slab's allocation under the CPU's lock, else (busy) straight
 * from the node's lists; NULL without memory. */
static void *cpu_slab_alloc_locked(struct za_kmem_cache *s, za_gfp_t gfp, int cpu, int node)
{
	void *obj;
	if (!cpu_alloc_locked(s, &s->cpu_slab[cpu], cpu, gfp, node, &obj))
		obj = alloc_single(s, gfp, node);
	return obj;
}

/* The same, the restartable pop first. */
static inline __attribute__((always_inline)) void *cpu_slab_alloc(struct za_kmem_cache *s,
								  za_gfp_t gfp, int cpu, int node)
{
	void *obj;
	if (likely(percpu_sections(s->mm)) && likely(obj = cpu_pop(s)))
		return obj;     /* counted in the stack's tally */
	return cpu_slab_alloc_locked(s, gfp, cpu, node);
}

/* An object from the slabs, below the sheaves (and for sheaves' memory,
 * and bulk allocations whose CPU lock was busy): for a debug cache checked
 * under its node's lock; else from the CPU slab, or with slub_sheaves=2
 * straight from the node's lists. */
static __attribute__((noinline)) void *slab_paths_alloc(struct za_kmem_cache *s, za_gfp_t gfp,
							int cpu, int node, void *caller)
{
	void *obj;
	if (unlikely(s->debug)) {
		/* An object found corrupt is reported and left out of use. */
		while ((obj = alloc_single(s, gfp, node)) && !debug_alloc_check(s, obj, caller))
			;
		return obj;
	}
	if (s->cpu_slab_off) {
		cache_stat(s, SL_ALLOC_SLOWPATH);       /* what the sheaves missed */
		return alloc_single(s, gfp, node);
	}
	return cpu_slab_alloc(s, gfp, cpu, node);
}

void *slab_alloc_nosheaf(struct za_kmem_cache *s, za_gfp_t gfp, int node)
{
	return slab_paths_alloc(s, gfp, this_cpu(s->mm), node, __builtin_return_address(0));
}

/* A debug cache's or a cache with sheaves: the sheaves first. */
static __attribute__((noinline)) void *alloc_special(struct za_kmem_cache *s, za_gfp_t gfp,
						     int cpu, int node, void *caller)
{
	void *obj = s->sheaf_capacity ? alloc_from_pcs(s, gfp, cpu) : NULL;
	return obj ? obj : slab_paths_alloc(s, gfp, cpu, node, caller);
}

/* Everything but the CPU slab's restartable pop, out of line: the hit
 * path saves no registers for it, and reads the CPU only in the section. */
static __attribute__((noinline)) void *cache_alloc_slow(struct za_kmem_cache *s, za_gfp_t gfp,
							void *caller)
{
	struct za_mm *mm = s->mm;
	int cpu = this_cpu(mm), node = mm->cpu_node[cpu];
	/* One test for both: a cache with sheaves never debugs. */
	void *obj = unlikely(s->debug | s->sheaf_capacity) ? alloc_special(s, gfp, cpu, node, caller)
							    : cpu_slab_alloc_locked(s, gfp, cpu, node);
	if (unlikely(!obj)) {
		za_set_last_error("za_cache_alloc(%s): out of memory", s->name);
		errno = ENOMEM;
	}
	return obj;
}

static inline __attribute__((always_inline)) void *cache_alloc(struct za_kmem_cache *s,
							       za_gfp_t gfp, void *caller)
{
	void *obj;
	if (unlikely(s->debug | s->sheaf_capacity) || unlikely(!percpu_sections(s->mm)) ||
	    unlikely(!(obj = cpu_pop(s))))
		obj = cache_alloc_slow(s, gfp, caller);
	if (unlikely(!obj))
		return NULL;
	VM_BUG_ON(s->mm, !is_object_of(s, obj));
	if (gfp & ZA_GFP_ZERO)
		memset(obj, 0, s->object_size);
	return obj;
}

void *za_cache_alloc(za_cache_t *s, za_gfp_t gfp)
{
	return cache_alloc(s, gfp, __builtin_return_address(0));
}

/* Reports why obj, which failed a check, is not an object of this cache. */
static __attribute__((noinline, cold)) void report_bad_object(struct za_kmem_cache *s,
							      const void *obj)
{
	struct za_mm *mm = s->mm;
	const char *why;
	struct za_page *slab;
	if (!addr_in_arena(mm, obj))
		why = "not an object of any cache (outside the arena)";
	else if (!(slab = virt_to_slab(mm, obj)))
		why = "not an object of any cache (not in a slab)";
	else if (slab->slab_cache != s)
		why = slab->slab_cache ? "an object of another cache" : "not an object of any cache";
	else
		why = "not the start of an object";
	cache_stat(s, SL_BAD_FREE);
	slab_report(s, obj, "free of %p: %s", obj, why);
}

/* Every free but the CPU-slab fast path: debug caches, busy CPU locks,
 * other CPUs' slabs.  Checks that obj is an object start of slab first. */
static __attribute__((noinline)) int free_other(struct za_kmem_cache *s, struct za_page *slab,
						void *obj, void *caller)
{
	if (!object_in_slab(s, slab, obj, slab_objects(slab))) {
		report_bad_object(s, obj);
		errno = EINVAL;
		return -1;
	}
	if (unlikely(s->debug)) {
		if (!free_single(s, slab, obj, caller)) {
			cache_stat(s, SL_BAD_FREE);
			errno = EINVAL;
			return -1;
		}
		return 0;
	}
	if (s->cpu_slab_off)
		cache_stat(s, SL_FREE_SLOWPATH);
	free_slowpath(s, slab, obj, obj, 1, this_cpu(s->mm));
	return 0;
}

static __attribute__((noinline, cold)) int double_free(struct za_kmem_cache *s, void *obj)
{
	cache_stat(s, SL_BAD_FREE);
	slab_report(s, obj, "double free of %p", obj);
	errno = EINVAL;
	return -1;
}

/*
 * Frees an object of slab.  The fast path -- the slab is this CPU's -- needs
 * only the CPU slab's range to prove obj an object start; it also catches
 * the naive double free of the object freed last.
 */
/* percpu=rseq: an object start of slab goes onto the CPU's stack if slab
 * is the CPU slab (0); not the CPU slab: 1; any other failure: -1. */
static inline __attribute__((always_inline)) int cpu_push(struct za_kmem_cache *s,
							  struct za_page *slab, void *obj)
{
	size_t idx, off = (size_t)((uintptr_t)obj - (uintptr_t)slab_base(s, slab));
	if (unlikely(!slab_object_at(s, off, slab_objects(slab), &idx)))
		return 1;       /* free_other checks and reports */
	struct rseq_percpu pc = cpu_percpu(s);
	int st = rseq_push_retry(s->mm, &pc, &s->link, obj, obj, SLUB_FREE_ONE, SLUB_FOLD,
				 SLUB_TAG_MASK, slab_tag(s->mm, slab));
	return st == RSEQ_OK ? 0 : st == RSEQ_MISMATCH ? 1 : -1;
}

/* The classic CPU-slab free under the lock: 1 if obj is not the CPU
 * slab's (or the lock is busy), else what the free returns. */
static int cpu_free_locked(struct za_kmem_cache *s, struct za_page *slab, void *obj, int cpu)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	int ret = 1;
	if (!za_trylock(&c->lock))
		return 1;
	if (likely(cpu_take(s, c, cpu)) && likely(slab == c->slab)) {
		size_t idx, off = (size_t)((uintptr_t)obj - (uintptr_t)c->base);
		if (unlikely(!slab_object_at(s, off, c->objects, &idx))) {
			ret = 1;        /* free_other checks and reports */
		} else if (unlikely(obj == c->freelist)) {
			ret = -1;
		} else {
			VM_BUG_ON_PAGE(s->mm, !st_frozen(slab_state(slab)), slab);   /* the CPU's own */
			set_freepointer(s, obj, c->freelist);
			c->freelist = obj;
			cpu_stat(c, SL_FREE_FASTPATH);
			ret = 0;
		}
	}
	cpu_give(s, c);
	za_tryunlock(&c->lock);
	return ret;
}

/* After the push: r as cpu_push returned it (-1 also without sections). */
static __attribute__((noinline)) int cpu_slab_free_slow(struct za_kmem_cache *s,
							struct za_page *slab, void *obj,
							void *caller, int r)
{
	if (r < 0 && (r = cpu_free_locked(s, slab, obj, this_cpu(s->mm))) <= 0)
		return r ? double_free(s, obj) : 0;
	return free_other(s, slab, obj, caller);
}

/* The CPU slab's free: the restartable push, else under the CPU's lock,
 * else (another slab, or busy) into its slab. */
static inline __attribute__((always_inline)) int cpu_slab_free(struct za_kmem_cache *s,
							       struct za_page *slab, void *obj,
							       void *caller)
{
	int r = percpu_sections(s->mm) ? cpu_push(s, slab, obj) : -1;
	if (likely(r == 0))
		return 0;
	return cpu_slab_free_slow(s, slab, obj, caller, r);
}

/* A debug cache's free, or one with sheaves: an object start of slab goes
 * into this CPU's main sheaf if it can, everything else below them. */
static __attribute__((noinline)) int free_special(struct za_kmem_cache *s, struct za_page *slab,
						  void *obj, void *caller)
{
	if (s->debug)
		return free_other(s, slab, obj, caller);
	size_t idx, off = (size_t)((uintptr_t)obj - (uintptr_t)slab_base(s, slab));
	if (unlikely(!slab_object_at(s, off, slab_objects(slab), &idx)))
		return free_other(s, slab, obj, caller);       /* reports */
	int r = free_to_pcs(s, slab, obj, this_cpu(s->mm));
	if (likely(r == 0))
		return 0;
	if (r < 0)
		return double_free(s, obj);
	return s->cpu_slab_off ? free_other(s, slab, obj, caller) : cpu_slab_free(s, slab, obj, caller);
}

static inline __attribute__((always_inline)) int cache_free(struct za_kmem_cache *s,
							    struct za_page *slab, void *obj,
							    void *caller)
{
	if (unlikely(s->debug | s->sheaf_capacity))
		return free_special(s, slab, obj, caller);
	return cpu_slab_free(s, slab, obj, caller);
}

int za_cache_free(za_cache_t *s, void *obj)
{
	if (!obj)
		return 0;
	struct za_mm *mm = s->mm;
	struct za_page *slab;
	if (unlikely(!addr_in_arena(mm, obj) || !(slab = virt_to_slab(mm, obj)) ||
		     slab->slab_cache != s)) {
		report_bad_object(s, obj);
		errno = EINVAL;
		return -1;
	}
	return cache_free(s, slab, obj, __builtin_return_address(0));
}

int za_cache_free_rcu(za_cache_t *s, void *obj)
{
	if (!obj)
		return 0;
	struct za_mm *mm = s->mm;
	struct za_page *slab;
	if (unlikely(!addr_in_arena(mm, obj) || !(slab = virt_to_slab(mm, obj)) ||
		     slab->slab_cache != s || !object_in_slab(s, slab, obj, slab_objects(slab)))) {
		report_bad_object(s, obj);
		errno = EINVAL;
		return -1;
	}
	if (s->sheaf_capacity) {
		if (free_to_pcs_rcu(s, slab, obj, this_cpu(mm)))
			return 0;
		cache_stat(s, SL_FREE_RCU_SHEAF_FAIL);
	}
	return rcu_batch_add(s, obj);
}

/* For kfree: the cache comes from the slab. */
int slab_free_object(struct za_page *slab, void *obj, void *caller)
{
	return cache_free(slab->slab_cache, slab, obj, caller);
}

void *slab_alloc_caller(za_cache_t *s, za_gfp_t gfp, void *caller)
{
	return cache_alloc(s, gfp, caller);
}

/* Fills objs from this CPU's slabs, refilling as they run dry, under the
 * CPU's lock; returns how many it got (fewer only without memory). */
static size_t cpu_alloc_bulk(struct za_kmem_cache *s, struct kmem_cache_cpu *c, za_gfp_t gfp,
			     int node, size_t n, void **objs)
{
	size_t i = 0, fast = 0;
	za_lock_assert_held(s->mm, &c->lock);
	while (i < n) {
		void *obj = c->freelist;
		if (likely(obj)) {
			c->freelist = cpu_next_free(s, c, obj);
			fast++;
		} else if (!(obj = refill_cpu_freelist(s, c, node))) {
			if (n - i > 1) {
				size_t want = n - i < s->objects ? n - i : s->objects;
				unsigned int got = bulk_from_new_slab(s, c, gfp, node,
								      (unsigned int)want, objs + i);
				if (!got)
					break;
				for (unsigned int k = 0; k < got; k++)
					VM_BUG_ON(s->mm, !is_object_of(s, objs[i + k]));
				counter_add(&c->stat[SL_ALLOC_FROM_NEW_SLAB], got);
				i += got;
				continue;
			}
			if (!(obj = new_cpu_slab(s, c, gfp, node)))
				break;
		}
		VM_BUG_ON(s->mm, !is_object_of(s, obj));
		objs[i++] = obj;
	}
	counter_add(&c->stat[SL_ALLOC_FASTPATH], fast);
	return i;
}

/*
 * slub_sheaves=2: n objects for a sheaf or a bulk allocation, from the
 * node's partial slabs -- taken off the list under one list_lock hold,
 * enough of them for n, then each emptied of its whole free list (the
 * kernel's __refill_objects_node) -- then from new slabs
 * (alloc_from_new_slab).  Returns how many: fewer only without memory.
 */
static unsigned int refill_from_partial(struct za_kmem_cache *s, int node, unsigned int n,
					void **objs)
{
	struct kmem_cache_node *kn = &s->node[node];
	struct za_page *taken = NULL, **tail = &taken;
	unsigned int counted = 0, got = 0;
	if (!load_relaxed(&kn->nr_partial))
		return 0;
	lock_node(kn);
	while (counted < n && !list_empty(&kn->partial)) {
		struct za_page *slab = container_of(kn->partial.next, struct za_page, lru);
		uint64_t st = slab_state(slab);
		remove_partial(kn, slab);
		node_stat(kn, SL_NODE_PARTIAL_ALLOC);
		counted += st_objects(st) - st_inuse(st);      /* frees may add more */
		slab->cpu_partial.next = NULL;
		*tail = slab;
		tail = &slab->cpu_partial.next;
	}
	unlock_node(kn);
	while (taken && got < n) {
		struct za_page *slab = taken;
		taken = slab->cpu_partial.next;
		void *obj = take_freelist(s, slab, false), *last = NULL;
		for (; obj && got < n; obj = next_free(s, slab, obj))
			objs[got++] = obj;
		unsigned int rest = 0;
		for (void *p = obj; p; p = next_free(s, slab, p), rest++)
			last = p;
		if (rest)               /* more than asked: back, as one chain */
			free_slowpath(s, slab, obj, last, rest, this_cpu(s->mm));
	}
	put_partials(s, taken, true);   /* more free objects than counted */
	return got;
}

static unsigned int refill_objects(struct za_kmem_cache *s, za_gfp_t gfp, int node, unsigned int n,
				   void **objs)
{
	unsigned int got = refill_from_partial(s, node, n, objs), more = 1;
	while (got < n && (more = take_from_new_slab(s, gfp, node, n - got, objs + got)))
		got += more;
	return got;
}

/* The CPU slab's bulk path: n objects under one hold of the CPU's lock,
 * one by one if it is busy (or the cache debugs); all or none. */
static bool cpu_slab_alloc_bulk(struct za_kmem_cache *s, za_gfp_t gfp, size_t n, void **objs,
				void *caller)
{
	struct za_mm *mm = s->mm;
	int cpu = this_cpu(mm), node = mm->cpu_node[cpu];
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	size_t got = 0;
	if (likely(!s->debug) && za_trylock(&c->lock)) {
		if (cpu_take(s, c, cpu))
			got = cpu_alloc_bulk(s, c, gfp, node, n, objs);
		cpu_give(s, c);
		za_tryunlock(&c->lock);
	}
	for (; got < n; got++)
		if (!(objs[got] = slab_paths_alloc(s, gfp, cpu, node, caller)))
			break;
	if (got < n)
		slab_free_objects(s, got, objs);
	return got == n;
}

/* n objects from the slabs, below the sheaves, all or none. */
static bool slab_alloc_bulk(struct za_kmem_cache *s, za_gfp_t gfp, size_t n, void **objs,
			    void *caller)
{
	if (!s->cpu_slab_off)
		return cpu_slab_alloc_bulk(s, gfp, n, objs, caller);
	size_t got = refill_objects(s, gfp, s->mm->cpu_node[this_cpu(s->mm)], (unsigned int)n, objs);
	cache_stat_add(s, SL_ALLOC_SLOWPATH, got);
	if (got < n)
		slab_free_objects(s, got, objs);
	return got == n;
}

unsigned int slab_refill_objects(struct za_kmem_cache *s, za_gfp_t gfp, int node, unsigned int n,
				 void **objs)
{
	if (s->cpu_slab_off)
		return refill_objects(s, gfp, node, n, objs);
	return slab_alloc_bulk(s, gfp, n, objs, __builtin_return_address(0)) ? n : 0;
}

/*
 * The kernel's kmem_cache_alloc_bulk: what this CPU's sheaves hold, then
 * the rest from the slabs (the CPU slab's under one hold of its lock).
 */
size_t za_cache_alloc_bulk(za_cache_t *s, za_gfp_t gfp, size_t n, void **objs)
{
	size_t got = s->sheaf_capacity ? alloc_from_pcs_bulk(s, this_cpu(s->mm), n, objs) : 0;
	if (got < n && !slab_alloc_bulk(s, gfp & ~ZA_GFP_ZERO, n - got, objs + got,
					__builtin_return_address(0))) {
		za_cache_free_bulk(s, got, objs);
		za_set_last_error("za_cache_alloc_bulk(%s): out of memory", s->name);
		errno = ENOMEM;
		return 0;
	}
	if (gfp & ZA_GFP_ZERO)
		for (size_t i = 0; i < n; i++)
			memset(objs[i], 0, s->object_size);
	return n;
}

/* Frees cnt objects of one slab, already linked head .. tail: onto the CPU
 * freelist if the slab is this CPU's, else with one state update. */
static void free_chain(struct za_kmem_cache *s, struct za_page *slab, void *head, void *tail,
		       unsigned int cnt)
{
	int cpu = this_cpu(s->mm);
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	if (za_trylock(&c->lock)) {
		bool mine = cpu_take(s, c, cpu) && slab == c->slab;
		if (mine) {
			set_freepointer(s, tail, c->freelist);
			c->freelist = head;
			counter_add(&c->stat[SL_FREE_FASTPATH], cnt);
		}
		cpu_give(s, c);
		za_tryunlock(&c->lock);
		if (mine)
			return;
	}
	free_slowpath(s, slab, head, tail, cnt, cpu);
}

/*
 * The kernel's kmem_cache_free_bulk: consecutive objects of one slab are
 * linked into a detached chain and freed with one update.  Each object is
 * checked as za_cache_free checks it; debug caches free one by one.
 */
/* The slab of a bulk free's first object, and the slab's start and count,
 * which hold while it has objects out; NULL if head is not an object start
 * of this cache's slabs (or the cache debugs): za_cache_free checks it. */
static struct za_page *chain_slab(struct za_kmem_cache *s, const void *head, const char **base,
				  unsigned int *objects)
{
	struct za_page *slab;
	if (s->debug || !addr_in_arena(s->mm, head) || !(slab = virt_to_slab(s->mm, head)) ||
	    slab->slab_cache != s)
		return NULL;
	*base = slab_base(s, slab);
	*objects = slab_objects(slab);
	return object_at(s, *base, *objects, head) ? slab : NULL;
}

void slab_free_objects(struct za_kmem_cache *s, size_t n, void **objs)
{
	size_t i = 0;
	while (i < n) {
		void *head = objs[i++];
		const char *base;
		unsigned int objects;
		if (!head)
			continue;
		struct za_page *slab = chain_slab(s, head, &base, &objects);
		if (!slab) {
			za_cache_free(s, head);         /* checks, reports */
			continue;
		}
		/* An object start of this slab's memory needs no other check. */
		void *tail = head;
		unsigned int cnt = 1;
		for (; i < n && objs[i] && objs[i] != tail && object_at(s, base, objects, objs[i]);
		     i++, cnt++) {
			set_freepointer(s, tail, objs[i]);
			tail = objs[i];
		}
		free_chain(s, slab, head, tail, cnt);
	}
}

#define FREE_BATCH 32

/* A batch of checked objects of this node: what the sheaves take, the
 * rest to the slabs. */
static void free_batch(struct za_kmem_cache *s, int cpu, size_t n, void **objs)
{
	size_t done = free_to_pcs_bulk(s, cpu, n, objs);
	if (s->cpu_slab_off)
		cache_stat_add(s, SL_FREE_SLOWPATH, n - done);
	slab_free_objects(s, n - done, objs + done);
}

void za_cache_free_bulk(za_cache_t *s, size_t n, void **objs)
{
	if (!s->sheaf_capacity) {
		slab_free_objects(s, n, objs);
		return;
	}
	struct za_mm *mm = s->mm;
	int cpu = this_cpu(mm);
	void *batch[FREE_BATCH];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *base;
		unsigned int objects;
		struct za_page *slab = objs[i] ? chain_slab(s, objs[i], &base, &objects) : NULL;
		if (!slab || slab_nid(mm, slab) != mm->cpu_node[cpu]) {
			za_cache_free(s, objs[i]);      /* reports, or another node's */
			continue;
		}
		batch[k++] = objs[i];
		if (k == FREE_BATCH) {
			free_batch(s, cpu, k, batch);
			k = 0;
		}
	}
	free_batch(s, cpu, k, batch);
}

/* ------------------------------------------------------------------------
 * Shrinking and destroying
 * ------------------------------------------------------------------------ */
/* Returns the CPU's slabs to the node lists.  Without wait, a CPU whose lock
 * is busy keeps them: reclaim must not wait for a lock its own thread may
 * hold (it can run inside a slab allocation, under the CPU's lock). */
static void flush_cpu_slab(struct za_kmem_cache *s, int cpu, bool wait)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	if (wait)
		za_trylock_wait(&c->lock);
	else if (!za_trylock(&c->lock))
		return;
	cpu_take_stopped(s, c);
	if (c->slab) {
		cpu_stat(c, SL_DEACTIVATE);
		deactivate_slab(s, c->slab, c->freelist);
	}
	c->slab = NULL;
	c->freelist = NULL;
	struct za_page *partial = c->partial;
	c->partial = NULL;
	put_partials(s, partial, false);
	cpu_give(s, c);
	za_tryunlock(&c->lock);
}

/* Every CPU's sheaves and every barn of the cache back to the slabs. */
static void flush_sheaves(struct za_kmem_cache *s, bool wait)
{
	for (int cpu = 0; cpu < s->mm->nr_cpus; cpu++)
		pcs_flush_cpu(s, cpu, wait);
	barn_shrink(s);
}

/*
 * A node's partial slabs sorted as the kernel's kmem_cache_shrink sorts
 * them: those with 1..SHRINK_PROMOTE_MAX free objects to the head, fewest
 * free first, so that allocations fill the fullest and the emptiest are
 * left to the frees, empty out and go back; the empty ones freed -- all,
 * or (keep_min) only beyond min_partial.  Returns the slabs freed.
 */
#define SHRINK_PROMOTE_MAX 32

static long sort_partial(struct za_kmem_cache *s, struct kmem_cache_node *n, bool keep_min)
{
	struct za_list promote[SHRINK_PROMOTE_MAX], empty;
	long freed = 0;
	list_init(&empty);
	for (int i = 0; i < SHRINK_PROMOTE_MAX; i++)
		list_init(&promote[i]);
	lock_node(n);
	for (struct za_list *l = n->partial.next, *next; l != &n->partial; l = next) {
		next = l->next;
		struct za_page *slab = container_of(l, struct za_page, lru);
		unsigned int inuse = st_inuse(slab_state(slab)), free = slab_objects(slab) - inuse;
		if (!inuse && (!keep_min || load_relaxed(&n->nr_partial) > s->min_partial)) {
			remove_partial(n, slab);
			list_add(&slab->lru, &empty);
		} else if (inuse && free <= SHRINK_PROMOTE_MAX) {
			list_del(&slab->lru);
			list_add_tail(&slab->lru, &promote[free - 1]);
		}
	}
	for (int i = SHRINK_PROMOTE_MAX; i-- > 0;)
		list_splice(&promote[i], &n->partial);
	unlock_node(n);
	while (!list_empty(&empty)) {
		struct za_page *slab = container_of(empty.next, struct za_page, lru);
		list_del(&slab->lru);
		discard_slab(s, slab);
		freed++;
	}
	return freed;
}

/* Empties every CPU's slabs onto the node lists, sorts them and frees
 * every empty slab, whatever min_partial says (the sheaves flushed first,
 * by the callers).  Returns the slabs freed. */
static long shrink_cache(struct za_kmem_cache *s, bool wait)
{
	long freed = 0;
	for (int cpu = 0; cpu < s->mm->nr_cpus; cpu++)
		flush_cpu_slab(s, cpu, wait);
	for (int node = 0; node < s->mm->nr_nodes; node++)
		freed += sort_partial(s, &s->node[node], false);
	return freed;
}

/* Every cache's partial slabs sorted, the fullest first, and its empty
 * ones beyond min_partial freed: the malloc's busy rounds, against the
 * fragmentation a phase of many objects leaves.  Returns the slabs freed. */
long slab_sort_partials(struct za_mm *mm)
{
	long freed = 0;
	za_lock(&mm->caches_lock);
	for (struct za_kmem_cache *s = mm->caches; s; s = s->next)
		for (int node = 0; node < mm->nr_nodes; node++)
			freed += sort_partial(s, &s->node[node], true);
	za_unlock(&mm->caches_lock);
	return freed;
}

long za_cache_shrink(za_cache_t *s)
{
	flush_sheaves(s, true);
	return shrink_cache(s, true);
}

/* Sheaves first, all of them: they are objects of the kmalloc caches,
 * which a single pass may have shrunk already. */
static long shrink_all(struct za_mm *mm, bool wait)
{
	long freed = 0;
	za_lock(&mm->caches_lock);
	for (struct za_kmem_cache *s = mm->caches; s; s = s->next)
		flush_sheaves(s, wait);
	for (struct za_kmem_cache *s = mm->caches; s; s = s->next)
		freed += shrink_cache(s, wait);
	za_unlock(&mm->caches_lock);
	return freed;
}

long za_shrink_slabs(za_mm_t *mm)
{
	return shrink_all(mm, true);
}

/* Reclaim's, and the malloc's idle flush: skips CPUs whose lock is busy. */
long slab_shrink_reclaim(struct za_mm *mm)
{
	return shrink_all(mm, false);
}

/*
 * The slab layer's shrinker, counted and scanned in pages.  Empty slabs go
 * only all at once, flushing every CPU's slabs (slab_shrink_reclaim), so
 * the scan runs only when reclaim asks for as many pages as the caches
 * hold -- at priority 0, or when they hold less than a cluster -- instead
 * of emptying them for a request of a few pages.
 */
unsigned long slab_count(void *mm)
{
	return (unsigned long)mm_slab_pages(mm);
}

unsigned long slab_scan(void *mm, unsigned long nr)
{
	long before = mm_slab_pages(mm);
	if ((long)nr < before)
		return 0;
	slab_shrink_reclaim(mm);
	long after = mm_slab_pages(mm);
	return before > after ? (unsigned long)(before - after) : 0;
}
