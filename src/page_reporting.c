/*
 * Free page reporting: free memory goes back to the operating system.
 *
 * The kernel's page_reporting tells a hypervisor which free pages it may
 * take back.  Here the arena plays physical memory and the OS plays the
 * hypervisor: "reporting" a free block is madvise(MADV_DONTNEED), after
 * which its pages cost nothing until written again (and read as zero).
 *
 * The buddy lists mark a freed block dirty and stamp it with the current
 * purge epoch (buddy.c); a merged block is dirty if any part was, as young
 * as its youngest dirty part.  za_purge() starts a new epoch and takes the
 * dirty blocks old enough off the lists a batch at a time, releases their
 * memory without the zone lock, and frees them back clean.  Meanwhile they
 * are neither free nor allocated, so no one can be handed a block whose
 * memory is being released.
 */
#include "internal.h"
#include "probes.h"

#include <errno.h>
#include <limits.h>

#define PURGE_BATCH 256

/* Purges up to budget pages of one zone's dirty free blocks of epoch
 * max_epoch or older, the largest that fit first. */
static long purge_zone(struct za_zone *z, unsigned long max_epoch, long budget)
{
	struct za_mm *mm = z->mm;
	struct za_page *batch[PURGE_BATCH];
	long pages = 0;
	int n;
	do {
		uint64_t t0 = zone_lock(z);
		n = buddy_isolate_dirty(z, max_epoch, budget, batch, PURGE_BATCH);
		zone_unlock(z, t0, NO_CAUSE);
		bool released[PURGE_BATCH];
		for (int i = 0; i < n; i++) {
			unsigned int order = page_order(batch[i]);
			budget -= 1L << order;
			released[i] = za_os_release(page_to_virt(mm, batch[i]), PAGE_SIZE << order);
			pages += released[i] ? 1L << order : 0;
		}
		t0 = zone_lock(z);
		for (int i = 0; i < n; i++)
			buddy_free_purged(z, batch[i], released[i]);
		zone_unlock(z, t0, NO_CAUSE);
	} while (n == PURGE_BATCH && budget > 0);
	return pages;
}

#define NR_AGES 16

/*
 * Dirty free memory beyond keep pages goes back, the longest free first:
 * age by age (in epochs), down to the youngest age whose blocks, with all
 * older ones, hold the excess, and no block larger than what is left of
 * it.
 */
static long purge_beyond(struct za_mm *mm, unsigned long now, unsigned long keep)
{
	long by_age[NR_AGES] = { 0 }, dirty = 0, pages = 0;
	int nr_zones = mm->nr_nodes * mm->nr_zones, cut = NR_AGES;
	for (int id = 0; id < nr_zones; id++) {
		struct za_zone *z = mm->zone_by_id[id];
		uint64_t t0 = zone_lock(z);
		buddy_dirty_by_age(z, now, by_age, NR_AGES);
		zone_unlock(z, t0, NO_CAUSE);
	}
	for (int a = 0; a < NR_AGES; a++)
		dirty += by_age[a];
	long excess = dirty - (long)(keep < (unsigned long)LONG_MAX ? keep : LONG_MAX);
	for (long older = 0; older < excess && cut > 0;)
		older += by_age[--cut];
	/* An age with pages is at most now: no epoch below 0. */
	for (int age = NR_AGES - 1; age >= cut && pages < excess; age--)
		for (int id = 0; id < nr_zones && pages < excess && by_age[age]; id++)
			pages += purge_zone(mm->zone_by_id[id], now - (unsigned long)age, excess - pages);
	return pages;
}

long za_purge_keep(za_mm_t *mm, unsigned int min_epochs, unsigned long keep)
{
	za_lock(&mm->purge_lock);
	/* Blocks freed from now on are of the new epoch; those of the epoch
	 * that just ended have lived through one call. */
	unsigned long now = atomic_fetch_add(&mm->purge_epoch, 1) + 1;
	long pages = 0;
	if (now >= min_epochs)
		for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++)
			pages += purge_zone(mm->zone_by_id[id], now - min_epochs, LONG_MAX);
	if (keep != ZA_PURGE_KEEP_ALL)
		pages += purge_beyond(mm, now, keep);
	za_unlock(&mm->purge_lock);
	if (pages)
		ZA_PROBE1(purge, pages);
	return pages;
}

long za_purge(za_mm_t *mm, unsigned int min_epochs)
{
	return za_purge_keep(mm, min_epochs, ZA_PURGE_KEEP_ALL);
}

unsigned long za_used_pages_peak(za_mm_t *mm, unsigned long *now)
{
	unsigned long peak = 0, used = 0;
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		struct za_zone *z = mm->zone_by_id[id];
		uint64_t t0 = zone_lock(z);
		long managed = (long)(z->nr_pages - zone_deferred_pages(z)),
		     free = load_relaxed(&z->nr_free_pages) + z->nr_isolated;
		peak += (unsigned long)(managed - z->free_low);
		used += (unsigned long)(managed - free);
		z->free_low = free;
		zone_unlock(z, t0, NO_CAUSE);
	}
	if (now)
		*now = used;
	return peak;
}
