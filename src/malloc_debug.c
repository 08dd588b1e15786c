/*
 * The malloc front end's debug mode (ZA_CONFIG=debug=1): every misuse
 * check, at the price of speed.
 *
 * Small blocks come from slab caches with every SLUB debug flag (double
 * frees, red zones around the object, poison checked at reuse, last owner
 * in reports) and no sheaves, so every operation is checked.  Each block
 * also carries a header with the size asked for, and the bytes from there
 * to the end of its object (or page, for large blocks) hold a pattern
 * checked at free: a write even one byte past the request is reported.
 * Large blocks and mappings, once freed, stay mapped without access for a
 * while (a quarantine), so that a use after free faults at once.  malloc(0)
 * returns a distinct address in a region without access.  A fault in
 * either is reported by a SIGSEGV handler; any other fault goes to the
 * handler that was there before.
 */
#include "malloc_internal.h"
#include "slab.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#define HDR_LIVE    0x5a411ce5u         /* header of an allocated block */
#define HDR_FREED   0xdeadf4eeu         /* ... freed (large blocks, before quarantine) */
#define TAIL_BYTE   0xcd                /* past the request, to the end of the object */
#define TAIL_MIN    16                  /* at least this many pattern bytes */

struct dbg_header {                     /* the 16 bytes before the user's pointer */
	uint32_t magic;
	uint32_t offset;                /* from the start of the block */
	size_t size;                    /* asked for */
};

/* ------------------------------------------------------------------------
 * malloc(0): distinct addresses that fault on any access.  Once the region
 * is used up, a 1-byte block stands in (writes are caught at free).
 * ------------------------------------------------------------------------ */
#define ZERO_REGION (64UL << 20)
static char *zero_region;
static _Atomic size_t zero_next;

static bool in_zero_region(const void *p)
{
	return (uintptr_t)p - (uintptr_t)zero_region < ZERO_REGION;
}

static void *zero_alloc(void)
{
	size_t at = atomic_fetch_add(&zero_next, MALLOC_ALIGN);
	return at < ZERO_REGION ? zero_region + at : debug_malloc(1, MALLOC_ALIGN, false);
}

/* ------------------------------------------------------------------------
 * The quarantine: freed large blocks, without access, oldest out first
 * when the slots or the bytes run out.  The slots are read without the
 * lock by the fault handler.
 * ------------------------------------------------------------------------ */
#define QUARANTINE_SLOTS 1024
#define QUARANTINE_BYTES (256UL << 20)

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
	size_t bytes;
} quarantine;

static void release(uintptr_t start, size_t len, bool mapping)
{
	mprotect((void *)start, len, PROT_READ | PROT_WRITE);
	if (mapping)
		vmalloc_free((void *)start);
	else
		za_free_pages(zm.mm, (void *)start, block_order(len));
}

/* Takes the oldest block out, under the lock. */
static struct quarantined evict_oldest(void)
{
	struct quarantined *q = &quarantine.slot[quarantine.oldest], out;
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
	mprotect((void *)start, len, PROT_NONE);
	for (;;) {
		za_lock(&quarantine.lock);
		if (quarantine.count < QUARANTINE_SLOTS &&
		    (quarantine.bytes + len <= QUARANTINE_BYTES || !quarantine.count))
			break;
		struct quarantined gone = evict_oldest();
		za_unlock(&quarantine.lock);
		release(load_relaxed(&gone.start), load_relaxed(&gone.len), gone.mapping);
	}
	struct quarantined *q = &quarantine.slot[(quarantine.oldest + quarantine.count) % QUARANTINE_SLOTS];
	store_relaxed(&q->len, len);
	q->size = size;
	q->mapping = mapping;
	store_relaxed(&q->start, start);
	quarantine.count++;
	quarantine.bytes += len;
	za_unlock(&quarantine.lock);
}

/* fork: no thread may hold the quarantine's lock in the child. */
void malloc_debug_lock(bool lock)
{
	lock ? za_lock(&quarantine.lock) : za_unlock(&quarantine.lock);
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
 * Faults
 * ------------------------------------------------------------------------ */
static struct sigaction previous_segv;

/*
 * A fault in the malloc(0) region or a quarantined block is reported; any
 * other goes to the handler that was there before (called directly, so
 * that this one stays for the faults after it), or, if there was none,
 * happens again under the default action.
 */
static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	const void *addr = si->si_addr;
	const struct quarantined *q;
	if (in_zero_region(addr))
		malloc_misuse("read or write through a malloc(0) pointer (%p)", addr);
	if ((q = quarantined(addr)))
		malloc_misuse("use after free: %p is inside the freed %zu-byte block at %p", addr,
			      q->size, (void *)load_relaxed(&q->start));
	if (previous_segv.sa_flags & SA_SIGINFO)
		previous_segv.sa_sigaction(sig, si, uc);
	else if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN)
		previous_segv.sa_handler(sig);
	else
		signal(sig, SIG_DFL);
}

void malloc_debug_init(void)
{
	zero_region = mmap(NULL, ZERO_REGION, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (zero_region == MAP_FAILED)
		malloc_misuse("debug mode: cannot reserve the malloc(0) region");
	struct sigaction sa = { .sa_sigaction = segv_handler, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &previous_segv);
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

void *debug_malloc(size_t n, size_t align, bool zero)
{
	if (!n)
		return zero_alloc();
	/* header, then up to align - 1 bytes to reach the alignment (blocks are
	 * 16-aligned: debug slab objects are no more), the request, the tail */
	size_t total = sizeof(struct dbg_header) + (align > MALLOC_ALIGN ? align - 1 : 0) + n + TAIL_MIN;
	if (total < n) {
		errno = ENOMEM;
		return NULL;
	}
	char *block, *end;
	unsigned int order = block_order(total);
	if (total <= SMALL_MAX) {
		unsigned int c = size_class(total);
		block = za_cache_alloc(malloc_class_cache(c), 0);
		end = block ? block + class_size(c) : NULL;
	} else if (order <= zm.mm->max_order) {
		block = za_alloc_pages(zm.mm, ZA_GFP_MOVABLE, order);
		end = block ? block + (PAGE_SIZE << order) : NULL;
	} else {
		block = vmalloc_alloc(total, align > PAGE_SIZE ? align : PAGE_SIZE);
		end = block ? block + vmalloc_size(block) : NULL;
	}
	if (!block)
		return NULL;
	char *p = (char *)(((uintptr_t)block + sizeof(struct dbg_header) + align - 1) &
			   ~(uintptr_t)(align - 1));
	*header(p) = (struct dbg_header){ HDR_LIVE, (uint32_t)(p - block), n };
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
			size_t o = (size_t)(h - slab_base(s, slab));
			b->start = slab_base(s, slab) + object_div(s, o) * s->size;
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
	size_t len = vmalloc_size((void *)((uintptr_t)h & ~(PAGE_SIZE - 1)));
	b->start = (char *)((uintptr_t)h & ~(PAGE_SIZE - 1));
	for (size_t a = 2 * PAGE_SIZE; !len && a && !((uintptr_t)p & (a - 1)); a <<= 1)
		len = vmalloc_size(b->start = (char *)p - a);
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
	if (h->magic == HDR_LIVE && h->offset == (uint32_t)((char *)p - b->start) &&
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

void debug_free(void *p, size_t expect_size, size_t expect_align, const char *fn)
{
	struct dbg_block b;
	if (in_zero_region(p))
		return;
	struct dbg_header *h = live_header(p, fn, &b);
	check_tail(p, h, b.end);
	if (expect_size != SIZE_MAX && expect_size != h->size)
		malloc_misuse("%s(%p, %zu): the allocation was of %zu bytes", fn, p, expect_size, h->size);
	if ((uintptr_t)p & (expect_align - 1))
		malloc_misuse("%s(%p): not aligned to %zu as the allocation was", fn, p, expect_align);
	if (b.small) {
		h->magic = 0;
		za_cache_free(virt_to_slab(zm.mm, b.start)->slab_cache, b.start);
	} else {
		h->magic = HDR_FREED;
		quarantine_add((uintptr_t)b.start, (size_t)(b.end - b.start), h->size, b.mapping);
	}
}

size_t debug_usable_size(const void *p, const char *fn)
{
	struct dbg_block b;
	return in_zero_region(p) ? 0 : live_header(p, fn, &b)->size;
}
