/*
 * What each switch `--ab` compares is: the seed patch it comes from, the
 * counter that shows its mechanism (noise-free, so it speaks on a machine
 * too small or too noisy for the wall-clock figure to), and what the
 * posting measured, for the report's summary.  docs/seeds.md tells the
 * story; the figures here are quoted from there.
 */
#include "seeds.h"

#include <string.h>

const struct ab_switch ab_switches[] = {
	{ "pcp_high_order", "000", NULL, "0|1", "orders 1..3 on the per-CPU lists, high = 11 x batch" },
	{ "bulkfree_outside_lock", "001", NULL, "0|1", "bulk free picks its pages before the zone lock" },
	{ "slub_max_order", "002", NULL, "3|4", "the largest slab order (4: the patch)" },
	{ "slub_big_system", "002", NULL, "0|1", "with nr_cpus >= 32: double min_objects and cpu_partial" },
	{ "fair_zone", "003", NULL, "0|1", "allocation batches spread pages over the zones fairly" },
	{ "kswapd_wake_high", "003", NULL, "0|1", "wake kswapd until the zone is balanced at high" },
	{ "quicklists", "004", NULL, "0|1", "page-table pages kept constructed on per-CPU lists" },
	{ "pcp_drain_chunks", NULL, "6.19", "1|2", "a drain over high returns a batch per lock hold" },
	{ "slub_sheaves", NULL, "7.0", "0|2", "per-CPU sheaves and barns in place of CPU slabs" },
	{ "pcp_own_pageblocks", NULL, "RFC", "0|1", "per-CPU lists own whole pageblocks; frees go to the owner" },
	{ "slab_freelist_random", NULL, NULL, "0|1", "hardening: slab free lists in random order" },
	{ "slab_freelist_hardened", NULL, NULL, "0|1", "hardening: free pointers stored obfuscated" },
	{ 0 },
};

/*
 * Per switch, and per experiment where the posting measured one: the
 * mechanism counter and the published figure.  The first entry that
 * matches wins; an entry without an experiment is the switch's default.
 */
static const struct seed_figure figures[] = {
	{ "pcp_high_order", "netperf-udp", NULL, "zone_lock_acquire", NULL,
	  "+44..+50% send-64..3312 (2-socket)" },
	{ "pcp_high_order", "sockperf-udp", NULL, "zone_lock_acquire", NULL, "UDP throughput +50%" },
	{ "pcp_high_order", "hackbench", NULL, "zone_lock_acquire", NULL,
	  "pipes -1.7..+13.9% (1-16 groups)" },
	{ "pcp_high_order", "fsmark", NULL, "zone_lock_acquire", NULL, "no difference (control)" },
	{ "pcp_high_order", NULL, NULL, "zone_lock_acquire", NULL, NULL },
	{ "bulkfree_outside_lock", "page_fault1", NULL, "pcp_bulkfree_hold_ns", "pcp_bulkfree",
	  "+3.0..+6.4% (2-4 sockets, every CPU busy)" },
	{ "bulkfree_outside_lock", NULL, NULL, "pcp_bulkfree_hold_ns", "pcp_bulkfree", NULL },
	{ "slub_max_order", "mmap1", NULL, "list_lock_acquire", NULL,
	  "+33..+65% ops (2-socket, 160 threads)" },
	{ "slub_max_order", "hackbench", NULL, "list_lock_acquire", NULL, "+10.5%" },
	{ "slub_max_order", NULL, NULL, "list_lock_acquire", NULL, NULL },
	{ "fair_zone", "parallelio", "--io-size 0 ", "pgmajfault", NULL, "ops +2.2% (no IO)" },
	{ "fair_zone", "parallelio", "--io-size 10 ", "pgmajfault", NULL,
	  "ops +11.7%, major faults -99.9% (791 MiB IO)" },
	{ "fair_zone", "parallelio", "--io-size 33 ", "pgmajfault", NULL,
	  "ops +94.0%, major faults -70.9% (2639 MiB IO)" },
	{ "fair_zone", "parallelio", "--io-size 55 ", "pgmajfault", NULL,
	  "ops +50.5%, major faults -79.8% (4487 MiB IO)" },
	{ "fair_zone", "streamread", NULL, "pgactivate", NULL,
	  "active file pages in one zone 443,000 -> 5,000" },
	{ "fair_zone", "repeat", NULL, "alloc_slowpath", NULL, NULL },
	{ "fair_zone", NULL, NULL, "pgactivate", NULL, NULL },
	{ "kswapd_wake_high", NULL, NULL, "allocstall", NULL, "(with fair_zone: the 003 series' figures)" },
	{ "quicklists", "pgtable", NULL, "bytes_zeroed", NULL,
	  "pte_alloc 2.7 us -> 1.3 us, pgd_alloc 4 us -> 150 ns" },
	{ "quicklists", "fsmark", NULL, "bytes_zeroed", NULL, "(not measured: a control)" },
	{ "quicklists", NULL, NULL, "bytes_zeroed", NULL, NULL },
	{ "slub_sheaves", NULL, NULL, "list_lock_acquire", NULL, NULL },
	{ "pcp_own_pageblocks", NULL, NULL, "zone_lock_acquire", NULL,
	  "RFC (Weiner, Apr 2026): zone-lock contention from jemalloc's purger threads at Meta" },
	{ "pcp_drain_chunks", NULL, NULL, "pcp_bulkfree_pages", "pcp_bulkfree",
	  "free_pcppages_bulk of 2000+ pages per zone-lock hold seen across Meta's fleet; kbuild "
	  "sys time -11.9% on 316 CPUs, -3.2% on 36" },
	{ 0 },
};

const struct ab_switch *find_switch(const char *name, size_t len)
{
	for (const struct ab_switch *s = ab_switches; s->name; s++)
		if (strlen(s->name) == len && !strncmp(s->name, name, len))
			return s;
	return NULL;
}

const struct seed_figure *seed_figure(const char *sw, const char *experiment, const char *args)
{
	for (const struct seed_figure *f = figures; f->sw; f++) {
		if (strcmp(f->sw, sw))
			continue;
		if (f->experiment && strcmp(f->experiment, experiment))
			continue;
		if (f->args && !strstr(args, f->args))
			continue;
		return f;
	}
	return NULL;
}
