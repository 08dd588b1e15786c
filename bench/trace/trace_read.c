/*
 * The trace reader: lines (trace_input.c) or trace.dat records
 * (trace_dat.c) into events (trace_parse.c), put in timestamp order by a
 * window of TRACE_REORDER_WINDOW events, and the lines not used counted
 * by reason.
 *
 * The window is a binary min-heap keyed by (ts_ns, line): ties come out
 * in file order.  Invariant: every event in it is no older than the last
 * one returned, since an older one is dropped as SKIP_TIME_BACKWARDS on
 * its way in; memory is the window's, fixed, plus the "# slabinfo" caches
 * (at most TRACE_MAX_SLABS).
 */
#include "trace.h"
#include "trace_dat.h"
#include "trace_input.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The lines trace_open reads for a first event or header line. */
#define TRACE_PROBE_LINES 1000
#define TRACE_MAX_SLABS 4096

struct heap_ent {
	uint64_t ts, seq;
	uint32_t slot;
};

struct trace_reader {
	char *path;
	struct trace_input *in;         /* a text trace, or */
	struct trace_dat *dat;          /* a trace.dat */
	struct trace_header h;
	/* The window: heap[0, nheap) indexes slots[]; free[0, nfree) are the
	 * slots not in it (nheap + nfree == TRACE_REORDER_WINDOW). */
	struct heap_ent heap[TRACE_REORDER_WINDOW];
	struct trace_event slots[TRACE_REORDER_WINDOW];
	uint32_t free[TRACE_REORDER_WINDOW];
	uint32_t nheap, nfree;
	bool done, failed;
	uint64_t last_ts;               /* of the last event returned, if events > 0 */
	/* trace_open's look at the start of the file. */
	bool probing, kmem_seen;
	uint64_t nonempty;
	uint64_t lines, events;
	uint64_t skipped[NR_TRACE_SKIP], first[NR_TRACE_SKIP];
	struct trace_slab *slabs;
	int nslabs, slab_cap;
	char err[640];
};

/* What one line or record turned out to be. */
enum item { ITEM_EVENT, ITEM_NONE, ITEM_SKIP, ITEM_END, ITEM_ERROR };

static const struct {
	const char *one, *many;
} skip_names[NR_TRACE_SKIP] = {
	[SKIP_MALFORMED] = { "malformed", "malformed" },
	[SKIP_UNKNOWN_EVENT] = { "unknown event", "unknown events" },
	[SKIP_MISSING_FIELD] = { "missing a field", "missing a field" },
	[SKIP_BAD_CPU] = { "CPU beyond nr_cpus", "CPU beyond nr_cpus" },
	[SKIP_LOST_EVENTS] = { "lost-events marker", "lost-events markers" },
	[SKIP_TIME_BACKWARDS] = { "out of order beyond the window", "out of order beyond the window" },
	[SKIP_UNTIMED] = { "page event with no timestamp", "page events with no timestamp" },
};

const char *trace_skip_name(enum trace_skip why)
{
	return (unsigned)why < NR_TRACE_SKIP ? skip_names[why].one : "?";
}

/* ---- the window ---- */

static bool ent_less(const struct heap_ent *a, const struct heap_ent *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

static void heap_push(struct trace_reader *r, struct heap_ent e)
{
	uint32_t i = r->nheap++;
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!ent_less(&e, &r->heap[parent]))
			break;
		r->heap[i] = r->heap[parent];
		i = parent;
	}
	r->heap[i] = e;
}

static struct heap_ent heap_pop(struct trace_reader *r)
{
	struct heap_ent top = r->heap[0], last = r->heap[--r->nheap];
	uint32_t i = 0, n = r->nheap;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && ent_less(&r->heap[c + 1], &r->heap[c]))
			c++;
		if (!ent_less(&r->heap[c], &last))
			break;
		r->heap[i] = r->heap[c];
		i = c;
	}
	r->heap[i] = last;
	return top;
}

/* ---- counting ---- */

static void skip(struct trace_reader *r, enum trace_skip why)
{
	if (!r->skipped[why]++)
		r->first[why] = r->lines;
}

/* A "# slabinfo" cache, replacing an earlier line of the same name. */
static void add_slab(struct trace_reader *r, const struct trace_slab *s)
{
	int i;
	for (i = 0; i < r->nslabs && strcmp(r->slabs[i].name, s->name); i++)
		;
	if (i == r->nslabs) {
		if (r->nslabs == TRACE_MAX_SLABS)
			return;
		if (r->nslabs == r->slab_cap) {
			int cap = r->slab_cap ? 2 * r->slab_cap : 64;
			struct trace_slab *p = realloc(r->slabs, cap * sizeof(*p));
			if (!p)
				return;
			r->slabs = p;
			r->slab_cap = cap;
		}
		r->nslabs++;
	}
	r->slabs[i] = *s;
}

static bool header_seen(const struct trace_reader *r)
{
	return r->h.present || r->h.uname[0] || r->nslabs;
}

/* ---- reading ---- */

/* trace_open's verdict on a line that is no text at all. */
static enum item not_text(struct trace_reader *r)
{
	snprintf(r->err, sizeof(r->err), "%s: line %" PRIu64 ": binary data (or a line over "
		 "64 KiB): not a trace (zabench reads the text of ftrace, trace-cmd report or "
		 "perf script, or a trace.dat)", r->path, r->lines);
	return ITEM_ERROR;
}

static enum item next_line(struct trace_reader *r, struct trace_event *ev, enum trace_skip *why)
{
	const char *line;
	size_t len;
	struct trace_slab slab;
	int rc = trace_input_line(r->in, &line, &len);
	if (rc == TIN_END)
		return ITEM_END;
	if (rc == TIN_ERROR) {
		snprintf(r->err, sizeof(r->err), "%s", trace_input_error(r->in));
		return ITEM_ERROR;
	}
	r->lines++;
	if (r->probing && (rc == TIN_LONG || memchr(line, '\0', len)))
		return not_text(r);
	if (rc == TIN_LONG) {
		*why = SKIP_MALFORMED;
		return ITEM_SKIP;
	}
	r->nonempty += len > 0;
	rc = trace_parse_line(line, len, &r->h, ev, why);
	if (rc > 0)
		return ITEM_EVENT;
	if (rc < 0)
		return ITEM_SKIP;
	if (trace_parse_slabinfo(line, len, &slab) > 0)
		add_slab(r, &slab);
	return ITEM_NONE;
}

static enum item next_record(struct trace_reader *r, struct trace_event *ev, enum trace_skip *why)
{
	int rc = trace_dat_next(r->dat, ev, why);
	if (!rc)
		return ITEM_END;
	r->lines++;
	return rc > 0 ? ITEM_EVENT : ITEM_SKIP;
}

/* Reads one line or record: an event goes into the window (or is
 * counted out), anything else is counted. */
static void read_one(struct trace_reader *r)
{
	uint32_t slot = r->free[r->nfree - 1];
	struct trace_event *ev = &r->slots[slot];
	enum trace_skip why = SKIP_MALFORMED;
	enum item it = r->dat ? next_record(r, ev, &why) : next_line(r, ev, &why);
	switch (it) {
	case ITEM_EVENT:
		r->kmem_seen = true;
		ev->line = r->lines;
		if (r->h.nr_cpus && ev->cpu >= r->h.nr_cpus) {
			skip(r, SKIP_BAD_CPU);
		} else if (r->events && ev->ts_ns < r->last_ts) {
			skip(r, SKIP_TIME_BACKWARDS);
		} else {
			r->nfree--;
			heap_push(r, (struct heap_ent){ ev->ts_ns, ev->line, slot });
		}
		break;
	case ITEM_SKIP:
		skip(r, why);
		break;
	case ITEM_NONE:
		break;
	case ITEM_ERROR:
		r->failed = true;
		/* fall through */
	case ITEM_END:
		r->done = true;
		break;
	}
}

/*
 * Reads up to the first event, so that the header before it is complete,
 * and turns away what is no trace: binary data, or no event and no header
 * line in the first TRACE_PROBE_LINES non-empty lines.
 */
static bool probe(struct trace_reader *r, char *err, size_t errlen)
{
	r->probing = true;
	while (!r->nheap && !r->done) {
		read_one(r);
		if (!r->failed && !r->kmem_seen && !header_seen(r) && r->nonempty >= TRACE_PROBE_LINES)
			break;
	}
	r->probing = false;
	if (r->failed) {
		snprintf(err, errlen, "%s", r->err);
		return false;
	}
	if (!r->kmem_seen && !header_seen(r)) {
		if (!r->nonempty)
			snprintf(err, errlen, "%s: empty: not a trace", r->path);
		else if (r->skipped[SKIP_UNTIMED])
			snprintf(err, errlen, "%s:%" PRIu64 ": a page event with no timestamp: the "
				 "replay needs each event's time and CPU (perf script -F: time,cpu)",
				 r->path, r->first[SKIP_UNTIMED]);
		else
			snprintf(err, errlen, "%s: not a kmem trace: no kmem event and no header line "
				 "in its first %" PRIu64 " lines", r->path, r->lines);
		return false;
	}
	return true;
}

struct trace_reader *trace_open(const char *path, char *err, size_t errlen)
{
	enum trace_format fmt;
	if (trace_input_sniff(path, &fmt, err, errlen))
		return NULL;
	struct trace_reader *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		snprintf(err, errlen, "%s: out of memory", path);
		free(r);
		return NULL;
	}
	for (uint32_t i = 0; i < TRACE_REORDER_WINDOW; i++)
		r->free[i] = TRACE_REORDER_WINDOW - 1 - i;
	r->nfree = TRACE_REORDER_WINDOW;
	if (fmt == TFMT_DAT)
		r->dat = trace_dat_open(path, &r->h, err, errlen);
	else
		r->in = trace_input_open(path, fmt, err, errlen);
	if ((!r->dat && !r->in) || (r->in && !probe(r, err, errlen))) {
		trace_close(r);
		return NULL;
	}
	return r;
}

const struct trace_header *trace_header(const struct trace_reader *r)
{
	return &r->h;
}

int trace_next(struct trace_reader *r, struct trace_event *ev)
{
	while (r->nheap < TRACE_REORDER_WINDOW && !r->done)
		read_one(r);
	if (!r->nheap)
		return r->failed ? -1 : 0;
	struct heap_ent e = heap_pop(r);
	*ev = r->slots[e.slot];
	r->free[r->nfree++] = e.slot;
	r->last_ts = ev->ts_ns;
	r->events++;
	return 1;
}

const char *trace_error(const struct trace_reader *r)
{
	return r->err;
}

uint64_t trace_skipped(const struct trace_reader *r, enum trace_skip why, uint64_t *first_line)
{
	if (first_line)
		*first_line = r->first[why];
	return r->skipped[why];
}

void trace_print_skipped(const struct trace_reader *r, FILE *out)
{
	const char *sep = "lines not used: ";
	bool any = false;
	for (int i = 0; i < NR_TRACE_SKIP; i++) {
		if (!r->skipped[i])
			continue;
		fprintf(out, "%s%" PRIu64 " %s (%sline %" PRIu64 ")", sep, r->skipped[i],
			r->skipped[i] == 1 ? skip_names[i].one : skip_names[i].many,
			any ? "" : "first: ", r->first[i]);
		sep = ", ";
		any = true;
	}
	if (any)
		fputc('\n', out);
}

uint64_t trace_lines(const struct trace_reader *r)
{
	return r->lines;
}

uint64_t trace_events(const struct trace_reader *r)
{
	return r->events;
}

int trace_slabs(const struct trace_reader *r, const struct trace_slab **slabs)
{
	*slabs = r->slabs;
	return r->nslabs;
}

void trace_close(struct trace_reader *r)
{
	if (!r)
		return;
	trace_input_close(r->in);
	trace_dat_close(r->dat);
	free(r->slabs);
	free(r->path);
	free(r);
}
