/*
 * The configuration of a memory system: parsed from "key=value,..." strings,
 * printed back in full.  Each key is a row of the table in config.c.
 */
#ifndef ZA_CONFIG_H
#define ZA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZA_MAX_ZONES       4
#define ZA_MAX_NODES       64
#define ZA_MAX_CPUS        4096
#define ZA_MAX_ORDER_LIMIT 14
#define ZA_ZONE_NAME_MAX   16
#define ZA_AUTO            (-1)   /* an integer key left to be computed */

struct za_zone_spec {
	char name[ZA_ZONE_NAME_MAX];
	uint64_t bytes;               /* 0: the rest of the node */
};

/* kernel=: the release a preset came from, as given ("" for none). */
#define ZA_KERNEL_RELEASE_MAX 16

struct za_config {
	char kernel[ZA_KERNEL_RELEASE_MAX];
	uint64_t memory;
	int64_t nodes;
	int nr_zones;
	struct za_zone_spec zones[ZA_MAX_ZONES];
	bool zones_given;               /* else the default, which follows memory */
	int64_t cpus;                 /* ZA_AUTO: the machine's */
	int64_t max_order;
	int64_t pcp_high_order;         /* 1: seed 000's lists; 2: the kernel's since 5.14 */
	int64_t bulkfree_outside_lock;
	int64_t bulkfree_list_first;    /* 5.18: the freed block's list drains first, whole */
	int64_t percpu_pagelist_high_fraction;   /* 0: the seeds' high, or auto-tuned */
	int64_t pcp_high_auto;          /* 6.7: high tuned between high_min and high_max */
	uint64_t pcp_high_min;          /* bytes a CPU; caps high_min (0: no cap) */
	uint64_t pcp_high_max;          /* bytes a CPU; caps high_max (0: no cap) */
	int64_t pcp_refill_drain;       /* a refill first returns other orders' excess */
	int64_t pcp_batch_scale_max;    /* the kernel's CONFIG_PCP_BATCH_SCALE_MAX */
	int64_t pcp_decay_shift;        /* the vmstat tick lowers high by high >> this */
	int64_t pcp_free_high;          /* 1: 5.18's free_high, 2: 6.7's */
	int64_t pcp_drain_chunks;       /* 1: 6.10's drains of a CPU's lists in parts, 2: 6.19's */
	int64_t pcp_own_pageblocks;     /* the April 2026 RFC: lists own whole pageblocks */
	uint64_t llc_per_cpu;           /* ZA_AUTO: the machine's last-level cache / its sharers */
	int64_t vmstat_interval_ms;     /* ZA_AUTO: 1000 if pcp_high_auto, else 0 */
	int64_t fallback_steal_smallest;        /* 6.15: claim at any order, then steal the smallest */
	int64_t alloc_nofragment;       /* 5.0: the fast path tries lower zones before fragmenting */
	int64_t watermark_scale_factor;
	int64_t min_free_kbytes;      /* ZA_AUTO: 4 * sqrt(lowmem KiB) */
	int64_t lowmem_reserve_ratio[ZA_MAX_ZONES];   /* ZA_AUTO: by zone name */
	int64_t lock_stats;
	char percpu[8];                 /* "rseq" or "lock" (rseq.h) */
	char percpu_index[8];           /* "cpu" or "cid" */
	char rseq_area[8];              /* "libc" or "own" (rseq.c) */
	char malloc_cache[8];           /* "thread" or "cpu" (malloc/cpu_cache.c) */
	/* SLUB */
	int64_t slub_min_order;
	int64_t slub_max_order;
	int64_t slub_min_objects;       /* 0: 4 * (fls(nr_cpus) + 1) */
	int64_t nr_cpus;                /* for slab sizing only; ZA_AUTO: the machine's */
	int64_t slub_big_system;        /* seed 002 */
	int64_t slub_sheaves;           /* 0 off, 1 as 6.18 (caches that ask), 2 as 7.0 (all) */
	char slub_debug[128];           /* "FZPU" or "FZ:cache:cache;P:cache" */
	int64_t slab_freelist_random;
	int64_t slab_freelist_hardened;
	/* reclaim (seed 003) */
	int64_t fair_zone;
	int64_t kswapd_wake_high;
	int64_t kswapd;                 /* 0: no kswapd threads, direct reclaim only */
	/* quicklists (seed 004) */
	int64_t quicklists;
	int64_t nr_quick;
	int64_t deferred_init;          /* zones reach the buddy lists as needed */
	uint64_t section_size;          /* ZA_AUTO: mm_init.c's auto_section_size() */
	int64_t purge_delay_ms;         /* malloc: free memory goes back to the OS after this */
	int64_t purge_excess;           /* malloc: and, while busy, what exceeds recent demand */
	int64_t publish;                /* counters and reports in /dev/shm for zabench top */
	int64_t publish_interval_ms;    /* the publisher thread's period; 0: no thread */
	int64_t debug;
	int64_t hugepages;
	int64_t populate;
};

void za_config_defaults(struct za_config *cfg);

/* slub_debug.c: why a slub_debug value is bad, or NULL. */
const char *slub_debug_check(const char *spec);

/* Applies str over cfg.  On error returns -1, errno EINVAL, and sets the
 * thread's last error to a message naming the key. */
int za_config_parse(struct za_config *cfg, const char *str);

/* Every key=value, in table order.  Returns the length (snprintf-like). */
size_t za_config_format(const struct za_config *cfg, char *buf, size_t len);

/* Sets the calling thread's last error (see za_last_error()). */
void za_set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* ZA_CONFIG_H */
