/*
 * malloc: zonealloc's malloc against glibc's, jemalloc, tcmalloc and
 * mimalloc, on the suite in malloc_suite.c.
 *
 * The variants are allocators, not memory systems: each iteration runs
 * every benchmark once per allocator, in its own process under LD_PRELOAD
 * (none for glibc), interleaved A B C D E / E D C B A by the runner; a
 * benchmark's time is what the process reports for its workload, its
 * memory the process's peak RSS (VmHWM), which it reports too, and its
 * mean RSS, sampled from outside every 5 ms (rss_sampler.c).  Allocators
 * that are not installed are left out (and named).
 */
#include "bench.h"
#include "cli.h"
#include "rss_sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const benchmarks[] = {
	"pairs", "churn", "sizes", "loops", "realloc", "larson", "prodcons", "falseshare", "threads", "large",
	"bigbuf", "soak", "phases", "pool", "settle", "python", "perl", "ruby",
};
enum { NR_BENCH = sizeof(benchmarks) / sizeof(benchmarks[0]) };

/* settle's seconds are how long memory took to come back, not work done:
 * a table of their own, and out of the time's geometric mean. */
static bool timed(int i)
{
	return strcmp(benchmarks[i], "settle");
}

/* The benchmarks that report an RSS before and after (malloc_suite.c),
 * and what they are. */
static const struct {
	const char *name, *what;
} before_after[] = {
	{ "phases", "a 4 MiB working set before the busy phases, and at the end of the last quiet "
		    "one, 1.5 s after its busy phase" },
	{ "pool", "4 threads before the pool ever grew to 64, and at the end, 1.5 s after it shrank "
		  "back to 4" },
	{ "settle", "a 64 MiB burst freed, then no call: the RSS before it, 3 s after it or when back "
		    "within 10% of before, and the seconds that took" },
};

/* Index in before_after of benchmark i, or -1. */
static int reports_before(int i)
{
	for (int k = 0; k < (int)(sizeof(before_after) / sizeof(before_after[0])); k++)
		if (!strcmp(benchmarks[i], before_after[k].name))
			return k;
	return -1;
}

/*
 * The interpreters, Debian's, each running an allocation-heavy script
 * given on its command line, times --scale (the last argument): trees of
 * small objects built and dropped.  Python runs with PYTHONMALLOC=malloc,
 * so that its objects come from the allocator under test rather than from
 * its own arenas.  A benchmark whose interpreter is missing is left out.
 */
static const struct {
	const char *name, *path, *flag, *package, *script;
} programs[] = {
	{ "python", "/usr/bin/python3", "-c", "python3",
	  "import sys\n"
	  "def tree(d):\n"
	  "    return None if d == 0 else (tree(d - 1), tree(d - 1), {'d': d}, str(d) * 3)\n"
	  "for i in range(int(10 * float(sys.argv[1]))):\n"
	  "    t = tree(15)\n" },
	{ "perl", "/usr/bin/perl", "-e", "perl",
	  "my $n = shift; for my $r (1 .. int(2 * $n)) { my %h; "
	  "for my $i (1 .. 100000) { $h{\"key$i\"} = [ $i, \"value$i\" x 2 ]; } "
	  "my @s = sort keys %h; }" },
	{ "ruby", "/usr/bin/ruby", "-e", "ruby",
	  "def tree(d) d == 0 ? nil : [tree(d - 1), tree(d - 1), 'x' * 24] end\n"
	  "(20 * ARGV[0].to_f).to_i.times { tree(16) }\n" },
};

/* The interpreter a benchmark runs, or -1 for one of malloc-suite's own. */
static int program_of(const char *bench)
{
	for (int i = 0; i < (int)(sizeof(programs) / sizeof(programs[0])); i++)
		if (!strcmp(programs[i].name, bench))
			return i;
	return -1;
}

static const struct {
	const char *name, *library, *package;
} allocators[] = {
	{ "glibc", NULL, NULL },
	{ "jemalloc", "libjemalloc.so.2", "libjemalloc2" },
	{ "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4" },
	{ "mimalloc", "libmimalloc.so.2", "libmimalloc2.0" },
	{ "zonealloc", "libzonealloc-malloc.so", NULL },
};

struct malloc_state {
	char dir[512];                  /* where zabench, malloc-suite and our library are */
	double scale;
	bool run[NR_BENCH];             /* --benchmarks */
	int nrun;
	int m_time[NR_BENCH], m_rss[NR_BENCH], m_mean_rss[NR_BENCH], m_sys[NR_BENCH];
	int m_before[NR_BENCH], m_after[NR_BENCH];      /* the untimed benchmark's */
	int m_geo_time, m_geo_rss, m_geo_mean_rss;
	char za_config[MAX_VARIANTS][256];      /* ZA_CONFIG of a zonealloc variant (--ab) */
	char missing[512];
};

/* Is name in the comma-separated list (NULL: everything is)? */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return !list;
}

static void malloc_declare(struct bench *b)
{
	struct malloc_state *st = calloc(1, sizeof(*st));
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	char *slash = strrchr(exe, '/');
	snprintf(st->dir, sizeof(st->dir), "%.*s", slash ? (int)(slash - exe) : 1, slash ? exe : ".");
	st->scale = b->opts.scale ? b->opts.scale : b->opts.quick ? 0.5 : 1.0;
	for (int i = 0; i < NR_BENCH; i++) {
		char name[48];
		int prog = program_of(benchmarks[i]);
		st->run[i] = listed(b->opts.benchmarks, benchmarks[i]);
		if (st->run[i] && prog >= 0 && access(programs[prog].path, X_OK)) {
			size_t used = strlen(st->missing);
			snprintf(st->missing + used, sizeof(st->missing) - used, "%sthe %s benchmark (%s)",
				 used ? ", " : "", benchmarks[i], programs[prog].package);
			st->run[i] = false;
		}
		st->nrun += st->run[i];
		if (!st->run[i])
			continue;
		snprintf(name, sizeof(name), "%s_s", benchmarks[i]);
		st->m_time[i] = bench_metric(b, name, "s", LOWER_IS_BETTER);
		snprintf(name, sizeof(name), "%s_rss_mib", benchmarks[i]);
		st->m_rss[i] = bench_metric(b, name, "MiB", LOWER_IS_BETTER);
		snprintf(name, sizeof(name), "%s_mean_rss_mib", benchmarks[i]);
		st->m_mean_rss[i] = bench_metric(b, name, "MiB", LOWER_IS_BETTER);
		snprintf(name, sizeof(name), "%s_sys_s", benchmarks[i]);
		st->m_sys[i] = bench_metric(b, name, "s", LOWER_IS_BETTER);
		if (reports_before(i) < 0)
			continue;
		snprintf(name, sizeof(name), "%s_before_rss_mib", benchmarks[i]);
		st->m_before[i] = bench_metric(b, name, "MiB", LOWER_IS_BETTER);
		snprintf(name, sizeof(name), "%s_after_rss_mib", benchmarks[i]);
		st->m_after[i] = bench_metric(b, name, "MiB", LOWER_IS_BETTER);
	}
	st->m_geo_time = bench_metric(b, "geomean_s", "s", LOWER_IS_BETTER);
	st->m_geo_rss = bench_metric(b, "geomean_rss_mib", "MiB", LOWER_IS_BETTER);
	st->m_geo_mean_rss = bench_metric(b, "geomean_mean_rss_mib", "MiB", LOWER_IS_BETTER);
	b->state = st;
}

/* The peers come from the system's library directories, zonealloc from
 * beside zabench. */
static bool find_library(const struct malloc_state *st, const char *lib, bool ours, char *out,
			 size_t len)
{
	static const char *const dirs[] = {
		"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
		"/usr/local/lib",
	};
	if (ours) {
		snprintf(out, len, "%s/%s", st->dir, lib);
		return !access(out, R_OK);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, len, "%s/%s", dirs[i], lib);
		if (!access(out, R_OK))
			return true;
	}
	return false;
}

/* --ab: zonealloc twice, before and after, each with its ZA_CONFIG. */
static int ab_variants(struct bench *b, struct variant *v)
{
	struct malloc_state *st = b->state;
	b->variants[b->nvariants] = *v;
	for (int which = 0; which < 2; which++, v++) {
		char *cfg = st->za_config[v - b->variants];
		if (!ab_part(b->opts.ab, which, cfg, sizeof(st->za_config[0])))
			return usage_error("bad --ab '%s' (SWITCH or SWITCH=A:B, comma separated)",
					   b->opts.ab);
		memmove(cfg, cfg + 1, strlen(cfg));     /* the leading comma */
		snprintf(v->name, sizeof(v->name), "za-%s", which ? "after" : "before");
	}
	b->nvariants++;
	return 0;
}

static int malloc_variants(struct bench *b)
{
	struct malloc_state *st = b->state;
	char suite[600];
	snprintf(suite, sizeof(suite), "%s/malloc-suite", st->dir);
	if (access(suite, X_OK)) {
		fprintf(stderr, "zabench malloc: %s is missing (make builds it)\n", suite);
		return 1;
	}
	if (!st->nrun)
		return usage_error("malloc: no benchmark in --benchmarks '%s'", b->opts.benchmarks);
	for (size_t i = 0; i < sizeof(allocators) / sizeof(allocators[0]); i++) {
		struct variant *v = &b->variants[b->nvariants];
		if (!listed(b->opts.allocators, allocators[i].name))
			continue;
		bool ours = !allocators[i].package && allocators[i].library;
		if (allocators[i].library &&
		    !find_library(st, allocators[i].library, ours, v->config, sizeof(v->config))) {
			size_t used = strlen(st->missing);
			snprintf(st->missing + used, sizeof(st->missing) - used, "%s%s (%s)",
				 used ? ", " : "", allocators[i].name,
				 ours ? "make builds it" : allocators[i].package);
			continue;
		}
		if (!allocators[i].library)
			snprintf(v->config, sizeof(v->config), "the C library's malloc");
		snprintf(v->name, sizeof(v->name), "%s", allocators[i].name);
		b->nvariants++;
		if (ours && b->opts.ab && ab_variants(b, v))
			return 1;
	}
	if (*st->missing)
		fprintf(stderr, "zabench malloc: not installed, left out: %s "
			"(scripts/install-deps bench installs them)\n", st->missing);
	if (!b->nvariants)
		return usage_error("malloc: no allocator to run (--allocators '%s')",
				   b->opts.allocators ? b->opts.allocators : "");
	return 0;
}

struct run_result {
	double seconds, rss_mib, mean_rss_mib, sys_s;
	double before_mib, after_mib;   /* the RSS before and after (reports_before) */
};

/* Runs one benchmark under one allocator: its seconds (negative if it
 * failed), peak and mean RSS, system time. */
static struct run_result run_one(const struct malloc_state *st, const struct variant *v,
				 const char *za_config, const char *bench, int threads, double scale)
{
	struct run_result r = { .seconds = -1 };
	int out[2];
	if (pipe(out))
		return r;
	pid_t pid = fork();
	if (pid == 0) {
		char suite[600], t[16], s[32];
		snprintf(suite, sizeof(suite), "%s/malloc-suite", st->dir);
		snprintf(t, sizeof(t), "%d", threads);
		snprintf(s, sizeof(s), "%g", scale);
		dup2(out[1], STDOUT_FILENO);
		close(out[0]);
		if (!strcmp(v->name, "glibc"))
			unsetenv("LD_PRELOAD");
		else
			setenv("LD_PRELOAD", v->config, 1);
		unsetenv("ZA_STATS");
		if (*za_config)
			setenv("ZA_CONFIG", za_config, 1);
		int prog = program_of(bench);
		if (prog >= 0) {
			setenv("PYTHONMALLOC", "malloc", 1);
			execl(suite, suite, "exec", programs[prog].path, programs[prog].flag,
			      programs[prog].script, s, (char *)NULL);
		} else {
			execl(suite, suite, bench, t, s, (char *)NULL);
		}
		_exit(127);
	}
	close(out[1]);
	/* The benchmark writes its line as it ends: the pipe holds it. */
	int status;
	struct rusage ru;
	double mean_kib = 0, fourth = 0, fifth = 0;
	bool waited = pid > 0 && wait_sampling_rss(pid, &status, &ru, &mean_kib) == pid;
	char buf[96] = "";
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	close(out[0]);
	buf[n > 0 ? n : 0] = 0;
	long rss_kib = 0;
	/* exec (an interpreter) samples its own child: a fourth figure, its
	 * mean RSS; phases, pool and settle add two, their RSS before and after. */
	int got = sscanf(buf, "%lf %ld %lf %lf %lf", &r.seconds, &rss_kib, &r.sys_s, &fourth, &fifth);
	if (!waited || !WIFEXITED(status) || WEXITSTATUS(status) || got < 3 || rss_kib <= 0) {
		fprintf(stderr, "zabench malloc: %s failed under %s\n", bench, v->name);
		r.seconds = -1;
		return r;
	}
	r.rss_mib = (double)rss_kib / 1024.0;
	/* A process done before the first reading: its peak stands in. */
	double mean = got == 4 && program_of(bench) >= 0 ? fourth : mean_kib;
	r.mean_rss_mib = mean > 0 ? mean / 1024.0 : r.rss_mib;
	if (got == 5) {
		r.before_mib = fourth / 1024.0;
		r.after_mib = fifth / 1024.0;
	}
	return r;
}

static void malloc_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct malloc_state *st = b->state;
	double log_t = 0, log_r = 0, log_m = 0;
	int ntimed = 0;
	/* The warm-up only loads the programs and libraries: a short one. */
	double scale = b->warmup ? st->scale / 10 : st->scale;
	for (int i = 0; i < NR_BENCH; i++) {
		if (!st->run[i])
			continue;
		struct run_result r = run_one(st, v, st->za_config[v - b->variants], benchmarks[i],
					      b->opts.threads, scale);
		if (r.seconds <= 0) {
			fprintf(stderr, "zabench malloc: giving up\n");
			exit(1);
		}
		it->value[st->m_time[i]] = r.seconds;
		it->value[st->m_rss[i]] = r.rss_mib;
		it->value[st->m_mean_rss[i]] = r.mean_rss_mib;
		it->value[st->m_sys[i]] = r.sys_s;
		if (reports_before(i) >= 0) {
			it->value[st->m_before[i]] = r.before_mib;
			it->value[st->m_after[i]] = r.after_mib;
		}
		log_t += timed(i) ? log(r.seconds) : 0;
		ntimed += timed(i);
		log_r += log(r.rss_mib);
		log_m += log(r.mean_rss_mib);
	}
	it->value[st->m_geo_time] = ntimed ? exp(log_t / ntimed) : 0;
	it->value[st->m_geo_rss] = exp(log_r / st->nrun);
	it->value[st->m_geo_mean_rss] = exp(log_m / st->nrun);
	it->ops = st->nrun;
}

static double median_of(const struct variant *v, int m)
{
	struct summary s;
	summarize(v->values[m], v->niters, &s);
	return s.median;
}

/* One row: each allocator's median and its ratio to the best. */
static void print_row(const struct bench *b, const char *label, int m, FILE *out)
{
	double best = 0;
	for (int i = 0; i < b->nvariants; i++) {
		double x = median_of(&b->variants[i], m);
		if (!i || x < best)
			best = x;
	}
	fprintf(out, "%-12s", label);
	for (int i = 0; i < b->nvariants; i++) {
		double x = median_of(&b->variants[i], m);
		fprintf(out, " %9.3f (%4.2f)", x, best > 0 ? x / best : 0);
	}
	fputc('\n', out);
}

static void print_header_row(const struct bench *b, const char *what, FILE *out)
{
	fprintf(out, "%-12s", what);
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %16s", b->variants[i].name);
	fputc('\n', out);
}

/* One table: a row per benchmark run (of the timed ones only, for the
 * times), then the geometric means. */
static void print_section(const struct bench *b, const char *what, const int *metric, int geomean,
			  FILE *out)
{
	const struct malloc_state *st = b->state;
	print_header_row(b, what, out);
	for (int i = 0; i < NR_BENCH; i++)
		if (st->run[i] && (metric != st->m_time || timed(i)))
			print_row(b, benchmarks[i], metric[i], out);
	print_row(b, "geomean", geomean, out);
}

static void malloc_print(const struct bench *b, FILE *out)
{
	const struct malloc_state *st = b->state;
	fprintf(out, "zabench malloc: %s\n", b->exp->summary);
	fprintf(out, "machine: %ld cores, %.1f GiB; %d threads, scale %g; median of %d runs per "
		"allocator, interleaved (after one short warm-up); (ratio to the best)\n",
		machine_cores(), (double)machine_memory() / (1 << 30), b->opts.threads, st->scale,
		b->opts.iterations);
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, "%-10s %s%s%s\n", b->variants[i].name, b->variants[i].config,
			*st->za_config[i] ? ", ZA_CONFIG=" : "", st->za_config[i]);
	if (*st->missing)
		fprintf(out, "not installed: %s\n", st->missing);
	fputc('\n', out);
	print_section(b, "time (s)", st->m_time, st->m_geo_time, out);
	fputc('\n', out);
	print_section(b, "peak RSS MiB", st->m_rss, st->m_geo_rss, out);
	fputc('\n', out);
	print_section(b, "mean RSS MiB", st->m_mean_rss, st->m_geo_mean_rss, out);
	fputc('\n', out);
	print_header_row(b, "system (s)", out);
	for (int i = 0; i < NR_BENCH; i++)
		if (st->run[i])
			print_row(b, benchmarks[i], st->m_sys[i], out);
	for (int i = 0; i < NR_BENCH; i++) {
		int k = reports_before(i);
		if (!st->run[i] || k < 0)
			continue;
		fputc('\n', out);
		print_header_row(b, benchmarks[i], out);
		print_row(b, "before MiB", st->m_before[i], out);
		print_row(b, "after MiB", st->m_after[i], out);
		if (!timed(i))
			print_row(b, "s to before", st->m_time[i], out);
		fprintf(out, "(%s)\n", before_after[k].what);
	}
}

static const char *const malloc_report[] = { "", NULL };

const struct experiment exp_malloc = {
	.name = "malloc",
	.summary = "zonealloc's malloc vs glibc, jemalloc, tcmalloc, mimalloc (LD_PRELOAD) on "
		   "pairs, churn, sizes, loops, realloc, larson, prodcons, falseshare, threads, large, "
		   "bigbuf, soak, phases, pool, settle, "
		   "and python, perl and ruby running allocation-heavy scripts",
	.config = "",
	.threads = 2,
	.declare = malloc_declare,
	.run = malloc_run,
	.make_variants = malloc_variants,
	.print = malloc_print,
	.report_runs = malloc_report,
};
