/*
 * The malloc front end's debug mode (ZA_CONFIG=debug=1): every misuse
 * check, at the price of speed.
 *
 * Small blocks come from slab caches with every SLUB debug flag (double
 * frees, red zones around the object, poison checked at reuse, last owner
 * in reports) and no sheaves, so every operation is checked.  A freed
 * small block is poisoned and held back a while (the small quarantine)
 * before its slab gets it back, so that a write through a stale pointer
 * lands in freed memory, not in the next object of its class, and is
 * reported when the block leaves.  Each block
 * also carries a header with the size asked for, and the bytes from there
 * to the end of its object (or page, for large blocks) hold a pattern
 * checked at free: a write even one byte past the request is reported.
 * Large blocks and mappings, once freed, stay mapped without access for a
 * while (a quarantine), so that a use after free faults at once; their
 * pages go back to the OS meanwhile, and a fault in one is reported
 * (zero.c's handler asks debug_fault).
 *
 * Sizes come from the program: every sum below is checked, and a request
 * no address space can hold fails with ENOMEM before anything is mapped.
 */
#include "internal.h"
#include "slab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HDR_LIVE    0x5a411ce5u         /* header of an allocated block */
#define HDR_FREED   0xdeadf4eeu         /* ... freed (large blocks, before quarantine) */
#define TAIL_BYTE   0xcd                /* past the request, to the end of the object */
#define TAIL_MIN    16                  /* at least this many pattern bytes */

struct dbg_header {                     /* the 16 bytes before the user's pointer */
	uint32_t magic;
	uint32_t offset_align;          /* the offset from the block's start, and the alignment */
	size_t size;                    /* asked for */
};

/* offset_align: the log2 of the alignment asked for in the top bits, the
 * offset modulo 2^26 below them (an alignment of 64 MiB or more wraps it). */
#define OFFSET_BITS 26
#define OFFSET_MASK ((1u << OFFSET_BITS) - 1)

static uint32_t offset_align(size_t offset, size_t align)
{
	return (uint32_t)order_base_2(align) << OFFSET_BITS | ((uint32_t)offset & OFFSET_MASK);
}

/* ------------------------------------------------------------------------
 * The quarantine: freed large blocks, without access, oldest out first
 * when the slots or the bytes run out.  The slots are read without the
 * lock by the fault handler.
 *
 * A block costs no memory while it waits: its pages go back to the OS as
 * it enters (arena pages by MADV_DONTNEED; a mapping is replaced by an
 * uncommitted one, which gives back its commit charge too), and without
 * access it needs none -- a use after free faults as before.  What it
 * still holds is address space, and the arena's is the system's memory
 * limit (memory=): a quarantined block is one the allocator cannot hand
 * out, so a program with less free than the quarantine holds would fail.
 * Hence the budget: 64 MiB, and at most an eighth of the arena.  A use
 * after free mostly follows the free closely, and 64 MiB still holds the
 * last four of the largest arena blocks (16 MiB), or the last 1024 (the
 * slots) of 64 KiB, while the default arena (the machine's memory) loses
 * next to nothing.  A direct mapping larger than the whole budget is kept
 * alone: it holds only address space outside the arena, as much as the
 * program held a moment ago.  An arena block larger than the budget (in
 * an arena under 128 MiB) goes back at once.  Each quarantined arena block
 * splits the arena's mapping in up to three: 1024 slots stay far below the
 * kernel's map count limit (vm.max_map_count, 65530 by default).
 * ------------------------------------------------------------------------ */
#define QUARANTINE_SLOTS 1024
#define QUARANTINE_BYTES (64UL << 20)

struct quarantined {
	_Atomic uintptr_t start;        /* 0: empty */
	_Atomic size_t len;
	size_t size;                    /* what the user asked for */
	bool mapping;                   /* a direct mapping, not arena pages */
};

static struct {
	za_lock_t lock;
	struct quarantined slot[QUARANTINE_SLOTS];
	unsigned int oldest, count;
	size_t bytes, budget;           /* address space held, and its limit */
} quarantine;

/* A block out of the quarantine (or never in it) goes back: a mapping is
 * unmapped, arena pages get their access back and go to the buddy lists. */
static void release(uintptr_t start, size_t len, bool mapping)
{
	if (mapping) {
		mapping_unmap((void *)start);
	} else {
		mprotect((void *)start, len, PROT_READ | PROT_WRITE);
		za_free_pages(zm.mm, (void *)start, get_order(len));
	}
}

/* Takes away access and gives the pages back to the OS.  A mapping is
 * replaced in place (MAP_FIXED over our own range: no other mapping can
 * take it meanwhile) by one that commits nothing; arena pages are already
 * uncommitted (the arena is MAP_NORESERVE). */
static void make_inaccessible(uintptr_t start, size_t len, bool mapping)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED;
	if (mapping && mmap((void *)start, len, PROT_NONE, flags, -1, 0) != MAP_FAILED)
		return;
	mprotect((void *)start, len, PROT_NONE);
	madvise((void *)start, len, MADV_DONTNEED);
}

/* Takes the oldest block out, under the lock. */
static struct quarantined evict_oldest(void)
{
	struct quarantined *q = &quarantine.slot[quarantine.oldest], out;
	za_lock_assert_held(zm.mm, &quarantine.lock);
	VM_BUG_ON(zm.mm, !quarantine.count);
	store_relaxed(&out.start, load_relaxed(&q->start));
	store_relaxed(&out.len, load_relaxed(&q->len));
	out.mapping = q->mapping;
	store_relaxed(&q->start, 0);
	quarantine.oldest = (quarantine.oldest + 1) % QUARANTINE_SLOTS;
	quarantine.count--;
	quarantine.bytes -= load_relaxed(&out.len);
	return out;
}

static void quarantine_add(uintptr_t start, size_t len, size_t size, bool mapping)
{
	if (!mapping && len > quarantine.budget) {
		release(start, len, false);
		return;
	}
	make_inaccessible(start, len, mapping);
	for (;;) {
		za_lock(&quarantine.lock);
		/* bytes <= budget, or one block alone: the sum cannot wrap */
		if (quarantine.count < QUARANTINE_SLOTS &&
		    (quarantine.bytes + len <= quarantine.budget || !quarantine.count))
			break;
		struct quarantined gone = evict_oldest();
		za_unlock(&quarantine.lock);
		release(load_relaxed(&gone.start), load_relaxed(&gone.len), gone.mapping);
	}
	struct quarantined *q = &quarantine.slot[(quarantine.oldest + quarantine.count) % QUARANTINE_SLOTS];
	VM_BUG_ON(zm.mm, load_relaxed(&q->start));         /* the slot after the newest is free */
	store_relaxed(&q->len, len);
	q->size = size;
	q->mapping = mapping;
	store_relaxed(&q->start, start);
	quarantine.count++;
	quarantine.bytes += len;
	VM_BUG_ON(zm.mm, quarantine.count > 1 && quarantine.bytes > quarantine.budget);
	za_unlock(&quarantine.lock);
}

static bool small_evict(bool all);
static void small_quarantine_lock(bool lock);

/* Out of memory: every quarantined block goes back (a use after free of
 * them is no longer caught).  Returns whether any did. */
static bool quarantine_drain(void)
{
	bool any = false;
	while (small_evict(true))
		any = true;
	for (;;) {
		za_lock(&quarantine.lock);
		if (!quarantine.count) {
			za_unlock(&quarantine.lock);
			return any;
		}
		struct quarantined gone = evict_oldest();
		za_unlock(&quarantine.lock);
		release(load_relaxed(&gone.start), load_relaxed(&gone.len), gone.mapping);
		any = true;
	}
}

/* fork: no thread may hold the quarantine's lock in the child. */
void malloc_debug_lock(bool lock)
{
	if (lock) {
		za_lock(&quarantine.lock);
		small_quarantine_lock(true);
	} else {
		small_quarantine_lock(false);
		za_unlock(&quarantine.lock);
	}
}

/* The quarantined block holding p, or NULL.  Lock-free: the fault handler uses it. */
static const struct quarantined *quarantined(const void *p)
{
	for (unsigned int i = 0; i < QUARANTINE_SLOTS; i++) {
		const struct quarantined *q = &quarantine.slot[i];
		uintptr_t start = load_relaxed(&q->start);
		if (start && (uintptr_t)p - start < load_relaxed(&q->len))
			return q;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Faults in quarantined blocks (zero.c's handler asks)
 * ------------------------------------------------------------------------ */
void debug_fault(const void *addr)
{
	const struct quarantined *q = quarantined(addr);
	if (q)
		malloc_misuse("use after free: %p is inside the freed %zu-byte block at %p", addr,
			      q->size, (void *)load_relaxed(&q->start));
}

static void small_quarantine_check_all(void);

void malloc_debug_init(void)
{
	size_t arena = zm.mm->nr_pages << PAGE_SHIFT;
	quarantine.budget = arena / 8 < QUARANTINE_BYTES ? arena / 8 : QUARANTINE_BYTES;
	malloc_fault_handler_install();
	atexit(small_quarantine_check_all);
}

/* ------------------------------------------------------------------------
 * Blocks
 * ------------------------------------------------------------------------ */
static struct dbg_header *header(const void *p)
{
	return (struct dbg_header *)((char *)p - sizeof(struct dbg_header));
}

static void fill_tail(char *end_of_request, char *end)
{
	memset(end_of_request, TAIL_BYTE, (size_t)(end - end_of_request));
}

/* ------------------------------------------------------------------------
 * The small quarantine: freed slab objects, poisoned, oldest out first.
 * SLUB would hand a freed object out again at once (its free list is a
 * stack), so a stale pointer would write into the next live object of the
 * class unseen.  Held here, the object keeps the poison until it leaves,
 * when it is checked -- a write after free is reported then -- and freed
 * to its slab.  A budget of SMALL_QUARANTINE_BYTES (and slots): a use
 * after free mostly follows the free closely.
 * ------------------------------------------------------------------------ */
#define SMALL_QUARANTINE_SLOTS 4096
#define SMALL_QUARANTINE_BYTES (4UL << 20)
#define FREED_BYTE 0x6b                 /* SLUB's poison, as live_header knows it */

struct held_object {
	char *p;                        /* the user's pointer; poisoned from here */
	char *start, *end;              /* the slab object */
};

static struct {
	za_lock_t lock;
	struct held_object slot[SMALL_QUARANTINE_SLOTS];
	unsigned int oldest, count;
	size_t bytes;
	/* Per class, the slot its last object went to: the next allocation of
	 * the class checks it (small_quarantine_check_newest). */
	unsigned int newest[NR_CLASSES];
} small_quarantine;

static void small_quarantine_lock(bool lock)
{
	lock ? za_lock(&small_quarantine.lock) : za_unlock(&small_quarantine.lock);
}

/* Its poison intact, or the end of the process. */
static void check_poison(const struct held_object *o)
{
	for (const char *c = o->p; c < o->end; c++)
		if (*(const unsigned char *)c != FREED_BYTE)
			malloc_misuse("write after free: object %p modified at byte %zu after it was "
				      "freed (0x%02x)", (void *)o->p, (size_t)(c - o->p),
				      *(const unsigned char *)c);
}

/* Checked, then back to its slab. */
static void small_release(struct held_object o)
{
	VM_BUG_ON(zm.mm, o.p < o.start || o.p >= o.end || header(o.p)->magic != HDR_FREED);
	check_poison(&o);
	header(o.p)->magic = 0;
	za_cache_free(virt_to_slab(zm.mm, o.start)->slab_cache, o.start);
}

/* Is slot i among those the quarantine holds?  Under the lock. */
static bool slot_held(unsigned int i)
{
	return (i + SMALL_QUARANTINE_SLOTS - small_quarantine.oldest) % SMALL_QUARANTINE_SLOTS <
	       small_quarantine.count;
}

/* The oldest object out, under the lock. */
static struct held_object take_oldest(void)
{
	struct held_object o = small_quarantine.slot[small_quarantine.oldest];
	za_lock_assert_held(zm.mm, &small_quarantine.lock);
	small_quarantine.oldest = (small_quarantine.oldest + 1) % SMALL_QUARANTINE_SLOTS;
	small_quarantine.count--;
	small_quarantine.bytes -= (size_t)(o.end - o.start);
	return o;
}

static bool over_budget(void)
{
	return small_quarantine.count == SMALL_QUARANTINE_SLOTS ||
	       small_quarantine.bytes > SMALL_QUARANTINE_BYTES;
}

/* Takes the oldest out if the quarantine is over its budget or, with all,
 * if it holds anything; false if it took none. */
static bool small_evict(bool all)
{
	za_lock(&small_quarantine.lock);
	if (!small_quarantine.count || (!all && !over_budget())) {
		za_unlock(&small_quarantine.lock);
		return false;
	}
	struct held_object o = take_oldest();
	za_unlock(&small_quarantine.lock);
	small_release(o);
	return true;
}

static void small_quarantine_add(char *p, char *start, char *end)
{
	struct held_object gone = { 0 };
	header(p)->magic = HDR_FREED;
	memset(p, FREED_BYTE, (size_t)(end - p));
	za_lock(&small_quarantine.lock);
	if (small_quarantine.count == SMALL_QUARANTINE_SLOTS)
		gone = take_oldest();
	unsigned int at = (small_quarantine.oldest + small_quarantine.count) % SMALL_QUARANTINE_SLOTS;
	small_quarantine.slot[at] = (struct held_object){ p, start, end };
	small_quarantine.newest[size_class((size_t)(end - start))] = at;
	small_quarantine.count++;
	small_quarantine.bytes += (size_t)(end - start);
	VM_BUG_ON(zm.mm, small_quarantine.count > SMALL_QUARANTINE_SLOTS);
	za_unlock(&small_quarantine.lock);
	if (gone.p)
		small_release(gone);
	while (small_evict(false))
		;
}

/*
 * The early check: an allocation of class c checks the object of its class
 * freed last, if the quarantine still holds it -- a stale pointer mostly
 * writes soon after the free, and before the quarantine held objects back,
 * that write was seen when the class allocated next.  One object, so that
 * the quarantine's reach costs the allocation path nothing more.
 */
static void small_quarantine_check_newest(unsigned int c)
{
	za_lock(&small_quarantine.lock);
	unsigned int i = small_quarantine.newest[c];
	const struct held_object *o = &small_quarantine.slot[i];
	if (slot_held(i) && o->p && size_class((size_t)(o->end - o->start)) == c)
		check_poison(o);
	za_unlock(&small_quarantine.lock);
}

/* At exit: every object still held, so that a write after free is
 * reported however few frees followed it. */
static void small_quarantine_check_all(void)
{
	za_lock(&small_quarantine.lock);
	for (unsigned int n = 0; n < small_quarantine.count; n++)
		check_poison(&small_quarantine.slot[(small_quarantine.oldest + n) %
						    SMALL_QUARANTINE_SLOTS]);
	za_unlock(&small_quarantine.lock);
}

/* A block of total bytes for an allocation aligned to align, and its end:
 * a slab object, arena pages, or a mapping (also when the arena has no
 * more memory). */
static char *debug_block(size_t total, size_t align, char **end)
{
	char *block = NULL;
	unsigned int order = get_order(total);
	if (total <= SMALL_MAX) {
		unsigned int c = size_class(total);
		za_cache_t *cache = malloc_class_cache(c);
		small_quarantine_check_newest(c);
		if ((block = cache ? za_cache_alloc(cache, 0) : NULL))
			*end = block + class_size(c);
		return block;
	}
	if (order <= zm.mm->max_order && (block = za_alloc_pages(zm.mm, ZA_GFP_MOVABLE, order))) {
		*end = block + (PAGE_SIZE << order);
		return block;
	}
	if ((block = mapping_alloc(total, align > PAGE_SIZE ? align : PAGE_SIZE, total)))
		*end = block + mapping_size(block, NULL, NULL);
	return block;
}

/*
 * n bytes aligned to align (a power of two, at most 2^63).  The block holds
 * the header, then up to align - 1 bytes to reach the alignment (blocks
 * are 16-aligned: debug slab objects are no more), the request, the tail.
 * The extras are at most 2^63 + 31, so only their sum with n can wrap; no
 * object may exceed PTRDIFF_MAX bytes (pointer differences must hold).
 */
void *debug_malloc(size_t n, size_t align, bool zero)
{
	size_t pad = align > MALLOC_ALIGN ? align - 1 : 0, total;
	size_t extra = sizeof(struct dbg_header) + pad + TAIL_MIN;
	/* Its sheaves stay empty, but the cache makes the thread known: a
	 * fork's child tells whether its parent had other threads, the purge
	 * worker sees the thread exit. */
	this_thread_cache();
	if (!n) {
		void *z = zero_alloc(align);
		if (z)
			return z;       /* else a block of 0 bytes: header and tail */
	}
	if (__builtin_add_overflow(n, extra, &total) || total > PTRDIFF_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	char *end, *block = debug_block(total, align, &end);
	if (!block && quarantine_drain())
		block = debug_block(total, align, &end);
	if (!block)
		return NULL;
	/* block + total is an address: p's computation cannot wrap.  The
	 * offset is kept modulo 2^26, as live_header compares it. */
	char *p = (char *)(((uintptr_t)block + sizeof(struct dbg_header) + align - 1) &
			   ~(uintptr_t)(align - 1));
	*header(p) = (struct dbg_header){ HDR_LIVE, offset_align((size_t)(p - block), align), n };
	size_t tail = (size_t)(end - (p + n));
	fill_tail(p + n, p + n + (tail < PAGE_SIZE ? tail : PAGE_SIZE));
	if (zero)
		memset(p, 0, n);
	return p;
}

/*
 * The allocated block the header of p would lie in, found from the page
 * descriptors and the mapping records, without reading memory: its start
 * and end, and whether it is a slab object or a direct mapping.
 */
struct dbg_block {
	char *start, *end;
	bool small, mapping;
};

static bool find_block(const void *p, struct dbg_block *b)
{
	const char *h = (const char *)p - sizeof(struct dbg_header);
	*b = (struct dbg_block){ 0 };
	if (addr_in_arena(zm.mm, h)) {
		struct za_page *slab = virt_to_slab(zm.mm, h), *head;
		if (slab) {
			struct za_kmem_cache *s = slab->slab_cache;
			size_t idx, off = (size_t)(h - slab_base(s, slab));
			slab_object_at(s, off, MAX_OBJS_PER_SLAB, &idx);
			b->start = slab_base(s, slab) + idx * s->size;
			b->end = b->start + s->object_size;
			b->small = true;
			return h < b->end;
		}
		if (!(head = malloc_block_head(h)) || !(page_flags(head) & PG_alloc))
			return false;
		b->start = za_page_to_virt(zm.mm, head);
		b->end = b->start + (PAGE_SIZE << page_order(head));
		return true;
	}
	/* A mapping starts at the page below the header, or, aligned beyond a
	 * page, at p less its alignment. */
	size_t len = mapping_size((void *)((uintptr_t)h & ~(PAGE_SIZE - 1)), NULL, NULL);
	b->start = (char *)((uintptr_t)h & ~(PAGE_SIZE - 1));
	for (size_t a = 2 * PAGE_SIZE; !len && a && a <= (uintptr_t)p && !((uintptr_t)p & (a - 1));
	     a <<= 1)
		len = mapping_size(b->start = (char *)p - a, NULL, NULL);
	b->end = b->start + len;
	b->mapping = true;
	return len != 0;
}

/* The header of the live allocation p, or the end of the process saying
 * why p is not one. */
static struct dbg_header *live_header(const void *p, const char *fn, struct dbg_block *b)
{
	const struct quarantined *q = quarantined(p);
	if (q)
		malloc_misuse("%s(%p): the pointer was freed (a %zu-byte block)", fn, p, q->size);
	if (((uintptr_t)p & (MALLOC_ALIGN - 1)) || !find_block(p, b))
		malloc_misuse("%s(%p): not allocated by zonealloc", fn, p);
	struct dbg_header *h = header(p);
	if (h->magic == HDR_LIVE &&
	    (h->offset_align & OFFSET_MASK) == ((uint32_t)((char *)p - b->start) & OFFSET_MASK) &&
	    h->size <= (size_t)(b->end - (char *)p))
		return h;
	if (h->magic == 0x6b6b6b6bu || h->magic == HDR_FREED)       /* poisoned by SLUB, or ours */
		malloc_misuse("%s(%p): the pointer was freed", fn, p);
	malloc_misuse("%s(%p): not the start of an allocation (or its header was overwritten)", fn, p);
}

static void check_tail(const void *p, const struct dbg_header *h, const char *end)
{
	const unsigned char *t = (const unsigned char *)p + h->size;
	size_t len = (size_t)(end - (const char *)t);
	if (len > PAGE_SIZE)
		len = PAGE_SIZE;
	for (size_t i = 0; i < len; i++)
		if (t[i] != TAIL_BYTE)
			malloc_misuse("heap overflow: the %zu-byte block at %p was written past its end "
				      "(byte %zu is 0x%02x)", h->size, p, h->size + i, t[i]);
}

/* expect_size/align as free_slow's. */
void debug_free(void *p, size_t expect_size, size_t expect_align, const char *fn)
{
	struct dbg_block b;
	struct dbg_header *h = live_header(p, fn, &b);
	size_t align = (size_t)1 << (h->offset_align >> OFFSET_BITS);
	check_tail(p, h, b.end);
	if (expect_size != SIZE_MAX && expect_size != h->size)
		malloc_misuse("%s(%p, %zu): the allocation was of %zu bytes", fn, p, expect_size, h->size);
	if (expect_align && expect_align != align)
		malloc_misuse("%s(%p, align %zu): the allocation was aligned to %zu", fn, p,
			      expect_align, align);
	if (b.small) {
		small_quarantine_add(p, b.start, b.end);
	} else {
		h->magic = HDR_FREED;
		quarantine_add((uintptr_t)b.start, (size_t)(b.end - b.start), h->size, b.mapping);
	}
	/* As the default mode's frees do: what went back to the page
	 * allocator (a slab emptied, a block out of the quarantine) goes back
	 * to the OS after purge_delay_ms.  One load when the worker runs. */
	purge_worker_kick();
}

size_t debug_usable_size(const void *p, const char *fn)
{
	struct dbg_block b;
	return live_header(p, fn, &b)->size;
}
