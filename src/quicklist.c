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
 * percpu=rseq: allocation and free are one restartable section each on
 * the list's stack (rseq.h), the hits counted in its tally.  Everything
 * else -- a fold of those hits, trims, shrinks, verification, a thread
 * bound to a CPU -- takes the list's lock and stops the list first.  With
 * more than one node the sections are off (mm->ql_rseq): a section cannot
 * tell which CPU it will commit on, so it could not keep the node-local
 * rule.
 *
 * quicklists=0 is the world before the seed: every allocation is a zeroed
 * page from the page allocator plus the constructor, every free the
 * destructor plus a page-allocator free.
 */
#include "quicklist.h"
#include "internal.h"
#include "bitops.h"
#include "percpu.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#define FRACTION_OF_NODE_MEM 16
/* A list holds fewer pages than this (2 GiB of pages): beyond, frees go
 * back to the page allocator. */
#define QL_FULL (1ULL << 19)

enum { QL_ZEROED = 1, QL_CONSTRUCTED = 2 };   /* page->private of a quicklist page */

static struct quicklist *ql(struct za_mm *mm, int cpu, int nr)
{
	return (struct quicklist *)((char *)mm->quicklists + ((size_t)cpu << mm->ql_shift)) + nr;
}

/* The layer's init: the lists of every CPU, each CPU's on a power-of-two
 * stride. */
int quicklist_init(struct za_mm *mm)
{
	mm->nr_quick = (int)mm->cfg.nr_quick;
	mm->quicklists_on = mm->cfg.quicklists;
	mm->ql_shift = order_base_2(sizeof(struct quicklist) * (size_t)mm->nr_quick);
	mm->ql_rseq = mm->percpu_rseq && mm->nr_nodes == 1;
	mm->quicklists = memblock_alloc(mm, (size_t)mm->nr_cpus << mm->ql_shift,
					_Alignof(struct quicklist));
	if (!mm->quicklists) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static const struct rseq_link ql_link = { .off = 0 };

static struct rseq_percpu ql_percpu(struct za_mm *mm, int nr)
{
	struct quicklist *q = ql(mm, 0, nr);
	return (struct rseq_percpu){
		.base = (char *)&q->stack,
		.stop = (long)offsetof(struct quicklist, rseq_stop),
		.shift = mm->ql_shift,
		.nr = (unsigned int)mm->nr_cpus,
		.index_tls = mm->rseq_cpu_offset,
	};
}

static bool ql_sections(const struct za_mm *mm)
{
	return mm->ql_rseq && percpu_unbound(mm);       /* ql_rseq: rseq */
}

static long ql_len(const struct quicklist *q)
{
	return (long)(rseq_tally_load(&q->stack) & RSEQ_LEN_MASK);
}

/* A page a list of this node may hold: an allocated order-0 page of the
 * node, tagged with the state it is kept in. */
static bool is_quicklist_page(struct za_mm *mm, int node, const void *p)
{
	if (!addr_in_arena(mm, p) || ((uintptr_t)p & (PAGE_SIZE - 1)))
		return false;
	const struct za_page *page = virt_to_page(mm, p);
	return (page_flags(page) & (PG_alloc | PG_OWNED)) == PG_alloc && !page_order(page) &&
	       (page_private(page) == QL_ZEROED || page_private(page) == QL_CONSTRUCTED) &&
	       za_page_to_nid(mm, page) == node;
}

/*
 * The lock path's ownership of a list: its lock, and with sections its
 * stop word set and fenced, so that no section is left that could commit
 * on it.  A holder folds the sections' hits into stat and leaves the tally
 * with the length alone.  ql_lock_all does the same for every list with
 * one fence.
 */
static void ql_fold(struct za_mm *mm, struct quicklist *q)
{
	uint64_t t = q->stack.tally;
	if (!mm->ql_rseq)
		return;
	counter_add(&q->stat[QL_HIT], tally_pops(t));
	counter_add(&q->stat[QL_FREE], tally_pushes(t));
	rseq_tally_store(&q->stack, t & RSEQ_LEN_MASK);
}

static bool ql_lock(struct za_mm *mm, struct quicklist *q, bool wait)
{
	if (wait)
		za_trylock_wait(&q->lock);
	else if (!za_trylock(&q->lock))
		return false;
	if (mm->ql_rseq)
		rseq_index_stop(&q->rseq_stop);
	ql_fold(mm, q);
	return true;
}

static void ql_unlock(struct za_mm *mm, struct quicklist *q)
{
	if (mm->ql_rseq)
		rseq_index_start(&q->rseq_stop);
	za_tryunlock(&q->lock);
}

/* Every list of the system, with one fence. */
static void ql_lock_all(struct za_mm *mm)
{
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		for (int nr = 0; nr < mm->nr_quick; nr++) {
			struct quicklist *q = ql(mm, cpu, nr);
			za_trylock_wait(&q->lock);
			if (mm->ql_rseq)
				rseq_index_mark(&q->rseq_stop);
		}
	if (mm->ql_rseq)
		rseq_fence();
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		for (int nr = 0; nr < mm->nr_quick; nr++)
			ql_fold(mm, ql(mm, cpu, nr));
}

static void ql_unlock_all(struct za_mm *mm)
{
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		for (int nr = 0; nr < mm->nr_quick; nr++)
			ql_unlock(mm, ql(mm, cpu, nr));
}

/* The stack, by its owner (a lock holder). */
static void *stack_pop(struct quicklist *q)
{
	void **p = q->stack.head;
	if (!p)
		return NULL;
	q->stack.head = p[0];
	p[0] = NULL;
	rseq_tally_store(&q->stack, q->stack.tally - 1);
	return p;
}

static void stack_push(struct quicklist *q, void *p)
{
	*(void **)p = q->stack.head;
	q->stack.head = p;
	rseq_tally_store(&q->stack, q->stack.tally + 1);
}

/*
 * A section failed: may the lock path do better?  Yes for hits waiting to
 * be folded, and for a thread whose index is beyond the system's (an
 * mm_cid above cpus=).  An empty, full or stopped list is the caller's
 * miss.  (Racy reads: the lock path decides.)
 */
static bool lock_path_helps(struct za_mm *mm, int nr)
{
	unsigned int index = rseq_index(mm);
	if (index >= (unsigned int)mm->nr_cpus)
		return true;
	uint64_t t = rseq_tally_load(&ql(mm, (int)index, nr)->stack);
	return ((t + RSEQ_PUSH_ONE) & RSEQ_FOLD) || ((t + RSEQ_POP_ONE) & RSEQ_FOLD);
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

/* A hit of list nr of the CPU the thread runs on, or NULL. */
static void *ql_pop(struct za_mm *mm, int nr)
{
	if (likely(ql_sections(mm))) {
		struct rseq_percpu pc = ql_percpu(mm, nr);
		void **p;
		int st = rseq_pop_retry(mm, &pc, &ql_link, RSEQ_POP_ONE - 1, RSEQ_FOLD, (void **)&p);
		if (likely(st == RSEQ_OK)) {
			p[0] = NULL;    /* the link: the page's first word is zero again */
			return p;
		}
		if (!lock_path_helps(mm, nr))
			return NULL;
	}
	int cpu = this_cpu(mm);
	struct quicklist *q = ql(mm, cpu, nr);
	if (!ql_lock(mm, q, false))
		return NULL;
	void *p = stack_pop(q);
	if (p)
		counter_add(&q->stat[QL_HIT], 1);
	ql_unlock(mm, q);
	VM_BUG_ON(mm, p && !is_quicklist_page(mm, mm->cpu_node[cpu], p));
	return p;
}

void *za_quicklist_alloc(za_mm_t *mm, int nr, za_gfp_t gfp, void (*ctor)(void *))
{
	if (unlikely((unsigned int)nr >= (unsigned int)mm->nr_quick))
		return bad_nr(nr);
	void *p = likely(mm->quicklists_on) ? ql_pop(mm, nr) : NULL;
	if (likely(p))
		return p;
	struct quicklist *q = ql(mm, this_cpu(mm), nr);
	counter_add_atomic(&q->stat[QL_MISS], 1);
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

enum ql_push_result { QL_PUSHED, QL_RELEASE, QL_TOP_TWICE };

/* Onto list nr of the CPU the thread runs on, if the page is of its node. */
static enum ql_push_result ql_push(struct za_mm *mm, int nr, void *p)
{
	if (likely(ql_sections(mm))) {
		struct rseq_percpu pc = ql_percpu(mm, nr);
		if (likely(rseq_push_retry(mm, &pc, &ql_link, p, p, RSEQ_PUSH_ONE + 1,
					   RSEQ_FOLD | QL_FULL, 0, 0) == RSEQ_OK))
			return QL_PUSHED;
		if (rseq_head_load(&ql(mm, this_cpu(mm), nr)->stack) == p)
			return QL_TOP_TWICE;
		if (!lock_path_helps(mm, nr))
			return QL_RELEASE;
	}
	int cpu = this_cpu(mm);
	struct quicklist *q = ql(mm, cpu, nr);
	if (za_page_to_nid(mm, virt_to_page(mm, p)) != mm->cpu_node[cpu] || !ql_lock(mm, q, false))
		return QL_RELEASE;
	enum ql_push_result r = q->stack.head == p ? QL_TOP_TWICE :
				ql_len(q) + 1 < (long)QL_FULL ? QL_PUSHED : QL_RELEASE;
	if (r == QL_PUSHED) {
		stack_push(q, p);
		counter_add(&q->stat[QL_FREE], 1);
	}
	ql_unlock(mm, q);
	return r;
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
	if (unlikely(!mm->quicklists_on)) {
		release_page(mm, dtor, p);
		return 0;
	}
	/* A page its owner got from the page allocator is kept as the owner
	 * left it: constructed (never checked for zero).  Tagged before the
	 * push: once on a list, the page is the list's. */
	uintptr_t tag = page_private(page);
	if (unlikely(!tag))
		set_page_private(page, QL_CONSTRUCTED);
	switch (ql_push(mm, nr, p)) {
	case QL_PUSHED:
		return 0;
	case QL_TOP_TWICE:
		return bad_free(mm, p, "freed twice: the page is already on the quicklist");
	case QL_RELEASE:
		break;
	}
	set_page_private(page, tag);
	release_page(mm, dtor, p);
	return 0;
}

/* Pops up to n pages off a list and frees them.  The list's owner. */
static long free_from(struct za_mm *mm, struct quicklist *q, void (*dtor)(void *), long n)
{
	long freed = 0;
	za_lock_assert_held(mm, &q->lock);
	for (void *p; freed < n && (p = stack_pop(q)); freed++)
		release_page(mm, dtor, p);
	counter_add(&q->stat[QL_TRIM], (uint64_t)freed);
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
	if (ql_len(q) <= (long)min_pages)
		return 0;       /* the common case: no lock, no fence */
	long freed = 0;
	ql_lock(mm, q, true);
	long pages = ql_len(q);
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
	ql_unlock(mm, q);
	return freed;
}

/* Memory pressure (the allocator's slow path): empty every list, with the
 * destructor last registered for it. */
long za_quicklist_shrink(za_mm_t *mm)
{
	if (!za_quicklist_total_size(mm))
		return 0;
	long freed = 0;
	ql_lock_all(mm);
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		for (int nr = 0; nr < mm->nr_quick; nr++)
			freed += free_from(mm, ql(mm, cpu, nr), load_relaxed(&mm->quicklist_dtor[nr]),
					   LONG_MAX);
	ql_unlock_all(mm);
	return freed;
}

/* ------------------------------------------------------------------------
 * The quicklist layer's hooks (mm_layers.c)
 * ------------------------------------------------------------------------ */
/* Every list's pages back to the page allocator: the slow path's drain,
 * and the layer's exit (also after a creation that failed before the
 * lists were made). */
void quicklist_drain(struct za_mm *mm)
{
	if (mm->quicklists)
		za_quicklist_shrink(mm);
}

/* The shrinker: the lists' pages, and all of them freed whatever nr. */
unsigned long quicklist_count(void *mm)
{
	return za_quicklist_total_size(mm);
}

unsigned long quicklist_scan(void *mm, unsigned long nr)
{
	(void)nr;
	return (unsigned long)za_quicklist_shrink(mm);
}

void quicklist_lock_all(struct za_mm *mm, enum lock_all_mode mode)
{
	mode == LOCK_ALL ? ql_lock_all(mm) : ql_unlock_all(mm);
}

/* A list holds as many pages as it counts, each an allocated order-0 page
 * of the node of the list's CPU, tagged zeroed or constructed. */
static int verify_list(struct za_mm *mm, int cpu, int nr)
{
	struct quicklist *q = ql(mm, cpu, nr);
	long n = 0;
	for (void **p = q->stack.head; p; p = p[0], n++)
		VERIFY(n < ql_len(q) && is_quicklist_page(mm, mm->cpu_node[cpu], p),
		       "quicklist %d of cpu %d: %p is not one of its %ld pages (a page of the "
		       "CPU's node, allocated, tagged)", nr, cpu, (void *)p, ql_len(q));
	VERIFY(n == ql_len(q), "quicklist %d of cpu %d: %ld pages, counted %ld", nr, cpu, n,
	       ql_len(q));
	return 0;
}

int quicklist_verify(struct za_mm *mm)
{
	int r = 0;
	ql_lock_all(mm);
	for (int cpu = 0; cpu < mm->nr_cpus && !r; cpu++)
		for (int nr = 0; nr < mm->nr_quick && !r; nr++)
			r = verify_list(mm, cpu, nr);
	ql_unlock_all(mm);
	return r;
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
				n += ql_len(ql((struct za_mm *)mm, cpu, nr));
	return n;
}

/* stat, and the hits still in the tallies (racy, exact at quiescence). */
void quicklist_stat_fold(struct za_mm *mm, uint64_t *totals)
{
	memset(totals, 0, sizeof(uint64_t) * NR_QL_EVENTS);
	for (int cpu = 0; cpu < mm->nr_cpus; cpu++)
		for (int nr = 0; nr < mm->nr_quick; nr++) {
			struct quicklist *q = ql(mm, cpu, nr);
			uint64_t t = rseq_tally_load(&q->stack);
			for (int e = 0; e < NR_QL_EVENTS; e++)
				totals[e] += load_relaxed(&q->stat[e]);
			totals[QL_HIT] += tally_pops(t);
			totals[QL_FREE] += tally_pushes(t);
		}
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
