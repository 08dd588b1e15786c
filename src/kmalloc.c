/*
 * kmalloc: general-purpose allocations from size-class caches kmalloc-8 ..
 * kmalloc-8k, larger ones straight from the page allocator.  kfree finds
 * the cache from the page descriptor: O(1), no lookup structure.
 */
#include "slab.h"

#include <errno.h>
#include <string.h>

#define KMALLOC_MAX_CACHE (2 * PAGE_SIZE)

static const unsigned int kmalloc_sizes[] = {
	8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
};

/* The class of a size up to KMALLOC_MAX_CACHE: 1..8 -> 8, 65..96 -> 96,
 * 129..192 -> 192, otherwise the next power of two. */
static unsigned int kmalloc_index(size_t size)
{
	static const uint8_t small[24] = {   /* (size - 1) / 8 for sizes 1..192 */
		0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6,
	};
	if (size <= 192)
		return small[(size - 1) / 8];
	return (unsigned int)(64 - __builtin_clzl(size - 1)) - 1;   /* 256 -> 7 */
}

int kmalloc_init(struct za_mm *mm)
{
	for (size_t i = 0; i < ZA_ARRAY_SIZE(kmalloc_sizes); i++) {
		char name[32];
		snprintf(name, sizeof(name), kmalloc_sizes[i] >= 1024 ? "kmalloc-%uk" : "kmalloc-%u",
			 kmalloc_sizes[i] >= 1024 ? kmalloc_sizes[i] / 1024 : kmalloc_sizes[i]);
		if (!(mm->kmalloc_caches[i] = za_cache_create(mm, name, kmalloc_sizes[i], 0, 0, NULL)))
			return -1;
	}
	return 0;
}

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
	return za_alloc_pages(mm, gfp, order);
}

static void *kmalloc_caller(struct za_mm *mm, size_t size, za_gfp_t gfp, void *caller)
{
	if (size > KMALLOC_MAX_CACHE)
		return kmalloc_large(mm, size, gfp);
	return slab_alloc_caller(mm->kmalloc_caches[kmalloc_index(size ? size : 1)], gfp, caller);
}

void *za_kmalloc(za_mm_t *mm, size_t size, za_gfp_t gfp)
{
	return kmalloc_caller(mm, size, gfp, __builtin_return_address(0));
}

void *za_kzalloc(za_mm_t *mm, size_t size, za_gfp_t gfp)
{
	return kmalloc_caller(mm, size, gfp | ZA_GFP_ZERO, __builtin_return_address(0));
}

static int bad_kfree(struct za_mm *mm, const void *p, const char *why)
{
	za_report_error(mm, "za_kfree(%p): %s", p, why);
	errno = EINVAL;
	return -1;
}

int za_kfree(za_mm_t *mm, const void *p)
{
	if (!p)
		return 0;
	if (!addr_in_arena(mm, p))
		return bad_kfree(mm, p, "not allocated by kmalloc (outside the arena)");
	struct za_page *slab = virt_to_slab(mm, p);
	if (slab)
		return slab_free_object(slab, (void *)p, __builtin_return_address(0));
	struct za_page *page = za_virt_to_page(mm, p);
	if (!(page_flags(page) & PG_alloc))
		return bad_kfree(mm, p, "not the start of a kmalloc'ed block");
	return za_free_pages(mm, (void *)p, page_order(page));
}

size_t za_ksize(za_mm_t *mm, const void *p)
{
	struct za_page *slab, *page;
	if (p && addr_in_arena(mm, p)) {
		if ((slab = virt_to_slab(mm, p)))
			return slab->slab_cache->object_size;
		page = za_virt_to_page(mm, p);
		if ((page_flags(page) & PG_alloc) && za_page_to_virt(mm, page) == p)
			return PAGE_SIZE << page_order(page);
	}
	errno = EINVAL;
	return 0;
}

void *za_krealloc(za_mm_t *mm, void *p, size_t size, za_gfp_t gfp)
{
	if (!p)
		return kmalloc_caller(mm, size, gfp, __builtin_return_address(0));
	if (!size) {
		za_kfree(mm, p);
		return NULL;
	}
	size_t have = za_ksize(mm, p);
	if (!have) {
		za_report_error(mm, "za_krealloc(%p): not a kmalloc'ed block", p);
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
