/*
 * zabench scorecard: the model's fidelity on a corpus of real kernels'
 * traces (bench/traces/corpus.txt), each replayed with the default mirror
 * and no per-trace option, every all-orders row of the fidelity table
 * beside the kernel's with its error, and the predictions: one trace
 * replayed under another's setting of a tunable, beside the kernel that
 * ran with it.  The summary counts the rows within 25% of the kernel's
 * (+5 per 1000 allocations, where both are near zero) and within 10% (+2),
 * and the median absolute error, for the traces the model was tuned on
 * and for those held back.  And the kernel against itself: one workload
 * recorded twice under one setting, the second run's figures beside the
 * first's -- how near any prediction of another run can be expected to
 * come.
 */
#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "mirror.h"
#include "replay.h"
#include "table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ENTRIES 128
#define NAME_LEN 64

static const enum fid_row scored_rows[] = {
	FID_PCP_REFILL_PAGES, FID_ZONE_LOCKED_ALLOCS, FID_PCP_DRAIN_PAGES,
};
#define NR_SCORED (sizeof(scored_rows) / sizeof(scored_rows[0]))

/* A line of corpus.txt: a trace, a prediction (from != ""), or a repeat
 * (from and to; model[] holds the repeat's kernel figures). */
struct entry {
	char name[NAME_LEN], recorder[16], split[16];
	char from[NAME_LEN], to[NAME_LEN], keys[256];
	double kernel[NR_SCORED], model[NR_SCORED];
	uint64_t page_allocs;
	bool repeat;
	bool failed;
	bool here;                      /* this machine's zoneinfo stood in for a trace's (or, in a
					 * prediction, its second trace's, which lends the keys) */
};

#define MAX_SPLITS 8

struct corpus {
	char dir[1024];
	char splits_said[512];          /* the corpus's "# split WORD: meaning" lines */
	int nsplits;
	char split[MAX_SPLITS][16];     /* ... their words, each entry's split one of them */
	int n;
	struct entry e[MAX_ENTRIES];
};

static int corpus_error(const char *path, int line, const char *what)
{
	fprintf(stderr, "zabench scorecard: %s:%d: %s\n", path, line, what);
	return -1;
}

static bool split_declared(const struct corpus *c, const char *split)
{
	for (int i = 0; i < c->nsplits; i++)
		if (!strcmp(c->split[i], split))
			return true;
	return false;
}

/* "# split WORD: what it means": 0, or -1 if it is not one. */
static int declare_split(struct corpus *c, const char *line)
{
	size_t word = strcspn(line, ": \t\n");
	if (!word || line[word] != ':' || word >= sizeof(c->split[0]) || c->nsplits == MAX_SPLITS)
		return -1;
	snprintf(c->split[c->nsplits++], sizeof(c->split[0]), "%.*s", (int)word, line);
	size_t n = strlen(c->splits_said);
	snprintf(c->splits_said + n, sizeof(c->splits_said) - n, "%s%.*s", n ? "; " : "",
		 (int)strcspn(line, "\n"), line);
	return 0;
}

/* "name recorder events workload sysctl split excerpt...",
 * "predict from to keys split", the split one the corpus declared, or
 * "repeat first second". */
static int parse_corpus_line(const struct corpus *c, char *line, struct entry *e)
{
	char *f[8];
	int n = 0;
	for (char *tok = strtok(line, " \t\n"); tok && n < 8; tok = strtok(NULL, " \t\n"))
		f[n++] = tok;
	if (!n)
		return 0;
	memset(e, 0, sizeof(*e));
	bool predict = !strcmp(f[0], "predict");
	e->repeat = !strcmp(f[0], "repeat");
	if (n < (predict ? 5 : e->repeat ? 3 : 6))
		return -1;
	const char *split = predict ? f[4] : e->repeat ? "repeat" : f[5];
	if (!e->repeat && !split_declared(c, split))
		return -1;
	snprintf(e->split, sizeof(e->split), "%s", split);
	if (predict || e->repeat) {
		snprintf(e->from, sizeof(e->from), "%s", f[1]);
		snprintf(e->to, sizeof(e->to), "%s", f[2]);
		snprintf(e->keys, sizeof(e->keys), "%s", predict ? f[3] : "");
		snprintf(e->name, sizeof(e->name), "%.30s%s%.30s", f[1], predict ? ">" : "~", f[2]);
		snprintf(e->recorder, sizeof(e->recorder), "%s", f[0]);
	} else {
		snprintf(e->name, sizeof(e->name), "%s", f[0]);
		snprintf(e->recorder, sizeof(e->recorder), "%s", f[1]);
	}
	return 1;
}

static int read_corpus(const char *path, struct corpus *c)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int nr = 0;
	if (!f) {
		fprintf(stderr, "zabench scorecard: %s: %s\n", path, strerror(errno));
		return -1;
	}
	snprintf(c->dir, sizeof(c->dir), "%s", path);
	char *slash = strrchr(c->dir, '/');
	snprintf(slash ? slash : c->dir, sizeof(c->dir) - (size_t)(slash ? slash - c->dir : 0), "%s",
		 slash ? "" : ".");
	c->n = 0;
	c->splits_said[0] = '\0';
	c->nsplits = 0;
	while (fgets(line, sizeof(line), f)) {
		nr++;
		if (!strncmp(line, "# split ", 8) && declare_split(c, line + 8)) {
			fclose(f);
			return corpus_error(path, nr, "not \"# split WORD: what it means\" (at most 8 "
						      "splits of 15 characters)");
		}
		if (line[0] == '#')
			continue;
		if (c->n == MAX_ENTRIES) {
			fclose(f);
			return corpus_error(path, nr, "more than 128 entries");
		}
		int rc = parse_corpus_line(c, line, &c->e[c->n]);
		if (rc < 0) {
			fclose(f);
			return corpus_error(path, nr, "not \"NAME RECORDER EVENTS WORKLOAD SYSCTL "
						      "SPLIT ...\", \"predict FROM TO KEYS SPLIT\" nor "
						      "\"repeat FIRST SECOND\", SPLIT declared by a "
						      "\"# split SPLIT: ...\" line above");
		}
		c->n += rc;
	}
	fclose(f);
	return 0;
}

/* path: NAME.trace plus end, in the corpus's directory; whether it is there. */
static bool trace_named(const struct corpus *c, const char *name, const char *end, char *path,
			size_t len)
{
	snprintf(path, len, "%.900s/%.60s.trace%s", c->dir, name, end);
	return !access(path, R_OK);
}

/* The trace NAME of the corpus (NAME.trace.xz as shipped, or compressed
 * otherwise, or not at all), and the files recorded beside it. */
static void trace_files(const struct corpus *c, const char *name, char *path, size_t len,
			struct replay_opts *ro, char *zi, char *sc, size_t side)
{
	static const char *const ends[] = { ".xz", ".zst", ".gz", "" };
	size_t n = sizeof(ends) / sizeof(ends[0]), i = 0;
	while (i < n && !trace_named(c, name, ends[i], path, len))
		i++;
	if (i == n)     /* none: the replay names the shipped one */
		trace_named(c, name, ends[0], path, len);
	ro->zoneinfo = replay_side_file(path, ".zoneinfo", zi, side);
	ro->sysctl = replay_side_file(path, ".sysctl", sc, side);
}

/* The mirror of trace NAME: its options and configuration. */
static int mirror_of(const struct corpus *c, const char *name, struct replay_opts *ro, char *path,
		     size_t len, char *zi, char *sc, struct mirror *m)
{
	char err[512];
	struct trace_header *h = malloc(sizeof(*h));
	*ro = (struct replay_opts){ .events = REPLAY_PAGE, .warmup = REPLAY_WARMUP_AUTO };
	trace_files(c, name, path, len, ro, zi, sc, 1024);
	struct trace_reader *tr = h ? replay_open(path, ro, h, err, sizeof(err)) : NULL;
	if (!tr) {
		fprintf(stderr, "zabench scorecard: %s\n", h ? err : "out of memory");
		free(h);
		return -1;
	}
	trace_close(tr);
	replay_local_zoneinfo(path, ro, h);
	ro->zones = h->present ? ZONE_BY_PFN : ZONE_BY_GFP;
	mirror_machine(h, m);
	free(h);
	return 0;
}

/* Appends to config the value each of keys (comma-separated) has in
 * other: the prediction's setting. */
static void override_keys(char *config, size_t len, const char *other, const char *keys)
{
	char list[256];
	snprintf(list, sizeof(list), "%s", keys);
	for (char *k = strtok(list, ","); k; k = strtok(NULL, ",")) {
		char v[128];
		config_value(other, k, v, sizeof(v));
		size_t n = strlen(config);
		snprintf(config + n, len - n, ",%s=%s", k, v[0] ? v : "0");
	}
}

/* The scored all-orders rows of one side. */
static void scored_figures(const struct fidelity *f, double *figures)
{
	for (size_t k = 0; k < NR_SCORED; k++)
		figures[k] = fidelity_per_1000(f, scored_rows[k], -1, FID_ALL);
}

/* The kernel's figures of trace NAME, from its events alone, and the
 * trace's mirror into *m; *here (unless NULL): whether the mirror took this
 * machine's zoneinfo (a prediction's second trace lends keys from it). */
static int kernel_figures(const struct corpus *c, const char *name, double *figures,
			  uint64_t *page_allocs, struct mirror *m, bool *here)
{
	static char path[1024], zi[1024], sc[1024];
	struct replay_opts ro;
	struct replay_result r = { 0 };
	char err[512];
	if (mirror_of(c, name, &ro, path, sizeof(path), zi, sc, m))
		return -1;
	if (here)
		*here = ro.zoneinfo_here;
	int rc = fidelity_init(&r.kernel, m->nr_cpus);
	if (rc || (rc = replay_trace(NULL, path, &ro, &r, err, sizeof(err))))
		fprintf(stderr, "zabench scorecard: %s\n", rc && !r.kernel.count ? "out of memory" : err);
	else
		scored_figures(&r.kernel, figures);
	*page_allocs = r.kernel.page_allocs;
	fidelity_free(&r.kernel);
	return rc ? -1 : 0;
}

/*
 * A trace: the model's figures beside its kernel's.  A prediction: the
 * first trace replayed with the second's value of the keys, beside the
 * second's kernel.  A repeat: the second's kernel figures in the model's
 * place.
 */
static int replay_entry(const struct corpus *c, struct entry *e)
{
	static char path[1024], zi[1024], sc[1024];
	static struct mirror m, to;
	uint64_t second;
	bool second_here = false;
	if (e->repeat)      /* kernel figures only: no zoneinfo counts in them */
		return kernel_figures(c, e->from, e->kernel, &e->page_allocs, &m, NULL) ||
		       kernel_figures(c, e->to, e->model, &second, &to, NULL) ? -1 : 0;
	if (e->from[0] && kernel_figures(c, e->to, e->kernel, &e->page_allocs, &to, &second_here))
		return -1;
	struct replay_opts ro;
	const char *trace = e->from[0] ? e->from : e->name;
	if (mirror_of(c, trace, &ro, path, sizeof(path), zi, sc, &m))
		return -1;
	e->here = ro.zoneinfo_here || second_here;
	if (e->from[0])
		override_keys(m.config, sizeof(m.config), to.config, e->keys);
	za_mm_t *mm = za_mm_create(m.config);
	if (!mm) {
		fprintf(stderr, "zabench scorecard: %s: %s\n", trace, za_last_error());
		return -1;
	}
	struct replay_result r = { 0 };
	char err[512];
	int cpus = m.nr_cpus ? m.nr_cpus : za_nr_cpus(mm);
	int rc = fidelity_init(&r.kernel, cpus) || fidelity_init(&r.model, cpus) ? -1 :
		 replay_trace(mm, path, &ro, &r, err, sizeof(err));
	if (rc)
		fprintf(stderr, "zabench scorecard: %s\n", r.model.count ? err : "out of memory");
	else
		scored_figures(&r.model, e->model);
	if (!rc && !e->from[0]) {      /* a prediction's kernel is the second trace's */
		scored_figures(&r.kernel, e->kernel);
		e->page_allocs = r.kernel.page_allocs;
	}
	fidelity_free(&r.kernel);
	fidelity_free(&r.model);
	za_mm_destroy(mm);
	return rc ? -1 : 0;
}

/* Within pct of the kernel's figure, or `slack` per 1000 allocations. */
static bool within(double k, double m, double pct, double slack)
{
	return fabs(m - k) <= pct * k + slack;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return !n ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The summary of the entries of one split ("" for all but the repeats):
 * rows within 25% and 10%, the median absolute error, and the median
 * error relative to the kernel's figure where that is 5 per 1000 or more. */
static void summary(const struct corpus *c, const char *split, FILE *out)
{
	double err[MAX_ENTRIES * NR_SCORED], rel[MAX_ENTRIES * NR_SCORED];
	int n = 0, nrel = 0, in25 = 0, in10 = 0;
	for (int i = 0; i < c->n; i++) {
		const struct entry *e = &c->e[i];
		if (e->failed || (split[0] ? strcmp(e->split, split) != 0 : e->repeat))
			continue;
		for (size_t r = 0; r < NR_SCORED; r++) {
			double k = e->kernel[r], m = e->model[r];
			in25 += within(k, m, 0.25, 5);
			in10 += within(k, m, 0.10, 2);
			err[n++] = fabs(m - k);
			if (k >= 5)
				rel[nrel++] = fabs(m - k) * 100 / k;
		}
	}
	fprintf(out, "  %-6s %d of %d rows within 25%% (+5), %d within 10%% (+2); median error %.1f per "
		     "1000 allocations, %.1f%% of the %s over the %d rows of 5 or more\n",
		split[0] ? split : "all", in25, n, in10, median(err, n), median(rel, nrel),
		strcmp(split, "repeat") ? "kernel's" : "first run's", nrel);
}

/* The table of the repeats (repeats) or of the rest. */
static void print_entries(const struct corpus *c, bool repeats, FILE *out)
{
	struct table t;
	table_init(&t, 8);
	const char *const head[] = { repeats ? "first~second" : "trace", "split", "recorder", "row",
				     repeats ? "first" : "kernel", repeats ? "second" : "zonealloc",
				     "error", "within" };
	for (int i = 0; i < 8; i++)
		table_add(&t, "%s", head[i]);
	for (int i = 0; i < c->n; i++) {
		const struct entry *e = &c->e[i];
		for (size_t r = 0; r < NR_SCORED && e->repeat == repeats; r++) {
			double k = e->kernel[r], m = e->model[r];
			table_add(&t, "%s", r ? "" : e->name);
			table_add(&t, "%s", r ? "" : e->split);
			table_add(&t, "%s%s", r ? "" : e->recorder, !r && e->here ? "*" : "");
			table_add(&t, "%s", fid_row_metric(scored_rows[r]));
			if (e->failed) {
				for (int k2 = 0; k2 < 4; k2++)
					table_add(&t, "%s", k2 ? "" : "failed");
				continue;
			}
			table_add(&t, "%.1f", k);
			table_add(&t, "%.1f", m);
			table_add(&t, k >= 1 ? "%+.0f%%" : "%+.1f", k >= 1 ? (m - k) * 100 / k : m - k);
			table_add(&t, "%s", within(k, m, 0.10, 2) ? "10%" : within(k, m, 0.25, 5) ? "25%" : "NO");
		}
	}
	table_print(&t, out);
	table_free(&t);
	for (int i = 0; i < c->n; i++)
		if (c->e[i].here && c->e[i].repeat == repeats) {
			fprintf(out, "* replayed on this machine's /proc/zoneinfo: the trace (or a "
				     "prediction's second, whose keys it lends) has no zoneinfo, nor a "
				     "NAME.zoneinfo beside it\n");
			break;
		}
}

static bool has_repeats(const struct corpus *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->e[i].repeat)
			return true;
	return false;
}

static void print_scorecard(const struct corpus *c, const char *path, FILE *out)
{
	fprintf(out, "Fidelity scorecard (%s): each trace replayed with the default mirror, "
		     "the kernel's all-orders figures per 1000 page allocations beside zonealloc's; "
		     "error relative to the kernel's (absolute below 1)\n", path);
	print_entries(c, false, out);
	if (has_repeats(c)) {
		fprintf(out, "The kernel against itself: one workload recorded twice under one "
			     "setting, the second run's figures beside the first's -- the spread any "
			     "prediction of another run is read against\n");
		print_entries(c, true, out);
	}
	fprintf(out, "Summary by split (%s%s):\n", c->splits_said,
		has_repeats(c) ? "; repeat: the kernel against itself" : "");
	for (int i = 0; i < c->n; i++) {
		bool first = !c->e[i].repeat;
		for (int j = 0; j < i && first; j++)
			first = strcmp(c->e[j].split, c->e[i].split) != 0;
		if (first)
			summary(c, c->e[i].split, out);
	}
	summary(c, "", out);
	if (has_repeats(c))
		summary(c, "repeat", out);
}

/* The rows of the repeats (first's figures as "kernel", second's as
 * "zonealloc") or of the rest. */
static void json_rows(const struct corpus *c, bool repeats, FILE *out)
{
	bool first = true;
	for (int i = 0; i < c->n; i++) {
		const struct entry *e = &c->e[i];
		for (size_t r = 0; r < NR_SCORED && !e->failed && e->repeat == repeats; r++, first = false) {
			fprintf(out, "%s{\"trace\": ", first ? "" : ", ");
			json_string(out, e->name);
			fprintf(out, ", \"split\": ");
			json_string(out, e->split);
			fprintf(out, ", \"recorder\": ");
			json_string(out, e->recorder);
			fprintf(out, ", \"zoneinfo_here\": %s", e->here ? "true" : "false");
			fprintf(out, ", \"metric\": \"%s\", \"kernel\": ", fid_row_metric(scored_rows[r]));
			json_number(out, e->kernel[r]);
			fprintf(out, ", \"zonealloc\": ");
			json_number(out, e->model[r]);
			fprintf(out, "}");
		}
	}
}

static void json_scorecard(const struct corpus *c, FILE *out)
{
	fprintf(out, "{\"kind\": \"scorecard\", \"rows\": [");
	json_rows(c, false, out);
	fprintf(out, "], \"repeats\": [");
	json_rows(c, true, out);
	fprintf(out, "]}\n");
}

int run_scorecard(const char *corpus_path, FILE *txt, FILE *json)
{
	static struct corpus c;
	if (read_corpus(corpus_path, &c))
		return 2;
	int failures = 0;
	for (int i = 0; i < c.n; i++) {
		fprintf(stderr, "zabench scorecard: %s\n", c.e[i].name);
		if ((c.e[i].failed = replay_entry(&c, &c.e[i]) != 0))
			failures++;
	}
	if (txt)
		print_scorecard(&c, corpus_path, txt);
	if (json)
		json_scorecard(&c, json);
	return failures ? 1 : 0;
}

int scorecard_command(int argc, char **argv)
{
	char corpus[1024];
	const char *path = find_bench_file("traces/corpus.txt", corpus, sizeof(corpus));
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--corpus") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--help")) {
			printf("usage: zabench scorecard [--corpus FILE] [--json]\n"
			       "  every trace of the corpus (default: the shipped one, %s) replayed with\n"
			       "  the default mirror, the kernel's all-orders rows beside the model's, and\n"
			       "  a summary per split (docs/fidelity.md)\n", corpus);
			return 0;
		} else
			return usage_error("unknown or incomplete scorecard option '%s'", argv[i]);
	}
	return run_scorecard(path, json ? NULL : stdout, json ? stdout : NULL);
}
