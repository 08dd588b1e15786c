/*
 * memblock: the system's own metadata (its descriptor, the zone, per-CPU
 * and section arrays, the slab caches' descriptors), packed into chunks
 * mapped from the OS and given back together when the system goes, as the
 * kernel's boot allocator hands out memory for the kernel's lifetime.
 *
 * Packing is for the malloc's sake: small arrays on a mapping each cost a
 * resident page apiece, and a program that called malloc once made 22 such
 * mappings.  A chunk is MAP_NORESERVE: what is never handed out is never
 * touched, so a chunk's unused tail costs address space, not memory.
 */
#include "internal.h"

#include <string.h>

#define CHUNK_SIZE      (64UL << 10)
/* Larger requests get a chunk of their own (a sparse bitmap, the per-CPU
 * arrays of a big machine): the shared chunk stays for the small ones. */
#define OWN_CHUNK_OVER  (CHUNK_SIZE / 4)

struct memblock_chunk {
	struct memblock_chunk *next;
	size_t size, used;
};

static struct memblock_chunk *chunk_new(size_t size)
{
	struct memblock_chunk *c = za_os_alloc(size);
	if (c) {
		c->size = size;
		c->used = sizeof(*c);
	}
	return c;
}

/* Bytes of chunk c at align, or NULL if they do not fit. */
static void *chunk_take(struct memblock_chunk *c, size_t size, size_t align)
{
	size_t at = ALIGN_UP(c->used, align);
	if (at > c->size || c->size - at < size)
		return NULL;
	c->used = at + size;
	return (char *)c + at;
}

struct za_mm *memblock_create_mm(void)
{
	struct memblock_chunk *c = chunk_new(CHUNK_SIZE);
	if (!c)
		return NULL;
	struct za_mm *mm = chunk_take(c, sizeof(*mm), _Alignof(struct za_mm));
	mm->memblock.chunks = c;
	return mm;
}

void *memblock_alloc(struct za_mm *mm, size_t size, size_t align)
{
	VM_BUG_ON(mm, !align || align & (align - 1) || align > PAGE_SIZE);
	/* Nothing shares a cache line with another request's data: some of
	 * it is written by every CPU (statistics, locks). */
	if (align < ZA_CACHELINE)
		align = ZA_CACHELINE;
	struct memblock *mb = &mm->memblock;
	void *p = NULL;
	za_lock(&mb->lock);
	if (size > OWN_CHUNK_OVER) {
		/* Behind the head, which stays the one small requests fill. */
		struct memblock_chunk *c = chunk_new(ALIGN_UP(sizeof(*c) + align + size, PAGE_SIZE));
		if (c) {
			p = chunk_take(c, size, align);
			c->next = mb->chunks->next;
			mb->chunks->next = c;
		}
	} else if (!(p = chunk_take(mb->chunks, size, align))) {
		struct memblock_chunk *c = chunk_new(CHUNK_SIZE);
		if (c) {
			p = chunk_take(c, size, align);
			c->next = mb->chunks;
			mb->chunks = c;
		}
	}
	za_unlock(&mb->lock);
	return p;
}

/* Every chunk back to the OS, the one holding mm last: mm is gone after. */
void memblock_free_all(struct za_mm *mm)
{
	struct memblock_chunk *c = mm->memblock.chunks, *home = NULL;
	while (c) {
		struct memblock_chunk *next = c->next;
		if ((char *)mm >= (char *)c && (char *)mm < (char *)c + c->size)
			home = c;
		else
			za_os_free(c, c->size);
		c = next;
	}
	za_os_free(home, home->size);
}
