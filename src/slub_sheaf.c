/*
 * slub_sheaves: SLUB's per-CPU sheaves and per-node barns (sheaf.h), the
 * kernel's per-CPU layer since 7.0 (mm/slub.c: alloc_from_pcs,
 * free_to_pcs, __pcs_replace_empty_main, __pcs_replace_full_main,
 * barn_*; opt-in per cache in 6.18).
 *
 * A CPU allocates from and frees into its main sheaf under its sheaves'
 * trylock.  When main runs empty it swaps with a full spare, else trades
 * it at its node's barn for a full sheaf, else refills a sheaf from the
 * slabs (slab_refill_objects: the node's partial slabs taken whole, then
 * new slabs); when main fills up, it swaps with an empty spare, else
 * trades it at the barn for an empty one -- unless the barn holds
 * MAX_FULL_SHEAVES full ones: then the spare's objects go back to their
 * slabs and it becomes main.  An object of another node's slab bypasses
 * the sheaves.  The slab paths under them (slub.c) run with no sheaf lock
 * held: lock order is the sheaves' lock, the barn's, then list_lock.
 *
 * With slub_sheaves=2 (7.0) a cache with sheaves has no CPU slab and no
 * CPU partial list: what the sheaves miss goes to the node's lists.  With
 * 1 (6.18) only caches created with ZA_SLAB_SHEAVES have sheaves, in front
 * of the CPU slab they keep.
 *
 * za_cache_free_rcu (6.18's kfree_rcu through sheaves): objects gather
 * in the CPU's rcu_free sheaf, which, full, waits for the grace period
 * whole and then becomes a full sheaf of the barn (rcu_free_sheaf).
 *
 * Simplified: no prefilled sheaves (kmem_cache_prefill_sheaf), no
 * pfmemalloc reserves.  Sheaves
 * are kmalloc objects of the system, as the kernel's, but taken and given
 * back under the sheaves of their kmalloc cache, not through them.
 */
#include "slab.h"
#include "internal.h"
#include "percpu.h"

#include <string.h>

#define MAX_FULL_SHEAVES  10
#define MAX_EMPTY_SHEAVES 10
#define PCS_BATCH_MAX     32    /* objects moved per sheaf-lock hold when flushing main */
#define ASKED_CAPACITY    32    /* the vm_area_struct and maple_node caches' request */
#define KERNEL_SHEAF_HEADER 32  /* sizeof(struct slab_sheaf), the kernel's */

/*
 * The kernel's calculate_sheaf_capacity: about half what the CPU partial
 * lists held (a CPU has two sheaves), grown to fill the sheaf's kmalloc
 * bucket, and at least what the cache asked for.  6.18 gave only the
 * caches that asked, exactly that.
 */
unsigned int calculate_sheaf_capacity(const struct za_kmem_cache *s)
{
	int64_t mode = s->mm->cfg.slub_sheaves;
	bool asked = s->flags & ZA_SLAB_SHEAVES;
	if (s->debug || !mode || (mode == 1 && !asked))
		return 0;
	if (mode == 1)
		return ASKED_CAPACITY;
	unsigned int cap = s->size >= PAGE_SIZE ? 4 : s->size >= 1024 ? 12 : s->size >= 256 ? 26 : 60;
	size_t bytes = kmalloc_size_roundup(KERNEL_SHEAF_HEADER + cap * sizeof(void *));
	cap = (unsigned int)((bytes - KERNEL_SHEAF_HEADER) / sizeof(void *));
	return asked && cap < ASKED_CAPACITY ? ASKED_CAPACITY : cap;
}

static int pcs_cpu(const struct za_kmem_cache *s, const struct slub_percpu_sheaves *pcs)
{
	return (int)(pcs - s->cpu_sheaves);
}

static struct barn *pcs_barn(struct za_kmem_cache *s, const struct slub_percpu_sheaves *pcs)
{
	return &s->barn[s->mm->cpu_node[pcs_cpu(s, pcs)]];
}

/* The sheaves of the CPU the thread runs on now: after a slow path let go
 * of them, it may run elsewhere. */
static struct slub_percpu_sheaves *this_cpu_sheaves(struct za_kmem_cache *s)
{
	return &s->cpu_sheaves[this_cpu(s->mm)];
}

/* ------------------------------------------------------------------------
 * Sheaves to and from the slabs
 * ------------------------------------------------------------------------ */
/* An empty sheaf of `capacity`, the system's kmalloc memory whatever zone
 * or node its objects are asked from (gfp says only whether it may wait);
 * NULL if there is none. */
struct sheaf *sheaf_kmalloc(struct za_mm *mm, unsigned int capacity, za_gfp_t gfp)
{
	struct za_kmem_cache *k = kmalloc_slab(mm, sizeof(struct sheaf) + capacity * sizeof(void *));
	struct sheaf *sh = k ? slab_alloc_nosheaf(k, gfp & ZA_GFP_NOWAIT, mm->cpu_node[this_cpu(mm)])
			     : NULL;
	if (sh)
		*sh = (struct sheaf){ .capacity = capacity };
	return sh;
}

void sheaf_kfree(struct za_mm *mm, struct sheaf *sh)
{
	VM_BUG_ON(mm, sh == &empty_sheaf || sh->size);
	slab_free_objects(virt_to_slab(mm, sh)->slab_cache, 1, (void **)&sh);
}

static struct sheaf *sheaf_alloc(struct za_kmem_cache *s, za_gfp_t gfp)
{
	struct sheaf *sh = sheaf_kmalloc(s->mm, s->sheaf_capacity, gfp);
	if (sh)
		cache_stat(s, SL_SHEAF_ALLOC);
	return sh;
}

static void sheaf_free(struct za_kmem_cache *s, struct sheaf *sh)
{
	sheaf_kfree(s->mm, sh);
	cache_stat(s, SL_SHEAF_FREE);
}

/* A sheaf no CPU or barn holds: its objects back to their slabs. */
static void sheaf_flush_unused(struct za_kmem_cache *s, struct sheaf *sh)
{
	if (!sh->size)
		return;
	slab_free_objects(s, sh->size, sh->objects);
	cache_stat_add(s, SL_SHEAF_FLUSH, sh->size);
	sh->size = 0;
}

/* Fills the sheaf from the slabs; false, and the sheaf emptied, if memory
 * ran out first. */
static bool refill_sheaf(struct za_kmem_cache *s, struct sheaf *sh, za_gfp_t gfp, int node)
{
	unsigned int want = sh->capacity - sh->size;
	unsigned int got = slab_refill_objects(s, gfp, node, want, sh->objects + sh->size);
	sh->size += got;
	cache_stat_add(s, SL_SHEAF_REFILL, got);
	if (got == want)
		return true;
	sheaf_flush_unused(s, sh);
	return false;
}

/* An empty sheaf no one needs: to the barn below its limit, else freed. */
static void put_empty(struct za_kmem_cache *s, struct barn *b, struct sheaf *sh)
{
	za_lock(&b->lock);
	bool keep = b->nr_empty < MAX_EMPTY_SHEAVES;
	if (keep)
		barn_add(s->mm, b, sh, false);
	za_unlock(&b->lock);
	if (!keep)
		sheaf_free(s, sh);
}

/* ------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------ */
/* Under pcs's lock, after a refill let go of it: the full sheaf goes where
 * the CPU's sheaves have room now (another thread of the CPU may have
 * refilled them meanwhile; then, over the barn's limits if need be). */
static void install_full(struct za_kmem_cache *s, struct slub_percpu_sheaves *pcs,
			 struct sheaf *full)
{
	struct barn *b = pcs_barn(s, pcs);
	if (!pcs->main->size) {
		struct sheaf *old = pcs->main;
		pcs->main = full;
		if (old == &empty_sheaf)
			return;
		if (!pcs->spare)
			pcs->spare = old;
		else
			barn_put(s->mm, b, old, false);
	} else if (!pcs->spare) {
		pcs->spare = full;
	} else if (!pcs->spare->size) {
		barn_put(s->mm, b, pcs->spare, false);
		pcs->spare = full;
	} else {
		barn_put(s->mm, b, full, true);
		cache_stat(s, SL_BARN_PUT);
	}
}

/* Under pcs's lock, main empty: objects in its place without the slabs --
 * the spare if it has some, else a full sheaf of the barn, for main (the
 * static sheaf, no one's, is simply dropped).  Whether main has some now. */
static bool fill_main_from_spare_or_barn(struct za_kmem_cache *s, struct slub_percpu_sheaves *pcs)
{
	struct za_mm *mm = s->mm;
	struct barn *b = pcs_barn(s, pcs);
	za_lock_assert_held(mm, &pcs->lock);
	if (pcs->spare && pcs->spare->size) {
		sheaf_swap(&pcs->main, &pcs->spare);
		return true;
	}
	za_lock(&b->lock);
	struct sheaf *full = pcs->main == &empty_sheaf ? barn_take(mm, b, true) :
							 barn_trade(mm, b, pcs->main, false);
	za_unlock(&b->lock);
	cache_stat(s, full ? SL_BARN_GET : SL_BARN_GET_FAIL);
	if (full)
		pcs->main = full;
	return full != NULL;
}

/*
 * main is empty: a full sheaf in its place, from the spare, the barn or
 * the slabs.  Returns the sheaves locked (perhaps another CPU's), or NULL
 * with them let go.  A NOWAIT allocation only swaps and trades, as the
 * kernel's without __GFP_DIRECT_RECLAIM.
 */
static struct slub_percpu_sheaves *replace_empty_main(struct za_kmem_cache *s,
						      struct slub_percpu_sheaves *pcs, za_gfp_t gfp)
{
	struct za_mm *mm = s->mm;
	struct barn *b = pcs_barn(s, pcs);
	if (fill_main_from_spare_or_barn(s, pcs))
		return pcs;
	if (gfp & ZA_GFP_NOWAIT) {
		za_tryunlock(&pcs->lock);
		return NULL;
	}
	struct sheaf *empty = pcs->spare;
	pcs->spare = NULL;
	int node = mm->cpu_node[pcs_cpu(s, pcs)];
	za_tryunlock(&pcs->lock);
	if (!empty && !(empty = barn_get(s->mm, b, false)) && !(empty = sheaf_alloc(s, gfp)))
		return NULL;
	if (!refill_sheaf(s, empty, gfp, node)) {
		sheaf_free(s, empty);   /* short of memory: the barn can do without */
		return NULL;
	}
	pcs = this_cpu_sheaves(s);
	za_trylock_wait(&pcs->lock);
	install_full(s, pcs, empty);
	return pcs;
}

void *alloc_from_pcs(struct za_kmem_cache *s, za_gfp_t gfp, int cpu)
{
	struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
	if (unlikely(!za_trylock(&pcs->lock)))
		return NULL;
	VM_BUG_ON(s->mm, pcs->main == &empty_sheaf && pcs->spare);
	if (unlikely(!pcs->main->size) && !(pcs = replace_empty_main(s, pcs, gfp)))
		return NULL;
	struct sheaf *main = pcs->main;
	void *obj = main->objects[--main->size];
	counter_add(&pcs->allocs, 1);
	za_tryunlock(&pcs->lock);
	return obj;
}

/* ------------------------------------------------------------------------
 * Freeing
 * ------------------------------------------------------------------------ */
/* Under pcs's lock, after it was let go for an empty sheaf: main should
 * still be full and the spare missing or full (else someone made room
 * meanwhile, and the empty sheaf goes to the barn). */
static void install_empty(struct za_kmem_cache *s, struct slub_percpu_sheaves *pcs,
			  struct sheaf *empty)
{
	struct barn *b = pcs_barn(s, pcs);
	struct sheaf *main = pcs->main;
	if (main == &empty_sheaf) {
		pcs->main = empty;
	} else if (main->size < main->capacity) {
		barn_put(s->mm, b, empty, false);
	} else if (!pcs->spare) {
		pcs->spare = main;
		pcs->main = empty;
	} else if (pcs->spare->size < pcs->spare->capacity) {
		sheaf_swap(&pcs->main, &pcs->spare);
		barn_put(s->mm, b, empty, false);
	} else {
		barn_put(s->mm, b, main, true);
		cache_stat(s, SL_BARN_PUT);
		pcs->main = empty;
	}
}

/* The objects of this CPU's main sheaf back to their slabs, a batch per
 * hold of its lock; whether any went. */
static bool flush_main(struct za_kmem_cache *s)
{
	void *batch[PCS_BATCH_MAX];
	bool flushed = false;
	for (;;) {
		struct slub_percpu_sheaves *pcs = this_cpu_sheaves(s);
		if (!za_trylock(&pcs->lock))
			return flushed;
		struct sheaf *main = pcs->main;
		unsigned int n = main->size < PCS_BATCH_MAX ? main->size : PCS_BATCH_MAX;
		if (!n) {               /* (the static sheaf is never written) */
			za_tryunlock(&pcs->lock);
			return flushed;
		}
		main->size -= n;
		memcpy(batch, main->objects + main->size, n * sizeof(void *));
		bool more = main->size;
		za_tryunlock(&pcs->lock);
		slab_free_objects(s, n, batch);
		cache_stat_add(s, SL_SHEAF_FLUSH, n);
		flushed = true;
		if (!more)
			return true;
	}
}

/* Trades the full sheaf for an empty one of the barn; NULL if the barn
 * has its fill of full ones (*over) or no empty one. */
static struct sheaf *barn_replace_full(struct za_kmem_cache *s, struct barn *b,
				       struct sheaf *full, bool *over)
{
	za_lock(&b->lock);
	*over = b->nr_full >= MAX_FULL_SHEAVES;
	struct sheaf *empty = *over ? NULL : barn_trade(s->mm, b, full, true);
	za_unlock(&b->lock);
	return empty;
}

/* Under pcs's lock, main full (or the static sheaf): room in its place
 * without allocating -- an empty sheaf of the barn while there is no
 * spare, the empty spare, or a trade of main at the barn within its limit.
 * Whether main has room now; *over: the barn has its fill of full ones. */
static bool make_room(struct za_kmem_cache *s, struct slub_percpu_sheaves *pcs, bool *over)
{
	struct barn *b = pcs_barn(s, pcs);
	struct sheaf *empty;
	za_lock_assert_held(s->mm, &pcs->lock);
	*over = false;
	if (!pcs->spare) {
		if (!(empty = barn_get(s->mm, b, false)))
			return false;
		if (pcs->main != &empty_sheaf)
			pcs->spare = pcs->main;
		pcs->main = empty;
	} else if (pcs->spare->size < pcs->spare->capacity) {
		sheaf_swap(&pcs->main, &pcs->spare);
	} else if ((empty = barn_replace_full(s, b, pcs->main, over))) {
		cache_stat(s, SL_BARN_PUT);
		pcs->main = empty;
	} else {
		return false;
	}
	return true;
}

/* An empty sheaf made or flushed with the sheaves let go: installed in
 * the sheaves of the CPU the thread runs on now, locked and returned; or,
 * if they are busy, put away (NULL). */
static struct slub_percpu_sheaves *relock_install_empty(struct za_kmem_cache *s,
							struct sheaf *empty)
{
	struct slub_percpu_sheaves *pcs = this_cpu_sheaves(s);
	if (!za_trylock(&pcs->lock)) {
		put_empty(s, pcs_barn(s, pcs), empty);
		return NULL;
	}
	install_empty(s, pcs, empty);
	return pcs;
}

/*
 * main is full (or the static empty sheaf): an empty sheaf in its place.
 * Returns the sheaves locked (perhaps another CPU's), or NULL with them
 * let go: then the object goes to its slab.
 */
static struct slub_percpu_sheaves *replace_full_main(struct za_kmem_cache *s,
						     struct slub_percpu_sheaves *pcs)
{
	struct sheaf *empty;
	bool over;
restart:
	if (make_room(s, pcs, &over))
		return pcs;
	if (over) {
		/* The barn has enough full sheaves: the spare's objects go
		 * back to their slabs, and it takes main's place. */
		cache_stat(s, SL_BARN_PUT_FAIL);
		empty = pcs->spare;
		pcs->spare = NULL;
		za_tryunlock(&pcs->lock);
		sheaf_flush_unused(s, empty);
		return relock_install_empty(s, empty);
	}
	/* No empty sheaf to trade (a full spare), or none at all: make one. */
	bool put_fail = pcs->spare, static_main = pcs->main == &empty_sheaf;
	za_tryunlock(&pcs->lock);
	if ((empty = sheaf_alloc(s, ZA_GFP_NOWAIT)))
		return relock_install_empty(s, empty);
	if (put_fail)
		cache_stat(s, SL_BARN_PUT_FAIL);
	if (static_main || !flush_main(s))
		return NULL;
	pcs = this_cpu_sheaves(s);
	if (!za_trylock(&pcs->lock))
		return NULL;
	if (pcs->main->size == pcs->main->capacity)
		goto restart;
	return pcs;
}

/*
 * obj, an object start of slab, into this CPU's main sheaf: 0 if it went,
 * 1 if it takes the slab paths (another node's slab, the lock busy, no
 * room to be had), -1 if it is the object the sheaf took last (the naive
 * double free, which the CPU slab's free path catches too).
 */
int free_to_pcs(struct za_kmem_cache *s, struct za_page *slab, void *obj, int cpu)
{
	struct za_mm *mm = s->mm;
	if (unlikely(slab_nid(mm, slab) != mm->cpu_node[cpu]))
		return 1;
	struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
	if (unlikely(!za_trylock(&pcs->lock)))
		return 1;
	struct sheaf *main = pcs->main;
	if (unlikely(main->size && main->objects[main->size - 1] == obj)) {
		za_tryunlock(&pcs->lock);
		return -1;
	}
	if (unlikely(main->size == main->capacity)) {
		if (!(pcs = replace_full_main(s, pcs)))
			return 1;
		main = pcs->main;
	}
	main->objects[main->size++] = obj;
	counter_add(&pcs->frees, 1);
	za_tryunlock(&pcs->lock);
	return 0;
}

/* ------------------------------------------------------------------------
 * za_cache_free_rcu's sheaves (6.18's __kfree_rcu_sheaf, rcu_free_sheaf)
 * ------------------------------------------------------------------------ */
/* Under pcs's lock: its rcu_free sheaf, made if need be (an empty one of
 * the barn's, else a new one, the lock let go meanwhile).  NULL, the lock
 * let go, when none can be had or the lock is busy on the way back. */
static struct sheaf *rcu_free_sheaf_of(struct za_kmem_cache *s, struct slub_percpu_sheaves *pcs)
{
	struct barn *b = pcs_barn(s, pcs);
	if (pcs->rcu_free || (pcs->rcu_free = barn_get(s->mm, b, false)))
		return pcs->rcu_free;
	za_tryunlock(&pcs->lock);
	struct sheaf *sh = sheaf_alloc(s, ZA_GFP_NOWAIT);
	if (!sh)
		return NULL;
	if (!za_trylock(&pcs->lock)) {
		put_empty(s, b, sh);
		return NULL;
	}
	if (pcs->rcu_free)              /* another thread of the CPU made one */
		put_empty(s, b, sh);
	else
		pcs->rcu_free = sh;
	return pcs->rcu_free;
}

/*
 * obj, an object of slab, into this CPU's rcu_free sheaf, which, full,
 * goes to wait for the grace period whole (s->rcu).  false: the caller's
 * to batch (another node's slab, the CPU's sheaves busy, no sheaf).
 */
bool free_to_pcs_rcu(struct za_kmem_cache *s, struct za_page *slab, void *obj, int cpu)
{
	struct za_mm *mm = s->mm;
	if (slab_nid(mm, slab) != mm->cpu_node[cpu])
		return false;
	struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
	if (!za_trylock(&pcs->lock))
		return false;
	struct sheaf *sh = rcu_free_sheaf_of(s, pcs);
	if (!sh)
		return false;
	sh->objects[sh->size++] = obj;
	bool full = sh->size == sh->capacity;
	if (full)
		pcs->rcu_free = NULL;
	za_tryunlock(&pcs->lock);
	if (full) {
		za_lock(&s->rcu.lock);
		sh->next = s->rcu.sheaves;
		s->rcu.sheaves = sh;
		za_unlock(&s->rcu.lock);
	}
	atomic_fetch_add_explicit(&s->rcu.objects, 1, memory_order_relaxed);
	cache_stat(s, SL_FREE_RCU_SHEAF);
	return true;
}

/* The CPU's rcu_free sheaf, not yet full, off it for the grace period's
 * end (NULL if it has none). */
struct sheaf *pcs_take_rcu(struct za_kmem_cache *s, int cpu)
{
	struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
	za_trylock_wait(&pcs->lock);
	struct sheaf *sh = pcs->rcu_free;
	pcs->rcu_free = NULL;
	za_tryunlock(&pcs->lock);
	return sh;
}

/*
 * After the grace period: an rcu_free sheaf, full, goes to its node's barn
 * as a full sheaf -- its objects come back to allocations without the
 * slabs -- unless the barn has its fill of them; then, as a sheaf not
 * full, its objects go to their slabs and it to the barn's empties.
 */
void rcu_free_sheaf(struct za_kmem_cache *s, struct sheaf *sh)
{
	struct za_mm *mm = s->mm;
	int node = sh->size ? slab_nid(mm, virt_to_slab(mm, sh->objects[0])) : mm->cpu_node[0];
	struct barn *b = &s->barn[node];
	if (sh->size == sh->capacity) {
		za_lock(&b->lock);
		bool room = b->nr_full < MAX_FULL_SHEAVES;
		if (room)
			barn_add(mm, b, sh, true);
		za_unlock(&b->lock);
		cache_stat(s, room ? SL_BARN_PUT : SL_BARN_PUT_FAIL);
		if (room)
			return;
	}
	sheaf_flush_unused(s, sh);
	put_empty(s, b, sh);
}

/* ------------------------------------------------------------------------
 * Bulk: what the sheaves hold or have room for, a sheaf per lock hold;
 * the rest is the caller's to take to the slabs.
 * ------------------------------------------------------------------------ */
size_t alloc_from_pcs_bulk(struct za_kmem_cache *s, int cpu, size_t n, void **objs)
{
	size_t done = 0;
	while (done < n) {
		struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
		if (!za_trylock(&pcs->lock))
			break;
		if (!pcs->main->size)
			fill_main_from_spare_or_barn(s, pcs);
		struct sheaf *main = pcs->main;
		size_t batch = n - done < main->size ? n - done : main->size;
		if (!batch) {           /* once the barn is dry, the slabs serve the rest */
			za_tryunlock(&pcs->lock);
			break;
		}
		main->size -= (unsigned int)batch;
		memcpy(objs + done, main->objects + main->size, batch * sizeof(void *));
		counter_add(&pcs->allocs, batch);
		za_tryunlock(&pcs->lock);
		done += batch;
		cpu = this_cpu(s->mm);
	}
	return done;
}

/* Room in main for a bulk free, without allocating; a bulk free makes
 * the CPU's first main sheaf (the kernel allocates every CPU's with the
 * cache) with the sheaves let go.  The sheaves locked, or NULL. */
static struct slub_percpu_sheaves *room_for_bulk(struct za_kmem_cache *s,
						 struct slub_percpu_sheaves *pcs)
{
	bool over;
	if (pcs->main == &empty_sheaf) {
		za_tryunlock(&pcs->lock);
		struct sheaf *sh = sheaf_alloc(s, ZA_GFP_NOWAIT);
		return sh ? relock_install_empty(s, sh) : NULL;
	}
	if (pcs->main->size == pcs->main->capacity && !make_room(s, pcs, &over) && pcs->spare)
		cache_stat(s, SL_BARN_PUT_FAIL);        /* the trade failed */
	return pcs;
}

/* objs: object starts of s, of this node's slabs. */
size_t free_to_pcs_bulk(struct za_kmem_cache *s, int cpu, size_t n, void **objs)
{
	size_t done = 0;
	while (done < n) {
		struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
		if (!za_trylock(&pcs->lock))
			break;
		if (!(pcs = room_for_bulk(s, pcs)))
			break;
		struct sheaf *main = pcs->main;
		size_t room = main->capacity - main->size;
		size_t batch = n - done < room ? n - done : room;
		if (!batch) {           /* no room to be had: the slabs take the rest */
			za_tryunlock(&pcs->lock);
			break;
		}
		memcpy(main->objects + main->size, objs + done, batch * sizeof(void *));
		main->size += (unsigned int)batch;
		counter_add(&pcs->frees, batch);
		za_tryunlock(&pcs->lock);
		done += batch;
		cpu = this_cpu(s->mm);
	}
	return done;
}

/* ------------------------------------------------------------------------
 * Flushing (shrink, reclaim, destroy) and za_verify
 * ------------------------------------------------------------------------ */
/* The CPU's sheaves, their objects back to the slabs and the sheaves freed.
 * Without wait, a CPU whose sheaves are busy keeps them (slub.c's
 * flush_cpu_slab says why). */
void pcs_flush_cpu(struct za_kmem_cache *s, int cpu, bool wait)
{
	struct slub_percpu_sheaves *pcs = &s->cpu_sheaves[cpu];
	if (wait)
		za_trylock_wait(&pcs->lock);
	else if (!za_trylock(&pcs->lock))
		return;
	struct sheaf *sheaves[2] = { pcs->main, pcs->spare };
	pcs->main = &empty_sheaf;
	pcs->spare = NULL;
	za_tryunlock(&pcs->lock);
	for (int i = 0; i < 2; i++)
		if (sheaves[i] && sheaves[i] != &empty_sheaf) {
			sheaf_flush_unused(s, sheaves[i]);
			sheaf_free(s, sheaves[i]);
		}
}

/* Every node's barn emptied: full sheaves flushed, all sheaves freed. */
void barn_shrink(struct za_kmem_cache *s)
{
	for (int node = 0; node < s->mm->nr_nodes; node++) {
		struct barn *b = &s->barn[node];
		za_lock(&b->lock);
		struct sheaf *lists[2] = { b->full, b->empty };
		b->full = b->empty = NULL;
		b->nr_full = b->nr_empty = 0;
		za_unlock(&b->lock);
		for (int i = 0; i < 2; i++)
			for (struct sheaf *sh = lists[i], *next; sh; sh = next) {
				next = sh->next;
				sheaf_flush_unused(s, sh);
				sheaf_free(s, sh);
			}
	}
}

/* A sheaf of the cache holds object starts of its slabs, within capacity. */
static int verify_sheaf(struct za_kmem_cache *s, const struct sheaf *sh, const char *where, int id,
			const char *what)
{
	if (!sh || sh == &empty_sheaf)
		return 0;
	VERIFY(sh->capacity == s->sheaf_capacity && sh->size <= sh->capacity,
	       "cache %s %s %d: its %s sheaf holds %u of %u (capacity %u)", s->name, where, id,
	       what, sh->size, sh->capacity, s->sheaf_capacity);
	for (unsigned int i = 0; i < sh->size; i++) {
		struct za_page *slab = addr_in_arena(s->mm, sh->objects[i]) ?
					       virt_to_slab(s->mm, sh->objects[i]) : NULL;
		VERIFY(slab && slab->slab_cache == s &&
			       object_in_slab(s, slab, sh->objects[i], slab_objects(slab)),
		       "cache %s %s %d: its %s sheaf holds %p, not an object of the cache", s->name,
		       where, id, what, sh->objects[i]);
	}
	return 0;
}

/* Under pcs's lock.  A cache without sheaves has none; one with them:
 * each within capacity, the spare full or empty (and none with the static
 * main). */
static int verify_cpu_sheaves(struct za_kmem_cache *s, struct slub_percpu_sheaves *pcs, int cpu)
{
	const struct sheaf *spare = pcs->spare;
	VERIFY(s->sheaf_capacity || (pcs->main == &empty_sheaf && !spare),
	       "cache %s cpu %d: sheaves without a capacity", s->name, cpu);
	VERIFY(!spare || ((!spare->size || spare->size == spare->capacity) &&
			  pcs->main != &empty_sheaf),
	       "cache %s cpu %d: a spare sheaf of %u objects (main %u)", s->name, cpu,
	       spare ? spare->size : 0, pcs->main->size);
	VERIFY(!pcs->rcu_free || pcs->rcu_free->size < pcs->rcu_free->capacity,
	       "cache %s cpu %d: a full rcu_free sheaf not waiting", s->name, cpu);
	return verify_sheaf(s, pcs->main, "cpu", cpu, "main") ||
	       verify_sheaf(s, spare, "cpu", cpu, "spare") ||
	       verify_sheaf(s, pcs->rcu_free, "cpu", cpu, "rcu_free") ? -1 : 0;
}

/* A barn's lists whole, and what its full sheaves hold. */
static int verify_barn(struct za_kmem_cache *s, struct barn *b, int node)
{
	if (barn_verify(s->mm, b, s->sheaf_capacity, s->name))
		return -1;
	for (const struct sheaf *sh = b->full; sh; sh = sh->next)
		if (verify_sheaf(s, sh, "node", node, "barn's full"))
			return -1;
	return 0;
}

/* Every CPU's sheaves and every barn.  Under every lock of the cache
 * (slab_lock_all). */
int pcs_verify(struct za_kmem_cache *s)
{
	for (int cpu = 0; cpu < s->mm->nr_cpus; cpu++)
		if (verify_cpu_sheaves(s, &s->cpu_sheaves[cpu], cpu))
			return -1;
	for (int node = 0; node < s->mm->nr_nodes; node++)
		if (verify_barn(s, &s->barn[node], node))
			return -1;
	return 0;
}
