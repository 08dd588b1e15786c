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
#include "internal.h"
#include "slab.h"

#include <string.h>

/* A fill from the slab cache in this many (per thread) looks for idle barns. */
#define EVICT_SCAN_FILLS 32
_Static_assert(NR_CLASSES <= 64, "a bit per class in barns_retaining");
static void barns_evict_idle(unsigned int c);

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
 * one slab -- a block aligned to its size, which its info word gives --
 * so that only a run's first object is looked up, and the info words are
 * written only if the owner changes: other CPUs read them on every free. */
static void own_slabs(struct sheaf *s, struct thread_cache *tc)
{
	uintptr_t slab_mask = 0, last = 1;      /* no slab yet */
	for (unsigned int i = 0; i < s->size; i++) {
		uintptr_t p = (uintptr_t)s->objects[i];
		if ((p & slab_mask) == last)
			continue;
		uint32_t info = load_relaxed(view_slab_info(&malloc_arena, s->objects[i]));
		slab_mask = ~((PAGE_SIZE << slab_info_order(info)) - 1);
		last = p & slab_mask;
		if (slab_info_owner(info) != tc->id)
			slab_set_owner(zm.mm, virt_to_slab(zm.mm, s->objects[i]), tc->id);
	}
}

/* malloc pops a sheaf from its end: reversed, a fill goes out in the
 * order the slab cache gave it -- a new slab's in address order -- so
 * that objects a program allocates one after another lie one after
 * another, as its walks over them expect (perl's hash build and sort, 4%
 * faster; python's trees, 3%). */
static void reverse(void **objs, unsigned int n)
{
	for (unsigned int i = 0, j = n; i + 1 < j; i++, j--) {
		void *t = objs[i];
		objs[i] = objs[j - 1];
		objs[j - 1] = t;
	}
}

/* Fills an empty sheaf; false if not even one object could be had. */
static bool sheaf_fill(unsigned int c, struct sheaf *s, struct thread_cache *tc)
{
	za_cache_t *cache = malloc_class_cache(c);
	if (!cache)
		return false;
	if (++tc->fills % EVICT_SCAN_FILLS == 0 && load_relaxed(&zm.barns_retaining))
		barns_evict_idle(c);
	unsigned int n = tc->fill[c] ? tc->fill[c] : SHEAF_FIRST_FILL;
	if (n > s->capacity)
		n = s->capacity;
	tc->fill[c] = (uint8_t)(2 * n < s->capacity ? 2 * n : s->capacity);
	if (za_cache_alloc_bulk(cache, 0, n, s->objects)) {
		s->size = n;
		reverse(s->objects, n);
	} else if ((s->objects[0] = za_cache_alloc(cache, 0))) {  /* short of memory: one will do */
		s->size = 1;
	} else {
		return false;
	}
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
/* Under the barn's lock: a full sheaf off it, noting its low mark (the
 * purge worker's decay). */
static struct sheaf *take_full(struct class_barn *b)
{
	struct sheaf *s = barn_take(zm.mm, &b->b, true);
	if (s && b->b.nr_full < b->low_full)
		b->low_full = b->b.nr_full;
	return s;
}

/* Under the barn's lock: it holds more than its base. */
static void note_retaining(struct class_barn *b)
{
	za_lock_assert_held(zm.mm, &b->b.lock);
	uint64_t bit = 1ULL << (b - zm.barns);
	if (!(load_relaxed(&zm.barns_retaining) & bit))
		atomic_fetch_or_explicit(&zm.barns_retaining, bit, memory_order_relaxed);
}

/* Under the barn's lock: it ran dry after sending full sheaves back to
 * the slab cache, so the program's swing in this class is wider than the
 * limit: double it, within RETAIN_MAX_BYTES.  Returns whether it grew. */
static bool barn_grow(unsigned int c, struct class_barn *b)
{
	za_lock_assert_held(zm.mm, &b->b.lock);
	const struct malloc_class *mc = &zm.classes[c];
	unsigned int cap = (unsigned int)(RETAIN_MAX_BYTES / (mc->capacity * mc->size));
	b->overflowed = false;
	if (b->max_full >= cap)
		return false;
	b->max_full = 2 * b->max_full < cap ? 2 * b->max_full : cap;
	return true;
}

/* Trades the empty sheaf *main for a full one of class c; false if the
 * barn has none. */
static bool barn_get_full(unsigned int c, struct sheaf **main)
{
	struct class_barn *b = &zm.barns[c];
	bool grew = false;
	za_lock(&b->b.lock);
	struct sheaf *full = take_full(b);
	if (full) {
		if ((*main)->capacity)
			barn_add(zm.mm, &b->b, *main, false);
		*main = full;
		counter_add(&b->gets, 1);
	} else if (b->overflowed) {
		grew = barn_grow(c, b);
	}
	za_unlock(&b->b.lock);
	if (grew)               /* the worker's rounds bring the limit back down */
		purge_worker_kick();
	return full != NULL;
}

/* Trades the full sheaf *main for an empty one.  Over the barn's limit the
 * full sheaf stays and is returned for flushing; otherwise returns NULL. */
static struct sheaf *barn_put_full(struct class_barn *b, struct sheaf **main)
{
	struct sheaf *overflow = NULL;
	za_lock(&b->b.lock);
	if (b->b.nr_full >= b->max_full) {
		overflow = *main;
		b->overflowed = true;
	} else {
		barn_add(zm.mm, &b->b, *main, true);
		if (b->b.nr_full > b->base_full)
			note_retaining(b);
		*main = barn_take(zm.mm, &b->b, false);
		counter_add(&b->puts, 1);
	}
	za_unlock(&b->b.lock);
	return overflow;
}

/* An empty sheaf for class c: from the barn, else a new one. */
static struct sheaf *get_empty(unsigned int c)
{
	struct sheaf *s = barn_get(zm.mm, &zm.barns[c].b, false);
	return s ? s : sheaf_new(c);
}

/* Gives an empty sheaf back to the barn, or frees it beyond what the barn
 * could ever trade. */
static void put_empty(unsigned int c, struct sheaf *s)
{
	struct class_barn *b = &zm.barns[c];
	bool keep;
	za_lock(&b->b.lock);
	if ((keep = b->b.nr_empty < 2 * b->max_full))
		barn_add(zm.mm, &b->b, s, false);
	za_unlock(&b->b.lock);
	if (!keep)
		sheaf_delete(s);
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

/* A thread is gone: its sheaves go to the barn (whole) or their objects
 * back to the slab caches. */
void sheaves_give_back(struct thread_cache *tc)
{
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		flush_sheaf_of(c, &tc->main[c]);
		flush_sheaf_of(c, &tc->spare[c]);
		flush_sheaf_of(c, &tc->remote[c]);
	}
}

/* malloc_trim: the thread's objects back to the slab caches; it keeps the
 * (empty) sheaves. */
void sheaves_empty(struct thread_cache *tc)
{
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		sheaf_flush(c, tc->main[c]);
		sheaf_flush(c, tc->spare[c]);
		sheaf_flush(c, tc->remote[c]);
	}
}

/* Under the barn's lock: its full sheaves beyond keep_full and its empty
 * ones beyond keep_empty, off its lists and onto *out. */
static void barn_trim(struct class_barn *b, unsigned int keep_full, unsigned int keep_empty,
		      struct sheaf **out)
{
	while (b->b.nr_full > keep_full || b->b.nr_empty > keep_empty) {
		struct sheaf *s = b->b.nr_full > keep_full ? take_full(b) :
							     barn_take(zm.mm, &b->b, false);
		s->next = *out;
		*out = s;
	}
}

/* Under the barn's lock: back to its base limit, holding at most its
 * full sheaves up to keep_full (and twice as many empty ones), the rest
 * onto *out. */
static void barn_reset(struct class_barn *b, unsigned int keep_full, struct sheaf **out)
{
	barn_trim(b, keep_full, 2 * keep_full, out);
	b->max_full = b->base_full;
	b->overflowed = false;
}

/* Sheaves exchanged at the barn so far (read without its lock: a count). */
static uint64_t barn_exchanges(const struct class_barn *b)
{
	return load_relaxed(&b->gets) + load_relaxed(&b->puts);
}

/* Sheaves trimmed off class c's barn: their objects back to the slab
 * cache, and the sheaves freed. */
static void release_sheaves(unsigned int c, struct sheaf *list)
{
	for (struct sheaf *s = list, *next; s; s = next) {
		next = s->next;
		sheaf_flush(c, s);
		sheaf_delete(s);
	}
}

/* Every barn's sheaves back to the slab caches, and the sheaves freed; the
 * limits back to their bases. */
void sheaves_flush_barns(void)
{
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		struct class_barn *b = &zm.barns[c];
		struct sheaf *out = NULL;
		za_lock(&b->b.lock);
		barn_reset(b, 0, &out);
		b->low_full = 0;
		za_unlock(&b->b.lock);
		release_sheaves(c, out);
	}
}

/*
 * A thread filling class c's sheaves from its slab cache -- the program
 * needs more objects of c than the caches hold -- looks, every
 * EVICT_SCAN_FILLS fills, for barns holding more than their base that no
 * thread has touched since the last look (any thread's): what they hold
 * beyond the base goes back to the slab caches, and so to the page
 * allocator, to serve c, instead of new memory; their limits go back to
 * their bases.  A program moving from one kind of object to the next so
 * keeps one class's swing, not the sum of all it went through; the purge
 * worker's rounds (barns_decay) are too far apart for that.
 */
static void barns_evict_idle(unsigned int c)
{
	uint64_t mask = load_relaxed(&zm.barns_retaining) & ~(1ULL << c);
	for (unsigned int d; mask; mask &= mask - 1) {
		d = (unsigned int)__builtin_ctzll(mask);
		struct class_barn *b = &zm.barns[d];
		struct sheaf *out = NULL;
		za_lock(&b->b.lock);
		uint64_t seen = barn_exchanges(b);
		bool idle = seen == b->scan_seen;
		b->scan_seen = seen;
		if (idle && b->b.nr_full > b->base_full)
			barn_reset(b, b->base_full, &out);
		if (b->b.nr_full <= b->base_full)
			atomic_fetch_and_explicit(&zm.barns_retaining, ~(1ULL << d),
						  memory_order_relaxed);
		za_unlock(&b->b.lock);
		release_sheaves(d, out);
	}
}

unsigned long barn_objects(unsigned int c)
{
	struct class_barn *b = &zm.barns[c];
	unsigned long n = 0;
	za_lock(&b->b.lock);
	for (const struct sheaf *s = b->b.full; s; s = s->next)
		n += s->size;
	za_unlock(&b->b.lock);
	return n;
}

/* Sheaves exchanged at the barns so far: a program reusing its objects
 * through them is busy, though it takes no page (the purge worker's idle
 * test). */
uint64_t barns_activity(void)
{
	uint64_t sum = 0;
	for (unsigned int c = 0; c < NR_CLASSES; c++)
		sum += barn_exchanges(&zm.barns[c]);
	return sum;
}

/*
 * The purge worker's round.  The fewest full sheaves a barn held since the
 * last round, beyond its base, are sheaves no thread needed all round:
 * half of them go back to the slab cache, and the limit's excess over the
 * base halves, so that a class the program stopped using is back at its
 * base in a few rounds while one it keeps swinging through (and so empties
 * its barn every round) keeps its limit.
 */
void barns_decay(void)
{
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		struct class_barn *b = &zm.barns[c];
		struct sheaf *out = NULL;
		za_lock(&b->b.lock);
		if (b->low_full > b->base_full) {
			unsigned int keep = b->b.nr_full - (b->low_full - b->base_full + 1) / 2;
			b->max_full = b->base_full + (b->max_full - b->base_full) / 2;
			barn_trim(b, keep < b->max_full ? keep : b->max_full, 2 * b->max_full, &out);
		}
		b->low_full = b->b.nr_full;
		za_unlock(&b->b.lock);
		release_sheaves(c, out);
	}
}

/* ------------------------------------------------------------------------
 * The slow paths
 * ------------------------------------------------------------------------ */

/* One object straight from the class's slab cache, which may not exist
 * yet (and cannot be made without memory for its metadata). */
void *class_alloc_one(unsigned int c)
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
		sheaf_swap(main, spare);
	} else if (!barn_get_full(c, main)) {
		if (*main == &empty_sheaf) {
			struct sheaf *s = get_empty(c);
			if (!s)
				return class_alloc_one(c);
			*main = s;
		}
		if (!sheaf_fill(c, *main, tc))
			return NULL;
	}
	VM_BUG_ON(zm.mm, (*spare)->size && (*spare)->size != (*spare)->capacity);   /* full or empty */
	VM_BUG_ON(zm.mm, !(*main)->size || (*main)->size > (*main)->capacity);
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
	sheaf_swap(main, spare);
	VM_BUG_ON(zm.mm, (*spare)->size != (*spare)->capacity);   /* the full one */
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
		bool remote = object_owner(obj) != tc->id;
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
			count_hit(&tc->free_hits);
		}
		struct sheaf *s = *sp;
		VM_BUG_ON(zm.mm, s->size > s->capacity);
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

/* ------------------------------------------------------------------------
 * za_verify for the malloc's system (mm_layers.c), at a quiescent point
 * ------------------------------------------------------------------------ */

/* A sheaf of class c holds no more than its capacity, the class's. */
static int verify_sheaf(unsigned int c, const struct sheaf *s, const char *what)
{
	VERIFY(s == &empty_sheaf || (s->capacity == zm.classes[c].capacity &&
					    s->size <= s->capacity),
	       "malloc-%u: a %s sheaf holds %u of %u (class capacity %u)", class_size(c), what,
	       s->size, s->capacity, zm.classes[c].capacity);
	return 0;
}

/* A barn holds its class's sheaves, no more than its limits allow. */
static int verify_barn(unsigned int c, struct class_barn *b)
{
	char what[32];
	snprintf(what, sizeof(what), "malloc-%u", class_size(c));
	if (barn_verify(zm.mm, &b->b, zm.classes[c].capacity, what))
		return -1;
	unsigned int full = b->b.nr_full, empty = b->b.nr_empty;
	/* Exchanges keep full + empty; put_empty adds below 2 * limit, a put
	 * with no empty sheaf to trade only when there is none; lowering the
	 * limit trims both. */
	VERIFY(b->base_full <= b->max_full && full <= b->max_full && full + empty <= 3 * b->max_full,
	       "malloc-%u: the barn holds %u full and %u empty sheaves, its limit %u (base %u)",
	       class_size(c), full, empty, b->max_full, b->base_full);
	VERIFY(full <= b->base_full || (load_relaxed(&zm.barns_retaining) >> c & 1),
	       "malloc-%u: the barn holds %u full sheaves, beyond its base %u, unmarked",
	       class_size(c), full, b->base_full);
	return 0;
}

/* A thread's page blocks: each marked freed in its descriptor, of the
 * pages it is kept as, within the slots and bytes they count. */
static int verify_blocks(const struct thread_cache *tc)
{
	size_t bytes = 0;
	VERIFY(tc->nr_blocks <= BLOCK_CACHE_SLOTS && tc->block_bytes <= BLOCK_CACHE_BYTES,
	       "a thread keeps %u page blocks of %zu bytes", tc->nr_blocks, tc->block_bytes);
	for (unsigned int i = 0; i < tc->nr_blocks; i++) {
		unsigned long w = block_word(virt_to_page(zm.mm, tc->blocks[i]));
		bytes += (size_t)tc->block_pages[i] << PAGE_SHIFT;
		VERIFY((w & 1) && block_word_pages(w) == tc->block_pages[i],
		       "a thread keeps the page block %p as %u pages freed, its word %#lx",
		       tc->blocks[i], tc->block_pages[i], w);
	}
	VERIFY(bytes == tc->block_bytes, "a thread keeps page blocks of %zu bytes, counted %zu",
	       bytes, tc->block_bytes);
	return 0;
}

/* Every thread's sheaves: within capacity, the spare full or empty; and
 * its page blocks. */
static int verify_threads(void)
{
	for (const struct thread_cache *tc = zm.threads; tc; tc = tc->next) {
		if (verify_blocks(tc))
			return -1;
		for (unsigned int c = 0; c < NR_CLASSES; c++) {
			const struct sheaf *spare = tc->spare[c];
			if (verify_sheaf(c, tc->main[c], "main") || verify_sheaf(c, spare, "spare") ||
			    verify_sheaf(c, tc->remote[c], "remote"))
				return -1;
			VERIFY(!spare->size || spare->size == spare->capacity,
			       "malloc-%u: a spare sheaf holds %u of %u", class_size(c), spare->size,
			       spare->capacity);
		}
	}
	return 0;
}

int malloc_verify(struct za_mm *mm)
{
	if (mm != zm.mm)
		return 0;
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		za_lock(&zm.barns[c].b.lock);
		int r = verify_barn(c, &zm.barns[c]);
		za_unlock(&zm.barns[c].b.lock);
		if (r)
			return -1;
	}
	za_lock(&zm.threads_lock);
	int r = verify_threads();
	za_unlock(&zm.threads_lock);
	return r || cpu_cache_verify() || mappings_verify() ? -1 : 0;
}
