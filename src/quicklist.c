/*
 * Quicklists (seed 004): per-CPU LIFO stacks of pages kept in a known
 * state -- zero, or as a constructor left them -- for users such as page
 * tables that hand pages back in that same state.  The stack is threaded
 * through each free page's first word, so a hit touches the CPU's list
 * head and the page's first cache line, nothing else: no descriptor, no
 * zeroing.
 *
 * Rules (the seed's): pages are node-local (a page freed on a CPU of
 * another node goes back to the page allocator, so pages are not trapped
 * far from their node); a page must be freed in the state it was allocated
 * in, its first word zero; trimming keeps a CPU's list at most
 * max(free node pages / 16, min_pages) long.
 *
 * quicklists=0 is the world before the seed: every allocation is a zeroed
 * page from the page allocator plus the constructor, every free the
 * destructor plus a page-allocator free.
 */
#include "quicklist.h"
#include "percpu.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#define FRACTION_OF_NODE_MEM 16

enum { QL_ZEROED = 1, QL_CONSTRUCTED = 2 };   /* page->private of a quicklist page */

static struct quicklist *ql(struct za_mm *mm, int cpu, int nr)
{
	return &mm->quicklists[cpu * mm->nr_quick + nr];
}

/* A page a list of this CPU may hold: an allocated order-0 page of the
 * CPU's node, tagged with the state it is kept in. */
static bool is_quicklist_page(struct za_mm *mm, int cpu, const void *p)
{
	if (!addr_in_arena(mm, p) || ((uintptr_t)p & (PAGE_SIZE - 1)))
		return false;
	const struct za_page *page = virt_to_page(mm, p);
	return (page_flags(page) & (PG_alloc | PG_OWNED)) == PG_alloc && !page_order(page) &&
	       (page_private(page) == QL_ZEROED || page_private(page) == QL_CONSTRUCTED) &&
	       za_page_to_nid(mm, page) == mm->cpu_node[cpu];
}

static void ql_count(struct quicklist *q, enum ql_event e, uint64_t n)
{
	counter_add(&q->stat[e], n);
}

static void *bad_nr(int nr)
{
	za_set_last_error("quicklist %d does not exist (nr_quick)", nr);
	errno = EINVAL;
	return NULL;
}

/* A page from the page allocator, zeroed, then constructed. */
static void *fresh_page(struct za_mm *mm, struct quicklist *q, za_gfp_t gfp, void (*ctor)(void *))
{
	void *p = za_alloc_pages(mm, gfp | ZA_GFP_ZERO, 0);
	if (!p)
		return NULL;
	counter_add_atomic(&q->stat[QL_BYTES_ZEROED], PAGE_SIZE);
	set_page_private(virt_to_page(mm, p), ctor ? QL_CONSTRUCTED : QL_ZEROED);
	if (ctor)
		ctor(p);
	return p;
}

void *za_quicklist_alloc(za_mm_t *mm, int nr, za_gfp_t gfp, void (*ctor)(void *))
{
	if (unlikely((unsigned int)nr >= (unsigned int)mm->nr_quick))
		return bad_nr(nr);
	int cpu = this_cpu(mm);
	struct quicklist *q = ql(mm, cpu, nr);
	if (likely(mm->quicklists_on) && likely(za_trylock(&q->lock))) {
		void **p = q->page;
		if (likely(p)) {
			VM_BUG_ON(mm, !is_quicklist_page(mm, cpu, p));
			q->page = p[0];
			p[0] = NULL;
			store_relaxed(&q->nr_pages, load_relaxed(&q->nr_pages) - 1);
			ql_count(q, QL_HIT, 1);
			za_tryunlock(&q->lock);
			return p;
		}
		ql_count(q, QL_MISS, 1);
		za_tryunlock(&q->lock);
	} else {
		counter_add_atomic(&q->stat[QL_MISS], 1);
	}
	return fresh_page(mm, q, gfp, ctor);
}

/* Back to the page allocator, without the state tag: the page's next
 * owner did not get it from a quicklist. */
static void release_page(struct za_mm *mm, void (*dtor)(void *), void *p)
{
	if (dtor)
		dtor(p);
	set_page_private(virt_to_page(mm, p), 0);
	za_free_pages(mm, p, 0);
}

/* The first non-zero byte of a page that should be zero, or -1. */
static long first_dirty_offset(const void *p)
{
	const uint64_t *w = p;
	for (size_t i = 0; i < PAGE_SIZE / sizeof(uint64_t); i++)
		if (w[i]) {
			const unsigned char *b = (const unsigned char *)&w[i];
			for (size_t k = 0;; k++)
				if (b[k])
					return (long)(i * sizeof(uint64_t) + k);
		}
	return -1;
}

static int bad_free(struct za_mm *mm, void *p, const char *why)
{
	za_report_error(mm, "za_quicklist_free(%p): %s", p, why);
	errno = EINVAL;
	return -1;
}

int za_quicklist_free(za_mm_t *mm, int nr, void (*dtor)(void *), void *p)
{
	if (unlikely((unsigned int)nr >= (unsigned int)mm->nr_quick)) {
		bad_nr(nr);
		return -1;
	}
	if (unlikely(!addr_in_arena(mm, p) || ((uintptr_t)p & (PAGE_SIZE - 1))))
		return bad_free(mm, p, "not a page of this system");
	struct za_page *page = za_virt_to_page(mm, p);
	if (unlikely((page_flags(page) & (PG_alloc | PG_OWNED)) != PG_alloc || page_order(page)))
		return bad_free(mm, p, "not an allocated order-0 page of the caller's");
	if (unlikely(mm->debug) && page_private(page) == QL_ZEROED) {
		long off = first_dirty_offset(p);
		if (off >= 0) {
			za_report_error(mm, "za_quicklist_free(%p): page is not zero at offset %ld; "
					"it goes back to the page allocator", p, off);
			release_page(mm, NULL, p);
			errno = EINVAL;
			return -1;
		}
	}
	if (dtor)
		store_relaxed(&mm->quicklist_dtor[nr], dtor);

	int cpu = this_cpu(mm);
	struct quicklist *q = ql(mm, cpu, nr);
	if (likely(mm->quicklists_on) && likely(za_page_to_nid(mm, page) == mm->cpu_node[cpu]) &&
	    likely(za_trylock(&q->lock))) {
		void **link = p;
		/* A page its owner got from the page allocator is kept as the
		 * owner left it: constructed (never checked for zero). */
		if (unlikely(!page_private(page)))
			set_page_private(page, QL_CONSTRUCTED);
		link[0] = q->page;
		q->page = p;
		store_relaxed(&q->nr_pages, load_relaxed(&q->nr_pages) + 1);
		ql_count(q, QL_FREE, 1);
		za_tryunlock(&q->lock);
		return 0;
	}
	release_page(mm, dtor, p);
	return 0;
}

/* Pops up to n pages off a list and frees them.  Under the list's lock. */
static long free_from(struct za_mm *mm, struct quicklist *q, void (*dtor)(void *), long n)
{
	long freed = 0;
	za_lock_assert_held(mm, &q->lock);
	while (freed < n && q->page) {
		void **p = q->page;
		q->page = p[0];
		p[0] = NULL;
		store_relaxed(&q->nr_pages, load_relaxed(&q->nr_pages) - 1);
		release_page(mm, dtor, p);
		freed++;
	}
	ql_count(q, QL_TRIM, (uint64_t)freed);
	return freed;
}

long za_quicklist_trim(za_mm_t *mm, int nr, void (*dtor)(void *), unsigned long min_pages,
		       unsigned long max_free)
{
	if (unlikely((unsigned int)nr >= (unsigned int)mm->nr_quick)) {
		bad_nr(nr);
		return -1;
	}
	int cpu = this_cpu(mm);
	struct quicklist *q = ql(mm, cpu, nr);
	long freed = 0;
	za_trylock_wait(&q->lock);
	long pages = load_relaxed(&q->nr_pages);
	if (pages > (long)min_pages) {
		long keep = node_free_pages(mm, mm->cpu_node[cpu]) / FRACTION_OF_NODE_MEM;
		if (keep < (long)min_pages)
			keep = (long)min_pages;
		long n = pages - keep;
		if (n > (long)max_free)
			n = (long)max_free;
		if (n > 0)
			freed = free_from(mm, q, dtor, n);
	}
	za_tryunlock(&q->lock);
	return freed;
}

/* Memory pressure (the allocator's slow path): empty every list, with the
 * destructor last registered for it. */
long za_quicklist_shrink(za_mm_t *mm)
{
	long freed = 0;
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		for (int nr = 0; nr < mm->nr_quick; nr++) {
			struct quicklist *q = ql(mm, cpu, nr);
			if (!load_relaxed(&q->nr_pages))
				continue;
			za_trylock_wait(&q->lock);
			freed += free_from(mm, q, load_relaxed(&mm->quicklist_dtor[nr]), LONG_MAX);
			za_tryunlock(&q->lock);
		}
	return freed;
}

/* ------------------------------------------------------------------------
 * The quicklist layer's hooks (mm_layers.c)
 * ------------------------------------------------------------------------ */
void quicklist_exit(struct za_mm *mm)
{
	za_quicklist_shrink(mm);
}

void quicklist_lock_all(struct za_mm *mm, enum lock_all_mode mode)
{
	for (int i = 0; i < mm->nr_cpus * mm->nr_quick; i++)
		mode == LOCK_ALL ? za_trylock_wait(&mm->quicklists[i].lock)
				 : za_tryunlock(&mm->quicklists[i].lock);
}

/* A list holds as many pages as it counts, each an allocated order-0 page
 * of a node of the list's CPU, tagged zeroed or constructed. */
static int verify_list(struct za_mm *mm, int cpu, int nr)
{
	struct quicklist *q = ql(mm, cpu, nr);
	long n = 0;
	for (void **p = q->page; p; p = p[0], n++)
		VERIFY(n < load_relaxed(&q->nr_pages) && is_quicklist_page(mm, cpu, p),
		       "quicklist %d of cpu %d: %p is not one of its %ld pages (a page of the "
		       "CPU's node, allocated, tagged)", nr, cpu, (void *)p,
		       load_relaxed(&q->nr_pages));
	VERIFY(n == load_relaxed(&q->nr_pages), "quicklist %d of cpu %d: %ld pages, counted %ld",
	       nr, cpu, n, load_relaxed(&q->nr_pages));
	return 0;
}

int quicklist_verify(struct za_mm *mm)
{
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		for (int nr = 0; nr < mm->nr_quick; nr++) {
			struct quicklist *q = ql(mm, cpu, nr);
			za_trylock_wait(&q->lock);
			int r = verify_list(mm, cpu, nr);
			za_tryunlock(&q->lock);
			if (r)
				return -1;
		}
	return 0;
}

unsigned long za_quicklist_total_size(za_mm_t *mm)
{
	return (unsigned long)quicklist_pages(mm, -1);
}

long quicklist_pages(const struct za_mm *mm, int node)
{
	long n = 0;
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		if (node < 0 || mm->cpu_node[cpu] == node)
			for (int nr = 0; nr < mm->nr_quick; nr++)
				n += load_relaxed(&mm->quicklists[cpu * mm->nr_quick + nr].nr_pages);
	return n;
}

void quicklist_stat_fold(struct za_mm *mm, uint64_t *totals)
{
	memset(totals, 0, sizeof(uint64_t) * NR_QL_EVENTS);
	for (int i = 0; i < mm->nr_cpus * mm->nr_quick; i++)
		for (int e = 0; e < NR_QL_EVENTS; e++)
			totals[e] += load_relaxed(&mm->quicklists[i].stat[e]);
}

static const char *const ql_event_names[NR_QL_EVENTS] = {
	[QL_HIT] = "quicklist_hit",
	[QL_MISS] = "quicklist_miss",
	[QL_FREE] = "quicklist_free",
	[QL_TRIM] = "quicklist_trim",
	[QL_BYTES_ZEROED] = "bytes_zeroed",
};

const char *quicklist_event_name(int e)
{
	return ql_event_names[e];
}
