/*
 * The malloc front end: the C allocation functions on one default memory
 * system, created on first use (malloc.h shows the layers).
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
#include "malloc_internal.h"
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

struct za_malloc zm;
uint8_t class_by_step[1024 / 16 + 1];

/* Where free() looks first: the system's sparse view, copied here once the
 * system exists (until then, nothing is the arena's), so that classifying
 * a pointer follows no pointer to the system.  A thread may free before it
 * ever allocated, without having synchronised with the bootstrap: the view
 * is published by its last field (view_copy). */
static struct sparse_view arena;

/* ------------------------------------------------------------------------
 * Misuse
 * ------------------------------------------------------------------------ */
void malloc_misuse(const char *fmt, ...)
{
	char msg[320] = "zonealloc: ";
	size_t len = strlen(msg);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + len, sizeof(msg) - len - 1, fmt, ap);
	va_end(ap);
	len = strlen(msg);
	msg[len++] = '\n';
	if (write(STDERR_FILENO, msg, len) < 0)
		msg[0] = 0;
	abort();
}

/* What the page allocator and the slab caches report under the malloc
 * front end is misuse too. */
static void report_and_abort(const char *msg, void *ctx)
{
	(void)ctx;
	malloc_misuse("%s", msg);
}

/* ------------------------------------------------------------------------
 * Bootstrap
 *
 * Creating the system may itself call malloc (pthread_atfork does, for
 * one): such calls, from the creating thread only, get memory from a small
 * static heap that free() recognises and ignores.  Other threads wait.
 * ------------------------------------------------------------------------ */
enum { BOOT_NONE, BOOT_RUNNING, BOOT_DONE, BOOT_FAILED };
static _Atomic int boot_state;
static __thread bool booting __attribute__((tls_model("initial-exec")));

static struct {
	_Alignas(MALLOC_ALIGN) char heap[128 << 10];
	_Atomic size_t used;
} boot_heap;

/* Each block is preceded by its size, for realloc. */
static void *boot_alloc(size_t n)
{
	size_t need = MALLOC_ALIGN + ((n + MALLOC_ALIGN - 1) & ~(size_t)(MALLOC_ALIGN - 1));
	size_t at = atomic_fetch_add(&boot_heap.used, need);
	if (n > sizeof(boot_heap.heap) || at + need > sizeof(boot_heap.heap)) {
		errno = ENOMEM;
		return NULL;
	}
	char *p = boot_heap.heap + at + MALLOC_ALIGN;   /* never used before: zero */
	*(size_t *)(p - sizeof(size_t)) = n;
	return p;
}

static bool in_boot_heap(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_heap.heap < sizeof(boot_heap.heap);
}

static size_t boot_size(const void *p)
{
	return *(const size_t *)((const char *)p - sizeof(size_t));
}

/* The address space the process may have (ulimit -v), or 0 if unlimited. */
static uint64_t address_space_limit(void)
{
	struct rlimit as;
	return !getrlimit(RLIMIT_AS, &as) && as.rlim_cur != RLIM_INFINITY ? as.rlim_cur : 0;
}

/* The machine's memory, or the address space the process may have if
 * that is less: more could never be used. */
static uint64_t usable_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t mem = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 1ULL << 32;
	uint64_t limit = address_space_limit();
	return limit && limit < mem ? limit : mem;
}

/*
 * The default system: the machine's memory size in one zone, grown on
 * demand (deferred_init: sections of address space are taken from the OS
 * as the zone grows into them), no kswapd (nothing to page out; free memory
 * goes back to the OS through the purge worker instead).  The watermarks
 * stay the kernel's: the free memory they keep at hand is address space,
 * and runs placed in it use less memory than with a zone grown a block at
 * a time (zabench malloc's large).  Under an address-space limit, sections of half
 * the size: the last one, which the limit may not leave room for, is what
 * the program loses.  ZA_CONFIG, appended by za_mm_create, overrides any of
 * it.  Should the metadata of that size not fit, smaller systems are tried.
 */
static za_mm_t *create_system(void)
{
	char config[256];
	uint64_t mem = usable_memory();
	const char *section = address_space_limit() ? "32M" : "auto";
	for (; mem >= (16ULL << 20); mem /= 2) {        /* one max-order block */
		snprintf(config, sizeof(config),
			 "memory=%lluM,zones=Normal,max_order=12,kswapd=0,deferred_init=1,quicklists=0,"
			 "section_size=%s",
			 (unsigned long long)(mem >> 20), section);
		za_mm_t *mm = za_mm_create(config);
		if (mm || errno != ENOMEM)
			return mm;
	}
	za_set_last_error("%llu MiB of memory or address space (ulimit -v) is too little",
			  (unsigned long long)(usable_memory() >> 20));
	return NULL;
}

static unsigned int sheaf_capacity(unsigned int size)
{
	unsigned int cap = 32768 / size;
	return cap < 2 ? 2 : cap > SHEAF_MAX_CAPACITY ? SHEAF_MAX_CAPACITY : cap;
}

static void init_classes(void)
{
	for (size_t step = 0; step <= 1024 / 16; step++)
		class_by_step[step] = (uint8_t)(step <= 8 ? (step ? step - 1 : 0)
							 : size_class_computed(step * 16));
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		struct malloc_class *mc = &zm.classes[c];
		mc->size = class_size(c);
		mc->capacity = sheaf_capacity(mc->size);
		/* About 64 KiB of full sheaves per class in the barn, 2..8. */
		unsigned int full = (64u << 10) / (mc->capacity * mc->size);
		zm.barns[c].max_full = full < 2 ? 2 : full > 8 ? 8 : full;
	}
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static bool init_front_end(void)
{
	za_mm_t *mm = create_system();
	if (!mm) {
		malloc_misuse("cannot create the default memory system: %s", za_last_error());
		return false;
	}
	za_mm_set_error_handler(mm, report_and_abort, NULL);
	zm.mm = mm;
	/* slub_debug asks for checked slab caches: the sheaves, the free
	 * signature and the alignment of classes assume plain ones, so it
	 * means debug mode. */
	zm.debug = mm->debug || mm->cfg.slub_debug[0];
	zm.large_max_pages = 1UL << mm->max_order;
	if (getrandom(&zm.free_key, sizeof(zm.free_key), GRND_NONBLOCK) != sizeof(zm.free_key))
		zm.free_key = za_cycles() * 0x9E3779B97F4A7C15ULL;
	zm.free_key |= 1;
	init_classes();
	zm.sheaf_cache = za_cache_create(mm, "malloc-sheaf",
					 sizeof(struct sheaf) + SHEAF_MAX_CAPACITY * sizeof(void *),
					 0, 0, NULL);
	zm.thread_cache_cache = za_cache_create(mm, "malloc-thread", sizeof(struct thread_cache),
						ZA_CACHELINE, 0, NULL);
	if (!zm.sheaf_cache || !zm.thread_cache_cache ||
	    pthread_key_create(&zm.thread_key, thread_cache_exit))
		return false;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (zm.debug)
		malloc_debug_init();
	const char *stats = getenv("ZA_STATS");
	if (stats && *stats && *stats != '0')
		atexit(malloc_stats_at_exit);
	view_copy(&arena, &mm->view);
	return true;
}

/* True once the system exists; false for this thread's calls made while
 * creating it (they use the boot heap). */
static __attribute__((noinline, cold)) bool bootstrap(void)
{
	int expect = BOOT_NONE;
	if (booting)
		return false;
	if (atomic_compare_exchange_strong(&boot_state, &expect, BOOT_RUNNING)) {
		booting = true;
		bool ok = init_front_end();
		booting = false;
		atomic_store_explicit(&boot_state, ok ? BOOT_DONE : BOOT_FAILED, memory_order_release);
		return ok;
	}
	while (atomic_load_explicit(&boot_state, memory_order_acquire) == BOOT_RUNNING)
		sched_yield();
	return atomic_load_explicit(&boot_state, memory_order_acquire) == BOOT_DONE;
}

static inline bool ready(void)
{
	return likely(atomic_load_explicit(&boot_state, memory_order_acquire) == BOOT_DONE) ||
	       bootstrap();
}

za_mm_t *za_malloc_system(void)
{
	return ready() ? zm.mm : NULL;
}

/* ------------------------------------------------------------------------
 * Classes and their caches
 * ------------------------------------------------------------------------ */
za_cache_t *malloc_class_cache(unsigned int c)
{
	struct malloc_class *mc = &zm.classes[c];
	za_cache_t *cache = atomic_load_explicit(&mc->cache, memory_order_acquire);
	if (likely(cache))
		return cache;
	za_lock(&zm.threads_lock);
	if (!(cache = load_relaxed(&mc->cache))) {
		char name[32];
		snprintf(name, sizeof(name), "malloc-%u", mc->size);
		unsigned int flags = zm.debug ? ZA_SLAB_CONSISTENCY_CHECKS | ZA_SLAB_RED_ZONE |
						ZA_SLAB_POISON | ZA_SLAB_STORE_USER : ZA_SLAB_FREEPTR_EARLY;
		cache = za_cache_create(zm.mm, name, mc->size, MALLOC_ALIGN, flags, NULL);
		if (cache)
			cache->owner_tag = c;
		atomic_store_explicit(&mc->cache, cache, memory_order_release);
	}
	za_unlock(&zm.threads_lock);
	return cache;
}

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
 * What a pointer is
 * ------------------------------------------------------------------------ */
enum block_kind { B_SMALL, B_LARGE, B_HUGE, B_BOOT, B_BAD };

struct block {
	enum block_kind kind;
	unsigned int cls;               /* B_SMALL */
	unsigned long pages;            /* B_LARGE */
	size_t size;                    /* usable */
	const char *why;                /* B_BAD */
	const void *start;              /* B_BAD inside a block: where it starts */
	bool freed;                     /* B_SMALL, B_BAD: the memory is free */
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

/* The first piece of the malloc block whose piece `head` is, walking back
 * piece by piece (a run has a few dozen at most); NULL if there is none. */
static struct za_page *block_start(struct za_page *head)
{
	while (head && (page_flags(head) & PG_alloc) && !block_word(head) &&
	       page_section_index(zm.mm, head))
		head = malloc_block_head((const char *)za_page_to_virt(zm.mm, head) - 1);
	return head && (page_flags(head) & PG_alloc) && block_word(head) ? head : NULL;
}

static void describe_arena_page(const void *p, struct block *b)
{
	struct za_page *head = malloc_block_head(p), *start;
	b->kind = B_BAD;
	if (!head) {
		b->why = "not allocated by zonealloc";  /* memory the zone has not grown into */
	} else if (page_flags(head) & (PG_pcp | PG_buddy)) {
		b->why = "the memory is free";
		b->freed = true;
	} else if ((start = block_start(head))) {
		b->why = "inside a block";
		b->start = za_page_to_virt(zm.mm, start);
		b->size = (block_word(start) >> 1) << PAGE_SHIFT;
	} else {
		b->why = "not allocated by malloc";
	}
}

/* Classifies p (not NULL) without touching its memory. */
static void lookup(const void *p, struct block *b)
{
	*b = (struct block){ .kind = B_BAD, .why = "not allocated by zonealloc" };
	if (view_has(&arena, p)) {
		struct za_page *page = view_page(&arena, p);
		struct za_page *slab = virt_to_slab(zm.mm, p);
		if (slab) {
			struct za_kmem_cache *s = slab->slab_cache;
			unsigned int c = s->owner_tag;
			size_t o = (size_t)((const char *)p - slab_base(s, slab));
			if (load_relaxed(&zm.classes[c].cache) != s) {
				b->why = "not allocated by malloc (an internal object)";
			} else if (object_div(s, o) >= st_objects(load_relaxed(&slab->slab_state))) {
				b->why = "not allocated by malloc (past a slab's last object)";
			} else if (object_div(s, o) * s->size != o) {
				b->why = "inside an object";
				b->start = slab_base(s, slab) + object_div(s, o) * s->size;
				b->size = s->object_size;
			} else {
				*b = (struct block){ .kind = B_SMALL, .cls = c, .size = s->object_size,
						     .freed = *(const uint64_t *)p == free_signature(p) };
			}
		} else if ((page_flags(page) & PG_alloc) && block_word(page) &&
			   !((uintptr_t)p & (PAGE_SIZE - 1))) {
			unsigned long pages = block_word(page) >> 1;
			*b = (struct block){ .kind = B_LARGE, .pages = pages,
					     .size = pages << PAGE_SHIFT, .freed = block_word(page) & 1 };
		} else {
			describe_arena_page(p, b);
		}
	} else if (in_boot_heap(p)) {
		*b = (struct block){ .kind = B_BOOT, .size = boot_size(p) };
	} else if ((b->size = vmalloc_size(p))) {
		b->kind = B_HUGE;
	}
}

static const char *block_name(const struct block *b, char *buf, size_t len)
{
	if (b->kind == B_SMALL)
		snprintf(buf, len, "malloc-%u", class_size(b->cls));
	else
		snprintf(buf, len, "%zu-byte block", b->size);
	return buf;
}

/* Looks p up for fn, ending the process unless it is a live allocation. */
static void lookup_live(const void *p, struct block *b, const char *fn)
{
	char name[40];
	lookup(p, b);
	if (b->freed && !strcmp(fn, "free"))
		malloc_misuse("double free of %p (%s)", p,
			      b->kind == B_BAD ? b->why : block_name(b, name, sizeof(name)));
	if (b->freed)
		malloc_misuse("%s(%p): the pointer was freed (%s)", fn, p,
			      b->kind == B_BAD ? b->why : block_name(b, name, sizeof(name)));
	if (b->kind == B_BAD && b->start)
		malloc_misuse("%s(%p): %s (the %zu-byte block at %p)", fn, p, b->why, b->size, b->start);
	if (b->kind == B_BAD)
		malloc_misuse("%s(%p): %s", fn, p, b->why);
}

/* ------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------ */
/* What an allocation of n bytes aligned to align (a power of two) gets:
 * a class, a page block of some order, or a mapping of its own. */
static void plan(size_t n, size_t align, struct block *b)
{
	if (n <= SMALL_MAX && align <= PAGE_SIZE) {
		unsigned int c = align <= MALLOC_ALIGN ? size_class(n) : aligned_class(n, align);
		if (c < NR_CLASSES) {
			*b = (struct block){ .kind = B_SMALL, .cls = c, .size = class_size(c) };
			return;
		}
	}
	/* Runs are page aligned; a larger alignment takes a block of a size
	 * at least as large, which is aligned to it. */
	unsigned long pages = align > PAGE_SIZE ? 1UL << block_order(n > align ? n : align)
						: block_pages(n);
	if (pages <= zm.large_max_pages)
		*b = (struct block){ .kind = B_LARGE, .pages = pages, .size = pages << PAGE_SHIFT };
	else
		*b = (struct block){ .kind = B_HUGE, .size = n };
}

/* The hit: the main sheaf's last object, no longer carrying the freed
 * signature. */
static inline __attribute__((always_inline)) void *sheaf_pop(struct thread_cache *tc,
							      struct sheaf *s)
{
	void *p = s->objects[--s->size];
	counter_add(&tc->alloc_hits, 1);
	*(uint64_t *)p = 0;
	return p;
}

static inline __attribute__((always_inline)) void *class_alloc(unsigned int c)
{
	struct thread_cache *tc = tcache;
	struct sheaf *s = tc->main[c];
	if (likely(s->size))
		return sheaf_pop(tc, s);
	void *p = sheaf_alloc_slow(c);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	*(uint64_t *)p = 0;     /* no longer free */
	return p;
}

/* Every allocation but the fast path: align is a power of two. */
static __attribute__((noinline)) void *malloc_slow(size_t n, size_t align)
{
	struct block b;
	if (!ready())
		return boot_alloc(n);
	if (unlikely(n > PTRDIFF_MAX)) {
		errno = ENOMEM;
		return NULL;
	}
	if (zm.debug)
		return debug_malloc(n, align, false);
	plan(n, align, &b);
	switch (b.kind) {
	case B_SMALL:
		return class_alloc(b.cls);
	case B_LARGE: {
		/* The arena's own memory is exhausted (or the address space
		 * left for it): a mapping of the request's size may still fit. */
		void *p = block_alloc(b.pages, align);
		return p ? p : vmalloc_alloc(n, align);
	}
	default:
		return vmalloc_alloc(n, align);
	}
}

void *za_malloc(size_t n)
{
	if (likely(n <= SMALL_MAX)) {
		unsigned int c = size_class(n);
		struct thread_cache *tc = tcache;
		struct sheaf *s = tc->main[c];
		if (likely(s->size))
			return sheaf_pop(tc, s);
	}
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
	/* Only the arena's memory can have been used before: the boot heap is
	 * never reused, and a direct mapping is new, zeroed by the kernel and
	 * resident only where touched. */
	void *p = za_malloc(n);
	if (p && view_has(&arena, p))
		memset(p, 0, n);
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
		align = (size_t)1 << (64 - __builtin_clzl(align));
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
static void free_block(void *p, const struct block *b)
{
	switch (b->kind) {
	case B_SMALL:
		*(uint64_t *)p = free_signature(p);
		sheaf_free_slow(b->cls, p);
		break;
	case B_LARGE:
		block_free(p, b->pages);
		break;
	case B_HUGE:
		vmalloc_free(p);
		break;
	default:
		break;
	}
}

/* Does a sized free's claim match the block? */
static bool matches(const struct block *b, size_t n, size_t align)
{
	struct block want;
	plan(n, align, &want);
	if (b->kind == B_HUGE)          /* planned so, or a page block that fell back */
		return want.kind != B_SMALL && n <= b->size && b->size - n < PAGE_SIZE;
	if (want.kind != b->kind)
		return false;
	return b->kind == B_SMALL ? want.cls == b->cls : want.pages == b->pages;
}

/* Everything but the fast path.  expect_size/align: a sized free's claim
 * (expect_size SIZE_MAX: none). */
static __attribute__((noinline)) void free_slow(void *p, size_t expect_size, size_t expect_align,
						const char *fn)
{
	struct block b;
	if (!p || in_boot_heap(p))
		return;
	if (!ready())
		malloc_misuse("%s(%p): not allocated by zonealloc", fn, p);
	if (zm.debug) {
		debug_free(p, expect_size, expect_align, fn);
		return;
	}
	lookup_live(p, &b, fn);
	if (expect_size != SIZE_MAX && !matches(&b, expect_size, expect_align)) {
		char name[40], align[40] = "";
		if (expect_align > MALLOC_ALIGN)
			snprintf(align, sizeof(align), ", align %zu", expect_align);
		malloc_misuse("%s(%p, size %zu%s): the size or alignment does not match the allocation (%s)",
			      fn, p, expect_size, align, block_name(&b, name, sizeof(name)));
	}
	if ((uintptr_t)p & (expect_align - 1))
		malloc_misuse("%s(%p): not aligned to %zu as the allocation was", fn, p, expect_align);
	free_block(p, &b);
}

/*
 * The class of p if it is a live object of a malloc slab -- the slab's own
 * descriptor says so, the offset is a multiple of the object size within
 * the slab's objects, and p does not carry the freed signature (sig) --
 * else NR_CLASSES (p needs the full checks).  *slabp is its slab.
 */
static inline __attribute__((always_inline)) unsigned int small_class_of(const void *p,
									  uint64_t sig,
									  struct za_page **slabp)
{
	if (unlikely(!view_has(&arena, p)))
		return NR_CLASSES;
	struct za_page *page = view_page(&arena, p);
	if (unlikely(!(page_flags(page) & (PG_slab | PG_tail))))
		return NR_CLASSES;
	/* Every page of a slab names its cache and the slab's order, and a slab
	 * is a block of memory aligned to its size (a section's memory is
	 * aligned to the section's): the offset into it and its head
	 * descriptor are arithmetic, not loads. */
	struct za_kmem_cache *s = page->slab_cache;
	size_t o = (uintptr_t)p & ((PAGE_SIZE << page_order(page)) - 1), idx = object_div(s, o);
	struct za_page *slab = page - (o >> PAGE_SHIFT);
	unsigned int c = s->owner_tag;
	if (unlikely(idx * s->size != o || idx >= st_objects(load_relaxed(&slab->slab_state)) ||
		     *(const uint64_t *)p == sig ||
		     load_relaxed(&zm.classes[c].cache) != s))
		return NR_CLASSES;
	*slabp = slab;
	return c;
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
	struct za_page *slab;
	uint64_t sig = free_signature(p);
	unsigned int c = small_class_of(p, sig, &slab);
	if (unlikely(c == NR_CLASSES || (expect_class != SIZE_MAX && expect_class != c)))
		return FREE_CHECK;
	struct thread_cache *tc = tcache;
	struct sheaf *sh = slab_owner(slab) == (uintptr_t)tc ? tc->main[c] : tc->remote[c];
	*(uint64_t *)p = sig;
	if (unlikely(sh->size >= sh->capacity))
		return c;
	sh->objects[sh->size++] = p;
	counter_add(&tc->free_hits, 1);
	return FREE_DONE;
}

void za_free(void *p)
{
	unsigned int r = free_fast(p, SIZE_MAX);
	if (unlikely(r < NR_CLASSES))
		sheaf_free_slow(r, p);
	else if (unlikely(r == FREE_CHECK))
		free_slow(p, SIZE_MAX, 1, "free");
}

void za_free_sized(void *p, size_t n)
{
	unsigned int r = n <= SMALL_MAX ? free_fast(p, size_class(n)) : FREE_CHECK;
	if (unlikely(r < NR_CLASSES))
		sheaf_free_slow(r, p);
	else if (unlikely(r == FREE_CHECK) && p)
		free_slow(p, n, MALLOC_ALIGN, "free_sized");
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
void *za_realloc(void *p, size_t n)
{
	struct za_page *slab;
	if (!p)
		return za_malloc(n);
	if (!n) {
		za_free(p);
		return NULL;
	}
	/* Growing or shrinking within the class: the common case, answered by
	 * free's checks alone. */
	if (n <= SMALL_MAX && small_class_of(p, free_signature(p), &slab) == size_class(n))
		return p;
	if (in_boot_heap(p)) {
		void *q = za_malloc(n);
		if (q)
			memcpy(q, p, n < boot_size(p) ? n : boot_size(p));
		return q;
	}
	if (!ready())
		malloc_misuse("realloc(%p): not allocated by zonealloc", p);
	if (zm.debug) {
		size_t have = debug_usable_size(p, "realloc");
		void *q = debug_malloc(n, MALLOC_ALIGN, false);
		if (q) {
			memcpy(q, p, n < have ? n : have);
			debug_free(p, SIZE_MAX, 1, "realloc");
		}
		return q;
	}
	/*
	 * The block stays only if it is what malloc(n) would give -- the same
	 * class (answered above), a page block resized in place (grown into the
	 * free blocks above it, or its upper halves given up), a mapping
	 * remapped -- so that free_sized(p, n) holds, as C23 asks.  Otherwise:
	 * copy.
	 */
	struct block b, want;
	lookup_live(p, &b, "realloc");
	plan(n, MALLOC_ALIGN, &want);
	if (want.kind == b.kind) {
		if (b.kind == B_LARGE && want.pages == b.pages)
			return p;
		if (b.kind == B_LARGE &&
		    !za_resize_pages_exact(zm.mm, p, b.pages << PAGE_SHIFT, want.pages << PAGE_SHIFT)) {
			set_block_word(virt_to_page(zm.mm, p), want.pages, false);
			if (want.pages < b.pages)
				purge_worker_kick();
			return p;
		}
		if (b.kind == B_HUGE)
			return vmalloc_realloc(p, n);
	}
	void *q = za_malloc(n);
	if (q) {
		memcpy(q, p, n < b.size ? n : b.size);
		free_block(p, &b);
	}
	return q;
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
	struct block b;
	if (!p)
		return 0;
	if (in_boot_heap(p))
		return boot_size(p);
	if (!ready())
		malloc_misuse("malloc_usable_size(%p): not allocated by zonealloc", p);
	if (zm.debug)
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
	if (!ready())
		return 0;
	sheaves_flush_thread();
	sheaves_flush_barns();
	za_shrink_slabs(zm.mm);
	za_drain_all_pages(zm.mm);
	return za_purge(zm.mm, 0) > 0;
}

/* Every lock of the front end and the system, in the order code nests
 * them, so that the child of a fork finds none held. */
static void fork_prepare(void)
{
	for (unsigned int c = 0; c < NR_CLASSES; c++)
		za_lock(&zm.barns[c].lock);
	za_lock(&zm.threads_lock);
	malloc_debug_lock(true);
	vmalloc_lock();
	mm_lock_all(zm.mm);
}

static void fork_unlock(bool in_child)
{
	mm_unlock_all(zm.mm, in_child);
	vmalloc_unlock();
	malloc_debug_lock(false);
	za_unlock(&zm.threads_lock);
	for (unsigned int c = 0; c < NR_CLASSES; c++)
		za_unlock(&zm.barns[c].lock);
}

static void fork_parent(void)
{
	fork_unlock(false);
}

static void fork_child(void)
{
	fork_unlock(true);
	purge_worker_after_fork(sheaves_after_fork_child());
}

/* ------------------------------------------------------------------------
 * The C library's names, and C++'s
 * ------------------------------------------------------------------------ */
#ifdef ZA_MALLOC_OVERRIDE
#define ALIAS(name) __attribute__((alias(#name), visibility("default")))

void *malloc(size_t n) ALIAS(za_malloc);
void free(void *p) ALIAS(za_free);
void *calloc(size_t count, size_t size) ALIAS(za_calloc);
void *realloc(void *p, size_t n) ALIAS(za_realloc);
void *reallocarray(void *p, size_t count, size_t size) ALIAS(za_reallocarray);
void *memalign(size_t align, size_t n) ALIAS(za_memalign);
void *aligned_alloc(size_t align, size_t n) ALIAS(za_aligned_alloc);
int posix_memalign(void **out, size_t align, size_t n) ALIAS(za_posix_memalign);
void *valloc(size_t n) ALIAS(za_valloc);
void *pvalloc(size_t n) ALIAS(za_pvalloc);
size_t malloc_usable_size(void *p) ALIAS(za_malloc_usable_size);
void free_sized(void *p, size_t n) ALIAS(za_free_sized);
void free_aligned_sized(void *p, size_t align, size_t n) ALIAS(za_free_aligned_sized);
int malloc_trim(size_t pad) ALIAS(za_malloc_trim);
__attribute__((visibility("default"))) struct mallinfo2 mallinfo2(void)
{
	return za_mallinfo2();
}

__attribute__((visibility("default"))) struct mallinfo mallinfo(void)
{
	return za_mallinfo();
}

/*
 * C++: operator new and delete by their (Itanium ABI, LP64) names, so the
 * library needs no C++ runtime.  A failing new calls the program's
 * new_handler until it gives up, then throws std::bad_alloc through the
 * C++ runtime's own function; both are weak references, present whenever
 * the program is C++ (the only case in which these are called).
 */
typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

static void *cxx_new(size_t n, size_t align, bool nothrow)
{
	for (;;) {
		void *p = align > MALLOC_ALIGN ? za_memalign(align, n) : za_malloc(n);
		if (p)
			return p;
		new_handler_fn handler = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
		if (handler)
			handler();
		else if (nothrow)
			return NULL;
		else if (_ZSt17__throw_bad_allocv)
			_ZSt17__throw_bad_allocv();
		else
			malloc_misuse("operator new(%zu): out of memory", n);
	}
}

/* C++'s delete with an alignment and no size. */
static void free_aligned(void *p, size_t align)
{
	if (p && ((uintptr_t)p & (align - 1)))
		malloc_misuse("delete(%p, align %zu): not aligned as the allocation was", p, align);
	za_free(p);
}

#define NEW(name, ...) void *name(__VA_ARGS__) __attribute__((visibility("default")))
#define DELETE(name, ...) void name(__VA_ARGS__) __attribute__((visibility("default")))
typedef struct nothrow_t nothrow_t;
NEW(_Znwm, size_t n);
NEW(_Znam, size_t n);
NEW(_ZnwmRKSt9nothrow_t, size_t n, const nothrow_t *nt);
NEW(_ZnamRKSt9nothrow_t, size_t n, const nothrow_t *nt);
NEW(_ZnwmSt11align_val_t, size_t n, size_t align);
NEW(_ZnamSt11align_val_t, size_t n, size_t align);
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, size_t n, size_t align, const nothrow_t *nt);
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, size_t n, size_t align, const nothrow_t *nt);
DELETE(_ZdlPv, void *p);
DELETE(_ZdaPv, void *p);
DELETE(_ZdlPvm, void *p, size_t n);
DELETE(_ZdaPvm, void *p, size_t n);
DELETE(_ZdlPvSt11align_val_t, void *p, size_t align);
DELETE(_ZdaPvSt11align_val_t, void *p, size_t align);
DELETE(_ZdlPvmSt11align_val_t, void *p, size_t n, size_t align);
DELETE(_ZdaPvmSt11align_val_t, void *p, size_t n, size_t align);
DELETE(_ZdlPvRKSt9nothrow_t, void *p, const nothrow_t *nt);
DELETE(_ZdaPvRKSt9nothrow_t, void *p, const nothrow_t *nt);
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, void *p, size_t align, const nothrow_t *nt);
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, void *p, size_t align, const nothrow_t *nt);

void *_Znwm(size_t n) { return cxx_new(n, 0, false); }
void *_Znam(size_t n) { return cxx_new(n, 0, false); }
void *_ZnwmRKSt9nothrow_t(size_t n, const nothrow_t *nt) { (void)nt; return cxx_new(n, 0, true); }
void *_ZnamRKSt9nothrow_t(size_t n, const nothrow_t *nt) { (void)nt; return cxx_new(n, 0, true); }
void *_ZnwmSt11align_val_t(size_t n, size_t a) { return cxx_new(n, a, false); }
void *_ZnamSt11align_val_t(size_t n, size_t a) { return cxx_new(n, a, false); }
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *nt)
{
	(void)nt;
	return cxx_new(n, a, true);
}
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *nt)
{
	(void)nt;
	return cxx_new(n, a, true);
}
void _ZdlPv(void *p) { za_free(p); }
void _ZdaPv(void *p) { za_free(p); }
void _ZdlPvm(void *p, size_t n) { za_free_sized(p, n); }
void _ZdaPvm(void *p, size_t n) { za_free_sized(p, n); }
void _ZdlPvSt11align_val_t(void *p, size_t a) { free_aligned(p, a); }
void _ZdaPvSt11align_val_t(void *p, size_t a) { free_aligned(p, a); }
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { za_free_aligned_sized(p, a, n); }
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { za_free_aligned_sized(p, a, n); }
void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_t *nt) { (void)nt; za_free(p); }
void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_t *nt) { (void)nt; za_free(p); }
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *nt)
{
	(void)nt;
	free_aligned(p, a);
}
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *nt)
{
	(void)nt;
	free_aligned(p, a);
}
#endif /* ZA_MALLOC_OVERRIDE */
