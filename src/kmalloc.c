/*
 * kmalloc: general-purpose allocations from size-class caches kmalloc-8 ..
 * kmalloc-8k, larger ones straight from the page allocator.  kfree finds
 * the cache from the page descriptor: O(1), no lookup structure.
 */
#include "slab.h"
#include "internal.h"

#include <errno.h>
#include <string.h>

#define KMALLOC_MAX_CACHE (2 * PAGE_SIZE)

static const unsigned int kmalloc_sizes[] = {
	8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
};
_Static_assert(ZA_ARRAY_SIZE(kmalloc_sizes) == NR_KMALLOC_CACHES, "one cache per size");

/* The class of a size up to KMALLOC_MAX_CACHE: 1..8 -> 8, 65..96 -> 96,
 * 129..192 -> 192, otherwise the next power of two. */
static unsigned int kmalloc_index(size_t size)
{
	static const uint8_t small[24] = {   /* (size - 1) / 8 for sizes 1..192 */
		0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6,
	};
	if (size <= 192)
		return small[(size - 1) / 8];
	return order_base_2(size) - 1;      /* 256 -> 7 */
}

/* The cache of class i, created on first use (a system that never calls
 * kmalloc, like the malloc front end's, pays nothing for thirteen caches).
 * Two creators may race: one cache wins the slot, the other is destroyed. */
static __attribute__((noinline)) struct za_kmem_cache *kmalloc_cache_create(struct za_mm *mm,
									   unsigned int i)
{
	char name[32];
	unsigned int size = kmalloc_sizes[i];
	snprintf(name, sizeof(name), size >= 1024 ? "kmalloc-%uk" : "kmalloc-%u",
		 size >= 1024 ? size / 1024 : size);
	struct za_kmem_cache *s = za_cache_create(mm, name, size, 0, 0, NULL), *none = NULL;
	if (s && !atomic_compare_exchange_strong(&mm->kmalloc_caches[i], &none, s)) {
		za_cache_destroy(s);
		s = none;
	}
	return s;
}

static inline struct za_kmem_cache *kmalloc_cache(struct za_mm *mm, unsigned int i)
{
	VM_BUG_ON(mm, i >= NR_KMALLOC_CACHES || kmalloc_sizes[NR_KMALLOC_CACHES - 1] != KMALLOC_MAX_CACHE);
	struct za_kmem_cache *s = atomic_load_explicit(&mm->kmalloc_caches[i], memory_order_acquire);
	return likely(s) ? s : kmalloc_cache_create(mm, i);
}

/* The cache kmalloc(size) takes from, size <= KMALLOC_MAX_CACHE (sheaves'
 * memory, slub_sheaf.c); NULL without memory for it. */
struct za_kmem_cache *kmalloc_slab(struct za_mm *mm, size_t size)
{
	return kmalloc_cache(mm, kmalloc_index(size ? size : 1));
}

/* The bytes kmalloc(size) gives, for a size its caches serve. */
size_t kmalloc_size_roundup(size_t size)
{
	VM_BUG_ON(NULL, size > KMALLOC_MAX_CACHE);
	return kmalloc_sizes[kmalloc_index(size ? size : 1)];
}

/* Sizes above the caches: a block of the page allocator, marked as
 * kmalloc's so that kfree takes it and nothing else. */
static void *kmalloc_large(struct za_mm *mm, size_t size, za_gfp_t gfp)
{
	unsigned int order = 0;
	while ((PAGE_SIZE << order) < size && order <= mm->max_order)
		order++;
	if (order > mm->max_order) {
		za_set_last_error("za_kmalloc: %zu bytes is more than the largest block", size);
		errno = ENOMEM;
		return NULL;
	}
	void *p = za_alloc_pages(mm, gfp, order);
	if (p)
		set_page_flag(virt_to_page(mm, p), PG_large_kmalloc);
	return p;
}

static void *kmalloc_caller(struct za_mm *mm, size_t size, za_gfp_t gfp, void *caller)
{
	if (size > KMALLOC_MAX_CACHE)
		return kmalloc_large(mm, size, gfp);
	struct za_kmem_cache *s = kmalloc_cache(mm, kmalloc_index(size ? size : 1));
	if (unlikely(!s)) {
		errno = ENOMEM;
		return NULL;
	}
	return slab_alloc_caller(s, gfp, caller);
}

void *za_kmalloc(za_mm_t *mm, size_t size, za_gfp_t gfp)
{
	return kmalloc_caller(mm, size, gfp, __builtin_return_address(0));
}

void *za_kzalloc(za_mm_t *mm, size_t size, za_gfp_t gfp)
{
	return kmalloc_caller(mm, size, gfp | ZA_GFP_ZERO, __builtin_return_address(0));
}

static const char not_a_block[] = "not the start of a kmalloc'ed block (or freed already)";
static const char outside[] = "not allocated by kmalloc (outside the arena)";

/*
 * The head of the large kmalloc block at p (in the arena), or NULL with
 * *why saying what p is instead: another page-allocator block (page cache,
 * quicklist, a plain page) is not kmalloc's to free.
 */
static struct za_page *large_kmalloc_block(struct za_mm *mm, const void *p, const char **why)
{
	struct za_page *page = virt_to_page(mm, p);
	uint32_t flags = page_flags(page);
	bool head = !((uintptr_t)p & (PAGE_SIZE - 1));
	if (head && (flags & PG_large_kmalloc))
		return page;
	*why = head && (flags & PG_alloc) ? "a page-allocator block not from kmalloc" : not_a_block;
	return NULL;
}

/* The usable size of the kmalloc'ed block at p, or 0 with *why. */
static size_t kmalloc_size(struct za_mm *mm, const void *p, const char **why)
{
	struct za_page *slab, *page;
	if (!addr_in_arena(mm, p)) {
		*why = outside;
		return 0;
	}
	if ((slab = virt_to_slab(mm, p)))
		return slab->slab_cache->object_size;
	page = large_kmalloc_block(mm, p, why);
	return page ? PAGE_SIZE << page_order(page) : 0;
}

static void report_bad_pointer(struct za_mm *mm, const char *fn, const void *p, const char *why)
{
	za_report_error(mm, "%s(%p): %s", fn, p, why);
	errno = EINVAL;
}

static int bad_kfree(struct za_mm *mm, const void *p, const char *why)
{
	report_bad_pointer(mm, "za_kfree", p, why);
	return -1;
}

/* Clearing the mark is what claims a large block: of two racing kfrees of
 * it, one frees and the other reports.  The page allocator gets it unmarked. */
int za_kfree(za_mm_t *mm, const void *p)
{
	const char *why = not_a_block;
	struct za_page *slab, *page;
	if (!p)
		return 0;
	if (!addr_in_arena(mm, p))
		return bad_kfree(mm, p, outside);
	if ((slab = virt_to_slab(mm, p)))
		return slab_free_object(slab, (void *)p, __builtin_return_address(0));
	if (!(page = large_kmalloc_block(mm, p, &why)) ||
	    !test_and_clear_page_flag(page, PG_large_kmalloc))
		return bad_kfree(mm, p, why);
	return za_free_pages(mm, (void *)p, page_order(page));
}

/* ksize(NULL) is 0 without a report, as in the kernel. */
size_t za_ksize(za_mm_t *mm, const void *p)
{
	const char *why;
	size_t size = p ? kmalloc_size(mm, p, &why) : 0;
	if (!size) {
		if (p)
			report_bad_pointer(mm, "za_ksize", p, why);
		errno = EINVAL;
	}
	return size;
}

void *za_krealloc(za_mm_t *mm, void *p, size_t size, za_gfp_t gfp)
{
	if (!p)
		return kmalloc_caller(mm, size, gfp, __builtin_return_address(0));
	if (!size) {
		za_kfree(mm, p);
		return NULL;
	}
	const char *why;
	size_t have = kmalloc_size(mm, p, &why);
	if (!have) {
		report_bad_pointer(mm, "za_krealloc", p, why);
		return NULL;
	}
	if (size <= have) {
		if (gfp & ZA_GFP_ZERO)
			memset((char *)p + size, 0, have - size);
		return p;
	}
	void *q = kmalloc_caller(mm, size, gfp, __builtin_return_address(0));
	if (!q)
		return NULL;
	memcpy(q, p, have);
	if (gfp & ZA_GFP_ZERO)
		memset((char *)q + have, 0, size - have);
	za_kfree(mm, p);
	return q;
}
