/*
 * The recorded machine, mirrored: CPUs, zones and their managed sizes,
 * watermarks, the release's per-CPU mechanisms, and the per-CPU lists'
 * high marks, each from the best source the trace offers and said so.
 *
 * The high marks matter most: they decide every refill and drain.  A
 * trace made by `zabench record` carries vm.percpu_pagelist_high_fraction
 * in a "# sysctl" line; one made by trace-cmd, perf or a shell script
 * usually does not, but its zoneinfo shows what the sysctl did: since 6.7
 * each pageset prints high_min and high_max, equal when the fraction pins
 * high (the kernel's zone_highsize(): managed / fraction shared by the
 * node's CPUs, at least 4 batches) and apart when the kernel tunes it.
 * Before 6.7 only high is printed: the low watermark's share means the
 * fraction was 0.
 */
#include "mirror.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The model's largest high fraction; the kernel's largest values all pin
 * high at its floor, as this one does. */
#define MAX_FRACTION (1 << 20)
#define MIN_FRACTION 8                  /* the sysctl's smallest non-zero */
#define NEWEST_RELEASE "7.0"
/* A trace that does not say its kernel plays as the latest longterm
 * release: what most machines that record one run. */
#define LONGTERM_RELEASE "6.18"
#define NEWEST 7000                     /* ... as trace_release() counts */

static void add(struct mirror *m, const char *fmt, ...)
{
	size_t n = strlen(m->config);
	va_list ap;
	va_start(ap, fmt);
	if (n < sizeof(m->config))
		vsnprintf(m->config + n, sizeof(m->config) - n, fmt, ap);
	va_end(ap);
}

static void note(struct mirror *m, const char *fmt, ...)
{
	if (m->nnotes == MIRROR_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->note[m->nnotes++], sizeof(m->note[0]), fmt, ap);
	va_end(ap);
}

static int header_nodes(const struct trace_header *h)
{
	int nodes = 0;
	for (int z = 0; z < h->nr_zones; z++)
		if (h->zones[z].node + 1 > nodes)
			nodes = h->zones[z].node + 1;
	return nodes;
}

/* The zone the per-CPU figures are read from: node 0's largest. */
static const struct trace_zone *largest_zone(const struct trace_header *h)
{
	const struct trace_zone *big = NULL;
	for (int z = 0; z < h->nr_zones; z++)
		if (!h->zones[z].node && (!big || h->zones[z].managed > big->managed))
			big = &h->zones[z];
	return big;
}

/* Node 0's last zone, the one the config sizes as the rest (-1: none). */
static int last_zone(const struct trace_header *h)
{
	int last = -1;
	for (int z = 0; z < h->nr_zones; z++)
		if (h->zones[z].node == 0)
			last = z;
	return last;
}

/* "zones=DMA:15360K+DMA32:3091672K+Normal" from node 0's populated zones
 * (every node of a model has the same zones; the last takes the rest). */
static void mirror_zones(const struct trace_header *h, struct mirror *m)
{
	int last = last_zone(h);
	bool first = true;
	add(m, ",zones=");
	for (int z = 0; z <= last; z++) {
		const struct trace_zone *tz = &h->zones[z];
		if (tz->node)
			continue;
		add(m, "%s%s", first ? "" : "+", tz->name);
		first = false;
		if (z < last)
			add(m, ":%lluK", (unsigned long long)tz->managed * 4);
	}
}

/*
 * Whether node 0's zones, each but the last at its managed size and the
 * last the rest of a node's share of the memory, make a machine: each
 * zone at least a max-order block (the config's default order, 10), as
 * za_mm_create wants them.  A zoneinfo cut or garbled may not.
 */
#define MIRROR_BLOCK_PAGES (1ull << 10)
static bool zones_fit(const struct trace_header *h, int nodes, uint64_t managed)
{
	int last = last_zone(h);
	uint64_t fixed = 0;
	for (int z = 0; z < last; z++) {
		if (h->zones[z].node)
			continue;
		if (h->zones[z].managed < MIRROR_BLOCK_PAGES)
			return false;
		fixed += h->zones[z].managed / MIRROR_BLOCK_PAGES * MIRROR_BLOCK_PAGES;
	}
	return last >= 0 && fixed + MIRROR_BLOCK_PAGES <= managed / (uint64_t)nodes;
}

/* The sysctl's value if the trace has it, else what derive() makes of
 * the zones; noted either way. */
static uint64_t sysctl_or(const struct trace_header *h, enum trace_sysctl key, uint64_t derived,
			  struct mirror *m)
{
	if (!h->sysctl_known[key])
		return derived;
	note(m, "derived from the sysctl: %s=%lld", trace_sysctl_name(key), (long long)h->sysctl[key]);
	return (uint64_t)h->sysctl[key];
}

/* The watermarks' parameters: the sysctls, else what gives the header's
 * watermarks (min_free_kbytes is the zones' min watermarks together; the
 * scale factor, the gap between min and low in the largest zone). */
static void mirror_watermarks(const struct trace_header *h, struct mirror *m)
{
	uint64_t min = 0;
	const struct trace_zone *big = largest_zone(h);
	for (int z = 0; z < h->nr_zones; z++)
		min += h->zones[z].min;
	uint64_t gap = big ? big->low - big->min : 0;
	uint64_t wsf = big && big->managed ? (gap * 10000 + big->managed / 2) / big->managed : 10;
	uint64_t kbytes = sysctl_or(h, TS_MIN_FREE_KBYTES, min * 4, m);
	wsf = sysctl_or(h, TS_WATERMARK_SCALE_FACTOR, wsf, m);
	add(m, ",min_free_kbytes=%llu,watermark_scale_factor=%llu",
	    (unsigned long long)(kbytes < 128 ? 128 : kbytes),
	    (unsigned long long)(wsf < 1 ? 1 : wsf > 3000 ? 3000 : wsf));
	note(m, "derived from zoneinfo: zones, managed pages%s", h->sysctl_known[TS_MIN_FREE_KBYTES] &&
	     h->sysctl_known[TS_WATERMARK_SCALE_FACTOR] ? "" : " and watermarks");
	if (h->zones_dropped)
		note(m, "assumed: the first %d zones only (%d more in zoneinfo)", TRACE_MAX_ZONES,
		     h->zones_dropped);
}

/*
 * The release for kernel= from uname: "6.18.44-fc" -> "6.18", "2.6.32-5"
 * -> "2.6.32".  A release newer than the preset's table plays as the
 * newest it knows: its mechanisms are the latest ones zonealloc has.  No
 * uname (trace-cmd, perf, a tracefs script): the latest longterm release,
 * not the newest -- on the shipped corpus's traces without one, all
 * recorded on 6.18, 7.0's chunked drains (6.19) split free_high's drains
 * of order-2 blocks into batches that each free a block more than asked.
 */
static void mirror_release(const struct trace_header *h, struct mirror *m)
{
	int release = trace_release(h), major = release / 1000, minor = release % 1000, sub;
	if (!release) {
		add(m, ",kernel=%s", LONGTERM_RELEASE);
		note(m, "assumed: kernel %s's mechanisms, the latest longterm release (no uname in the "
			"trace; --config kernel=X.Y gives another)", LONGTERM_RELEASE);
	} else if (major == 2 && sscanf(h->uname, "2.%*d.%d", &sub) == 1) {
		add(m, ",kernel=2.6.%d", sub);
	} else if (release > NEWEST) {
		add(m, ",kernel=%s", NEWEST_RELEASE);
		note(m, "assumed: kernel %d.%d plays with %s's mechanisms, the newest zonealloc has",
		     major, minor, NEWEST_RELEASE);
	} else {
		add(m, ",kernel=%d.%d", major, minor);
	}
}

/* CPUs: the header's count, else the pagesets zoneinfo showed. */
static int mirror_cpus(const struct trace_header *h, struct mirror *m)
{
	const struct trace_zone *big = largest_zone(h);
	if (h->nr_cpus)
		return h->nr_cpus;
	if (big && big->nr_pagesets) {
		note(m, "derived from zoneinfo: %d CPUs (its pagesets)", big->nr_pagesets);
		return big->nr_pagesets;
	}
	return 0;
}

/* The kernel's zone_highsize(): pages shared by the CPUs of the zone's
 * node, each at least 4 batches. */
static int64_t share_high(const struct trace_zone *z, int node_cpus, uint64_t pages)
{
	uint64_t high = pages / (uint64_t)node_cpus, floor = 4ULL * (uint64_t)z->batch;
	return (int64_t)(high > floor ? high : floor);
}

static int64_t fraction_high(const struct trace_zone *z, int node_cpus, long fraction)
{
	return share_high(z, node_cpus, z->managed / (uint64_t)fraction);
}

/* The fraction that pins high where zoneinfo shows it: at its floor, the
 * largest; else the one next to managed / (high * cpus) that gives it
 * exactly.  0 if none does. */
static long fraction_for_high(const struct trace_zone *z, int cpus, int high)
{
	if (high <= 4LL * z->batch)
		return MAX_FRACTION;
	long guess = (long)(z->managed / ((uint64_t)high * (uint64_t)cpus));
	for (long f = guess - 2; f <= guess + 2; f++)
		if (f >= MIN_FRACTION && fraction_high(z, cpus, f) == high)
			return f;
	return 0;
}

/*
 * percpu_pagelist_high_fraction: the sysctl if the trace has it, else
 * what the zoneinfo's pagesets show (from 5.14, which made high the low
 * watermark's share unless the sysctl pins it), else the default.  A high
 * at its floor that the tuned range would give too says nothing.
 */
static void mirror_high_fraction(const struct trace_header *h, int node_cpus, struct mirror *m)
{
	const struct trace_zone *z = largest_zone(h);
	int release = trace_release(h);
	if (h->sysctl_known[TS_HIGH_FRACTION]) {
		int64_t f = h->sysctl[TS_HIGH_FRACTION];
		add(m, ",percpu_pagelist_high_fraction=%lld", (long long)(f < MAX_FRACTION ? f : MAX_FRACTION));
		note(m, "derived from the sysctl: %s=%lld", trace_sysctl_name(TS_HIGH_FRACTION), (long long)f);
		return;
	}
	add(m, ",percpu_pagelist_high_fraction=");
	if (!z || !z->batch || !node_cpus || (release && release < 5014)) {
		add(m, "0");
		note(m, "assumed: percpu_pagelist_high_fraction=0, the default (no sysctl%s)",
		     release && release < 5014 ? "; the release fixes high" : ", no pagesets in zoneinfo");
		return;
	}
	int64_t low_high = share_high(z, node_cpus, z->low);
	bool pinned = z->high_min ? z->high_min == z->high_max : z->pcp_high[0] != low_high;
	int high = z->high_min ? z->high_min : z->pcp_high[0];
	if (pinned && high == 4LL * z->batch && (!z->high_min || fraction_high(z, node_cpus, 8) == high))
		pinned = false;         /* a zone too small to tell */
	long f = pinned ? fraction_for_high(z, node_cpus, high) : 0;
	add(m, "%ld", f);
	if (!pinned) {
		note(m, "derived from zoneinfo: percpu_pagelist_high_fraction=0 (%s high %s in %s)",
		     z->high_min ? "high_min" : "cpu 0's", z->high_min ? "below high_max: tuned" :
		     "the low watermark's share", z->name);
	} else if (f) {
		note(m, "derived from zoneinfo: percpu_pagelist_high_fraction=%ld (high pinned at "
			"%d pages in %s%s)", f, high, z->name, f == MAX_FRACTION ? ", its floor" : "");
	} else {
		note(m, "assumed: percpu_pagelist_high_fraction=0: zoneinfo's high %d in %s "
			"matches no fraction over %d CPUs", high, z->name, node_cpus);
	}
}

/*
 * Always: nothing runs but the replay (no kswapd, vmstat thread or lock
 * timing), page memory is reserved, not touched, until used, and nothing
 * depends on the replaying machine (llc_per_cpu: the trace does not say
 * the recorded machine's, so PCPF_FREE_HIGH_BATCH is off unless given).
 * The per-CPU lists are the kernel's (percpu=lock: no rseq fronts, whose
 * blocks the kernel does not have; the replaying thread plays CPUs).
 */
void mirror_machine(const struct trace_header *h, struct mirror *m)
{
	memset(m, 0, sizeof(*m));
	add(m, "kswapd=0,lock_stats=0,vmstat_interval_ms=0,deferred_init=1,llc_per_cpu=0,percpu=lock");
	if (h->zoneinfo_here)
		note(m, "assumed: this machine's zoneinfo, the trace having none and its pfns in its "
			"zones; its counts and highs are of now, not used (--zoneinfo FILE|none)");
	mirror_release(h, m);
	int cpus = m->nr_cpus = mirror_cpus(h, m);
	if (cpus)
		add(m, ",cpus=%d,nr_cpus=%d", cpus, cpus);
	else
		note(m, "assumed: this machine's CPUs (the trace says nothing of its own)");
	if (h->cpu_unnamed)
		note(m, "assumed: CPU 0 for the events that name no CPU (perf record without -a, "
			"or perf script -F without cpu): the per-CPU rows are one CPU's");
	int nodes = header_nodes(h);
	mirror_high_fraction(h, cpus / (nodes > 1 ? nodes : 1), m);
	if (!h->nr_zones) {
		note(m, "assumed: the memory and zones of --config or the defaults (no zoneinfo in "
			"the trace: give one with --zoneinfo FILE)");
		return;
	}
	uint64_t managed = 0;
	for (int z = 0; z < h->nr_zones; z++)
		managed += h->zones[z].managed;
	if (!zones_fit(h, nodes, managed)) {
		note(m, "assumed: the memory and zones of --config or the defaults (the zoneinfo's "
			"zones do not make a machine: one smaller than 4 MiB, or more than the "
			"memory)");
		return;
	}
	add(m, ",memory=%lluK,nodes=%d", (unsigned long long)managed * 4, nodes);
	mirror_zones(h, m);
	mirror_watermarks(h, m);
}

void mirror_print(const struct mirror *m, FILE *out)
{
	fprintf(out, "mirror of the recorded machine:\n");
	for (int i = 0; i < m->nnotes; i++)
		fprintf(out, "  %s\n", m->note[i]);
}
