/*
 * Configuration strings: "memory=2G,nodes=1,zones=DMA32:512M+Normal,...".
 *
 * One table row per key.  Parsing is strict (an unknown key or a bad value
 * fails with a message naming the key) because a benchmark that silently
 * ignored a mistyped switch would measure the wrong system.
 */
#include "config.h"
#include "platform.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum key_type { K_SIZE, K_INT, K_BOOL, K_ZONES, K_RATIOS, K_STRING, K_KERNEL };

struct key {
	const char *name;
	enum key_type type;
	size_t offset;
	int64_t min, max;               /* K_SIZE: min 0 allows a size of 0 */
	bool auto_ok;
	const char *(*check)(const char *value);        /* K_STRING: why it is bad, or NULL */
};

#define FIELD(f) offsetof(struct za_config, f)

static const char *percpu_check(const char *v)
{
	return strcmp(v, "rseq") && strcmp(v, "lock") ? "expected rseq or lock" : NULL;
}

static const char *percpu_index_check(const char *v)
{
	return strcmp(v, "cpu") && strcmp(v, "cid") ? "expected cpu or cid" : NULL;
}

static const char *rseq_area_check(const char *v)
{
	return strcmp(v, "libc") && strcmp(v, "own") ? "expected libc or own" : NULL;
}

static const char *malloc_cache_check(const char *v)
{
	return strcmp(v, "thread") && strcmp(v, "cpu") ? "expected thread or cpu" : NULL;
}

/* kernel= comes first: za_mm_config_string() prints the keys in this
 * order, and the preset must not undo the keys printed after it. */
static const struct key keys[] = {
	{ "kernel",                K_KERNEL, FIELD(kernel), 0, ZA_KERNEL_RELEASE_MAX, false, NULL },
	{ "memory",                K_SIZE,   FIELD(memory), 1, 0, false, NULL },
	{ "nodes",                 K_INT,    FIELD(nodes), 1, ZA_MAX_NODES, false, NULL },
	{ "zones",                 K_ZONES,  FIELD(zones), 0, 0, false, NULL },
	{ "cpus",                  K_INT,    FIELD(cpus), 1, ZA_MAX_CPUS, true, NULL },
	{ "max_order",             K_INT,    FIELD(max_order), 0, ZA_MAX_ORDER_LIMIT, false, NULL },
	{ "alloc_nofragment",      K_BOOL,   FIELD(alloc_nofragment), 0, 1, false, NULL },
	{ "fallback_steal_smallest", K_BOOL, FIELD(fallback_steal_smallest), 0, 1, false, NULL },
	{ "pcp_high_order",        K_INT,    FIELD(pcp_high_order), 0, 2, false, NULL },
	{ "bulkfree_outside_lock", K_BOOL,   FIELD(bulkfree_outside_lock), 0, 1, false, NULL },
	{ "bulkfree_list_first",   K_BOOL,   FIELD(bulkfree_list_first), 0, 1, false, NULL },
	{ "percpu_pagelist_high_fraction", K_INT, FIELD(percpu_pagelist_high_fraction), 0, 1 << 20, false, NULL },
	{ "pcp_high_auto",         K_BOOL,   FIELD(pcp_high_auto), 0, 1, false, NULL },
	{ "pcp_high_min",          K_SIZE,   FIELD(pcp_high_min), 0, 0, false, NULL },
	{ "pcp_high_max",          K_SIZE,   FIELD(pcp_high_max), 0, 0, false, NULL },
	{ "pcp_refill_drain",      K_BOOL,   FIELD(pcp_refill_drain), 0, 1, false, NULL },
	{ "pcp_decay_shift",       K_INT,    FIELD(pcp_decay_shift), 1, 8, false, NULL },
	{ "pcp_batch_scale_max",   K_INT,    FIELD(pcp_batch_scale_max), 0, 6, false, NULL },
	{ "pcp_free_high",         K_INT,    FIELD(pcp_free_high), 0, 3, false, NULL },
	{ "pcp_drain_chunks",      K_INT,    FIELD(pcp_drain_chunks), 0, 2, false, NULL },
	{ "pcp_own_pageblocks",    K_BOOL,   FIELD(pcp_own_pageblocks), 0, 1, false, NULL },
	{ "llc_per_cpu",           K_SIZE,   FIELD(llc_per_cpu), 0, 0, true, NULL },
	{ "vmstat_interval_ms",    K_INT,    FIELD(vmstat_interval_ms), 0, 3600000, true, NULL },
	{ "watermark_scale_factor", K_INT,   FIELD(watermark_scale_factor), 1, 3000, false, NULL },
	{ "min_free_kbytes",       K_INT,    FIELD(min_free_kbytes), 128, 1 << 30, true, NULL },
	{ "lowmem_reserve_ratio",  K_RATIOS, FIELD(lowmem_reserve_ratio), 0, 1 << 20, true, NULL },
	{ "lock_stats",            K_BOOL,   FIELD(lock_stats), 0, 1, false, NULL },
	{ "percpu",                K_STRING, FIELD(percpu), 0, 8, false, percpu_check },
	{ "percpu_index",          K_STRING, FIELD(percpu_index), 0, 8, false, percpu_index_check },
	{ "rseq_area",             K_STRING, FIELD(rseq_area), 0, 8, false, rseq_area_check },
	{ "malloc_cache",          K_STRING, FIELD(malloc_cache), 0, 8, false, malloc_cache_check },
	{ "slub_min_order",        K_INT,    FIELD(slub_min_order), 0, ZA_MAX_ORDER_LIMIT, false, NULL },
	{ "slub_max_order",        K_INT,    FIELD(slub_max_order), 0, ZA_MAX_ORDER_LIMIT, false, NULL },
	{ "slub_min_objects",      K_INT,    FIELD(slub_min_objects), 0, 32767, false, NULL },
	{ "nr_cpus",               K_INT,    FIELD(nr_cpus), 1, 65536, true, NULL },
	{ "slub_big_system",       K_BOOL,   FIELD(slub_big_system), 0, 1, false, NULL },
	{ "slub_sheaves",          K_INT,    FIELD(slub_sheaves), 0, 2, false, NULL },
	{ "slub_debug",            K_STRING, FIELD(slub_debug), 0, 128, false, slub_debug_check },
	{ "slab_freelist_random",  K_BOOL,   FIELD(slab_freelist_random), 0, 1, false, NULL },
	{ "slab_freelist_hardened", K_BOOL,  FIELD(slab_freelist_hardened), 0, 1, false, NULL },
	{ "fair_zone",             K_BOOL,   FIELD(fair_zone), 0, 1, false, NULL },
	{ "kswapd_wake_high",      K_BOOL,   FIELD(kswapd_wake_high), 0, 1, false, NULL },
	{ "kswapd",                K_BOOL,   FIELD(kswapd), 0, 1, false, NULL },
	{ "quicklists",            K_BOOL,   FIELD(quicklists), 0, 1, false, NULL },
	{ "nr_quick",              K_INT,    FIELD(nr_quick), 1, 16, false, NULL },
	{ "deferred_init",         K_BOOL,   FIELD(deferred_init), 0, 1, false, NULL },
	{ "section_size",          K_SIZE,   FIELD(section_size), 1, 0, true, NULL },
	{ "purge_delay_ms",        K_INT,    FIELD(purge_delay_ms), 0, 3600000, false, NULL },
	{ "purge_excess",          K_BOOL,   FIELD(purge_excess), 0, 1, false, NULL },
	{ "publish",               K_BOOL,   FIELD(publish), 0, 1, false, NULL },
	{ "publish_interval_ms",   K_INT,    FIELD(publish_interval_ms), 0, 3600000, false, NULL },
	{ "debug",                 K_BOOL,   FIELD(debug), 0, 1, false, NULL },
	{ "hugepages",             K_BOOL,   FIELD(hugepages), 0, 1, false, NULL },
	{ "populate",              K_BOOL,   FIELD(populate), 0, 1, false, NULL },
};

void za_config_defaults(struct za_config *cfg)
{
	*cfg = (struct za_config){
		.memory = 1ULL << 30,
		.nodes = 1,
		.nr_zones = 2,
		.zones = { { "DMA32", 256ULL << 20 }, { "Normal", 0 } },
		.cpus = ZA_AUTO,
		.max_order = 10,
		.pcp_high_order = 1,
		.bulkfree_outside_lock = 1,
		.pcp_batch_scale_max = 5,
		.pcp_decay_shift = 3,
		.llc_per_cpu = (uint64_t)ZA_AUTO,
		.vmstat_interval_ms = ZA_AUTO,
		.watermark_scale_factor = 10,
		.min_free_kbytes = ZA_AUTO,
		.lowmem_reserve_ratio = { ZA_AUTO, ZA_AUTO, ZA_AUTO, ZA_AUTO },
		.lock_stats = 1,
		.publish_interval_ms = 1000,
		.percpu = "rseq",
		.percpu_index = "cpu",
		.rseq_area = "libc",
		.malloc_cache = "thread",
		.slub_max_order = 3,
		.nr_cpus = ZA_AUTO,
		.slub_big_system = 1,
		.slab_freelist_hardened = 1,
		.fair_zone = 1,
		.kswapd_wake_high = 1,
		.kswapd = 1,
		.quicklists = 1,
		.nr_quick = 2,
		.purge_delay_ms = 1000,
		.purge_excess = 1,
		.section_size = (uint64_t)ZA_AUTO,
	};
}

static int bad_value(const char *key, const char *val, int len, const char *want)
{
	za_set_last_error("config: bad value '%.*s' for key '%s' (expected %s)",
			  len, val, key, want);
	errno = EINVAL;
	return -1;
}

/* A size: digits with an optional K/M/G/T suffix (powers of 1024). */
static int parse_size(const char *s, int len, uint64_t *out)
{
	char *end;
	if (len <= 0 || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	int shift = 0;
	if (end < s + len) {
		const char *suffixes = "KMGT";
		const char *p = strchr(suffixes, toupper((unsigned char)*end));
		if (!p || !*end)
			return -1;
		shift = 10 * (int)(p - suffixes + 1);
		end++;
	}
	if (end != s + len || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_int(const char *s, int len, int64_t *out)
{
	char *end;
	if (len <= 0 || !(isdigit((unsigned char)s[0]) || s[0] == '-'))
		return -1;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end != s + len)
		return -1;
	*out = v;
	return 0;
}

static int parse_bool(const char *s, int len, int64_t *out)
{
	static const char *const yes[] = { "1", "y", "yes", "on", "true" };
	static const char *const no[] = { "0", "n", "no", "off", "false" };
	for (size_t i = 0; i < ZA_ARRAY_SIZE(yes); i++) {
		if ((int)strlen(yes[i]) == len && !strncasecmp(s, yes[i], len))
			return *out = 1, 0;
		if ((int)strlen(no[i]) == len && !strncasecmp(s, no[i], len))
			return *out = 0, 0;
	}
	return -1;
}

/* "NAME:SIZE+NAME:SIZE+NAME", the last size optional. */
static int parse_zones(struct za_config *cfg, const char *s, int len)
{
	struct za_zone_spec zones[ZA_MAX_ZONES] = { 0 };
	int n = 0;
	const char *end = s + len;
	while (s < end) {
		const char *plus = memchr(s, '+', (size_t)(end - s));
		const char *stop = plus ? plus : end;
		const char *colon = memchr(s, ':', (size_t)(stop - s));
		const char *name_end = colon ? colon : stop;
		int name_len = (int)(name_end - s);
		if (n == ZA_MAX_ZONES || name_len == 0 || name_len >= ZA_ZONE_NAME_MAX)
			return -1;
		for (int i = 0; i < name_len; i++)
			if (!isalnum((unsigned char)s[i]) && s[i] != '_')
				return -1;
		memcpy(zones[n].name, s, (size_t)name_len);
		for (int i = 0; i < n; i++)
			if (!strcmp(zones[i].name, zones[n].name))
				return -1;
		if (colon) {
			if (parse_size(colon + 1, (int)(stop - colon - 1), &zones[n].bytes) ||
			    !zones[n].bytes)
				return -1;
		} else if (plus) {
			return -1;      /* only the last zone may take "the rest" */
		}
		n++;
		s = plus ? plus + 1 : end;
		if (plus && s == end)
			return -1;
	}
	if (!n)
		return -1;
	memcpy(cfg->zones, zones, sizeof(zones));
	cfg->nr_zones = n;
	cfg->zones_given = true;
	return 0;
}

/* "auto" or "R0:R1:..." (one ratio per zone, lowest first). */
static int parse_ratios(int64_t *ratios, const struct key *k, const char *s, int len)
{
	int64_t v[ZA_MAX_ZONES];
	int n = 0;
	const char *end = s + len;
	while (s <= end) {
		const char *colon = memchr(s, ':', (size_t)(end - s));
		const char *stop = colon ? colon : end;
		if (n == ZA_MAX_ZONES || parse_int(s, (int)(stop - s), &v[n]) ||
		    v[n] < k->min || v[n] > k->max)
			return -1;
		n++;
		s = stop + 1;
	}
	for (int i = 0; i < ZA_MAX_ZONES; i++)
		ratios[i] = i < n ? v[i] : 0;
	return 0;
}

static const struct key *find_key(const char *name, int len)
{
	for (size_t i = 0; i < ZA_ARRAY_SIZE(keys); i++)
		if ((int)strlen(keys[i].name) == len && !strncmp(keys[i].name, name, len))
			return &keys[i];
	return NULL;
}

/* ------------------------------------------------------------------------
 * kernel=X.Y: every switch as that release had it
 *
 * One row per switch zonealloc has: its value before the first release
 * listed, and from each release listed on.  A release is X.Y (X.Y.Z is
 * taken as X.Y: a stable update adds no mechanism), or 2.6.Z.  The keys
 * given after kernel= in the same string (and ZA_CONFIG's) override it;
 * keys given before it are overridden by it.  Switches that are build
 * options rather than releases (slab_freelist_random, _hardened), tunables
 * (percpu_pagelist_high_fraction, watermark_scale_factor) and the machine
 * (cpus, memory, llc_per_cpu) are left alone; so is pcp_batch_scale_max,
 * a Kconfig value (5 by default since it appeared).
 *
 * Sources: the kernel's git history of mm/page_alloc.c, mm/slub.c and
 * include/linux/mmzone.h, docs/seeds.md, the kmem/page_alloc patch mails.
 * [likely] marks a release read from merge-window logs, not from a tag.
 * ------------------------------------------------------------------------ */
#define KV(a, b, c) ((unsigned int)(a) << 16 | (unsigned int)(b) << 8 | (unsigned int)(c))

struct preset_step {
	unsigned int from;              /* KV() of the first release with value */
	int64_t value;
};

struct preset_row {
	const char *key;
	int64_t before;                 /* before the first step */
	struct preset_step steps[3];    /* ascending; from == 0 ends the list */
	const char *why;
};

static const struct preset_row kernel_presets[] = {
	{ "pcp_high_order", 0, { { KV(5, 14, 0), 2 } },
	  "high-order per-CPU lists landed in 5.14 (44042b449872, on 5.13-rc2) as the kernel's "
	  "layout: per-migratetype lists for orders 0..3 plus the THP order, high from the low "
	  "watermark; seed 000's shared lists (1) were never merged" },
	{ "bulkfree_outside_lock", 0, { { KV(4, 17, 0), 1 }, { KV(5, 18, 0), 0 } },
	  "seed 001 went in through the mm tree for 4.17; 5.18 frees in one pass under the zone "
	  "lock again ('free pages in a single pass during bulk free')" },
	{ "bulkfree_list_first", 0, { { KV(5, 18, 0), 1 } },
	  "5.18: 'drain the requested list first during bulk free', each list emptied in turn" },
	{ "pcp_free_high", 0, { { KV(5, 18, 0), 1 }, { KV(6, 7, 0), 2 }, { KV(6, 16, 0), 3 } },
	  "5.18: free_high drains a CPU freeing high-order pages (f26b3fa04611); 6.7: only after "
	  "two high-order frees in a row, keeping a batch on CPUs with a large cache slice; "
	  "6.16 [likely]: only once free_count reaches batch + high_min / 2 (Nikhil Dhama)" },
	{ "pcp_drain_chunks", 0, { { KV(6, 10, 0), 1 }, { KV(6, 19, 0), 2 } },
	  "6.10 [likely]: emptying a CPU's lists takes batch << CONFIG_PCP_BATCH_SCALE_MAX pages per "
	  "lock hold ('control latency caused by zone PCP draining', Lucas Stach); 6.19 [likely]: a "
	  "free over high and the vmstat worker's decay return theirs a batch per per-CPU and "
	  "zone-lock hold, the per-CPU lock dropped between ('batch page freeing in "
	  "free_frozen_page_commit' and '... in decay_pcp_high', Joshua Hahn)" },
	{ "pcp_high_auto", 0, { { KV(6, 7, 0), 1 } },
	  "6.7: 'PCP high auto-tuning' (Huang Ying): high_min/high_max, alloc_factor, free_count, "
	  "decay by the vmstat worker" },
	{ "alloc_nofragment", 0, { { KV(5, 0, 0), 1 } },
	  "5.0 [likely]: 'spread allocations across zones before introducing fragmentation' "
	  "(6bb154504f8b): the fast path from Normal, with DMA32 below it, falls back only to "
	  "whole pageblocks, trying the other zones first" },
	{ "fallback_steal_smallest", 0, { { KV(6, 15, 0), 1 } },
	  "6.15 [likely]: the fallback tries to claim a pageblock at every order, then steals the "
	  "smallest block ('don't steal single pages from biggest buddy', c2f6ea38fc1b)" },
	{ "fair_zone", 0, { { KV(3, 12, 0), 1 }, { KV(4, 8, 0), 0 } },
	  "seed 003's fair zone policy merged in 3.12 (81c0a2bb515f), removed in 4.8 when the LRU "
	  "moved to nodes (e6cbd7f2efb4)" },
	{ "kswapd_wake_high", 0, { { KV(3, 12, 0), 1 } },
	  "seed 003 patch 1 (3.12): wake kswapd unless balanced at the high watermark; still so" },
	{ "quicklists", 0, { { KV(2, 6, 22), 1 }, { KV(2, 6, 25), 0 } },
	  "seed 004 merged in 2.6.22; x86-64 stopped using it with the 2.6.25 page-table "
	  "unification (Lameter, LKML 10 Mar 2008); ia64 and sh kept it until 5.4 (13224794cb08)" },
	{ "slub_sheaves", 0, { { KV(6, 18, 0), 1 }, { KV(7, 0, 0), 2 } },
	  "6.18: per-CPU sheaves and per-node barns for the caches that ask (vm_area_struct, "
	  "maple_node: sheaf_capacity 32); 7.0: for every cache but debug ones ('slab: add sheaves "
	  "to most caches'), and the CPU slabs, CPU partial lists and cmpxchg fast paths removed "
	  "(Vlastimil Babka)" },
	{ "slub_max_order", 3, { { 0, 0 } },
	  "seed 002: order 4 was never merged; 3 (PAGE_ALLOC_COSTLY_ORDER) throughout" },
	{ "slub_big_system", 0, { { 0, 0 } },
	  "seed 002: only the order calculation's refactoring landed (6.7); no CPU-count doubling" },
};

/* Releases the preset knows: 2.6.0 .. 2.6.39, 3.0 .. 3.19, 4.0 .. 4.20,
 * 5.0 .. 5.19, 6.0 .. 6.19, 7.0. */
static bool known_release(unsigned int a, unsigned int b, unsigned int c, bool has_c)
{
	static const unsigned int last_minor[] = { [3] = 19, [4] = 20, [5] = 19, [6] = 19, [7] = 0 };
	if (a == 2)
		return b == 6 && has_c && c <= 39;
	return a >= 3 && a <= 7 && b <= last_minor[a];
}

/* "X.Y" or "X.Y.Z", each part 0..255. */
static bool parse_release(const char *s, int len, unsigned int part[3], int *nparts)
{
	*nparts = 0;
	for (int i = 0; i < len;) {
		unsigned int v = 0;
		int digits = 0;
		while (i < len && isdigit((unsigned char)s[i]) && digits < 4)
			v = v * 10 + (unsigned int)(s[i++] - '0'), digits++;
		if (!digits || v > 255 || *nparts == 3)
			return false;
		part[(*nparts)++] = v;
		if (i < len && (s[i++] != '.' || i == len))
			return false;
	}
	return *nparts >= 2;
}

static int apply_kernel_preset(struct za_config *cfg, const char *key, const char *val, int len)
{
	unsigned int part[3] = { 0, 0, 0 };
	int nparts;
	if (!len) {                     /* none: the switches stay as they are */
		cfg->kernel[0] = 0;
		return 0;
	}
	if (len >= ZA_KERNEL_RELEASE_MAX || !parse_release(val, len, part, &nparts))
		return bad_value(key, val, len, "a release like 6.18, 4.9 or 2.6.22");
	if (!known_release(part[0], part[1], part[2], nparts == 3)) {
		za_set_last_error("config: key '%s': no release %.*s known (2.6.0 .. 2.6.39, 3.0 .. "
				  "6.19, 7.0)", key, len, val);
		errno = EINVAL;
		return -1;
	}
	unsigned int release = KV(part[0], part[1], part[0] == 2 ? part[2] : 0);
	for (size_t i = 0; i < ZA_ARRAY_SIZE(kernel_presets); i++) {
		const struct preset_row *row = &kernel_presets[i];
		const struct key *k = find_key(row->key, (int)strlen(row->key));
		if (!k || (k->type != K_BOOL && k->type != K_INT)) {
			za_set_last_error("config: key '%s': the preset names no switch '%s'", key,
					  row->key);
			errno = EINVAL;
			return -1;
		}
		int64_t v = row->before;
		for (int j = 0; j < (int)ZA_ARRAY_SIZE(row->steps) && row->steps[j].from; j++)
			if (release >= row->steps[j].from)
				v = row->steps[j].value;
		*(int64_t *)((char *)cfg + k->offset) = v;
	}
	memcpy(cfg->kernel, val, (size_t)len);
	cfg->kernel[len] = 0;
	return 0;
}

static int parse_pair(struct za_config *cfg, const char *s, int len)
{
	const char *eq = memchr(s, '=', (size_t)len);
	if (!eq) {
		za_set_last_error("config: '%.*s' is not key=value", len, s);
		errno = EINVAL;
		return -1;
	}
	int klen = (int)(eq - s), vlen = len - klen - 1;
	const char *val = eq + 1;
	while (klen && isspace((unsigned char)s[klen - 1]))
		klen--;
	while (vlen && isspace((unsigned char)*val))
		val++, vlen--;
	const struct key *k = find_key(s, klen);
	if (!k) {
		za_set_last_error("config: unknown key '%.*s'", klen, s);
		errno = EINVAL;
		return -1;
	}
	void *field = (char *)cfg + k->offset;
	bool is_auto = vlen == 4 && !strncmp(val, "auto", 4);
	if (is_auto && k->type == K_RATIOS) {
		for (int i = 0; i < ZA_MAX_ZONES; i++)
			((int64_t *)field)[i] = ZA_AUTO;
		return 0;
	}
	if (is_auto && k->auto_ok) {
		*(int64_t *)field = ZA_AUTO;
		return 0;
	}
	int64_t v = 0;
	switch (k->type) {
	case K_SIZE:
		if (parse_size(val, vlen, (uint64_t *)field) || *(uint64_t *)field < (uint64_t)k->min)
			return bad_value(k->name, val, vlen, k->min ? "a size like 512M or 2G"
								 : "a size like 512K or 2M, or 0");
		return 0;
	case K_KERNEL:
		return apply_kernel_preset(cfg, k->name, val, vlen);
	case K_ZONES:
		if (parse_zones(cfg, val, vlen))
			return bad_value(k->name, val, vlen,
					 "NAME:SIZE+...+NAME, at most 4 distinct zones");
		return 0;
	case K_RATIOS:
		if (parse_ratios(field, k, val, vlen))
			return bad_value(k->name, val, vlen, "auto or ratios like 256:32");
		return 0;
	case K_STRING: {
		if (vlen >= k->max)
			return bad_value(k->name, val, vlen, "a shorter value");
		memcpy(field, val, (size_t)vlen);
		((char *)field)[vlen] = 0;
		const char *why = k->check ? k->check(field) : NULL;
		if (why) {
			za_set_last_error("config: key '%s': %s", k->name, why);
			errno = EINVAL;
			return -1;
		}
		return 0;
	}
	case K_BOOL:
		if (parse_bool(val, vlen, &v))
			return bad_value(k->name, val, vlen, "0 or 1");
		break;
	case K_INT:
		if (parse_int(val, vlen, &v) || v < k->min || v > k->max) {
			char want[80];
			snprintf(want, sizeof(want), "an integer in %" PRId64 "..%" PRId64 "%s",
				 k->min, k->max, k->auto_ok ? " or auto" : "");
			return bad_value(k->name, val, vlen, want);
		}
		break;
	}
	*(int64_t *)field = v;
	return 0;
}

int za_config_parse(struct za_config *cfg, const char *str)
{
	if (!str)
		return 0;
	while (*str) {
		const char *comma = strchr(str, ',');
		int len = comma ? (int)(comma - str) : (int)strlen(str);
		while (len && isspace((unsigned char)*str))
			str++, len--;
		while (len && isspace((unsigned char)str[len - 1]))
			len--;
		if (len && parse_pair(cfg, str, len))
			return -1;
		if (!comma)
			break;
		str = comma + 1;
	}
	return 0;
}

/* Appends to a caller's buffer, counting what did not fit, like snprintf. */
struct strbuf {
	char *buf;
	size_t len, n;
};

static void __attribute__((format(printf, 2, 3))) sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(sb->buf ? sb->buf + (sb->n < sb->len ? sb->n : sb->len) : NULL,
			  sb->n < sb->len ? sb->len - sb->n : 0, fmt, ap);
	va_end(ap);
	if (r > 0)
		sb->n += (size_t)r;
}

/* A byte count with the largest suffix that keeps it exact. */
static void format_size(struct strbuf *sb, uint64_t v)
{
	static const char suffix[] = "KMGT";
	int i = -1;
	while (i < 3 && v && !(v & 1023))
		v >>= 10, i++;
	if (i < 0)
		sb_printf(sb, "%" PRIu64, v);
	else
		sb_printf(sb, "%" PRIu64 "%c", v, suffix[i]);
}

static void format_value(struct strbuf *sb, const struct za_config *cfg, const struct key *k)
{
	const void *field = (const char *)cfg + k->offset;
	switch (k->type) {
	case K_SIZE:
		if (k->auto_ok && *(const uint64_t *)field == (uint64_t)ZA_AUTO)
			sb_printf(sb, "auto");
		else
			format_size(sb, *(const uint64_t *)field);
		break;
	case K_ZONES:
		for (int i = 0; i < cfg->nr_zones; i++) {
			sb_printf(sb, "%s%s", i ? "+" : "", cfg->zones[i].name);
			if (cfg->zones[i].bytes) {
				sb_printf(sb, ":");
				format_size(sb, cfg->zones[i].bytes);
			}
		}
		break;
	case K_RATIOS: {
		const int64_t *r = field;
		if (r[0] == ZA_AUTO)
			sb_printf(sb, "auto");
		else
			for (int i = 0; i < cfg->nr_zones; i++)
				sb_printf(sb, "%s%" PRId64, i ? ":" : "", r[i]);
		break;
	}
	case K_STRING:
	case K_KERNEL:
		sb_printf(sb, "%s", (const char *)field);
		break;
	case K_BOOL:
	case K_INT: {
		int64_t v = *(const int64_t *)field;
		if (v == ZA_AUTO && k->auto_ok)
			sb_printf(sb, "auto");
		else
			sb_printf(sb, "%" PRId64, v);
		break;
	}
	}
}

size_t za_config_format(const struct za_config *cfg, char *buf, size_t len)
{
	struct strbuf sb = { buf, len, 0 };
	if (buf && len)
		buf[0] = 0;
	for (size_t i = 0; i < ZA_ARRAY_SIZE(keys); i++) {
		sb_printf(&sb, "%s%s=", i ? "," : "", keys[i].name);
		format_value(&sb, cfg, &keys[i]);
	}
	return sb.n;
}
