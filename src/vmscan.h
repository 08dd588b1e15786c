#ifndef ZA_VMSCAN_H
#define ZA_VMSCAN_H

#include "mm_layers.h"

#define SWAP_CLUSTER_MAX 32
#define DEF_PRIORITY 12
/* Direct reclaim rounds, and kswapd balance runs, without progress before
 * they give up (the kernel's MAX_RECLAIM_RETRIES). */
#define MAX_RECLAIM_RETRIES 16

/* A registered shrinker (za_shrinker_register). */
struct shrinker {
	unsigned long (*count)(void *ctx);
	unsigned long (*scan)(void *ctx, unsigned long nr);
	void *ctx;
	struct shrinker *next;
};

int vmscan_init(struct za_mm *mm);      /* built-in shrinkers, kswapd threads */
void vmscan_exit(struct za_mm *mm);

/* The reclaim layer's hooks (mm_layers.c). */
void reclaim_exit(struct za_mm *mm);
void reclaim_lock_all(struct za_mm *mm, enum lock_all_mode mode);
int reclaim_verify(struct za_mm *mm);

/* The page allocator's slow path. */
bool wakeup_kswapd(struct za_zone *z, unsigned int order, int highest_zone);
unsigned long try_to_free_pages(struct za_mm *mm, struct za_zone **zonelist, int highest_zone,
				unsigned int order);
unsigned long reclaimable_pages(struct za_mm *mm, struct za_zone **zonelist);

/* The page cache's side of the LRU. */
void lru_add(struct za_mm *mm, struct za_page *page);
void lru_del(struct za_mm *mm, struct za_page *page);   /* off the lists, if on them */
void mark_page_accessed(struct za_mm *mm, struct za_page *page);

/* filemap.c */
void filemap_close_all(struct za_mm *mm);
/* for reclaim: */
/* Adds the pages written to *written; -1 if some I/O failed, else 0. */
int writeback_pages(struct za_page **pages, int n, unsigned long *written);
bool remove_from_page_cache(struct za_page *page);   /* false if in use or dirty */

#endif
