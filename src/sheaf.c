/*
 * Per-thread sheaves and the barn: the layer in front of the malloc
 * front end's slab caches (the kernel's SLUB sheaves; Bonwick's magazines
 * and depot).
 *
 * A sheaf is an array of free objects of one class.  malloc pops from the
 * thread's main sheaf and free pushes onto it (malloc.c inlines both); only
 * when it runs empty or full does the thread come here:
 *
 *   empty main: swap with a full spare, else trade it at the barn for a
 *               full sheaf, else fill it from the slab cache in one bulk
 *               allocation;
 *   full main:  swap with an empty spare, else trade it at the barn for an
 *               empty sheaf (the barn sends full sheaves beyond its limit
 *               back to the slab cache in one bulk free).
 *
 * The spare is always full or empty, so a thread working at a sheaf
 * boundary swaps instead of trading.  Objects freed by a thread that did
 * not allocate them need nothing special: they are just objects of the
 * class, and a producer/consumer pair moves them as whole sheaves through
 * the barn, one lock per sheaf.
 *
 * Lock order: the barn lock and threads_lock are leaves; nothing else is
 * taken, and no memory is allocated or freed, while one is held.
 */
#include "malloc_internal.h"
#include "slab.h"

#include <string.h>

static struct sheaf empty_sheaf;        /* capacity 0: every fast path misses */

#define EMPTY_SHEAVES { [0 ... NR_CLASSES - 1] = &empty_sheaf }
struct thread_cache boot_tcache = { .main = EMPTY_SHEAVES, .spare = EMPTY_SHEAVES,
				    .remote = EMPTY_SHEAVES };
struct thread_cache exited_tcache = { .main = EMPTY_SHEAVES, .spare = EMPTY_SHEAVES,
				      .remote = EMPTY_SHEAVES, .exited = true };
__thread struct thread_cache *tcache __attribute__((tls_model("initial-exec"))) = &boot_tcache;

static void swap_sheaves(struct sheaf **a, struct sheaf **b)
{
	struct sheaf *t = *a;
	*a = *b;
	*b = t;
}

/* ------------------------------------------------------------------------
 * Sheaves to and from the slab cache
 * ------------------------------------------------------------------------ */
static struct sheaf *sheaf_new(unsigned int c)
{
	struct sheaf *s = za_cache_alloc(zm.sheaf_cache, 0);
	if (s) {
		s->size = 0;
		s->capacity = zm.classes[c].capacity;
		s->next = NULL;
	}
	return s;
}

static void sheaf_delete(struct sheaf *s)
{
	if (s != &empty_sheaf)
		za_cache_free(zm.sheaf_cache, s);
}

/* The slabs of a fresh fill are this thread's.  Runs of objects come from
 * one slab, and the descriptor is written only if the owner changes: other
 * CPUs read it on every free. */
static void own_slabs(struct sheaf *s, struct thread_cache *tc)
{
	struct za_page *last = NULL;
	for (unsigned int i = 0; i < s->size; i++) {
		struct za_page *slab = virt_to_slab(zm.mm, s->objects[i]);
		if (slab != last && slab_owner(slab) != (uintptr_t)tc)
			__atomic_store_n(&slab->private, (uintptr_t)tc, __ATOMIC_RELAXED);
		last = slab;
	}
}

/* Fills an empty sheaf; false if not even one object could be had. */
static bool sheaf_fill(unsigned int c, struct sheaf *s, struct thread_cache *tc)
{
	za_cache_t *cache = malloc_class_cache(c);
	if (!cache)
		return false;
	unsigned int n = tc->fill[c] ? tc->fill[c] : SHEAF_FIRST_FILL;
	if (n > s->capacity)
		n = s->capacity;
	tc->fill[c] = (uint8_t)(2 * n < s->capacity ? 2 * n : s->capacity);
	if (za_cache_alloc_bulk(cache, 0, n, s->objects))
		s->size = n;
	else if ((s->objects[0] = za_cache_alloc(cache, 0)))   /* short of memory: one will do */
		s->size = 1;
	else
		return false;
	own_slabs(s, tc);
	return true;
}

static void sheaf_flush(unsigned int c, struct sheaf *s)
{
	if (!s->size)
		return;                 /* also never writes the static empty sheaf */
	za_cache_free_bulk(malloc_class_cache(c), s->size, s->objects);
	s->size = 0;
}

/* ------------------------------------------------------------------------
 * The barn
 * ------------------------------------------------------------------------ */
static void push(struct sheaf **list, unsigned int *nr, struct sheaf *s)
{
	s->next = *list;
	*list = s;
	(*nr)++;
}

static struct sheaf *pop(struct sheaf **list, unsigned int *nr)
{
	struct sheaf *s = *list;
	if (s) {
		*list = s->next;
		(*nr)--;
	}
	return s;
}

/* Trades the empty sheaf *main for a full one; false if the barn has none. */
static bool barn_get_full(struct barn *b, struct sheaf **main)
{
	za_lock(&b->lock);
	struct sheaf *full = pop(&b->full, &b->nr_full);
	if (full) {
		if ((*main)->capacity)
			push(&b->empty, &b->nr_empty, *main);
		*main = full;
		counter_add(&b->gets, 1);
	}
	za_unlock(&b->lock);
	return full != NULL;
}

/* Trades the full sheaf *main for an empty one.  Over the barn's limit the
 * full sheaf stays and is returned for flushing; otherwise returns NULL. */
static struct sheaf *barn_put_full(struct barn *b, struct sheaf **main)
{
	struct sheaf *overflow = NULL;
	za_lock(&b->lock);
	if (b->nr_full >= b->max_full) {
		overflow = *main;
	} else {
		push(&b->full, &b->nr_full, *main);
		*main = pop(&b->empty, &b->nr_empty);
		counter_add(&b->puts, 1);
	}
	za_unlock(&b->lock);
	return overflow;
}

/* An empty sheaf for class c: from the barn, else a new one. */
static struct sheaf *get_empty(unsigned int c)
{
	struct barn *b = &zm.barns[c];
	za_lock(&b->lock);
	struct sheaf *s = pop(&b->empty, &b->nr_empty);
	za_unlock(&b->lock);
	return s ? s : sheaf_new(c);
}

/* Gives an empty sheaf back to the barn, or frees it beyond what the barn
 * could ever trade. */
static void put_empty(unsigned int c, struct sheaf *s)
{
	struct barn *b = &zm.barns[c];
	bool keep;
	za_lock(&b->lock);
	if ((keep = b->nr_empty < 2 * b->max_full))
		push(&b->empty, &b->nr_empty, s);
	za_unlock(&b->lock);
	if (!keep)
		sheaf_delete(s);
}

/* ------------------------------------------------------------------------
 * The thread's page blocks
 * ------------------------------------------------------------------------ */
static struct thread_cache *this_thread_cache(void);

/* The block goes back to the page allocator. */
static void block_release(void *p, unsigned long pages)
{
	set_block_word(virt_to_page(zm.mm, p), 0, false);
	za_free_pages_exact(zm.mm, p, pages << PAGE_SHIFT);
}

/* Takes slot i out, keeping the others in order. */
static void *take_slot(struct thread_cache *tc, unsigned int i)
{
	void *p = tc->blocks[i];
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

/* A page block of this many pages (block_pages()) aligned to align: the
 * newest this thread freed, else a new one from the page allocator (a
 * power of two of pages comes aligned to its size; a freed block may not
 * be, when realloc made it that size in place). */
void *block_alloc(unsigned long pages, size_t align)
{
	struct thread_cache *tc = tcache;
	void *p = NULL;
	for (unsigned int i = tc->nr_blocks; i-- > 0 && !p;)
		if (tc->block_pages[i] == pages && !((uintptr_t)tc->blocks[i] & (align - 1)))
			p = take_slot(tc, i);
	if (!p && !(p = za_alloc_pages_exact(zm.mm, block_gfp(pages), pages << PAGE_SHIFT)))
		return NULL;
	set_block_word(virt_to_page(zm.mm, p), pages, false);
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
	set_block_word(virt_to_page(zm.mm, p), pages, true);
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

/* ------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------ */
static struct thread_cache *thread_cache_create(void)
{
	struct thread_cache *tc = za_cache_alloc(zm.thread_cache_cache, 0);
	if (!tc)
		return NULL;
	*tc = boot_tcache;
	za_lock(&zm.threads_lock);
	tc->next = zm.threads;
	if (tc->next)
		tc->next->prev = tc;
	zm.threads = tc;
	za_unlock(&zm.threads_lock);
	/* Set before pthread_setspecific, which may itself allocate. */
	tcache = tc;
	pthread_setspecific(zm.thread_key, tc);
	return tc;
}

/* The thread's cache, created on its first allocation; NULL for a thread
 * that has exited (its key destructors may still allocate) or when no
 * memory is left for one. */
static struct thread_cache *this_thread_cache(void)
{
	struct thread_cache *tc = tcache;
	if (tc == &exited_tcache)
		return NULL;
	return tc == &boot_tcache ? thread_cache_create() : tc;
}

static void flush_sheaf_of(unsigned int c, struct sheaf **sp)
{
	struct sheaf *s = *sp;
	*sp = &empty_sheaf;
	if (s == &empty_sheaf)
		return;
	if (s->size == s->capacity && !barn_put_full(&zm.barns[c], &s)) {
		if (s)                  /* traded for the barn's empty one */
			put_empty(c, s);
		return;
	}
	sheaf_flush(c, s);
	put_empty(c, s);
}

/* The pthread key's destructor: the thread's objects go to the barn (whole
 * sheaves) or back to the slab caches, its counters to the totals. */
void thread_cache_exit(void *arg)
{
	struct thread_cache *tc = arg;
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		flush_sheaf_of(c, &tc->main[c]);
		flush_sheaf_of(c, &tc->spare[c]);
		flush_sheaf_of(c, &tc->remote[c]);
	}
	release_blocks(tc);
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
	tcache = &exited_tcache;
	za_cache_free(zm.thread_cache_cache, tc);
}

/* malloc_trim: this thread's sheaves back to the slab caches, its blocks
 * to the page allocator. */
void sheaves_flush_thread(void)
{
	struct thread_cache *tc = tcache;
	if (tc == &boot_tcache || tc == &exited_tcache)
		return;
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		sheaf_flush(c, tc->main[c]);
		sheaf_flush(c, tc->spare[c]);
		sheaf_flush(c, tc->remote[c]);
	}
	release_blocks(tc);
}

/* Every barn's sheaves back to the slab caches, and the sheaves freed. */
void sheaves_flush_barns(void)
{
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		struct barn *b = &zm.barns[c];
		za_lock(&b->lock);
		struct sheaf *full = b->full, *empty = b->empty;
		b->full = b->empty = NULL;
		b->nr_full = b->nr_empty = 0;
		za_unlock(&b->lock);
		for (struct sheaf *s = full, *next; s; s = next) {
			next = s->next;
			sheaf_flush(c, s);
			sheaf_delete(s);
		}
		for (struct sheaf *s = empty, *next; s; s = next) {
			next = s->next;
			sheaf_delete(s);
		}
	}
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
	struct thread_cache *self = tcache;
	bool listed = self != &boot_tcache && self != &exited_tcache;
	bool others = zm.threads && (zm.threads != self || self->next);
	zm.threads = listed ? self : NULL;
	if (listed)
		self->next = self->prev = NULL;
	return others;
}

/* ------------------------------------------------------------------------
 * The slow paths
 * ------------------------------------------------------------------------ */

/* One object straight from the class's slab cache, which may not exist
 * yet (and cannot be made without memory for its metadata). */
static void *class_alloc_one(unsigned int c)
{
	za_cache_t *cache = malloc_class_cache(c);
	return cache ? za_cache_alloc(cache, 0) : NULL;
}

/* malloc's main sheaf of class c is empty (or the thread has none yet):
 * the only caller is malloc's class_alloc, after its pop failed. */
void *sheaf_alloc_slow(unsigned int c)
{
	struct thread_cache *tc = this_thread_cache();
	if (!tc)
		return class_alloc_one(c);
	counter_add(&tc->alloc_misses, 1);
	struct sheaf **main = &tc->main[c], **spare = &tc->spare[c];
	if ((*spare)->size) {
		swap_sheaves(main, spare);
	} else if (!barn_get_full(&zm.barns[c], main)) {
		if (*main == &empty_sheaf) {
			struct sheaf *s = get_empty(c);
			if (!s)
				return class_alloc_one(c);
			*main = s;
		}
		if (!sheaf_fill(c, *main, tc))
			return NULL;
	}
	return (*main)->objects[--(*main)->size];
}

/* The full sheaf *sp goes to the barn for an empty one (over the barn's
 * limit, its objects go back to the slab cache instead).  Returns whether
 * memory went back to the page allocator's side. */
static bool trade_full(unsigned int c, struct sheaf **sp)
{
	struct sheaf *overflow = barn_put_full(&zm.barns[c], sp);
	if (overflow) {
		sheaf_flush(c, overflow);
		return true;
	}
	if (!*sp && !(*sp = get_empty(c)))
		*sp = &empty_sheaf;
	return false;
}

/* The main sheaf is full: it becomes the spare if that is empty, else is
 * traded at the barn.  Without memory for a sheaf, main stays full. */
static bool make_room(unsigned int c, struct sheaf **main, struct sheaf **spare)
{
	if ((*spare)->size)
		return trade_full(c, main);
	if (*spare == &empty_sheaf) {
		struct sheaf *fresh = get_empty(c);
		if (!fresh)
			return false;
		*spare = fresh;
	}
	swap_sheaves(main, spare);
	return false;
}

/*
 * A free that did not take the fast path: the sheaf it belongs in (the
 * main one, or the remote one for another thread's slab) may be full, or
 * missing, or the object may come from free's slow path with room there.
 */
void sheaf_free_slow(unsigned int c, void *obj)
{
	struct thread_cache *tc = this_thread_cache();
	bool kick = false;
	if (tc) {
		bool remote = slab_owner(virt_to_slab(zm.mm, obj)) != (uintptr_t)tc;
		struct sheaf **sp = remote ? &tc->remote[c] : &tc->main[c];
		if (*sp == &empty_sheaf) {              /* the first of its kind */
			counter_add(&tc->free_misses, 1);
			struct sheaf *fresh = get_empty(c);
			if (fresh)
				*sp = fresh;
		} else if ((*sp)->size == (*sp)->capacity) {
			counter_add(&tc->free_misses, 1);
			kick = remote ? trade_full(c, sp) : make_room(c, sp, &tc->spare[c]);
		} else {
			counter_add(&tc->free_hits, 1);
		}
		struct sheaf *s = *sp;
		if (s->size < s->capacity) {
			s->objects[s->size++] = obj;
			obj = NULL;
		}
	}
	if (obj)
		za_cache_free(malloc_class_cache(c), obj);
	if (kick)
		purge_worker_kick();
}
