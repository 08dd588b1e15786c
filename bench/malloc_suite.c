/*
 * malloc-suite: the allocation benchmarks `zabench malloc` runs under each
 * allocator (LD_PRELOAD), one per process so that each gets a fresh heap
 * and its own peak RSS.  Plain C on malloc/free: it does not know which
 * allocator it runs on.
 *
 *   malloc-suite <benchmark> <threads> <scale>
 *   malloc-suite exec <program> [args...]
 *
 * prints the seconds the workload took, the process's peak RSS in KiB and
 * its system time in seconds (settle: its own seconds, and its RSS in KiB
 * before the burst and after).  Each benchmark does a fixed
 * amount of work (times scale) and checks what it wrote, so a broken
 * allocator fails instead of looking fast.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rss_sampler.h"

static int threads;
static double scale;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static long work(long n)
{
	return (long)((double)n * scale);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "malloc-suite: malloc(%zu) failed\n", n);
		exit(1);
	}
	return p;
}

/* Writes the first and last byte of a block; check() verifies them. */
static void mark(unsigned char *p, size_t n, unsigned char tag)
{
	p[0] = tag;
	p[n - 1] = tag;
}

static void check(const unsigned char *p, size_t n, unsigned char tag)
{
	if (p[0] != tag || p[n - 1] != tag) {
		fprintf(stderr, "malloc-suite: block %p (%zu bytes) was overwritten\n", (void *)p, n);
		exit(1);
	}
}

static void run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size)
{
	pthread_t t[256];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * arg_size)) {
			perror("malloc-suite: pthread_create");
			exit(1);
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* ------------------------------------------------------------------------
 * churn: one thread replaces random blocks of 16..256 bytes in a working
 * set of 20000, the way an interpreter's or a compiler's heap churns.
 * ------------------------------------------------------------------------ */
static void churn(void)
{
	enum { SLOTS = 20000 };
	static unsigned char *slot[SLOTS];
	static size_t len[SLOTS];
	uint64_t s = 1;
	for (long i = 0; i < work(20000000); i++) {
		unsigned int k = (unsigned int)(rnd(&s) % SLOTS);
		if (slot[k]) {
			check(slot[k], len[k], (unsigned char)k);
			free(slot[k]);
		}
		len[k] = 16 + rnd(&s) % 241;
		slot[k] = xmalloc(len[k]);
		mark(slot[k], len[k], (unsigned char)k);
	}
	for (int k = 0; k < SLOTS; k++)
		free(slot[k]);
}

/* ------------------------------------------------------------------------
 * sizes: every size from 8 bytes to 32 KiB in 48 geometric steps, a batch
 * of blocks of each, freed in the order allocated.
 * ------------------------------------------------------------------------ */
/* n blocks of `size` bytes into b, each marked, then checked and freed in
 * the order allocated. */
static void build_and_drop(unsigned char **b, int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		b[i] = xmalloc(size);
		mark(b[i], size, (unsigned char)i);
	}
	for (int i = 0; i < n; i++) {
		check(b[i], size, (unsigned char)i);
		free(b[i]);
	}
}

static void sizes(void)
{
	enum { BATCH = 256 };
	static unsigned char *b[BATCH];
	for (long round = 0; round < work(400); round++)
		for (double sz = 8; sz <= 32768; sz *= 1.2)
			build_and_drop(b, BATCH, (size_t)sz);
}

/* ------------------------------------------------------------------------
 * loops: one thread builds a batch of 20000 blocks of one size (16 .. 1024
 * bytes), writing each, then frees them in the order allocated: the lists
 * and tables a C program builds and drops in simple loops.
 * ------------------------------------------------------------------------ */
static void loops(void)
{
	enum { BATCH = 20000 };
	static unsigned char *b[BATCH];
	for (size_t size = 16; size <= 1024; size *= 2)
		for (long round = 0; round < work(60); round++)
			build_and_drop(b, BATCH, size);
}

/* ------------------------------------------------------------------------
 * realloc: strings and arrays growing a few bytes at a time to 4 KiB ..
 * 1 MiB, as builders and parsers grow their buffers.
 * ------------------------------------------------------------------------ */
static void realloc_growth(void)
{
	enum { BUFS = 64 };
	uint64_t s = 2;
	for (long round = 0; round < work(60); round++) {
		unsigned char *buf[BUFS] = { 0 };
		size_t len[BUFS] = { 0 }, limit[BUFS];
		for (int i = 0; i < BUFS; i++)
			limit[i] = (size_t)4096 << (rnd(&s) % 9);
		for (bool growing = true; growing;) {
			growing = false;
			for (int i = 0; i < BUFS; i++) {
				if (len[i] >= limit[i])
					continue;
				size_t n = len[i] + 8 + rnd(&s) % 120;
				unsigned char *p = realloc(buf[i], n);
				if (!p)
					exit(1);
				if (len[i])
					check(p, len[i], (unsigned char)i);
				mark(p, n, (unsigned char)i);
				buf[i] = p;
				len[i] = n;
				growing = true;
			}
		}
		for (int i = 0; i < BUFS; i++)
			free(buf[i]);
	}
}

/* ------------------------------------------------------------------------
 * larson: a server's threads each work a table of blocks (random sizes
 * 16..1024), replacing one at a time; every round the tables move on to
 * the next thread, which frees blocks another thread allocated.
 * ------------------------------------------------------------------------ */
enum { LARSON_SLOTS = 1000 };
struct larson_table {
	unsigned char *slot[LARSON_SLOTS];
	size_t len[LARSON_SLOTS];
};
static struct larson_table *tables;
static pthread_barrier_t barrier;

struct worker {
	int id;
	long n;
	double seconds;                 /* and then on for this long */
	uint64_t seed;
	_Alignas(64) char pad[64];
};

static void *larson_worker(void *arg)
{
	struct worker *w = arg;
	for (int round = 0; round < 20; round++) {
		struct larson_table *t = &tables[(w->id + round) % threads];
		for (long i = 0; i < w->n / 20; i++) {
			unsigned int k = (unsigned int)(rnd(&w->seed) % LARSON_SLOTS);
			if (t->slot[k]) {
				check(t->slot[k], t->len[k], (unsigned char)k);
				free(t->slot[k]);
			}
			t->len[k] = 16 + rnd(&w->seed) % 1009;
			t->slot[k] = xmalloc(t->len[k]);
			mark(t->slot[k], t->len[k], (unsigned char)k);
		}
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

static void larson(void)
{
	struct worker w[256];
	tables = calloc((size_t)threads, sizeof(*tables));
	pthread_barrier_init(&barrier, NULL, (unsigned int)threads);
	for (int i = 0; i < threads; i++)
		w[i] = (struct worker){ .id = i, .n = work(8000000) / threads, .seed = (uint64_t)i + 7 };
	run_threads(threads, larson_worker, w, sizeof(w[0]));
	for (int i = 0; i < threads; i++)
		for (int k = 0; k < LARSON_SLOTS; k++)
			free(tables[i].slot[k]);
	free(tables);
}

/* ------------------------------------------------------------------------
 * prodcons: pairs of threads, the producer allocates messages (64..512
 * bytes), the consumer reads and frees them: every free is remote.
 * ------------------------------------------------------------------------ */
enum { RING = 1024 };
struct ring {
	_Alignas(64) _Atomic size_t head;
	_Alignas(64) _Atomic size_t tail;
	_Alignas(64) void *slot[RING];
	long n;
};

/* Worker i of prodcons: even ones produce into, odd ones consume from,
 * ring i / 2. */
static struct ring *prodcons_ring[256];

static void *prodcons_worker(void *arg)
{
	struct ring **self = arg;
	struct ring *r = *self;
	bool producer = (self - prodcons_ring) % 2 == 0;
	uint64_t s = 3;
	for (long i = 0; i < r->n; i++) {
		if (producer) {
			size_t len = 64 + rnd(&s) % 449;
			unsigned char *m = xmalloc(len);
			mark(m, len, (unsigned char)len);
			m[1] = (unsigned char)(len >> 8);
			size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
			while (t - atomic_load_explicit(&r->head, memory_order_acquire) == RING)
				sched_yield();
			r->slot[t % RING] = m;
			atomic_store_explicit(&r->tail, t + 1, memory_order_release);
		} else {
			size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
			while (atomic_load_explicit(&r->tail, memory_order_acquire) == h)
				sched_yield();
			unsigned char *m = r->slot[h % RING];
			atomic_store_explicit(&r->head, h + 1, memory_order_release);
			size_t len = m[0] | (size_t)m[1] << 8;
			check(m, len, (unsigned char)len);
			free(m);
		}
	}
	return NULL;
}

static void prodcons(void)
{
	int pairs = threads / 2 > 0 ? threads / 2 : 1;
	struct ring *rings = aligned_alloc(64, sizeof(struct ring) * (size_t)pairs);
	for (int p = 0; p < pairs; p++) {
		memset(&rings[p], 0, sizeof(rings[p]));
		rings[p].n = work(3000000) / pairs;
		prodcons_ring[2 * p] = prodcons_ring[2 * p + 1] = &rings[p];
	}
	run_threads(2 * pairs, prodcons_worker, prodcons_ring, sizeof(prodcons_ring[0]));
	free(rings);
}

/* ------------------------------------------------------------------------
 * falseshare: Hoard's cache-scratch.  One thread allocates a small object
 * per thread, all at once; each thread frees its object and then, over
 * and over, allocates one of the same size and writes it.  An allocator
 * that hands a thread memory on the same cache line as another thread's
 * makes them fight for it.
 * ------------------------------------------------------------------------ */
static void *scratch_worker(void *arg)
{
	struct worker *w = arg;
	free(*(void **)w->pad);
	for (long i = 0; i < w->n; i++) {
		volatile unsigned char *p = xmalloc(24);
		for (int k = 0; k < 200; k++)
			p[k % 24] = (unsigned char)(p[k % 24] + 1);
		free((void *)p);
	}
	return NULL;
}

static void falseshare(void)
{
	struct worker w[256];
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .id = i, .n = work(300000) / threads };
		*(void **)w[i].pad = xmalloc(24);
	}
	run_threads(threads, scratch_worker, w, sizeof(w[0]));
}

/* ------------------------------------------------------------------------
 * threads: many threads (4 per --threads) with short-lived objects:
 * bursts of 8 allocations of 16..512 bytes freed at once.
 * ------------------------------------------------------------------------ */
static void *burst_worker(void *arg)
{
	struct worker *w = arg;
	unsigned char *b[8];
	for (long i = 0; i < w->n; i++) {
		for (int k = 0; k < 8; k++) {
			size_t n = 16 + rnd(&w->seed) % 497;
			b[k] = xmalloc(n);
			b[k][0] = (unsigned char)k;
		}
		for (int k = 0; k < 8; k++)
			free(b[k]);
	}
	return NULL;
}

static void many_threads(void)
{
	int n = 4 * threads;
	struct worker w[256];
	for (int i = 0; i < n; i++)
		w[i] = (struct worker){ .id = i, .n = work(2000000) / n, .seed = (uint64_t)i + 11 };
	run_threads(n, burst_worker, w, sizeof(w[0]));
}

/* ------------------------------------------------------------------------
 * large: blocks of 64 KiB .. 8 MiB, every page written, a window of 16
 * kept: the cost of getting large memory and of faulting it in.
 * ------------------------------------------------------------------------ */
static void large(void)
{
	enum { WINDOW = 16 };
	unsigned char *b[WINDOW] = { 0 };
	size_t len[WINDOW] = { 0 };
	uint64_t s = 5;
	for (long i = 0; i < work(6000); i++) {
		int k = (int)(i % WINDOW);
		if (b[k]) {
			check(b[k], len[k], (unsigned char)k);
			free(b[k]);
		}
		len[k] = (size_t)(64 << 10) << (rnd(&s) % 8);
		len[k] += rnd(&s) % len[k];
		b[k] = xmalloc(len[k]);
		for (size_t off = 0; off < len[k]; off += 4096)
			b[k][off] = 1;
		mark(b[k], len[k], (unsigned char)k);
	}
	for (int k = 0; k < WINDOW; k++)
		free(b[k]);
}

/* ------------------------------------------------------------------------
 * bigbuf: twenty buffers kept, a random one replaced again and again by a
 * new zeroed buffer of 5 to 25 MiB, every page of it written: frames,
 * compression windows, sort buffers.  The cost of getting large memory
 * back (reused, or mapped and faulted in anew) and of clearing it.
 * ------------------------------------------------------------------------ */
static void bigbuf(void)
{
	enum { LIVE = 20 };
	unsigned char *b[LIVE];
	size_t len[LIVE];
	uint64_t s = 9;
	for (long i = -LIVE; i < work(300); i++) {
		int k = i < 0 ? (int)(i + LIVE) : (int)(rnd(&s) % LIVE);
		if (i >= 0) {
			check(b[k], len[k], (unsigned char)k);
			free(b[k]);
		}
		len[k] = (5u << 20) + rnd(&s) % (20u << 20);
		b[k] = calloc(1, len[k]);
		if (!b[k]) {
			fprintf(stderr, "malloc-suite: calloc(%zu) failed\n", len[k]);
			exit(1);
		}
		for (size_t off = 0; off < len[k]; off += 4096) {
			if (b[k][off]) {
				fprintf(stderr, "malloc-suite: calloc'ed memory not zero\n");
				exit(1);
			}
			b[k][off] = 1;
		}
		mark(b[k], len[k], (unsigned char)k);
	}
	for (int k = 0; k < LIVE; k++)
		free(b[k]);
}

/* ------------------------------------------------------------------------
 * pairs: one thread, malloc and free at once of 16, 32, 64, 128 and 256
 * bytes, 10 million of each (times scale): the cost of the fast paths.
 * ns per pair = seconds / (50e6 * scale) * 1e9.
 * ------------------------------------------------------------------------ */
static void pairs(void)
{
	for (size_t size = 16; size <= 256; size *= 2) {
		for (long i = 0; i < work(10000000); i++) {
			void *p = xmalloc(size);
			__asm__ volatile("" : : "r"(p) : "memory");     /* the pair is not elided */
			free(p);
		}
	}
}

/* ------------------------------------------------------------------------
 * The memory benchmarks: long enough for an allocator's background give-
 * back to act (several of zonealloc's purge rounds, jemalloc's decay
 * steps), read by their mean RSS, what a memory cgroup holds a process to.
 * ------------------------------------------------------------------------ */
/* A block filled with its tag still holds it: a byte per page, the ends. */
static void verify(const unsigned char *p, size_t n, unsigned char tag)
{
	for (size_t off = 0; off < n; off += 4096)
		if (p[off] != tag) {
			fprintf(stderr, "malloc-suite: block %p (%zu bytes) was overwritten\n",
				(const void *)p, n);
			exit(1);
		}
	check(p, n, tag);
}

/* A request's size: 70% 16..528 bytes, the rest 16 B .. 2 MiB spread evenly
 * over the powers of two (a server's headers, bodies and buffers). */
static size_t mixed_size(uint64_t *s)
{
	if (rnd(s) % 10 < 7)
		return 16 + rnd(s) % 513;
	size_t base = (size_t)16 << (rnd(s) % 17);
	return base + rnd(s) % base;
}

/* A working set of blocks up to `live` bytes, replaced at random for `ops`
 * operations, each block filled and verified before it is freed. */
struct working_set {
	unsigned char **slot;
	size_t *len;
	unsigned int slots;
	size_t live, bytes;
	uint64_t seed;
};

/* Slot k's block, if any, checked and freed. */
static void drop_slot(struct working_set *w, unsigned int k)
{
	if (!w->slot[k])
		return;
	verify(w->slot[k], w->len[k], (unsigned char)k);
	free(w->slot[k]);
	w->slot[k] = NULL;
	w->bytes -= w->len[k];
}

static void churn_set(struct working_set *w, long ops)
{
	for (long i = 0; i < ops; i++) {
		unsigned int k = (unsigned int)(rnd(&w->seed) % w->slots);
		drop_slot(w, k);
		size_t n = mixed_size(&w->seed);
		if (w->bytes + n > w->live)
			continue;
		w->slot[k] = xmalloc(n);
		w->len[k] = n;
		w->bytes += n;
		memset(w->slot[k], (unsigned char)k, n);
	}
}

/* Drops blocks at random until the set holds at most `live` bytes. */
static void shrink_set(struct working_set *w, size_t live)
{
	w->live = live;
	for (unsigned int k = 0; w->bytes > live; k = (k + 7919) % w->slots)
		drop_slot(w, k);
}

/* churn_set for `seconds` of wall time. */
static void churn_for(struct working_set *w, double seconds)
{
	for (double t0 = now(); now() - t0 < seconds;)
		churn_set(w, 2000);
}

static struct working_set set_new(unsigned int slots, size_t live, uint64_t seed)
{
	return (struct working_set){ .slot = calloc(slots, sizeof(unsigned char *)),
				     .len = calloc(slots, sizeof(size_t)), .slots = slots,
				     .live = live, .seed = seed };
}

static void set_free(struct working_set *w)
{
	shrink_set(w, 0);
	free(w->slot);
	free(w->len);
}

/* soak: a live set of 30 MiB (over the threads) churned for a few seconds,
 * as a long-running service's heap is: what its RSS settles at. */
static void *soak_worker(void *arg)
{
	struct worker *w = arg;
	struct working_set set = set_new(1 << 15, (30u << 20) / (unsigned int)threads, w->seed);
	churn_set(&set, w->n);
	set_free(&set);
	return NULL;
}

static void soak(void)
{
	struct worker w[64];
	for (int i = 0; i < threads; i++)
		w[i] = (struct worker){ .id = i, .n = work(12000000) / threads, .seed = (uint64_t)i + 21 };
	run_threads(threads, soak_worker, w, sizeof(w[0]));
}

/* The seconds a benchmark reports itself, instead of its wall time (-1:
 * none), and the RSS it reports before and after (settle's, phases',
 * pool's; -1: none). */
static double own_seconds = -1;
static long own_before_kib = -1, own_after_kib = -1;

static long pages_kib(long pages)
{
	return pages < 0 ? -1 : pages * (sysconf(_SC_PAGESIZE) >> 10);
}

/* This process's RSS, read with system calls only (no malloc). */
static long own_rss_kib(void)
{
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	long pages = fd >= 0 ? rss_pages(fd) : -1;
	if (fd >= 0)
		close(fd);
	return pages_kib(pages);
}

/* phases: a server whose load comes and goes: a 4 MiB working set for a
 * quiet phase (its RSS then is "before"), then twice a 64 MiB one for a
 * busy phase and 4 MiB again for a quiet phase three times as long; its
 * RSS at the end of the last is "after". */
static void phases(void)
{
	struct working_set set = set_new(1 << 16, 4u << 20, 31);
	churn_for(&set, 0.5 * scale);
	own_before_kib = own_rss_kib();
	for (int round = 0; round < 2; round++) {
		set.live = 64u << 20;
		churn_set(&set, work(1500000));
		shrink_set(&set, 4u << 20);
		churn_for(&set, 1.5 * scale);
	}
	own_after_kib = own_rss_kib();
	set_free(&set);
}

/* pool: a thread pool of 4 threads, each with a working set of 1 MiB (its
 * RSS then is "before"), that grows to 64 and shrinks to 4, which go on
 * working for 1.5 s; twice.  What the threads that ended leave behind:
 * the RSS at the end, while the 4 still work, is "after". */
static _Atomic long pool_rss_kib;

static void *pool_worker(void *arg)
{
	struct worker *w = arg;
	struct working_set set = set_new(1024, 1u << 20, w->seed);
	churn_set(&set, w->n);
	churn_for(&set, w->seconds);
	if (w->id == 0 && w->seconds > 0)
		pool_rss_kib = own_rss_kib();   /* the first thread, as its phase ends */
	set_free(&set);
	return NULL;
}

/* The pool's 4 threads working for `seconds`; the RSS as they end. */
static long pool_of_four(struct worker *w, double seconds)
{
	for (int i = 0; i < 4; i++)
		w[i] = (struct worker){ .id = i, .seconds = seconds, .seed = w[i].seed };
	run_threads(4, pool_worker, w, sizeof(w[0]));
	return pool_rss_kib;
}

static void pool(void)
{
	struct worker w[64] = { 0 };
	for (int i = 0; i < 4; i++)
		w[i].seed = (uint64_t)(200 + i);
	own_before_kib = pool_of_four(w, 0.5 * scale);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 64; i++)
			w[i] = (struct worker){ .id = i, .n = work(20000), .seed = (uint64_t)(round * 64 + i) };
		run_threads(64, pool_worker, w, sizeof(w[0]));
		own_after_kib = pool_of_four(w, 1.5 * scale);
	}
}


/*
 * settle: a server that goes quiet after a burst.  Its state, a 4 MiB
 * working set, is churned (its RSS then is the baseline); a burst of
 * requests builds and churns 64 MiB of other blocks while the state keeps
 * changing a little, and frees them all -- and then the program makes no
 * call at all.  Its seconds are the time from then until its RSS is within
 * 10% of the baseline, polled every 5 ms, at most SETTLE_MAX_S (what it
 * reports when the memory does not come back).
 */
#define SETTLE_MAX_S 3.0
static void settle(void)
{
	/* The RSS read with system calls only: a quiet program must not call
	 * malloc to find out (fopen would), a call may be what makes an
	 * allocator give memory back. */
	int statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	struct working_set state = set_new(1 << 14, 4u << 20, 37);
	struct working_set burst = set_new(1 << 16, 64u << 20, 41);
	churn_set(&state, work(200000));
	long baseline = rss_pages(statm);
	for (long done = 0; done < work(1000000); done += 1000) {
		churn_set(&burst, 1000);
		churn_set(&state, 10);
	}
	set_free(&burst);
	double t0 = now(), t;
	const struct timespec tick = { 0, 5000000 };
	while ((t = now() - t0) < SETTLE_MAX_S && rss_pages(statm) * 10 > baseline * 11)
		nanosleep(&tick, NULL);
	own_seconds = t < SETTLE_MAX_S ? t : SETTLE_MAX_S;
	own_before_kib = pages_kib(baseline);
	own_after_kib = pages_kib(rss_pages(statm));
	close(statm);
	set_free(&state);
}

static const struct {
	const char *name;
	void (*fn)(void);
} benchmarks[] = {
	{ "pairs", pairs },
	{ "churn", churn },
	{ "sizes", sizes },
	{ "loops", loops },
	{ "realloc", realloc_growth },
	{ "larson", larson },
	{ "prodcons", prodcons },
	{ "falseshare", falseshare },
	{ "threads", many_threads },
	{ "large", large },
	{ "bigbuf", bigbuf },
	{ "soak", soak },
	{ "phases", phases },
	{ "pool", pool },
	{ "settle", settle },
};

/* The peak RSS of this process, in KiB: VmHWM belongs to the address space
 * exec made (a parent's getrusage would also count the pages of its own
 * image the child had between fork and exec). */
static long peak_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/*
 * exec: runs a program (an interpreter and its script) as a child and
 * reports its wall time, peak RSS and system time in the same form, and
 * its mean RSS, which only its parent can sample.  The
 * child is forked from this small process, not from zabench, so that its
 * peak RSS is the program's own.
 */
static int run_program(char **argv)
{
	double t0 = now();
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	double mean_kib;
	if (pid < 0 || wait_sampling_rss(pid, &status, &ru, &mean_kib) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "malloc-suite: %s failed\n", argv[0]);
		return 1;
	}
	printf("%.6f %ld %.6f %.0f\n", now() - t0, ru.ru_maxrss,
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6, mean_kib);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "exec"))
		return run_program(argv + 2);
	if (argc != 4) {
		fprintf(stderr, "usage: malloc-suite <benchmark> <threads> <scale>\n");
		return 2;
	}
	threads = atoi(argv[2]);
	scale = atof(argv[3]);
	if (threads < 1 || threads > 64 || scale <= 0) {
		fprintf(stderr, "malloc-suite: threads must be 1..64, scale > 0\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(benchmarks) / sizeof(benchmarks[0]); i++) {
		if (strcmp(argv[1], benchmarks[i].name))
			continue;
		double t0 = now();
		benchmarks[i].fn();
		double t = own_seconds >= 0 ? own_seconds : now() - t0;
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		printf("%.6f %ld %.6f", t, peak_rss_kib(),
		       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6);
		if (own_before_kib >= 0)
			printf(" %ld %ld", own_before_kib, own_after_kib);
		printf("\n");
		return 0;
	}
	fprintf(stderr, "malloc-suite: unknown benchmark '%s'\n", argv[1]);
	return 2;
}
