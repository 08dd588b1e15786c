/*
 * zabench top: a running process's zonealloc seen from outside it, through
 * the segment its system publishes (za_peek_*).  top.c reads and prints;
 * top_screen.c is the full-screen view (ncurses), top_view.c the views
 * both draw from.
 */
#ifndef ZABENCH_TOP_H
#define ZABENCH_TOP_H

#include <stdbool.h>
#include <stdio.h>
#include <zonealloc.h>

/* Two reads of one system: the rates are between their publishes. */
struct top_sample {
	za_peek_t *peek;
	int nr_stats;                   /* of prev and cur: the peek's when opened */
	bool failed;                    /* a read failed: the process is gone, say */
	long long *prev, *cur;          /* counters, za_peek_stat order */
	unsigned long long prev_ns, cur_ns;
	unsigned long long rss_kb[4];   /* VmRSS, RssAnon, RssFile, RssShmem */
};

enum top_view { VIEW_OVERVIEW, VIEW_SLABS, VIEW_BUDDY, VIEW_VMSTAT, VIEW_ZONEINFO,
		VIEW_PAGETYPE, NR_VIEWS };
enum top_sort { SORT_MEMORY, SORT_OBJECTS, SORT_NAME };

/* top_view.c: the lines of a view, into out (one per line). */
void top_draw(FILE *out, const struct top_sample *s, enum top_view v, enum top_sort sort);
/* Per second between the two reads, of counter name; 0 if none. */
double top_rate(const struct top_sample *s, const char *name);
/* top_rate summed over the per-CPU orders: prefix "pcp_alloc_hit_" adds
 * pcp_alloc_hit_order0 .. _order3 and _thp. */
double top_rate_orders(const struct top_sample *s, const char *prefix);
/* Its value now; 0 if none. */
long long top_value(const struct top_sample *s, const char *name);
/* The key that shows each view, and its title. */
extern const char top_view_keys[NR_VIEWS];
extern const char *const top_view_names[NR_VIEWS];

/* top_screen.c: the full-screen view until q; false if it is not built
 * (no ncurses) or the terminal cannot do it. */
bool top_screen(struct top_sample *s, double interval, bool (*next)(struct top_sample *));
extern const bool top_screen_built;

#endif
