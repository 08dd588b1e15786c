/*
 * Replaying a kernel's kmem trace through a memory system (replay.c), and
 * the fidelity table that puts the kernel's per-CPU list figures beside
 * zonealloc's for the same stream (fidelity.c).
 */
#ifndef ZABENCH_REPLAY_H
#define ZABENCH_REPLAY_H

#include "trace.h"
#include "zonealloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The rows of the fidelity table, each counted per order and per CPU. */
enum fid_row {
	FID_PCP_REFILL_PAGES,   /* pages taken from the buddy lists into per-CPU lists */
	FID_ZONE_LOCKED_ALLOCS, /* allocations served from the buddy lists directly */
	FID_PCP_DRAIN_PAGES,    /* pages given back from per-CPU lists */
	FID_EXTFRAG_FALLBACKS,  /* fragmenting fallbacks */
	FID_PAGEBLOCK_STEALS,   /* fallbacks that changed a pageblock's owner */
	/* With the zone-lock events (all orders only): */
	FID_ZONE_LOCK_HOLDS,    /* zone-lock holds of refills and bulk frees */
	FID_ZONE_LOCK_CONTENDED,        /* ... that waited for the lock */
	NR_FID_ROWS
};

/* Orders 0..3 each, then everything (orders above 3 too). */
#define FID_ORDERS 4
#define FID_ALL    FID_ORDERS

/* What one side (the kernel, or zonealloc) did, counted per CPU. */
struct fidelity {
	int nr_cpus;
	uint64_t page_allocs;                   /* the denominator: successful mm_page_alloc */
	uint64_t (*count)[NR_FID_ROWS][FID_ORDERS + 1];  /* [nr_cpus + 1]: [nr_cpus] is all CPUs */
};

const char *fid_row_metric(enum fid_row row);
int fidelity_init(struct fidelity *f, int nr_cpus);
void fidelity_free(struct fidelity *f);
void fidelity_reset(struct fidelity *f);
/* Per 1000 page allocations of the whole trace (so rows of the orders add
 * up to the all-orders row); cpu -1 for all CPUs, order FID_ALL for all. */
double fidelity_per_1000(const struct fidelity *f, enum fid_row row, int cpu, int order);
/* What either side did, by the kernel's tracepoints' meaning. */
void fidelity_zone_locked(struct fidelity *f, int cpu, int order, int percpu_refill);
void fidelity_drain(struct fidelity *f, int cpu, int order);
void fidelity_extfrag(struct fidelity *f, int cpu, int order, int fragmenting, int change_ownership);
void fidelity_zone_lock(struct fidelity *f, int cpu, int contended);
/* The kernel's side from one trace event (a no-op for other events). */
void fidelity_count_kernel(struct fidelity *f, const struct trace_event *ev);

/* How a replayed allocation picks its zone. */
enum zone_policy {
	ZONE_BY_PFN,            /* the zone the kernel used (header's zone spans) */
	ZONE_BY_GFP,            /* zonealloc chooses from the gfp flags */
};

#define REPLAY_PAGE  1u      /* replay page events */
#define REPLAY_SLAB  2u      /* replay slab events */

struct replay_opts {
	enum zone_policy zones;
	unsigned int events;    /* REPLAY_* */
	/* Page allocations played before either side is counted, so that the
	 * model's tuned highs reach the state the trace runs in (the lists
	 * start as the kernel's were, prime.c); REPLAY_WARMUP_AUTO: a tenth of
	 * the trace, at most REPLAY_WARMUP_MAX. */
	uint64_t warmup;
	/* Files recorded beside the trace (--zoneinfo, --sysctl), over its
	 * header's; NULL if none. */
	const char *zoneinfo, *sysctl;
	bool zoneinfo_here;     /* zoneinfo is this machine's, taken after the trace
				 * began: its counts and highs are not used */
	bool empty_start;       /* --start empty: the lists start empty, not as
				 * the kernel's must have been (prime.c) */
	/* --model-trace: the model's counted events written here as the
	 * kernel's tracepoints print them, stamped with the time and line of
	 * the trace's event being played; NULL if not asked for. */
	FILE *model_trace;
};
#define REPLAY_WARMUP_AUTO UINT64_MAX
#define REPLAY_WARMUP_MAX 10000

/* Lines of the trace the replay could not follow, each kind counted with
 * the first few line numbers. */
enum replay_problem {
	RP_ALLOC_FAILED,        /* zonealloc could not satisfy an allocation */
	RP_LIVE_PFN,            /* allocation of a pfn already allocated */
	RP_UNTRACED_FREE,       /* ... last allocated as a page table or its batch, whose free
				 * the kernel does not trace */
	RP_LIVE_OBJECT,         /* allocation of an object already live: its free
				 * was not traced (kmem_cache_free_bulk is not) */
	RP_ORDER_MISMATCH,      /* a free's order differs from its allocation's */
	RP_KERNEL_FAILED,       /* the kernel's own failed allocations (page=(null)) */
	RP_UNKNOWN_OBJECT,      /* a slab free of an object allocated before the trace */
	RP_OUTSIDE_ZONES,       /* a pfn in no zone of the header */
	RP_CPU_BEYOND,          /* a CPU beyond the system's (no header to check it) */
	NR_REPLAY_PROBLEMS
};
#define RP_FIRST_LINES 5

struct replay_result {
	uint64_t events;                /* trace events read */
	uint64_t warmup_events;         /* ... of which before counting began */
	uint64_t warmup_allocs;         /* the page allocations they hold */
	uint64_t early_frees;           /* frees of pages allocated before the trace began */
	uint64_t bulk_takes;            /* pages the kernel's untraced bulk allocations took */
	uint64_t problems[NR_REPLAY_PROBLEMS];
	uint64_t first_lines[NR_REPLAY_PROBLEMS][RP_FIRST_LINES];
	uint64_t trace_ns;              /* the trace's span */
	char lines_not_used[512];       /* trace_print_skipped's line, "" if none */
	struct fidelity kernel, model;
};

/*
 * The file recorded beside the trace at path with the suffix (".zoneinfo",
 * ".sysctl"), as corpus.sh and users of perf or trace-cmd save them:
 * NAME.zoneinfo beside NAME.trace.zst, NAME.txt, NAME.dat or NAME, any
 * compression.  Its path in out, or NULL if there is none.
 */
const char *replay_side_file(const char *path, const char *suffix, char *out, size_t len);

/*
 * A trace with no zoneinfo, and none beside it, was most often recorded
 * on the machine replaying it, by a tool that saves nothing (perf, a few
 * lines of shell): this machine's zones then say more than any default.
 * If o names no zoneinfo, h has none, and the trace could have been
 * recorded here -- as many CPUs, if it says, and its first page events all
 * of this machine's CPUs and pfns in its zones -- takes /proc/zoneinfo into h
 * and o, marked as of now (its counts and highs are not the trace's
 * start), and returns true.
 */
bool replay_local_zoneinfo(const char *path, struct replay_opts *o, struct trace_header *h);

/*
 * Opens the trace at path with its header completed by the files o names:
 * the reader, and *h the header to use.  NULL with a message in err.
 */
struct trace_reader *replay_open(const char *path, const struct replay_opts *o,
				 struct trace_header *h, char *err, size_t errlen);

/*
 * Replays the trace at path into mm (one pass, this thread acting as each
 * CPU) and fills r, whose fidelity tables must have been initialised.  mm
 * NULL counts the kernel's side only, and r->model's table may then be
 * left uninitialised.  Returns 0, or -1 with a message in err (a stream
 * error: the line number is in it).
 */
int replay_trace(za_mm_t *mm, const char *path, const struct replay_opts *o,
		 struct replay_result *r, char *err, size_t errlen);
const char *replay_problem_name(enum replay_problem p);   /* a phrase */
const char *replay_problem_key(enum replay_problem p);    /* a JSON key */
/* A property of the kernel's tracing, not of the replay: the kernel's own
 * failures, and the slab frees and allocations it does not trace. */
bool replay_problem_expected(enum replay_problem p);

/*
 * fidelity.c: the table, one column per fidelity: kernels (ref -1) and
 * models, each model compared with the kernel column `ref`.  All orders
 * and per order for all CPUs, then all orders per CPU.  Under it, for each
 * all-orders row where a model differs from its kernel by more than 25%,
 * the kernel mechanism that explains it.
 */
struct fid_column {
	const char *name;
	const struct fidelity *f;
	int ref;
};
void fidelity_print(const struct fid_column *cols, int ncols, FILE *out);
/* {"page_allocs": N, "rows": [{"metric", "order", "cpu", "kernel", "zonealloc"}]} */
void fidelity_json(const struct fidelity *kernel, const struct fidelity *model, FILE *out);

#endif
