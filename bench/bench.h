/*
 * zabench: the shared types of the benchmark runner and its experiments.
 *
 * An experiment declares its metrics, then is run for a number of measured
 * iterations on one memory system per variant ("default", or "before" and
 * "after" for --ab), interleaved.  Each iteration reports one value per
 * metric and the number of operations it performed; the runner snapshots
 * the system's counters around it, so counters can be read per operation.
 */
#ifndef ZABENCH_H
#define ZABENCH_H

#include "zonealloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_SIZES     16
/* The most any experiment declares: malloc's four per benchmark (and
 * sockperf-udp's three per size). */
#define MAX_METRICS   96
#define MAX_ITERS     64
#define MAX_VARIANTS  8
#define CONFIG_LEN    2048
/* Pages freed at a time where the kernel frees a batch (its folio_batch:
 * page-table teardown, release_pages), through za_free_pages_bulk. */
#define FOLIO_BATCH   31

enum direction { HIGHER_IS_BETTER, LOWER_IS_BETTER };

struct metric_def {
	char name[48];
	char unit[24];          /* "ns/pair", "pages/s", ...: printed with the name */
	enum direction dir;
};

/* Command-line options; each experiment uses the ones it needs. */
struct bench_opts {
	const char *experiment;
	int threads;            /* 0: the experiment's default */
	double seconds;         /* length of one measured iteration */
	int iterations;         /* measured iterations per variant */
	/* Until when (now_seconds) an A/B run whose headline verdict is still
	 * open may add rounds of iterations; 0: never (see bench_run). */
	double extend_until;
	const char *config;     /* the user's --config, over the experiment's */
	const char *ab;         /* --ab SWITCH[=A:B][,...] */
	bool json;
	bool quick;
	int order;              /* --order */
	long pages;             /* --pages: blocks per thread (bulk, rand) */
	long size;              /* --size: object size (slab-repeat) */
	int io_size;            /* --io-size: percent of memory (parallelio) */
	const char *dir;        /* --dir: where file experiments put their files */
	const char *allocators; /* --allocators: malloc's subset of allocators */
	const char *benchmarks; /* --benchmarks: malloc's subset of its suite */
	double scale;           /* --scale: malloc's amount of work (0: default) */
	const char *file;       /* the experiment's input file (replay's trace) */
	const char *sweep;      /* --sweep KEY=V1,V2,...: one run per value */
	const char *predict;    /* --predict FILE: replay's second kernel trace */
	const char *zone_policy;        /* --zone-policy pfn|model (replay) */
	const char *events;     /* --events page,slab (replay) */
	const char *zoneinfo;   /* --zoneinfo FILE (replay): recorded beside the trace */
	const char *sysctl;     /* --sysctl FILE (replay): `sysctl -a` recorded beside it */
	const char *start;      /* --start kernel|empty (replay): the lists' start */
	const char *model_trace;        /* --model-trace FILE (replay): the model's events */
	long warmup;            /* --warmup N (replay); -1: its default */
	int nsizes;
	long sizes[MAX_SIZES];  /* --sizes */
};

struct variant {
	char name[16];
	char config[CONFIG_LEN];        /* as given to za_mm_create */
	za_mm_t *mm;                    /* NULL for an experiment's own variants */
	int niters;
	double values[MAX_METRICS][MAX_ITERS];
	long long *counters;            /* summed deltas, [za_stat_count()] */
	long long ops;
	za_cache_t *caches[4];          /* an experiment's caches on this system */
	za_file_t *files[2];            /* ... and its open files */
	/* Counters an experiment adds (per-zone values, say), shown with the
	 * system's in the table and the JSON. */
	int nextra;
	char extra_name[8][48];
	long long extra_value[8];
};

struct bench {
	const struct experiment *exp;
	struct bench_opts opts;
	int nmetrics;
	struct metric_def metrics[MAX_METRICS];
	int headline;           /* the metric the verdict is about: the first
				 * declared unless declare() says otherwise */
	int extra_rounds;       /* rounds added because the verdict was open */
	double base_seconds;    /* the run without them: warm-up and K rounds */
	bool too_many_metrics;  /* declare() asked for more: the run is refused */
	bool warmup;            /* the run() in progress is a variant's warm-up,
				 * whose results and counters are not kept */
	/* The experiment's configuration when it depends on its input (a
	 * replay mirrors the recorded machine): set by declare(), used
	 * instead of exp->config, under the user's --config. */
	char base_config[CONFIG_LEN];
	/* "repeat --order 0: pcp_high_order 0 → 1": what the run compares */
	char title[320];
	int nvariants;
	struct variant variants[MAX_VARIANTS];
	void *state;            /* the experiment's, from declare() */
};

/* What one measured iteration produced. */
struct iteration {
	double value[MAX_METRICS];
	long long ops;
};

struct experiment {
	const char *name;
	const char *summary;
	const char *config;             /* defaults, under the user's --config */
	int threads;                    /* default --threads */
	/* Declares the metrics (bench_metric) from the options. */
	void (*declare)(struct bench *b);
	/* One iteration on one variant's system. */
	void (*run)(struct bench *b, struct variant *v, struct iteration *it);
	/* What `zabench report` runs: extra arguments and A/B switches, one
	 * run per entry, NULL-terminated. */
	const char *const *report_runs;
	/* Optional: before a variant's system is destroyed (close its files). */
	void (*cleanup)(struct bench *b, struct variant *v);
	/* Optional: frees what declare() allocated besides b->state itself. */
	void (*release)(struct bench *b);
	/* Optional: a table of its own after the standard ones. */
	void (*print_extra)(const struct bench *b, FILE *out);
	/* Lines under the header's configuration: where it came from. */
	void (*describe_config)(const struct bench *b, FILE *out);
	/* Optional: variants of its own that are not memory systems (the
	 * allocators of the malloc comparison): fills b->variants, leaving
	 * mm NULL and config a description.  Returns 0 or an exit status. */
	int (*make_variants)(struct bench *b);
	/* Optional: its own table instead of the standard one. */
	void (*print)(const struct bench *b, FILE *out);
	/* Optional: the threads as the experiment uses them ("2 groups of 20
	 * senders and 20 receivers"), for the table's header. */
	void (*describe_threads)(const struct bench *b, char *buf, size_t len);
	/* Optional: what a reader of the report should know to read the
	 * figures right (a counter that looks wrong and is not, say). */
	const char *notes;
	/* Takes one input file as its positional argument (opts.file). */
	bool takes_file;
	/* Each iteration on a system created anew (a replay must start
	 * from the same state every time). */
	bool fresh_system;
	/* Optional: more of a variant's JSON object, after its counters
	 * (", \"key\": value..."). */
	void (*json_variant)(const struct bench *b, const struct variant *v, FILE *out);
	/* Optional: named figures of a variant besides its metrics, for
	 * --sweep's table and plot; returns how many (at most max). */
	int (*observations)(const struct bench *b, const struct variant *v, const char **names,
			    double *values, int max);
};

/* runner.c: the engine, and what experiments run on */
/* Declares a metric and returns its index; beyond MAX_METRICS, -1, and
 * bench_run refuses the run with a usage error. */
int bench_metric(struct bench *b, const char *name, const char *unit, enum direction dir);
double now_seconds(void);
double bench_seconds(const struct bench *b);
/* Sets an extra counter of a variant (the last value counts). */
void set_extra_counter(struct variant *v, const char *name, long long value);
/* The directory for experiment files: --dir, or a temporary one made on
 * first use and removed at exit. */
const char *bench_dir(struct bench *b);
/* The flags the kernel creates its cache of this name with, where they
 * matter to the model: vm_area_struct and maple_node ask for sheaves
 * (ZA_SLAB_SHEAVES: their sheaf_capacity = 32, since 6.18). */
unsigned int kernel_cache_flags(const char *name);
/* The variant's cache in slot (0..3), created on first use. */
za_cache_t *variant_cache(struct variant *v, int slot, const char *name, size_t size);
/* Pins the calling thread to CPU i modulo the machine's CPUs. */
void pin_to_cpu(int i);
/* Runs fn(i, arg) on n threads released together; returns the wall time
 * from the release to the last one's return. */
double run_threads(int n, void (*fn)(int i, void *arg), void *arg);
/* Runs b as bench_prepare (cli.h) set it up: its variants, a warm-up,
 * the measured rounds.  0, or an exit status. */
int bench_run(struct bench *b);
/* Destroys the run's systems and frees its state, once it is printed. */
void bench_finish(struct bench *b);

/* zabench.c: every experiment, NULL-terminated. */
extern const struct experiment *const experiments[];

/* stats.c */
struct summary {
	double hmean, amean, stddev, min, max, median;
};
void summarize(const double *v, int n, struct summary *s);
double pct_change(double before, double after, enum direction dir);

/* The confidence of the intervals zabench prints. */
#define CONFIDENCE 0.95

enum verdict { VERDICT_NA, VERDICT_BETTER, VERDICT_WORSE, VERDICT_NOISE, VERDICT_INCONCLUSIVE };

/* How "after" compares with "before" on one metric (stats.c explains). */
struct comparison {
	double change;          /* median pairwise ratio - 1, positive when better */
	double lo, hi;          /* its interval, same sign convention */
	double level;           /* the interval's confidence, >= CONFIDENCE
				 * unless the verdict is inconclusive */
	enum verdict verdict;
};
void compare_samples(const double *before, int nb, const double *after, int na,
		     enum direction dir, struct comparison *c);
const char *verdict_name(enum verdict v);
/* Is b an A/B of two systems (--ab), whose metrics get verdicts? */
bool is_ab(const struct bench *b);
/* compare_samples for metric m of an A/B's "before" and "after". */
void compare_ab(const struct bench *b, int m, struct comparison *c);
/* Neither a sure change nor an interval narrow enough to call it none. */
bool comparison_open(const struct comparison *c);

/* results.c: one run's results, as tables or JSON */
void print_table(const struct bench *b, FILE *out);
/* A value as the tables print it: "n/a", "0", 3 significant digits below
 * 0.01, 2 decimals below a million, none above. */
void format_value(double v, char *out, size_t len);
/* A cell of that value (table.h). */
struct table;
void table_add_value(struct table *t, double v);
/* The unit that brings a per-operation figure to about 1 or more ("op",
 * "1k ops", "1M ops", "1G ops"), and its scale. */
const char *op_scale(double per_op, double *scale);
int stat_index(const char *name);       /* -1 if there is no such counter */
const char *variant_config(const struct variant *v);
/* The value of key in a "k=v,k=v" configuration, into out ("" if absent). */
void config_value(const char *config, const char *key, char *out, size_t len);
long machine_cores(void);
unsigned long long machine_memory(void);
void print_json(const struct bench *b, FILE *out);
/* A JSON string with its escapes; a number, or null for NaN and infinities. */
void json_string(FILE *out, const char *s);
void json_number(FILE *out, double v);

/* Per-thread deterministic random numbers. */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

#endif
