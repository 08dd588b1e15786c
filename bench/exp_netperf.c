/*
 * netperf-udp (E1, seed 000's headline): pairs of sender and receiver
 * threads pass "packets" through a bounded queue.  The sender allocates a
 * header object (skbuff_head, 232 bytes) and a buffer of the send size with
 * kmalloc -- small sizes from slab caches whose slabs are order 0..3, sizes
 * above 8 KiB straight from the page allocator at order 1..3 -- and fills
 * the buffer; the receiver reads it and frees both on its own CPU.  So every
 * buffer page moves from the sender's CPU to the receiver's, which is what
 * seed 000's high-order per-CPU lists are for.
 *
 * Metrics: send-<size> in Mbit/s for each of --sizes.  ops = packets.
 */
#include "bench.h"
#include "queue.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const long default_sizes[] = { 64, 128, 256, 1024, 2048, 3312, 4096, 8192, 16384 };

struct packet {
	void *data;
	long len;
};

struct np_state {
	za_mm_t *mm;
	za_cache_t *hdr;
	long size;
	double deadline;
	int pairs;
	struct ring *rings;             /* [pairs] */
	atomic_int *senders_done;       /* [pairs] */
	atomic_llong packets;
	int metric[MAX_SIZES];
};

static void np_declare(struct bench *b)
{
	struct np_state *st = calloc(1, sizeof(*st));
	if (!b->opts.nsizes) {
		b->opts.nsizes = (int)(sizeof(default_sizes) / sizeof(default_sizes[0]));
		memcpy(b->opts.sizes, default_sizes, sizeof(default_sizes));
	}
	for (int i = 0; i < b->opts.nsizes; i++) {
		char name[32];
		snprintf(name, sizeof(name), "send-%ld", b->opts.sizes[i]);
		st->metric[i] = bench_metric(b, name, "Mbit/s", HIGHER_IS_BETTER);
	}
	st->pairs = b->opts.threads;
	st->rings = aligned_alloc(64, sizeof(struct ring) * (size_t)st->pairs);
	st->senders_done = calloc((size_t)st->pairs, sizeof(atomic_int));
	b->state = st;
}

static void np_release(struct bench *b)
{
	struct np_state *st = b->state;
	free(st->rings);
	free(st->senders_done);
}

static void send_packets(struct np_state *st, struct ring *r)
{
	unsigned int spins = 0;
	unsigned char fill = 0;
	do {
		for (int k = 0; k < 64; k++) {
			struct packet *pkt = za_cache_alloc(st->hdr, 0);
			unsigned char *data = za_kmalloc(st->mm, (size_t)st->size, 0);
			if (!pkt || !data) {
				fprintf(stderr, "zabench netperf-udp: %s\n", za_last_error());
				exit(1);
			}
			memset(data, ++fill, (size_t)st->size);
			pkt->data = data;
			pkt->len = st->size;
			while (!ring_push(r, pkt))
				backoff(&spins);
			spins = 0;
		}
	} while (now_seconds() < st->deadline);
}

static long receive_packets(struct np_state *st, struct ring *r, atomic_int *sender_done)
{
	unsigned int spins = 0;
	long n = 0;
	for (;;) {
		struct packet *pkt = ring_pop(r);
		if (!pkt) {
			if (atomic_load(sender_done) && !(pkt = ring_pop(r)))
				return n;
			if (!pkt) {
				backoff(&spins);
				continue;
			}
		}
		spins = 0;
		unsigned char *data = pkt->data;
		if (data[pkt->len - 1] != data[0])
			abort();
		za_kfree(st->mm, data);
		za_cache_free(st->hdr, pkt);
		n++;
	}
}

static void np_worker(int i, void *arg)
{
	struct np_state *st = arg;
	int pair = i / 2;
	pin_to_cpu(i);          /* sender and receiver on different CPUs, as netperf runs */
	if (i % 2 == 0) {
		send_packets(st, &st->rings[pair]);
		atomic_store(&st->senders_done[pair], 1);
	} else {
		atomic_fetch_add(&st->packets, receive_packets(st, &st->rings[pair], &st->senders_done[pair]));
	}
}

static void np_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct np_state *st = b->state;
	st->mm = v->mm;
	st->hdr = variant_cache(v, 0, "skbuff_head", 232);
	double per_size = bench_seconds(b);     /* --seconds is per size */
	for (int s = 0; s < b->opts.nsizes; s++) {
		st->size = b->opts.sizes[s];
		memset(st->rings, 0, sizeof(struct ring) * (size_t)st->pairs);
		for (int p = 0; p < st->pairs; p++)
			atomic_store(&st->senders_done[p], 0);
		atomic_store(&st->packets, 0);
		st->deadline = now_seconds() + per_size;
		double wall = run_threads(2 * st->pairs, np_worker, st);
		long long packets = atomic_load(&st->packets);
		it->value[st->metric[s]] = (double)packets * (double)st->size * 8 / 1e6 / wall;
		it->ops += packets;
	}
}

static const char *const np_report[] = {
	"--ab pcp_high_order",
	NULL,
};

const struct experiment exp_netperf = {
	.name = "netperf-udp",
	.summary = "E1: sender/receiver pairs pass kmalloc'ed packets; Mbit/s per --sizes",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.declare = np_declare,
	.run = np_run,
	.release = np_release,
	.report_runs = np_report,
};
