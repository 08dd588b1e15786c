/*
 * `zabench report`: every experiment with short defaults, A/B for every
 * switch that has one, into bench-results/<date-time>/: report.md with the
 * tables, one JSON file per run, and PNG plots drawn by plot.py when
 * matplotlib is available.
 */
#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "doc.h"
#include "seeds.h"

#include <math.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef ZA_BENCH_DIR
#define ZA_BENCH_DIR "bench"
#endif

/* The whole report's time (minutes) within which rounds are added for open
 * verdicts: `make bench` (quick) stays under 10 minutes on 2 cores. */
#define QUICK_BUDGET_MIN 8.0
#define FULL_BUDGET_MIN 45.0

struct report_opts {
	bool quick;
	char dir[512];
	const char *only;       /* a comma list of experiments, or NULL: all */
	double seconds;         /* per iteration, over the mode's; 0: the mode's */
	double deadline;        /* now_seconds() past which no round is added */
	double base_seconds;    /* the runs so far without their added rounds */
	int runs_done;
};

/* One run of the report, and what the summary says of it. */
struct run_record {
	char id[64];
	char title[320];
	const struct experiment *exp;
	char args[256];
	bool ab;
	const struct ab_switch *sw;     /* the first switch compared */
	char metric[80];                /* headline, with its unit */
	double before, after;           /* its medians */
	struct comparison cmp;
	int niters, extra_rounds;
	const struct seed_figure *fig;
	char mechanism[80];
	double mech_before, mech_after;
};

static int mkdir_p(const char *path)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	struct stat st;
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -1;
	if (stat(buf, &st) || !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* Splits "--order 0 --ab x" into argv after the experiment's name. */
static int split_args(char *line, char **argv, int max)
{
	int n = 0;
	for (char *tok = strtok(line, " "); tok && n < max - 1; tok = strtok(NULL, " "))
		argv[n++] = tok;
	argv[n] = NULL;
	return n;
}

static FILE *open_in(const char *dir, const char *name, const char *mode)
{
	char path[1280];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, mode);
	if (!f)
		fprintf(stderr, "zabench: cannot open %s: %s\n", path, strerror(errno));
	return f;
}

/* A counter of a variant or, if there is none of that name, the sum of the
 * family it names ("pgscan_direct": pgscan_direct_DMA32, ..._Normal...). */
static double counter_sum(const struct variant *v, const char *name)
{
	int exact = stat_index(name);
	if (exact >= 0)
		return (double)v->counters[exact];
	double sum = 0;
	size_t len = strlen(name);
	for (int c = 0; c < za_stat_count(); c++)
		if (!strncmp(za_stat_name(c), name, len) && za_stat_name(c)[len] == '_')
			sum += (double)v->counters[c];
	return sum;
}

/* The mechanism counter of a variant: per operation, or per the figure's
 * own denominator. */
static double mechanism_value(const struct seed_figure *f, const struct variant *v)
{
	double den = f->per ? counter_sum(v, f->per) : (double)v->ops;
	return den ? counter_sum(v, f->counter) / den : NAN;
}

static void record_summary(const struct bench *b, struct run_record *rec)
{
	const struct metric_def *m = &b->metrics[b->headline];
	snprintf(rec->metric, sizeof(rec->metric), "%s (%s)", m->name, m->unit);
	rec->niters = b->variants[0].niters;
	rec->extra_rounds = b->extra_rounds;
	rec->ab = is_ab(b);
	if (!rec->ab)
		return;
	const struct variant *v0 = &b->variants[0], *v1 = &b->variants[1];
	struct summary s;
	summarize(v0->values[b->headline], v0->niters, &s);
	rec->before = s.median;
	summarize(v1->values[b->headline], v1->niters, &s);
	rec->after = s.median;
	compare_ab(b, b->headline, &rec->cmp);
	rec->sw = find_switch(b->opts.ab, strcspn(b->opts.ab, ",="));
	rec->fig = rec->sw ? seed_figure(rec->sw->name, b->exp->name, rec->args) : NULL;
	if (rec->fig) {
		snprintf(rec->mechanism, sizeof(rec->mechanism), "%s%s%s", rec->fig->counter,
			 rec->fig->per ? " per " : "", rec->fig->per ? rec->fig->per : "");
		rec->mech_before = mechanism_value(rec->fig, v0);
		rec->mech_after = mechanism_value(rec->fig, v1);
	}
}

/* A file zabench ships (plot.py, traces/...): the source tree's, or the
 * installed one (beside zabench's bin directory, or where the build's
 * prefix put it). */
const char *find_bench_file(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", ZA_BENCH_DIR, name);
	if (!access(path, R_OK))
		return path;
#ifdef ZA_BENCH_INSTALL_DIR
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		*strrchr(exe, '/') = 0;
		snprintf(path, len, "%s/%s/%s", exe, ZA_BENCH_INSTALL_RELDIR, name);
		if (!access(path, R_OK))
			return path;
	}
	snprintf(path, len, "%s/%s", ZA_BENCH_INSTALL_DIR, name);
#endif
	return path;
}

/* plot.py: $ZABENCH_PLOT, or the one zabench ships. */
static const char *find_plot_script(char *path, size_t len)
{
	const char *env = getenv("ZABENCH_PLOT");
	return env ? env : find_bench_file("plot.py", path, len);
}

/* "@traces/NAME" in a report entry: the traces zabench ships. */
static void expand_traces(const char *args, char *out, size_t len)
{
	char dir[1024];
	const char *at = strstr(args, "@traces/");
	if (!at) {
		snprintf(out, len, "%s", args);
		return;
	}
	find_bench_file("traces", dir, sizeof(dir));
	snprintf(out, len, "%.*s%s/%s", (int)(at - args), args, dir, at + strlen("@traces/"));
	if (strstr(out + (at - args), "@traces/")) {
		char rest[512];
		snprintf(rest, sizeof(rest), "%s", out);
		expand_traces(rest, out, len);
	}
}

/* A run's outputs in the report's directory, <id>.json and <id>.txt: each
 * NULL if it could not be opened (said on stderr). */
static void open_outputs(const struct report_opts *ro, const struct run_record *rec,
			 FILE **json, FILE **txt)
{
	char name[96];
	snprintf(name, sizeof(name), "%s.json", rec->id);
	*json = open_in(ro->dir, name, "w");
	snprintf(name, sizeof(name), "%s.txt", rec->id);
	*txt = open_in(ro->dir, name, "w");
}

/* Closes what open_outputs opened; 0 if both were open, else -1. */
static int close_outputs(FILE *json, FILE *txt)
{
	if (json)
		fclose(json);
	if (txt)
		fclose(txt);
	return json && txt ? 0 : -1;
}

/* A --sweep entry: its runs' JSON (one document) and tables. */
static int run_sweep_entry(const struct bench *b, int argc, char **argv, struct report_opts *ro,
			   struct run_record *rec)
{
	FILE *json, *txt;
	open_outputs(ro, rec, &json, &txt);
	int rc = -1;
	double t0 = now_seconds();
	if (json && txt) {
		struct sweep_out o = { json, txt, ro->quick, ro->seconds };
		rc = run_sweep(argc, argv, b->opts.sweep, &o) ? -1 : 0;
	}
	ro->base_seconds += now_seconds() - t0;
	ro->runs_done++;
	snprintf(rec->metric, sizeof(rec->metric), "sweep of %s", b->opts.sweep);
	close_outputs(json, txt);
	return rc;
}

/* A run's JSON and tables; 0, or -1 if they could not be written. */
static int write_run(const struct bench *b, const struct report_opts *ro,
		     const struct run_record *rec)
{
	FILE *json, *txt;
	open_outputs(ro, rec, &json, &txt);
	if (json && txt) {
		print_json(b, json);
		print_table(b, txt);
	}
	return close_outputs(json, txt);
}

/* Rounds added while a verdict is open share what is left of the budget,
 * once the runs to come are paid for at the average so far, equally among
 * those runs: the time until which this run may add them. */
static double extend_until(const struct report_opts *ro, int runs_left)
{
	double now = now_seconds(), average = ro->runs_done ? ro->base_seconds / ro->runs_done : 0;
	double spare = ro->deadline - now - average * runs_left;
	return now + average + fmax(0, spare) / runs_left;
}

/* Runs one report entry; writes <id>.json and <id>.txt.  Returns 0 or -1. */
static int run_entry(const struct experiment *e, const char *args, struct report_opts *ro,
		     struct run_record *rec, int seq, int runs_left)
{
	char line[1600], expanded[1536], *argv[32];
	expand_traces(args, expanded, sizeof(expanded));
	snprintf(line, sizeof(line), "%s %s", e->name, expanded);
	snprintf(rec->args, sizeof(rec->args), "%s ", args);
	snprintf(rec->id, sizeof(rec->id), "%02d-%s", seq, e->name);
	rec->exp = e;
	int argc = split_args(line, argv, 32);

	static struct bench b;
	if (bench_prepare(&b, argc, argv))
		return -1;
	b.opts.quick = ro->quick;
	if (ro->seconds)
		b.opts.seconds = ro->seconds;
	b.opts.extend_until = extend_until(ro, runs_left);
	snprintf(rec->title, sizeof(rec->title), "%s", b.title);
	fprintf(stderr, "zabench report: %s\n", rec->title);
	if (b.opts.sweep)
		return run_sweep_entry(&b, argc, argv, ro, rec);
	if (bench_run(&b))
		return -1;
	ro->base_seconds += b.base_seconds;
	ro->runs_done++;
	record_summary(&b, rec);
	int rc = write_run(&b, ro, rec);
	bench_finish(&b);
	return rc;
}

/* The fidelity scorecard of the shipped corpus: kept in the report's
 * directory (scorecard.txt, scorecard.json) and printed.  0, or -1. */
static int write_scorecard(const struct report_opts *ro)
{
	char corpus[1024], line[512];
	FILE *txt = open_in(ro->dir, "scorecard.txt", "w+"), *json = open_in(ro->dir, "scorecard.json", "w");
	int rc = -1;
	if (txt && json) {
		rc = run_scorecard(find_bench_file("traces/corpus.txt", corpus, sizeof(corpus)), txt, json);
		rewind(txt);
		putchar('\n');
		while (fgets(line, sizeof(line), txt))
			fputs(line, stdout);
	}
	if (txt)
		fclose(txt);
	if (json)
		fclose(json);
	return rc ? -1 : 0;
}

/* Draws the plots; returns NULL or why there are none. */
static const char *draw_plots(const char *dir)
{
	static char why[640];
	char path[1024];
	const char *script = find_plot_script(path, sizeof(path));
	if (access(script, R_OK)) {
		snprintf(why, sizeof(why), "the plot script %.560s is missing", script);
		return why;
	}
	/* The first interpreter that has matplotlib: $ZABENCH_PYTHON, python3 on
	 * the PATH (which may be a pyenv without it), Debian's. */
	const char *pythons[] = { getenv("ZABENCH_PYTHON"), "python3", "/usr/bin/python3" };
	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		if (!pythons[i])
			continue;
		pid_t pid = fork();
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);
			if (devnull >= 0)
				dup2(devnull, STDERR_FILENO);
			execlp(pythons[i], pythons[i], script, dir, (char *)NULL);
			_exit(127);
		}
		int status = 0;
		if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)
			return NULL;
	}
	snprintf(why, sizeof(why), "no python3 with matplotlib was found "
		 "(scripts/install-deps bench installs Debian's python3-matplotlib)");
	return why;
}

/* "+4.2% [-1.0%, +9.9%]" */
static void format_change(const struct comparison *c, char *out, size_t len)
{
	if (c->verdict == VERDICT_NA)
		snprintf(out, len, "n/a");
	else
		snprintf(out, len, "%+.1f%% [%+.1f%%, %+.1f%%]", c->change * 100 + 0.0,
			 c->lo * 100 + 0.0, c->hi * 100 + 0.0);
}

/* A counter's value; per operation, scaled to read: "2.50/1M ops". */
static void format_counter(double v, bool per_op, char *out, size_t len)
{
	double scale = 1;
	const char *ops = per_op && v == v ? op_scale(v, &scale) : NULL;
	format_value(v * scale, out, len);
	if (ops && v != 0)
		snprintf(out + strlen(out), len - strlen(out), "/%s", ops);
}

static void summary_row(struct doc *d, const struct run_record *r)
{
	char seed[32], change[64], medians[96], mech[160], a[32], b[32], sw[96], verdict[64];
	snprintf(seed, sizeof(seed), "%s", !r->sw ? "-" : r->sw->seed ? r->sw->seed :
					   r->sw->since ? r->sw->since : "-");
	const char *colon = strrchr(r->title, ':');
	snprintf(sw, sizeof(sw), "%s", colon ? colon + 2 : "");
	format_value(r->before, a, sizeof(a));
	format_value(r->after, b, sizeof(b));
	snprintf(medians, sizeof(medians), "%s → %s", a, b);
	format_change(&r->cmp, change, sizeof(change));
	snprintf(verdict, sizeof(verdict), "%s", verdict_name(r->cmp.verdict));
	mech[0] = 0;
	if (r->fig) {
		format_counter(r->mech_before, !r->fig->per, a, sizeof(a));
		format_counter(r->mech_after, !r->fig->per, b, sizeof(b));
		snprintf(mech, sizeof(mech), "%s: %s → %s", r->mechanism, a, b);
	}
	char exp[256];
	snprintf(exp, sizeof(exp), "%.*s", (int)(colon ? colon - r->title : (long)strlen(r->title)),
		 r->title);
	const char *cells[] = { seed, sw, exp, r->metric, medians, change, verdict, mech,
				r->fig && r->fig->published ? r->fig->published : "-" };
	doc_table_row(d, cells);
}

/* "pcp_high_order (seed 000): better in 4 of 10 runs (repeat --order 3
 * +80.2%, ...); worse in 1 (...); within noise in 5." */
static void write_switch_line(struct doc *d, const struct ab_switch *s,
			      const struct run_record *recs, int n)
{
	static const enum verdict order[] = { VERDICT_BETTER, VERDICT_WORSE, VERDICT_NOISE,
					      VERDICT_INCONCLUSIVE };
	char text[2048];
	int runs = 0, len;
	for (int i = 0; i < n; i++)
		runs += recs[i].ab && recs[i].sw == s;
	if (!runs)
		return;
	len = snprintf(text, sizeof(text), "%s (%s%s):", s->name,
		       s->seed ? "seed " : s->since ? "kernel " : "hardening",
		       s->seed ? s->seed : s->since ? s->since : "");
	for (size_t v = 0; v < sizeof(order) / sizeof(order[0]); v++) {
		int count = 0;
		for (int i = 0; i < n; i++)
			count += recs[i].ab && recs[i].sw == s && recs[i].cmp.verdict == order[v];
		if (!count)
			continue;
		len += snprintf(text + len, sizeof(text) - (size_t)len, " %s in %d of %d",
				verdict_name(order[v]), count, runs);
		for (int i = 0, k = 0; order[v] != VERDICT_NOISE && i < n; i++) {
			const struct run_record *r = &recs[i];
			if (!r->ab || r->sw != s || r->cmp.verdict != order[v] || len > 1900)
				continue;
			const char *colon = strrchr(r->title, ':');
			len += snprintf(text + len, sizeof(text) - (size_t)len, "%s%.*s %+.1f%%",
					k++ ? ", " : " (", (int)(colon ? colon - r->title : 40), r->title,
					r->cmp.change * 100);
		}
		len += snprintf(text + len, sizeof(text) - (size_t)len, "%s;",
				order[v] != VERDICT_NOISE ? ")" : "");
	}
	text[len - 1] = '.';
	doc_para(d, text);
}

/* Seed by seed, then the switches that are not seeds: every A/B run. */
static void write_summary(struct doc *d, const struct run_record *recs, int n)
{
	static const char *const header[] = {
		"seed", "switch", "experiment", "headline metric", "median before → after",
		"change [95% interval]", "verdict", "mechanism counter before → after",
		"published (the seed's posting)"
	};
	doc_heading(d, 2, "summary", "Summary: does each seed help here?");
	for (const struct ab_switch *s = ab_switches; s->name; s++)
		write_switch_line(d, s, recs, n);
	doc_table_begin(d, 9, header);
	for (const struct ab_switch *s = ab_switches; s->name; s++)
		for (int i = 0; i < n; i++)
			if (recs[i].ab && recs[i].sw == s)
				summary_row(d, &recs[i]);
	for (int i = 0; i < n; i++)
		if (recs[i].ab && !recs[i].sw)
			summary_row(d, &recs[i]);
	doc_table_end(d);

	int count[5] = { 0 }, open = 0;
	for (int i = 0; i < n; i++) {
		if (!recs[i].ab)
			continue;
		count[recs[i].cmp.verdict]++;
		open += recs[i].cmp.verdict == VERDICT_NOISE && comparison_open(&recs[i].cmp);
	}
	char text[1024];
	snprintf(text, sizeof(text),
		 "Of %d A/B runs: %d better, %d worse, %d within noise, %d inconclusive "
		 "(too few iterations for a %.0f%% interval).  %d of the within-noise runs still "
		 "had an interval reaching past ±3%% when their added rounds ran out (4 times the "
		 "iterations, or their share of the time budget): "
		 "no effect was seen there, but one of that size is not ruled out either.",
		 count[1] + count[2] + count[3] + count[4], count[VERDICT_BETTER],
		 count[VERDICT_WORSE], count[VERDICT_NOISE], count[VERDICT_INCONCLUSIVE],
		 CONFIDENCE * 100, open);
	doc_para(d, text);
}

static void write_method(struct doc *d, const struct report_opts *ro)
{
	char text[2048];
	doc_heading(d, 3, "machine", "What this machine can and cannot show");
	snprintf(text, sizeof(text),
		 "This machine has %ld cores and %.1f GiB.  The seeds were measured on servers with "
		 "2 to 4 sockets and dozens to hundreds of CPUs, where their gains come from less "
		 "contention on the zone lock and the slab list_lock.  %ld cores make little "
		 "contention: here a seed's mechanism shows in its counters (zone-lock acquisitions, "
		 "hold times, list_lock acquisitions, pages zeroed, activations), which are exact, "
		 "while the wall-clock figures mostly show its cost on an uncontended machine and "
		 "often move less than their noise.  Runs with more threads than cores measure the "
		 "scheduler as much as the allocator.  nr_cpus=224 sizes SLUB as a 224-CPU server "
		 "would (seed 002) without its CPUs.",
		 machine_cores(), (double)machine_memory() / (1 << 30), machine_cores());
	doc_para(d, text);
	doc_heading(d, 3, "method", "How to read it");
	snprintf(text, sizeof(text),
		 "\"before\" is the switch off (the kernel without the seed), \"after\" on.  Each "
		 "A/B creates both systems in one process, runs one warm-up iteration of each, then "
		 "alternates them (A B, B A, ...) so that a drift of the machine hits both alike.  "
		 "Change: the median of the after/before ratios of every pair of iterations (near the "
		 "ratio of the medians), positive when \"after\" is better whichever way the metric "
		 "points.  Interval: %.0f%% confidence, Hodges-Lehmann from the "
		 "Mann-Whitney rank test on the logarithms of the samples (distribution-free; it "
		 "needs at least 4 iterations a side).  Verdict: better or worse when the interval "
		 "excludes no change, within noise when it holds it, inconclusive when there were "
		 "too few iterations.  %s  Counters are exact and summed over the measured "
		 "iterations.  Raw numbers: the .json file of each run beside this report.",
		 CONFIDENCE * 100,
		 ro->quick ? "Quick mode: 5 iterations of 0.3 s a variant, then more rounds while "
			     "the headline interval still holds no change but reaches past ±3% and "
			     "the time budget lasts."
			   : "Full mode: 5 iterations of 1 s a variant, then more rounds while the "
			     "headline interval is open and the time budget lasts.");
	doc_para(d, text);
}

static void write_section(struct doc *d, const struct run_record *r, bool plots)
{
	char name[96], anchor[80];
	snprintf(anchor, sizeof(anchor), "run-%.63s", r->id);
	doc_heading(d, 2, anchor, r->title);
	if (r->exp->notes)
		doc_para(d, r->exp->notes);
	if (plots) {
		snprintf(name, sizeof(name), "%.63s.png", r->id);
		doc_image(d, name, r->title);
	}
	snprintf(name, sizeof(name), "%.63s.txt", r->id);
	doc_pre_file(d, name);
}

/* The fidelity scorecard, if the report has one (write_scorecard). */
static void write_scorecard_section(struct doc *d, bool plots)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s/scorecard.txt", d->dir);
	if (access(path, R_OK))
		return;
	doc_heading(d, 2, "scorecard", "Fidelity scorecard");
	doc_para(d, "Every trace of bench/traces/corpus.txt replayed with the default mirror: the "
		    "kernel's per-CPU list figures beside zonealloc's, and a summary per split "
		    "(docs/fidelity.md says how the corpus was recorded and split).");
	doc_pre_file(d, "scorecard.txt");
	if (plots)
		doc_image(d, "scorecard.png", "fidelity scorecard: the kernel's figures against zonealloc's");
}

static void write_document(struct doc *d, const struct run_record *recs, int n,
			   const char *no_plots, int failures, const struct report_opts *ro)
{
	time_t t = time(NULL);
	char when[64], title[128], text[1024];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	snprintf(title, sizeof(title), "zabench report, %s%s", when, ro->quick ? " (quick)" : "");
	doc_begin(d, title);
	if (no_plots) {
		snprintf(text, sizeof(text), "No plots: %s.", no_plots);
		doc_para(d, text);
	}
	if (failures) {
		snprintf(text, sizeof(text), "%d runs failed; see the output of zabench report.",
			 failures);
		doc_para(d, text);
	}
	write_summary(d, recs, n);
	write_method(d, ro);
	for (int i = 0; i < n; i++)
		write_section(d, &recs[i], !no_plots);
	write_scorecard_section(d, !no_plots);
	doc_end(d);
}

static void write_report(const char *name, bool html, const struct run_record *recs, int n,
			 const char *no_plots, int failures, const struct report_opts *ro)
{
	struct doc d = { .f = open_in(ro->dir, name, "w"), .html = html, .dir = ro->dir };
	if (!d.f)
		return;
	write_document(&d, recs, n, no_plots, failures, ro);
	fclose(d.f);
}

/* Does the comma list only (NULL: everything) name the experiment? */
static bool selected(const char *only, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = only; p && *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
	return !only;
}

int run_report(int argc, char **argv)
{
	struct report_opts ro = { 0 };
	double budget_min = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			ro.quick = true;
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			snprintf(ro.dir, sizeof(ro.dir), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			ro.only = argv[++i];
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			char *end;
			ro.seconds = strtod(argv[++i], &end);
			if (*end || !(ro.seconds > 0 && ro.seconds <= 3600))
				return usage_error("bad --seconds '%s'", argv[i]);
		}
		else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
			char *end;
			budget_min = strtod(argv[++i], &end);
			if (*end || !(budget_min >= 0 && budget_min <= 1440))
				return usage_error("bad --budget '%s' (minutes, 0..1440)", argv[i]);
		} else
			return usage_error("unknown or incomplete report option '%s'", argv[i]);
	}
	for (const char *p = ro.only; p && *p; p += strcspn(p, ","), p += *p == ',') {
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, ","), p);
		if (!find_experiment(name) && strcmp(name, "scorecard"))
			return usage_error("--only: unknown experiment '%s'", name);
	}
	if (!*ro.dir) {
		time_t t = time(NULL);
		char stamp[64];
		strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H%M%S", localtime(&t));
		snprintf(ro.dir, sizeof(ro.dir), "bench-results/%s", stamp);
	}
	if (mkdir_p(ro.dir)) {
		fprintf(stderr, "zabench: cannot create %s: %s\n", ro.dir, strerror(errno));
		return 1;
	}

	/* The budget bounds the rounds added for open verdicts, not the runs. */
	if (budget_min < 0)
		budget_min = ro.quick ? QUICK_BUDGET_MIN : FULL_BUDGET_MIN;
	double t0 = now_seconds();
	ro.deadline = t0 + budget_min * 60;
	int total = 0;
	for (int i = 0; experiments[i]; i++)
		for (int r = 0; selected(ro.only, experiments[i]->name) && experiments[i]->report_runs &&
				experiments[i]->report_runs[r]; r++)
			total++;
	static struct run_record recs[128];
	int n = 0, failures = 0;
	for (int i = 0; experiments[i]; i++) {
		const struct experiment *e = experiments[i];
		if (!selected(ro.only, e->name))
			continue;
		for (int r = 0; e->report_runs && e->report_runs[r] && n < 128; r++) {
			memset(&recs[n], 0, sizeof(recs[n]));
			if (run_entry(e, e->report_runs[r], &ro, &recs[n], n + 1, total - n - failures))
				failures++;
			else
				n++;
		}
	}
	if (selected(ro.only, "scorecard") && write_scorecard(&ro))
		failures++;
	const char *no_plots = draw_plots(ro.dir);
	write_report("report.md", false, recs, n, no_plots, failures, &ro);
	write_report("report.html", true, recs, n, no_plots, failures, &ro);
	printf("zabench: %d runs in %.0f s; report: %s/report.md and report.html%s\n", n,
	       now_seconds() - t0, ro.dir, no_plots ? " (without plots)" : "");
	return failures ? 1 : 0;
}
