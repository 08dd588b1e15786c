/*
 * zabench top's views, as lines of text: the overview (memory, rates,
 * free pages by order and type, the largest slab caches), the slab caches
 * (slabtop's columns) and the reports as the process published them.
 * The line output and the full screen both draw from here.
 */
#include "top.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char top_view_keys[NR_VIEWS] = { 'o', 's', 'b', 'v', 'z', 'p' };
const char *const top_view_names[NR_VIEWS] = { "overview", "slabs", "buddyinfo", "vmstat",
					       "zoneinfo", "pagetypeinfo" };

static int stat_index(const struct top_sample *s, const char *name)
{
	for (int i = 0; i < s->nr_stats; i++)
		if (!strcmp(za_peek_stat_name(s->peek, i), name))
			return i;
	return -1;
}

long long top_value(const struct top_sample *s, const char *name)
{
	int i = stat_index(s, name);
	return i < 0 ? 0 : s->cur[i];
}

double top_rate(const struct top_sample *s, const char *name)
{
	int i = stat_index(s, name);
	if (i < 0 || s->cur_ns <= s->prev_ns || za_peek_stat_kind(s->peek, i) != ZA_STAT_EVENT)
		return 0;
	return (double)(s->cur[i] - s->prev[i]) * 1e9 / (double)(s->cur_ns - s->prev_ns);
}

static double mib(long long pages)
{
	return (double)pages / 256;
}

/* A slab cache of the published slabinfo. */
struct cache_row {
	char name[32];
	long active, objects, slabs;
	unsigned int size, pages_per_slab;
};

static double cache_bytes(const struct cache_row *c)
{
	return (double)c->slabs * (double)c->pages_per_slab * 4096;
}

static enum top_sort sort_key;

static int cache_cmp(const void *a, const void *b)
{
	const struct cache_row *x = a, *y = b;
	if (sort_key == SORT_NAME)
		return strcmp(x->name, y->name);
	double vx = sort_key == SORT_OBJECTS ? (double)x->active : cache_bytes(x);
	double vy = sort_key == SORT_OBJECTS ? (double)y->active : cache_bytes(y);
	return vx < vy ? 1 : vx > vy ? -1 : strcmp(x->name, y->name);
}

/* The caches of the slabinfo text (its two header lines skipped); how
 * many, at most max, sorted. */
static int parse_slabinfo(const char *text, struct cache_row *rows, int max, enum top_sort sort)
{
	int n = 0;
	for (const char *line = text; line && *line && n < max; line = strchr(line, '\n')) {
		line += *line == '\n';
		struct cache_row c = { 0 };
		if (*line == '#' || !strncmp(line, "slabinfo", 8) ||
		    sscanf(line, "%31s %ld %ld %u %*u %u : tunables %*u %*u %*u : slabdata %*d %ld",
			   c.name, &c.active, &c.objects, &c.size, &c.pages_per_slab, &c.slabs) != 6)
			continue;
		rows[n++] = c;
	}
	sort_key = sort;
	qsort(rows, (size_t)n, sizeof(*rows), cache_cmp);
	return n;
}

#define MAX_CACHES 512

static void draw_caches(FILE *out, const struct top_sample *s, enum top_sort sort, int limit)
{
	static struct cache_row rows[MAX_CACHES];
	const char *text = za_peek_report(s->peek, "slabinfo");
	if (!text) {
		fprintf(out, "(no slab caches published yet)\n");
		return;
	}
	int n = parse_slabinfo(text, rows, MAX_CACHES, sort);
	fprintf(out, "%8s %8s %5s %7s %9s  %s\n", "ACTIVE", "OBJS", "USE", "OBJ SIZE", "CACHE SIZE",
		"NAME");
	for (int i = 0; i < n && i < limit; i++) {
		const struct cache_row *c = &rows[i];
		fprintf(out, "%8ld %8ld %4.0f%% %7.2fK %8.1fK  %s\n", c->active, c->objects,
			c->objects ? 100.0 * (double)c->active / (double)c->objects : 0,
			c->size / 1024.0, cache_bytes(c) / 1024, c->name);
	}
}

static void draw_memory(FILE *out, const struct top_sample *s)
{
	const unsigned long long *kb = s->rss_kb;
	fprintf(out, "RSS %.1f MiB: anon %.1f, file %.1f, shmem %.1f\n", kb[0] / 1024.0,
		kb[1] / 1024.0, kb[2] / 1024.0, kb[3] / 1024.0);
	fprintf(out, "pages: allocated %.1f MiB, free %.1f MiB (of which on per-CPU lists %.1f), "
		"slab %.1f MiB, managed %.1f MiB\n", mib(top_value(s, "nr_allocated_pages")),
		mib(top_value(s, "nr_free_pages")), mib(top_value(s, "nr_pcp_pages")),
		mib(top_value(s, "nr_slab_pages")), mib(top_value(s, "nr_managed_pages")));
	const char *rss = za_peek_report(s->peek, "rss");
	const char *where = rss ? strstr(rss, "  where the RSS") : NULL;
	if (where)              /* the malloc's: what its RSS is made of */
		fputs(where + 2, out);
}

/* The rows of per-second rates: a label, then name=counter pairs. */
static void rate_row(FILE *out, const struct top_sample *s, const char *label,
		     const char *const *names, const char *const *titles, int n)
{
	fprintf(out, "%-11s", label);
	for (int i = 0; i < n; i++)
		fprintf(out, " %s %-9.0f", titles[i], top_rate(s, names[i]));
	fputc('\n', out);
}

double top_rate_orders(const struct top_sample *s, const char *prefix)
{
	static const char *const orders[] = { "order0", "order1", "order2", "order3", "thp" };
	double sum = 0;
	for (int i = 0; i < 5; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s%s", prefix, orders[i]);
		sum += top_rate(s, name);
	}
	return sum;
}

static void draw_rates(FILE *out, const struct top_sample *s)
{
	fprintf(out, "per second\n");
	rate_row(out, s, "pages", (const char *[]){ "pgalloc", "pgfree", "alloc_fail" },
		 (const char *[]){ "alloc", "free", "failed" }, 3);
	double hits = top_rate_orders(s, "pcp_alloc_hit_");
	double misses = top_rate_orders(s, "pcp_alloc_miss_");
	fprintf(out, "%-11s hit %-9.0f miss %-9.0f (%.1f%% hits)\n", "per-CPU", hits, misses,
		hits + misses ? 100 * hits / (hits + misses) : 0);
	rate_row(out, s, "refill", (const char *[]){ "pcp_refill", "pcp_refill_pages" },
		 (const char *[]){ "lists", "pages" }, 2);
	rate_row(out, s, "drain", (const char *[]){ "pcp_bulkfree", "pcp_bulkfree_pages" },
		 (const char *[]){ "lists", "pages" }, 2);
	double locks = top_rate(s, "zone_lock_acquire");
	fprintf(out, "%-11s taken %-9.0f contended %-9.0f held %.0f ns each\n", "zone lock", locks,
		top_rate(s, "zone_lock_contended"), locks ? top_rate(s, "zone_lock_hold_ns") / locks : 0);
	rate_row(out, s, "reclaim", (const char *[]){ "kswapd_wakeup", "pgscan_kswapd", "pgscan_direct",
						     "pgsteal_kswapd", "pgactivate" },
		 (const char *[]){ "kswapd", "scan", "direct", "stolen", "activated" }, 5);
	if (top_value(s, "malloc_alloc_hits"))
		rate_row(out, s, "malloc", (const char *[]){ "malloc_alloc_hits", "malloc_alloc_misses",
							    "malloc_free_hits", "malloc_free_misses" },
			 (const char *[]){ "hit", "miss", "free hit", "miss" }, 4);
	else if (top_value(s, "malloc_alloc_misses") || top_value(s, "malloc_free_misses"))
		fprintf(out, "%-11s miss %-9.0f free miss %-9.0f (hits are counted with ZA_STATS=1)\n",
			"malloc", top_rate(s, "malloc_alloc_misses"), top_rate(s, "malloc_free_misses"));
	rate_row(out, s, "slab", (const char *[]){ "slab_alloc_fastpath", "slab_alloc_slowpath",
						  "slab_free_fastpath", "slab_free_slowpath",
						  "list_lock_acquire" },
		 (const char *[]){ "alloc", "slow", "free", "slow", "list_lock" }, 5);
}

static void draw_free(FILE *out, const struct top_sample *s)
{
	fprintf(out, "free blocks by order:");
	for (int o = 0; o <= 14; o++) {
		char name[32];
		snprintf(name, sizeof(name), "nr_free_blocks_order%d", o);
		long long v = top_value(s, name);
		if (v || o <= 10)
			fprintf(out, " %lld", v);
	}
	fprintf(out, "\nfree pages by type: unmovable %lld, movable %lld, reclaimable %lld\n",
		top_value(s, "nr_free_pages_unmovable"), top_value(s, "nr_free_pages_movable"),
		top_value(s, "nr_free_pages_reclaimable"));
}

static void draw_overview(FILE *out, const struct top_sample *s)
{
	draw_memory(out, s);
	fputc('\n', out);
	draw_rates(out, s);
	fputc('\n', out);
	draw_free(out, s);
	fputc('\n', out);
	draw_caches(out, s, SORT_MEMORY, 8);
}

void top_draw(FILE *out, const struct top_sample *s, enum top_view v, enum top_sort sort)
{
	const za_peek_t *p = s->peek;
	time_t now = time(NULL);
	double age = (double)now - (double)(za_peek_time_ns(p) / 1000000000ull);
	fprintf(out, "zonealloc in %d (%s): %s, published %.0f s ago (%llu publishes)\n",
		za_peek_pid(p), za_peek_comm(p), top_view_names[v], age < 0 ? 0 : age,
		za_peek_publishes(p));
	if (v == VIEW_OVERVIEW) {
		draw_overview(out, s);
	} else if (v == VIEW_SLABS) {
		draw_caches(out, s, sort, MAX_CACHES);
	} else {
		const char *text = za_peek_report(p, top_view_names[v]);
		fputs(text ? text : "(not published yet: the process publishes reports while watched)\n",
		      out);
	}
}
