/*
 * The malloc front end: the C allocation functions on one default memory
 * system, created on first use (internal.h shows the layers).
 *
 * The common paths are malloc and free of a small size on a thread whose
 * sheaf of that class is neither empty nor full: an array pop or push, no
 * atomic instruction, no lock.  free finds the class from the page
 * descriptor, as kfree finds the cache, and on the way proves the pointer
 * an object start of a malloc slab and checks the freed-object signature,
 * so that foreign pointers, pointers into objects and double frees are
 * caught for the price of the lookup free needs anyway.  Misuse ends the
 * process with one line on stderr and abort().
 *
 * Built into libzonealloc as za_malloc() etc.; built with
 * ZA_MALLOC_OVERRIDE into libzonealloc-malloc.so, where the same functions
 * are also malloc(), free(), ... and the C++ operators.
 */
#include "internal.h"
#include "slab.h"

#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>


/* The smallest class of at least n bytes whose objects are all aligned to
 * align (a power of two <= 4096), or NR_CLASSES if none is. */
static unsigned int aligned_class(size_t n, size_t align)
{
	unsigned int c = size_class(n);
	while (c < NR_CLASSES && class_size(c) % align)
		c++;
	return c;
}

/* ------------------------------------------------------------------------
 * What a pointer is: its allocation
 * ------------------------------------------------------------------------ */
enum alloc_kind { A_SMALL, A_LARGE, A_MAPPED, A_ZERO, A_BOOT, A_BAD };

struct alloc_info {
	enum alloc_kind kind;
	unsigned int cls;               /* A_SMALL */
	unsigned long pages;            /* A_LARGE */
	size_t size;                    /* usable */
	size_t requested;               /* A_LARGE, A_MAPPED: what malloc was asked for */
	size_t align;                   /* A_LARGE, A_MAPPED: the alignment it was asked for */
	const char *why;                /* A_BAD */
	const void *start;              /* A_BAD inside a block: where it starts */
	bool freed;                     /* A_SMALL, A_ZERO, A_BAD: the memory is free */
};

/* The head of the allocated or free arena block holding p, or NULL. */
struct za_page *malloc_block_head(const void *p)
{
	struct za_page *page = virt_to_page(zm.mm, p);
	for (unsigned int o = 0; o <= zm.mm->max_order; o++) {
		struct za_page *head = page_block_start(zm.mm, page, o);
		uint32_t f = page_flags(head);
		if ((f & (PG_alloc | PG_pcp | PG_buddy)) && page_order(head) >= o)
			return head;
	}
	return NULL;
}

/* The descriptor of the malloc page block p starts (live, or kept freed
 * by a thread), or NULL. */
static inline struct za_page *block_head_at(const void *p)
{
	if (!view_has(&malloc_arena, p) || ((uintptr_t)p & (PAGE_SIZE - 1)))
		return NULL;
	struct za_page *head = view_page(&malloc_arena, p);
	return (page_flags(head) & PG_alloc) && block_word(head) ? head : NULL;
}

/* The first piece of the malloc block whose piece `head` is, walking back
 * piece by piece (a run has a few dozen at most); NULL if there is none. */
static struct za_page *block_start(struct za_page *head)
{
	while (head && (page_flags(head) & PG_alloc) && !block_word(head) &&
	       page_section_index(zm.mm, head))
		head = malloc_block_head((const char *)za_page_to_virt(zm.mm, head) - 1);
	return head && (page_flags(head) & PG_alloc) && block_word(head) ? head : NULL;
}

static void describe_arena_page(const void *p, struct alloc_info *b)
{
	struct za_page *head = malloc_block_head(p), *start;
	b->kind = A_BAD;
	if (!head) {
		b->why = "not allocated by zonealloc";  /* memory the zone has not grown into */
	} else if (page_flags(head) & (PG_pcp | PG_buddy)) {
		b->why = "the memory is free";
		b->freed = true;
	} else if ((start = block_start(head))) {
		b->why = "inside a block";
		b->start = za_page_to_virt(zm.mm, start);
		b->size = block_word_pages(block_word(start)) << PAGE_SHIFT;
	} else {
		b->why = "not allocated by malloc";
	}
}

/* Classifies p (not NULL) without touching its memory. */
static void lookup(const void *p, struct alloc_info *b)
{
	*b = (struct alloc_info){ .kind = A_BAD, .why = "not allocated by zonealloc" };
	if (view_has(&malloc_arena, p)) {
		struct za_page *slab = virt_to_slab(zm.mm, p), *head;
		if (slab) {
			struct za_kmem_cache *s = slab->slab_cache;
			unsigned int c = slab_page_tag(zm.mm, slab);
			unsigned int objects = slab_objects(slab);
			size_t idx, off = (size_t)((uintptr_t)p - (uintptr_t)slab_base(s, slab));
			bool start = slab_object_at(s, off, objects, &idx);
			if (c >= NR_CLASSES) {
				b->why = "not allocated by malloc (an internal object)";
			} else if (idx >= objects) {
				b->why = "not allocated by malloc (past a slab's last object)";
			} else if (!start) {
				b->why = "inside an object";
				b->start = slab_base(s, slab) + idx * s->size;
				b->size = s->object_size;
			} else {
				*b = (struct alloc_info){ .kind = A_SMALL, .cls = c, .size = s->object_size,
						     .freed = *(const uint64_t *)p == free_signature(p) };
			}
		} else if ((head = block_head_at(p))) {
			unsigned long w = block_word(head), pages = block_word_pages(w);
			*b = (struct alloc_info){ .kind = A_LARGE, .pages = pages,
					     .size = pages << PAGE_SHIFT,
					     .requested = block_word_requested(w),
					     .align = block_word_align(w), .freed = w & 1 };
		} else {
			describe_arena_page(p, b);
		}
	} else if (in_boot_heap(p)) {
		*b = (struct alloc_info){ .kind = A_BOOT, .size = boot_size(p) };
	} else if (in_zero_region(p)) {
		enum zero_state z = zero_state(p);
		if (z == ZERO_NONE)
			b->why = "not allocated by malloc (inside the malloc(0) region)";
		else
			*b = (struct alloc_info){ .kind = A_ZERO, .freed = z == ZERO_FREED };
	} else if ((b->size = mapping_size(p, &b->requested, &b->align))) {
		b->kind = A_MAPPED;
	}
}

static const char *alloc_name(const struct alloc_info *b, char *buf, size_t len)
{
	if (b->kind == A_SMALL)
		snprintf(buf, len, "malloc-%u", class_size(b->cls));
	else if (b->kind == A_ZERO)
		snprintf(buf, len, "a malloc(0) block");
	else if ((b->kind == A_LARGE || b->kind == A_MAPPED) && b->align > MALLOC_ALIGN)
		snprintf(buf, len, "%zu-byte block for %zu bytes aligned to %zu", b->size, b->requested,
			 b->align);
	else if (b->kind == A_LARGE || b->kind == A_MAPPED)
		snprintf(buf, len, "%zu-byte block for %zu bytes", b->size, b->requested);
	else
		snprintf(buf, len, "%zu-byte block", b->size);
	return buf;
}

/* Debug mode's blocks carry its headers; malloc(0)'s addresses are the
 * same in both modes. */
static bool debug_owns(const void *p)
{
	return zm.debug && !in_zero_region(p);
}

/* Looks p up for fn, ending the process unless it is a live allocation. */
static void lookup_live(const void *p, struct alloc_info *b, const char *fn)
{
	char name[80];
	lookup(p, b);
	if (b->freed && !strcmp(fn, "free"))
		malloc_misuse("double free of %p (%s)", p,
			      b->kind == A_BAD ? b->why : alloc_name(b, name, sizeof(name)));
	if (b->freed)
		malloc_misuse("%s(%p): the pointer was freed (%s)", fn, p,
			      b->kind == A_BAD ? b->why : alloc_name(b, name, sizeof(name)));
	if (b->kind == A_BAD && b->start)
		malloc_misuse("%s(%p): %s (the %zu-byte block at %p)", fn, p, b->why, b->size, b->start);
	if (b->kind == A_BAD)
		malloc_misuse("%s(%p): %s", fn, p, b->why);
}

/* ------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------ */
/* What an allocation of n bytes aligned to align (a power of two) gets:
 * a class, a page block of some order, or a mapping of its own. */
static void plan(size_t n, size_t align, struct alloc_info *b)
{
	if (n <= SMALL_MAX && align <= PAGE_SIZE) {
		unsigned int c = align <= MALLOC_ALIGN ? size_class(n) : aligned_class(n, align);
		if (c < NR_CLASSES) {
			*b = (struct alloc_info){ .kind = A_SMALL, .cls = c, .size = class_size(c) };
			return;
		}
	}
	/* Runs are page aligned; a larger alignment takes a block of a size
	 * at least as large, which is aligned to it (a buddy block: runs
	 * beyond the largest one are not). */
	bool aligned = align > PAGE_SIZE;
	unsigned long pages = aligned ? 1UL << get_order(n > align ? n : align) : block_pages(n);
	if (pages <= (aligned ? 1UL << zm.mm->max_order : zm.large_max_pages))
		*b = (struct alloc_info){ .kind = A_LARGE, .pages = pages, .size = pages << PAGE_SHIFT };
	else
		*b = (struct alloc_info){ .kind = A_MAPPED, .size = n };
}

/* The hit: the main sheaf's last object, no longer carrying the freed
 * signature. */
static inline __attribute__((always_inline)) void *sheaf_pop(struct thread_cache *tc,
							      struct sheaf *s, unsigned int c)
{
	VM_BUG_ON(zm.mm, !s->size || s->size > s->capacity);
	void *p = s->objects[--s->size];
	VM_BUG_ON(zm.mm, object_class(p) != c);     /* a sheaf holds its class's objects */
	count_hit(&tc->alloc_hits);
	*(uint64_t *)p = 0;
	return p;
}

static inline __attribute__((always_inline)) void *class_alloc(unsigned int c)
{
	struct thread_cache *tc = load_relaxed(&tcache);
	struct sheaf *s = tc->main[c];
	if (likely(s->size))
		return sheaf_pop(tc, s, c);
	if (zm.cpu_cache)
		return cpu_cache_alloc(c);
	void *p = sheaf_alloc_slow(c);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	VM_BUG_ON(zm.mm, object_class(p) != c);
	*(uint64_t *)p = 0;     /* no longer free */
	return p;
}

/* Every allocation but the fast path: align is a power of two. */
static __attribute__((noinline)) void *malloc_slow(size_t n, size_t align)
{
	struct alloc_info b;
	if (!malloc_ready())
		return boot_alloc(n);
	if (unlikely(n > PTRDIFF_MAX)) {
		errno = ENOMEM;
		return NULL;
	}
	if (zm.debug)
		return debug_malloc(n, align, false);
	size_t asked = n;
	if (!n) {
		void *z = zero_alloc(align);
		if (z)
			return z;
		n = 1;
	}
	plan(n, align, &b);
	switch (b.kind) {
	case A_SMALL:
		return class_alloc(b.cls);
	case A_LARGE: {
		/* The arena's own memory is exhausted (or the address space
		 * left for it): a mapping of the request's size may still fit. */
		void *p = block_alloc(b.pages, align, asked);
		return p ? p : mapping_alloc(n, align, asked);
	}
	default:
		return mapping_alloc(n, align, asked);
	}
}

/* The fast paths start on a cache line of their own, so that their speed
 * does not move with the size of whatever code the linker put before them
 * (pairs took 12% longer when a change elsewhere shifted them 48 bytes). */
#define FAST_PATH __attribute__((aligned(64)))

FAST_PATH void *za_malloc(size_t n)
{
	/* Requests up to 1 KiB, the common case, pass one compare, which
	 * size_class() then knows the answer of. */
	if (unlikely(n > 1024) && n > SMALL_MAX)
		return malloc_slow(n, MALLOC_ALIGN);
	unsigned int c = size_class(n);
	struct thread_cache *tc = load_relaxed(&tcache);
	struct sheaf *s = tc->main[c];
	if (likely(s->size))
		return sheaf_pop(tc, s, c);
	if (zm.cpu_cache && c != ZERO_SLOT)
		return cpu_cache_alloc(c);
	/* A miss goes the whole way: the system may not exist yet. */
	return malloc_slow(n, MALLOC_ALIGN);
}

void *za_calloc(size_t count, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(count, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(zm.debug) && malloc_ready())
		return debug_malloc(n, MALLOC_ALIGN, true);
	/* The boot heap is never reused; a direct mapping is new (zeroed by
	 * the kernel and resident only where touched) but for the part the
	 * mapping cache reused. */
	void *p = za_malloc(n);
	if (p && view_has(&malloc_arena, p))
		memset(p, 0, n);
	else if (p && !in_boot_heap(p)) {
		size_t dirty = mapping_dirty(p);
		memset(p, 0, dirty < n ? dirty : n);
	}
	return p;
}

/* A power of two: what posix_memalign and free_aligned_sized accept. */
static bool valid_alignment(size_t align)
{
	return align && !(align & (align - 1));
}

/*
 * glibc 2.36's rules, which programs rely on (aligned_alloc is the same
 * function there): an alignment up to malloc's own is malloc; any other is
 * rounded up to a power of two (memalign(48, n) is 64-aligned); only one
 * no power of two can hold, above SIZE_MAX / 2 + 1, is EINVAL.  A power of
 * two that no mapping can reach fails later, with ENOMEM.
 */
void *za_memalign(size_t align, size_t n)
{
	if (align <= MALLOC_ALIGN)
		return za_malloc(n);
	if (align > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	/* 16 < align < 2^63 here when it is not a power of two, so the next
	 * one up is at most 2^63: the shift stays within size_t. */
	if (!valid_alignment(align))
		align = (size_t)1 << order_base_2(align);
	return malloc_slow(n, align);
}

/* glibc 2.38 and later fail a non-power-of-two alignment with EINVAL here
 * (C17); 2.36, which this follows, treats it as memalign does. */
void *za_aligned_alloc(size_t align, size_t n)
{
	return za_memalign(align, n);
}

/* EINVAL unless align is a power of two and a multiple of sizeof(void *);
 * on failure *out and errno are as glibc leaves them (errno ENOMEM). */
int za_posix_memalign(void **out, size_t align, size_t n)
{
	if (!valid_alignment(align) || align % sizeof(void *))
		return EINVAL;
	int saved = errno;
	void *p = za_memalign(align, n);
	if (!p)
		return ENOMEM;
	errno = saved;
	*out = p;
	return 0;
}

void *za_valloc(size_t n)
{
	return za_memalign(PAGE_SIZE, n);
}

/* n rounded up to whole pages (pvalloc(0): one page). */
void *za_pvalloc(size_t n)
{
	size_t len;
	if (__builtin_add_overflow(n, PAGE_SIZE - 1, &len)) {
		errno = ENOMEM;
		return NULL;
	}
	len &= ~(PAGE_SIZE - 1);
	return za_memalign(PAGE_SIZE, len ? len : PAGE_SIZE);
}

/* ------------------------------------------------------------------------
 * Freeing
 * ------------------------------------------------------------------------ */
static void free_alloc(void *p, const struct alloc_info *b)
{
	switch (b->kind) {
	case A_SMALL:           /* where the fast path would have put it */
		*(uint64_t *)p = free_signature(p);
		if (zm.cpu_cache)
			cpu_cache_free(b->cls, p);
		else
			sheaf_free_slow(b->cls, p);
		break;
	case A_LARGE:
		block_free(p, b->pages);
		break;
	case A_MAPPED:
		mapping_free(p);
		break;
	case A_ZERO:
		zero_mark_freed(p);
		break;
	default:
		break;
	}
}

/*
 * Does a sized free's claim -- n bytes, and for free_aligned_sized an
 * alignment (else 0) -- match the allocation?  A small object's class (a
 * class serves several sizes and alignments alike, so only debug mode
 * tells them apart), or exactly the size a page block or mapping was asked
 * for (the last realloc's, C23) and the alignment it was asked for.
 */
static bool matches(const struct alloc_info *b, size_t n, size_t align)
{
	struct alloc_info want;
	if (b->kind == A_ZERO)
		return n == 0;
	plan(n ? n : 1, align ? align : MALLOC_ALIGN, &want);  /* malloc(0)'s stand-in is 1 byte's */
	if (b->kind == A_SMALL || want.kind == A_SMALL)
		return want.kind == b->kind && want.cls == b->cls;
	/* a page block or a mapping: planned so, or a page block that fell back */
	return n == b->requested && (!align || align == b->align);
}

/* Everything but the fast path.  expect_size/align: a sized free's claim
 * (expect_size SIZE_MAX: none; expect_align 0: none, else at least
 * malloc's). */
static __attribute__((noinline)) void free_slow(void *p, size_t expect_size, size_t expect_align,
						const char *fn)
{
	struct alloc_info b;
	if (!p || in_boot_heap(p))
		return;
	if (!malloc_ready())
		malloc_misuse("%s(%p): not allocated by zonealloc", fn, p);
	if (debug_owns(p)) {
		debug_free(p, expect_size, expect_align, fn);
		return;
	}
	lookup_live(p, &b, fn);
	VM_BUG_ON(zm.mm, b.kind == A_BAD || b.freed);
	if (expect_size != SIZE_MAX && !matches(&b, expect_size, expect_align)) {
		char name[80], align[40] = "";
		if (expect_align)
			snprintf(align, sizeof(align), ", align %zu", expect_align);
		malloc_misuse("%s(%p, size %zu%s): the size or alignment does not match the allocation (%s)",
			      fn, p, expect_size, align, alloc_name(&b, name, sizeof(name)));
	}
	if (expect_align && ((uintptr_t)p & (expect_align - 1)))
		malloc_misuse("%s(%p): not aligned to %zu as the allocation was", fn, p, expect_align);
	if (b.kind == A_SMALL)
		counter_add_atomic(&zm.checked_small_frees, 1);
	free_alloc(p, &b);
}

/*
 * The class of p if it is a live object of a malloc slab -- its page's
 * slab info says so, the offset is a multiple of the object size within
 * the slab's objects, and p does not carry the freed signature (sig) --
 * else NR_CLASSES (p needs the full checks).  *infop is the page's word.
 */
static inline __attribute__((always_inline)) unsigned int small_class_of(const void *p,
									  uint64_t sig,
									  uint32_t *infop)
{
	_Atomic uint32_t *word;
	if (unlikely(!view_near_slab_info(&malloc_arena, p, &word)))
		return NR_CLASSES;
	/* Every page of a slab has its cache's tag -- only the malloc's class
	 * caches have one -- and the slab's order in its info word, and a
	 * slab is a block of memory aligned to its size (a section's memory
	 * is aligned to the section's): the class and the slab's start come
	 * from this one word, which shares its cache line with fifteen other
	 * pages' (the descriptor would be a line of its own), and the object
	 * checks from the class's copy of its cache's geometry. */
	uint32_t info = atomic_load_explicit(word, memory_order_acquire);
	unsigned int c = slab_info_tag(info), order = slab_info_order(info);
	if (unlikely(c >= NR_CLASSES))
		return NR_CLASSES;
	const struct malloc_class *mc = &zm.classes[c];
	/* A slab of the cache's fallback order, made when the page allocator
	 * had no block of the preferred one at hand, is rare: its objects
	 * take the full checks. */
	if (unlikely(order != mc->order ||
		     exact_index(mc->inv_odd, mc->size_tz, (uintptr_t)p & mc->slab_mask) >= mc->objects ||
		     *(const uint64_t *)p == sig))
		return NR_CLASSES;
	*infop = info;
	return c;
}

/* The descriptor of the live malloc page block p starts, or NULL: its
 * word alone answers (realloc within the block's pages, usable_size). */
static inline struct za_page *live_block_head(const void *p)
{
	struct za_page *head = block_head_at(p);
	return head && !(block_word(head) & 1) ? head : NULL;
}

/*
 * The fast path: p is a live small object of the expected class (if any)
 * and its sheaf -- main, or remote for another thread's slab -- has room.
 * Returns the class (< NR_CLASSES) when only the room was missing, so that
 * the slow path need not look again; FREE_DONE when done; FREE_CHECK when
 * p needs the full checks.
 */
enum { FREE_CHECK = NR_CLASSES, FREE_DONE };

static inline __attribute__((always_inline)) unsigned int free_fast(void *p, size_t expect_class)
{
	uint32_t info;
	uint64_t sig = free_signature(p);
	unsigned int c = small_class_of(p, sig, &info);
	if (unlikely(c == NR_CLASSES || (expect_class != SIZE_MAX && expect_class != c)))
		return FREE_CHECK;
	*(uint64_t *)p = sig;
	if (zm.cpu_cache) {
		cpu_cache_free(c, p);
		return FREE_DONE;
	}
	struct thread_cache *tc = load_relaxed(&tcache);
	struct sheaf *sh = slab_info_owner(info) == tc->id ? tc->main[c] : tc->remote[c];
	if (unlikely(sh->size >= sh->capacity))
		return c;
	VM_BUG_ON(zm.mm, sh->capacity != zm.classes[c].capacity);
	sh->objects[sh->size++] = p;
	count_hit(&tc->free_hits);
	return FREE_DONE;
}

FAST_PATH void za_free(void *p)
{
	unsigned int r = free_fast(p, SIZE_MAX);
	if (unlikely(r < NR_CLASSES))
		sheaf_free_slow(r, p);
	else if (unlikely(r == FREE_CHECK))
		free_slow(p, SIZE_MAX, 0, "free");
}

void za_free_sized(void *p, size_t n)
{
	unsigned int r = n <= SMALL_MAX ? free_fast(p, size_class(n)) : FREE_CHECK;
	if (unlikely(r < NR_CLASSES))
		sheaf_free_slow(r, p);
	else if (unlikely(r == FREE_CHECK) && p)
		free_slow(p, n, 0, "free_sized");
}

void za_free_aligned_sized(void *p, size_t align, size_t n)
{
	if (!p)
		return;
	if (!valid_alignment(align))
		malloc_misuse("free_aligned_sized(%p, %zu, %zu): alignment not a power of two", p,
			      align, n);
	free_slow(p, n, align < MALLOC_ALIGN ? MALLOC_ALIGN : align, "free_aligned_sized");
}

/* ------------------------------------------------------------------------
 * realloc and sizes
 * ------------------------------------------------------------------------ */
/*
 * A page block realloc grows (moved, or in place) gets a quarter more pages
 * than asked for, which are not touched until the program writes there:
 * a buffer growing a little at a time then moves or resizes a logarithmic
 * number of times, not once per page, and leaves fewer holes behind.  A
 * block keeps its pages while they are within that room of the request
 * (sized frees check the request, which the block records exactly).
 */
static unsigned long realloc_room(unsigned long pages)
{
	if (pages <= 1UL << PCP_MAX_ORDER)
		return pages;                   /* a power of two, from the per-CPU lists */
	unsigned long room = pages + pages / 4;
	return room < zm.large_max_pages ? room : zm.large_max_pages;
}

/* Resizes block p of `pages` pages in place to `to` pages, for a request of n. */
static bool resize_block(void *p, unsigned long pages, unsigned long to, size_t n)
{
	if (za_resize_pages_exact(zm.mm, p, pages << PAGE_SHIFT, to << PAGE_SHIFT))
		return false;
	set_block_word(virt_to_page(zm.mm, p), to, n, MALLOC_ALIGN, false);
	VM_BUG_ON(zm.mm, live_block_head(p) != virt_to_page(zm.mm, p));
	if (to < pages)
		purge_worker_kick();
	return true;
}

/* Grows block p of `pages` pages to `to` pages into the free pages around
 * it, those before it too, for a request of n (its contents move down if
 * it now starts lower); NULL if too few are free.  Rather than leave its
 * pages behind as a hole and take new memory elsewhere, a buffer growing
 * between others takes the hole another left before it. */
static void *extend_block(void *p, unsigned long pages, unsigned long to, size_t n)
{
	void *q = za_extend_pages_exact(zm.mm, p, pages << PAGE_SHIFT, to << PAGE_SHIFT);
	if (!q)
		return NULL;
	if (q != p)
		memmove(q, p, pages << PAGE_SHIFT);
	set_block_word(virt_to_page(zm.mm, q), to, n, MALLOC_ALIGN, false);
	return q;
}

/* Everything but realloc's fast path. */
static __attribute__((noinline)) void *realloc_slow(void *p, size_t n)
{
	if (!p)
		return za_malloc(n);
	if (!n) {
		za_free(p);
		return NULL;
	}
	if (in_boot_heap(p)) {
		void *q = za_malloc(n);
		if (q)
			memcpy(q, p, n < boot_size(p) ? n : boot_size(p));
		return q;
	}
	if (!malloc_ready())
		malloc_misuse("realloc(%p): not allocated by zonealloc", p);
	if (debug_owns(p)) {
		size_t have = debug_usable_size(p, "realloc");
		void *q = debug_malloc(n, MALLOC_ALIGN, false);
		if (q) {
			memcpy(q, p, n < have ? n : have);
			debug_free(p, SIZE_MAX, 0, "realloc");
		}
		return q;
	}
	/*
	 * Otherwise the block stays if it can be what malloc(n) would give
	 * -- a page block resized in place (grown into the free blocks above
	 * it, with room, or its upper part given up), a mapping remapped --
	 * and records n, so that free_sized(p, n) holds, as C23 asks.
	 * Otherwise: copy.
	 */
	struct alloc_info b, want;
	lookup_live(p, &b, "realloc");
	plan(n, MALLOC_ALIGN, &want);
	void *q = NULL;
	if (want.kind == A_MAPPED && b.kind == A_MAPPED && (q = mapping_realloc(p, n)))
		return q;               /* else copied: mremap refuses a range of two mappings */
	if (want.kind == A_LARGE && b.kind == A_LARGE) {
		unsigned long room = realloc_room(want.pages);
		bool grow = want.pages > b.pages;
		if ((grow && resize_block(p, b.pages, room, n)) || resize_block(p, b.pages, want.pages, n))
			return p;
		if (grow && (q = extend_block(p, b.pages, room, n)))
			return q;
		if (grow)
			q = block_alloc(room, MALLOC_ALIGN, n);
	}
	if (!q)
		q = za_malloc(n);
	if (q) {
		memcpy(q, p, n < b.size ? n : b.size);
		free_alloc(p, &b);
	}
	return q;
}

/* Does the live page block p keep its pages for n bytes?  Then it records
 * n: the common step of a buffer growing a little at a time. */
static inline bool block_keeps(void *p, size_t n)
{
	struct za_page *head = live_block_head(p);
	if (!head)
		return false;
	unsigned long have = block_word_pages(block_word(head)), need = block_pages(n);
	if (need > have || have > realloc_room(need))
		return false;
	set_block_word(head, have, n, MALLOC_ALIGN, false);
	return true;
}

/* The fast path, with no frame of its own: growing or shrinking within
 * the class, answered by free's checks alone, or within a page block's
 * pages (a page block, not the boot heap's or a debug block: neither
 * has a live block head). */
void *za_realloc(void *p, size_t n)
{
	uint32_t info;
	if (likely(p && n && !zm.debug)) {
		if (n <= SMALL_MAX ? small_class_of(p, free_signature(p), &info) == size_class(n) :
				     block_keeps(p, n))
			return p;
	}
	return realloc_slow(p, n);
}

void *za_reallocarray(void *p, size_t count, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(count, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return za_realloc(p, n);
}

size_t za_malloc_usable_size(void *p)
{
	struct alloc_info b;
	struct za_page *head;
	uint32_t info;
	if (!p)
		return 0;
	/* Interpreters ask on every allocation and free (Ruby's accounting):
	 * free's checks answer for a live object, a block's word for a block. */
	if (likely(!zm.debug)) {
		unsigned int c = small_class_of(p, free_signature(p), &info);
		if (c < NR_CLASSES)
			return class_size(c);
		if ((head = live_block_head(p)))
			return block_word_pages(block_word(head)) << PAGE_SHIFT;
	}
	if (in_boot_heap(p))
		return boot_size(p);
	if (!malloc_ready())
		malloc_misuse("malloc_usable_size(%p): not allocated by zonealloc", p);
	if (debug_owns(p))
		return debug_usable_size(p, "malloc_usable_size");
	lookup_live(p, &b, "malloc_usable_size");
	return b.size;
}

/* ------------------------------------------------------------------------
 * Trimming and fork
 * ------------------------------------------------------------------------ */
int za_malloc_trim(size_t pad)
{
	(void)pad;
	if (!malloc_ready())
		return 0;
	sheaves_flush_thread();
	sheaves_flush_barns();
	cpu_cache_drain();
	za_shrink_slabs(zm.mm);
	za_drain_all_pages(zm.mm);
	mapping_cache_decay(true);
	return za_purge(zm.mm, 0) > 0;
}

#ifdef ZA_MALLOC_OVERRIDE
#include "override.c"
#endif
