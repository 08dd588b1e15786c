/*
 * What every slab cache shares, whatever its allocator (the kernel's
 * slab_common.c): creating a cache -- its object layout and slab order
 * sized as the kernel's calculate_sizes and calculate_order do --,
 * destroying it and every cache of a system, the slab layer's fork locks,
 * deferred frees (kvfree_rcu), and slabinfo.  The allocator itself,
 * per-CPU slabs and node partial lists, is slub.c.
 */
#include "slab.h"
#include "internal.h"
#include "percpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Objects allocated: every object of every slab (*all: the nodes' slabs,
 * pages and objects) minus the free ones on the node lists.  Exact once
 * the CPU slabs are flushed.  An observer's: the list_locks it takes are
 * not counted among the cache's. */
static long objects_in_use(struct za_kmem_cache *s, struct slab_counts *all)
{
	long free_objs = 0;
	*all = (struct slab_counts){ 0 };
	for (int node = 0; node < s->mm->nr_nodes; node++) {
		struct kmem_cache_node *n = &s->node[node];
		za_lock(&n->list_lock);
		struct slab_counts counts = node_slab_counts(s, n);
		all->slabs += counts.slabs;
		all->pages += counts.pages;
		all->objects += counts.objects;
		for (struct za_list *l = n->partial.next; l != &n->partial; l = l->next) {
			uint64_t st = slab_state(container_of(l, struct za_page, lru));
			free_objs += st_objects(st) - st_inuse(st);
		}
		za_unlock(&n->list_lock);
	}
	return all->objects - free_objs;
}

static void unlink_cache(struct za_kmem_cache *s)
{
	struct za_mm *mm = s->mm;
	za_lock(&mm->caches_lock);
	for (struct za_kmem_cache **p = &mm->caches; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	slab_stat_retire(s);
	za_unlock(&mm->caches_lock);
}

/* A cache's descriptor is followed by its CPU structures, its node
 * structures, its CPUs' sheaves and its nodes' barns: one size for all of
 * a system's caches. */
#define CPU_SLAB_ALIGN _Alignof(struct kmem_cache_cpu)

static size_t cache_desc_size(const struct za_mm *mm)
{
	return ALIGN_UP(sizeof(struct za_kmem_cache), CPU_SLAB_ALIGN) +
	       sizeof(struct kmem_cache_cpu) * (size_t)mm->nr_cpus +
	       sizeof(struct kmem_cache_node) * (size_t)mm->nr_nodes +
	       sizeof(struct slub_percpu_sheaves) * (size_t)mm->nr_cpus +
	       sizeof(struct barn) * (size_t)mm->nr_nodes;
}

/* A destroyed cache's descriptor, cleared, else a new one from memblock:
 * descriptors share pages, a program's dozens of caches a few of them. */
static struct za_kmem_cache *cache_desc_alloc(struct za_mm *mm)
{
	za_lock(&mm->caches_lock);
	struct za_kmem_cache *s = mm->free_caches;
	if (s)
		mm->free_caches = s->next;
	za_unlock(&mm->caches_lock);
	if (s)
		memset(s, 0, cache_desc_size(mm));
	else
		s = memblock_alloc(mm, cache_desc_size(mm), CPU_SLAB_ALIGN);
	return s;
}

static void cache_desc_free(struct za_kmem_cache *s)
{
	struct za_mm *mm = s->mm;
	if (s->random_seq)
		za_os_free(s->random_seq, sizeof(*s->random_seq) * s->objects);
	za_lock(&mm->caches_lock);
	s->next = mm->free_caches;
	mm->free_caches = s;
	za_unlock(&mm->caches_lock);
}

/* ------------------------------------------------------------------------
 * Deferred frees (za_cache_free_rcu): kvfree_rcu's batching
 *
 * zonealloc has no RCU readers to wait for: a grace period ends when the
 * caller says so, with za_rcu_barrier (the kernel's rcu_barrier after
 * kvfree_rcu).  What the model keeps is where the objects wait and how
 * they come back.  A cache with sheaves gathers them in each CPU's
 * rcu_free sheaf (slub_sheaf.c), which after the grace period becomes a
 * full sheaf of its node's barn; the objects those do not take gather here
 * in batches of RCU_BATCH, freed to the slabs in bulk after it.  Until
 * then every waiting object counts as allocated.
 * ------------------------------------------------------------------------ */
#define RCU_BATCH 62            /* pointers in a 512-byte kmalloc object */

/* A full batch (or rcu_free sheaf) to wait for the grace period's end. */
static void rcu_wait_full(struct rcu_waiting *w, struct sheaf *full)
{
	za_lock(&w->lock);
	full->next = w->batches;
	w->batches = full;
	za_unlock(&w->lock);
}

/*
 * A cache with CPU slabs batches per CPU, as kvfree_rcu does, under the
 * CPU slab's lock (the batch made outside it: it is kmalloc memory, maybe
 * of this very cache).  false: the CPU's lock busy, or no memory.
 */
static bool rcu_cpu_batch_add(struct za_kmem_cache *s, void *obj)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[this_cpu(s->mm)];
	struct sheaf *fresh = NULL;
	if (!za_trylock(&c->lock))
		return false;
	if (!c->rcu_batch) {
		za_tryunlock(&c->lock);
		if (!(fresh = sheaf_kmalloc(s->mm, RCU_BATCH, ZA_GFP_NOWAIT)))
			return false;
		if (!za_trylock(&c->lock)) {
			sheaf_kfree(s->mm, fresh);
			return false;
		}
		if (!c->rcu_batch) {
			c->rcu_batch = fresh;
			fresh = NULL;
		}
	}
	struct sheaf *b = c->rcu_batch;
	b->objects[b->size++] = obj;
	bool full = b->size == b->capacity;
	if (full)
		c->rcu_batch = NULL;
	za_tryunlock(&c->lock);
	if (fresh)                      /* another thread of the CPU made one first */
		sheaf_kfree(s->mm, fresh);
	if (full)
		rcu_wait_full(&s->rcu, b);
	return true;
}

/* obj, checked to be an object of s, waits in a batch; -1 with ENOMEM when
 * none can be had (the object stays the caller's). */
int rcu_batch_add(struct za_kmem_cache *s, void *obj)
{
	struct rcu_waiting *w = &s->rcu;
	atomic_fetch_add_explicit(&w->objects, 1, memory_order_relaxed);
	if (!s->cpu_slab_off && rcu_cpu_batch_add(s, obj))
		return 0;
	struct sheaf *fresh = NULL, *full = NULL;
	za_lock(&w->lock);
	while (!w->batch) {
		za_unlock(&w->lock);
		if (!(fresh = sheaf_kmalloc(s->mm, RCU_BATCH, 0))) {
			atomic_fetch_sub_explicit(&w->objects, 1, memory_order_relaxed);
			errno = ENOMEM;
			return -1;
		}
		za_lock(&w->lock);
		if (!w->batch) {
			w->batch = fresh;
			fresh = NULL;
		}
	}
	struct sheaf *b = w->batch;
	b->objects[b->size++] = obj;
	if (b->size == b->capacity) {
		full = b;
		w->batch = NULL;
	}
	za_unlock(&w->lock);
	if (fresh)                      /* another thread's batch came first */
		sheaf_kfree(s->mm, fresh);
	if (full)
		rcu_wait_full(w, full);
	return 0;
}

/* Every CPU's filling rcu_free sheaf and batch, onto the lists. */
static void rcu_take_cpus(struct za_kmem_cache *s, struct sheaf **sheaves, struct sheaf **batches)
{
	for (int cpu = 0; cpu < s->mm->nr_cpus; cpu++) {
		struct sheaf *sh = s->cpu_sheaves ? pcs_take_rcu(s, cpu) : NULL;
		if (sh) {
			sh->next = *sheaves;
			*sheaves = sh;
		}
		struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
		za_trylock_wait(&c->lock);
		struct sheaf *b = c->rcu_batch;
		c->rcu_batch = NULL;
		za_tryunlock(&c->lock);
		if (b) {
			b->next = *batches;
			*batches = b;
		}
	}
}

/* Chains list onto *to. */
static void rcu_splice(struct sheaf **to, struct sheaf *list)
{
	while (list) {
		struct sheaf *next = list->next;
		list->next = *to;
		*to = list;
		list = next;
	}
}

/* The end of a grace period for s: what waited is freed -- the rcu_free
 * sheaves, full or not, through rcu_free_sheaf, the batches to the slabs
 * in bulk. */
static void rcu_barrier_cache(struct za_kmem_cache *s)
{
	struct rcu_waiting *w = &s->rcu;
	struct sheaf *sheaves = NULL, *batches = NULL;
	rcu_take_cpus(s, &sheaves, &batches);
	za_lock(&w->lock);
	rcu_splice(&sheaves, w->sheaves);
	rcu_splice(&batches, w->batches);
	if (w->batch) {
		w->batch->next = NULL;
		rcu_splice(&batches, w->batch);
	}
	w->sheaves = w->batches = w->batch = NULL;
	za_unlock(&w->lock);
	long freed = 0;
	for (struct sheaf *sh = sheaves, *next; sh; sh = next) {
		next = sh->next;
		freed += sh->size;
		rcu_free_sheaf(s, sh);
	}
	for (struct sheaf *b = batches, *next; b; b = next) {
		next = b->next;
		freed += b->size;
		za_cache_free_bulk(s, b->size, b->objects);
		b->size = 0;
		sheaf_kfree(s->mm, b);
	}
	atomic_fetch_sub_explicit(&w->objects, freed, memory_order_relaxed);
}

void za_rcu_barrier(za_mm_t *mm)
{
	za_lock(&mm->caches_lock);
	for (struct za_kmem_cache *s = mm->caches; s; s = s->next)
		rcu_barrier_cache(s);
	za_unlock(&mm->caches_lock);
}

long za_cache_destroy(za_cache_t *s)
{
	if (!s)
		return 0;
	struct slab_counts all;
	rcu_barrier_cache(s);           /* as kmem_cache_destroy's kvfree_rcu_barrier */
	za_cache_shrink(s);
	long in_use = objects_in_use(s, &all);
	if (in_use) {
		za_report_error(s->mm, "za_cache_destroy(%s): %ld objects still allocated in %ld slabs; "
				"the cache stays", s->name, in_use, all.slabs);
		return in_use;
	}
	unlink_cache(s);
	cache_desc_free(s);
	return 0;
}

/* The slab layer's fork hook (mm_layers.c): the cache list, then every
 * cache's locks. */
void slab_layer_lock_all(struct za_mm *mm, enum lock_all_mode mode)
{
	if (mode == LOCK_ALL) {
		za_lock(&mm->caches_lock);
		slab_lock_all(mm, true);
	} else {
		slab_lock_all(mm, false);
		za_unlock(&mm->caches_lock);
	}
}

void slub_destroy_all(struct za_mm *mm)
{
	za_rcu_barrier(mm);
	za_shrink_slabs(mm);    /* every cache's sheaves, then its slabs */
	while (mm->caches) {
		struct za_kmem_cache *s = mm->caches;
		mm->caches = s->next;
		cache_desc_free(s);
	}
}

/* Every cache's CPU locks (sheaves, then CPU slab), then its node locks
 * (barn, then list_lock), in the order the allocation paths nest them; or
 * all of them released.  Under caches_lock. */
void slab_lock_all(struct za_mm *mm, bool lock)
{
	for (struct za_kmem_cache *s = mm->caches; s; s = s->next) {
		for (int cpu = 0; cpu < mm->nr_cpus; cpu++) {
			za_trylock_t *l[2] = { &s->cpu_sheaves[cpu].lock, &s->cpu_slab[cpu].lock };
			for (int i = 0; i < 2; i++)
				lock ? za_trylock_wait(l[i]) : za_tryunlock(l[i]);
		}
		for (int n = 0; n < mm->nr_nodes; n++) {
			za_lock_t *l[2] = { &s->barn[n].lock, &s->node[n].list_lock };
			for (int i = 0; i < 2; i++)
				lock ? za_lock(l[i]) : za_unlock(l[i]);
		}
	}
}

/* ------------------------------------------------------------------------
 * Sizing: the kernel's calculate_sizes, calculate_order (its 6.7+ form)
 * and set_cpu_partial, with seed 002's doubling for big systems.
 * ------------------------------------------------------------------------ */

static unsigned int order_objects(unsigned int order, unsigned int size)
{
	return (unsigned int)((PAGE_SIZE << order) / size);
}

/* Seed 002: a machine with 32 or more CPUs is a server: bigger slabs and
 * per-CPU partial lists to keep off the node's list_lock. */
static bool big_system(const struct za_mm *mm)
{
	return mm->cfg.slub_big_system && mm->cfg.nr_cpus >= 32;
}

/* The first order in [min_order, max_order] that wastes at most 1/fract. */
static unsigned int calc_slab_order(unsigned int size, unsigned int min_order,
				    unsigned int max_order, unsigned int fract)
{
	unsigned int order;
	for (order = min_order; order <= max_order; order++) {
		size_t slab_size = PAGE_SIZE << order;
		if (slab_size % size <= slab_size / fract)
			break;
	}
	return order;
}

static int calculate_order(const struct za_mm *mm, unsigned int size)
{
	unsigned int slub_max = (unsigned int)mm->cfg.slub_max_order;
	unsigned int min_objects = (unsigned int)mm->cfg.slub_min_objects;
	if (!min_objects) {
		min_objects = 4 * (fls_u((unsigned int)mm->cfg.nr_cpus) + 1);
		if (big_system(mm))
			min_objects *= 2;
	}
	unsigned int max_objects = order_objects(slub_max, size);
	if (max_objects < 1)
		max_objects = 1;
	if (min_objects > max_objects)
		min_objects = max_objects;
	unsigned int min_order = get_order((size_t)min_objects * size);
	if (min_order < (unsigned int)mm->cfg.slub_min_order)
		min_order = (unsigned int)mm->cfg.slub_min_order;
	if (order_objects(min_order, size) > MAX_OBJS_PER_SLAB)
		return (int)get_order((size_t)size * MAX_OBJS_PER_SLAB) - 1;
	/* Accept a waste of 1/16 of the slab first, then relax to 1/2. */
	for (unsigned int fraction = 16; fraction > 1; fraction /= 2) {
		unsigned int order = calc_slab_order(size, min_order, slub_max, fraction);
		if (order <= slub_max)
			return (int)order;
	}
	unsigned int order = get_order(size);
	return order <= mm->max_order ? (int)order : -1;
}

/* Per-CPU partial slabs: enough for about twice this many objects, assuming
 * half-full slabs. */
static unsigned int cpu_partial_slabs(const struct za_kmem_cache *s)
{
	if (s->debug)
		return 0;
	unsigned int nr = s->size >= PAGE_SIZE ? 6 : s->size >= 1024 ? 24 : s->size >= 256 ? 52 : 120;
	if (big_system(s->mm))
		nr *= 2;
	return (nr * 2 + s->objects - 1) / s->objects;
}

/* The malloc's classes: its own sheaves are in front.  Between
 * cache_prepare and cache_publish. */
void cache_disable_sheaves(struct za_kmem_cache *s)
{
	s->sheaf_capacity = 0;
	s->cpu_slab_off = false;
	s->cpu_partial_slabs = cpu_partial_slabs(s);
}

static unsigned int calculate_min_partial(unsigned int size)
{
	unsigned int ilog2 = fls_u(size) - 1, v = ilog2 / 2;
	return v < 5 ? 5 : v > 10 ? 10 : v;
}

static size_t calculate_alignment(unsigned int flags, size_t align, size_t size)
{
	if (flags & ZA_SLAB_HWCACHE_ALIGN) {
		size_t ralign = ZA_CACHELINE;
		while (size <= ralign / 2)
			ralign /= 2;
		if (align < ralign)
			align = ralign;
	}
	return align < sizeof(void *) ? sizeof(void *) : align;
}

/*
 * The object's layout: [left red zone][object][right red zone / padding]
 * [free pointer, when it may not live inside the object][two tracks (U)],
 * aligned.  The free pointer sits mid-object when it can, away from the
 * edges that small overflows hit.
 */
static void calculate_sizes(struct za_kmem_cache *s)
{
	size_t size = ALIGN_UP(s->object_size, sizeof(void *));
	if ((s->debug & SLAB_RED_ZONE) && size == s->object_size)
		size += sizeof(void *);
	s->inuse = (unsigned int)size;
	if (s->ctor || (s->debug & SLAB_POISON) ||
	    ((s->debug & SLAB_RED_ZONE) && s->object_size < sizeof(void *))) {
		s->offset = (unsigned int)size;
		size += sizeof(void *);
	} else if ((s->flags & ZA_SLAB_FREEPTR_EARLY) && s->object_size >= 2 * sizeof(void *)) {
		s->offset = sizeof(void *);
	} else {
		s->offset = (unsigned int)((s->object_size / 2) & ~(sizeof(void *) - 1));
	}
	size += debug_metadata_size(s);
	s->red_left_pad = s->debug & SLAB_RED_ZONE ? (unsigned int)ALIGN_UP(sizeof(void *), s->align) : 0;
	size += s->red_left_pad;
	s->size = (unsigned int)ALIGN_UP(size, s->align);
	s->recip = (uint64_t)(((unsigned __int128)1 << 64) / s->size) + 1;
	s->size_tz = (unsigned int)__builtin_ctz(s->size);
	uint64_t odd = s->size >> s->size_tz, inv = odd;
	for (int i = 0; i < 5; i++)     /* Newton: each step doubles the correct low bits */
		inv *= 2 - odd * inv;
	s->inv_odd = inv;
}

/* slab_freelist_random: a permutation of the object indices; false
 * without memory for it. */
static bool init_random_seq(struct za_kmem_cache *s)
{
	uint16_t *seq = za_os_alloc(sizeof(*seq) * s->objects);
	if (!seq)
		return false;
	for (unsigned int i = 0; i < s->objects; i++)
		seq[i] = (uint16_t)i;
	uint64_t r = get_random_u64() | 1;
	for (unsigned int i = s->objects - 1; i > 0; i--) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		unsigned int j = (unsigned int)(r % (i + 1));
		uint16_t t = seq[i];
		seq[i] = seq[j];
		seq[j] = t;
	}
	s->random_seq = seq;
	return true;
}

static za_cache_t *create_error(const char *name, const char *why)
{
	za_set_last_error("za_cache_create(%s): %s", name ? name : "(null)", why);
	errno = EINVAL;
	return NULL;
}

#define ZA_SLAB_DEBUG_SHIFT 4
#define ZA_SLAB_VALID_FLAGS (ZA_SLAB_HWCACHE_ALIGN | ZA_SLAB_RECLAIM_ACCOUNT | ZA_SLAB_FREEPTR_EARLY | \
			     ZA_SLAB_SHEAVES | \
			     (SLAB_DEBUG_FLAGS << ZA_SLAB_DEBUG_SHIFT))

/* A cache made but not yet in mm->caches: no other thread can see it, so
 * its creator may still change how it is set up (cache_publish). */
struct za_kmem_cache *cache_prepare(za_mm_t *mm, const char *name, size_t size, size_t align,
				    unsigned int flags, void (*ctor)(void *))
{
	if (!name || !*name || strlen(name) >= sizeof(((struct za_kmem_cache *)0)->name))
		return create_error(name, "the name must have 1..31 characters");
	if (!size || size > (PAGE_SIZE << mm->max_order) / 2)
		return create_error(name, "size must be 1 .. half the largest block");
	if (align & (align - 1) || align > PAGE_SIZE)
		return create_error(name, "align must be 0 or a power of two up to 4096");
	if (flags & ~ZA_SLAB_VALID_FLAGS)
		return create_error(name, "unknown flags");

	struct za_kmem_cache *s = cache_desc_alloc(mm);
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->mm = mm;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->object_size = (unsigned int)size;
	s->flags = flags;
	s->owner_tag = SLAB_NO_TAG;
	s->ctor = ctor;
	s->debug = ((flags >> ZA_SLAB_DEBUG_SHIFT) & SLAB_DEBUG_FLAGS) | slub_debug_flags_for(mm, name);
	s->align = (unsigned int)calculate_alignment(flags, align ? align : sizeof(void *), size);
	s->cpu_slab = (struct kmem_cache_cpu *)((char *)s + ALIGN_UP(sizeof(*s), CPU_SLAB_ALIGN));
	s->node = (struct kmem_cache_node *)(s->cpu_slab + mm->nr_cpus);
	s->cpu_sheaves = (struct slub_percpu_sheaves *)(s->node + mm->nr_nodes);
	s->barn = (struct barn *)(s->cpu_sheaves + mm->nr_cpus);
	for (int n = 0; n < mm->nr_nodes; n++)
		list_init(&s->node[n].partial);
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		s->cpu_sheaves[cpu].main = &empty_sheaf;
	calculate_sizes(s);

	int order = calculate_order(mm, s->size);
	if (order < 0 || order_objects((unsigned int)order, s->size) < 1) {
		cache_desc_free(s);
		return create_error(name, "objects too large for any slab order");
	}
	s->order = (unsigned int)order;
	s->objects = order_objects(s->order, s->size);
	s->min_order = get_order(s->size);
	s->min_objects = order_objects(s->min_order, s->size);
	s->sheaf_capacity = calculate_sheaf_capacity(s);
	s->cpu_slab_off = s->sheaf_capacity && mm->cfg.slub_sheaves == 2;
	s->cpu_partial_slabs = s->cpu_slab_off ? 0 : cpu_partial_slabs(s);
	s->min_partial = calculate_min_partial(s->size);
	if (mm->cfg.slab_freelist_hardened)
		s->random = (uintptr_t)get_random_u64() | 1;
	if (mm->cfg.slab_freelist_random && !init_random_seq(s)) {
		cache_desc_free(s);
		errno = ENOMEM;
		return NULL;
	}
	cache_link_init(s);
	return s;
}

/* From here the statistics, slabinfo and shrinkers read the cache's setup
 * without its creator's lock: it must not change after this. */
void cache_publish(struct za_kmem_cache *s)
{
	za_lock(&s->mm->caches_lock);
	s->next = s->mm->caches;
	s->mm->caches = s;
	za_unlock(&s->mm->caches_lock);
}

za_cache_t *za_cache_create(za_mm_t *mm, const char *name, size_t size, size_t align,
			    unsigned int flags, void (*ctor)(void *))
{
	struct za_kmem_cache *s = cache_prepare(mm, name, size, align, flags, ctor);
	if (s)
		cache_publish(s);
	return s;
}

void za_cache_info(const za_cache_t *s, struct za_cache_info *info)
{
	*info = (struct za_cache_info){
		.name = s->name,
		.object_size = s->object_size,
		.size = s->size,
		.align = s->align,
		.order = s->order,
		.objects = s->objects,
		.cpu_partial_slabs = s->cpu_partial_slabs,
		.min_partial = s->min_partial,
		.sheaf_capacity = s->sheaf_capacity,
		.sheaf_objects = sheaf_objects(s),
		.rcu_objects = (unsigned long)atomic_load_explicit(&s->rcu.objects, memory_order_relaxed),
		.debug = s->debug << ZA_SLAB_DEBUG_SHIFT,
	};
}

void za_cache_objects(const za_cache_t *s, unsigned long *active, unsigned long *total)
{
	struct slab_counts all;
	*active = (unsigned long)objects_in_use((struct za_kmem_cache *)s, &all);
	*total = (unsigned long)all.objects;
}

/* /proc/slabinfo, version 2.1, with the slab order appended. */
void slabinfo_report(struct za_mm *mm, FILE *out)
{
	fprintf(out, "slabinfo - version: 2.1\n");
	fprintf(out, "# name            <active_objs> <num_objs> <objsize> <objperslab> "
		     "<pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata "
		     "<active_slabs> <num_slabs> <sharedavail> : order\n");
	za_lock(&mm->caches_lock);
	for (struct za_kmem_cache *s = mm->caches; s; s = s->next) {
		struct slab_counts all;
		long active = objects_in_use(s, &all);
		fprintf(out, "%-17s %6ld %6ld %6u %4u %4u : tunables %4u %4u %4u : slabdata %6ld %6ld "
			     "%6u : order %u\n",
			s->name, active, all.objects, s->size, s->objects, 1u << s->order, 0u, 0u, 0u,
			all.slabs, all.slabs, 0u, s->order);
	}
	za_unlock(&mm->caches_lock);
}
