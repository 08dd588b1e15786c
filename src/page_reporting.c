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

#define PURGE_BATCH 256

/* Purges one zone's dirty free blocks of epoch max_epoch or older. */
static long purge_zone(struct za_zone *z, unsigned long max_epoch)
{
	struct za_mm *mm = z->mm;
	struct za_page *batch[PURGE_BATCH];
	long pages = 0;
	int n;
	do {
		uint64_t t0 = zone_lock(z);
		n = buddy_isolate_dirty(z, max_epoch, batch, PURGE_BATCH);
		zone_unlock(z, t0, NO_CAUSE);
		bool released[PURGE_BATCH];
		for (int i = 0; i < n; i++) {
			unsigned int order = page_order(batch[i]);
			released[i] = za_os_release(page_to_virt(mm, batch[i]), PAGE_SIZE << order);
			pages += released[i] ? 1L << order : 0;
		}
		t0 = zone_lock(z);
		for (int i = 0; i < n; i++)
			buddy_free_purged(z, batch[i], released[i]);
		zone_unlock(z, t0, NO_CAUSE);
	} while (n == PURGE_BATCH);
	return pages;
}

long za_purge(za_mm_t *mm, unsigned int min_epochs)
{
	za_lock(&mm->purge_lock);
	/* Blocks freed from now on are of the new epoch; those of the epoch
	 * that just ended have lived through one call. */
	unsigned long now = atomic_fetch_add(&mm->purge_epoch, 1) + 1;
	long pages = 0;
	if (now >= min_epochs)
		for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++)
			pages += purge_zone(mm->zone_by_id[id], now - min_epochs);
	za_unlock(&mm->purge_lock);
	if (pages)
		ZA_PROBE1(purge, pages);
	return pages;
}
