/*
 * Kernel allocation traces: the kmem tracepoints of a real kernel, read as
 * a stream of events for `zabench replay` (exp_replay.c) and written by
 * `zabench record` (record.c).
 *
 * Formats read (detected per line, so a file may even mix them):
 *   - ftrace text, as /sys/kernel/tracing/trace and trace_pipe print it
 *       "bash-17929 [000] ..s1. 15200.869966: mm_page_free: page=... pfn=0x1082cb order=0"
 *   - `trace-cmd report` output (no flags column, or latency flags with -l)
 *   - `perf script` output ("bash 17929 [000] 15200.869966: kmem:mm_page_free: ...")
 *   - trace-cmd's binary trace.dat, where libtracecmd was built in
 * plain or compressed with gzip, xz or zstd (recognised by their magic
 * bytes), streamed: memory does not grow with the trace's length.
 *
 * Header lines start with "# ": "# nr_cpus N", "# uname RELEASE",
 * "# sysctl vm.KEY VALUE", "# zoneinfo <a line of /proc/zoneinfo>" and,
 * anywhere (record puts them at the end), "# slabinfo <a line of
 * /proc/slabinfo>".  /proc/zoneinfo is also read as it is when a shell
 * script puts it before the events, bare or each line behind "# ".  Other
 * lines that start with '#' are comments.  The header is optional.
 */
#ifndef ZABENCH_TRACE_H
#define ZABENCH_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The page events, then from TEV_KMALLOC the slab events, then from
 * TEV_ZONE_LOCK_CONTENDED the zone-lock events (record.c enables them by
 * these ranges, in this order). */
enum trace_event_type {
	TEV_PAGE_ALLOC,         /* kmem:mm_page_alloc */
	TEV_PAGE_FREE,          /* kmem:mm_page_free */
	TEV_PAGE_FREE_BATCHED,  /* kmem:mm_page_free_batched (order 0) */
	TEV_ZONE_LOCKED,        /* kmem:mm_page_alloc_zone_locked */
	TEV_PCPU_DRAIN,         /* kmem:mm_page_pcpu_drain */
	TEV_EXTFRAG,            /* kmem:mm_page_alloc_extfrag */
	TEV_KMALLOC,            /* kmem:kmalloc */
	TEV_KFREE,              /* kmem:kfree */
	TEV_CACHE_ALLOC,        /* kmem:kmem_cache_alloc */
	TEV_CACHE_FREE,         /* kmem:kmem_cache_free */
	/* the zone-lock events proposed in 2026, where a kernel has them */
	TEV_ZONE_LOCK_CONTENDED,        /* kmem:mm_zone_lock_contended */
	TEV_ZONE_LOCK_LOCKED,           /* kmem:mm_zone_locked */
	TEV_ZONE_LOCK_UNLOCK,           /* kmem:mm_zone_lock_unlock */
	NR_TEV
};

/* The event's name as the kernel spells it ("mm_page_alloc"). */
const char *trace_event_name(enum trace_event_type t);
/* The type of the event named name[0, len), older kernels' names
 * ("kmalloc_node") included; -1 if it is none of them. */
int trace_event_lookup(const char *name, size_t len);

/* The gfp flags zonealloc's replay needs, decoded from the names the
 * kernel prints (GFP_KERNEL, __GFP_DMA32|__GFP_ZERO, ...) or, for a number,
 * by the bit layout of current kernels. */
#define TGFP_DMA          (1u << 0)
#define TGFP_HIGHMEM      (1u << 1)
#define TGFP_DMA32        (1u << 2)
#define TGFP_MOVABLE      (1u << 3)
#define TGFP_RECLAIMABLE  (1u << 4)
#define TGFP_HIGH         (1u << 5)
#define TGFP_IO           (1u << 6)
#define TGFP_FS           (1u << 7)
#define TGFP_ZERO         (1u << 8)
#define TGFP_DIRECT_RECLAIM (1u << 10)
#define TGFP_KSWAPD_RECLAIM (1u << 11)
#define TGFP_COMP         (1u << 18)
#define TGFP_THISNODE     (1u << 21)
#define TGFP_ACCOUNT      (1u << 22)

/* A kernel's gfp_t value (current kernels' bit layout) as TGFP_* bits. */
uint32_t trace_gfp_bits(uint64_t kernel_gfp);

#define TRACE_NO_PFN      UINT64_MAX      /* page=(null): a failed allocation */
/* The kernel's migratetypes, as its events print them. */
#define TMT_UNMOVABLE     0
#define TMT_MOVABLE       1
#define TMT_RECLAIMABLE   2

/* x86-64's pageblock_order, for an extfrag event that does not print it. */
#define TRACE_PAGEBLOCK_ORDER 9

struct trace_event {
	enum trace_event_type type;
	int cpu;                        /* 0 if the line has none (perf script without -a) */
	uint64_t ts_ns;                 /* the trace's clock, in ns */
	uint64_t line;                  /* 1-based line (record number in trace.dat) */
	/* page events */
	uint64_t pfn;                   /* TRACE_NO_PFN for a failed allocation */
	int order;                      /* extfrag: alloc_order */
	int migratetype;                /* extfrag: alloc_migratetype; -1 if absent */
	uint32_t gfp;                   /* TGFP_* */
	int percpu_refill;              /* zone_locked: 0/1, -1 if absent (old kernels) */
	int fallback_order, fallback_migratetype;       /* extfrag */
	int fragmenting, change_ownership;              /* extfrag */
	/* slab events */
	uint64_t ptr;                   /* as printed (hashed by %p, but stable) */
	uint32_t bytes_req, bytes_alloc;
	char cache[32];                 /* kmem_cache_*: name=, "" if absent */
	/* zone-lock events */
	int contended;                  /* mm_zone_locked: 0/1 */
};

#define TRACE_PCP_CPUS  256             /* CPUs whose per-CPU counts are kept */

struct trace_zone {
	int node;
	char name[16];                  /* "DMA", "DMA32", "Normal", "Movable" */
	uint64_t start_pfn, spanned, present, managed;
	uint64_t min, low, high;        /* watermarks, pages */
	int batch;                      /* pagesets: cpu 0's batch; 0 if absent */
	int high_min, high_max;         /* pagesets (6.7+); 0 if absent */
	int pcp_high[TRACE_PCP_CPUS];   /* pagesets: each CPU's high at recording */
	int pcp_count[TRACE_PCP_CPUS];  /* pagesets: each CPU's pages at recording */
	int nr_pagesets;                /* 1 + the highest CPU whose pageset it showed */
};

#define TRACE_MAX_ZONES 16

struct trace_slab {
	char name[32];
	uint32_t objsize, objperslab, pagesperslab;
	uint64_t active_objs, num_objs;
};

/* The vm sysctls a mirror of the recorded machine reads. */
enum trace_sysctl {
	TS_HIGH_FRACTION,               /* vm.percpu_pagelist_high_fraction */
	TS_MIN_FREE_KBYTES,             /* vm.min_free_kbytes */
	TS_WATERMARK_SCALE_FACTOR,      /* vm.watermark_scale_factor */
	TS_WATERMARK_BOOST_FACTOR,      /* vm.watermark_boost_factor */
	NR_TRACE_SYSCTLS
};
const char *trace_sysctl_name(enum trace_sysctl s);    /* "vm.min_free_kbytes" */

struct trace_header {
	bool present;                   /* any "# nr_cpus"/zoneinfo line seen */
	int nr_cpus;                    /* 0: unknown; else "# nr_cpus", or trace-cmd's "cpus=N" */
	char uname[128];
	/* "# sysctl vm.KEY N" lines (zabench record), or --sysctl's file */
	bool sysctl_known[NR_TRACE_SYSCTLS];
	int64_t sysctl[NR_TRACE_SYSCTLS];
	/* The zoneinfo's counts and highs are not of the trace's start: an
	 * excerpt's ("# excerpt" past the recording's first event) are of
	 * earlier, this machine's (replay_local_zoneinfo) of now. */
	bool zoneinfo_later;
	bool zoneinfo_here;             /* ... and it is this machine's */
	int nr_zones;                   /* populated zones (managed > 0) only */
	int zones_dropped;              /* zones beyond TRACE_MAX_ZONES, not kept */
	struct trace_zone zones[TRACE_MAX_ZONES];
	/* The "# zoneinfo" lines' parser (trace_parse_line): 1 + the index in
	 * zones[] of the zone being read (0: none), where in it, and the
	 * pageset's CPU. */
	int zi_zone, zi_part, zi_cpu;
	bool events_begun;              /* bare zoneinfo lines only come before */
	bool cpu_unnamed;               /* an event named no CPU (perf record without
					 * -a, or perf script -F without cpu): CPU 0 */
};

/* Why lines were not used; counted, and printed by trace_print_skipped. */
enum trace_skip {
	SKIP_MALFORMED,         /* not a trace line at all, or cut short */
	SKIP_UNKNOWN_EVENT,     /* a well-formed line of another event */
	SKIP_MISSING_FIELD,     /* a kmem event without a field it needs */
	SKIP_BAD_CPU,           /* a CPU at or beyond the header's nr_cpus */
	SKIP_LOST_EVENTS,       /* "LOST EVENTS" / "CPU n buffer started" markers */
	SKIP_TIME_BACKWARDS,    /* older than the reorder window allows */
	SKIP_UNTIMED,           /* a page event with no timestamp */
	NR_TRACE_SKIP
};

struct trace_reader;

/*
 * Opens a trace and reads its leading header lines.  NULL on failure, with
 * a message in err (the file cannot be opened, is not a trace at all, or a
 * compressed format this build cannot read: says which package to install).
 */
struct trace_reader *trace_open(const char *path, char *err, size_t errlen);

/* The header as read so far: complete for everything before the first event. */
const struct trace_header *trace_header(const struct trace_reader *r);

/*
 * The next event in timestamp order (ties: file order): events are sorted
 * within a window of TRACE_REORDER_WINDOW events, enough for the per-CPU
 * buffers' interleaving in trace_pipe.  Returns 1 with *ev filled, 0 at the
 * end, -1 on an error that ends the stream (a truncated or corrupt
 * compressed file, a read error): trace_error() has the message with the
 * line number.  Unusable lines do not end the stream; they are counted.
 */
#define TRACE_REORDER_WINDOW 4096
int trace_next(struct trace_reader *r, struct trace_event *ev);
const char *trace_error(const struct trace_reader *r);

/* Lines skipped for each reason, and the line number of the first of each
 * (0 if none). */
uint64_t trace_skipped(const struct trace_reader *r, enum trace_skip why, uint64_t *first_line);
const char *trace_skip_name(enum trace_skip why);
/* "lines not used: 3 malformed (first: line 17), 1 unknown event (line 2)"; nothing if none. */
void trace_print_skipped(const struct trace_reader *r, FILE *out);

/* Lines read, events returned, and the "# slabinfo" caches seen so far
 * (complete at the end of the stream). */
uint64_t trace_lines(const struct trace_reader *r);
uint64_t trace_events(const struct trace_reader *r);
int trace_slabs(const struct trace_reader *r, const struct trace_slab **slabs);

void trace_close(struct trace_reader *r);

/* The release a header's uname names, as major * 1000 + minor
 * ("6.18.44-fc" -> 6018), or 0 if it names none. */
int trace_release(const struct trace_header *h);
/* The migratetype an allocation event asked for: its field, or what its
 * gfp flags say (movable, reclaimable, else unmovable). */
int trace_alloc_migratetype(const struct trace_event *ev);

/*
 * The zone a pfn lies in, by the header's start_pfn and spanned: an index
 * into header->zones, or -1 (no header, or a pfn outside every zone).
 */
int trace_pfn_zone(const struct trace_header *h, uint64_t pfn);

/*
 * Reads a file the user recorded beside a trace into *h: /proc/zoneinfo
 * (its zones, over any the trace's header had) or `sysctl -a` / `sysctl
 * vm` output ("vm.KEY = VALUE" lines; other keys are passed over).  0, or
 * -1 with a message naming the line that shows the file is not one.
 */
int trace_read_zoneinfo(const char *path, struct trace_header *h, char *err, size_t errlen);
int trace_read_sysctl(const char *path, struct trace_header *h, char *err, size_t errlen);

/*
 * Parses one line of text (no newline) into *ev.  Returns 1 for a kmem
 * event, 0 for a header or comment line (header lines update *h), or -1
 * with *why set.  The readers' core, exposed for the tests and the fuzzer.
 * ev->line is left 0 (the reader numbers the lines); "# slabinfo" lines
 * are comments here (trace_parse_slabinfo reads them).
 */
int trace_parse_line(const char *line, size_t len, struct trace_header *h,
		     struct trace_event *ev, enum trace_skip *why);

/*
 * gfp_flags as printed ("GFP_KERNEL|__GFP_ZERO", "0x400dc0", "none") into
 * TGFP_* bits; names of flags replay ignores count as 0.  0, or -1 if it
 * is not a gfp value.
 */
int trace_parse_gfp(const char *s, size_t len, uint32_t *gfp);

/*
 * A "# slabinfo" line: 1 with *s filled for a cache's line, 0 for another
 * line of the file (its version, its column names), -1 if line is no
 * "# slabinfo" line or its cache's fields do not parse.
 */
int trace_parse_slabinfo(const char *line, size_t len, struct trace_slab *s);

#endif
