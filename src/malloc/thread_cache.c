/*
 * A thread's cache: its life (created on the thread's first allocation,
 * given back by the pthread key's destructor, forgotten in a forked child
 * but for the forking thread) and the page blocks it keeps.
 *
 * The page blocks a thread freed last are kept, marked freed in their
 * descriptors (a second free is a double free), oldest first, within a
 * few slots and bytes; malloc takes the newest of the size it needs.
 */
#include "internal.h"

#include <string.h>

#define EMPTY_SHEAVES { [0 ... NR_CLASSES - 1] = &empty_sheaf }
#define EMPTY_MAIN { [0 ... ZERO_SLOT] = &empty_sheaf }
#define STATIC_TCACHE(...) { .main = EMPTY_MAIN, .spare = EMPTY_SHEAVES, \
			    .remote = EMPTY_SHEAVES, __VA_ARGS__ }
struct thread_cache boot_tcache = STATIC_TCACHE();
struct thread_cache exited_tcache = STATIC_TCACHE(.exited = true);
/* Where the purge worker turns an idle thread's pointer (thread_caches_note_idle). */
static struct thread_cache idle_tcache = STATIC_TCACHE();
__thread struct thread_cache *_Atomic tcache __attribute__((tls_model("initial-exec"))) = &boot_tcache;
/* The thread's own cache, whatever tcache leads to meanwhile. */
static __thread struct thread_cache *own_tcache __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------ */
static struct thread_cache *thread_cache_create(void)
{
	struct thread_cache *tc = za_cache_alloc(zm.thread_cache_cache, 0);
	if (!tc)
		return NULL;
	*tc = boot_tcache;
	tc->id = (uint16_t)(atomic_fetch_add_explicit(&zm.thread_ids, 1, memory_order_relaxed) %
			    0xFFFF + 1);
	VM_BUG_ON(zm.mm, own_tcache || !tc->id);       /* one cache a thread; 0 is no owner */
	za_lock(&zm.threads_lock);
	tc->next = zm.threads;
	if (tc->next)
		tc->next->prev = tc;
	zm.threads = tc;
	za_unlock(&zm.threads_lock);
	tc->home = &tcache;
	own_tcache = tc;
	/* Set before pthread_setspecific, which may itself allocate. */
	store_relaxed(&tcache, tc);
	pthread_setspecific(zm.thread_key, tc);
	return tc;
}

/* The purge worker found this thread idle: now that it calls again, it
 * flushes as malloc_trim does, so that what an idle thread held is purged
 * like the rest.  The pointer is restored first: a worker turning it
 * again meanwhile costs one more flush, never a lost object. */
static struct thread_cache *thread_cache_wake(void)
{
	store_relaxed(&tcache, own_tcache);
	sheaves_flush_thread();
	counter_add_atomic(&zm.idle_flushes, 1);
	return own_tcache;
}

/* The thread's cache, created on its first allocation; NULL for a thread
 * that has exited (its key destructors may still allocate) or when no
 * memory is left for one. */
struct thread_cache *this_thread_cache(void)
{
	struct thread_cache *tc = load_relaxed(&tcache);
	if (unlikely(tc == &idle_tcache))
		return thread_cache_wake();
	if (tc == &exited_tcache)
		return NULL;
	return tc == &boot_tcache ? thread_cache_create() : tc;
}

/* Idle for this many of the purge worker's rounds (purge_delay_ms/2
 * each), a thread gives its cache back at its next call. */
#define IDLE_ROUNDS 2

/*
 * The purge worker's round: a thread whose counters have not moved for
 * IDLE_ROUNDS rounds is idle, and its pointer is turned to idle_tcache.
 * Only the thread touches its sheaves, so it is the thread that gives
 * them back, at its next call: every sheaf of idle_tcache has capacity
 * 0, so that call misses and finds it (this_thread_cache).  The fast
 * paths pay nothing for it.  Without ZA_STATS the hits are not counted
 * (count_hit), so a thread whose calls all hit its sheaves also looks idle
 * and gives them back at a call two rounds on: a refill a second, for
 * nothing a program notices.  The list lock keeps the thread's TLS alive
 * (a thread leaves the list before it exits).
 */
void thread_caches_note_idle(void)
{
	za_lock(&zm.threads_lock);
	for (struct thread_cache *tc = zm.threads; tc; tc = tc->next) {
		VM_BUG_ON(zm.mm, tc->next && tc->next->prev != tc);
		uint64_t seen = load_relaxed(&tc->alloc_hits) + load_relaxed(&tc->alloc_misses) +
				load_relaxed(&tc->free_hits) + load_relaxed(&tc->free_misses);
		tc->idle_rounds = seen == tc->activity ? tc->idle_rounds + 1 : 0;
		tc->activity = seen;
		if (tc->idle_rounds == IDLE_ROUNDS && load_relaxed(tc->home) == tc)
			store_relaxed(tc->home, &idle_tcache);
	}
	za_unlock(&zm.threads_lock);
}

/* ------------------------------------------------------------------------
 * The thread's page blocks
 * ------------------------------------------------------------------------ */
/* The block goes back to the page allocator. */
static void block_release(void *p, unsigned long pages)
{
	VM_BUG_ON(zm.mm, block_word_pages(block_word(virt_to_page(zm.mm, p))) != pages);
	set_block_word(virt_to_page(zm.mm, p), 0, 0, 0, false);
	za_free_pages_exact(zm.mm, p, pages << PAGE_SHIFT);
}

/* Takes slot i out, keeping the others in order. */
static void *take_slot(struct thread_cache *tc, unsigned int i)
{
	void *p = tc->blocks[i];
	/* A kept block is marked freed, as many pages as its slot says. */
	VM_BUG_ON(zm.mm, i >= tc->nr_blocks || block_word(virt_to_page(zm.mm, p)) !=
					      (tc->block_pages[i] << BLOCK_PAGES_SHIFT | 1));
	tc->block_bytes -= tc->block_pages[i] << PAGE_SHIFT;
	tc->nr_blocks--;
	memmove(&tc->blocks[i], &tc->blocks[i + 1], (tc->nr_blocks - i) * sizeof(void *));
	memmove(&tc->block_pages[i], &tc->block_pages[i + 1],
		(tc->nr_blocks - i) * sizeof(tc->block_pages[0]));
	return p;
}

/*
 * Mobility grouping for the malloc, as the kernel groups its pages: blocks
 * of half a pageblock or more -- those a fragmented zone fails to serve --
 * are movable and kept apart, so that the slabs (unmovable) do not scatter
 * over the pageblocks they need.  Smaller blocks live among the slabs and
 * reuse the memory slabs free, as slabs reuse theirs: kept apart, each
 * kind would hold its own resident memory.
 */
static za_gfp_t block_gfp(unsigned long pages)
{
	return pages >= 1UL << (zm.mm->pageblock_order - 1) ? ZA_GFP_MOVABLE : 0;
}

/* A page block of this many pages (block_pages()) aligned to align, for
 * a request of `requested` bytes: the newest this thread freed, else a
 * new one from the page allocator (a power of two of pages comes aligned
 * to its size; a freed block may not be, when realloc made it that size
 * in place).  Like block_free, it is a call that wakes an idle thread. */
void *block_alloc(unsigned long pages, size_t align, size_t requested)
{
	struct thread_cache *tc = this_thread_cache();
	void *p = NULL;
	for (unsigned int i = tc ? tc->nr_blocks : 0; i-- > 0 && !p;)
		if (tc->block_pages[i] == pages && !((uintptr_t)tc->blocks[i] & (align - 1)))
			p = take_slot(tc, i);
	if (!p && !(p = za_alloc_pages_exact(zm.mm, block_gfp(pages), pages << PAGE_SHIFT)))
		return NULL;
	set_block_word(virt_to_page(zm.mm, p), pages, requested, align, false);
	return p;
}

/* Keeps the block, marked freed; the oldest go to the page allocator when
 * the slots or the bytes run out. */
void block_free(void *p, unsigned long pages)
{
	struct thread_cache *tc = this_thread_cache();
	size_t bytes = pages << PAGE_SHIFT;
	if (!tc || bytes > BLOCK_CACHE_BYTES / 2) {
		block_release(p, pages);
		purge_worker_kick();
		return;
	}
	while (tc->nr_blocks == BLOCK_CACHE_SLOTS || tc->block_bytes + bytes > BLOCK_CACHE_BYTES) {
		unsigned long old_pages = tc->block_pages[0];
		block_release(take_slot(tc, 0), old_pages);
	}
	VM_BUG_ON(zm.mm, block_word(virt_to_page(zm.mm, p)) & 1);      /* free caught the double free */
	set_block_word(virt_to_page(zm.mm, p), pages, 0, 0, true);
	tc->blocks[tc->nr_blocks] = p;
	tc->block_pages[tc->nr_blocks++] = (unsigned int)pages;
	tc->block_bytes += bytes;
	purge_worker_kick();
}

static void release_blocks(struct thread_cache *tc)
{
	if (!tc->nr_blocks)
		return;
	while (tc->nr_blocks) {
		unsigned long pages = tc->block_pages[0];
		block_release(take_slot(tc, 0), pages);
	}
	purge_worker_kick();
}

/* The pthread key's destructor: the thread's objects go to the barn (whole
 * sheaves) or back to the slab caches, its counters to the totals. */
void thread_cache_exit(void *arg)
{
	struct thread_cache *tc = arg;
	VM_BUG_ON(zm.mm, tc != own_tcache);
	sheaves_give_back(tc);
	release_blocks(tc);
	VM_BUG_ON(zm.mm, tc->nr_blocks || tc->block_bytes);
	za_lock(&zm.threads_lock);
	if (tc->prev)
		tc->prev->next = tc->next;
	else
		zm.threads = tc->next;
	if (tc->next)
		tc->next->prev = tc->prev;
	za_unlock(&zm.threads_lock);
	counter_add_atomic(&zm.exited_alloc_hits, load_relaxed(&tc->alloc_hits));
	counter_add_atomic(&zm.exited_alloc_misses, load_relaxed(&tc->alloc_misses));
	counter_add_atomic(&zm.exited_free_hits, load_relaxed(&tc->free_hits));
	counter_add_atomic(&zm.exited_free_misses, load_relaxed(&tc->free_misses));
	store_relaxed(&tcache, &exited_tcache);
	own_tcache = NULL;
	za_cache_free(zm.thread_cache_cache, tc);
	purge_worker_thread_exit();
}

/* malloc_trim: this thread's sheaves back to the slab caches, its blocks
 * to the page allocator. */
void sheaves_flush_thread(void)
{
	struct thread_cache *tc = own_tcache;
	if (!tc)
		return;
	sheaves_empty(tc);
	release_blocks(tc);
}

void sheaves_fold_stats(uint64_t *alloc_hits, uint64_t *alloc_misses, uint64_t *free_hits,
			uint64_t *free_misses)
{
	*alloc_hits = load_relaxed(&zm.exited_alloc_hits);
	*alloc_misses = load_relaxed(&zm.exited_alloc_misses);
	*free_hits = load_relaxed(&zm.exited_free_hits);
	*free_misses = load_relaxed(&zm.exited_free_misses);
	za_lock(&zm.threads_lock);
	for (struct thread_cache *tc = zm.threads; tc; tc = tc->next) {
		*alloc_hits += load_relaxed(&tc->alloc_hits);
		*alloc_misses += load_relaxed(&tc->alloc_misses);
		*free_hits += load_relaxed(&tc->free_hits);
		*free_misses += load_relaxed(&tc->free_misses);
	}
	za_unlock(&zm.threads_lock);
	cpu_cache_fold_stats(alloc_hits, alloc_misses, free_hits, free_misses);
}

/*
 * In a forked child only the forking thread exists.  The other threads'
 * sheaves may have been mid-update when the fork happened, so their
 * objects are not trusted: they are forgotten (a bounded leak in the
 * child), and only this thread's cache stays listed.  Returns whether
 * other threads had caches, i.e. the parent was multithreaded.
 */
bool sheaves_after_fork_child(void)
{
	struct thread_cache *self = own_tcache;
	bool others = zm.threads && (zm.threads != self || self->next);
	zm.threads = self;
	if (self) {
		self->next = self->prev = NULL;
		store_relaxed(&tcache, self);   /* turned idle as the parent forked */
	}
	return others;
}
