/*
 * Reclaim: per-zone active and inactive file LRU lists, the aging rules,
 * shrinkers, one kswapd thread per node, and direct reclaim.
 *
 * Aging (the kernel's two-list LRU): a page enters the inactive list; an
 * access sets PG_referenced, a second access while it is referenced and
 * inactive moves it to the active list.  Reclaim scans the inactive tail
 * and decides as the kernel's page_check_references does for file pages,
 * a user's reference (za_file_get_page, a read or write in progress)
 * playing the part of a mapping: a page in use and referenced is
 * activated, one in use but not referenced is kept and marked referenced,
 * one only referenced gets a second chance (back to the head, bit
 * cleared); the rest are written back if dirty and freed.  The active list
 * is aged into the inactive one whenever the inactive list is too small
 * for the zone (inactive * sqrt(10 * GiB) < active).
 *
 * kswapd counts the balance runs in a row that reclaimed nothing; after
 * MAX_RECLAIM_RETRIES the node is hopeless: kswapd sleeps and ignores
 * wakeups until reclaim frees some of the node's pages again.  The per-CPU
 * page lists are not a shrinker: draining them is not reclaim, and only the
 * page allocator's slow path does it, after a failed direct reclaim round.
 *
 * Pages are isolated from their lists under lru_lock and processed without
 * it; file close takes reclaim_lock for writing, so it never sees a page of
 * its file in the middle of reclaim.
 */
#include "vmscan.h"
#include "probes.h"
#include "pcp.h"
#include "mm_layers.h"

#include <errno.h>
#include <stdlib.h>

struct kswapd {
	struct za_mm *mm;
	int node;
	pthread_t thread;
	_Atomic uint32_t wake_seq;      /* futex word: bumped by every wakeup */
	atomic_bool sleeping;
	atomic_bool stop;
	/* What the wakers asked for since kswapd last went to sleep: the
	 * largest order (taken by the next balance run) and the highest zone
	 * any of them could use (reset when kswapd sleeps). */
	_Atomic int order;
	_Atomic int highest_zone;
	atomic_int failures;            /* balance runs in a row that reclaimed nothing */
	bool program_gone;              /* stopped because no thread of the program is left */
	sigset_t program_mask;          /* of the thread that started it */
};

struct scan_control {
	bool kswapd;
	unsigned long nr_scanned, nr_reclaimed;
	int priority;
};

#define KSWAPD_NAP_NS (10 * 1000 * 1000)   /* the kernel's HZ/10 nap, shortened */

static struct za_zone *page_zone(struct za_mm *mm, struct za_page *page)
{
	return mm->zone_by_id[page->zone];
}

/* Under lru_lock, as every change of the lists. */
static void lru_count(struct za_zone *z, int lru, long n)
{
	za_lock_assert_held(z->mm, &z->lru_lock);
	store_relaxed(&z->nr_lru[lru], load_relaxed(&z->nr_lru[lru]) + n);
	VM_BUG_ON(z->mm, load_relaxed(&z->nr_lru[lru]) < 0);
}

/* Do the page's flags say it is on list lru? */
static inline bool page_on_lru(const struct za_page *page, int lru)
{
	uint32_t f = page_flags(page);
	return (f & PG_lru) && !(f & PG_active) == (lru == LRU_INACTIVE);
}

/* ------------------------------------------------------------------------
 * The page cache's side
 * ------------------------------------------------------------------------ */
void lru_add(struct za_mm *mm, struct za_page *page)
{
	struct za_zone *z = page_zone(mm, page);
	za_lock(&z->lru_lock);
	VM_BUG_ON_PAGE(mm, (page_flags(page) & (PG_lru | PG_active)) || !page->mapping, page);
	set_page_flag(page, PG_lru);
	list_add(&page->lru, &z->lru[LRU_INACTIVE]);
	lru_count(z, LRU_INACTIVE, 1);
	za_unlock(&z->lru_lock);
}

void lru_del(struct za_mm *mm, struct za_page *page)
{
	struct za_zone *z = page_zone(mm, page);
	za_lock(&z->lru_lock);
	if (test_and_clear_page_flag(page, PG_lru)) {
		list_del(&page->lru);
		lru_count(z, test_page_flag(page, PG_active) ? LRU_ACTIVE : LRU_INACTIVE, -1);
	}
	za_unlock(&z->lru_lock);
}

/* First access: referenced.  Second access while inactive: activate. */
void mark_page_accessed(struct za_mm *mm, struct za_page *page)
{
	if (!test_and_set_page_flag(page, PG_referenced) || test_page_flag(page, PG_active))
		return;
	struct za_zone *z = page_zone(mm, page);
	za_lock(&z->lru_lock);
	if (page_on_lru(page, LRU_INACTIVE)) {
		list_del(&page->lru);
		list_add(&page->lru, &z->lru[LRU_ACTIVE]);
		lru_count(z, LRU_INACTIVE, -1);
		lru_count(z, LRU_ACTIVE, 1);
		set_page_flag(page, PG_active);
		clear_page_flag(page, PG_referenced);
		ev_add(&z->stat, EV_PGACTIVATE, 1);
	}
	za_unlock(&z->lru_lock);
}

/* ------------------------------------------------------------------------
 * Shrinking the lists
 * ------------------------------------------------------------------------ */
static unsigned long int_sqrt(unsigned long x)
{
	unsigned long r = 0;
	while ((r + 1) * (r + 1) <= x)
		r++;
	return r;
}

/* The kernel's inactive_is_low: the target ratio grows with the square
 * root of the lists' size in GiB (1 GiB: 3, 10 GiB: 10). */
static bool inactive_is_low(struct za_zone *z)
{
	long inactive = load_relaxed(&z->nr_lru[LRU_INACTIVE]);
	long active = load_relaxed(&z->nr_lru[LRU_ACTIVE]);
	unsigned long gb = (unsigned long)(inactive + active) >> (30 - PAGE_SHIFT);
	unsigned long ratio = gb ? int_sqrt(10 * gb) : 1;
	return (unsigned long)inactive * ratio < (unsigned long)active;
}

/* Moves up to nr pages from the active tail to the inactive head. */
static void shrink_active_list(struct za_zone *z, unsigned long nr)
{
	za_lock(&z->lru_lock);
	unsigned long moved = 0;
	while (moved < nr && !list_empty(&z->lru[LRU_ACTIVE])) {
		struct za_page *page = container_of(z->lru[LRU_ACTIVE].prev, struct za_page, lru);
		VM_BUG_ON_PAGE(z->mm, !page_on_lru(page, LRU_ACTIVE), page);
		list_del(&page->lru);
		clear_page_flag(page, PG_active);
		list_add(&page->lru, &z->lru[LRU_INACTIVE]);
		moved++;
	}
	lru_count(z, LRU_ACTIVE, -(long)moved);
	lru_count(z, LRU_INACTIVE, (long)moved);
	ev_add(&z->stat, EV_PGDEACTIVATE, moved);
	za_unlock(&z->lru_lock);
}

/* Has kswapd given up on its node (MAX_RECLAIM_RETRIES runs in a row
 * without progress)? */
static bool kswapd_hopeless(const struct kswapd *k)
{
	return atomic_load(&k->failures) >= MAX_RECLAIM_RETRIES;
}

/* Some reclaim freed pages of the node: kswapd may work for it again. */
static void node_made_progress(struct za_mm *mm, int node)
{
	struct kswapd *k = mm->nodes[node].kswapd;
	if (k && atomic_load_explicit(&k->failures, memory_order_relaxed))
		atomic_store(&k->failures, 0);
}

enum page_references { PAGEREF_RECLAIM, PAGEREF_KEEP, PAGEREF_ACTIVATE };

/*
 * The fate of an isolated inactive page (see the top of the file).  A
 * locked page (its read is in flight) is kept untouched.  Activation
 * leaves PG_referenced clear, as mark_page_accessed does.
 */
static enum page_references page_check_references(struct za_page *page)
{
	if (test_page_flag(page, PG_locked))
		return PAGEREF_KEEP;
	bool referenced = test_and_clear_page_flag(page, PG_referenced);
	if (load_relaxed(&page->refcount) > 1) {
		if (referenced)
			return PAGEREF_ACTIVATE;
		set_page_flag(page, PG_referenced);
		return PAGEREF_KEEP;
	}
	return referenced ? PAGEREF_KEEP : PAGEREF_RECLAIM;
}

/* Frees an isolated page if nobody uses it and it is clean. */
static bool reclaim_page(struct za_mm *mm, struct za_page *page)
{
	if (load_relaxed(&page->refcount) > 1 || test_page_flag(page, PG_locked) ||
	    !remove_from_page_cache(page))
		return false;
	za_free_pages(mm, za_page_to_virt(mm, page), 0);
	return true;
}

/* Puts the survivors of a scan back: activated ones at the head of the
 * active list, the others at the head of the inactive list.  Under
 * lru_lock. */
static void putback_pages(struct za_zone *z, struct za_page **pages,
			  const enum page_references *refs, int n)
{
	long activated = 0;
	za_lock_assert_held(z->mm, &z->lru_lock);
	for (int i = 0; i < n; i++) {
		bool activate = refs[i] == PAGEREF_ACTIVATE;
		VM_BUG_ON_PAGE(z->mm, page_flags(pages[i]) & (PG_lru | PG_active), pages[i]);
		if (activate)
			set_page_flag(pages[i], PG_active);
		set_page_flag(pages[i], PG_lru);
		list_add(&pages[i]->lru, &z->lru[activate ? LRU_ACTIVE : LRU_INACTIVE]);
		activated += activate;
	}
	lru_count(z, LRU_ACTIVE, activated);
	lru_count(z, LRU_INACTIVE, n - activated);
	ev_add(&z->stat, EV_PGACTIVATE, (uint64_t)activated);
	ev_add(&z->stat, EV_PGROTATED, (uint64_t)(n - activated));
}

/*
 * Scans up to nr (at most SWAP_CLUSTER_MAX) pages from the tail of the
 * inactive list: isolate them under lru_lock; without it, decide each
 * page's fate, write the dirty ones to be reclaimed back (consecutive file
 * pages in one I/O), free the clean ones; put the survivors back.
 */
static void shrink_inactive_list(struct za_mm *mm, struct za_zone *z, unsigned long nr,
				 struct scan_control *sc)
{
	struct za_page *pages[SWAP_CLUSTER_MAX], *dirty[SWAP_CLUSTER_MAX];
	enum page_references refs[SWAP_CLUSTER_MAX];
	int n = 0, ndirty = 0;
	unsigned long reclaimed = 0;

	za_lock(&z->lru_lock);
	while ((unsigned long)n < nr && n < SWAP_CLUSTER_MAX && !list_empty(&z->lru[LRU_INACTIVE])) {
		struct za_page *page = container_of(z->lru[LRU_INACTIVE].prev, struct za_page, lru);
		VM_BUG_ON_PAGE(mm, !page_on_lru(page, LRU_INACTIVE), page);
		list_del(&page->lru);
		clear_page_flag(page, PG_lru);
		pages[n++] = page;
	}
	lru_count(z, LRU_INACTIVE, -n);
	ev_add(&z->stat, sc->kswapd ? EV_PGSCAN_KSWAPD : EV_PGSCAN_DIRECT, (uint64_t)n);
	za_unlock(&z->lru_lock);

	for (int i = 0; i < n; i++) {
		refs[i] = page_check_references(pages[i]);
		if (refs[i] == PAGEREF_RECLAIM && test_page_flag(pages[i], PG_dirty))
			dirty[ndirty++] = pages[i];
	}
	unsigned long written = 0;
	if (ndirty)
		writeback_pages(dirty, ndirty, &written);   /* failed pages stay dirty: kept */
	int kept = 0;
	for (int i = 0; i < n; i++) {
		if (refs[i] == PAGEREF_RECLAIM && reclaim_page(mm, pages[i])) {
			reclaimed++;
		} else {
			refs[kept] = refs[i];
			pages[kept++] = pages[i];
		}
	}

	za_lock(&z->lru_lock);
	putback_pages(z, pages, refs, kept);
	ev_add(&z->stat, sc->kswapd ? EV_PGSTEAL_KSWAPD : EV_PGSTEAL_DIRECT, reclaimed);
	ev_add(&z->stat, EV_PGWRITE_RECLAIM, written);
	za_unlock(&z->lru_lock);
	sc->nr_scanned += (unsigned long)n;
	sc->nr_reclaimed += reclaimed;
}

/* One pass over a zone at a priority: lru_size >> priority pages of each
 * list (at least a cluster), deactivating first if the inactive list is
 * low.  Progress makes the node's kswapd hopeful again. */
static void shrink_zone(struct za_mm *mm, struct za_zone *z, struct scan_control *sc)
{
	unsigned long before = sc->nr_reclaimed;
	unsigned long active = (unsigned long)load_relaxed(&z->nr_lru[LRU_ACTIVE]);
	unsigned long inactive = (unsigned long)load_relaxed(&z->nr_lru[LRU_INACTIVE]);
	if (inactive_is_low(z)) {
		unsigned long nr = active >> sc->priority;
		shrink_active_list(z, nr > SWAP_CLUSTER_MAX ? nr : SWAP_CLUSTER_MAX);
		inactive = (unsigned long)load_relaxed(&z->nr_lru[LRU_INACTIVE]);
	}
	unsigned long nr = inactive >> sc->priority;
	if (nr < SWAP_CLUSTER_MAX)
		nr = SWAP_CLUSTER_MAX;
	pthread_rwlock_rdlock(&mm->reclaim_lock);
	for (unsigned long done = 0; done < nr; done += SWAP_CLUSTER_MAX)
		shrink_inactive_list(mm, z, SWAP_CLUSTER_MAX, sc);
	pthread_rwlock_unlock(&mm->reclaim_lock);
	if (sc->nr_reclaimed > before)
		node_made_progress(mm, z->node);
}

/* ------------------------------------------------------------------------
 * Shrinkers
 * ------------------------------------------------------------------------ */
void *za_shrinker_register(za_mm_t *mm, unsigned long (*count)(void *ctx),
			   unsigned long (*scan)(void *ctx, unsigned long nr), void *ctx)
{
	struct shrinker *s = za_os_alloc(sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	*s = (struct shrinker){ count, scan, ctx, NULL };
	za_lock(&mm->shrinker_lock);
	s->next = mm->shrinkers;
	mm->shrinkers = s;
	za_unlock(&mm->shrinker_lock);
	return s;
}

void za_shrinker_unregister(za_mm_t *mm, void *handle)
{
	za_lock(&mm->shrinker_lock);
	for (struct shrinker **p = &mm->shrinkers; *p; p = &(*p)->next)
		if (*p == handle) {
			*p = (*p)->next;
			break;
		}
	za_unlock(&mm->shrinker_lock);
	za_os_free(handle, sizeof(struct shrinker));
}

/* Asks every shrinker for freeable >> priority of what it holds (all of
 * it at priority 0).  Under shrinker_lock: shrinkers must not register
 * from their callbacks. */
static unsigned long shrink_slab(struct za_mm *mm, int priority)
{
	unsigned long freed = 0;
	za_lock(&mm->shrinker_lock);
	for (struct shrinker *s = mm->shrinkers; s; s = s->next) {
		unsigned long have = s->count(s->ctx);
		if (!have)
			continue;
		unsigned long nr = have >> priority;
		if (!nr)
			nr = have < SWAP_CLUSTER_MAX ? have : SWAP_CLUSTER_MAX;
		ev_add_atomic(&mm->stat, EV_SLABS_SCANNED, nr);
		freed += s->scan(s->ctx, nr);
	}
	za_unlock(&mm->shrinker_lock);
	return freed;
}

static unsigned long shrinker_count(struct za_mm *mm)
{
	unsigned long n = 0;
	za_lock(&mm->shrinker_lock);
	for (struct shrinker *s = mm->shrinkers; s; s = s->next)
		n += s->count(s->ctx);
	za_unlock(&mm->shrinker_lock);
	return n;
}

unsigned long reclaimable_pages(struct za_mm *mm, struct za_zone **zonelist)
{
	unsigned long n = 0;
	for (struct za_zone **zp = zonelist; *zp; zp++)
		n += (unsigned long)(load_relaxed(&(*zp)->nr_lru[LRU_ACTIVE]) +
				     load_relaxed(&(*zp)->nr_lru[LRU_INACTIVE]));
	return n + shrinker_count(mm);
}

/* ------------------------------------------------------------------------
 * Direct reclaim
 * ------------------------------------------------------------------------ */
unsigned long try_to_free_pages(struct za_mm *mm, struct za_zone **zonelist, int highest_zone,
				unsigned int order)
{
	struct scan_control sc = { .kswapd = false };
	ev_add_atomic(&mm->stat, EV_ALLOCSTALL, 1);
	for (sc.priority = DEF_PRIORITY; sc.priority >= 0; sc.priority--) {
		for (struct za_zone **zp = zonelist; *zp; zp++)
			if ((*zp)->idx <= highest_zone)
				shrink_zone(mm, *zp, &sc);
		sc.nr_reclaimed += shrink_slab(mm, sc.priority);
		if (sc.nr_reclaimed >= SWAP_CLUSTER_MAX)
			break;
	}
	ZA_PROBE2(reclaim, order, sc.nr_reclaimed);
	return sc.nr_reclaimed;
}

/* ------------------------------------------------------------------------
 * kswapd
 * ------------------------------------------------------------------------ */
/* Above the high watermark, with the reserve that protects the zone from
 * allocations that could have used a higher zone (up to highest_zone). */
static bool zone_balanced(struct za_zone *z, unsigned int order, int highest_zone)
{
	long free = load_relaxed(&z->nr_free_pages) - ((1L << order) - 1);
	if (free <= (long)(z->wmark[WMARK_HIGH] + z->lowmem_reserve[highest_zone]))
		return false;
	for (unsigned int o = order; o <= z->mm->max_order; o++)
		if (load_relaxed(&z->free_area[o].nr_free))
			return true;
	return false;
}

static bool node_balanced(struct za_mm *mm, int node, unsigned int order, int highest_zone)
{
	for (int i = 0; i <= highest_zone; i++)
		if (!zone_balanced(&mm->nodes[node].zones[i], order, highest_zone))
			return false;
	return true;
}

/*
 * One balance run: reclaims the node's zones up to highest that are below
 * their high watermark until all are balanced, raising the scan priority
 * when a pass frees nothing, so a run without progress is DEF_PRIORITY + 1
 * passes.  Takes the order the wakers asked for.
 */
/* pcp_high_auto: while kswapd balances the zones up to highest, their
 * CPUs' lists keep little (the kernel's ZONE_RECLAIM_ACTIVE). */
static void set_reclaim_active(struct za_mm *mm, int node, int highest, bool active)
{
	if (!mm->pcp_high_auto)
		return;
	for (int i = 0; i <= highest; i++) {
		_Atomic unsigned int *flags = &mm->nodes[node].zones[i].pcp_flags;
		if (active)
			atomic_fetch_or_explicit(flags, ZONE_RECLAIM_ACTIVE, memory_order_relaxed);
		else
			atomic_fetch_and_explicit(flags, ~(unsigned int)ZONE_RECLAIM_ACTIVE,
						  memory_order_relaxed);
	}
}

static void balance_node(struct kswapd *k, int highest)
{
	struct za_mm *mm = k->mm;
	unsigned int order = (unsigned int)atomic_exchange(&k->order, 0);
	struct scan_control sc = { .kswapd = true, .priority = DEF_PRIORITY };
	set_reclaim_active(mm, k->node, highest, true);
	while (sc.priority >= 0 && !atomic_load(&k->stop)) {
		unsigned long before = sc.nr_reclaimed;
		bool balanced = true;
		for (int i = 0; i <= highest; i++) {
			struct za_zone *z = &mm->nodes[k->node].zones[i];
			if (zone_balanced(z, order, highest))
				continue;
			balanced = false;
			shrink_zone(mm, z, &sc);
		}
		if (balanced)
			break;
		sc.nr_reclaimed += shrink_slab(mm, sc.priority);
		if (sc.nr_reclaimed == before)
			sc.priority--;
	}
	set_reclaim_active(mm, k->node, highest, false);
	if (sc.nr_reclaimed)
		atomic_store(&k->failures, 0);
	else
		atomic_fetch_add(&k->failures, 1);
}

/* Raises *v to at least x. */
static void atomic_max(_Atomic int *v, int x)
{
	int old = atomic_load(v);
	while (x > old && !atomic_compare_exchange_weak(v, &old, x))
		;
}

/* Until a wakeup (destroy wakes it too), or the program is gone: a helper
 * never keeps the process alive (platform.h). */
static void kswapd_deep_sleep(struct kswapd *k, uint32_t seq)
{
	if (!atomic_load(&k->stop) && !za_helper_sleep(&k->wake_seq, seq, UINT64_MAX)) {
		k->program_gone = true;
		atomic_store(&k->stop, true);
	}
}

/*
 * Sleeps until woken, forgetting the highest zone the wakers asked for
 * (highest, what kswapd balanced) -- unless one asked for a higher zone
 * since kswapd looked: then it looks again.  First a short nap: a wakeup
 * during it means the low watermark was hit again quickly after
 * balancing; the node unbalanced again at its end, that the high one was.
 * A hopeless node is left to direct reclaim.
 */
static void kswapd_sleep(struct kswapd *k, uint32_t seq, int highest)
{
	if (!atomic_compare_exchange_strong(&k->highest_zone, &highest, 0))
		return;
	atomic_store(&k->sleeping, true);
	if (atomic_load(&k->wake_seq) == seq && !atomic_load(&k->stop))
		za_futex_wait_timeout(&k->wake_seq, seq, KSWAPD_NAP_NS);
	if (atomic_load(&k->wake_seq) != seq) {
		ev_add_atomic(&k->mm->stat, EV_KSWAPD_LOW_WMARK_HIT_QUICKLY, 1);
	} else if (!kswapd_hopeless(k) && !node_balanced(k->mm, k->node, 0, highest)) {
		atomic_max(&k->highest_zone, highest);
		ev_add_atomic(&k->mm->stat, EV_KSWAPD_HIGH_WMARK_HIT_QUICKLY, 1);
	} else {
		kswapd_deep_sleep(k, seq);
	}
	atomic_store(&k->sleeping, false);
}

static void *kswapd_main(void *arg)
{
	struct kswapd *k = arg;
	za_thread_name("za-kswapd");
	while (!atomic_load(&k->stop)) {
		uint32_t seq = atomic_load(&k->wake_seq);
		int highest = atomic_load(&k->highest_zone);
		if (kswapd_hopeless(k) ||
		    node_balanced(k->mm, k->node, (unsigned int)atomic_load(&k->order), highest))
			kswapd_sleep(k, seq, highest);
		else
			balance_node(k, highest);
	}
	za_thread_exit(k->program_gone ? &k->program_mask : NULL);
	return NULL;
}

/*
 * The allocator's wakeup.  kswapd_wake_high=1 (seed 003): wake it unless
 * the zone is balanced at the high watermark, the mark kswapd works to;
 * =0: only when the zone is below its low watermark, so a zone hovering
 * between low and high can miss a whole aging cycle.  The order and the
 * highest zone only ever grow until kswapd takes them, so that one waker
 * cannot hide what another asked for; a running kswapd sees them on its
 * next run.  Only the waker that clears `sleeping` wakes kswapd (and counts
 * it), as only the first finds it on the kernel's wait queue.  A hopeless
 * node's kswapd is not woken.  Returns whether kswapd is (now) running for
 * the zone's node.
 */
bool wakeup_kswapd(struct za_zone *z, unsigned int order, int highest_zone)
{
	struct za_mm *mm = z->mm;
	struct kswapd *k = mm->nodes[z->node].kswapd;
	if (!k || kswapd_hopeless(k))
		return false;           /* kswapd=0, or nothing it could do */
	bool sleeping = atomic_load(&k->sleeping);
	bool ok = mm->kswapd_wake_high
			  ? zone_balanced(z, order, highest_zone)
			  : load_relaxed(&z->nr_free_pages) >
				    (long)(z->wmark[WMARK_LOW] + z->lowmem_reserve[highest_zone]);
	if (ok && sleeping)
		return false;
	if (!ok) {
		atomic_max(&k->order, (int)order);
		atomic_max(&k->highest_zone, highest_zone);
	}
	if (!sleeping || !atomic_exchange(&k->sleeping, false))
		return true;            /* running, or another waker woke it */
	/* kswapd gives up before it sleeps: if it did since the check
	 * above, this waker found it asleep for good and leaves it so. */
	if (kswapd_hopeless(k)) {
		atomic_store(&k->sleeping, true);
		return false;
	}
	atomic_fetch_add(&k->wake_seq, 1);
	za_futex_wake(&k->wake_seq, 1);
	ev_add_atomic(&mm->stat, EV_KSWAPD_WAKEUP, 1);
	ZA_PROBE2(kswapd_wake, z->node, order);
	return true;
}

/* ------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------ */
int vmscan_init(struct za_mm *mm)
{
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&mm->reclaim_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	for (int i = 0; i < NR_MM_LAYERS; i++)
		if (mm_layers[i].count && !za_shrinker_register(mm, mm_layers[i].count,
								 mm_layers[i].scan, mm))
			return -1;
	for (int n = 0; n < mm->nr_nodes && mm->cfg.kswapd; n++) {
		struct kswapd *k = za_os_alloc(sizeof(*k));
		if (!k)
			return -1;
		*k = (struct kswapd){ .mm = mm, .node = n };
		mm->nodes[n].kswapd = k;
		if (za_thread_start(&k->thread, NULL, kswapd_main, k, &k->program_mask)) {
			mm->nodes[n].kswapd = NULL;
			za_os_free(k, sizeof(*k));
			errno = EAGAIN;
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * The reclaim layer's hooks (mm_layers.c)
 * ------------------------------------------------------------------------ */
void reclaim_exit(struct za_mm *mm)
{
	filemap_close_all(mm);
	vmscan_exit(mm);
}

/* The rwlock remembers its holder: in a forked child it is made anew. */
void reclaim_lock_all(struct za_mm *mm, enum lock_all_mode mode)
{
	if (mode == LOCK_ALL) {
		pthread_rwlock_wrlock(&mm->reclaim_lock);
		za_lock(&mm->files_lock);
		za_lock(&mm->shrinker_lock);
		return;
	}
	za_unlock(&mm->shrinker_lock);
	za_unlock(&mm->files_lock);
	if (mode == UNLOCK_ALL_IN_CHILD)
		pthread_rwlock_init(&mm->reclaim_lock, NULL);
	else
		pthread_rwlock_unlock(&mm->reclaim_lock);
}

/* A page's LRU flags agree with the list it is on, and each list's count
 * with its length. */
static int verify_lru(struct za_zone *z, int lru)
{
	struct za_mm *mm = z->mm;
	long n = 0;
	for (struct za_list *l = z->lru[lru].next; l != &z->lru[lru]; l = l->next, n++) {
		const struct za_page *page = container_of(l, struct za_page, lru);
		VERIFY(page_on_lru(page, lru) && page->mapping,
		       "zone %s: page pfn %lu on the %s list has flags %#x", z->name,
		       page_to_pfn(mm, page), lru == LRU_ACTIVE ? "active" : "inactive",
		       page_flags(page));
	}
	VERIFY(n == load_relaxed(&z->nr_lru[lru]), "zone %s: %ld pages on the %s list, counted %ld",
	       z->name, n, lru == LRU_ACTIVE ? "active" : "inactive", load_relaxed(&z->nr_lru[lru]));
	return 0;
}

int reclaim_verify(struct za_mm *mm)
{
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		struct za_zone *z = mm->zone_by_id[id];
		za_lock(&z->lru_lock);
		int r = verify_lru(z, LRU_INACTIVE) || verify_lru(z, LRU_ACTIVE) ? -1 : 0;
		za_unlock(&z->lru_lock);
		if (r)
			return -1;
	}
	return 0;
}

void vmscan_exit(struct za_mm *mm)
{
	for (int n = 0; n < mm->nr_nodes; n++) {
		struct kswapd *k = mm->nodes[n].kswapd;
		if (!k)
			continue;
		atomic_store(&k->stop, true);
		atomic_fetch_add(&k->wake_seq, 1);
		za_futex_wake(&k->wake_seq, 1);
		pthread_join(k->thread, NULL);
		za_os_free(k, sizeof(*k));
		mm->nodes[n].kswapd = NULL;
	}
	while (mm->shrinkers)
		za_shrinker_unregister(mm, mm->shrinkers);
	pthread_rwlock_destroy(&mm->reclaim_lock);
}
