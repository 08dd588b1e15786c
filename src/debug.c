/*
 * Error reporting and the invariant checker.
 */
#include "internal.h"
#include "mm_layers.h"
#include "pcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local __attribute__((tls_model("initial-exec"))) char last_error[256];

void za_set_last_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

const char *za_last_error(void)
{
	return last_error;
}

/* One line, "zonealloc: ...", to the system's handler or stderr. */
void za_report_error(struct za_mm *mm, const char *fmt, ...)
{
	char msg[sizeof(last_error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	za_set_last_error("%s", msg);
	if (mm->error_fn)
		mm->error_fn(msg, mm->error_ctx);
	else
		fprintf(stderr, "zonealloc: %s\n", msg);
}

#ifdef ZA_DEBUG_VM
void za__vm_bug(const struct za_mm *mm, const char *file, int line, const char *cond,
		const struct za_page *page)
{
	char what[96] = "";
	if (mm && page)
		snprintf(what, sizeof(what), " (page pfn %lu flags %#x order %u mt %d)",
			 page_to_pfn(mm, page), page_flags(page), page_order(page), page_mt(page));
	if (mm)
		za_report_error((struct za_mm *)mm, "VM_BUG_ON at %s:%d: %s%s", file, line, cond, what);
	else
		fprintf(stderr, "zonealloc: VM_BUG_ON at %s:%d: %s\n", file, line, cond);
	abort();
}
#endif

/* ------------------------------------------------------------------------
 * za_verify
 * ------------------------------------------------------------------------ */
static int verify_free_block(struct za_zone *z, struct za_page *page, unsigned int order)
{
	struct za_mm *mm = z->mm;
	unsigned long pfn = page_to_pfn(mm, page);
	VERIFY(pfn >= z->start_pfn && pfn + (1UL << order) <= zone_init_end_pfn(z),
	       "zone %s: free block pfn %lu order %u outside the zone's managed part",
	       z->name, pfn, order);
	VERIFY(!(pfn & ((1UL << order) - 1)),
	       "zone %s: free block pfn %lu not aligned to order %u", z->name, pfn, order);
	VERIFY((page_flags(page) & ~PG_mem_dirty) == PG_buddy && page_order(page) == order,
	       "zone %s: pfn %lu on the order-%u list has flags %#x order %u",
	       z->name, pfn, order, page_flags(page), page_order(page));
	for (unsigned long p = pfn; order >= mm->pageblock_order && p < pfn + (1UL << order);
	     p += 1UL << mm->pageblock_order)
		VERIFY(pageblock_owner(mm, p) < 0,
		       "zone %s: pageblock pfn %lu, free whole, still owned by cpu %d", z->name, p,
		       pageblock_owner(mm, p));
	if (order < mm->max_order) {
		struct za_page *buddy = pfn_to_page(mm, pfn ^ (1UL << order));
		VERIFY(!(page_flags(buddy) & PG_buddy) || page_order(buddy) != order,
		       "zone %s: buddies pfn %lu and %lu both free at order %u",
		       z->name, pfn, pfn ^ (1UL << order), order);
	}
	return 0;
}

static int verify_buddy(struct za_zone *z)
{
	long pages = 0;
	for (unsigned int o = 0; o <= z->mm->max_order; o++) {
		unsigned long blocks = 0;
		for (int mt = 0; mt < MT_TYPES; mt++) {
			struct za_list *head = &z->free_area[o].free_list[mt];
			for (struct za_list *l = head->next; l != head; l = l->next, blocks++)
				if (verify_free_block(z, container_of(l, struct za_page, lru), o))
					return -1;
		}
		VERIFY(blocks == load_relaxed(&z->free_area[o].nr_free),
		       "zone %s: order %u has %lu blocks but nr_free %lu", z->name, o, blocks,
		       load_relaxed(&z->free_area[o].nr_free));
		pages += (long)(blocks << o);
	}
	VERIFY(pages == load_relaxed(&z->nr_free_pages),
	       "zone %s: %ld pages in the lists but nr_free_pages %ld", z->name, pages,
	       load_relaxed(&z->nr_free_pages));
	return 0;
}

static int verify_pcp(struct za_zone *z, int cpu)
{
	struct za_mm *mm = z->mm;
	struct za_pcp *pcp = &z->pcp[cpu];
	int pages = 0;
	for (unsigned int i = 0; i < NR_PCP_LISTS; i++) {
		unsigned int order = pindex_to_order(mm, i);
		for (struct za_list *l = pcp->lists[i].next; l != &pcp->lists[i]; l = l->next) {
			struct za_page *page = container_of(l, struct za_page, lru);
			unsigned long pfn = page_to_pfn(mm, page);
			VERIFY((page_flags(page) & ~PG_pcp_buddy) == PG_pcp && page_order(page) == order &&
				   pfn_zone(mm, pfn) == z && !(pfn & ((1UL << order) - 1)),
			       "zone %s cpu %d: pfn %lu on the order-%u list has flags %#x order %u",
			       z->name, cpu, pfn, order, page_flags(page), page_order(page));
			/* pcp_own_pageblocks: mergeable exactly when this CPU owns it */
			VERIFY(!(page_flags(page) & PG_pcp_buddy) == (pageblock_owner(mm, pfn) != cpu ||
								      !mm->pcp_own_pageblocks),
			       "zone %s cpu %d: pfn %lu on a list has flags %#x, its pageblock owner %d",
			       z->name, cpu, pfn, page_flags(page), pageblock_owner(mm, pfn));
			pages += 1 << order;
		}
	}
	VERIFY(pages == load_relaxed(&pcp->count),
	       "zone %s cpu %d: %d pages listed but count %d", z->name, cpu, pages,
	       load_relaxed(&pcp->count));
	VERIFY(pcp->high_min <= pcp_high(pcp) && pcp_high(pcp) <= pcp->high_max,
	       "zone %s cpu %d: high %d outside [%d, %d]", z->name, cpu, pcp_high(pcp),
	       pcp->high_min, pcp->high_max);
	return 0;
}

/* The first piece of a run knows the run's length; the run is its pieces,
 * all allocated, each of the order the decomposition gives. */
static int verify_run(struct za_zone *z, unsigned long pfn)
{
	struct za_mm *mm = z->mm;
	unsigned long end = pfn + pfn_to_page(mm, pfn)->run_pages;
	VERIFY(end <= zone_init_end_pfn(z) &&
		   pfn_to_section_nr(mm, pfn) == pfn_to_section_nr(mm, end - 1),
	       "zone %s: the run at pfn %lu of %u pages leaves its zone or section",
	       z->name, pfn, pfn_to_page(mm, pfn)->run_pages);
	for (unsigned long p = pfn, o; p < end; p += 1UL << o) {
		const struct za_page *piece = pfn_to_page(mm, p);
		o = run_piece_order(mm, p, end);
		VERIFY((page_flags(piece) & (PG_alloc | PG_run)) == (PG_alloc | PG_run) &&
			   page_order(piece) == o && (p == pfn || !piece->run_pages),
		       "zone %s: the run at pfn %lu has a bad piece at pfn %lu (flags %#x order %u)",
		       z->name, pfn, p, page_flags(piece), page_order(piece));
	}
	return 0;
}

/* Pages inside a block (not its head) carry no state, except the tail mark
 * of a slab; only the first piece of a live run has a run length. */
static int verify_descriptors(struct za_zone *z)
{
	struct za_mm *mm = z->mm;
	unsigned long pfn = z->start_pfn, end = zone_init_end_pfn(z), run_end = 0;
	while (pfn < end) {
		struct za_page *head = pfn_to_page(mm, pfn);
		unsigned long span = page_flags(head) ? 1UL << page_order(head) : 1;
		uint32_t allowed = page_flags(head) & PG_slab ? PG_tail : 0;
		VERIFY(!head->run_pages || (page_flags(head) & PG_alloc),
		       "zone %s: pfn %lu has a run length but is not allocated", z->name, pfn);
		if (head->run_pages && verify_run(z, pfn))
			return -1;
		if (head->run_pages)
			run_end = pfn + head->run_pages;
		VERIFY(!(page_flags(head) & PG_run) || head->run_pages || pfn < run_end,
		       "zone %s: pfn %lu is a piece of no run", z->name, pfn);
		for (unsigned long i = 1; i < span; i++) {
			const struct za_page *inner = pfn_to_page(mm, pfn + i);
			VERIFY(!(page_flags(inner) & ~allowed) && !inner->run_pages,
			       "zone %s: pfn %lu inside the block at pfn %lu has flags %#x",
			       z->name, pfn + i, pfn, page_flags(inner));
		}
		pfn += span;
	}
	return 0;
}

/* The page allocator's lists and descriptors, zone by zone. */
static int verify_zones(struct za_mm *mm)
{
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		struct za_zone *z = mm->zone_by_id[id];
		for (int cpu = 0; cpu < mm->nr_cpus; cpu++) {
			/* the fronts join the lists, to be checked with them */
			za_trylock_wait(&z->pcp[cpu].lock);
			pcp_fronts_stop(z, &z->pcp[cpu]);
			int r = verify_pcp(z, cpu);
			pcp_fronts_start(&z->pcp[cpu]);
			za_tryunlock(&z->pcp[cpu].lock);
			if (r)
				return -1;
		}
		zone_lock_quiet(z);
		int r = verify_buddy(z);
		if (!r)
			r = verify_descriptors(z);
		zone_unlock_quiet(z);
		if (r)
			return -1;
	}
	return 0;
}

/* The layers' background work (the malloc's purge worker) is held back
 * meanwhile: the caller can make its own threads quiet, not ours. */
int za_verify(za_mm_t *mm)
{
	for (int l = 0; l < NR_MM_LAYERS; l++)
		if (mm_layers[l].pause)
			mm_layers[l].pause(mm, true);
	int r = verify_zones(mm);
	for (int l = 0; l < NR_MM_LAYERS && !r; l++)
		if (mm_layers[l].verify)
			r = mm_layers[l].verify(mm);
	for (int l = NR_MM_LAYERS - 1; l >= 0; l--)
		if (mm_layers[l].pause)
			mm_layers[l].pause(mm, false);
	if (r) {
		za_report_error(mm, "%s", za_last_error());     /* VERIFY's, locks let go */
		errno = EINVAL;
	}
	return r;
}
