/*
 * trace-cmd's binary trace.dat through libtracecmd: the per-CPU record
 * streams of every buffer (the top one and each instance) merged by
 * timestamp, each kmem record's fields read by libtraceevent from the
 * event's recorded format, never through printed text.  The file's own
 * values, so pointers are not hashed and a failed allocation's pfn is -1.
 */
#include "trace_dat.h"

#include <stdio.h>

#ifdef ZA_HAVE_TRACECMD
#include <stdlib.h>
#include <string.h>
#include <trace-cmd.h>

enum dat_field {
	DF_PFN, DF_ORDER, DF_GFP, DF_MT, DF_REFILL, DF_AORDER, DF_FORDER, DF_AMT, DF_FMT,
	DF_FRAG, DF_CHOWN, DF_PTR, DF_REQ, DF_ALLOC, DF_NAME, DF_CONTENDED, NR_DF
};

static const char *const dat_field_names[NR_DF] = {
	[DF_PFN] = "pfn", [DF_ORDER] = "order", [DF_GFP] = "gfp_flags",
	[DF_MT] = "migratetype", [DF_REFILL] = "percpu_refill", [DF_AORDER] = "alloc_order",
	[DF_FORDER] = "fallback_order", [DF_AMT] = "alloc_migratetype",
	[DF_FMT] = "fallback_migratetype", [DF_FRAG] = "fragmenting",
	[DF_CHOWN] = "change_ownership", [DF_PTR] = "ptr", [DF_REQ] = "bytes_req",
	[DF_ALLOC] = "bytes_alloc", [DF_NAME] = "name", [DF_CONTENDED] = "contended",
};

#define D(f) (1u << (f))
/* The fields each event needs (extfrag's "fragmenting" is computed by
 * current kernels' format, not recorded: see extfrag()). */
static const unsigned dat_required[NR_TEV] = {
	[TEV_PAGE_ALLOC] = D(DF_PFN) | D(DF_ORDER) | D(DF_GFP),
	[TEV_PAGE_FREE] = D(DF_PFN) | D(DF_ORDER),
	[TEV_PAGE_FREE_BATCHED] = D(DF_PFN),
	[TEV_ZONE_LOCKED] = D(DF_PFN) | D(DF_ORDER),
	[TEV_PCPU_DRAIN] = D(DF_PFN) | D(DF_ORDER),
	[TEV_EXTFRAG] = D(DF_PFN) | D(DF_AORDER) | D(DF_FORDER) | D(DF_AMT) | D(DF_FMT) | D(DF_CHOWN),
	[TEV_KMALLOC] = D(DF_PTR) | D(DF_REQ) | D(DF_ALLOC) | D(DF_GFP),
	[TEV_KFREE] = D(DF_PTR),
	[TEV_CACHE_ALLOC] = D(DF_PTR) | D(DF_REQ) | D(DF_ALLOC) | D(DF_GFP),
	[TEV_CACHE_FREE] = D(DF_PTR),
	[TEV_ZONE_LOCK_LOCKED] = D(DF_CONTENDED),
};


/* An event format as read: its kmem type (-1: another event) and fields. */
struct dat_format {
	bool known;
	int type;
	struct tep_format_field *f[NR_DF];
};

/* One buffer's CPU: its next record, and whether the lost events before
 * that record have been reported. */
struct dat_stream {
	struct tracecmd_input *handle;
	int cpu;
	struct tep_record *rec;
	bool lost_told;
};

struct trace_dat {
	struct tracecmd_input *top;
	struct tracecmd_input **inst;
	int ninst;
	struct dat_stream *s;
	int ns;
	struct dat_format *fmt;         /* by event id, [0, nfmt) */
	int nfmt;
};

/* The handle's CPUs as streams, each at its first record. */
static bool add_streams(struct trace_dat *d, struct tracecmd_input *handle)
{
	int cpus = tep_get_cpus(tracecmd_get_tep(handle));
	struct dat_stream *s = realloc(d->s, (d->ns + cpus) * sizeof(*s));
	if (!s)
		return false;
	d->s = s;
	for (int cpu = 0; cpu < cpus; cpu++) {
		s[d->ns].handle = handle;
		s[d->ns].cpu = cpu;
		s[d->ns].lost_told = false;
		s[d->ns].rec = tracecmd_read_data(handle, cpu);
		d->ns++;
	}
	return true;
}

static bool open_instances(struct trace_dat *d)
{
	int n = tracecmd_buffer_instances(d->top);
	if (n <= 0)
		return true;
	d->inst = calloc(n, sizeof(*d->inst));
	if (!d->inst)
		return false;
	for (int i = 0; i < n; i++) {
		d->inst[d->ninst] = tracecmd_buffer_instance_handle(d->top, i);
		if (!d->inst[d->ninst])
			return false;
		if (!add_streams(d, d->inst[d->ninst++]))
			return false;
	}
	return true;
}

struct trace_dat *trace_dat_open(const char *path, struct trace_header *h,
				 char *err, size_t errlen)
{
	struct trace_dat *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	d->top = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!d->top) {
		snprintf(err, errlen, "%s: libtracecmd cannot read this trace.dat (truncated or corrupt?)",
			 path);
		trace_dat_close(d);
		return NULL;
	}
	if (!add_streams(d, d->top) || !open_instances(d)) {
		snprintf(err, errlen, "%s: cannot read its buffers (out of memory?)", path);
		trace_dat_close(d);
		return NULL;
	}
	h->nr_cpus = tep_get_cpus(tracecmd_get_tep(d->top));
	return d;
}

/* The stream whose next record is the earliest; NULL when all are done. */
static struct dat_stream *earliest(struct trace_dat *d)
{
	struct dat_stream *best = NULL;
	for (int i = 0; i < d->ns; i++)
		if (d->s[i].rec && (!best || d->s[i].rec->ts < best->rec->ts))
			best = &d->s[i];
	return best;
}

/* What event e is, found once per format. */
static const struct dat_format *format_of(struct trace_dat *d, struct tep_event *e)
{
	if (e->id < 0)
		return NULL;
	if (e->id >= d->nfmt) {
		int n = e->id + 1;
		struct dat_format *f = realloc(d->fmt, n * sizeof(*f));
		if (!f)
			return NULL;
		memset(f + d->nfmt, 0, (n - d->nfmt) * sizeof(*f));
		d->fmt = f;
		d->nfmt = n;
	}
	struct dat_format *f = &d->fmt[e->id];
	if (f->known)
		return f;
	f->known = true;
	f->type = e->system && e->name && !strcmp(e->system, "kmem") ?
		  trace_event_lookup(e->name, strlen(e->name)) : -1;
	for (int i = 0; i < NR_DF; i++)
		f->f[i] = tep_find_field(e, dat_field_names[i]);
	return f;
}

/* A number field within the record; false if absent or past its end. */
static bool num(const struct dat_format *f, enum dat_field i, const struct tep_record *rec,
		unsigned long long *v)
{
	const struct tep_format_field *field = f->f[i];
	return field && field->offset >= 0 && field->size > 0 &&
	       field->offset + field->size <= rec->size &&
	       !tep_read_number_field((struct tep_format_field *)field, rec->data, v);
}

/* A data_loc string (kmem_cache_*'s name) into cache[32]; "" if absent. */
static void dat_string(const struct dat_format *f, const struct tep_record *rec, char *cache,
		       size_t size)
{
	unsigned long long loc;
	cache[0] = '\0';
	if (!(f->f[DF_NAME] && (f->f[DF_NAME]->flags & TEP_FIELD_IS_DYNAMIC) &&
	      num(f, DF_NAME, rec, &loc)))
		return;
	unsigned off = loc & 0xffff, len = (loc >> 16) & 0xffff;
	if (f->f[DF_NAME]->flags & TEP_FIELD_IS_RELATIVE)
		off += f->f[DF_NAME]->offset + f->f[DF_NAME]->size;
	if (off + len > (unsigned)rec->size)
		return;
	const char *s = (const char *)rec->data + off;
	size_t n = strnlen(s, len < size - 1 ? len : size - 1);
	memcpy(cache, s, n);
	cache[n] = '\0';
}

static void extfrag(struct trace_event *ev, const struct dat_format *f, const struct tep_record *rec,
		    const unsigned long long *v)
{
	unsigned long long frag;
	ev->order = (int)v[DF_AORDER];
	ev->migratetype = (int)v[DF_AMT];
	ev->fallback_order = (int)v[DF_FORDER];
	ev->fallback_migratetype = (int)v[DF_FMT];
	ev->change_ownership = (int)v[DF_CHOWN];
	ev->fragmenting = num(f, DF_FRAG, rec, &frag) ? (int)frag :
			  ev->fallback_order < TRACE_PAGEBLOCK_ORDER;
}

/* The record's fields into *ev; -1 with *why if one it needs is absent. */
static int record_event(const struct dat_format *f, const struct tep_record *rec,
			struct trace_event *ev, enum trace_skip *why)
{
	unsigned long long v[NR_DF] = { 0 };
	unsigned seen = 0;
	for (int i = 0; i < NR_DF; i++)
		if (i != DF_NAME && num(f, i, rec, &v[i]))
			seen |= D(i);
	if ((seen & dat_required[f->type]) != dat_required[f->type]) {
		*why = SKIP_MISSING_FIELD;
		return -1;
	}
	memset(ev, 0, sizeof(*ev));
	ev->type = f->type;
	ev->cpu = rec->cpu;
	ev->ts_ns = rec->ts;
	ev->pfn = v[DF_PFN];    /* -1 (TRACE_NO_PFN): a failed allocation */
	ev->order = (int)v[DF_ORDER];
	ev->migratetype = seen & D(DF_MT) ? (int)v[DF_MT] : -1;
	ev->percpu_refill = seen & D(DF_REFILL) ? (int)v[DF_REFILL] : -1;
	ev->gfp = trace_gfp_bits(v[DF_GFP]);
	ev->ptr = v[DF_PTR];
	ev->bytes_req = (uint32_t)v[DF_REQ];
	ev->bytes_alloc = (uint32_t)v[DF_ALLOC];
	ev->contended = (int)v[DF_CONTENDED];
	if (f->type == TEV_EXTFRAG)
		extfrag(ev, f, rec, v);
	if (f->type == TEV_PAGE_FREE_BATCHED)
		ev->order = 0;
	dat_string(f, rec, ev->cache, sizeof(ev->cache));
	return 1;
}

int trace_dat_next(struct trace_dat *d, struct trace_event *ev, enum trace_skip *why)
{
	struct dat_stream *s = earliest(d);
	if (!s)
		return 0;
	if (s->rec->missed_events && !s->lost_told) {
		s->lost_told = true;
		*why = SKIP_LOST_EVENTS;
		return -1;
	}
	struct tep_record *rec = s->rec;
	struct tep_event *e = tep_find_event_by_record(tracecmd_get_tep(s->handle), rec);
	const struct dat_format *f = e ? format_of(d, e) : NULL;
	int ret = -1;
	if (!f)
		*why = SKIP_MALFORMED;
	else if (f->type < 0)
		*why = SKIP_UNKNOWN_EVENT;
	else
		ret = record_event(f, rec, ev, why);
	tracecmd_free_record(rec);
	s->rec = tracecmd_read_data(s->handle, s->cpu);
	s->lost_told = false;
	return ret;
}

void trace_dat_close(struct trace_dat *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->ns; i++)
		tracecmd_free_record(d->s[i].rec);
	for (int i = 0; i < d->ninst; i++)
		tracecmd_close(d->inst[i]);
	if (d->top)
		tracecmd_close(d->top);
	free(d->inst);
	free(d->s);
	free(d->fmt);
	free(d);
}

#else /* !ZA_HAVE_TRACECMD */

struct trace_dat *trace_dat_open(const char *path, struct trace_header *h,
				 char *err, size_t errlen)
{
	(void)h;
	snprintf(err, errlen, "%s is a trace-cmd trace.dat but this zabench was built without "
		 "libtracecmd (Debian: apt-get install libtracecmd-dev libtraceevent-dev, then "
		 "rebuild; or convert it: trace-cmd report -i %s > trace.txt)", path, path);
	return NULL;
}

int trace_dat_next(struct trace_dat *d, struct trace_event *ev, enum trace_skip *why)
{
	(void)d, (void)ev, (void)why;
	return 0;
}

void trace_dat_close(struct trace_dat *d)
{
	(void)d;
}

#endif
