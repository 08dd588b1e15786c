/*
 * fsmark (E1/E3 control): file creation with zero-sized files, allocation
 * only -- each "file" is a 192-byte dentry and a 600-byte inode that stay
 * allocated; they are freed after the measurement.  No object is reused,
 * so the per-CPU caches of either seed cannot help; the seed authors ran
 * it to show no harm, and so does this.
 *
 * Metric: ops_per_sec (files).  ops = files.  Each thread creates 200000
 * files per second of --seconds.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct fs_state {
	za_cache_t *dentry, *inode;
	long files;                     /* per thread */
	void ***objs;                   /* [thread][2 * files] */
	int m_ops;
};

static void fs_declare(struct bench *b)
{
	struct fs_state *st = calloc(1, sizeof(*st));
	st->files = (long)(200000 * (b->opts.seconds ? b->opts.seconds : b->opts.quick ? 0.3 : 1.0));
	st->objs = calloc((size_t)b->opts.threads, sizeof(void **));
	for (int i = 0; i < b->opts.threads; i++)
		st->objs[i] = malloc(sizeof(void *) * 2 * (size_t)st->files);
	st->m_ops = bench_metric(b, "ops_per_sec", "files/s", HIGHER_IS_BETTER);
	b->state = st;
}

static void fs_release(struct bench *b)
{
	struct fs_state *st = b->state;
	for (int i = 0; i < b->opts.threads; i++)
		free(st->objs[i]);
	free(st->objs);
}

static void fs_worker(int i, void *arg)
{
	struct fs_state *st = arg;
	void **o = st->objs[i];
	for (long f = 0; f < st->files; f++) {
		char *d = za_cache_alloc(st->dentry, 0), *in = za_cache_alloc(st->inode, 0);
		if (!d || !in) {
			fprintf(stderr, "zabench fsmark: %s\n", za_last_error());
			exit(1);
		}
		memset(d, 0, 64);
		memset(in, 0, 128);
		o[2 * f] = d;
		o[2 * f + 1] = in;
	}
}

static void fs_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct fs_state *st = b->state;
	st->dentry = variant_cache(v, 0, "dentry", 192);
	st->inode = variant_cache(v, 1, "inode_cache", 600);
	double wall = run_threads(b->opts.threads, fs_worker, st);
	it->ops = st->files * b->opts.threads;
	it->value[st->m_ops] = (double)it->ops / wall;
	for (int i = 0; i < b->opts.threads; i++)
		for (long f = 0; f < st->files; f++) {
			za_cache_free(st->dentry, st->objs[i][2 * f]);
			za_cache_free(st->inode, st->objs[i][2 * f + 1]);
		}
}

/* The control: one run per switch, each must show no regression. */
static const char *const fs_report[] = {
	"--ab pcp_high_order",
	"--ab bulkfree_outside_lock",
	"--ab slub_max_order=3:4,slub_big_system=0:1 --config nr_cpus=224",
	"--ab fair_zone",
	"--ab kswapd_wake_high",
	"--ab quicklists",
	"--ab slab_freelist_random",
	"--ab slab_freelist_hardened",
	NULL,
};

const struct experiment exp_fsmark = {
	.name = "fsmark",
	.summary = "E1/E3 control: allocation-only dentry+inode creation",
	.notes = "The control: the seed posting ran fsmark with zero-sized files to show no harm, "
		 "and here every seed's switch should be within noise or show its own mechanism "
		 "only (zone-lock acquisitions with pcp_high_order, list_lock with seed 002, whose "
		 "bigger slabs are a real gain for an allocation-only run).  fsmark allocates and "
		 "never frees, so a new slab is linked every few files: slab_freelist_random, "
		 "which links each new slab's objects in a random order (a division per object) "
		 "and then hands them out at scattered addresses, costs here what it costs the "
		 "kernel on slab-heavy allocation, with every counter unchanged.",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.declare = fs_declare,
	.run = fs_run,
	.release = fs_release,
	.report_runs = fs_report,
};
