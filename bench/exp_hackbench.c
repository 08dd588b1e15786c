/*
 * hackbench (E3, E1): groups of 20 sender and 20 receiver threads.  Every
 * sender sends 100-byte kmalloc'ed messages to every receiver of its group,
 * round robin; receivers free them.  All frees are remote, so the slabs
 * cycle through the CPUs' partial lists and the nodes' -- the list_lock
 * traffic seed 002 targets, and per-CPU page traffic for seed 000.
 * --threads is the number of groups.
 *
 * Metric: ops_per_sec (messages).  ops = messages.
 */
#include "bench.h"
#include "queue.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define GROUP 20
#define MSG 100

struct hb_state {
	za_mm_t *mm;
	int groups;
	double deadline;
	struct ring *rings;             /* [group][sender][receiver] */
	atomic_int *done;               /* senders finished, per group */
	atomic_llong messages;
	int m_ops;
};

static struct ring *ring_of(struct hb_state *st, int g, int s, int r)
{
	return &st->rings[((size_t)g * GROUP + (size_t)s) * GROUP + (size_t)r];
}

static void hb_declare(struct bench *b)
{
	struct hb_state *st = calloc(1, sizeof(*st));
	st->groups = b->opts.threads;
	st->rings = aligned_alloc(64, sizeof(struct ring) * (size_t)st->groups * GROUP * GROUP);
	st->done = calloc((size_t)st->groups, sizeof(atomic_int));
	st->m_ops = bench_metric(b, "ops_per_sec", "messages/s", HIGHER_IS_BETTER);
	b->state = st;
}

static void hb_release(struct bench *b)
{
	struct hb_state *st = b->state;
	free(st->rings);
	free(st->done);
}

static void sender(struct hb_state *st, int g, int s)
{
	unsigned int spins = 0;
	do {
		for (int r = 0; r < GROUP; r++) {
			char *msg = za_kmalloc(st->mm, MSG, 0);
			if (!msg) {
				fprintf(stderr, "zabench hackbench: %s\n", za_last_error());
				exit(1);
			}
			memset(msg, s, MSG);
			while (!ring_push(ring_of(st, g, s, r), msg))
				backoff(&spins);
			spins = 0;
		}
	} while (now_seconds() < st->deadline);
	atomic_fetch_add(&st->done[g], 1);
}

static void receiver(struct hb_state *st, int g, int r)
{
	unsigned int spins = 0;
	long n = 0;
	for (;;) {
		bool finished = atomic_load(&st->done[g]) == GROUP;
		long got = 0;
		for (int s = 0; s < GROUP; s++) {
			char *msg;
			while ((msg = ring_pop(ring_of(st, g, s, r)))) {
				za_kfree(st->mm, msg);
				got++;
			}
		}
		n += got;
		if (!got && finished)
			break;
		if (!got)
			backoff(&spins);
		else
			spins = 0;
	}
	atomic_fetch_add(&st->messages, n);
}

static void hb_worker(int i, void *arg)
{
	int g = i / (2 * GROUP), k = i % (2 * GROUP);
	if (k < GROUP)
		sender(arg, g, k);
	else
		receiver(arg, g, k - GROUP);
}

static void hb_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct hb_state *st = b->state;
	st->mm = v->mm;
	memset(st->rings, 0, sizeof(struct ring) * (size_t)st->groups * GROUP * GROUP);
	for (int g = 0; g < st->groups; g++)
		atomic_store(&st->done[g], 0);
	atomic_store(&st->messages, 0);
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(st->groups * 2 * GROUP, hb_worker, st);
	it->ops = atomic_load(&st->messages);
	it->value[st->m_ops] = (double)it->ops / wall;
}

static void hb_describe_threads(const struct bench *b, char *buf, size_t len)
{
	snprintf(buf, len, "%d group%s of %d senders and %d receivers (%d threads)", b->opts.threads,
		 b->opts.threads == 1 ? "" : "s", GROUP, GROUP, 2 * GROUP * b->opts.threads);
}

static const char *const hb_report[] = {
	"--ab pcp_high_order",
	"--ab slub_max_order=3:4,slub_big_system=0:1 --config nr_cpus=224",
	"--ab slub_max_order=3:4,slub_big_system=0:1 --config nr_cpus=224,kernel=7.0",
	"--ab slub_sheaves=0:2 --config kernel=7.0",
	NULL,
};

const struct experiment exp_hackbench = {
	.name = "hackbench",
	.summary = "E3: groups of 20 senders and 20 receivers of 100-byte kmalloc'ed messages",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.describe_threads = hb_describe_threads,
	.declare = hb_declare,
	.run = hb_run,
	.release = hb_release,
	.report_runs = hb_report,
};
