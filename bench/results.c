/*
 * One run's results as zabench prints them: the mmtests-style comparison
 * table (print_table) and the JSON contract (print_json), with the
 * formatting of values and the machine's and configuration's facts they
 * share.  `zabench report` (report.c) gathers many runs' into one document.
 */
#include "bench.h"
#include "table.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

long machine_cores(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

unsigned long long machine_memory(void)
{
	return (unsigned long long)sysconf(_SC_PHYS_PAGES) * (unsigned long long)sysconf(_SC_PAGESIZE);
}

void config_value(const char *config, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	out[0] = 0;
	for (const char *p = config; *p; p += strcspn(p, ","), p += *p == ',') {
		if (!strncmp(p, key, klen) && p[klen] == '=') {
			size_t n = strcspn(p + klen + 1, ",");
			snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p + klen + 1);
			return;
		}
	}
}

/* The keys in which variant v's configuration differs from the first's. */
static void config_difference(const struct bench *b, const struct variant *v, FILE *out)
{
	const char *mine = variant_config(v), *first = variant_config(&b->variants[0]);
	bool any = false;
	for (const char *p = mine; *p; p += strcspn(p, ","), p += *p == ',') {
		char key[64], a[128], c[128];
		size_t n = strcspn(p, "=,");
		snprintf(key, sizeof(key), "%.*s", (int)(n < sizeof(key) ? n : sizeof(key) - 1), p);
		config_value(mine, key, a, sizeof(a));
		config_value(first, key, c, sizeof(c));
		if (v == &b->variants[0]) {
			/* the first variant: the keys any other variant changes */
			bool changed = false;
			for (int i = 1; i < b->nvariants; i++) {
				config_value(variant_config(&b->variants[i]), key, c, sizeof(c));
				changed |= strcmp(a, c) != 0;
			}
			if (!changed)
				continue;
		} else if (!strcmp(a, c)) {
			continue;
		}
		fprintf(out, "%s%s=%s", any ? "," : "", key, a);
		any = true;
	}
	if (!any)
		fprintf(out, "(same)");
}

static void print_header(const struct bench *b, FILE *out)
{
	const struct bench_opts *o = &b->opts;
	char threads[128];
	if (b->exp->describe_threads)
		b->exp->describe_threads(b, threads, sizeof(threads));
	else
		snprintf(threads, sizeof(threads), "%d thread%s", o->threads, o->threads == 1 ? "" : "s");
	fprintf(out, "zabench %s: %s\n", b->exp->name, b->exp->summary);
	fprintf(out, "machine: %ld cores, %.1f GiB; %s; %d iteration%s of %.2f s per variant"
		     " (after one warm-up)",
		machine_cores(), (double)machine_memory() / (1 << 30), threads,
		b->variants[0].niters, b->variants[0].niters == 1 ? "" : "s", o->seconds);
	if (b->extra_rounds)
		fprintf(out, ", %d of them added while the verdict was open", b->extra_rounds);
	fprintf(out, "\nconfiguration: %s%s%s (za_mm_config_string in the JSON has every key)\n",
		b->base_config[0] ? b->base_config : b->exp->config, o->config ? "," : "",
		o->config ? o->config : "");
	if (b->exp->describe_config)
		b->exp->describe_config(b, out);
	for (int i = 0; b->nvariants > 1 && i < b->nvariants; i++) {
		fprintf(out, "%-7s ", b->variants[i].name);
		config_difference(b, &b->variants[i], out);
		fputc('\n', out);
	}
	fputc('\n', out);
}

/* Hmean for rates, Amean for times: the mean mmtests would print. */
static double mean_of(const struct summary *s, enum direction dir)
{
	return dir == HIGHER_IS_BETTER ? s->hmean : s->amean;
}

void format_value(double v, char *out, size_t len)
{
	if (v != v)
		snprintf(out, len, "n/a");
	else if (v == 0)
		snprintf(out, len, "0");
	else if (fabs(v) < 0.01)
		snprintf(out, len, "%.3g", v);
	else if (fabs(v) < 1e6)
		snprintf(out, len, "%.2f", v);
	else
		snprintf(out, len, "%.0f", v);
}

const char *op_scale(double per_op, double *scale)
{
	static const struct {
		double scale;
		const char *ops;
	} scales[] = { { 1, "op" }, { 1e3, "1k ops" }, { 1e6, "1M ops" }, { 1e9, "1G ops" } };
	size_t i = 0;
	while (per_op != 0 && i + 1 < sizeof(scales) / sizeof(scales[0]) &&
	       fabs(per_op) * scales[i].scale < 0.95)
		i++;
	*scale = scales[i].scale;
	return scales[i].ops;
}

void table_add_value(struct table *t, double v)
{
	char buf[TABLE_CELL];
	format_value(v, buf, sizeof(buf));
	table_add(t, "%s", buf);
}

static void add_pct(struct table *t, double pct)
{
	if (pct != pct)
		table_add(t, "(n/a)");
	else
		table_add(t, "(%+.2f%%)", pct + 0.0);
}

static void add_metric_rows(const struct bench *b, int m, struct table *t)
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
		table_add(t, "%s", label);
		table_add(t, "%s (%s)", def->name, def->unit);
		double base = 0;
		for (int i = 0; i < b->nvariants; i++) {
			double v = r == 0 ? s[i].min : r == 1 ? s[i].median : r == 2 ? s[i].max
				 : r == 3 ? mean_of(&s[i], def->dir) : s[i].stddev;
			enum direction dir = r == 4 ? LOWER_IS_BETTER : def->dir;
			if (i == 0)
				base = v;
			table_add_value(t, v);
			add_pct(t, pct_change(base, v, dir));
		}
	}
}

static void print_metrics(const struct bench *b, FILE *out)
{
	struct table t;
	table_init(&t, 2 + 2 * b->nvariants);
	table_add(&t, "%s", "");
	table_add(&t, "%s", "");
	for (int i = 0; i < b->nvariants; i++) {
		table_add(&t, "%s", b->variants[i].name);
		table_add(&t, "%s", "");
	}
	for (int m = 0; m < b->nmetrics; m++)
		add_metric_rows(b, m, &t);
	table_print(&t, out);
	table_free(&t);
}

/*
 * Each metric's change from "before" to "after" with its interval and
 * verdict (stats.c), for an A/B of two systems.
 */
static void print_verdicts(const struct bench *b, FILE *out)
{
	if (!is_ab(b))
		return;
	struct table t;
	table_init(&t, 4);
	table_add(&t, "Verdict (after vs before)");
	table_add(&t, "change");
	table_add(&t, "%.0f%% interval", CONFIDENCE * 100);
	table_add(&t, "verdict");
	for (int m = 0; m < b->nmetrics; m++) {
		struct comparison c;
		compare_ab(b, m, &c);
		table_add(&t, "%s%s", b->metrics[m].name, m == b->headline ? " (headline)" : "");
		if (c.verdict == VERDICT_NA) {
			table_add(&t, "n/a");
			table_add(&t, "n/a");
		} else {
			table_add(&t, "%+.1f%%", c.change * 100 + 0.0);
			table_add(&t, "[%+.1f%%, %+.1f%%]", c.lo * 100 + 0.0, c.hi * 100 + 0.0);
		}
		table_add(&t, "%s", verdict_name(c.verdict));
	}
	fputc('\n', out);
	table_print(&t, out);
	table_free(&t);
	fprintf(out, "(change: median of the after/before ratios, positive = better; interval: Hodges-Lehmann / "
		     "Mann-Whitney, %.0f%%; an interval that holds 0 is within noise)\n",
		CONFIDENCE * 100);
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

int stat_index(const char *name)
{
	for (int i = 0; i < za_stat_count(); i++)
		if (!strcmp(za_stat_name(i), name))
			return i;
	return -1;
}

static void add_counter_rows(const struct bench *b, struct table *t)
{
	for (int c = 0; c < za_stat_count(); c++) {
		if (za_stat_kind(c) != ZA_STAT_EVENT)
			continue;
		bool any = false;
		for (int i = 0; i < b->nvariants; i++)
			any |= b->variants[i].counters[c] != 0;
		if (!any)
			continue;
		double top = 0, scale;
		for (int i = 0; i < b->nvariants; i++) {
			const struct variant *v = &b->variants[i];
			if (v->ops)
				top = fmax(top, fabs((double)v->counters[c] / (double)v->ops));
		}
		table_add(t, "%s", za_stat_name(c));
		table_add(t, "per %s", op_scale(top, &scale));
		for (int i = 0; i < b->nvariants; i++) {
			const struct variant *v = &b->variants[i];
			table_add_value(t, v->ops ? (double)v->counters[c] / (double)v->ops * scale : NAN);
		}
	}
	for (int e = 0; e < b->variants[0].nextra; e++) {
		table_add(t, "%s", b->variants[0].extra_name[e]);
		table_add(t, "at the end");
		for (int i = 0; i < b->nvariants; i++)
			table_add(t, "%lld", b->variants[i].extra_value[e]);
	}
}

static void print_lock_behaviour(const struct bench *b, FILE *out)
{
	struct table t;
	table_init(&t, 1 + b->nvariants);
	for (size_t r = 0; r < sizeof(ratios) / sizeof(ratios[0]); r++) {
		int num = stat_index(ratios[r].num), den = stat_index(ratios[r].den);
		bool any = false;
		for (int i = 0; i < b->nvariants; i++)
			any |= b->variants[i].counters[den] != 0;
		if (!any)
			continue;
		if (!t.ncells) {
			table_add(&t, "Lock behaviour");
			for (int i = 0; i < b->nvariants; i++)
				table_add(&t, "%s", b->variants[i].name);
		}
		table_add(&t, "%s", ratios[r].label);
		for (int i = 0; i < b->nvariants; i++) {
			long long d = b->variants[i].counters[den];
			table_add_value(&t, d ? (double)b->variants[i].counters[num] / (double)d : NAN);
		}
	}
	int peak = stat_index("pcp_bulkfree_hold_max_ns");
	if (t.ncells) {
		table_add(&t, "longest bulk-free hold (ns)");
		for (int i = 0; i < b->nvariants; i++)
			table_add(&t, "%lld", b->variants[i].counters[peak]);
		fputc('\n', out);
		table_print(&t, out);
		bool long_hold = false;
		for (int i = 0; i < b->nvariants; i++)
			long_hold |= b->variants[i].counters[peak] > 1000000;
		if (long_hold)
			fprintf(out, "(hold times are wall-clock: a holder that the scheduler preempts, as "
				     "on a machine with fewer cores than threads, holds the lock until it "
				     "runs again; the counts are exact)\n");
	}
	table_free(&t);
}

static void print_counters(const struct bench *b, FILE *out)
{
	struct table t;
	table_init(&t, 2 + b->nvariants);
	table_add(&t, "Counters");
	table_add(&t, "%s", "");
	for (int i = 0; i < b->nvariants; i++)
		table_add(&t, "%s", b->variants[i].name);
	table_add(&t, "ops");
	table_add(&t, "measured");
	for (int i = 0; i < b->nvariants; i++)
		table_add(&t, "%lld", b->variants[i].ops);
	add_counter_rows(b, &t);
	fputc('\n', out);
	table_print(&t, out);
	table_free(&t);
	print_lock_behaviour(b, out);
}

void print_table(const struct bench *b, FILE *out)
{
	if (b->exp->print) {
		b->exp->print(b, out);
		return;
	}
	print_header(b, out);
	print_metrics(b, out);
	print_verdicts(b, out);
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

void json_string(FILE *out, const char *s)
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

void json_number(FILE *out, double v)
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
	fprintf(out, ", \"title\": ");
	json_string(out, b->title);
	fprintf(out, ", \"ab\": ");
	json_string(out, b->opts.ab ? b->opts.ab : "");
	fprintf(out, ", \"headline\": ");
	json_string(out, b->metrics[b->headline].name);
	fprintf(out, ", \"metric_units\": {");
	for (int m = 0; m < b->nmetrics; m++) {
		fprintf(out, "%s", m ? ", " : "");
		json_string(out, b->metrics[m].name);
		fprintf(out, ": ");
		json_string(out, b->metrics[m].unit);
	}
	fprintf(out, "}");
	fprintf(out, ", \"machine\": {\"cores\": %ld, \"memory\": %llu}, \"threads\": %d, "
		     "\"iterations\": %d, \"seconds\": %g, \"metric_directions\": {",
		machine_cores(), machine_memory(), b->opts.threads, b->variants[0].niters,
		b->opts.seconds);
	for (int m = 0; m < b->nmetrics; m++) {
		fprintf(out, "%s", m ? ", " : "");
		json_string(out, b->metrics[m].name);
		fprintf(out, ": \"%s\"", b->metrics[m].dir == HIGHER_IS_BETTER ? "higher" : "lower");
	}
	/* Counters that are levels at the end, not events to divide by ops. */
	fprintf(out, "}, \"gauges\": [");
	for (int c = 0, n = 0; c < za_stat_count(); c++) {
		if (za_stat_kind(c) == ZA_STAT_EVENT)
			continue;
		fprintf(out, "%s", n++ ? ", " : "");
		json_string(out, za_stat_name(c));
	}
	fprintf(out, "], \"variants\": [");
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
		fprintf(out, "\"ops\": %lld}", v->ops);
		if (b->exp->json_variant)
			b->exp->json_variant(b, v, out);
		fprintf(out, "}");
	}
	fprintf(out, "], \"comparisons\": {");
	for (int m = 0; is_ab(b) && m < b->nmetrics; m++) {
		struct comparison c;
		compare_ab(b, m, &c);
		fprintf(out, "%s", m ? ", " : "");
		json_string(out, b->metrics[m].name);
		fprintf(out, ": {\"verdict\": ");
		json_string(out, verdict_name(c.verdict));
		const double fields[] = { c.change, c.lo, c.hi, c.level };
		const char *const names[] = { "change", "lo", "hi", "level" };
		for (int f = 0; f < 4; f++) {
			fprintf(out, ", \"%s\": ", names[f]);
			json_number(out, c.verdict == VERDICT_NA ? NAN : fields[f]);
		}
		fprintf(out, "}");
	}
	fprintf(out, "}, \"extra_rounds\": %d}\n", b->extra_rounds);
}
