/*
 * The arena: the "physical memory" of a memory system.  One virtual
 * reservation with MAP_NORESERVE, so nothing is committed until a page is
 * first written; aligned to the largest buddy block so that every order-k
 * block is naturally aligned to 4 KiB << k in virtual memory too.
 */
#include "arena.h"

#include <errno.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static void populate(char *base, size_t len)
{
	if (madvise(base, len, MADV_POPULATE_WRITE) == 0)
		return;
	/* Kernels before 5.14: touch every page. */
	for (size_t off = 0; off < len; off += PAGE_SIZE)
		((volatile char *)base)[off] = 0;
}

int arena_reserve(struct za_mm *mm, unsigned long nr_pages, unsigned int align_order)
{
	size_t len = nr_pages << PAGE_SHIFT;
	size_t align = PAGE_SIZE << align_order;
	if (nr_pages > (SIZE_MAX >> PAGE_SHIFT) - (align >> PAGE_SHIFT)) {
		errno = ENOMEM;
		return -1;
	}
	size_t map_len = len + align;
	char *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	mm->map_base = p;
	mm->map_len = map_len;
	mm->base = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	mm->nr_pages = nr_pages;
	if (mm->cfg.hugepages)
		madvise(mm->base, len, MADV_HUGEPAGE);
	if (mm->cfg.populate)
		populate(mm->base, len);
	return 0;
}

void arena_release(struct za_mm *mm)
{
	if (mm->map_base)
		munmap(mm->map_base, mm->map_len);
	mm->map_base = NULL;
}
