/*
 * zabench's command line: the help, one experiment's arguments parsed into
 * a struct bench (bench_prepare), --ab's spec, and usage errors with a
 * "did you mean".  main (zabench.c) dispatches the subcommands; it, the
 * engine (runner.c) and what runs experiments from argument lists
 * (sweep.c, report.c) call in here, and nothing here runs an experiment.
 */
#include "cli.h"
#include "seeds.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Help
 * ------------------------------------------------------------------------ */
static void usage_lines(FILE *out)
{
	fprintf(out,
		"usage: zabench <experiment> [--threads N] [--seconds S] [--iterations K]\n"
		"               [--config STR] [--ab SWITCH[=A:B][,SWITCH...]] [--json]\n"
		"               [--order K] [--pages N] [--size N] [--sizes N,N,...]\n"
		"               [--io-size PCT] [--dir DIR]\n"
		"               [--allocators A,B,...] [--benchmarks B,...] [--scale X]  (malloc)\n"
		"               [--sweep KEY=V1,V2,...]\n"
		"       zabench replay TRACE [--zone-policy pfn|model] [--events page,slab]\n"
		"                      [--warmup N] [--start kernel|empty] [--predict TRACE2]\n"
		"                      [--zoneinfo FILE|none] [--sysctl FILE] [--model-trace FILE]\n"
		"                      [options above]\n"
		"       zabench report [--quick] [--out DIR] [--only EXP,...] [--budget MIN]\n"
		"                      [--seconds S]\n"
		"       zabench record -o FILE [--slab] [--buffer-kb N] [--pipe] -- COMMAND [ARGS...]\n"
		"       zabench scorecard [--corpus FILE] [--json]\n"
		"       zabench top [PID] [--system N] [--interval S] [--count N] [--json]\n"
		"                   [--once --report NAME]\n"
		"       zabench list\n");
}

static void list_switches(FILE *out)
{
	fprintf(out, "switches --ab compares (SWITCH: 0 against 1; SWITCH=A:B: A against B;\n"
		     "any configuration key of za_mm_create works the same way):\n");
	for (const struct ab_switch *s = ab_switches; s->name; s++) {
		char seed[16];
		snprintf(seed, sizeof(seed), "%s%s", s->seed ? "seed " : "",
			 s->seed ? s->seed : s->since ? s->since : "");
		fprintf(out, "  %-23s %-4s %-8s %s\n", s->name, s->values, seed, s->what);
	}
}

static void list_experiments(FILE *out)
{
	for (int i = 0; experiments[i]; i++)
		fprintf(out, "  %-14s %s\n", experiments[i]->name, experiments[i]->summary);
}

void print_list(FILE *out)
{
	fprintf(out, "experiments:\n");
	list_experiments(out);
	fputc('\n', out);
	list_switches(out);
}

void print_usage(FILE *out)
{
	usage_lines(out);
	fprintf(out,
		"\n  --seconds S     length of one measured iteration (default 1)\n"
		"  --iterations K  measured iterations per variant (default 5), after one warm-up\n"
		"  --config STR    configuration for za_mm_create, over the experiment's defaults\n"
		"  --ab X          compare X=0 (\"before\") with X=1 (\"after\"), or X=A with X=B\n"
		"  --json          one JSON object instead of the tables\n"
		"  --sweep K=V,... the experiment once per value of configuration key K, then\n"
		"                  a table of each metric against the value\n\n");
	print_list(out);
}

/* ------------------------------------------------------------------------
 * Usage errors
 * ------------------------------------------------------------------------ */
/* Edit distance, for "did you mean": small strings only. */
static int distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), row[64];
	if (la > 63 || lb > 63)
		return 99;
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int up = row[j];
			int sub = diag + (a[i - 1] != b[j - 1]);
			row[j] = sub < up + 1 ? sub : up + 1;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			diag = up;
		}
	}
	return row[lb];
}

/* The closest of names to word, if it is close enough to be a typo. */
static const char *nearest(const char *word, const char *const *names, int n)
{
	const char *best = NULL;
	int bestd = 99;
	for (int i = 0; i < n; i++) {
		int d = distance(word, names[i]);
		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	return bestd <= (strlen(word) > 6 ? 3 : 2) ? best : NULL;
}

static void short_usage(void)
{
	fprintf(stderr, "usage: zabench <experiment> [options] | zabench report [--quick] | zabench list\n"
			"       (zabench --help: the experiments, their options and the --ab switches)\n");
}

/* The message, a "did you mean", and the short usage; returns 2. */
static int usage_hint(const char *what, const char *word, const char *suggestion)
{
	fprintf(stderr, "zabench: %s '%s'", what, word);
	if (suggestion)
		fprintf(stderr, "; did you mean '%s'?", suggestion);
	fprintf(stderr, "\n");
	short_usage();
	return 2;
}

int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "zabench: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	short_usage();
	return 2;
}

static int unknown_experiment(const char *name)
{
	const char *names[64];
	int n = 0;
	for (int i = 0; experiments[i] && n < 60; i++)
		names[n++] = experiments[i]->name;
	names[n++] = "report";
	names[n++] = "record";
	names[n++] = "scorecard";
	names[n++] = "top";
	names[n++] = "list";
	return usage_hint("unknown experiment", name, nearest(name, names, n));
}

/* ------------------------------------------------------------------------
 * --ab's spec
 * ------------------------------------------------------------------------ */
/*
 * "--ab pcp_high_order,slub_max_order=3:4" -> before "pcp_high_order=0,
 * slub_max_order=3", after "...=1,...=4".  Returns false on a malformed spec.
 */
bool ab_part(const char *spec, int which, char *out, size_t len)
{
	char buf[512];
	size_t n = 0;
	snprintf(buf, sizeof(buf), "%s", spec);
	out[0] = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '=');
		const char *value = which ? "1" : "0";
		if (eq) {
			char *colon = strchr(eq + 1, ':');
			if (!colon || colon == eq + 1 || !colon[1] || strchr(colon + 1, ':'))
				return false;
			*eq = *colon = 0;
			value = which ? colon + 1 : eq + 1;
		}
		if (!*tok)
			return false;
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, ",%s=%s", tok, value);
	}
	return n > 0 && n < len;
}

/* "pcp_high_order,slub_max_order=3:4" -> "pcp_high_order 0 → 1, slub_max_order 3 → 4" */
static void describe_ab(const char *ab, char *out, size_t len)
{
	char before[512], after[512];
	size_t n = 0;
	out[0] = 0;
	if (!ab_part(ab, 0, before, sizeof(before)) || !ab_part(ab, 1, after, sizeof(after)))
		return;
	/* the two lists have the same keys in the same order: ",k=a" ",k=b" */
	char *sb, *sa, *tb = strtok_r(before, ",", &sb), *ta = strtok_r(after, ",", &sa);
	for (; tb && ta; tb = strtok_r(NULL, ",", &sb), ta = strtok_r(NULL, ",", &sa)) {
		char *eb = strchr(tb, '='), *ea = strchr(ta, '=');
		*eb = 0;
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s %s → %s", n ? ", " : "",
				      tb, eb + 1, ea + 1);
	}
}

/* ------------------------------------------------------------------------
 * One experiment's arguments
 * ------------------------------------------------------------------------ */
bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* At most MAX_SIZES sizes; a list too long to copy is refused, not cut. */
static bool parse_sizes(const char *s, struct bench_opts *o)
{
	char buf[256];
	if ((size_t)snprintf(buf, sizeof(buf), "%s", s) >= sizeof(buf))
		return false;
	o->nsizes = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		if (o->nsizes == MAX_SIZES || !parse_long(tok, 1, 1L << 30, &o->sizes[o->nsizes]))
			return false;
		o->nsizes++;
	}
	return o->nsizes > 0;
}

/* How an option's value goes into struct bench_opts. */
enum opt_kind {
	OPT_FLAG,               /* no value: a bool set */
	OPT_STRING,             /* a const char *, as given */
	OPT_INT,                /* an int in [lo, hi] */
	OPT_LONG,               /* a long in [lo, hi] */
	OPT_REAL,               /* a double in (0, hi] */
	OPT_SIZES,              /* --sizes' list */
	OPT_HELP,               /* no value: the help, and exit */
};

/* An option, its field and, for a number, its range and the message for a
 * value outside it. */
struct opt_spec {
	const char *name;
	enum opt_kind kind;
	size_t field;           /* offsetof(struct bench_opts, ...) */
	long lo, hi;
	const char *bad;
};

#define OPT(name, kind, field, lo, hi, bad) \
	{ name, kind, offsetof(struct bench_opts, field), lo, hi, bad }
#define OPT_STR(name, field) OPT(name, OPT_STRING, field, 0, 0, NULL)

static const struct opt_spec opt_specs[] = {
	OPT("threads", OPT_INT, threads, 1, 1024, "bad --threads '%s' (1..1024)"),
	OPT("seconds", OPT_REAL, seconds, 0, 3600, "bad --seconds '%s'"),
	OPT("iterations", OPT_INT, iterations, 1, MAX_ITERS, "bad --iterations '%s' (1..64)"),
	OPT_STR("config", config),
	OPT_STR("ab", ab),
	OPT("json", OPT_FLAG, json, 0, 0, NULL),
	OPT("order", OPT_INT, order, 0, 14, "bad --order '%s' (0..14)"),
	OPT("pages", OPT_LONG, pages, 1, 1L << 24, "bad --pages '%s'"),
	OPT("sizes", OPT_SIZES, sizes, 0, 0,
	    "bad --sizes '%s' (at most 16 sizes of 1..2^30 bytes)"),
	OPT("size", OPT_LONG, size, 1, 1L << 20, "bad --size '%s'"),
	OPT("io-size", OPT_INT, io_size, 0, 90, "bad --io-size '%s' (0..90 percent of memory)"),
	OPT_STR("dir", dir),
	OPT_STR("allocators", allocators),
	OPT_STR("benchmarks", benchmarks),
	OPT("scale", OPT_REAL, scale, 0, 100, "bad --scale '%s' (0..100)"),
	OPT_STR("sweep", sweep),
	OPT_STR("predict", predict),
	OPT_STR("zone-policy", zone_policy),
	OPT_STR("events", events),
	OPT_STR("zoneinfo", zoneinfo),
	OPT_STR("sysctl", sysctl),
	OPT_STR("start", start),
	OPT_STR("model-trace", model_trace),
	OPT("warmup", OPT_LONG, warmup, 0, 1L << 40, "bad --warmup '%s' (page allocations)"),
	{ "help", OPT_HELP, 0, 0, 0, NULL },
};
#define NR_OPTS (sizeof(opt_specs) / sizeof(opt_specs[0]))
/* getopt's value for opt_specs[i] is OPT_VAL + i: distinct values, or
 * getopt would take an abbreviation of several (--s) for the first. */
#define OPT_VAL 256

/* Takes an option's value into o: 0, or the exit status of a usage error. */
static int take_option(const struct opt_spec *s, const char *arg, struct bench_opts *o)
{
	void *field = (char *)o + s->field;
	char *end;
	long v;
	switch (s->kind) {
	case OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case OPT_STRING:
		*(const char **)field = arg;
		return 0;
	case OPT_INT:
	case OPT_LONG:
		if (!parse_long(arg, s->lo, s->hi, &v))
			return usage_error(s->bad, arg);
		if (s->kind == OPT_INT)
			*(int *)field = (int)v;
		else
			*(long *)field = v;
		return 0;
	case OPT_REAL: {
		double d = strtod(arg, &end);
		if (*end || !(d > 0 && d <= s->hi))
			return usage_error(s->bad, arg);
		*(double *)field = d;
		return 0;
	}
	case OPT_SIZES:
		return parse_sizes(arg, o) ? 0 : usage_error(s->bad, arg);
	case OPT_HELP:
		print_usage(stdout);
		exit(0);
	}
	return 0;
}

/* An option getopt did not take: a known one without its value, or a
 * "did you mean". */
static int unknown_option(const char *arg)
{
	const char *names[NR_OPTS];
	char word[64];
	for (size_t i = 0; i < NR_OPTS; i++)
		names[i] = opt_specs[i].name;
	snprintf(word, sizeof(word), "%s", arg + strspn(arg, "-"));
	word[strcspn(word, "=")] = 0;
	for (size_t i = 0; i < NR_OPTS; i++)     /* a known option without its value */
		if (!strcmp(word, names[i]))
			return usage_error("option '%s' needs a value", arg);
	const char *near = nearest(word, names, (int)NR_OPTS);
	char suggestion[64];
	snprintf(suggestion, sizeof(suggestion), "--%s", near ? near : "");
	return usage_hint("unknown option", arg, near ? suggestion : NULL);
}

/* Parses argv into o; returns 0, or the exit status for a usage error.
 * An experiment that takes a file gets the one positional argument. */
static int parse_options(int argc, char **argv, struct bench_opts *o, bool takes_file)
{
	struct option longopts[NR_OPTS + 1];
	for (size_t i = 0; i < NR_OPTS; i++) {
		const struct opt_spec *s = &opt_specs[i];
		bool value = s->kind != OPT_FLAG && s->kind != OPT_HELP;
		longopts[i] = (struct option){ s->name, value ? required_argument : no_argument, NULL,
					       OPT_VAL + (int)i };
	}
	longopts[NR_OPTS] = (struct option){ 0 };
	int c, rc = 0;
	optind = 1;
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1)
		rc = c < OPT_VAL ? unknown_option(argv[optind - 1])
				 : take_option(&opt_specs[c - OPT_VAL], optarg, o);
	if (rc)
		return rc;
	if (takes_file && optind < argc && !o->file)
		o->file = argv[optind++];
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

const struct experiment *find_experiment(const char *name)
{
	for (int i = 0; experiments[i]; i++)
		if (!strcmp(experiments[i]->name, name))
			return experiments[i];
	return NULL;
}

/*
 * "repeat --order 0 --ab pcp_high_order" -> "repeat --order 0: pcp_high_order 0 → 1":
 * the arguments in the order given (getopt has permuted argv), a path by
 * its file name.
 */
static void make_title(struct bench *b, int argc, char *const *argv)
{
	size_t n = (size_t)snprintf(b->title, sizeof(b->title), "%s", b->exp->name);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ab") || !strcmp(argv[i], "--json")) {
			i += argv[i][2] == 'a';
			continue;
		}
		const char *slash = strrchr(argv[i], '/');
		n += (size_t)snprintf(b->title + n, n < sizeof(b->title) ? sizeof(b->title) - n : 0,
				      " %s", slash && slash[1] ? slash + 1 : argv[i]);
	}
	if (b->opts.ab && n < sizeof(b->title)) {
		char what[256];
		describe_ab(b->opts.ab, what, sizeof(what));
		snprintf(b->title + n, sizeof(b->title) - n, ": %s", what);
	}
}

/* Sets up b for one experiment from its arguments (argv[0] is its name). */
int bench_prepare(struct bench *b, int argc, char **argv)
{
	memset(b, 0, sizeof(*b));
	b->opts.warmup = -1;
	if (!(b->exp = find_experiment(argv[0])))
		return unknown_experiment(argv[0]);
	b->opts.experiment = b->exp->name;
	char *given[argc + 1];
	memcpy(given, argv, sizeof(char *) * (size_t)argc);
	int rc = parse_options(argc, argv, &b->opts, b->exp->takes_file);
	if (!rc)
		make_title(b, argc, given);
	return rc;
}
