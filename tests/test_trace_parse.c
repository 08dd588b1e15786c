/*
 * The trace reader (bench/trace_*.c) on real samples of each layout
 * (tests/traces: ftrace's trace file, trace-cmd report with and without
 * -l, perf script, a recording with the header, a trace.dat), plain and
 * compressed at test time; single lines of every variant; and every kind
 * of bad input with its exact count and first line, or its message.
 *
 * Usage: test_trace_parse TRACES_DIR [CASE...]
 */
#include "trace_util.h"

#include <inttypes.h>

static const char *traces_dir;

static const char *fixture(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", traces_dir, name);
	return path;
}

static bool ev_equal(const struct trace_event *a, const struct trace_event *b)
{
	return a->type == b->type && a->cpu == b->cpu && a->ts_ns == b->ts_ns &&
	       a->line == b->line && a->pfn == b->pfn && a->order == b->order &&
	       a->migratetype == b->migratetype && a->gfp == b->gfp &&
	       a->percpu_refill == b->percpu_refill && a->fallback_order == b->fallback_order &&
	       a->fallback_migratetype == b->fallback_migratetype &&
	       a->fragmenting == b->fragmenting && a->change_ownership == b->change_ownership &&
	       a->ptr == b->ptr && a->bytes_req == b->bytes_req &&
	       a->bytes_alloc == b->bytes_alloc && !strcmp(a->cache, b->cache);
}

/* Same events (but their line numbers, if !same_lines), same counts. */
static void check_same(const struct readout *a, const struct readout *b, bool same_lines)
{
	CHECK_EQ(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		struct trace_event e = b->ev[i];
		if (!same_lines)
			e.line = a->ev[i].line;
		CHECK(ev_equal(&a->ev[i], &e));
	}
	CHECK_EQ(a->lines, b->lines);
	for (int i = 0; i < NR_TRACE_SKIP; i++) {
		CHECK_EQ(a->skipped[i], b->skipped[i]);
		CHECK_EQ(a->first[i], b->first[i]);
	}
}

static void write_scratch(const char *name, const void *p, size_t len, char *path, size_t size)
{
	write_file(scratch(name, path, size), p, len);
}

static const struct trace_event *at_line(const struct readout *o, uint64_t line)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->ev[i].line == line)
			return &o->ev[i];
	fprintf(stderr, "no event from line %" PRIu64 "\n", line);
	exit(1);
}

/* Exactly these events of each type. */
static void check_types(const struct readout *o, const uint64_t *n)
{
	uint64_t got[NR_TEV] = { 0 };
	for (size_t i = 0; i < o->n; i++)
		got[o->ev[i].type]++;
	for (int t = 0; t < NR_TEV; t++) {
		if (got[t] != n[t])
			fprintf(stderr, "%s: %" PRIu64 ", expected %" PRIu64 "\n", trace_event_name(t),
				got[t], n[t]);
		CHECK_EQ(got[t], n[t]);
	}
}

/* Only these skips, exactly. */
static void check_skips(const struct readout *o, const uint64_t *n, const uint64_t *first)
{
	for (int i = 0; i < NR_TRACE_SKIP; i++) {
		if (n[i] != o->skipped[i] || first[i] != o->first[i])
			fprintf(stderr, "%s: %" PRIu64 " (line %" PRIu64 "), expected %" PRIu64
				" (line %" PRIu64 ")\n", trace_skip_name(i), o->skipped[i], o->first[i],
				n[i], first[i]);
		CHECK_EQ(o->skipped[i], n[i]);
		CHECK_EQ(o->first[i], first[i]);
	}
}

static void read_fixture(const char *name, struct readout *o)
{
	char path[512];
	read_trace(fixture(name, path, sizeof(path)), o);
	if (!o->opened || o->rc)
		fprintf(stderr, "%s: %s\n", name, o->err);
	CHECK(o->opened);
	CHECK_EQ(o->rc, 0);
	check_order(o);
}

#define GFP_KERNEL (TGFP_DIRECT_RECLAIM | TGFP_KSWAPD_RECLAIM | TGFP_IO | TGFP_FS)

/* ---- the layouts ---- */

static void test_ftrace(void)
{
	struct readout o;
	read_fixture("ftrace.txt", &o);
	CHECK_EQ(o.lines, 176);
	CHECK_EQ(o.n, 163);
	check_types(&o, (uint64_t[NR_TEV]){ [TEV_PAGE_ALLOC] = 23, [TEV_PAGE_FREE_BATCHED] = 24,
					     [TEV_ZONE_LOCKED] = 58, [TEV_EXTFRAG] = 2,
					     [TEV_KMALLOC] = 4, [TEV_CACHE_ALLOC] = 50,
					     [TEV_CACHE_FREE] = 2 });
	/* the header's "entries-in-buffer/entries-written: 60288/1230193" (the
	 * ring overwrote the rest) and "##### CPU 1 buffer started ####" */
	check_skips(&o, (uint64_t[NR_TRACE_SKIP]){ [SKIP_LOST_EVENTS] = 2 },
		    (uint64_t[NR_TRACE_SKIP]){ [SKIP_LOST_EVENTS] = 3 });
	CHECK(!o.h.present);
	CHECK_EQ(o.h.nr_cpus, 2);       /* "#P:2" */

	const struct trace_event *e = &o.ev[0];
	CHECK_EQ(e->line, 13);
	CHECK_EQ(e->type, TEV_PAGE_FREE_BATCHED);
	CHECK_EQ(e->ts_ns, 15316617652000ull);
	CHECK_EQ(e->pfn, 0x2b97c2);
	CHECK_EQ(e->order, 0);

	e = at_line(&o, 39);
	CHECK_EQ(e->type, TEV_PAGE_ALLOC);
	CHECK_EQ(e->cpu, 0);
	CHECK_EQ(e->pfn, 0x29be2f);
	CHECK_EQ(e->migratetype, 0);
	CHECK_EQ(e->gfp, TGFP_KSWAPD_RECLAIM | TGFP_COMP);      /* GFP_NOWAIT|__GFP_COMP */

	e = at_line(&o, 105);
	CHECK_EQ(e->type, TEV_ZONE_LOCKED);
	CHECK_EQ(e->pfn, 0x233f0f);
	CHECK_EQ(e->percpu_refill, 1);

	e = at_line(&o, 171);
	CHECK_EQ(e->type, TEV_KMALLOC);
	CHECK_EQ(e->cpu, 1);
	CHECK_EQ(e->ptr, 0xc4a2e73);
	CHECK_EQ(e->bytes_req, 50);
	CHECK_EQ(e->bytes_alloc, 64);
	CHECK_EQ(e->gfp, GFP_KERNEL | TGFP_ZERO);

	e = at_line(&o, 175);
	CHECK_EQ(e->type, TEV_EXTFRAG);
	CHECK_EQ(e->pfn, 0x161c00);
	CHECK_EQ(e->order, 0);
	CHECK_EQ(e->fallback_order, 10);
	CHECK_EQ(e->migratetype, 0);
	CHECK_EQ(e->fallback_migratetype, 1);
	CHECK_EQ(e->fragmenting, 0);
	CHECK_EQ(e->change_ownership, 1);
	free(o.ev);
}

/* trace-cmd report, with and without -l: the same events; lines from an
 * instance ("zaparse:" before the task) included. */
static void test_trace_cmd(void)
{
	struct readout o, l;
	read_fixture("trace-cmd.txt", &o);
	read_fixture("trace-cmd-latency.txt", &l);
	check_same(&o, &l, true);
	CHECK_EQ(o.lines, 141);
	CHECK_EQ(o.n, 135);
	CHECK_EQ(o.h.nr_cpus, 2);       /* "cpus=2" */
	CHECK(!o.h.present);
	check_types(&o, (uint64_t[NR_TEV]){ [TEV_KFREE] = 14, [TEV_KMALLOC] = 5,
					     [TEV_CACHE_ALLOC] = 58, [TEV_CACHE_FREE] = 48,
					     [TEV_PAGE_ALLOC] = 10 });
	/* rss_stat */
	check_skips(&o, (uint64_t[NR_TRACE_SKIP]){ [SKIP_UNKNOWN_EVENT] = 5 },
		    (uint64_t[NR_TRACE_SKIP]){ [SKIP_UNKNOWN_EVENT] = 98 });
	const struct trace_event *e = at_line(&o, 79);
	CHECK_EQ(e->type, TEV_PAGE_ALLOC);
	CHECK_EQ(e->pfn, 0x30ea2f);
	CHECK_EQ(e->gfp, GFP_KERNEL | TGFP_ACCOUNT | TGFP_ZERO | TGFP_COMP);
	CHECK_EQ(e->ts_ns, 15346264898000ull);
	free(o.ev);
	free(l.ev);
}

static void test_perf(void)
{
	struct readout o;
	read_fixture("perf.txt", &o);
	CHECK_EQ(o.lines, 157);
	CHECK_EQ(o.n, 157);
	check_skips(&o, (uint64_t[NR_TRACE_SKIP]){ 0 }, (uint64_t[NR_TRACE_SKIP]){ 0 });
	check_types(&o, (uint64_t[NR_TEV]){ [TEV_PAGE_ALLOC] = 1, [TEV_PAGE_FREE] = 52,
					     [TEV_PAGE_FREE_BATCHED] = 73, [TEV_PCPU_DRAIN] = 5,
					     [TEV_KMALLOC] = 8, [TEV_KFREE] = 9,
					     [TEV_CACHE_ALLOC] = 5, [TEV_CACHE_FREE] = 4 });
	const struct trace_event *e = at_line(&o, 153);
	CHECK_EQ(e->type, TEV_PCPU_DRAIN);
	CHECK_EQ(e->pfn, 0x11d4d2);
	CHECK_EQ(e->migratetype, 1);
	CHECK_EQ(e->ts_ns, 15367251289000ull);
	e = at_line(&o, 55);
	CHECK_EQ(e->type, TEV_KFREE);
	CHECK_EQ(e->ptr, 0);            /* (nil) */
	free(o.ev);
}

/* A recording as `zabench record` writes it: header, trace_pipe, slabinfo. */
static void test_record_header(void)
{
	struct readout o;
	read_fixture("record.txt", &o);
	CHECK_EQ(o.lines, 326);
	CHECK_EQ(o.n, 95);
	check_skips(&o, (uint64_t[NR_TRACE_SKIP]){ [SKIP_UNKNOWN_EVENT] = 5 },
		    (uint64_t[NR_TRACE_SKIP]){ [SKIP_UNKNOWN_EVENT] = 286 });
	const struct trace_header *h = &o.h;
	CHECK(h->present);
	CHECK_EQ(h->nr_cpus, 2);
	CHECK(!strcmp(h->uname, "6.18.44-fc-v595"));
	CHECK_EQ(h->nr_zones, 3);       /* Movable and Device: managed 0 */
	static const struct trace_zone want[] = {
		{ 0, "DMA", 1, 4095, 3998, 3840, 18, 22, 26, 1, 11, 240, { 0 }, { 0 }, 2 },
		{ 0, "DMA32", 4096, 1044480, 782336, 772918, 3770, 4712, 5654, 63, 2356, 48307,
		  { 2356, 2356 }, { 0 }, 2 },
		/* cpu 0's batch and bounds; each CPU's high and count */
		{ 0, "Normal", 1048576, 5505024, 5505024, 2686976, 13106, 16382, 19658, 63, 8191,
		  167936, { 8191, 8443 }, { 7515, 8074 }, 2 },
	};
	for (int i = 0; i < 3; i++) {
		const struct trace_zone *z = &h->zones[i], *w = &want[i];
		CHECK_EQ(z->node, w->node);
		CHECK(!strcmp(z->name, w->name));
		CHECK_EQ(z->start_pfn, w->start_pfn);
		CHECK_EQ(z->spanned, w->spanned);
		CHECK_EQ(z->present, w->present);
		CHECK_EQ(z->managed, w->managed);
		CHECK_EQ(z->min, w->min);
		CHECK_EQ(z->low, w->low);
		CHECK_EQ(z->high, w->high);
		CHECK_EQ(z->batch, w->batch);
		CHECK_EQ(z->high_min, w->high_min);
		CHECK_EQ(z->high_max, w->high_max);
		CHECK_EQ(z->pcp_high[0], w->pcp_high[0]);
		CHECK_EQ(z->pcp_high[1], w->pcp_high[1]);
		CHECK_EQ(z->pcp_count[0], w->pcp_count[0]);
		CHECK_EQ(z->pcp_count[1], w->pcp_count[1]);
		CHECK_EQ(z->nr_pagesets, w->nr_pagesets);
	}
	CHECK_EQ(trace_pfn_zone(h, 0), -1);
	CHECK_EQ(trace_pfn_zone(h, 1), 0);
	CHECK_EQ(trace_pfn_zone(h, 4095), 0);
	CHECK_EQ(trace_pfn_zone(h, 4096), 1);
	CHECK_EQ(trace_pfn_zone(h, 1048575), 1);
	CHECK_EQ(trace_pfn_zone(h, 1048576), 2);
	CHECK_EQ(trace_pfn_zone(h, 1048576 + 5505024 - 1), 2);
	CHECK_EQ(trace_pfn_zone(h, 1048576 + 5505024), -1);
	CHECK_EQ(trace_pfn_zone(h, TRACE_NO_PFN), -1);

	/* The slabinfo's version and column lines are not caches. */
	CHECK_EQ(o.nslabs, 8);
	CHECK(!strcmp(o.slabs[0].name, "filp"));
	CHECK(!strcmp(o.slabs[1].name, "dentry"));
	CHECK_EQ(o.slabs[1].active_objs, 223783);
	CHECK_EQ(o.slabs[1].num_objs, 224364);
	CHECK_EQ(o.slabs[1].objsize, 192);
	CHECK_EQ(o.slabs[1].objperslab, 21);
	CHECK_EQ(o.slabs[1].pagesperslab, 1);
	CHECK(!strcmp(o.slabs[4].name, "task_struct"));
	CHECK_EQ(o.slabs[4].objsize, 5888);
	CHECK_EQ(o.slabs[4].pagesperslab, 8);
	free(o.ev);
}

static void test_trace_dat(void)
{
	char path[512];
	struct readout o;
	fixture("trace.dat", path, sizeof(path));
#ifdef ZA_HAVE_TRACECMD
	read_fixture("trace.dat", &o);
	CHECK_EQ(o.h.nr_cpus, 2);
	CHECK_EQ(o.lines, 890);         /* 889 records, 1 lost-events marker */
	CHECK_EQ(o.n, 735);
	check_skips(&o, (uint64_t[NR_TRACE_SKIP]){ [SKIP_UNKNOWN_EVENT] = 154, [SKIP_LOST_EVENTS] = 1 },
		    (uint64_t[NR_TRACE_SKIP]){ [SKIP_UNKNOWN_EVENT] = 34, [SKIP_LOST_EVENTS] = 251 });
	check_types(&o, (uint64_t[NR_TEV]){ [TEV_PAGE_ALLOC] = 96, [TEV_PAGE_FREE] = 20,
					     [TEV_PAGE_FREE_BATCHED] = 31, [TEV_KMALLOC] = 11,
					     [TEV_KFREE] = 59, [TEV_CACHE_ALLOC] = 343,
					     [TEV_CACHE_FREE] = 175 });
	const struct trace_event *e = at_line(&o, 4);
	CHECK_EQ(e->type, TEV_CACHE_ALLOC);
	CHECK_EQ(e->cpu, 0);
	CHECK_EQ(e->ts_ns, 15541317524897ull);
	CHECK_EQ(e->ptr, 0xffff888145d34500ull);
	CHECK_EQ(e->bytes_req, 5840);
	CHECK_EQ(e->bytes_alloc, 5888);
	CHECK_EQ(e->gfp, GFP_KERNEL);
	CHECK(!strcmp(e->cache, "task_struct"));
	free(o.ev);

	/* cut short: its options (at the end, in version 7) are missing */
	struct buf dat = read_file(path);
	write_scratch("cut.dat", dat.p, dat.len / 2, path, sizeof(path));
	read_trace(path, &o);
	CHECK(!o.opened);
	CHECK_STR_HAS(o.err, "libtracecmd cannot read this trace.dat");
	free(dat.p);
#else
	read_trace(path, &o);
	CHECK(!o.opened);
	CHECK_STR_HAS(o.err, "built without libtracecmd");
	CHECK_STR_HAS(o.err, "libtracecmd-dev libtraceevent-dev");
#endif
}

/* ---- compressed ---- */

/* Every fixture compressed reads as it does plain; so do two compressed
 * halves one after the other (gzip members, xz streams, zstd frames). */
static void compressed_same(enum cfmt c)
{
	char path[512], cpath[512];
	for (size_t i = 0; i < NR_FIXTURES; i++) {
		struct readout plain, comp;
		read_fixture(fixtures[i], &plain);
		struct buf text = read_file(fixture(fixtures[i], path, sizeof(path)));
		struct buf z = compress_buf(c, text.p, text.len);
		write_scratch("c", z.p, z.len, cpath, sizeof(cpath));
		read_trace(cpath, &comp);
		CHECK(comp.opened && !comp.rc);
		check_same(&plain, &comp, true);
		free(comp.ev);

		/* cut at a line's start, so that the line numbers are kept */
		const char *mid = memchr(text.p + text.len / 2, '\n', text.len / 2);
		size_t half = mid - text.p + 1;
		struct buf z1 = compress_buf(c, text.p, half);
		struct buf z2 = compress_buf(c, text.p + half, text.len - half);
		z1.p = realloc(z1.p, z1.len + z2.len);
		memcpy(z1.p + z1.len, z2.p, z2.len);
		write_scratch("c", z1.p, z1.len + z2.len, cpath, sizeof(cpath));
		read_trace(cpath, &comp);
		CHECK(comp.opened && !comp.rc);
		check_same(&plain, &comp, true);
		free(comp.ev);
		free(plain.ev);
		free(z.p);
		free(z1.p);
		free(z2.p);
		free(text.p);
	}
}

/* 20000 events of random pfns and pointers: a compressed stream of many
 * blocks (zstd cannot return part of a block). */
static struct buf big_text(void)
{
	size_t cap = 20000 * 160, len = 0;
	uint64_t x = 88172645463325252ull;
	char *p = malloc(cap);
	CHECK(p);
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (i % 2)
			len += snprintf(p + len, cap - len, "  a-1 [001] ..... 1.%06d: kfree: "
					"call_site=f+0x1/0x20 ptr=%016llx\n", i, (unsigned long long)x);
		else
			len += snprintf(p + len, cap - len, "  a-1 [000] ..... 1.%06d: mm_page_free: "
					"page=%016llx pfn=0x%llx order=0\n", i, (unsigned long long)x,
					(unsigned long long)(x >> 40));
	}
	return (struct buf){ p, len };
}

/* "FILE: line N: <what> <format> stream", N the line being read: the
 * stream ends with an error, after the events before it. */
static void check_stream_error(const struct readout *o, const char *what, enum cfmt c)
{
	char want[64], line[64];
	if (!o->opened || o->rc != -1)
		fprintf(stderr, "%s %s: %s, %zu events: %s\n", what, cfmt_name(c),
			o->opened ? "read to the end" : "not opened", o->n, o->err);
	CHECK(o->opened);
	CHECK_EQ(o->rc, -1);
	CHECK(o->n > 0);
	snprintf(want, sizeof(want), "%s %s stream", what, cfmt_name(c));
	CHECK_STR_HAS(o->err, want);
	snprintf(line, sizeof(line), ": line %" PRIu64 ": ", o->lines + 1);
	CHECK_STR_HAS(o->err, line);
}

static void compressed_bad(enum cfmt c)
{
	char path[512];
	struct readout o;
	struct buf text = big_text();
	struct buf z = compress_buf(c, text.p, text.len);

	write_scratch("cut", z.p, z.len / 2, path, sizeof(path));
	read_trace(path, &o);
	check_stream_error(&o, "truncated", c);
	free(o.ev);

	/* The last byte only: the end of the stream's trailer or check. */
	write_scratch("cut", z.p, z.len - 1, path, sizeof(path));
	read_trace(path, &o);
	check_stream_error(&o, "truncated", c);
	free(o.ev);

	for (size_t i = z.len / 2; i < z.len / 2 + 64; i++)
		z.p[i] ^= 0x5a;
	write_scratch("corrupt", z.p, z.len, path, sizeof(path));
	read_trace(path, &o);
	check_stream_error(&o, "corrupt", c);
	free(o.ev);
	free(z.p);
	free(text.p);
}

/* ---- bad input ---- */

#define EV_LINE(cpu, usecs, rest) \
	"           bash-17929 [" cpu "] ..... 100." usecs ": " rest "\n"

/* Each kind of unusable line, counted with the first one's number. */
static void test_bad_lines(void)
{
	char path[512], longline[70001];
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	char text[100000];
	int len = snprintf(text, sizeof(text), "%s",
		"# nr_cpus 2\n"                                                                 /* 1 */
		EV_LINE("000", "000001", "mm_page_free: page=00000000a1 pfn=0x100 order=0")      /* 2 */
		"hello world, this is not a trace line\n"                                       /* 3 */
		EV_LINE("000", "000002", "mm_page_alloc: page=00000000a1 pfn=0x101 order=0 "
			"migratetype=0 gfp_flags=GFP_KER")                                       /* 4 */
		EV_LINE("000", "000003", "sched_switch: prev_comm=bash prev_pid=1")              /* 5 */
		EV_LINE("000", "000004", "mm_page_free: page=00000000a1 pfn=0x102")              /* 6 */
		EV_LINE("005", "000005", "mm_page_free: page=00000000a1 pfn=0x103 order=0")      /* 7 */
		"CPU:1 [LOST 12 EVENTS]\n"                                                      /* 8 */
		"##### CPU 1 buffer started ####\n");                                           /* 9 */
	len += snprintf(text + len, sizeof(text) - len, "%s\n", longline);                     /* 10 */
	len += snprintf(text + len, sizeof(text) - len, "%s",
		EV_LINE("000", "000006", "mm_page_alloc: page=00000000a1 pfn=0x104 order=")      /* 11 */
		EV_LINE("000", "000007", "mm_page_alloc:")                                       /* 12 */
		EV_LINE("000", "000008", "kmalloc: call_site=x ptr=0000000000000abc bytes_req=8") /* 13 */
		"\n"                                                                            /* 14 */
		"# a comment\n"                                                                 /* 15 */
		EV_LINE("001", "000009", "mm_page_free: page=00000000a1 pfn=zz order=0")         /* 16 */
		EV_LINE("001", "000010", "mm_page_free: page=00000000a1 pfn=0x5@ order=0")      /* 17 */
		EV_LINE("001", "000011", "mm_page_free: page=00000000a1 pfn=0x106 order=0"));    /* 18 */
	*strchr(text, '@') = '\0';     /* line 17: a NUL within the number */
	write_scratch("bad", text, len, path, sizeof(path));

	struct readout o;
	read_trace(path, &o);
	CHECK(o.opened);
	CHECK_EQ(o.rc, 0);
	CHECK_EQ(o.lines, 18);
	CHECK_EQ(o.n, 2);
	CHECK_EQ(o.ev[0].line, 2);
	CHECK_EQ(o.ev[1].line, 18);
	check_skips(&o,
		    (uint64_t[NR_TRACE_SKIP]){ [SKIP_MALFORMED] = 7, [SKIP_UNKNOWN_EVENT] = 1,
					       [SKIP_MISSING_FIELD] = 2, [SKIP_BAD_CPU] = 1,
					       [SKIP_LOST_EVENTS] = 2 },
		    (uint64_t[NR_TRACE_SKIP]){ [SKIP_MALFORMED] = 3, [SKIP_UNKNOWN_EVENT] = 5,
					       [SKIP_MISSING_FIELD] = 6, [SKIP_BAD_CPU] = 7,
					       [SKIP_LOST_EVENTS] = 8 });
	/* the others: the header line, the empty line, the comment */
	CHECK_EQ(o.n + total_skipped(&o) + 3, o.lines);
	free(o.ev);

	struct trace_reader *r = trace_open(path, o.err, sizeof(o.err));
	CHECK(r);
	struct trace_event ev;
	while (trace_next(r, &ev) == 1)
		;
	char out[512] = "";
	FILE *f = fmemopen(out, sizeof(out), "w");
	trace_print_skipped(r, f);
	fclose(f);
	CHECK(!strcmp(out, "lines not used: 7 malformed (first: line 3), 1 unknown event (line 5), "
		      "2 missing a field (line 6), 1 CPU beyond nr_cpus (line 7), "
		      "2 lost-events markers (line 8)\n"));
	trace_close(r);
}

/*
 * Events out of order: within the window, sorted; older than one already
 * returned (TRACE_REORDER_WINDOW events later), dropped.  Equal times
 * keep their file order.
 */
static void test_reorder(void)
{
	char path[512];
	size_t cap = 6000 * 100, len = 0;
	char *text = malloc(cap);
	CHECK(text);
	enum { N = 5000 };
	for (int i = 0; i < N; i++) {
		/* every 100th pair swapped */
		int t = i % 100 == 1 ? i - 1 : i % 100 == 0 && i + 1 < N ? i + 1 : i;
		len += snprintf(text + len, cap - len, "  a-1 [000] 10.%06d: mm_page_free: pfn=%d order=0\n",
				t + 1000, i);
	}
	len += snprintf(text + len, cap - len, "  a-1 [000] 10.000999: mm_page_free: pfn=1 order=0\n");
	len += snprintf(text + len, cap - len, "  a-1 [001] 10.%06d: mm_page_free: pfn=2 order=0\n", N + 1000);
	len += snprintf(text + len, cap - len, "  a-1 [001] 10.%06d: mm_page_free: pfn=3 order=0\n", N + 1000);
	write_scratch("order", text, len, path, sizeof(path));
	free(text);

	struct readout o;
	read_trace(path, &o);
	CHECK(o.opened && !o.rc);
	CHECK_EQ(o.lines, N + 3);
	CHECK_EQ(o.n, N + 2);
	check_order(&o);
	check_skips(&o, (uint64_t[NR_TRACE_SKIP]){ [SKIP_TIME_BACKWARDS] = 1 },
		    (uint64_t[NR_TRACE_SKIP]){ [SKIP_TIME_BACKWARDS] = N + 1 });
	/* the swapped pairs come out by time: pfn = line - 1 */
	CHECK_EQ(o.ev[100].pfn, 101);
	CHECK_EQ(o.ev[101].pfn, 100);
	/* equal times: line N + 2 before N + 3 */
	CHECK_EQ(o.ev[N + 1].pfn, 3);
	CHECK_EQ(o.ev[N + 1].line, N + 3);
	CHECK_EQ(o.ev[N].line, N + 2);
	free(o.ev);
}

static void check_open_fails(const char *name, const void *p, size_t len, const char *msg)
{
	char path[512];
	struct readout o;
	write_scratch(name, p, len, path, sizeof(path));
	read_trace(path, &o);
	if (o.opened)
		fprintf(stderr, "%s opened: %zu events\n", name, o.n);
	CHECK(!o.opened);
	CHECK_STR_HAS(o.err, path);
	CHECK_STR_HAS(o.err, msg);
}

/* What is no trace at all is refused by trace_open, saying why. */
static void test_not_a_trace(void)
{
	char path[512], bin[4096];
	struct readout o;
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (char)(i * 7);
	check_open_fails("binary", bin, sizeof(bin), "binary data");
	check_open_fails("empty", "", 0, "empty");
	check_open_fails("blank", "\n\n\n", 3, "empty");
	check_open_fails("bzip2", "BZh91AY&SY", 10, "bzip2-compressed");
	/* a format this build has no library for: which package to install */
	static const struct {
		const char *magic, *msg;
	} missing[NR_CFMT] = {
		[C_GZ] = { "\x1f\x8b\x08\0\0\0\0\0", "is gzip-compressed but this zabench was built "
			  "without zlib (Debian: apt-get install zlib1g-dev, then rebuild)" },
		[C_XZ] = { "\xfd" "7zXZ\0\0", "is xz-compressed but this zabench was built without "
			  "liblzma (Debian: apt-get install liblzma-dev, then rebuild)" },
		[C_ZST] = { "\x28\xb5\x2f\xfd\0\0\0\0", "is zstd-compressed but this zabench was built "
			   "without libzstd (Debian: apt-get install libzstd-dev, then rebuild)" },
	};
	for (enum cfmt c = 0; c < NR_CFMT; c++)
		if (!cfmt_built(c))
			check_open_fails("nolib", missing[c].magic, 8, missing[c].msg);

	size_t cap = 1001 * 40 + 200, len = 0;
	char *text = malloc(cap);
	for (int i = 0; i < 1000; i++)
		len += snprintf(text + len, cap - len, "line %d: of prose, not a trace\n", i);
	check_open_fails("prose", text, len, "no kmem event and no header line in its first 1000 lines");

	/* an event within the first 1000 lines: a trace, if a poor one */
	char *last = text + len - 1;
	while (last[-1] != '\n')
		last--;
	len = last - text;
	len += snprintf(text + len, cap - len, "%s", EV_LINE("000", "000001", "mm_page_free: pfn=0x1 order=0"));
	write_scratch("prose", text, len, path, sizeof(path));
	read_trace(path, &o);
	CHECK(o.opened && !o.rc);
	CHECK_EQ(o.n, 1);
	CHECK_EQ(o.skipped[SKIP_MALFORMED], 999);
	free(o.ev);
	free(text);

	/* a header and no event: a trace of nothing */
	write_scratch("header", "# nr_cpus 4\n# uname 6.1\n", 24, path, sizeof(path));
	read_trace(path, &o);
	CHECK(o.opened && !o.rc);
	CHECK_EQ(o.n, 0);
	CHECK_EQ(o.h.nr_cpus, 4);

	read_trace(scratch("does-not-exist", path, sizeof(path)), &o);
	CHECK(!o.opened);
	CHECK_STR_HAS(o.err, "No such file");
}

/* ---- single lines ---- */

static struct trace_header line_h;

/* A line as a buffer of its exact length (for ASan). */
static int parse(const char *s, struct trace_event *ev, enum trace_skip *why)
{
	size_t len = strlen(s);
	char *copy = malloc(len ? len : 1);
	memcpy(copy, s, len);
	*why = NR_TRACE_SKIP;
	int rc = trace_parse_line(copy, len, &line_h, ev, why);
	free(copy);
	return rc;
}

static void check_skip(const char *s, enum trace_skip why)
{
	struct trace_event ev;
	enum trace_skip got;
	int rc = parse(s, &ev, &got);
	if (rc != -1 || got != why)
		fprintf(stderr, "'%s': %d %s, not %s\n", s, rc, rc < 0 ? trace_skip_name(got) : "",
			trace_skip_name(why));
	CHECK_EQ(rc, -1);
	CHECK_EQ(got, why);
}

static void check_none(const char *s)
{
	struct trace_event ev;
	enum trace_skip why;
	CHECK_EQ(parse(s, &ev, &why), 0);
}

static struct trace_event parse_ok(const char *s)
{
	struct trace_event ev;
	enum trace_skip why;
	int rc = parse(s, &ev, &why);
	if (rc != 1)
		fprintf(stderr, "'%s': %d (%s)\n", s, rc, rc < 0 ? trace_skip_name(why) : "");
	CHECK_EQ(rc, 1);
	return ev;
}

/* The layouts' variants, and what each field may look like. */
static void test_line_variants(void)
{
	struct trace_event e;
	/* perf script: with the period, --ns, without the CPU (no -a), tid */
	e = parse_ok("            perf 19469/19469 [003] 15367.067577:          1                          "
		     "kmem:kmalloc: call_site=sched_setaffinity+0x10c ptr=0xffff8881044c96e0 bytes_req=32 "
		     "bytes_alloc=32 gfp_flags=GFP_KERNEL node=-1 accounted=false");
	CHECK_EQ(e.type, TEV_KMALLOC);
	CHECK_EQ(e.cpu, 3);
	CHECK_EQ(e.ts_ns, 15367067577000ull);
	CHECK_EQ(e.ptr, 0xffff8881044c96e0ull);
	e = parse_ok("            perf 19469 [001] 15367.067722355:    kmem:kfree: call_site=x+0x1 ptr=0xffff88830ea10aa0");
	CHECK_EQ(e.ts_ns, 15367067722355ull);
	CHECK_EQ(e.cpu, 1);
	line_h.cpu_unnamed = false;
	e = parse_ok("            perf 19469 15367.067577:      kmem:mm_page_free: page=0x389fa1 pfn=0x389fa1 order=2");
	CHECK_EQ(e.cpu, 0);
	CHECK_EQ(e.order, 2);
	CHECK(line_h.cpu_unnamed);      /* said by the mirror */
	/* trace-cmd report --ts-diff: "(+N)" before the event */
	e = parse_ok("  bash-17929 [001] 15200.869966: (+27)    mm_page_free: pfn=0x1 order=3");
	CHECK_EQ(e.cpu, 1);
	CHECK_EQ(e.order, 3);
	/* ftrace with record-tgid and without irq-info; a comm with blanks,
	 * brackets and colons; trace-cmd -t (ns) and -l on CPU 12 */
	e = parse_ok("           bash-17929 (  17929) [002] d..1. 15200.869966: mm_page_free: page=0000000012 pfn=0x1082cb order=1");
	CHECK_EQ(e.cpu, 2);
	CHECK_EQ(e.pfn, 0x1082cb);
	e = parse_ok("  bash-17929 [007] 15200.869966: mm_page_free: page=0000000012 pfn=0x1 order=0");
	CHECK_EQ(e.cpu, 7);
	e = parse_ok(" my [x]: task-42 [001] ..... 1.5: mm_page_free: pfn=0x1 order=0");
	CHECK_EQ(e.cpu, 1);
	CHECK_EQ(e.ts_ns, 1500000000ull);
	e = parse_ok("   bash-17929 [000] 15200.869966123: mm_page_free: pfn=0x1 order=0");
	CHECK_EQ(e.ts_ns, 15200869966123ull);
	e = parse_ok("   bash-17929  12d..3. 15200.869966: mm_page_free: pfn=0x1 order=0");
	CHECK_EQ(e.cpu, 12);
	/* trace-cmd report cannot evaluate extfrag's "fallback_order <
	 * pageblock_order" and prints fallback_order for it: fragmenting is
	 * what the comparison gives; without pageblock_order, x86-64's 9 */
	e = parse_ok("zacorpus:  date-16331 [000]   538.917257: mm_page_alloc_extfrag: pfn=0x23e800 "
		     "alloc_order=0 fallback_order=10 pageblock_order=9 alloc_migratetype=0 "
		     "fallback_migratetype=1 fragmenting=10 change_ownership=1");
	CHECK_EQ(e.type, TEV_EXTFRAG);
	CHECK_EQ(e.fragmenting, 0);
	CHECK_EQ(e.change_ownership, 1);
	e = parse_ok("  a-1 [000] 1.0: mm_page_alloc_extfrag: pfn=0x1 alloc_order=0 fallback_order=3 "
		     "pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=3 "
		     "change_ownership=0");
	CHECK_EQ(e.fragmenting, 1);
	e = parse_ok("  a-1 [000] 1.0: mm_page_alloc_extfrag: pfn=0x1 alloc_order=0 fallback_order=10 "
		     "alloc_migratetype=0 fallback_migratetype=1 fragmenting=10 change_ownership=0");
	CHECK_EQ(e.fragmenting, 0);
	/* no fraction: a counter clock, taken as ns */
	e = parse_ok("   bash-17929 [000] 123456789: mm_page_free: pfn=0x1 order=0");
	CHECK_EQ(e.ts_ns, 123456789);

	/* a failed allocation: page=(null) (older kernels), zeros (%p of NULL) */
	e = parse_ok("  a-1 [000] 1.0: mm_page_alloc: page=(null) pfn=0 order=3 migratetype=1 gfp_flags=GFP_KERNEL");
	CHECK_EQ(e.pfn, TRACE_NO_PFN);
	CHECK_EQ(e.order, 3);
	e = parse_ok("  a-1 [000] 1.0: mm_page_alloc: page=0000000000000000 pfn=0x0 order=0 migratetype=0 gfp_flags=GFP_ATOMIC");
	CHECK_EQ(e.pfn, TRACE_NO_PFN);
	CHECK_EQ(e.gfp, TGFP_HIGH | TGFP_KSWAPD_RECLAIM);
	e = parse_ok("  a-1 [000] 1.0: mm_page_alloc_zone_locked: page=(null) pfn=0 order=0 migratetype=0");
	CHECK_EQ(e.pfn, TRACE_NO_PFN);
	CHECK_EQ(e.percpu_refill, -1);  /* before 5.15 */
	/* decimal pfn (older kernels), fields in any order, unknown ones */
	e = parse_ok("  a-1 [000] 1.0: mm_page_alloc: gfp_flags=GFP_USER order=1 new_field=7 pfn=1082059 page=ffffea0000000000");
	CHECK_EQ(e.pfn, 1082059);
	CHECK_EQ(e.migratetype, -1);
	CHECK_EQ(e.gfp, GFP_KERNEL);
	/* kmem_cache_* with and without name=; a module's "[name]" */
	e = parse_ok("  a-1 [000] 1.0: kmem_cache_alloc: call_site=f+0x1/0x2 [nf_tables] ptr=00000000deadbeef "
		     "bytes_req=1 bytes_alloc=8 gfp_flags=none node=-1");
	CHECK_EQ(e.ptr, 0xdeadbeef);
	CHECK_EQ(e.gfp, 0);
	CHECK(!strcmp(e.cache, ""));
	e = parse_ok("  a-1 [000] 1.0: kmem_cache_free: call_site=f ptr=1 name=a_name_longer_than_the_31_bytes_kept");
	CHECK(!strcmp(e.cache, "a_name_longer_than_the_31_bytes"));
	/* older kernels' names */
	CHECK_EQ(parse_ok("  a-1 [000] 1.0: kmalloc_node: ptr=1 bytes_req=1 bytes_alloc=8 gfp_flags=GFP_KERNEL node=0").type,
		 TEV_KMALLOC);
	CHECK_EQ(parse_ok("  a-1 [000] 1.0: mm_pagevec_free: page=1 pfn=5 order=0 cold=0").type,
		 TEV_PAGE_FREE);

	/* not events */
	check_none("");
	check_none("   ");
	check_none("# tracer: nop");
	check_none("version = 6");
	check_none("CPU 3 is empty");
	check_skip("CPU:3 [LOST 120 EVENTS]", SKIP_LOST_EVENTS);
	check_skip("zaparse: CPU:1 [9766 EVENTS DROPPED]", SKIP_LOST_EVENTS);
	check_skip("##### CPU 2 buffer started ####", SKIP_LOST_EVENTS);
	check_skip("  a-1 [000] 1.0: sched_switch: prev_comm=a", SKIP_UNKNOWN_EVENT);
	check_skip("  a-1 [000] 1.0: kmem:rss_stat: mm_id=1", SKIP_UNKNOWN_EVENT);
	check_skip("  a-1 [000] 1.0: mm_page_alloc_extfrag: page=1 pfn=1 alloc_order=0 fallback_order=10 "
		   "alloc_migratetype=0 fallback_migratetype=1 change_ownership=1", SKIP_MISSING_FIELD);
	check_skip("  a-1 [000] 1.0: kfree: call_site=x", SKIP_MISSING_FIELD);
	check_skip("  a-1 [x00] 1.0: kfree: ptr=1", SKIP_MALFORMED);
	check_skip("  a-1 [000] 1.0: kfree: ptr=xyz", SKIP_MALFORMED);
	check_skip("  a-1 [000] 1.0: mm_page_free: pfn=1 order=64", SKIP_MALFORMED);
	check_skip("  a-1 [000] 1.0: mm_page_free: pfn=0x12345678901234567 order=0", SKIP_MALFORMED);
	check_skip("  a-1 [000] 99999999999.0: mm_page_free: pfn=1 order=0", SKIP_MALFORMED);
	check_skip("[001]    kmem:mm_page_free: pfn=0x1 order=0", SKIP_UNTIMED);     /* perf -F without time */
	check_skip("  a-1 [000] 1.0:", SKIP_MALFORMED);
	check_skip("  a-1 [000] 1.0: mm_page_free", SKIP_MALFORMED);
	check_skip("just words", SKIP_MALFORMED);
}

static uint32_t gfp(const char *s)
{
	uint32_t g = 0xdeadbeef;
	CHECK_EQ(trace_parse_gfp(s, strlen(s), &g), 0);
	return g;
}

static void check_bad_gfp(const char *s)
{
	uint32_t g;
	CHECK_EQ(trace_parse_gfp(s, strlen(s), &g), -1);
}

static void test_gfp(void)
{
	const uint32_t reclaim = TGFP_DIRECT_RECLAIM | TGFP_KSWAPD_RECLAIM;
	CHECK_EQ(gfp("none"), 0);
	CHECK_EQ(gfp("GFP_KERNEL"), reclaim | TGFP_IO | TGFP_FS);
	CHECK_EQ(gfp("GFP_KERNEL_ACCOUNT"), reclaim | TGFP_IO | TGFP_FS | TGFP_ACCOUNT);
	CHECK_EQ(gfp("GFP_USER"), reclaim | TGFP_IO | TGFP_FS);
	CHECK_EQ(gfp("GFP_HIGHUSER"), reclaim | TGFP_IO | TGFP_FS | TGFP_HIGHMEM);
	CHECK_EQ(gfp("GFP_HIGHUSER_MOVABLE"), reclaim | TGFP_IO | TGFP_FS | TGFP_HIGHMEM | TGFP_MOVABLE);
	CHECK_EQ(gfp("GFP_TRANSHUGE_LIGHT"), TGFP_IO | TGFP_FS | TGFP_HIGHMEM | TGFP_MOVABLE | TGFP_COMP);
	CHECK_EQ(gfp("GFP_TRANSHUGE"),
		 TGFP_IO | TGFP_FS | TGFP_HIGHMEM | TGFP_MOVABLE | TGFP_COMP | TGFP_DIRECT_RECLAIM);
	CHECK_EQ(gfp("GFP_NOWAIT"), TGFP_KSWAPD_RECLAIM);
	CHECK_EQ(gfp("GFP_ATOMIC"), TGFP_HIGH | TGFP_KSWAPD_RECLAIM);
	CHECK_EQ(gfp("GFP_NOIO"), reclaim);
	CHECK_EQ(gfp("GFP_NOFS"), reclaim | TGFP_IO);
	CHECK_EQ(gfp("GFP_DMA"), TGFP_DMA);
	CHECK_EQ(gfp("GFP_DMA32"), TGFP_DMA32);
	static const struct {
		const char *name;
		uint32_t bits;
	} flags[] = {
		{ "__GFP_DMA", TGFP_DMA }, { "__GFP_HIGHMEM", TGFP_HIGHMEM }, { "__GFP_DMA32", TGFP_DMA32 },
		{ "__GFP_MOVABLE", TGFP_MOVABLE }, { "__GFP_RECLAIMABLE", TGFP_RECLAIMABLE },
		{ "__GFP_HIGH", TGFP_HIGH }, { "__GFP_IO", TGFP_IO }, { "__GFP_FS", TGFP_FS },
		{ "__GFP_ZERO", TGFP_ZERO }, { "__GFP_DIRECT_RECLAIM", TGFP_DIRECT_RECLAIM },
		{ "__GFP_KSWAPD_RECLAIM", TGFP_KSWAPD_RECLAIM },
		{ "__GFP_RECLAIM", TGFP_DIRECT_RECLAIM | TGFP_KSWAPD_RECLAIM }, { "__GFP_COMP", TGFP_COMP },
		{ "__GFP_THISNODE", TGFP_THISNODE }, { "__GFP_ACCOUNT", TGFP_ACCOUNT },
		{ "__GFP_WRITE", 0 }, { "__GFP_NOWARN", 0 }, { "__GFP_RETRY_MAYFAIL", 0 },
		{ "__GFP_NOFAIL", 0 }, { "__GFP_NORETRY", 0 }, { "__GFP_MEMALLOC", 0 },
		{ "__GFP_NOMEMALLOC", 0 }, { "__GFP_HARDWALL", 0 }, { "__GFP_ZEROTAGS", 0 },
		{ "__GFP_NO_OBJ_EXT", 0 }, { "__GFP_SKIP_ZERO", 0 }, { "__GFP_SKIP_KASAN", 0 },
		{ "__GFP_NOLOCKDEP", 0 },
	};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		CHECK_EQ(gfp(flags[i].name), flags[i].bits);
	/* names joined, a number for the bits left, a whole number */
	CHECK_EQ(gfp("GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL"),
		 reclaim | TGFP_IO | TGFP_HIGHMEM | TGFP_MOVABLE | TGFP_COMP);
	CHECK_EQ(gfp("GFP_KERNEL|0x1000000"), reclaim | TGFP_IO | TGFP_FS);
	CHECK_EQ(gfp("0x400dc0"), reclaim | TGFP_IO | TGFP_FS | TGFP_ZERO | TGFP_ACCOUNT);
	CHECK_EQ(gfp("0xffffffff"), trace_gfp_bits(0xffffffff));
	CHECK_EQ(gfp("3264"), reclaim | TGFP_IO | TGFP_FS);        /* 0xcc0 */
	/* a flag of another kernel is passed over; garbage and cut names are not */
	CHECK_EQ(gfp("GFP_KERNEL|__GFP_SOMETHING_NEW"), reclaim | TGFP_IO | TGFP_FS);
	check_bad_gfp("");
	check_bad_gfp("GFP_KERNEL|");
	check_bad_gfp("|GFP_KERNEL");
	check_bad_gfp("GFP_KERNEL||__GFP_ZERO");
	check_bad_gfp("GFP_KERN");
	check_bad_gfp("__GFP_ZER");
	check_bad_gfp("gfp_kernel");
	check_bad_gfp("0xzz");
}

static void test_names(void)
{
	for (int t = 0; t < NR_TEV; t++) {
		const char *name = trace_event_name(t);
		CHECK_EQ(trace_event_lookup(name, strlen(name)), t);
	}
	CHECK(!strcmp(trace_event_name(TEV_ZONE_LOCKED), "mm_page_alloc_zone_locked"));
	CHECK_EQ(trace_event_lookup("mm_page", 7), -1);
	CHECK(!strcmp(trace_skip_name(SKIP_MALFORMED), "malformed"));
	for (int i = 0; i < NR_TRACE_SKIP; i++)
		CHECK(strlen(trace_skip_name(i)) > 0);
}

/* Header lines one by one: a zone is kept once its "managed" is > 0. */
static void test_header_lines(void)
{
	struct trace_header h = { 0 };
	struct trace_event ev;
	enum trace_skip why;
	static const char *const lines[] = {
		"# zoneinfo Node 1, zone   Normal",
		"# zoneinfo   pages free     5",
		"# zoneinfo         min      7",
		"# zoneinfo         managed  0",
		"# zoneinfo Node 1, zone  Movable",
		"# zoneinfo         managed  100",
		"# zoneinfo         spanned  200",
		"# zoneinfo   pagesets",
		"# zoneinfo     cpu: 0",
		"# zoneinfo               high:     9",
		"# zoneinfo               batch:    3",
		"# zoneinfo     cpu: 1",
		"# zoneinfo               batch:    4",
		"# zoneinfo   start_pfn:           300",
		"# nr_cpus 64",
		"# slabinfo kmalloc-8  1 2 8 512 1 : tunables 0 0 0 : slabdata 1 1 0",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		CHECK_EQ(trace_parse_line(lines[i], strlen(lines[i]), &h, &ev, &why), 0);
	CHECK(h.present);
	CHECK_EQ(h.nr_cpus, 64);
	CHECK_EQ(h.nr_zones, 1);
	CHECK_EQ(h.zones[0].node, 1);
	CHECK(!strcmp(h.zones[0].name, "Movable"));
	CHECK_EQ(h.zones[0].managed, 100);
	CHECK_EQ(h.zones[0].min, 0);
	CHECK_EQ(h.zones[0].pcp_high[0], 9);
	CHECK_EQ(h.zones[0].batch, 3);
	CHECK_EQ(h.zones[0].high_min, 0);
	CHECK_EQ(h.zones[0].start_pfn, 300);
	CHECK_EQ(trace_pfn_zone(&h, 499), 0);
	CHECK_EQ(trace_pfn_zone(&h, 500), -1);

	struct trace_slab s;
	const char *sl = lines[sizeof(lines) / sizeof(lines[0]) - 1];
	CHECK_EQ(trace_parse_slabinfo(sl, strlen(sl), &s), 1);
	CHECK(!strcmp(s.name, "kmalloc-8"));
	CHECK_EQ(s.objperslab, 512);
	CHECK_EQ(trace_parse_slabinfo("# slabinfo slabinfo - version: 2.1", 34, &s), 0);
	CHECK_EQ(trace_parse_slabinfo("# uname x", 9, &s), -1);
	CHECK_EQ(trace_parse_slabinfo("# slabinfo x 1 2", 16, &s), -1);
}

/* Each compressed format (if built in): the fixtures read the same, the
 * bad streams are reported. */
static void compressed(enum cfmt c)
{
	if (!cfmt_built(c)) {
		printf("%s: not built in, not tested\n", cfmt_name(c));
		return;
	}
	compressed_same(c);
	compressed_bad(c);
}

static void test_compressed_gzip(void)
{
	compressed(C_GZ);
}

static void test_compressed_xz(void)
{
	compressed(C_XZ);
}

static void test_compressed_zstd(void)
{
	compressed(C_ZST);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "names", test_names },
		{ "gfp", test_gfp },
		{ "line_variants", test_line_variants },
		{ "header_lines", test_header_lines },
		{ "ftrace", test_ftrace },
		{ "trace_cmd", test_trace_cmd },
		{ "perf", test_perf },
		{ "record_header", test_record_header },
		{ "trace_dat", test_trace_dat },
		{ "compressed_gzip", test_compressed_gzip },
		{ "compressed_xz", test_compressed_xz },
		{ "compressed_zstd", test_compressed_zstd },
		{ "bad_lines", test_bad_lines },
		{ "reorder", test_reorder },
		{ "not_a_trace", test_not_a_trace },
	};
	if (argc < 2) {
		fprintf(stderr, "usage: %s TRACES_DIR [CASE...]\n", argv[0]);
		return 2;
	}
	traces_dir = argv[1];
	/* argv[1], the directory, stands where run_test_cases has the program */
	int rc = run_test_cases("test_trace_parse", argc - 1, argv + 1, cases,
				sizeof(cases) / sizeof(cases[0]));
	static const char *const files[] = {
		"c", "cut", "corrupt", "bad", "order", "binary", "empty", "blank", "bzip2", "prose",
		"header", "nolib", "cut.dat", NULL,
	};
	unlink_scratch(files);
	return rc;
}
