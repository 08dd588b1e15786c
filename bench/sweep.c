/*
 * --sweep KEY=V1,V2,...: an experiment once per value of a configuration
 * key, in one process, each run as it would be alone (its own tables, or
 * its JSON), then one table of every metric's median and the experiment's
 * observations (replay: its fidelity rows) against the value.  In JSON:
 * {"sweep": {"key": K, "values": [...], "runs": [<each run's JSON>]}},
 * which the report's plot draws against the value.
 */
#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "table.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SWEEP_VALUES 16
#define MAX_OBSERVATIONS 16

struct sweep_point {
	char value[64];
	double median[MAX_VARIANTS][MAX_METRICS];
	double obs[MAX_VARIANTS][MAX_OBSERVATIONS];
};

/* The rows' names are the first value's run's; the metrics the last's. */
struct sweep {
	char key[64];
	int nvalues;
	struct sweep_point point[MAX_SWEEP_VALUES];
	int nvariants;
	char variant[MAX_VARIANTS][16];
	int nobs;
	char obs_name[MAX_OBSERVATIONS][48];
	int nmetrics;
	struct metric_def metrics[MAX_METRICS];
};

/* "KEY=V1,V2,..." into s; false if malformed. */
static bool parse_sweep(const char *spec, struct sweep *s)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof(s->key) || !eq[1])
		return false;
	snprintf(s->key, sizeof(s->key), "%.*s", (int)(eq - spec), spec);
	s->nvalues = 0;
	for (const char *p = eq + 1; *p; p += strcspn(p, ","), p += *p == ',') {
		size_t len = strcspn(p, ",");
		if (!len || len >= sizeof(s->point[0].value) || s->nvalues == MAX_SWEEP_VALUES)
			return false;
		snprintf(s->point[s->nvalues++].value, sizeof(s->point[0].value), "%.*s", (int)len, p);
	}
	return s->nvalues > 0 && eq[strlen(eq) - 1] != ',';
}

/* The run of value k's figures, and with k 0 the rows' names. */
static void collect(const struct bench *b, struct sweep *s, int k)
{
	struct sweep_point *pt = &s->point[k];
	const char *names[MAX_OBSERVATIONS];
	s->nmetrics = b->nmetrics;
	memcpy(s->metrics, b->metrics, sizeof(s->metrics));
	if (!k)
		s->nvariants = b->nvariants;
	for (int i = 0; i < b->nvariants; i++) {
		const struct variant *v = &b->variants[i];
		if (!k)
			snprintf(s->variant[i], sizeof(s->variant[i]), "%s", v->name);
		for (int m = 0; m < b->nmetrics; m++) {
			struct summary sum;
			summarize(v->values[m], v->niters, &sum);
			pt->median[i][m] = sum.median;
		}
		if (!b->exp->observations)
			continue;
		int nobs = b->exp->observations(b, v, names, pt->obs[i], MAX_OBSERVATIONS);
		if (k)
			continue;
		s->nobs = nobs;
		for (int o = 0; o < nobs; o++)
			snprintf(s->obs_name[o], sizeof(s->obs_name[o]), "%s", names[o]);
	}
}

/* Rows: each metric and observation of each variant; columns: the values. */
static void print_sweep(const struct sweep *s, FILE *out)
{
	struct table t;
	table_init(&t, 2 + s->nvalues);
	table_add(&t, "Sweep of %s", s->key);
	table_add(&t, "%s", "");
	for (int k = 0; k < s->nvalues; k++)
		table_add(&t, "%s", s->point[k].value);
	for (int i = 0; i < s->nvariants; i++) {
		for (int m = 0; m < s->nmetrics; m++) {
			table_add(&t, "%s (%s), median", s->metrics[m].name, s->metrics[m].unit);
			table_add(&t, "%s", s->variant[i]);
			for (int k = 0; k < s->nvalues; k++)
				table_add_value(&t, s->point[k].median[i][m]);
		}
		for (int o = 0; o < s->nobs; o++) {
			table_add(&t, "%s", s->obs_name[o]);
			table_add(&t, "%s", s->variant[i]);
			for (int k = 0; k < s->nvalues; k++)
				table_add_value(&t, s->point[k].obs[i][o]);
		}
	}
	fputc('\n', out);
	table_print(&t, out);
	table_free(&t);
}

/* The run of one value: the user's --config with KEY=V last, so it wins. */
static int run_point(int argc, char **argv, struct sweep *s, int k, const struct sweep_out *o)
{
	static struct bench b;
	char config[CONFIG_LEN];
	int rc = bench_prepare(&b, argc, argv);
	if (rc)
		return rc;
	if ((size_t)snprintf(config, sizeof(config), "%s%s%s=%s", b.opts.config ? b.opts.config : "",
			     b.opts.config ? "," : "", s->key, s->point[k].value) >= sizeof(config))
		return usage_error("--sweep: the configuration is too long with %s", s->key);
	b.opts.config = config;
	b.opts.sweep = NULL;
	b.opts.quick |= o->quick;
	if (o->seconds)
		b.opts.seconds = o->seconds;
	if ((rc = bench_run(&b)))
		return rc;
	if (o->json)
		print_json(&b, o->json);
	if (o->txt) {
		fprintf(o->txt, "%s== %s=%s\n", k ? "\n" : "", s->key, s->point[k].value);
		print_table(&b, o->txt);
	}
	collect(&b, s, k);
	bench_finish(&b);
	return 0;
}

static void json_head(const struct sweep *s, FILE *out)
{
	fprintf(out, "{\"sweep\": {\"key\": ");
	json_string(out, s->key);
	fprintf(out, ", \"values\": [");
	for (int k = 0; k < s->nvalues; k++) {
		fprintf(out, "%s", k ? ", " : "");
		json_string(out, s->point[k].value);
	}
	fprintf(out, "], \"runs\": [");
}

int run_sweep(int argc, char **argv, const char *spec, const struct sweep_out *o)
{
	static struct sweep s;
	if (!parse_sweep(spec, &s))
		return usage_error("bad --sweep '%s' (KEY=V1,V2,... with at most 16 values)", spec);
	if (o->json)
		json_head(&s, o->json);
	int rc = 0;
	for (int k = 0; k < s.nvalues && !rc; k++) {
		if (o->json && k)
			fprintf(o->json, ", ");
		rc = run_point(argc, argv, &s, k, o);
	}
	if (o->json)            /* a document even when a run failed */
		fprintf(o->json, "]}}\n");
	if (rc)
		return rc;
	if (o->txt)
		print_sweep(&s, o->txt);
	return 0;
}
