/*
 * The tuned high a CPU's lists started a trace with, as the trace shows
 * it.  With 6.7's auto-tuning a CPU's high moves: each refill raises it by
 * its batch, the vmstat worker's tick decays it by an eighth (to no less
 * than count - batch << 5, nor high_min), and a free that takes count to
 * high drains.  So until a free first drains the lists, every free left
 * count below high: given the count (the pages the lists started with,
 * prime.c, and the trace's net since), each free bounds the start high
 * from below, through the raises and decays since the start.  The least
 * start high that no free before the first drain contradicts is the
 * trace's; a zoneinfo taken at the trace's start says it outright, but an
 * excerpt's is of its recording's start.
 */
#ifndef ZABENCH_START_HIGH_H
#define ZABENCH_START_HIGH_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCP_BATCH_SCALE_MAX 5           /* CONFIG_PCP_BATCH_SCALE_MAX's default */

/* What one CPU's lists for one zone did up to their first drain by a
 * free, in segments between the CPU's vmstat ticks. */
struct high_segment {
	int64_t peak;                   /* most (net - refilled) after a free in it */
	int64_t refilled_start, refilled_end;   /* pages refilled before it, and at its end */
	int64_t net_end;                /* the lists' net at its end (the tick) */
	bool ticked;                    /* it ended with a tick (else at the drain, or the trace's end) */
};

struct high_track {
	bool drained;                   /* a free has drained the lists: the track ends */
	bool pending;                   /* the last free's (net - refilled), not yet
					 * known to have drained or not */
	int64_t last_free;
	int64_t refilled;               /* what the refills so far raised high by */
	struct high_segment *seg;       /* seg[nseg - 1] is the open one */
	size_t nseg, cap;
};

/* Each takes the lists' net (pages added less taken since the start) after
 * the event.  A free bounds the start high once the next event of the
 * lists shows it did not drain them (high_track_drained comes right after
 * the free that did: it reached high, unless it may have been free_high's,
 * which drains whatever high is and lowers it).  A free is counted at its
 * mm_page_free, where a folio batch commits its pages at their
 * mm_page_free_batched, after the whole batch's: a batch's drain is put at
 * its last free, up to a batch (31 folios) late.  -1 if out of memory. */
int high_track_free(struct high_track *t, int64_t net);
int high_track_raise(struct high_track *t, int64_t pages);     /* a refill's */
int high_track_tick(struct high_track *t, int64_t net);
int high_track_drained(struct high_track *t, bool reached_high);
void high_track_release(struct high_track *t);

/* The least start high, for lists that started with `pages`, that the
 * track allows under the zone's tuning (z's high_min, high_max and batch):
 * at least high_min and `pages`.  Where no start high up to high_max fits
 * the ticks, the least the frees allow without them. */
int64_t high_track_start(const struct high_track *t, int64_t pages, const struct trace_zone *z);

#endif
