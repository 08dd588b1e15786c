/*
 * The layers above the page allocator, in the order the memory system
 * sets them up, tears them down and locks them for fork (their locks are
 * outer to the page allocator's): reclaim (its rwlock, open files,
 * shrinkers), the slab caches (the cache list, then per cache its CPU
 * locks and node locks), the quicklists (per-CPU locks), and the malloc
 * front end, which is known here only by the checks of its sheaves.
 */
#include "malloc/internal.h"
#include "mm_layers.h"
#include "quicklist.h"
#include "slab.h"
#include "vmscan.h"

_Static_assert(NR_SLAB_EVENTS <= MAX_LAYER_EVENTS && NR_QL_EVENTS <= MAX_LAYER_EVENTS &&
	       NR_MALLOC_EVENTS <= MAX_LAYER_EVENTS,
	       "vmstat.c folds a layer's events into MAX_LAYER_EVENTS");

const struct mm_layer mm_layers[NR_MM_LAYERS] = {
	[LAYER_RECLAIM] = {
		.name = "reclaim",
		.init = vmscan_init,
		.exit = reclaim_exit,
		.lock_all = reclaim_lock_all,
		.verify = reclaim_verify,
	},
	[LAYER_SLAB] = {
		.name = "slab",
		.exit = slub_destroy_all,
		.count = slab_count,
		.scan = slab_scan,
		.lock_all = slab_layer_lock_all,
		.nr_events = NR_SLAB_EVENTS,
		.event_name = slab_event_name,
		.fold_events = slab_stat_fold,
		.report_name = "slabinfo",
		.report = slabinfo_report,
		.verify = slab_verify,
	},
	[LAYER_QUICKLIST] = {
		.name = "quicklist",
		.init = quicklist_init,
		.exit = quicklist_drain,
		.count = quicklist_count,
		.scan = quicklist_scan,
		.drain = quicklist_drain,
		.lock_all = quicklist_lock_all,
		.nr_events = NR_QL_EVENTS,
		.event_name = quicklist_event_name,
		.fold_events = quicklist_stat_fold,
		.held_pages = quicklist_pages,
		.verify = quicklist_verify,
	},
	[LAYER_MALLOC] = {
		.name = "malloc",
		.nr_events = NR_MALLOC_EVENTS,
		.event_name = malloc_event_name,
		.fold_events = malloc_stat_fold,
		.report_name = "rss",
		.report = malloc_rss_report,
		.verify = malloc_verify,
		.pause = purge_worker_pause,
	},
};
