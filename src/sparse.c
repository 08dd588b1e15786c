/*
 * The sparse memory model and memory hotplug: the "physical memory" of a
 * memory system comes from the OS a section at a time, when a zone first
 * grows into it, not as one reservation of the system's whole size.  So a
 * system the size of the machine costs address space only for what it
 * uses, and under an address-space limit (RLIMIT_AS) it grows until the OS
 * says no, leaving the rest to everything else in the process.
 *
 * The pfn space [0, nr_pages) is cut into sections of 2^view.shift
 * bytes, at least one max-order block, so a block never crosses one.  A
 * present section is one mapping, wherever the OS puts it:
 *
 *	[header page][slab info words][descriptors of its pages][its memory,
 *							section-aligned]
 *
 * so that an address in its memory and the address of its descriptor are
 * arithmetic from each other (mmzone.h).  Two things are looked up: the
 * section table, pfn -> memory, and the section map, one bit per
 * section-sized piece of the address space saying "a section's memory",
 * which is how an address is recognised as the arena's.  A section stays
 * until the system is destroyed.
 *
 * The descriptors come zeroed from the OS and an all-zero descriptor means
 * "inside a block", as a zero slab info word means "no slab" (slab.h):
 * adding a section writes its header page only.
 */
#include "internal.h"

#include <errno.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define USER_VA_BITS 47

static const int section_prot = PROT_READ | PROT_WRITE;
static const int section_flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

/* What a section's mapping holds below its memory. */
static uintptr_t section_below(const struct za_mm *mm)
{
	return PAGE_SIZE + mm->view.info_below;
}

/* Places the near table where the sections will be: the OS hands out
 * address space top down, below what it handed out before, so the first
 * section lands a little below where a page mapped now lands, and the next
 * ones below it (map_section).  Without even a page of address space, the
 * table stays empty. */
static void near_place(struct za_mm *mm)
{
	struct sparse_view *v = &mm->view;
	void *probe = mmap(NULL, PAGE_SIZE, PROT_NONE, section_flags, -1, 0);
	if (probe == MAP_FAILED)
		return;
	munmap(probe, PAGE_SIZE);
	uintptr_t piece = (uintptr_t)probe >> v->shift, below = NEAR_PIECES - NEAR_ABOVE;
	store_relaxed(&v->near_base, piece > below ? piece - below : 0);
	atomic_store_explicit(&v->near_n, NEAR_PIECES, memory_order_release);
}

/* Enters the section at mem in the near table, if the table reaches it. */
static void near_add(struct sparse_view *v, char *mem)
{
	uintptr_t piece = near_piece(v, mem);
	if (piece >= load_relaxed(&v->near_n))
		return;
	uintptr_t words = (uintptr_t)view_slab_info(v, mem) - ((uintptr_t)mem >> PAGE_SHIFT) * sizeof(uint32_t);
	VM_BUG_ON(NULL, !words);
	atomic_store_explicit(&v->near[piece], words, memory_order_release);
}

int sparse_init(struct za_mm *mm)
{
	const unsigned long bits = 8 * sizeof(unsigned long);
	struct sparse_view *v = &mm->view;
	v->shift = (unsigned int)__builtin_ctzll(mm->cfg.section_size);
	v->mask = ~(uintptr_t)(mm->cfg.section_size - 1);
	v->memmap_size = (mm->cfg.section_size >> PAGE_SHIFT) * sizeof(struct za_page);
	v->info_below = ALIGN_UP((mm->cfg.section_size >> PAGE_SHIFT) * sizeof(uint32_t), PAGE_SIZE) +
			v->memmap_size;
	store_relaxed(&v->map_bits, 1UL << (USER_VA_BITS - v->shift));
	v->map = memblock_alloc(mm, (load_relaxed(&v->map_bits) + bits - 1) / bits * sizeof(long),
				 _Alignof(unsigned long));
	mm->nr_sections = (mm->nr_pages + (1UL << pfn_section_shift(mm)) - 1) >> pfn_section_shift(mm);
	mm->section_mem = memblock_alloc_array(mm, mm->nr_sections, char *_Atomic);
	v->near = memblock_alloc_array(mm, NEAR_PIECES, _Atomic uintptr_t);
	if (!mm->section_mem || !v->map || !v->near)
		return -1;
	near_place(mm);
	return 0;
}

/* A mapping of len bytes at exactly addr, or NULL. */
static char *map_at(uintptr_t addr, size_t len)
{
	char *p = mmap((void *)addr, len, section_prot, section_flags | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if ((uintptr_t)p == addr)
		return p;
	munmap(p, len);         /* a kernel before 4.17 took the address as a hint */
	return NULL;
}

/* A section's memory at the k-th aligned place below the previous one's. */
static char *map_below_last(struct za_mm *mm, uintptr_t k)
{
	uintptr_t size = section_size(mm), below = section_below(mm);
	uintptr_t last = (uintptr_t)mm->last_section;
	if (last <= k * size + below || !map_at(last - k * size - below, below + size))
		return NULL;
	return (char *)(last - k * size);
}

/*
 * Maps a section and returns its memory.  First just below the previous
 * one, which is usually free because the OS hands out address space top
 * down; else anywhere, mapping a section more and trimming the excess --
 * which an address-space limit may not allow when one more section
 * would still fit: then a few more aligned places below the previous one.
 */
static char *map_section(struct za_mm *mm)
{
	uintptr_t size = section_size(mm), below = section_below(mm), mem;
	char *p = map_below_last(mm, 2);
	if (p)
		return p;
	p = mmap(NULL, below + 2 * size, section_prot, section_flags, -1, 0);
	if (p == MAP_FAILED) {
		for (uintptr_t k = 3; k < 3 + 16 && !p; k++)
			p = map_below_last(mm, k);
		return p;
	}
	mem = ALIGN_UP((uintptr_t)p + below, size);
	if (mem - below > (uintptr_t)p)
		munmap(p, mem - below - (uintptr_t)p);
	munmap((char *)mem + size, (uintptr_t)p + below + 2 * size - (mem + size));
	return (char *)mem;
}

static void populate(char *mem, size_t len)
{
	if (madvise(mem, len, MADV_POPULATE_WRITE) == 0)
		return;
	/* Kernels before 5.14: touch every page. */
	for (size_t off = 0; off < len; off += PAGE_SIZE)
		((volatile char *)mem)[off] = 0;
}

/* Publishes a mapped section: its header, the hugepages= and populate=
 * keys, then the tables and the map. */
static void online_section(struct za_mm *mm, unsigned long nr, char *mem)
{
	const unsigned long bits = 8 * sizeof(unsigned long);
	unsigned long bit = (uintptr_t)mem >> mm->view.shift;
	((struct mem_section_header *)section_header(mm, (uintptr_t)mem))->start_pfn =
		nr << pfn_section_shift(mm);
	if (mm->cfg.hugepages)
		madvise(mem, section_size(mm), MADV_HUGEPAGE);
	if (mm->cfg.populate)
		populate(mem, section_size(mm));
	memmap_init_section(mm, nr);
	atomic_store_explicit(&mm->section_mem[nr], mem, memory_order_release);
	near_add(&mm->view, mem);
	atomic_fetch_or_explicit(&mm->view.map[bit / bits], 1UL << (bit % bits),
				 memory_order_release);
	mm->last_section = mem;
	atomic_fetch_add_explicit(&mm->nr_present_sections, 1, memory_order_relaxed);
}

/*
 * Makes section nr present (the kernel's sparse_add_section and
 * __add_pages).  Its pages are not free yet: the zone that grows into it
 * hands them to the buddy lists (deferred_grow_zone).  False, with errno
 * ENOMEM, when the OS refuses the memory or it lies beyond the map.
 */
bool sparse_add_section(struct za_mm *mm, unsigned long nr)
{
	char *mem = NULL;
	za_lock(&mm->hotplug_lock);
	bool present = section_present(mm, nr);
	if (!present && (mem = map_section(mm)) &&
	    ((uintptr_t)mem >> mm->view.shift) >= load_relaxed(&mm->view.map_bits)) {
		munmap(mem - section_below(mm), section_below(mm) + section_size(mm));
		mem = NULL;
	}
	if (mem)
		online_section(mm, nr, mem);
	za_unlock(&mm->hotplug_lock);
	if (present)
		return true;
	ev_add_atomic(&mm->stat, mem ? EV_SECTION_ADD : EV_SECTION_ADD_FAIL, 1);
	if (!mem)
		errno = ENOMEM;
	return mem != NULL;
}

void sparse_release(struct za_mm *mm)
{
	uintptr_t below = section_below(mm);
	for (unsigned long nr = 0; mm->section_mem && nr < mm->nr_sections; nr++) {
		char *mem = load_relaxed(&mm->section_mem[nr]);
		if (mem)
			munmap(mem - below, below + section_size(mm));
	}
}
