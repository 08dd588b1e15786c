/*
 * The runner, zabench's engine: an experiment's run as bench_prepare
 * (cli.c) set it up, on its variants, with interleaved iterations and
 * counter snapshots around each; and what experiments run on (threads
 * released together, a directory for files, a variant's caches).
 */
#include "bench.h"
#include "cli.h"

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

unsigned int kernel_cache_flags(const char *name)
{
	return !strcmp(name, "vm_area_struct") || !strcmp(name, "maple_node") ? ZA_SLAB_SHEAVES : 0;
}

za_cache_t *variant_cache(struct variant *v, int slot, const char *name, size_t size)
{
	if (!v->caches[slot] &&
	    !(v->caches[slot] = za_cache_create(v->mm, name, size, 0, kernel_cache_flags(name), NULL))) {
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
 * Variants
 * ------------------------------------------------------------------------ */

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
		if (!v->mm)
			return usage_error("%s", za_last_error());
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

/* What the options not given are: the experiment's, or the mode's. */
static void default_options(struct bench *b)
{
	struct bench_opts *o = &b->opts;
	if (!o->threads)
		o->threads = b->exp->threads;
	if (!o->seconds)
		o->seconds = o->quick ? 0.3 : 1.0;
	if (!o->iterations)
		o->iterations = o->quick && !o->ab ? 3 : 5;
}

/* One iteration per variant whose results are not kept, and the peak
 * counters reset after it. */
static void warm_up(struct bench *b)
{
	b->warmup = true;
	for (int i = 0; i < b->nvariants; i++) {
		struct iteration warm = { 0 };
		b->exp->run(b, &b->variants[i], &warm);
		if (b->variants[i].mm)
			za_stat_reset_peaks(b->variants[i].mm);
	}
	b->warmup = false;
}

/*
 * One warm-up iteration per variant, then K measured rounds.  With a time
 * budget (extend_until) an A/B run whose headline interval is still wider
 * than its effect gets more rounds, while one more fits in the budget.
 */
int bench_run(struct bench *b)
{
	struct bench_opts *o = &b->opts;
	default_options(b);
	b->exp->declare(b);
	if (b->too_many_metrics)
		return usage_error("%s: more metrics than zabench holds; give fewer --sizes",
				   b->exp->name);
	int rc = make_variants(b);
	if (rc)
		return rc;

	double start = now_seconds();
	warm_up(b);
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
