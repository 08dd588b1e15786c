/*
 * Output: the mmtests-style comparison table, the JSON contract, and
 * `zabench report`, which runs every experiment and writes a Markdown
 * report with plots.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

long machine_cores(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

unsigned long long machine_memory(void)
{
	return (unsigned long long)sysconf(_SC_PHYS_PAGES) * (unsigned long long)sysconf(_SC_PAGESIZE);
}

static void print_header(const struct bench *b, FILE *out)
{
	const struct bench_opts *o = &b->opts;
	fprintf(out, "zabench %s: %s\n", b->exp->name, b->exp->summary);
	fprintf(out, "machine: %ld cores, %.1f GiB; %d threads; %d iterations of %.2f s per variant"
		     " (after one warm-up)\n",
		machine_cores(), (double)machine_memory() / (1 << 30), o->threads, o->iterations,
		o->seconds);
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, "%-7s %s\n", b->variants[i].name, variant_config(&b->variants[i]));
	fputc('\n', out);
}

/* Hmean for rates, Amean for times: the mean mmtests would print. */
static double mean_of(const struct summary *s, enum direction dir)
{
	return dir == HIGHER_IS_BETTER ? s->hmean : s->amean;
}

static void print_metric_rows(const struct bench *b, int m, FILE *out)
{
	const struct metric_def *def = &b->metrics[m];
	struct summary s[MAX_VARIANTS];
	for (int i = 0; i < b->nvariants; i++)
		summarize(b->variants[i].values[m], b->variants[i].niters, &s[i]);
	static const char *const rows[] = { "Min", "Median", "Max", "Mean", "Stddev" };
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		const char *label = rows[r];
		if (!strcmp(label, "Mean"))
			label = def->dir == HIGHER_IS_BETTER ? "Hmean" : "Amean";
		fprintf(out, "%-7s %-24s", label, def->name);
		double base = 0;
		for (int i = 0; i < b->nvariants; i++) {
			double v = r == 0 ? s[i].min : r == 1 ? s[i].median : r == 2 ? s[i].max
				 : r == 3 ? mean_of(&s[i], def->dir) : s[i].stddev;
			enum direction dir = r == 4 ? LOWER_IS_BETTER : def->dir;
			if (i == 0)
				base = v;
			fprintf(out, " %12.2f (%7.2f%%)", v, pct_change(base, v, dir));
		}
		fputc('\n', out);
	}
}

/* Ratios of counters that explain lock behaviour, when they apply. */
static const struct {
	const char *label, *num, *den;
} ratios[] = {
	{ "ns held per zone-lock acquisition", "zone_lock_hold_ns", "zone_lock_acquire" },
	{ "ns waited per contended acquisition", "zone_lock_wait_ns", "zone_lock_contended" },
	{ "ns held per refill", "pcp_refill_hold_ns", "pcp_refill" },
	{ "pages per refill", "pcp_refill_pages", "pcp_refill" },
	{ "ns held per bulk free", "pcp_bulkfree_hold_ns", "pcp_bulkfree" },
	{ "pages per bulk free", "pcp_bulkfree_pages", "pcp_bulkfree" },
};

static int stat_index(const char *name)
{
	for (int i = 0; i < za_stat_count(); i++)
		if (!strcmp(za_stat_name(i), name))
			return i;
	return -1;
}

static void print_counters(const struct bench *b, FILE *out)
{
	fprintf(out, "\n%-32s", "Counters per op");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14s", b->variants[i].name);
	fprintf(out, "\n%-32s", "ops");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14lld", b->variants[i].ops);
	fputc('\n', out);
	for (int c = 0; c < za_stat_count(); c++) {
		if (za_stat_kind(c) != ZA_STAT_EVENT)
			continue;
		bool any = false;
		for (int i = 0; i < b->nvariants; i++)
			any |= b->variants[i].counters[c] != 0;
		if (!any)
			continue;
		fprintf(out, "%-32s", za_stat_name(c));
		for (int i = 0; i < b->nvariants; i++) {
			const struct variant *v = &b->variants[i];
			fprintf(out, " %14.6g", v->ops ? (double)v->counters[c] / (double)v->ops : 0.0);
		}
		fputc('\n', out);
	}
	for (int e = 0; e < b->variants[0].nextra; e++) {
		fprintf(out, "%-32s", b->variants[0].extra_name[e]);
		for (int i = 0; i < b->nvariants; i++)
			fprintf(out, " %14lld", b->variants[i].extra_value[e]);
		fprintf(out, "   (at the end)\n");
	}
	bool header = false;
	for (size_t r = 0; r < sizeof(ratios) / sizeof(ratios[0]); r++) {
		int num = stat_index(ratios[r].num), den = stat_index(ratios[r].den);
		bool any = false;
		for (int i = 0; i < b->nvariants; i++)
			any |= b->variants[i].counters[den] != 0;
		if (!any)
			continue;
		if (!header) {
			fprintf(out, "\n%-38s", "Lock behaviour");
			for (int i = 0; i < b->nvariants; i++)
				fprintf(out, " %14s", b->variants[i].name);
			fputc('\n', out);
			header = true;
		}
		fprintf(out, "%-38s", ratios[r].label);
		for (int i = 0; i < b->nvariants; i++) {
			long long d = b->variants[i].counters[den];
			fprintf(out, " %14.1f", d ? (double)b->variants[i].counters[num] / (double)d : 0.0);
		}
		fputc('\n', out);
	}
	int peak = stat_index("pcp_bulkfree_hold_max_ns");
	if (header) {
		fprintf(out, "%-38s", "longest bulk-free hold (ns)");
		for (int i = 0; i < b->nvariants; i++)
			fprintf(out, " %14lld", b->variants[i].counters[peak]);
		fputc('\n', out);
	}
}

void print_table(const struct bench *b, FILE *out)
{
	if (b->exp->print) {
		b->exp->print(b, out);
		return;
	}
	print_header(b, out);
	fprintf(out, "%-32s", "");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %12s %10s", b->variants[i].name, "");
	fputc('\n', out);
	for (int m = 0; m < b->nmetrics; m++)
		print_metric_rows(b, m, out);
	print_counters(b, out);
	if (b->exp->print_extra)
		b->exp->print_extra(b, out);
}

/* ------------------------------------------------------------------------
 * JSON
 * ------------------------------------------------------------------------ */
/* The effective configuration of a memory system, or what an
 * experiment's own variant is. */
const char *variant_config(const struct variant *v)
{
	return v->mm ? za_mm_config_string(v->mm) : v->config;
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void json_number(FILE *out, double v)
{
	if (v != v || v > 1e300 || v < -1e300)
		fprintf(out, "null");
	else
		fprintf(out, "%.6g", v);
}

static void json_metric(FILE *out, const struct variant *v, int m)
{
	struct summary s;
	summarize(v->values[m], v->niters, &s);
	fprintf(out, "{\"values\": [");
	for (int k = 0; k < v->niters; k++) {
		fprintf(out, k ? ", " : "");
		json_number(out, v->values[m][k]);
	}
	const double fields[] = { s.hmean, s.amean, s.stddev, s.min, s.max, s.median };
	const char *const names[] = { "hmean", "amean", "stddev", "min", "max", "median" };
	fprintf(out, "]");
	for (int f = 0; f < 6; f++) {
		fprintf(out, ", \"%s\": ", names[f]);
		json_number(out, fields[f]);
	}
	fprintf(out, "}");
}

void print_json(const struct bench *b, FILE *out)
{
	fprintf(out, "{\"experiment\": ");
	json_string(out, b->exp->name);
	fprintf(out, ", \"machine\": {\"cores\": %ld, \"memory\": %llu}, \"threads\": %d, "
		     "\"iterations\": %d, \"seconds\": %g, \"metric_directions\": {",
		machine_cores(), machine_memory(), b->opts.threads, b->opts.iterations,
		b->opts.seconds);
	for (int m = 0; m < b->nmetrics; m++) {
		fprintf(out, "%s", m ? ", " : "");
		json_string(out, b->metrics[m].name);
		fprintf(out, ": \"%s\"", b->metrics[m].dir == HIGHER_IS_BETTER ? "higher" : "lower");
	}
	fprintf(out, "}, \"variants\": [");
	for (int i = 0; i < b->nvariants; i++) {
		const struct variant *v = &b->variants[i];
		fprintf(out, "%s{\"name\": ", i ? ", " : "");
		json_string(out, v->name);
		fprintf(out, ", \"config\": ");
		json_string(out, variant_config(v));
		fprintf(out, ", \"metrics\": {");
		for (int m = 0; m < b->nmetrics; m++) {
			fprintf(out, "%s", m ? ", " : "");
			json_string(out, b->metrics[m].name);
			fprintf(out, ": ");
			json_metric(out, v, m);
		}
		fprintf(out, "}, \"counters\": {");
		for (int c = 0; v->mm && c < za_stat_count(); c++) {
			json_string(out, za_stat_name(c));
			fprintf(out, ": %lld, ", v->counters[c]);
		}
		for (int e = 0; e < v->nextra; e++) {
			json_string(out, v->extra_name[e]);
			fprintf(out, ": %lld, ", v->extra_value[e]);
		}
		fprintf(out, "\"ops\": %lld}}", v->ops);
	}
	fprintf(out, "]}\n");
}
