/*
 * The runner: command line, variants, interleaved iterations, counter
 * snapshots around each iteration.
 */
#include "bench.h"
#include "seeds.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_seconds(const struct bench *b)
{
	return b->opts.seconds;
}

int bench_metric(struct bench *b, const char *name, const char *unit, enum direction dir)
{
	if (b->nmetrics == MAX_METRICS) {
		b->too_many_metrics = true;
		return -1;
	}
	struct metric_def *m = &b->metrics[b->nmetrics];
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->unit, sizeof(m->unit), "%s", unit);
	m->dir = dir;
	return b->nmetrics++;
}

void set_extra_counter(struct variant *v, const char *name, long long value)
{
	int i = 0;
	while (i < v->nextra && strcmp(v->extra_name[i], name))
		i++;
	if (i == 8)
		return;
	if (i == v->nextra) {
		snprintf(v->extra_name[i], sizeof(v->extra_name[i]), "%s", name);
		v->nextra++;
	}
	v->extra_value[i] = value;
}

static char temp_dir[256];

static void remove_temp_dir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", temp_dir);
	if (system(cmd))
		fprintf(stderr, "zabench: could not remove %s\n", temp_dir);
}

const char *bench_dir(struct bench *b)
{
	if (b->opts.dir)
		return b->opts.dir;
	if (!*temp_dir) {
		const char *tmp = getenv("TMPDIR");
		snprintf(temp_dir, sizeof(temp_dir), "%s/zabench-XXXXXX", tmp ? tmp : "/var/tmp");
		if (!mkdtemp(temp_dir)) {
			perror("zabench: mkdtemp");
			exit(1);
		}
		atexit(remove_temp_dir);
	}
	return temp_dir;
}

za_cache_t *variant_cache(struct variant *v, int slot, const char *name, size_t size)
{
	if (!v->caches[slot] && !(v->caches[slot] = za_cache_create(v->mm, name, size, 0, 0, NULL))) {
		fprintf(stderr, "zabench: %s\n", za_last_error());
		exit(1);
	}
	return v->caches[slot];
}

void pin_to_cpu(int i)
{
	cpu_set_t set;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	CPU_ZERO(&set);
	CPU_SET(i % (cpus > 0 ? cpus : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ------------------------------------------------------------------------
 * Threads released together
 * ------------------------------------------------------------------------ */
struct thread_arg {
	int i;
	void (*fn)(int i, void *arg);
	void *arg;
	pthread_barrier_t *start;
};

static void *thread_main(void *p)
{
	struct thread_arg *t = p;
	pthread_barrier_wait(t->start);
	t->fn(t->i, t->arg);
	return NULL;
}

double run_threads(int n, void (*fn)(int i, void *arg), void *arg)
{
	pthread_t tid[n];
	struct thread_arg targ[n];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		targ[i] = (struct thread_arg){ i, fn, arg, &start };
		if (pthread_create(&tid[i], NULL, thread_main, &targ[i])) {
			perror("zabench: pthread_create");
			exit(1);
		}
	}
	pthread_barrier_wait(&start);
	double t0 = now_seconds();
	for (int i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	double wall = now_seconds() - t0;
	pthread_barrier_destroy(&start);
	return wall;
}

/* ------------------------------------------------------------------------
 * Command line
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
		"                      [--warmup N] [--predict TRACE2] [options above]\n"
		"       zabench report [--quick] [--out DIR] [--only EXP,...] [--budget MIN]\n"
		"                      [--seconds S]\n"
		"       zabench record -o FILE [--slab] [--buffer-kb N] [--pipe] -- COMMAND [ARGS...]\n"
		"       zabench list\n");
}

static void list_switches(FILE *out)
{
	fprintf(out, "switches --ab compares (SWITCH: 0 against 1; SWITCH=A:B: A against B;\n"
		     "any configuration key of za_mm_create works the same way):\n");
	for (const struct ab_switch *s = ab_switches; s->name; s++) {
		char seed[16];
		snprintf(seed, sizeof(seed), "%s%s", s->seed ? "seed " : "", s->seed ? s->seed : "");
		fprintf(out, "  %-23s %-4s %-8s %s\n", s->name, s->values, seed, s->what);
	}
}

static void list_experiments(FILE *out)
{
	for (int i = 0; experiments[i]; i++)
		fprintf(out, "  %-14s %s\n", experiments[i]->name, experiments[i]->summary);
}

static void usage(FILE *out)
{
	usage_lines(out);
	fprintf(out,
		"\n  --seconds S     length of one measured iteration (default 1)\n"
		"  --iterations K  measured iterations per variant (default 5), after one warm-up\n"
		"  --config STR    configuration for za_mm_create, over the experiment's defaults\n"
		"  --ab X          compare X=0 (\"before\") with X=1 (\"after\"), or X=A with X=B\n"
		"  --json          one JSON object instead of the tables\n"
		"  --sweep K=V,... the experiment once per value of configuration key K, then\n"
		"                  a table of each metric against the value\n\n"
		"experiments:\n");
	list_experiments(out);
	fputc('\n', out);
	list_switches(out);
}

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

/* The message, a "did you mean", and the short usage; returns 2. */
static void short_usage(void)
{
	fprintf(stderr, "usage: zabench <experiment> [options] | zabench report [--quick] | zabench list\n"
			"       (zabench --help: the experiments, their options and the --ab switches)\n");
}

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
	for (int i = 0; experiments[i] && n < 61; i++)
		names[n++] = experiments[i]->name;
	names[n++] = "report";
	names[n++] = "record";
	names[n++] = "list";
	return usage_hint("unknown experiment", name, nearest(name, names, n));
}

const struct experiment *find_experiment(const char *name)
{
	for (int i = 0; experiments[i]; i++)
		if (!strcmp(experiments[i]->name, name))
			return experiments[i];
	return NULL;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
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

static int unknown_option(const char *arg, const struct option *longopts)
{
	const char *names[32];
	char word[64];
	int n = 0;
	for (; longopts[n].name && n < 32; n++)
		names[n] = longopts[n].name;
	snprintf(word, sizeof(word), "%s", arg + strspn(arg, "-"));
	word[strcspn(word, "=")] = 0;
	for (int i = 0; i < n; i++)     /* a known option without its value */
		if (!strcmp(word, names[i]))
			return usage_error("option '%s' needs a value", arg);
	const char *near = nearest(word, names, n);
	char suggestion[64];
	snprintf(suggestion, sizeof(suggestion), "--%s", near ? near : "");
	return usage_hint("unknown option", arg, near ? suggestion : NULL);
}

/* Parses argv into o; returns 0, or the exit status for a usage error.
 * An experiment that takes a file gets the one positional argument. */
static int parse_options(int argc, char **argv, struct bench_opts *o, bool takes_file)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "config", required_argument, NULL, 'c' },
		{ "ab", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "order", required_argument, NULL, 'o' },
		{ "pages", required_argument, NULL, 'p' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "size", required_argument, NULL, 'S' },
		{ "io-size", required_argument, NULL, 'I' },
		{ "dir", required_argument, NULL, 'D' },
		{ "allocators", required_argument, NULL, 'A' },
		{ "benchmarks", required_argument, NULL, 'B' },
		{ "scale", required_argument, NULL, 'X' },
		{ "sweep", required_argument, NULL, 'W' },
		{ "predict", required_argument, NULL, 'P' },
		{ "zone-policy", required_argument, NULL, 'Z' },
		{ "events", required_argument, NULL, 'E' },
		{ "warmup", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long v;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!parse_long(optarg, 1, 1024, &v))
				return usage_error("bad --threads '%s' (1..1024)", optarg);
			o->threads = (int)v;
			break;
		case 's': {
			char *end;
			o->seconds = strtod(optarg, &end);
			if (*end || !(o->seconds > 0 && o->seconds <= 3600))
				return usage_error("bad --seconds '%s'", optarg);
			break;
		}
		case 'i':
			if (!parse_long(optarg, 1, MAX_ITERS, &v))
				return usage_error("bad --iterations '%s' (1..64)", optarg);
			o->iterations = (int)v;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'a':
			o->ab = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'o':
			if (!parse_long(optarg, 0, 14, &v))
				return usage_error("bad --order '%s' (0..14)", optarg);
			o->order = (int)v;
			break;
		case 'p':
			if (!parse_long(optarg, 1, 1L << 24, &v))
				return usage_error("bad --pages '%s'", optarg);
			o->pages = v;
			break;
		case 'S':
			if (!parse_long(optarg, 1, 1L << 20, &v))
				return usage_error("bad --size '%s'", optarg);
			o->size = v;
			break;
		case 'I':
			if (!parse_long(optarg, 0, 90, &v))
				return usage_error("bad --io-size '%s' (0..90 percent of memory)", optarg);
			o->io_size = (int)v;
			break;
		case 'D':
			o->dir = optarg;
			break;
		case 'A':
			o->allocators = optarg;
			break;
		case 'B':
			o->benchmarks = optarg;
			break;
		case 'X': {
			char *end;
			o->scale = strtod(optarg, &end);
			if (*end || !(o->scale > 0 && o->scale <= 100))
				return usage_error("bad --scale '%s' (0..100)", optarg);
			break;
		}
		case 'W':
			o->sweep = optarg;
			break;
		case 'P':
			o->predict = optarg;
			break;
		case 'Z':
			o->zone_policy = optarg;
			break;
		case 'E':
			o->events = optarg;
			break;
		case 'U':
			if (!parse_long(optarg, 0, 1L << 40, &v))
				return usage_error("bad --warmup '%s' (page allocations)", optarg);
			o->warmup = v;
			break;
		case 'z':
			if (!parse_sizes(optarg, o))
				return usage_error("bad --sizes '%s' (at most 16 sizes of 1..2^30 bytes)",
						   optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return unknown_option(argv[optind - 1], longopts);
		}
	}
	if (takes_file && optind < argc && !o->file)
		o->file = argv[optind++];
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

/* ------------------------------------------------------------------------
 * Variants
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

/* The options that depend on the configuration, checked before any run. */
static int check_options(const struct bench *b, const struct variant *v)
{
	char max[16];
	config_value(za_mm_config_string(v->mm), "max_order", max, sizeof(max));
	if (b->opts.order > atoi(max)) {
		fprintf(stderr, "zabench: --order %d is beyond the %s variant's max_order=%s "
				"(raise it with --config max_order=N, at most 14)\n",
			b->opts.order, v->name, max);
		return 2;
	}
	return 0;
}

static int make_variants(struct bench *b)
{
	if (b->exp->make_variants)
		return b->exp->make_variants(b);
	const char *user = b->opts.config ? b->opts.config : "";
	const char *ab = b->opts.ab;
	b->nvariants = ab ? 2 : 1;
	for (int i = 0; i < b->nvariants; i++) {
		struct variant *v = &b->variants[i];
		char extra[512] = "";
		if (ab && !ab_part(ab, i, extra, sizeof(extra)))
			return usage_error("bad --ab '%s' (SWITCH or SWITCH=A:B, comma separated)", ab);
		snprintf(v->name, sizeof(v->name), "%s", ab ? (i ? "after" : "before") : "default");
		if ((size_t)snprintf(v->config, sizeof(v->config), "%s,%s%s",
				     b->base_config[0] ? b->base_config : b->exp->config, user,
				     extra) >= sizeof(v->config))
			return usage_error("configuration too long: %s", v->config);
		v->mm = za_mm_create(v->config);
		if (!v->mm) {
			fprintf(stderr, "zabench: %s\n", za_last_error());
			short_usage();
			return 2;
		}
		if (check_options(b, v))
			return 2;
		v->counters = calloc((size_t)za_stat_count(), sizeof(long long));
	}
	return 0;
}

static void destroy_system(struct bench *b, struct variant *v)
{
	if (b->exp->cleanup)
		b->exp->cleanup(b, v);
	long leaked = za_mm_destroy(v->mm);
	if (leaked)
		fprintf(stderr, "zabench: %s: the %s variant leaked %ld pages\n",
			b->exp->name, v->name, leaked);
	v->mm = NULL;
}

/* For an experiment that starts every iteration from a new system. */
static void renew_system(struct bench *b, struct variant *v)
{
	destroy_system(b, v);
	if (!(v->mm = za_mm_create(v->config))) {
		fprintf(stderr, "zabench: %s\n", za_last_error());
		exit(1);
	}
}

static void destroy_variants(struct bench *b)
{
	for (int i = 0; i < b->nvariants; i++) {
		struct variant *v = &b->variants[i];
		if (!v->mm) {
			if (b->exp->cleanup)
				b->exp->cleanup(b, v);
			continue;
		}
		destroy_system(b, v);
		free(v->counters);
	}
}

/* ------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------ */
static void measure(struct bench *b, struct variant *v)
{
	int n = za_stat_count();
	long long before[n], after[n];
	struct iteration it = { 0 };

	if (v->mm && b->exp->fresh_system)
		renew_system(b, v);
	if (v->mm)
		za_stat_all(v->mm, before, n);
	b->exp->run(b, v, &it);
	for (int i = 0; v->mm && i < n; i++) {
		if (!i)
			za_stat_all(v->mm, after, n);
		if (za_stat_kind(i) == ZA_STAT_EVENT)
			v->counters[i] += after[i] - before[i];
		else
			v->counters[i] = after[i];
	}
	for (int m = 0; m < b->nmetrics; m++)
		v->values[m][v->niters] = it.value[m];
	v->niters++;
	v->ops += it.ops;
}

/* One measured iteration of every variant, in the order of round k:
 * A B, then B A, so that a drift of the machine hits both alike. */
static void measure_round(struct bench *b, int k)
{
	for (int j = 0; j < b->nvariants; j++)
		measure(b, &b->variants[k % 2 ? b->nvariants - 1 - j : j]);
}

/* An open verdict gets at most this many times the iterations asked for. */
#define MAX_EXTENSION 4

static bool verdict_open(const struct bench *b)
{
	struct comparison c;
	compare_ab(b, b->headline, &c);
	return comparison_open(&c);
}

/*
 * One warm-up iteration per variant, then K measured rounds.  With a time
 * budget (extend_until) an A/B run whose headline interval is still wider
 * than its effect gets more rounds, while one more fits in the budget.
 */
int bench_run(struct bench *b)
{
	struct bench_opts *o = &b->opts;
	if (!o->threads)
		o->threads = b->exp->threads;
	if (!o->seconds)
		o->seconds = o->quick ? 0.3 : 1.0;
	if (!o->iterations)
		o->iterations = o->quick && !o->ab ? 3 : 5;
	b->exp->declare(b);
	if (b->too_many_metrics)
		return usage_error("%s: more metrics than zabench holds; give fewer --sizes",
				   b->exp->name);
	int rc = make_variants(b);
	if (rc)
		return rc;

	double start = now_seconds();
	b->warmup = true;
	for (int i = 0; i < b->nvariants; i++) {
		struct iteration warm = { 0 };
		b->exp->run(b, &b->variants[i], &warm);
		if (b->variants[i].mm)
			za_stat_reset_peaks(b->variants[i].mm);
	}
	b->warmup = false;
	double round = 0;
	for (int k = 0; k < o->iterations; k++) {
		double t0 = now_seconds();
		measure_round(b, k);
		round = now_seconds() - t0;
	}
	b->base_seconds = now_seconds() - start;
	bool ab = is_ab(b);
	int most = o->iterations * MAX_EXTENSION < MAX_ITERS ? o->iterations * MAX_EXTENSION : MAX_ITERS;
	for (int k = o->iterations; ab && k < most && verdict_open(b) &&
	     now_seconds() + round < o->extend_until; k++) {
		measure_round(b, k);
		b->extra_rounds++;
	}
	return 0;
}

void bench_finish(struct bench *b)
{
	destroy_variants(b);
	if (b->exp->release && b->state)
		b->exp->release(b);
	free(b->state);
	b->state = NULL;
}

void describe_ab(const char *ab, char *out, size_t len)
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

/* "repeat --order 0 --ab pcp_high_order" -> "repeat --order 0: pcp_high_order 0 → 1" */
/* The arguments in the order given (getopt has permuted argv), a path
 * by its file name. */
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

int bench_main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("%s", "no experiment given");
	if (!strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "report"))
		return run_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "record"))
		return run_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list")) {
		printf("experiments:\n");
		list_experiments(stdout);
		putchar('\n');
		list_switches(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	static struct bench b;
	int rc = bench_prepare(&b, argc - 1, argv + 1);
	if (!rc && b.opts.sweep) {
		struct sweep_out o = { .json = b.opts.json ? stdout : NULL,
				       .txt = b.opts.json ? NULL : stdout };
		return run_sweep(argc - 1, argv + 1, b.opts.sweep, &o);
	}
	if (!rc)
		rc = bench_run(&b);
	if (rc)
		return rc;
	if (b.opts.json)
		print_json(&b, stdout);
	else
		print_table(&b, stdout);
	bench_finish(&b);
	return 0;
}
