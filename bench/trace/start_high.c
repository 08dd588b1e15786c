/*
 * The start high a trace shows (start_high.h).
 */
#include "start_high.h"
#include "array.h"

#include <stdlib.h>

static struct high_segment *open_segment(struct high_track *t)
{
	if (t->nseg && !t->seg[t->nseg - 1].ticked)
		return &t->seg[t->nseg - 1];
	struct high_segment *s = array_grow(t->seg, &t->cap, t->nseg, sizeof(*s));
	if (!s)
		return NULL;
	t->seg = s;
	t->seg[t->nseg] = (struct high_segment){ .peak = INT64_MIN, .refilled_start = t->refilled,
						 .refilled_end = t->refilled };
	return &t->seg[t->nseg++];
}

/* The last free did not drain: it bounds the start high. */
static int commit_free(struct high_track *t)
{
	if (!t->pending)
		return 0;
	t->pending = false;
	struct high_segment *s = open_segment(t);
	if (!s)
		return -1;
	if (t->last_free > s->peak)
		s->peak = t->last_free;
	return 0;
}

int high_track_free(struct high_track *t, int64_t net)
{
	if (t->drained)
		return 0;
	if (commit_free(t))
		return -1;
	t->pending = true;
	t->last_free = net - t->refilled;
	return 0;
}

int high_track_raise(struct high_track *t, int64_t pages)
{
	int rc = t->drained ? 0 : commit_free(t);
	t->refilled += pages;
	return rc;
}

int high_track_tick(struct high_track *t, int64_t net)
{
	if (t->drained)
		return 0;
	struct high_segment *s = commit_free(t) ? NULL : open_segment(t);
	if (!s)
		return -1;
	s->refilled_end = t->refilled;
	s->net_end = net;
	s->ticked = true;
	return 0;
}

/* The last free drained.  If it reached high, it took count to high and
 * no further (a free below it leaves count under high), so high was at
 * most count there -- and the least start high that reaches count there
 * is the trace's.  free_high's says nothing of high. */
int high_track_drained(struct high_track *t, bool reached_high)
{
	t->last_free -= 1;
	t->pending &= reached_high;
	int rc = t->drained ? 0 : commit_free(t);
	t->drained = true;
	return rc;
}

void high_track_release(struct high_track *t)
{
	free(t->seg);
	*t = (struct high_track){ 0 };
}

/* Does a start high of h keep count below high at every free of the track,
 * raised by the refills and decayed at the ticks as the kernel does? */
static bool start_fits(const struct high_track *t, int64_t h, int64_t pages, const struct trace_zone *z)
{
	int64_t high_min = z->high_min, high_max = z->high_max, raised = 0;
	for (size_t i = 0; i < t->nseg; i++) {
		const struct high_segment *s = &t->seg[i];
		int64_t end = s->ticked ? s->refilled_end : t->refilled;
		h += s->refilled_start - raised;        /* raises before its first free */
		h = h < high_max ? h : high_max;
		if (s->peak != INT64_MIN && h <= pages + s->peak + s->refilled_start)
			return false;
		h += end - s->refilled_start;
		h = h < high_max ? h : high_max;
		raised = end;
		if (!s->ticked || h <= high_min)
			continue;
		int64_t count = pages + s->net_end, decayed = h - (h >> 3);
		int64_t floor = count - ((int64_t)z->batch << PCP_BATCH_SCALE_MAX);
		h = decayed > floor ? decayed : floor;
		h = h > high_min ? h : high_min;
	}
	return true;
}

/* The least start high the frees allow with no tick between, from lo:
 * what a track the ticks contradict (a CPU whose worker did not run,
 * idle) gets.  With no decay the raises before a free count on both
 * sides: high above pages + peak. */
static int64_t undecayed_start(const struct high_track *t, int64_t pages, int64_t lo, int64_t hi)
{
	int64_t h = lo;
	for (size_t i = 0; i < t->nseg; i++)
		if (t->seg[i].peak != INT64_MIN && pages + t->seg[i].peak + 1 > h)
			h = pages + t->seg[i].peak + 1;
	return h < hi ? h : hi;
}

int64_t high_track_start(const struct high_track *t, int64_t pages, const struct trace_zone *z)
{
	int64_t lo = pages > z->high_min ? pages : z->high_min, hi = z->high_max;
	if (z->high_min >= z->high_max || !z->batch || start_fits(t, lo, pages, z))
		return lo;
	if (!start_fits(t, hi, pages, z))
		return undecayed_start(t, pages, lo, hi);
	while (hi - lo > 1) {           /* start_fits(lo) false, start_fits(hi) true */
		int64_t mid = lo + (hi - lo) / 2;
		*(start_fits(t, mid, pages, z) ? &hi : &lo) = mid;
	}
	return hi;
}
