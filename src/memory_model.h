/*
 * The memory model: addresses, page frame numbers and page descriptors,
 * each from the others (the kernel's memory_model.h and its sparse
 * section helpers).
 */
#ifndef ZA_MEMORY_MODEL_H
#define ZA_MEMORY_MODEL_H

#include "mmzone.h"

/* ------------------------------------------------------------------------
 * Conversions
 *
 * A present section is one mapping: a header page, its pages' slab info
 * words (slab.h), the descriptors of its pages, then its memory, aligned
 * to the section size.  So from an address in a section's memory, and
 * from one of its descriptors, the other is arithmetic; only pfns need a
 * load (of the section table or the header).  Blocks never cross sections
 * (a section holds whole max-order blocks).
 * ------------------------------------------------------------------------ */
/* The default section size (section_size=auto; mm_init.c makes it smaller
 * for small systems, larger for a larger max-order block): the unit in
 * which the arena takes address space from the OS.  Runs of pages cannot
 * cross a section, so a section much larger than the largest run keeps
 * the space left at a section's end small. */
#define SECTION_SIZE_AUTO (64ULL << 20)

struct mem_section_header {
	unsigned long start_pfn;
};

static inline uintptr_t section_size(const struct za_mm *mm)
{
	return ~mm->view.mask + 1;
}

static inline unsigned int pfn_section_shift(const struct za_mm *mm)
{
	return mm->view.shift - PAGE_SHIFT;
}

static inline unsigned long pfn_to_section_nr(const struct za_mm *mm, unsigned long pfn)
{
	return pfn >> pfn_section_shift(mm);
}

/* Bytes of descriptors per section. */
static inline uintptr_t section_memmap_size(const struct za_mm *mm)
{
	return mm->view.memmap_size;
}

static inline struct za_page *section_memmap(const struct za_mm *mm, uintptr_t mem)
{
	return (struct za_page *)(mem - section_memmap_size(mm));
}

static inline const struct mem_section_header *section_header(const struct za_mm *mm, uintptr_t mem)
{
	return (const struct mem_section_header *)(mem - mm->view.info_below - PAGE_SIZE);
}

/* The memory of the section whose descriptors hold p: the next section
 * boundary above them. */
static inline uintptr_t page_section_mem(const struct za_mm *mm, const struct za_page *p)
{
	return ((uintptr_t)p + section_size(mm)) & mm->view.mask;
}

static inline unsigned long page_section_index(const struct za_mm *mm, const struct za_page *p)
{
	return (unsigned long)(p - section_memmap(mm, page_section_mem(mm, p)));
}

/* Acquire: whoever finds a section present sees its header (sparse.c
 * publishes it with a release). */
static inline bool section_present(const struct za_mm *mm, unsigned long nr)
{
	return atomic_load_explicit(&mm->section_mem[nr], memory_order_acquire) != NULL;
}

static inline void *page_to_virt(const struct za_mm *mm, const struct za_page *p)
{
	return (char *)page_section_mem(mm, p) + (page_section_index(mm, p) << PAGE_SHIFT);
}

/* A page's slab info word (slab.h), in the array below its section's
 * descriptors: sixteen pages' words to a cache line, against one
 * descriptor, for the free path that reads one per object. */
static inline _Atomic uint32_t *page_slab_info(const struct za_mm *mm, const struct za_page *p)
{
	uintptr_t mem = page_section_mem(mm, p);
	return (_Atomic uint32_t *)(mem - mm->view.info_below) + page_section_index(mm, p);
}

static inline unsigned long page_to_pfn(const struct za_mm *mm, const struct za_page *p)
{
	return section_header(mm, page_section_mem(mm, p))->start_pfn + page_section_index(mm, p);
}

/* pfn must be in a present section. */
static inline struct za_page *pfn_to_page(const struct za_mm *mm, unsigned long pfn)
{
	uintptr_t mem = (uintptr_t)load_relaxed(&mm->section_mem[pfn_to_section_nr(mm, pfn)]);
	return section_memmap(mm, mem) + (pfn & ((1UL << pfn_section_shift(mm)) - 1));
}

static inline void *pfn_to_virt(const struct za_mm *mm, unsigned long pfn)
{
	char *mem = load_relaxed(&mm->section_mem[pfn_to_section_nr(mm, pfn)]);
	return mem + ((pfn & ((1UL << pfn_section_shift(mm)) - 1)) << PAGE_SHIFT);
}

/* Is addr in the memory of a present section?  One bit of the section map,
 * indexed by the address alone. */
static inline bool view_has(const struct sparse_view *v, const void *addr)
{
	const unsigned long bits = 8 * sizeof(unsigned long);
	unsigned long nbits = atomic_load_explicit(&v->map_bits, memory_order_acquire);
	unsigned long bit = (uintptr_t)addr >> v->shift;
	return bit < nbits && (load_relaxed(&v->map[bit / bits]) >> (bit % bits) & 1);
}

/* Publishes a copy of a system's view (the malloc's). */
static inline void view_copy(struct sparse_view *dst, const struct sparse_view *src)
{
	dst->map = src->map;
	dst->mask = src->mask;
	dst->memmap_size = src->memmap_size;
	dst->info_below = src->info_below;
	dst->shift = src->shift;
	dst->near = src->near;
	store_relaxed(&dst->near_base, load_relaxed(&src->near_base));
	atomic_store_explicit(&dst->near_n, atomic_load_explicit(&src->near_n, memory_order_acquire),
			      memory_order_release);
	atomic_store_explicit(&dst->map_bits, load_relaxed(&src->map_bits), memory_order_release);
}

/* The descriptor of addr, which view_has(). */
static inline struct za_page *view_page(const struct sparse_view *v, const void *addr)
{
	uintptr_t mem = (uintptr_t)addr & v->mask;
	return (struct za_page *)(mem - v->memmap_size) + (((uintptr_t)addr - mem) >> PAGE_SHIFT);
}

/* The slab info word of addr's page (page_slab_info), which view_has(). */
static inline _Atomic uint32_t *view_slab_info(const struct sparse_view *v, const void *addr)
{
	uintptr_t mem = (uintptr_t)addr & v->mask;
	return (_Atomic uint32_t *)(mem - v->info_below) + (((uintptr_t)addr - mem) >> PAGE_SHIFT);
}

/* addr's index in the near table, if below near_n. */
static inline uintptr_t near_piece(const struct sparse_view *v, const void *addr)
{
	return ((uintptr_t)addr >> v->shift) - load_relaxed(&v->near_base);
}

/*
 * Is addr in the memory of a present section the near table holds?  Then
 * *word is its page's slab info word (else view_has() may still say yes).
 * Where view_has() and view_slab_info() take a bit test and the arithmetic
 * from the section's start, this is a bound and a load: what free's fast
 * path asks of every pointer.
 */
static inline bool view_near_slab_info(const struct sparse_view *v, const void *addr,
				       _Atomic uint32_t **word)
{
	unsigned long n = atomic_load_explicit(&v->near_n, memory_order_acquire);  /* base first */
	uintptr_t piece = near_piece(v, addr);
	if (piece >= n)
		return false;
	uintptr_t words = atomic_load_explicit(&v->near[piece], memory_order_acquire);
	*word = (_Atomic uint32_t *)(words + ((uintptr_t)addr >> PAGE_SHIFT) * sizeof(uint32_t));
	return words != 0;
}

static inline bool addr_in_arena(const struct za_mm *mm, const void *addr)
{
	return view_has(&mm->view, addr);
}

/* Is addr a page of the system's memory: in the arena, and not in the part
 * of the last section beyond `memory`, which is mapped but has no pfns? */
static inline bool virt_is_memory(const struct za_mm *mm, const void *addr);

/* addr must be in the arena. */
static inline struct za_page *virt_to_page(const struct za_mm *mm, const void *addr)
{
	return view_page(&mm->view, addr);
}

/* The first page of the order-`order` block holding page p: blocks are
 * naturally aligned within their section. */
static inline struct za_page *page_block_start(const struct za_mm *mm, struct za_page *p,
					       unsigned int order)
{
	return p - (page_section_index(mm, p) & ((1UL << order) - 1));
}

static inline unsigned long virt_to_pfn(const struct za_mm *mm, const void *addr)
{
	uintptr_t mem = (uintptr_t)addr & mm->view.mask;
	return section_header(mm, mem)->start_pfn + (((uintptr_t)addr - mem) >> PAGE_SHIFT);
}

static inline bool virt_is_memory(const struct za_mm *mm, const void *addr)
{
	return addr_in_arena(mm, addr) && virt_to_pfn(mm, addr) < mm->nr_pages;
}

static inline struct za_zone *pfn_zone(const struct za_mm *mm, unsigned long pfn)
{
	return mm->zone_by_id[mm->block_zone[pfn >> mm->max_order]];
}

static inline int pageblock_mt(const struct za_mm *mm, unsigned long pfn)
{
	return load_relaxed(&mm->pageblock_mt[pfn >> mm->pageblock_order]);
}

static inline void set_pageblock_mt(struct za_mm *mm, unsigned long pfn, int mt)
{
	store_relaxed(&mm->pageblock_mt[pfn >> mm->pageblock_order], (uint8_t)mt);
}

/* pcp_own_pageblocks: the CPU owning the pageblock of pfn, or -1. */
static inline int pageblock_owner(const struct za_mm *mm, unsigned long pfn)
{
	return (int)load_relaxed(&mm->pageblock_owner[pfn >> mm->pageblock_order]) - 1;
}

static inline void set_pageblock_owner(struct za_mm *mm, unsigned long pfn, int cpu)
{
	store_relaxed(&mm->pageblock_owner[pfn >> mm->pageblock_order], (uint16_t)(cpu + 1));
}

#endif /* ZA_MEMORY_MODEL_H */
