/*
 * What the page allocator's files call of each other (the kernel's
 * mm/internal.h): the buddy lists, runs, memblock, sections, deferred
 * zone growth, tracepoints, the vmstat worker and error reports.
 */
#ifndef ZA_INTERNAL_H
#define ZA_INTERNAL_H

#include "mmzone.h"

/*
 * The order of the first piece of the run [pfn, end): the largest block
 * that starts at pfn (aligned to its size) and fits.  A run is its pieces,
 * largest first where the alignment allows: every run of pages has one
 * such decomposition, so that whoever frees a run finds the blocks that
 * were allocated.
 */
static inline unsigned int run_piece_order(const struct za_mm *mm, unsigned long pfn,
					   unsigned long end)
{
	unsigned int align = pfn ? (unsigned int)__builtin_ctzl(pfn) : mm->max_order;
	unsigned int fit = fls_ul(end - pfn) - 1;
	unsigned int o = align < fit ? align : fit;
	return o < mm->max_order ? o : mm->max_order;
}

/* The pages a run of size bytes takes. */
static inline unsigned long size_to_pages(size_t size)
{
	return (unsigned long)(size >> PAGE_SHIFT) + !!(size & (PAGE_SIZE - 1));
}

/* The largest run: a run is one piece of address space, so one section. */
static inline unsigned long run_max_pages(const struct za_mm *mm)
{
	return 1UL << pfn_section_shift(mm);
}

/* Is the page the head of a free block of the order in the lists? */
static inline bool page_is_buddy(const struct za_page *buddy, unsigned int order)
{
	return (page_flags(buddy) & PG_buddy) && page_order(buddy) == order;
}

/* buddy.c -- all under the zone lock.  The free lists' primitives (runs.c
 * takes and gives back ranges with them): */
void add_free_pages(struct za_zone *z, long n);
void add_to_free_list(struct za_zone *z, struct za_page *page, unsigned int order, int mt,
		      bool tail, bool dirty, unsigned long epoch);
bool del_from_free_list(struct za_zone *z, struct za_page *page, unsigned int order);
void take_block(struct za_zone *z, struct za_page *page, unsigned int low, unsigned int high,
		int mt);
struct za_page *first_free(struct za_zone *z, unsigned int order, int mt);
/* When a migratetype's lists are empty, try these, in this order. */
extern const int fallbacks[MT_TYPES][MT_TYPES - 1];
/* cpu: the CPU taking the pages, for the tracepoints; nofragment: no
 * fallback below a pageblock (alloc_nofragment). */
struct za_page *rmqueue_block(struct za_zone *z, unsigned int order, int mt, int cpu,
			      bool trace_locked, bool nofragment);
struct za_page *buddy_rmqueue(struct za_zone *z, unsigned int order, int mt, int cpu,
			      bool nofragment);
struct za_page *buddy_claim_pageblock(struct za_zone *z, unsigned int order, int mt, int cpu);
unsigned long buddy_recover_fragments(struct za_zone *z, unsigned int order, int mt, int cpu,
				      unsigned long pages, struct za_list *out,
				      unsigned long *blocks);
unsigned long buddy_rmqueue_bulk(struct za_zone *z, unsigned int order, unsigned long pages,
				 int mt, struct za_list *out, int cpu, bool nofragment,
				 unsigned long *blocks);
void buddy_dirty_by_age(struct za_zone *z, unsigned long now, long *by_age, int nr_ages);
int buddy_isolate_dirty(struct za_zone *z, unsigned long max_epoch, long budget,
			struct za_page **out, int max);
void buddy_free_purged(struct za_zone *z, struct za_page *page, bool released);
bool buddy_grow(struct za_zone *z, unsigned long pfn, unsigned int order, unsigned int new_order);
void buddy_shrink(struct za_zone *z, unsigned long pfn, unsigned int order, unsigned int new_order);
#define BUDDY_COALESCE_MAX 64
int buddy_coalesce(struct za_mm *mm, struct za_page **blocks, int n, unsigned long *merges);
void buddy_free(struct za_zone *z, struct za_page *page, unsigned int order, int mt);
void buddy_add_initial_block(struct za_zone *z, unsigned long pfn);
const char *migratetype_name(int mt);

/* page_alloc.c */
void setup_zone_watermarks(struct za_mm *mm);
/* Why a block or run to free is not one (reported by bad_run). */
const char *why_not_allocated(uint32_t flags);
const char *check_block_body(const struct za_mm *mm, unsigned long pfn, unsigned int order);
int bad_run(struct za_mm *mm, const char *fn, const void *addr, size_t size, const char *why);

/* runs.c -- under the zone lock but for nothing: placing a run, taking a
 * range off the free lists and giving it back, and marking a run's pieces
 * allocated (mark_run) or not (unmark_run). */
bool buddy_range_free(struct za_zone *z, unsigned long pfn, unsigned long n, int mt);
bool buddy_take_range(struct za_zone *z, unsigned long pfn, unsigned long n, int mt);
bool buddy_has_dirty(struct za_zone *z, unsigned int order, int mt);
void buddy_free_range(struct za_zone *z, unsigned long pfn, unsigned long n);
struct za_page *buddy_rmqueue_run(struct za_zone *z, unsigned int order, unsigned long n, int mt,
				  int cpu, bool nofragment);
void buddy_free_around(struct za_zone *z, unsigned long pfn, unsigned long end, int mt,
		       unsigned long reach, unsigned long *lo, unsigned long *hi);
struct za_page *buddy_rmqueue_giant(struct za_zone *z, unsigned long n, int mt,
				    unsigned long grown_from, bool borrow);
void mark_run(struct za_zone *z, unsigned long pfn, unsigned long n, int mt);
void unmark_run(struct za_mm *mm, unsigned long pfn, unsigned long n);

/* memblock.c: metadata, zeroed, packed into chunks from the OS and freed
 * together at destroy.  The system's descriptor comes first, in the first
 * chunk; align is a power of two up to PAGE_SIZE. */
struct za_mm *memblock_create_mm(void);
void *memblock_alloc(struct za_mm *mm, size_t size, size_t align);
void memblock_free_all(struct za_mm *mm);
/* An array of n elements of type T. */
#define memblock_alloc_array(mm, n, T) \
	((T *)memblock_alloc((mm), (size_t)(n) * sizeof(T), _Alignof(T)))

/* mm_init.c: a section's pageblock types and block zones, as it comes online. */
void memmap_init_section(struct za_mm *mm, unsigned long nr);

/* mm_init.c: hands deferred blocks to the buddy lists until the zone is
 * above its high watermark by the request and has a block of its order,
 * or has none left, or the OS refuses their section. */
void deferred_grow_zone(struct za_zone *z, unsigned int order);
void deferred_grow_zone_by(struct za_zone *z, unsigned long pages);

/* sparse.c: the section table and map; adding a section's memory (false
 * when the OS refuses it); unmapping them all. */
int sparse_init(struct za_mm *mm);
bool sparse_add_section(struct za_mm *mm, unsigned long nr);
void sparse_release(struct za_mm *mm);


/* vmstat.c: the kmem tracepoints (za_set_tracepoint), each nothing but a
 * load of the hook when none is set.  cpu: the CPU whose lists gave the
 * block (drain) or the allocating CPU. */
void tp_emit(struct za_mm *mm, const struct za_tp_event *ev);
void tp_zone_locked_slow(struct za_zone *z, int cpu, unsigned long pfn, unsigned int order, int mt);
void tp_pcpu_drain_slow(struct za_zone *z, int cpu, const struct za_page *page, unsigned int order);
void tp_extfrag_slow(struct za_zone *z, int cpu, const struct za_page *page, unsigned int order,
		     int start_mt, unsigned int fallback_order, int fallback_mt);

/* Is a hook set for any of the events in mask?  (tp_mask is written
 * before the hook is published.) */
static inline bool tracing_events(const struct za_mm *mm, unsigned int mask)
{
	return unlikely(atomic_load_explicit(&mm->tp_fn, memory_order_acquire) != NULL) &&
	       (mm->tp_mask & mask);
}

static inline bool tracing(const struct za_mm *mm)
{
	return tracing_events(mm, ZA_TP_PAGE_EVENTS);
}

uint64_t zone_lock_traced(struct za_zone *z, const char *caller, int count);
void zone_unlock_traced(struct za_zone *z, uint64_t t0, int cause, const char *caller, int count);

static inline bool tracing_zone_lock(const struct za_mm *mm)
{
	return tracing_events(mm, ZA_TP_ZONE_LOCK_EVENTS);
}

/* The zone lock on a bulk path (a refill, a bulk free, for count pages):
 * zone_lock, and with the zone-lock events on, those events. */
static inline uint64_t zone_lock_bulk(struct za_zone *z, const char *caller, int count)
{
	return tracing_zone_lock(z->mm) ? zone_lock_traced(z, caller, count) : zone_lock(z);
}

static inline void zone_unlock_bulk(struct za_zone *z, uint64_t t0, int cause, const char *caller,
				    int count)
{
	if (tracing_zone_lock(z->mm))
		zone_unlock_traced(z, t0, cause, caller, count);
	else
		zone_unlock(z, t0, cause);
}

/* A block of `order` at pfn taken from the buddy lists for type mt. */
static inline void tp_zone_locked(struct za_zone *z, int cpu, unsigned long pfn, unsigned int order,
				  int mt)
{
	if (tracing(z->mm))
		tp_zone_locked_slow(z, cpu, pfn, order, mt);
}

/* A block leaving a CPU's lists for the buddy lists. */
static inline void tp_pcpu_drain(struct za_zone *z, int cpu, const struct za_page *page,
				    unsigned int order)
{
	if (tracing(z->mm))
		tp_pcpu_drain_slow(z, cpu, page, order);
}

/* A fallback: page, of `order` for start_mt, from a free block of
 * fallback_order of fallback_mt. */
static inline void tp_extfrag(struct za_zone *z, int cpu, const struct za_page *page,
			      unsigned int order, int start_mt, unsigned int fallback_order,
			      int fallback_mt)
{
	if (tracing(z->mm))
		tp_extfrag_slow(z, cpu, page, order, start_mt, fallback_order, fallback_mt);
}

/* vmstat.c: the vmstat worker thread, when vmstat_interval_ms > 0. */
int vmstat_worker_start(struct za_mm *mm);
void vmstat_worker_stop(struct za_mm *mm);

/* debug.c */
void za_report_error(struct za_mm *mm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* percpu.h has the CPU lookup; mm_init.c the system's layout. */

#endif /* ZA_INTERNAL_H */
