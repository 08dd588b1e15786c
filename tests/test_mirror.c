/*
 * The recorded machine as a replay sees it: /proc/zoneinfo in each form a
 * trace or a file beside it carries, `sysctl` output, the mirror's
 * configuration derived from them with what it says it derived and
 * assumed (bench/trace/mirror.c), what a CPU's per-CPU lists must
 * have held when a trace began (bench/trace/prime.c), what the kernel did
 * that it did not trace (bench/trace/untraced.c), and the high a CPU's
 * lists started with (bench/trace/start_high.c).
 *
 * Usage: test_mirror TRACES_DIR [CASE...]
 */
#include "mirror.h"
#include "prime.h"
#include "start_high.h"
#include "trace_util.h"
#include "untraced.h"

static const char *traces_dir;

static const char *fixture(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", traces_dir, name);
	return path;
}

/* The lines of text through the parser: 0 for every header line. */
static void parse_text(const char *text, const char *prefix, struct trace_header *h)
{
	struct trace_event ev;
	enum trace_skip why;
	char line[512];
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		snprintf(line, sizeof(line), "%s%.*s", prefix, (int)n, p);
		CHECK_EQ(trace_parse_line(line, strlen(line), h, &ev, &why), 0);
		p += n + (p[n] == '\n');
	}
}

static bool same_zones(const struct trace_header *a, const struct trace_header *b)
{
	return a->nr_zones == b->nr_zones && !memcmp(a->zones, b->zones, sizeof(a->zones));
}

/* /proc/zoneinfo as zabench record writes it, as a shell script's "# "
 * comments, bare before the events, and as a file beside the trace: the
 * same zones, pagesets and counts. */
static void test_zoneinfo_forms(void)
{
	char path[512];
	struct buf zi = read_file(fixture("zoneinfo-6.18.txt", path, sizeof(path)));
	struct trace_header rec = { 0 }, hash = { 0 }, bare = { 0 }, file = { 0 };
	parse_text(zi.p, "# zoneinfo ", &rec);
	parse_text(zi.p, "# ", &hash);
	parse_text(zi.p, "", &bare);
	CHECK_EQ(trace_read_zoneinfo(path, &file, path, sizeof(path)), 0);
	CHECK_EQ(rec.nr_zones, 3);      /* DMA, DMA32, Normal: Movable and Device are empty */
	CHECK(!strcmp(rec.zones[2].name, "Normal"));
	CHECK_EQ(rec.zones[2].batch, 63);
	CHECK_EQ(rec.zones[2].nr_pagesets, 2);
	CHECK(rec.zones[2].high_min > 0 && rec.zones[2].high_min < rec.zones[2].high_max);
	CHECK(same_zones(&rec, &hash));
	CHECK(same_zones(&rec, &bare));
	CHECK(same_zones(&rec, &file));
	CHECK(bare.present && file.present);

	/* after the first event, a bare "Node" line is a bad line, not a zone */
	struct trace_event ev;
	enum trace_skip why;
	const char *event = "  bash-1 [000] ..... 1.000001: mm_page_free: page=0x1 pfn=0x1 order=0";
	CHECK_EQ(trace_parse_line(event, strlen(event), &bare, &ev, &why), 1);
	CHECK_EQ(trace_parse_line("Node 0, zone Normal", 19, &bare, &ev, &why), -1);
	CHECK_EQ(why, SKIP_MALFORMED);
	CHECK_EQ(bare.nr_zones, 3);
	free(zi.p);
}

/* A file that is not what it is given as is refused, naming its line. */
static void check_refused(int (*read)(const char *, struct trace_header *, char *, size_t),
			  const char *text, const char *want)
{
	char path[512], err[512];
	struct trace_header h = { 0 };
	write_file(scratch("side", path, sizeof(path)), text, strlen(text));
	CHECK_EQ(read(path, &h, err, sizeof(err)), -1);
	if (!strstr(err, want)) {
		fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, want);
		CHECK(0);
	}
}

static void test_side_files(void)
{
	char path[512], err[512];
	struct trace_header h = { 0 };
	CHECK_EQ(trace_read_sysctl(fixture("sysctl-vm.txt", path, sizeof(path)), &h, err, sizeof(err)), 0);
	CHECK(h.sysctl_known[TS_HIGH_FRACTION] && h.sysctl[TS_HIGH_FRACTION] == 0);
	CHECK(h.sysctl_known[TS_MIN_FREE_KBYTES] && h.sysctl[TS_MIN_FREE_KBYTES] == 67584);
	CHECK(h.sysctl_known[TS_WATERMARK_SCALE_FACTOR] && h.sysctl[TS_WATERMARK_SCALE_FACTOR] == 10);
	CHECK_EQ(h.sysctl[TS_WATERMARK_BOOST_FACTOR], 15000);

	check_refused(trace_read_sysctl, "vm.min_free_kbytes = 5\nnot a sysctl line\n", "side:2: not");
	check_refused(trace_read_sysctl, "dev.cdrom.info =\nvm.min_free_kbytes = lots\n",
		      "side:2: not a number, for a key the replay reads");
	check_refused(trace_read_sysctl, "vm.min_free_kbytes\n", "side:1: not a line of `sysctl -a`");

	/* `sysctl -a` prints some keys with no value: passed over */
	struct trace_header e = { 0 };
	write_file(scratch("side", path, sizeof(path)), "dev.cdrom.info =\nvm.swappiness = 60\n", 35);
	CHECK_EQ(trace_read_sysctl(path, &e, err, sizeof(err)), 0);
	check_refused(trace_read_zoneinfo, "Node 0, zone Normal\n  managed 5\nhello\n", "side:3: not");
	check_refused(trace_read_zoneinfo, "vm.min_free_kbytes = 5\n", "side:1: not");
	check_refused(trace_read_zoneinfo, "Node 0, zone Normal\n  managed 0\n", "no populated zone");
	char many[2048] = "";
	for (int i = 0; i <= TRACE_MAX_ZONES; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "Node %d, zone Normal\n  managed 100\n", i);
	check_refused(trace_read_zoneinfo, many, "side:33: more zones than zonealloc reads");
	CHECK_EQ(trace_read_zoneinfo("/nonexistent/zoneinfo", &h, err, sizeof(err)), -1);
	CHECK(strstr(err, "/nonexistent/zoneinfo: No such file"));

	/* "# sysctl" lines of the header, any key of vm.* */
	struct trace_event ev;
	enum trace_skip why;
	struct trace_header s = { 0 };
	const char *l = "# sysctl vm.watermark_scale_factor 40";
	CHECK_EQ(trace_parse_line(l, strlen(l), &s, &ev, &why), 0);
	CHECK(s.sysctl_known[TS_WATERMARK_SCALE_FACTOR] && s.sysctl[TS_WATERMARK_SCALE_FACTOR] == 40);
	CHECK(!s.sysctl_known[TS_HIGH_FRACTION]);
}

/* A Normal zone of `managed` pages, batch 63, two CPUs' pagesets. */
static struct trace_header machine(uint64_t managed, int high_min, int high_max)
{
	struct trace_header h = { .present = true, .nr_zones = 1 };
	struct trace_zone *z = &h.zones[0];
	snprintf(z->name, sizeof(z->name), "Normal");
	z->managed = z->spanned = z->present = managed;
	z->min = 12000;
	z->low = 15000;
	z->high = 18000;
	z->batch = 63;
	z->high_min = high_min;
	z->high_max = high_max;
	z->pcp_high[0] = high_min;
	z->nr_pagesets = 2;
	return h;
}

static bool has(const struct mirror *m, const char *config_part, const char *note_part)
{
	bool noted = !note_part;
	for (int i = 0; i < m->nnotes; i++)
		noted |= note_part && strstr(m->note[i], note_part) != NULL;
	return strstr(m->config, config_part) && noted;
}

/* Every mirror is a configuration za_mm_create takes. */
static void check_accepted(const struct mirror *m)
{
	za_mm_t *mm = za_mm_create(m->config);
	if (!mm)
		fprintf(stderr, "%s: %s\n", m->config, za_last_error());
	CHECK(mm);
	za_mm_destroy(mm);
}

static void test_mirror_derivation(void)
{
	struct mirror m;
	uint64_t managed = 2523136;
	struct trace_header h = machine(managed, 252, 252);     /* pinned at 4 batches */
	mirror_machine(&h, &m);
	check_accepted(&m);
	CHECK(has(&m, ",cpus=2,", "derived from zoneinfo: 2 CPUs"));
	CHECK(has(&m, "percpu_pagelist_high_fraction=1048576", "high pinned at 252 pages in Normal, its floor"));
	CHECK(has(&m, "kernel=6.18", "assumed: kernel 6.18's mechanisms, the latest longterm release"));
	CHECK(has(&m, "memory=10092544K,nodes=1,zones=Normal", "zones, managed pages and watermarks"));

	h = machine(managed, (int)(managed / 1000 / 2), (int)(managed / 1000 / 2));
	mirror_machine(&h, &m);
	CHECK(has(&m, "percpu_pagelist_high_fraction=1000,", "percpu_pagelist_high_fraction=1000 (high pinned at 1261"));

	h = machine(managed, 7500, 157696);                     /* tuned: apart */
	snprintf(h.uname, sizeof(h.uname), "6.12.5-amd64");
	mirror_machine(&h, &m);
	CHECK(has(&m, "kernel=6.12,", NULL));
	CHECK(has(&m, "percpu_pagelist_high_fraction=0,", "high_min high below high_max: tuned"));

	h.sysctl_known[TS_HIGH_FRACTION] = true;                /* the sysctl wins */
	h.sysctl[TS_HIGH_FRACTION] = 2147483647;
	h.nr_cpus = 4;
	mirror_machine(&h, &m);
	CHECK(has(&m, "percpu_pagelist_high_fraction=1048576,", "from the sysctl: vm.percpu_pagelist_high_fraction=2147483647"));
	CHECK(has(&m, ",cpus=4,", NULL));
	CHECK_EQ(m.nr_cpus, 4);

	h.sysctl_known[TS_WATERMARK_SCALE_FACTOR] = true;        /* its watermarks too */
	h.sysctl[TS_WATERMARK_SCALE_FACTOR] = 1000;
	mirror_machine(&h, &m);
	CHECK(has(&m, "watermark_scale_factor=1000", "from the sysctl: vm.watermark_scale_factor=1000"));

	/* two nodes of 2 CPUs each: high is shared by a node's CPUs */
	h = machine(managed, (int)(managed / 1000 / 2), (int)(managed / 1000 / 2));
	h.nr_cpus = 4;
	h.zones[1] = h.zones[0];
	h.zones[1].node = 1;
	h.nr_zones = 2;
	mirror_machine(&h, &m);
	CHECK(has(&m, "percpu_pagelist_high_fraction=1000,", NULL));
	CHECK(has(&m, ",nodes=2,", NULL));

	h = machine(managed, 0, 0);                             /* 5.4: high fixed, no sysctl yet */
	h.zones[0].pcp_high[0] = 6 * 63;
	snprintf(h.uname, sizeof(h.uname), "5.4.0-150-generic");
	mirror_machine(&h, &m);
	CHECK(has(&m, "kernel=5.4,", "the release fixes high"));
	CHECK(has(&m, "percpu_pagelist_high_fraction=0,", NULL));

	/* no zoneinfo: the CPUs and the release still come from the header */
	struct trace_header bare = { .present = true, .nr_cpus = 3 };
	snprintf(bare.uname, sizeof(bare.uname), "6.12.1");
	mirror_machine(&bare, &m);
	CHECK(has(&m, ",cpus=3,", "assumed: the memory and zones of --config"));
	CHECK(has(&m, "kernel=6.12,", NULL));
	CHECK_EQ(m.nr_cpus, 3);
	check_accepted(&m);

	struct trace_header none = { 0 };
	mirror_machine(&none, &m);
	CHECK(has(&m, "percpu=lock", "assumed: this machine's CPUs"));
	CHECK_EQ(m.nr_cpus, 0);
	check_accepted(&m);
}

/* A trace from lines: the reader needs a file. */
static struct trace_reader *open_lines(const char *text, char *path, size_t size)
{
	char err[256];
	write_file(scratch("prime", path, size), text, strlen(text));
	struct trace_reader *r = trace_open(path, err, sizeof(err));
	CHECK(r);
	return r;
}

#define EV(cpu, ts, what) "  p-1 [00" #cpu "] ..... 1." ts ": " what "\n"

/* CPU 0 hands out 2 movable pages, is refilled with 2 and hands out 3
 * more before a free: its list held 3 at least; a later free drains.
 * CPU 1's allocation the buddy lists served (a zone-locked event of its
 * pfn, not a refill) takes nothing; its unmovable list gets a stolen block
 * (an extfrag alone) and a claimed one (a refill, then its extfrag: one
 * block) and gives 3; it drains 1 more of order 1 than was freed. */
static void test_prime(void)
{
	static const char trace[] =
		"# nr_cpus 2\n"
		EV(0, "000001", "mm_page_alloc: page=0x1 pfn=0x1 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
		EV(0, "000002", "mm_page_alloc: page=0x2 pfn=0x2 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
		EV(0, "000003", "mm_page_alloc_zone_locked: page=0x5 pfn=0x5 order=0 migratetype=1 percpu_refill=1")
		EV(0, "000004", "mm_page_alloc_zone_locked: page=0x6 pfn=0x6 order=0 migratetype=1 percpu_refill=1")
		EV(0, "000005", "mm_page_alloc: page=0x3 pfn=0x3 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
		EV(0, "000006", "mm_page_alloc: page=0x4 pfn=0x4 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
		EV(0, "000007", "mm_page_alloc: page=0x7 pfn=0x7 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
		EV(0, "000008", "mm_page_free: page=0x1 pfn=0x1 order=0")
		EV(1, "000009", "mm_page_alloc_zone_locked: page=0x9 pfn=0x9 order=2 migratetype=0 percpu_refill=0")
		EV(1, "000010", "mm_page_alloc: page=0x9 pfn=0x9 order=2 migratetype=0 gfp_flags=GFP_KERNEL")
		EV(1, "0000101", "mm_page_alloc_extfrag: page=0xa pfn=0xa alloc_order=0 fallback_order=9 "
		   "alloc_migratetype=0 fallback_migratetype=1 fragmenting=1 change_ownership=0")
		EV(1, "0000102", "mm_page_alloc_zone_locked: page=0xb pfn=0xb order=0 migratetype=0 percpu_refill=1")
		EV(1, "0000103", "mm_page_alloc_extfrag: page=0xb pfn=0xb alloc_order=0 fallback_order=9 "
		   "alloc_migratetype=0 fallback_migratetype=1 fragmenting=1 change_ownership=1")
		EV(1, "000011", "mm_page_alloc: page=0xa pfn=0xa order=0 migratetype=0 gfp_flags=GFP_KERNEL")
		EV(1, "0000111", "mm_page_alloc: page=0xb pfn=0xb order=0 migratetype=0 gfp_flags=GFP_KERNEL")
		EV(1, "0000112", "mm_page_alloc: page=0xc pfn=0xc order=0 migratetype=0 gfp_flags=GFP_KERNEL")
		EV(1, "000012", "mm_page_free: page=0x20 pfn=0x20 order=1")
		EV(1, "000013", "mm_page_pcpu_drain: page=0x20 pfn=0x20 order=1 migratetype=1")
		EV(1, "000014", "mm_page_pcpu_drain: page=0x22 pfn=0x22 order=1 migratetype=1")
		EV(0, "000015", "mm_page_free: page=0x30 pfn=0x30 order=0")
		EV(0, "000016", "mm_page_pcpu_drain: page=0x31 pfn=0x31 order=0 migratetype=1");
	char path[512], err[256];
	struct trace_reader *r = open_lines(trace, path, sizeof(path));
	struct prime p;
	CHECK_EQ(prime_scan(r, trace_header(r), 2, NULL, &p, err, sizeof(err)), 0);
	int none = p.nr_zones - 1;      /* no zoneinfo: every pfn in no zone */
	CHECK_EQ(p.page_allocs, 9);
	CHECK_EQ(p.mt_allocs[1], 5);
	CHECK_EQ(p.mt_allocs[0], 4);
	CHECK_EQ(prime_need(&p, 0, none, 0, 1), 3);
	CHECK_EQ(prime_need(&p, 0, none, 0, 0), 0);
	CHECK_EQ(prime_need(&p, 1, none, 2, 0), 0);     /* served by the buddy lists */
	CHECK_EQ(prime_need(&p, 1, none, 0, 0), 1);     /* a steal and a claim gave 2 of 3 */
	CHECK_EQ(prime_need(&p, 1, none, 1, 1), 1);     /* freed one, drained two */
	/* CPU 0's order-0 free drained: its count had reached high, so
	 * high_min at least, with 1 page fewer than it started with (3 taken,
	 * 2 freed) before the drain; CPU 1's order-1 free may have been
	 * free_high's (no release, no zoneinfo), whatever its count. */
	CHECK_EQ(prime_start_count(&p, 0, none, 0, 0), 3);
	CHECK_EQ(prime_start_count(&p, 0, none, 100, 0), 101);
	CHECK_EQ(prime_start_count(&p, 0, none, 0, 50), 50);
	CHECK_EQ(prime_start_count(&p, 1, none, 100, 0), 3);
	CHECK_EQ(prime_slot(9), PRIME_SLOTS - 1);
	CHECK_EQ(prime_slot(4), -1);
	prime_free(&p);
	trace_close(r);
}


static void tick_counter(void *ctx, int cpu)
{
	((int *)ctx)[cpu]++;
}

/*
 * What the kernel did untraced.  CPU 0 is refilled with 0x10..0x13 and
 * hands out 0x10; kworker on CPU 1 frees 0x11 and 0x12, which no
 * allocation took: bulk allocations took them off CPU 0's list right
 * after their refill events (events 1 and 2), as the refill's type.  CPU 1
 * frees 0x40, never seen allocated, which an unmovable allocation then
 * takes off CPU 1's list: that free went onto the unmovable list.  0x41,
 * freed unseen on CPU 1 and drained as reclaimable, went onto that list;
 * 0x42, freed unseen and gone nowhere, is not known.  A free of 0x11
 * again (it sat on CPU 1's list since its first free, event 5) was a
 * second bulk take, off the movable list: the page's type is the first
 * take's, the refill's.  The drain of event 12 follows no free on CPU 0: its
 * vmstat worker ran at 1.000012 s.
 */
static void test_untraced(void)
{
	static const char trace[] =
		"# nr_cpus 2\n"
		EV(0, "000000", "mm_page_alloc_zone_locked: pfn=0x10 order=0 migratetype=1 percpu_refill=1")
		EV(0, "000001", "mm_page_alloc_zone_locked: pfn=0x11 order=0 migratetype=1 percpu_refill=1")
		EV(0, "000002", "mm_page_alloc_zone_locked: pfn=0x12 order=0 migratetype=1 percpu_refill=1")
		EV(0, "000003", "mm_page_alloc_zone_locked: pfn=0x13 order=0 migratetype=1 percpu_refill=1")
		EV(0, "000004", "mm_page_alloc: pfn=0x10 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
		EV(1, "000005", "mm_page_free: pfn=0x11 order=0")
		EV(1, "000006", "mm_page_free: pfn=0x12 order=0")
		EV(1, "000007", "mm_page_free: pfn=0x40 order=0")
		EV(1, "000008", "mm_page_alloc: pfn=0x40 order=0 migratetype=0 gfp_flags=GFP_KERNEL")
		EV(1, "000009", "mm_page_free: pfn=0x41 order=0")
		EV(1, "000010", "mm_page_pcpu_drain: pfn=0x41 order=0 migratetype=2")
		EV(1, "000011", "mm_page_free: pfn=0x42 order=0")
		EV(0, "000012", "mm_page_pcpu_drain: pfn=0x13 order=0 migratetype=1")
		EV(0, "000013", "mm_page_free: pfn=0x11 order=0");
	char path[512], err[256];
	struct trace_reader *r = open_lines(trace, path, sizeof(path));
	struct untraced u;
	CHECK_EQ(untraced_scan(r, 2, &u, err, sizeof(err)), 0);
	CHECK_EQ(u.ntakes, 3);
	CHECK_EQ(u.take[0].after, 1);
	CHECK_EQ(u.take[0].pfn, 0x11);
	CHECK_EQ(u.take[0].cpu, 0);
	CHECK_EQ(u.take[0].migratetype, 1);
	CHECK_EQ(u.take[1].after, 2);
	CHECK_EQ(u.take[1].pfn, 0x12);
	CHECK_EQ(u.take[2].after, 5);   /* 0x11 again, off CPU 1's list */
	CHECK_EQ(u.take[2].cpu, 1);
	CHECK_EQ(u.take[2].migratetype, 1);
	struct untraced_cursor at = { 0 };
	CHECK(!untraced_take_due(&u, &at, 0));
	CHECK(untraced_take_due(&u, &at, 1) == &u.take[0]);
	CHECK(untraced_take_due(&u, &at, 2) == &u.take[1]);
	CHECK(!untraced_take_due(&u, &at, 3));
	CHECK_EQ(untraced_list_type(&u, &at, 7, 1), 0);         /* 0x40: unmovable */
	CHECK_EQ(untraced_list_type(&u, &at, 9, 1), 2);         /* 0x41: reclaimable */
	CHECK_EQ(untraced_list_type(&u, &at, 11, 1), 1);        /* 0x42: the guess */
	CHECK_EQ(u.tick_ns[0], 1000012000ULL);
	CHECK_EQ(u.tick_ns[1], 0);      /* its drain followed a free */
	struct tick_clock clock;
	CHECK_EQ(tick_clock_init(&clock, &u, 2), 0);
	int ticks[2] = { 0, 0 };
	struct trace_event at_ts = { .type = TEV_PAGE_ALLOC, .ts_ns = 1000000000ULL };
	tick_clock_advance(&clock, &at_ts, tick_counter, ticks);        /* the first event */
	CHECK_EQ(clock.next[0], 1000012000ULL);         /* CPU 0's phase, and CPU 1's too */
	CHECK_EQ(clock.next[1], 1000012000ULL);
	struct trace_event drain = { .type = TEV_PCPU_DRAIN, .ts_ns = 3500000000ULL };
	tick_clock_advance(&clock, &drain, tick_counter, ticks);
	CHECK_EQ(ticks[0], 0);          /* not between a free and its drain */
	at_ts.ts_ns = 3500000000ULL;
	tick_clock_advance(&clock, &at_ts, tick_counter, ticks);
	CHECK_EQ(ticks[0], 3);          /* 1.000012, 2.000012, 3.000012 s */
	CHECK_EQ(ticks[1], 3);
	tick_clock_release(&clock);
	untraced_free(&u);
	trace_close(r);
}

/*
 * The start high a trace shows, under a tuned high (high_min 1000,
 * high_max 10000, batch 63).  Lists that start with 500 pages, frees
 * taking their net to +800 (count 1300, so high above it), then a refill
 * that raised high by 63 and a free to net +900 that drained: high was at
 * most count there, 1400, so 1337 at the start.  With a vmstat tick
 * between (count 1300 at it), high had decayed by an eighth first: it
 * started at 1527, which the decay (less 1527 >> 3) takes to 1337.
 */
static void test_start_high(void)
{
	const struct trace_zone z = { .high_min = 1000, .high_max = 10000, .batch = 63 };
	struct high_track t = { 0 };
	CHECK_EQ(high_track_start(&t, 500, &z), 1000);  /* nothing shown: high_min */
	CHECK_EQ(high_track_free(&t, 800), 0);
	CHECK_EQ(high_track_raise(&t, 63), 0);
	CHECK_EQ(high_track_free(&t, 900), 0);
	CHECK_EQ(high_track_drained(&t, true), 0);
	CHECK_EQ(high_track_free(&t, 5000), 0);         /* after the drain: says nothing */
	CHECK_EQ(high_track_start(&t, 500, &z), 1337);
	high_track_release(&t);

	CHECK_EQ(high_track_free(&t, 800), 0);
	CHECK_EQ(high_track_free(&t, 900), 0);
	CHECK_EQ(high_track_drained(&t, false), 0);     /* free_high's: no bound from it */
	CHECK_EQ(high_track_free(&t, 5000), 0);
	CHECK_EQ(high_track_start(&t, 500, &z), 1301);  /* above the first free's count, 1300 */
	high_track_release(&t);

	CHECK_EQ(high_track_free(&t, 800), 0);
	CHECK_EQ(high_track_tick(&t, 800), 0);
	CHECK_EQ(high_track_raise(&t, 63), 0);
	CHECK_EQ(high_track_free(&t, 900), 0);
	CHECK_EQ(high_track_drained(&t, true), 0);
	CHECK_EQ(high_track_start(&t, 500, &z), 1527);
	high_track_release(&t);

	const struct trace_zone pinned = { .high_min = 1000, .high_max = 1000, .batch = 63 };
	CHECK_EQ(high_track_free(&t, 5000), 0);
	CHECK_EQ(high_track_start(&t, 500, &pinned), 1000);     /* not tuned: high_min */
	high_track_release(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "zoneinfo_forms", test_zoneinfo_forms },
		{ "side_files", test_side_files },
		{ "mirror_derivation", test_mirror_derivation },
		{ "prime", test_prime },
		{ "untraced", test_untraced },
		{ "start_high", test_start_high },
	};
	if (argc < 2) {
		fprintf(stderr, "usage: %s TRACES_DIR [CASE...]\n", argv[0]);
		return 2;
	}
	traces_dir = argv[1];
	int rc = run_test_cases("test_mirror", argc - 1, argv + 1, cases, sizeof(cases) / sizeof(cases[0]));
	static const char *const files[] = { "side", "prime", NULL };
	unlink_scratch(files);
	return rc;
}
