/*
 * replay: a real kernel's kmem trace (zabench record, ftrace, trace-cmd,
 * perf script) through zonealloc, on a system that mirrors the recorded
 * machine, under any configuration and --ab switch.  Each iteration is one
 * whole pass on a fresh system, so every pass does the same thing and the
 * metric, events per second, times the replay end to end (reading,
 * decompressing, parsing and the allocator's work).  Beside the usual
 * tables: the fidelity table, the kernel's per-CPU list figures from the
 * trace beside zonealloc's for the same stream (fidelity.c).
 */
#include "bench.h"
#include "mirror.h"
#include "replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct replay_state {
	struct replay_opts ro;
	int m_events_per_sec;
	int nr_cpus;                    /* the fidelity tables' */
	struct replay_result result[MAX_VARIANTS];
	struct fidelity predicted;      /* --predict: the second trace's kernel */
	bool have_predicted;
	struct mirror mirror;
	char side_zoneinfo[4096], side_sysctl[4096];    /* found beside the trace */
};

/* ------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------ */
static bool parse_replay_opts(const struct bench_opts *o, struct replay_opts *ro, bool header)
{
	ro->zones = header ? ZONE_BY_PFN : ZONE_BY_GFP;
	if (o->zone_policy && !strcmp(o->zone_policy, "model"))
		ro->zones = ZONE_BY_GFP;
	else if (o->zone_policy && strcmp(o->zone_policy, "pfn"))
		return false;
	ro->warmup = o->warmup < 0 ? REPLAY_WARMUP_AUTO : (uint64_t)o->warmup;
	ro->events = REPLAY_PAGE;
	if (o->start && strcmp(o->start, "kernel") && strcmp(o->start, "empty"))
		return false;
	ro->empty_start = o->start && !strcmp(o->start, "empty");
	if (o->events) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%s", o->events);
		ro->events = 0;
		for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
			if (!strcmp(tok, "page"))
				ro->events |= REPLAY_PAGE;
			else if (!strcmp(tok, "slab"))
				ro->events |= REPLAY_SLAB;
			else
				return false;
		}
	}
	return ro->events != 0;
}

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, "zabench replay: %s%s\n", what, msg);
	exit(2);
}

/* Whether a key of --config, --ab or --sweep sets the machine's memory or
 * zones itself. */
static bool options_size_memory(const struct bench_opts *o)
{
	const char *const given[] = { o->config, o->ab, o->sweep };
	for (int i = 0; i < 3; i++)
		if (given[i] && (strstr(given[i], "memory") || strstr(given[i], "zones")))
			return true;
	return false;
}

/*
 * The files a trace's replay reads beside its header, into ro: --zoneinfo's
 * (none: no zoneinfo at all), else the one recorded beside the trace, else
 * this machine's if the trace could have been recorded here
 * (replay_local_zoneinfo); --sysctl's, else the one beside it.  *h is the
 * header they complete.
 */
static void recorded_files(const struct bench_opts *o, const char *path, struct replay_opts *ro,
			   char *zi, char *sc, size_t len, struct trace_header *h)
{
	bool none = o->zoneinfo && !strcmp(o->zoneinfo, "none");
	char err[512];
	ro->zoneinfo_here = false;
	ro->zoneinfo = none ? NULL : o->zoneinfo ? o->zoneinfo : replay_side_file(path, ".zoneinfo", zi, len);
	ro->sysctl = o->sysctl ? o->sysctl : replay_side_file(path, ".sysctl", sc, len);
	struct trace_reader *tr = replay_open(path, ro, h, err, sizeof(err));
	if (!tr)
		fail("", err);
	trace_close(tr);
	if (!none && !options_size_memory(o))
		replay_local_zoneinfo(path, ro, h);
}

/* The kernel side of --predict's trace: a pass without a model, over the
 * files recorded beside that trace, not the first one's. */
static void read_predicted(const struct bench *b, struct replay_state *st, const char *path)
{
	static char zi[4096], sc[4096];
	static struct trace_header h;
	struct replay_opts ro = st->ro;
	struct replay_result r = { 0 };
	char err[512];
	recorded_files(&b->opts, path, &ro, zi, sc, sizeof(zi), &h);
	if (fidelity_init(&r.kernel, st->nr_cpus))
		fail("", "out of memory");
	if (replay_trace(NULL, path, &ro, &r, err, sizeof(err)))
		fail("--predict: ", err);
	st->predicted = r.kernel;
	st->have_predicted = true;
}

static void replay_declare(struct bench *b)
{
	struct replay_state *st = calloc(1, sizeof(*st));
	if (!st)
		fail("", "out of memory");
	b->state = st;
	if (!b->opts.file)
		fail("", "no trace given (zabench replay FILE [options])");
	struct trace_header h;
	recorded_files(&b->opts, b->opts.file, &st->ro, st->side_zoneinfo, st->side_sysctl,
		       sizeof(st->side_zoneinfo), &h);
	if (!h.present && !b->opts.config)
		fprintf(stderr, "zabench replay: %s has no header (zabench record writes one): "
				"give the machine with --zoneinfo FILE or --config (cpus=N,memory=...); "
				"the gfp flags choose the zones\n", b->opts.file);
	if (!parse_replay_opts(&b->opts, &st->ro, h.present))
		fail("bad --zone-policy (pfn or model), --events (page,slab) or --start "
		     "(kernel or empty)", "");
	mirror_machine(&h, &st->mirror);
	snprintf(b->base_config, sizeof(b->base_config), "%s", st->mirror.config);
	st->nr_cpus = st->mirror.nr_cpus ? st->mirror.nr_cpus : (int)machine_cores();
	for (int i = 0; i < MAX_VARIANTS; i++)
		if (fidelity_init(&st->result[i].kernel, st->nr_cpus) ||
		    fidelity_init(&st->result[i].model, st->nr_cpus))
			fail("", "out of memory");
	if (b->opts.predict)
		read_predicted(b, st, b->opts.predict);
	st->m_events_per_sec = bench_metric(b, "events_per_sec", "events/s", HIGHER_IS_BETTER);
}

/* ------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------ */
static void clear_result(struct replay_result *r)
{
	struct fidelity kernel = r->kernel, model = r->model;
	fidelity_reset(&kernel);
	fidelity_reset(&model);
	*r = (struct replay_result){ .kernel = kernel, .model = model };
}

/* --model-trace FILE, or FILE.VARIANT when there are several; every
 * iteration writes it again (a replay does the same each time). */
static FILE *open_model_trace(const struct bench *b, const struct variant *v)
{
	char path[4096];
	if (!b->opts.model_trace)
		return NULL;
	snprintf(path, sizeof(path), b->nvariants > 1 ? "%s.%s" : "%s", b->opts.model_trace, v->name);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "zabench replay: --model-trace %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return f;
}

static void replay_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct replay_state *st = b->state;
	struct replay_result *r = &st->result[v - b->variants];
	char err[512];
	clear_result(r);
	st->ro.model_trace = open_model_trace(b, v);
	double t0 = now_seconds();
	if (replay_trace(v->mm, b->opts.file, &st->ro, r, err, sizeof(err)))
		fail("", err);
	double wall = now_seconds() - t0;
	if (st->ro.model_trace && fclose(st->ro.model_trace))
		fail("--model-trace: ", strerror(errno));
	st->ro.model_trace = NULL;
	it->ops = (long long)r->events;
	it->value[st->m_events_per_sec] = (double)r->events / wall;
	uint64_t problems = 0;
	for (int p = 0; p < NR_REPLAY_PROBLEMS; p++)
		problems += replay_problem_expected((enum replay_problem)p) ? 0 : r->problems[p];
	set_extra_counter(v, "replay_early_frees", (long long)r->early_frees);
	set_extra_counter(v, "replay_bulk_takes", (long long)r->bulk_takes);
	set_extra_counter(v, "replay_problems", (long long)problems);
}

/* ------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------ */
static void print_problems(const struct bench *b, const struct variant *v, FILE *out)
{
	const struct replay_state *st = b->state;
	const struct replay_result *r = &st->result[v - b->variants];
	for (int p = 0; p < NR_REPLAY_PROBLEMS; p++) {
		if (!r->problems[p])
			continue;
		fprintf(out, "  %s: %llu %s (line", v->name, (unsigned long long)r->problems[p],
			replay_problem_name((enum replay_problem)p));
		for (uint64_t k = 0; k < r->problems[p] && k < RP_FIRST_LINES; k++)
			fprintf(out, "%s %llu", k ? "," : "", (unsigned long long)r->first_lines[p][k]);
		fprintf(out, "%s)\n", r->problems[p] > RP_FIRST_LINES ? ", ..." : "");
	}
}

static void replay_print_extra(const struct bench *b, FILE *out)
{
	const struct replay_state *st = b->state;
	const struct replay_result *r0 = &st->result[0];
	fprintf(out, "\nTrace: %s, %llu events; the first %llu (%llu page allocations, %s) warm "
		     "the model up, the %.3f s after them are counted; the lists start %s; %llu "
		     "frees of pages allocated before the trace began (replayed with stand-ins); "
		     "%llu pages taken off a CPU's list by allocations the kernel does not trace "
		     "(alloc_pages_bulk: freed again with no allocation since they went onto it; "
		     "played as allocations)\n",
		b->opts.file, (unsigned long long)r0->events, (unsigned long long)r0->warmup_events,
		(unsigned long long)r0->warmup_allocs,
		st->ro.warmup == REPLAY_WARMUP_AUTO ? "a tenth of the trace, at most 10000" : "--warmup",
		(double)r0->trace_ns * 1e-9,
		st->ro.empty_start ? "empty (--start empty)" : "with what the kernel's must have held",
		(unsigned long long)r0->early_frees, (unsigned long long)r0->bulk_takes);
	if (r0->lines_not_used[0])
		fputs(r0->lines_not_used, out);
	for (int i = 0; i < b->nvariants; i++)
		print_problems(b, &b->variants[i], out);

	struct fid_column cols[MAX_VARIANTS + 2];
	char names[MAX_VARIANTS + 2][64];
	int n = 0, after = -1;
	cols[n++] = (struct fid_column){ "kernel", &r0->kernel, -1 };
	for (int i = 0; i < b->nvariants; i++, n++) {
		snprintf(names[n], sizeof(names[n]), "zonealloc %s", b->variants[i].name);
		cols[n] = (struct fid_column){ names[n], &st->result[i].model, 0 };
		after = n;
	}
	if (st->have_predicted) {
		cols[n] = (struct fid_column){ "kernel of --predict", &st->predicted, -1 };
		cols[after].ref = n++;
	}
	fidelity_print(cols, n, out);
}

static void replay_describe_config(const struct bench *b, FILE *out)
{
	const struct replay_state *st = b->state;
	mirror_print(&st->mirror, out);
	const char *zi = st->ro.zoneinfo == st->side_zoneinfo ? st->side_zoneinfo : NULL;
	const char *sc = st->ro.sysctl == st->side_sysctl ? st->side_sysctl : NULL;
	if (zi || sc)
		fprintf(out, "  read beside the trace: %s%s%s (--zoneinfo, --sysctl give others)\n",
			zi ? zi : "", zi && sc ? " " : "", sc ? sc : "");
}

static void replay_json_variant(const struct bench *b, const struct variant *v, FILE *out)
{
	const struct replay_state *st = b->state;
	int i = (int)(v - b->variants);
	const struct replay_result *r = &st->result[i];
	fprintf(out, ", \"fidelity\": ");
	fidelity_json(&r->kernel, &r->model, out);
	if (st->have_predicted && i == b->nvariants - 1) {
		fprintf(out, ", \"predicted\": {\"trace\": ");
		json_string(out, b->opts.predict);
		fprintf(out, ", \"fidelity\": ");
		fidelity_json(&st->predicted, &r->model, out);
		fprintf(out, "}");
	}
	fprintf(out, ", \"mirror\": [");
	for (int n = 0; n < st->mirror.nnotes; n++) {
		fprintf(out, "%s", n ? ", " : "");
		json_string(out, st->mirror.note[n]);
	}
	fprintf(out, "], \"replay\": {\"events\": %llu, \"early_frees\": %llu, \"bulk_takes\": %llu, "
		     "\"warmup_allocs\": %llu", (unsigned long long)r->events,
		(unsigned long long)r->early_frees, (unsigned long long)r->bulk_takes,
		(unsigned long long)r->warmup_allocs);
	for (int p = 0; p < NR_REPLAY_PROBLEMS; p++)
		fprintf(out, ", \"%s\": %llu", replay_problem_key((enum replay_problem)p),
			(unsigned long long)r->problems[p]);
	fprintf(out, "}");
}

/* The model's all-orders rows, and the kernel's, for --sweep. */
static int replay_observations(const struct bench *b, const struct variant *v, const char **names,
			       double *values, int max)
{
	static char kernel_names[NR_FID_ROWS][48];
	const struct replay_state *st = b->state;
	const struct replay_result *r = &st->result[v - b->variants];
	int n = 0;
	for (int row = 0; row < NR_FID_ROWS && n + 2 <= max; row++) {
		snprintf(kernel_names[row], sizeof(kernel_names[row]), "kernel %s",
			 fid_row_metric((enum fid_row)row));
		names[n] = fid_row_metric((enum fid_row)row);
		values[n++] = fidelity_per_1000(&r->model, (enum fid_row)row, -1, FID_ALL);
		names[n] = kernel_names[row];
		values[n++] = fidelity_per_1000(&r->kernel, (enum fid_row)row, -1, FID_ALL);
	}
	return n;
}

static void replay_release(struct bench *b)
{
	struct replay_state *st = b->state;
	for (int i = 0; i < MAX_VARIANTS; i++) {
		fidelity_free(&st->result[i].kernel);
		fidelity_free(&st->result[i].model);
	}
	if (st->have_predicted)
		fidelity_free(&st->predicted);
}

/* The shipped traces (bench/traces/README.md) with the seeds they touch:
 * 000 and 001 on the page traces, 002 on the slab trace as a 224-CPU
 * server, and the prediction: the build recorded with the kernel tuning
 * its per-CPU high, replayed with high pinned as the second recording had
 * it, beside that recording's kernel. */
static const char *const replay_report[] = {
	"@traces/build.trace.xz --ab percpu_pagelist_high_fraction=0:1048576 --predict @traces/build-hfmax.trace.xz",
	"@traces/build.trace.xz --ab pcp_high_order=0:2",
	"@traces/build.trace.xz --ab bulkfree_outside_lock",
	"@traces/udp16k.trace.xz --ab pcp_high_order=0:2",
	"@traces/git-slab.trace.xz --events page,slab --config nr_cpus=224 --ab slub_max_order=3:4,slub_big_system=0:1",
	"@traces/git-slab.trace.xz --events page,slab --ab slub_sheaves=0:2",
	"@traces/build.trace.xz --sweep percpu_pagelist_high_fraction=0,8,64,1024,1048576",
	NULL,
};

const struct experiment exp_replay = {
	.name = "replay",
	.summary = "a kernel's kmem trace (zabench record) through zonealloc; the kernel beside the model",
	.config = "",
	.threads = 1,
	.declare = replay_declare,
	.run = replay_run,
	.release = replay_release,
	.print_extra = replay_print_extra,
	.describe_config = replay_describe_config,
	.json_variant = replay_json_variant,
	.observations = replay_observations,
	.report_runs = replay_report,
	.takes_file = true,
	.fresh_system = true,
	.notes = "Each iteration replays the whole trace on a fresh system that mirrors the "
		 "recorded machine; the fidelity figures are the same in every pass.",
};
