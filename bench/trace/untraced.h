/*
 * What the kernel did that its trace does not show, found from what the
 * trace does show.  A first pass over the trace, before prime.c's.
 *
 * Bulk allocations.  alloc_pages_bulk() (vmalloc's order-0 pages: every
 * vmalloc'd kernel stack a fork makes, page pools, sunrpc) takes its pages
 * off the CPU's list with __rmqueue_pcplist and traces none of them: no
 * mm_page_alloc.  Their frees are traced (vfree frees them one by one).
 * So a page that went onto a CPU's list -- a refill of it, or a free --
 * and is freed again with no allocation of it between was taken off that
 * list by a bulk allocation.  A replay that does not take it keeps it on
 * the list to serve a traced allocation the kernel refilled for:
 * fork-heavy traces refill half what the kernel does without this.  When
 * the bulk allocation came is not traced either.  The lists are LIFO and
 * a refill comes only when one is empty, so while the page sat on it no
 * refill of that list can have come and no traced allocation took it;
 * taking it right after the event that put it there changes no refill and
 * moves a drain by at most its one page.
 *
 * The list of a page the trace never saw allocated.  A free goes onto the
 * list of its pageblock's migratetype, which the trace does not print; for
 * a page allocated in the trace the allocation's type is the guess, for
 * one allocated before it movable is.  But the event that takes the page
 * off the list again says which list it was: a drain prints it, an
 * allocation served from the list asks for it, a bulk allocation takes
 * unmovable pages.  A trace that begins with drop_caches freeing slab
 * pages otherwise has the replay put them on the movable list and the
 * first pass infer that the reclaimable lists held thousands of blocks.
 *
 * When each CPU's vmstat worker ran.  It decays the CPU's tuned high once
 * a second (round_jiffies_relative: on the same fraction of every second)
 * and drains what is above it; its drains are traced, its runs are not.
 * A drain that no free on its CPU set off is the worker's: the replay's
 * ticks for that CPU keep its phase (else another CPU's, the workers'
 * timers being rounded to the same seconds; else a second after the
 * trace's first event).
 */
#ifndef ZABENCH_UNTRACED_H
#define ZABENCH_UNTRACED_H

#include "trace.h"

#include <stddef.h>
#include <stdint.h>

/* Right after the trace's event number `after` (0-based, as trace_next
 * returns them), which put the page on the list of `cpu` for
 * `migratetype`, a bulk allocation took it -- the type the refill's, the
 * page's last allocation's, or unmovable (what vmalloc asks) for a page the
 * trace never saw allocated. */
struct untraced_take {
	uint64_t after;
	uint64_t pfn;
	int cpu, migratetype;
};

/* The free at event number `at` of a page the trace never saw allocated
 * went onto the list of `migratetype`. */
struct untraced_list {
	uint64_t at;
	int migratetype;
};

struct untraced {
	struct untraced_take *take;     /* in the order of `after` */
	size_t ntakes, takes_cap;
	struct untraced_list *list;     /* in the order of `at` */
	size_t nlists, lists_cap;
	int nr_cpus;
	uint64_t *tick_ns;              /* [nr_cpus]: a run of the CPU's vmstat
					 * worker (its drain's time), 0 if none */
};

/* Reads the stream to its end.  0, or -1 with a message in err;
 * untraced_free in either case. */
int untraced_scan(struct trace_reader *tr, int nr_cpus, struct untraced *u, char *err, size_t errlen);
void untraced_free(struct untraced *u);

/* A cursor over both lists, advanced by event number: call with
 * increasing `seen` for each event the stream returns. */
struct untraced_cursor {
	size_t take, list;
};
/* The take due right after event number `seen`, for the page the event
 * names; NULL if none. */
const struct untraced_take *untraced_take_due(const struct untraced *u, struct untraced_cursor *c,
					      uint64_t seen);
/* The list of the free at event `seen` if the trace shows it, else
 * `guess` (TMT_MOVABLE: most of a running system's pages). */
int untraced_list_type(const struct untraced *u, struct untraced_cursor *c, uint64_t seen, int guess);
/* Each CPU's vmstat worker runs through the trace: once a second, at the
 * phase the trace shows for it, else a second after the first event. */
struct tick_clock {
	const struct untraced *u;       /* NULL: no phase known */
	int nr_cpus;
	uint64_t *next;                 /* [nr_cpus]: the next run, 0 before the first event */
};
int tick_clock_init(struct tick_clock *c, const struct untraced *u, int nr_cpus);   /* 0 or -1 */
/* fn(ctx, cpu) for each run due by the event's time, each CPU's in order.
 * Not at a drain: it belongs to the free or worker run it follows (a
 * worker never runs between a free and the drain it sets off). */
void tick_clock_advance(struct tick_clock *c, const struct trace_event *ev,
			void (*fn)(void *ctx, int cpu), void *ctx);
void tick_clock_release(struct tick_clock *c);

#endif
