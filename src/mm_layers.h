/*
 * The layers above the page allocator, as the memory system sees them:
 * created and destroyed with it, locked for fork, counted, reported and
 * verified through one table (mm_layers.c), so that the page allocator
 * and reclaim call none of them by name.
 */
#ifndef ZA_MM_LAYERS_H
#define ZA_MM_LAYERS_H

#include <stdio.h>
#include "mmzone.h"

enum lock_all_mode { LOCK_ALL, UNLOCK_ALL, UNLOCK_ALL_IN_CHILD };

struct mm_layer {
	const char *name;
	/* At creation, after the zones (in table order): 0, or -1 with errno. */
	int (*init)(struct za_mm *mm);
	/* At destroy, in table order: give back what it holds. */
	void (*exit)(struct za_mm *mm);
	/* fork: take every lock of the layer, in the order its code nests
	 * them, or release them (in a forked child, where a lock that
	 * remembers its owner must be made anew). */
	void (*lock_all)(struct za_mm *mm, enum lock_all_mode mode);
	/* Its events: za_stat's names, and their totals folded. */
	int nr_events;
	const char *(*event_name)(int i);
	void (*fold_events)(struct za_mm *mm, uint64_t *totals);
	/* Pages it holds free for its users, per node (< 0: all), if any. */
	long (*held_pages)(const struct za_mm *mm, int node);
	/* Pages reclaim may take back from it, as a shrinker (registered by
	 * the reclaim layer's init): how many it holds, and freeing up to nr
	 * (returning how many it freed). */
	unsigned long (*count)(void *mm);
	unsigned long (*scan)(void *mm, unsigned long nr);
	/* The allocation slow path, after a reclaim round that did not do:
	 * give back at once all it holds free for its users. */
	void (*drain)(struct za_mm *mm);
	/* A za_report() of its own. */
	const char *report_name;
	void (*report)(struct za_mm *mm, FILE *out);
	/* za_verify: its invariants, 0 or -1 (recorded with VERIFY). */
	int (*verify)(struct za_mm *mm);
	/* za_verify: hold back its background work that changes what is
	 * checked (pause true), or let it go on. */
	void (*pause)(struct za_mm *mm, bool pause);
};

/* mm_init.c: every lock of the system, the page allocator's and every
 * layer's, in order (the malloc front end takes them for fork). */
void mm_lock_all(struct za_mm *mm);
void mm_unlock_all(struct za_mm *mm, bool in_child);

/* vmstat.c: does counter i (za_stat_name's index) belong in a summary of
 * this system, if it is not zero?  (The malloc's statistics ask.) */
bool stat_in_summary(const struct za_mm *mm, int i);

/* The most events a layer may have (vmstat.c folds them into a buffer). */
#define MAX_LAYER_EVENTS 32

enum { LAYER_RECLAIM, LAYER_SLAB, LAYER_QUICKLIST, LAYER_MALLOC, NR_MM_LAYERS };
extern const struct mm_layer mm_layers[NR_MM_LAYERS];

#endif /* ZA_MM_LAYERS_H */
