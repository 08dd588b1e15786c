/*
 * The malloc front end through its za_ names (the same code that
 * libzonealloc-malloc.so exports as malloc etc.): sizes, alignment and
 * contents across every path (classes, page blocks, mappings), glibc's
 * error contract, realloc, the aligned functions, sized frees, threads
 * with cross-thread frees (no block handed out twice), thread exit giving
 * back its cache, fork while other threads allocate, and memory going back
 * to the OS (malloc_trim, and the purge worker after purge_delay_ms).
 */
#include "test.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static za_mm_t *mm;
/* The purge worker's delay: its rounds (half of it) are far apart from the
 * swings of test_barn_follows_swing, whose barn would otherwise decay
 * within one; under TSan a swing takes some 15 times longer. */
#ifdef ZA_TSAN
#define PURGE_DELAY_MS 1500
#else
#define PURGE_DELAY_MS 100
#endif
/* The smallest request the malloc maps (mapped_min). */
static size_t map_min;

/* Beyond its largest run, a quarter of a section (one piece of address
 * space) but at least the largest block (16 MiB), the malloc maps. */
static size_t mapped_min(void)
{
	const char *s = strstr(za_mm_config_string(mm), "section_size=");
	CHECK(s);
	char *unit;
	size_t section = strtoull(s + strlen("section_size="), &unit, 10);
	section <<= *unit == 'G' ? 30 : *unit == 'M' ? 20 : *unit == 'K' ? 10 : 0;
	return (section / 4 > (16 << 20) ? section / 4 : 16 << 20) + 1;
}

static void fill(unsigned char *p, size_t n, unsigned int tag)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(tag + i * 7);
}

static void check_fill(const unsigned char *p, size_t n, unsigned int tag)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(tag + i * 7)) {
			fprintf(stderr, "block %p (%zu bytes, tag %u) changed at byte %zu\n",
				(void *)p, n, tag, i);
			exit(1);
		}
}

/* Every size class edge, page blocks, a mapping: aligned to 16, usable
 * size at least the request, contents kept while other blocks come and go. */
static void test_sizes(void)
{
	static const size_t sizes[] = {
		0, 1, 15, 16, 17, 100, 128, 129, 160, 161, 256, 257, 1000, 1024, 1025, 4096,
		5000, 12288, 16383, 16384, 16385, 32768, 100000, 1 << 20, (4 << 20) - 1, 4 << 20,
		(16 << 20) - 1, 16 << 20, (16 << 20) + 1, 40 << 20,
	};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	void *p[N];
	for (int i = 0; i < N; i++) {
		CHECK((p[i] = za_malloc(sizes[i])));
		CHECK_EQ((uintptr_t)p[i] % 16, 0);
		CHECK(za_malloc_usable_size(p[i]) >= sizes[i]);
		fill(p[i], sizes[i], (unsigned int)i);
	}
	for (int i = 0; i < N; i++)
		for (int j = 0; j < i; j++)
			CHECK(p[i] != p[j]);
	for (int i = 0; i < N; i++) {
		check_fill(p[i], sizes[i], (unsigned int)i);
		za_free(p[i]);
	}
	/* Usable sizes: a class, an order-3 block up to 32 KiB, whole pages
	 * of a run beyond (not a power of two of them), also beyond the
	 * largest block, and whole pages of a mapping. */
	void *a = za_malloc(100), *b = za_malloc(20000), *c = za_malloc((20 << 20) + 5);
	void *m = za_malloc(map_min + (4 << 20) + 5);
	void *d = za_malloc(100000);
	CHECK_EQ(za_malloc_usable_size(a), 112);
	CHECK_EQ(za_malloc_usable_size(b), 32768);
	CHECK_EQ(za_malloc_usable_size(d), 102400);
	za_free(d);
	CHECK_EQ(za_malloc_usable_size(c), (20 << 20) + 4096);
	CHECK_EQ(za_malloc_usable_size(m), map_min - 1 + (4 << 20) + 4096);
	CHECK_EQ(za_malloc_usable_size(NULL), 0);
	za_free(m);
	za_free(a);
	za_free(b);
	za_free(c);
	za_free(NULL);
}

/* glibc's contract for the edge cases. */
static void test_contract(void)
{
	/* malloc(0): distinct pointers to nothing (a read or write through
	 * one is reported: test_malloc_misuse), which realloc grows and every
	 * free takes back. */
	void *z1 = za_malloc(0), *z2 = za_malloc(0), *z3 = za_aligned_alloc(4096, 0);
	CHECK(z1 && z2 && z3 && z1 != z2 && z2 != z3 && !((uintptr_t)z3 & 4095));
	CHECK_EQ(za_malloc_usable_size(z1), 0);
	za_free(z1);
	za_free_sized(z2, 0);
	za_free_aligned_sized(z3, 4096, 0);
	char *g = za_realloc(za_malloc(0), 100);
	CHECK(g && za_malloc_usable_size(g) >= 100);
	memset(g, 1, 100);
	za_free(g);

	errno = 0;
	CHECK(za_calloc(SIZE_MAX / 2, 3) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(za_malloc((size_t)PTRDIFF_MAX + 1) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(za_malloc(SIZE_MAX) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(za_reallocarray(NULL, SIZE_MAX / 4, 8) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(za_malloc(1ULL << 46) == NULL);           /* more than any machine */
	CHECK_EQ(errno, ENOMEM);

	unsigned char *c = za_calloc(1000, 33);
	for (int i = 0; i < 33000; i++)
		CHECK_EQ(c[i], 0);
	memset(c, 0xff, 33000);
	za_free(c);
	c = za_calloc(1, 33000);                        /* likely the same block, reused */
	for (int i = 0; i < 33000; i++)
		CHECK_EQ(c[i], 0);
	za_free(c);
	c = za_calloc(4, 8);
	for (int i = 0; i < 32; i++)
		CHECK_EQ(c[i], 0);
	za_free(c);
}

static void test_realloc(void)
{
	unsigned char *p = za_realloc(NULL, 10);
	CHECK(p);
	fill(p, 10, 3);
	/* Grow through a class, page blocks and a mapping, and back. */
	static const size_t steps[] = { 24, 200, 5000, 17000, 300000, 6 << 20, 20 << 20,
					40 << 20, 100000, 700, 10 };
	size_t have = 10;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t n = steps[i], keep = n < have ? n : have;
		p = za_realloc(p, n);
		CHECK(p);
		check_fill(p, keep, 3);
		fill(p, n, 3);
		have = n;
	}
	CHECK(za_realloc(p, 0) == NULL);                /* freed, as glibc does */
	/* Shrinking a little stays in place; a failing realloc keeps the block. */
	p = za_malloc(1000);
	CHECK(za_realloc(p, 900) == p);
	errno = 0;
	CHECK(za_realloc(p, SIZE_MAX - 100) == NULL);
	CHECK_EQ(errno, ENOMEM);
	za_free(p);

	/* A block between two others, grown, takes the pages freed before it
	 * rather than new memory, and its contents move with it.  After
	 * malloc_trim, the three come one after another from fresh memory
	 * (with the default configuration: skipped if not); 2 MiB blocks go
	 * back to the page allocator when freed. */
	enum { MIB = 1 << 20 };
	za_malloc_trim(0);
	unsigned char *a = za_malloc(2 * MIB), *b = za_malloc(2 * MIB), *c = za_malloc(2 * MIB);
	CHECK(a && b && c);
	fill(b, 2 * MIB, 5);
	za_free(a);
	za_drain_all_pages(mm);
	unsigned char *g = za_realloc(b, 3 * MIB);
	CHECK(g);
	if (b == a + 2 * MIB && c == b + 2 * MIB)
		CHECK(g >= a && g < b);
	check_fill(g, 2 * MIB, 5);
	CHECK_EQ(za_malloc_usable_size(g), 3 * MIB + 3 * MIB / 4);      /* with room */
	CHECK(za_verify(mm) == 0);
	za_free(g);
	za_free(c);
}

static void test_aligned(void)
{
	for (size_t align = 1; align <= (32 << 20); align <<= 1) {
		static const size_t sizes[] = { 1, 40, 100, 3000, 20000, 1 << 20, 5 << 20, 20 << 20 };
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			void *p = za_memalign(align, sizes[i]), *q = NULL;
			CHECK(p);
			CHECK_EQ((uintptr_t)p % align, 0);
			CHECK(za_malloc_usable_size(p) >= sizes[i]);
			memset(p, 1, sizes[i]);
			CHECK_EQ(za_posix_memalign(&q, align < sizeof(void *) ? sizeof(void *) : align,
						   sizes[i]), 0);
			CHECK_EQ((uintptr_t)q % align, 0);
			za_free_aligned_sized(p, align, sizes[i]);
			za_free(q);
		}
	}
	void *p = (void *)1;
	CHECK_EQ(za_posix_memalign(&p, 24, 10), EINVAL);
	CHECK_EQ(za_posix_memalign(&p, 4, 10), EINVAL);       /* not a multiple of a pointer */
	CHECK(p == (void *)1);                                  /* untouched on error */
	CHECK_EQ(za_posix_memalign(&p, 64, SIZE_MAX / 2), ENOMEM);
	/* As glibc 2.36: an alignment that is not a power of two rounds up. */
	void *m48 = za_memalign(48, 10), *a0 = za_aligned_alloc(0, 10);
	CHECK(m48 && a0);
	CHECK_EQ((uintptr_t)m48 % 64, 0);
	CHECK_EQ((uintptr_t)a0 % 16, 0);
	za_free(m48);
	za_free(a0);
	errno = 0;
	CHECK(za_memalign(SIZE_MAX / 2 + 2, 10) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* A block realloc made a power of two of pages in place may not be
	 * aligned to its size: an aligned request must not be given it. */
	void *held[256];
	int n = 0;
	/* 17 pages: runs follow each other, unaligned, once the aligned holes
	 * that freed slabs may have left (an idle purge drains the caches)
	 * are used up. */
	while (n < 256 && !((uintptr_t)(held[n] = za_malloc(68 << 10)) & ((64 << 10) - 1)))
		n++;
	CHECK(n < 256);
	CHECK(za_realloc(held[n], 64 << 10) == held[n]);       /* shrunk in place */
	za_free(held[n]);               /* kept by the thread, 16 pages, unaligned */
	void *al = za_memalign(64 << 10, 64 << 10);
	CHECK(al);
	CHECK_EQ((uintptr_t)al % (64 << 10), 0);
	za_free_aligned_sized(al, 64 << 10, 64 << 10);
	while (n--)
		za_free(held[n]);
	void *v = za_valloc(10), *pv = za_pvalloc(5000);
	CHECK_EQ((uintptr_t)v % 4096, 0);
	CHECK_EQ((uintptr_t)pv % 4096, 0);
	CHECK(za_malloc_usable_size(pv) >= 8192);
	za_free(v);
	za_free(pv);
}

/* Sized frees that match are accepted on every path, also with the size
 * last given to realloc (C23), whether it moved the block or not. */
static void test_sized_free(void)
{
	static const size_t resized[][2] = {
		{ 100, 60 }, { 100, 110 }, { 20000, 9000 }, { 20000, 17000 }, { 20000, 70000 },
		{ 64 << 20, 40 << 20 }, { 40 << 20, 64 << 20 }, { 64 << 20, 100 },
	};
	for (size_t i = 0; i < sizeof(resized) / sizeof(resized[0]); i++) {
		void *p = za_realloc(za_malloc(resized[i][0]), resized[i][1]);
		CHECK(p);
		za_free_sized(p, resized[i][1]);
	}
	static const size_t sizes[] = { 1, 16, 100, 1000, 16384, 16385, 70000, 5 << 20, 20 << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		za_free_sized(za_malloc(sizes[i]), sizes[i]);
		za_free_aligned_sized(za_aligned_alloc(64, sizes[i]), 64, sizes[i]);
	}
	za_free_sized(NULL, 10);
}

/* ------------------------------------------------------------------------
 * Threads: pairs pass blocks through a ring; the receiver checks the
 * sender's pattern and frees (remote frees).  An overlap between two live
 * blocks would break one of the patterns.
 * ------------------------------------------------------------------------ */
#define RING 256
struct ring {
	_Atomic(void *) slot[RING];
	_Atomic size_t head, tail;
};

struct pair {
	struct ring ring;
	int id;
	long count;
};

static size_t pick_size(unsigned long long *rnd)
{
	unsigned long long r = test_rand(rnd);
	if (r % 100 < 90)
		return 1 + r % 512;
	if (r % 100 < 99)
		return 1 + r % 20000;
	return 1 + r % (300 << 10);
}

static void *producer(void *arg)
{
	struct pair *pr = arg;
	unsigned long long rnd = 0x1234567ULL + (unsigned long long)pr->id;
	for (long i = 0; i < pr->count; i++) {
		size_t n = pick_size(&rnd);
		unsigned char *p = za_malloc(n + sizeof(size_t));
		CHECK(p);
		memcpy(p, &n, sizeof(n));
		fill(p + sizeof(n), n, (unsigned int)(n + (size_t)pr->id));
		/* Some blocks stay with the sender: local frees interleave. */
		if (i % 3 == 0) {
			check_fill(p + sizeof(n), n, (unsigned int)(n + (size_t)pr->id));
			za_free(p);
			continue;
		}
		size_t t = atomic_load(&pr->ring.tail);
		while (t - atomic_load(&pr->ring.head) == RING)
			sched_yield();
		atomic_store(&pr->ring.slot[t % RING], p);
		atomic_store(&pr->ring.tail, t + 1);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct pair *pr = arg;
	long expect = pr->count - (pr->count + 2) / 3;
	for (long got = 0; got < expect; got++) {
		size_t h = atomic_load(&pr->ring.head);
		while (atomic_load(&pr->ring.tail) == h)
			sched_yield();
		unsigned char *p = atomic_load(&pr->ring.slot[h % RING]);
		atomic_store(&pr->ring.head, h + 1);
		size_t n;
		memcpy(&n, p, sizeof(n));
		check_fill(p + sizeof(n), n, (unsigned int)(n + (size_t)pr->id));
		za_free(p);
	}
	return NULL;
}

static long long pages_in_use(void)
{
	za_malloc_trim(0);
	return za_stat(mm, "nr_allocated_pages");
}

static void test_threads(void)
{
	enum { PAIRS = 3 };
	static struct pair pairs[PAIRS];
	pthread_t t[2 * PAIRS];
	long long before = pages_in_use();
	for (int i = 0; i < PAIRS; i++) {
		pairs[i] = (struct pair){ .id = i, .count = 60000 };
		CHECK(pthread_create(&t[2 * i], NULL, producer, &pairs[i]) == 0);
		CHECK(pthread_create(&t[2 * i + 1], NULL, consumer, &pairs[i]) == 0);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		pthread_join(t[i], NULL);
	/* Every exited thread gave its sheaves back: nothing stays allocated. */
	CHECK_EQ(pages_in_use(), before);
	CHECK(za_verify(mm) == 0);
}

/* ------------------------------------------------------------------------
 * Cache-scratch: a thread's first free of a class is of another thread's
 * object (a remote free into a sheaf it does not have yet); then it
 * allocates and frees its own.  Every block keeps its contents.
 * ------------------------------------------------------------------------ */
static void *scratcher(void *arg)
{
	unsigned char **given = arg;
	for (int i = 0; i < 64; i++)
		za_free(given[i]);
	unsigned char *mine[200];
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 200; i++) {
			CHECK((mine[i] = za_malloc(24)));
			fill(mine[i], 24, (unsigned int)i);
		}
		for (int i = 0; i < 200; i++) {
			check_fill(mine[i], 24, (unsigned int)i);
			za_free(mine[i]);
		}
	}
	return NULL;
}

static void test_remote_first(void)
{
	static unsigned char *given[4][64];
	pthread_t t[4];
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 64; i++)
			CHECK((given[k][i] = za_malloc(24)));
	for (int k = 0; k < 4; k++)
		CHECK(pthread_create(&t[k], NULL, scratcher, given[k]) == 0);
	for (int k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	CHECK(za_verify(mm) == 0);
}

/* ------------------------------------------------------------------------
 * fork while other threads allocate: the child must not find a lock held.
 * ------------------------------------------------------------------------ */
static atomic_bool stop;

static void *churn(void *arg)
{
	unsigned long long rnd = (uintptr_t)arg;
	void *keep[64] = { 0 };
	while (!atomic_load(&stop)) {
		int i = (int)(test_rand(&rnd) % 64);
		za_free(keep[i]);
		keep[i] = za_malloc(pick_size(&rnd));
	}
	for (int i = 0; i < 64; i++)
		za_free(keep[i]);
	return NULL;
}

static void test_fork(void)
{
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		CHECK(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)) == 0);
	for (int k = 0; k < 30; k++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			alarm(20);              /* a deadlock ends the child */
			unsigned long long rnd = 99;
			for (int i = 0; i < 2000; i++)
				za_free(za_malloc(pick_size(&rnd)));
			void *big = za_malloc(1 << 20);
			za_free(big);
			_exit(big ? 0 : 1);
		}
		int status;
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

/* ------------------------------------------------------------------------
 * Memory back to the OS
 * ------------------------------------------------------------------------ */
/* The blocks of a peak: 32 MiB in 64 KiB blocks, all written. */
static void peak(void **blocks, int n)
{
	for (int i = 0; i < n; i++) {
		CHECK((blocks[i] = za_malloc(64 << 10)));
		memset(blocks[i], 7, 64 << 10);
	}
	for (int i = 0; i < n; i++)
		za_free(blocks[i]);
}

static long resident_of(void **blocks, int n)
{
	long r = 0;
	for (int i = 0; i < n; i++)
		r += resident_pages(blocks[i], 64 << 10);
	return r;
}

/* Over every CPU's page list set in the zoneinfo report: the sum of one
 * field ("high:", "high_min:", ...). */
static long pageset_sum(const char *field)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f && za_report(mm, "zoneinfo", f) == 0);
	fclose(f);
	long sum = 0;
	for (const char *p = text; (p = strstr(p, field)); p += strlen(field))
		sum += strtol(p + strlen(field), NULL, 10);
	free(text);
	return sum;
}

/*
 * The page lists are tuned (pcp_high_auto), each CPU's high between at
 * most 2 and 16 MiB (512 and 4096 pages; less where the kernel's range is
 * less): freeing a burst of order-3 blocks raises it, and the purge
 * worker's rounds, the vmstat ticks, lower it again.
 */
static void test_page_lists_tuned(void)
{
	const char *config = za_mm_config_string(mm);
	if (!strstr(config, "pcp_high_auto=1") || !strstr(config, "pcp_high_max=16M") ||
	    !strstr(config, "percpu_pagelist_high_fraction=0"))
		return;                         /* the caller's ZA_CONFIG changed it */
	int cpus = za_nr_cpus(mm);
	long floor = pageset_sum("high_min: ");
	CHECK(floor > 0 && floor <= 512L * cpus);
	CHECK(pageset_sum("high_max: ") <= 4096L * cpus);
	enum { N = 1500 };
	static void *v[N];
	for (int i = 0; i < N; i++)
		CHECK((v[i] = za_malloc(20000)));
	for (int i = 0; i < N; i++)
		za_free(v[i]);
	long raised = pageset_sum("high: ");
	CHECK(raised > floor && raised <= pageset_sum("high_max: "));
	long high = raised;
	for (int ms = 0; ms < 10000 && high >= raised; ms += 10) {
		usleep(10000);
		high = pageset_sum("high: ");
	}
	CHECK(high < raised);
	CHECK(pageset_sum("count: ") <= high);
}

static void test_trim_and_purge(void)
{
	enum { N = 512 };
	static void *blocks[N];
	peak(blocks, N);
	CHECK(resident_of(blocks, N) == N * 16);
	long long purged = za_stat(mm, "pgpurge");
	CHECK_EQ(za_malloc_trim(0), 1);
	CHECK(za_stat(mm, "pgpurge") - purged >= N * 16);
	CHECK_EQ(resident_of(blocks, N), 0);

	/* The purge worker does the same on its own once they have been free
	 * for purge_delay_ms (PURGE_DELAY_MS), all but the last 8 blocks,
	 * which this thread keeps for its next allocations (2 MiB at most). */
	peak(blocks, N);
	CHECK(resident_of(blocks, N) == N * 16);
	for (int tries = 0; tries < 600 && resident_of(blocks, N) > 8 * 16; tries++)
		usleep(50000);
	CHECK_EQ(resident_of(blocks, N), 8 * 16);
	CHECK_EQ(resident_of(blocks + N - 8, 8), 8 * 16);
}

/*
 * A busy process gives back too: after a peak of 32 MiB of blocks, a thread
 * that keeps allocating and freeing 3 MiB (beyond what it keeps of its
 * own) makes every round busy, and the rounds give back what the peak left
 * but for the recent swing and a quarter of what is in use.
 */
static void test_busy_gives_back(void)
{
	if (!strstr(za_mm_config_string(mm), "purge_excess=1"))
		return;                         /* the caller's ZA_CONFIG changed it */
	enum { N = 512 };
	static void *blocks[N];
	peak(blocks, N);
	for (int tries = 0; tries < 6000 && resident_of(blocks, N) > N * 16 / 4; tries++) {
		char *p = za_malloc(3 << 20);
		CHECK(p);
		memset(p, 1, 3 << 20);
		za_free(p);
		usleep(1000);
	}
	CHECK(resident_of(blocks, N) <= N * 16 / 4);
}

/*
 * Mappings (beyond the arena's largest run) are kept when freed and
 * reused: a freed mapping of B + 20 MiB serves a request of B + 18 MiB
 * with its own pages (what was written there is still there: no new
 * mapping, no page faulted in anew), its 2 MiB tail stays kept and merges
 * back on the next free; a larger request grows a kept mapping (its pages
 * move, the growth is zero); calloc clears what it reuses; and an idle
 * process gives them all back (purge_delay_ms is PURGE_DELAY_MS here).
 */
static bool all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += 4096)
		if (p[i] != v || p[i + 4095] != v)
			return false;
	return true;
}

static void test_large_reuse_and_decay(void)
{
	enum { MIB = 1 << 20 };
	const size_t base = map_min - 1;
	za_malloc_trim(0);                      /* nothing kept from before */
	unsigned char *p = za_malloc(base + 20 * MIB);
	CHECK(p);
	memset(p, 0x5a, base + 20 * MIB);
	za_free(p);
	unsigned char *q = za_malloc(base + 18 * MIB);
	CHECK(q == p && all_bytes(q, base + 18 * MIB, 0x5a));
	CHECK_EQ(za_malloc_usable_size(q), base + 18 * MIB);
	za_free_sized(q, base + 18 * MIB);
	q = za_malloc(base + 20 * MIB);         /* merged with the tail again */
	CHECK(q == p && all_bytes(q, base + 20 * MIB, 0x5a));
	za_free(q);
	unsigned char *g = za_malloc(base + 30 * MIB);  /* grown */
	CHECK(g && all_bytes(g, base + 20 * MIB, 0x5a) &&
	      all_bytes(g + base + 20 * MIB, 10 * MIB, 0));
	za_free(g);
	unsigned char *z = za_calloc(1, base + 25 * MIB);
	CHECK(z && all_bytes(z, base + 25 * MIB, 0));
	memset(z, 1, base + 25 * MIB);
	unsigned char *r = za_realloc(z, base + 40 * MIB);
	CHECK(r && all_bytes(r, base + 25 * MIB, 1));
	za_free(r);

	unsigned char vec[1];
	int tries = 0;
	while (mincore(r, 4096, vec) == 0 && tries++ < 200)
		usleep(50000);
	CHECK(mincore(r, 4096, vec) == -1 && errno == ENOMEM);
}

/*
 * Runs beyond the largest block (16 MiB) are the arena's, up to a quarter
 * of a section: no mapping is made for them; usable sizes are whole
 * pages; after malloc_trim has given back every free page, a freed run's
 * memory, the only memory used before, is what the next such run takes
 * (in part at least: where exactly is test_buddy's test_giant_runs), as
 * it was left, and calloc clears it; a run grows in place into the free
 * pages after it, past the largest block, or moves, and keeps its
 * contents.
 */
static bool overlaps(const unsigned char *a, size_t a_len, const unsigned char *b, size_t b_len)
{
	return a < b + b_len && b < a + a_len;
}

static void test_giant_runs(void)
{
	enum { MIB = 1 << 20 };
	if (map_min <= (30 << 20) + 1)
		return;                         /* sections too small: these are mapped */
	za_malloc_trim(0);
	size_t mapped = za_mallinfo2().hblks;
	unsigned char *p = za_malloc(20 * MIB);
	CHECK(p);
	memset(p, 0x3c, 20 * MIB);
	za_free(p);
	unsigned char *q = za_malloc(18 * MIB + 5);
	CHECK(q && overlaps(q, 18 * MIB, p, 20 * MIB));
	unsigned char *kept = q > p ? q : p;
	CHECK(kept[0] == 0x3c);
	CHECK_EQ(za_malloc_usable_size(q), 18 * MIB + 4096);
	za_free_sized(q, 18 * MIB + 5);
	unsigned char *z = za_calloc(1, 19 * MIB);
	CHECK(z && overlaps(z, 19 * MIB, p, 20 * MIB) && all_bytes(z, 19 * MIB, 0));
	memset(z, 7, 19 * MIB);
	unsigned char *r = za_realloc(z, 30 * MIB);
	CHECK(r && all_bytes(r, 19 * MIB, 7));
	CHECK_EQ(za_mallinfo2().hblks, mapped);
	CHECK(za_verify(mm) == 0);
	za_free(r);
}

/*
 * A thread that stops calling gives its cache back at its next call: the
 * purge worker (a round every purge_delay_ms/2, 50 ms here) finds its
 * counters still for two rounds, and the thread's next malloc -- of a
 * small size or of a page block -- empties its sheaves into the slab
 * caches, whose emptied slabs go back to the page allocator.  Without
 * that, the call is a hit or a new block and no slab moves.  The calls'
 * blocks are kept until the end: a free would wake the thread itself.
 */
enum { IDLE_OBJECTS = 2048, IDLE_SIZE = 200, IDLE_CALLS = 50 };
static _Atomic int idle_calls, idle_done;
static size_t idle_call_size;

static void *idle_thread(void *arg)
{
	static unsigned char *objs[IDLE_OBJECTS];
	(void)arg;
	for (int i = 0; i < IDLE_OBJECTS; i++) {
		CHECK((objs[i] = za_malloc(IDLE_SIZE)));
		memset(objs[i], i & 0xff, IDLE_SIZE);
	}
	for (int i = 0; i < IDLE_OBJECTS; i++) {
		CHECK(objs[i][IDLE_SIZE - 1] == (i & 0xff));
		za_free(objs[i]);
	}
	atomic_store(&idle_done, 1);
	void *held[IDLE_CALLS + 1] = { 0 };
	for (int seen = 0; seen >= 0;) {
		int want = atomic_load(&idle_calls);
		if (want < 0)
			break;
		if (want == seen) {
			usleep(1000);
			continue;
		}
		CHECK((held[want] = za_malloc(idle_call_size)));   /* another class or a block */
		seen = want;
		atomic_store(&idle_done, want + 1);
	}
	for (int i = 0; i <= IDLE_CALLS; i++)
		za_free(held[i]);
	return NULL;
}

static void idle_thread_gives_back(size_t call_size)
{
	if (strstr(za_mm_config_string(mm), "malloc_cache=cpu"))
		return;                         /* no per-thread sheaves */
	pthread_t t;
	idle_call_size = call_size;
	atomic_store(&idle_calls, 0);
	atomic_store(&idle_done, 0);
	CHECK(pthread_create(&t, NULL, idle_thread, NULL) == 0);
	while (atomic_load(&idle_done) == 0)
		usleep(1000);
	bool gave_back = false;
	for (int call = 1; call <= IDLE_CALLS && !gave_back; call++) {
		za_free(za_malloc(1 << 20));    /* memory back: the worker runs */
		usleep(PURGE_DELAY_MS * 2500);  /* five rounds */
		long long before = za_stat(mm, "nr_slab_pages");
		atomic_store(&idle_calls, call);
		while (atomic_load(&idle_done) != call + 1)
			usleep(1000);
		gave_back = za_stat(mm, "nr_slab_pages") < before;
	}
	atomic_store(&idle_calls, -1);
	pthread_join(t, NULL);
	CHECK(gave_back);
}

/*
 * A class's barn keeps what the program swings through (sheaf.c).  Built
 * and dropped over and over, 4096 objects of one class go through the
 * slab cache -- slabs made and freed -- only while the barn's limit
 * learns the swing; then a round takes no slab.  The purge worker's rounds
 * (purge_delay_ms is PURGE_DELAY_MS here) give back what a barn holds once the
 * program stops using the class, though it stays busy.  And when the
 * program moves on to another class, what the idle barn holds goes back
 * at once to serve it: the second class's 4096 objects (960 pages of
 * them) take fewer new slab pages than that; back to the first class, its
 * barn has forgotten the swing.
 */
enum { SWING = 4096 };

/* One round: the slabs it made. */
static long long build_and_drop(unsigned char **objs, size_t size, unsigned int tag)
{
	long long slabs = za_stat(mm, "slab_alloc_slab");
	for (int i = 0; i < SWING; i++) {
		CHECK((objs[i] = za_malloc(size)));
		fill(objs[i], size, tag + (unsigned int)i);
	}
	for (int i = 0; i < SWING; i++) {
		check_fill(objs[i], size, tag + (unsigned int)i);
		za_free(objs[i]);
	}
	return za_stat(mm, "slab_alloc_slab") - slabs;
}

/* Rounds of 448-byte objects until the barn has learned their swing: four
 * in a row make no slab.  The limit doubles per round from 2 sheaves to
 * the 64 the swing needs, so that takes some ten rounds; a round of the
 * purge worker that finds the process idle meanwhile (this thread held
 * off the CPU for 50 ms) resets it, and it is learned again. */
static void learn_swing(unsigned char **objs)
{
	int quiet = 0;
	CHECK(build_and_drop(objs, 448, 0) > 0);
	for (int round = 1; round < 100 && quiet < 4; round++)
		quiet = build_and_drop(objs, 448, (unsigned int)round) ? 0 : quiet + 1;
	CHECK_EQ(quiet, 4);
}

static void test_barn_follows_swing(void)
{
	if (strstr(za_mm_config_string(mm), "malloc_cache=cpu"))
		return;                         /* no barns */
	static unsigned char *objs[SWING];
	za_malloc_trim(0);
	long long base_pages = za_stat(mm, "nr_slab_pages");
	learn_swing(objs);
	CHECK(za_verify(mm) == 0);
	long long learned = za_stat(mm, "nr_slab_pages");
	CHECK(learned - base_pages >= SWING * 448 / 4096);

	/* Busy -- a block of 4 MiB to the page allocator and back each
	 * millisecond -- but no longer using the class. */
	long long held = learned - base_pages;
	for (int ms = 0; ms < 10000 && za_stat(mm, "nr_slab_pages") - base_pages > held / 2; ms++) {
		za_free(za_malloc(4 << 20));
		usleep(1000);
	}
	CHECK(za_stat(mm, "nr_slab_pages") - base_pages <= held / 2);

	learn_swing(objs);
	learned = za_stat(mm, "nr_slab_pages");
	for (int i = 0; i < SWING; i++) {
		CHECK((objs[i] = za_malloc(960)));
		fill(objs[i], 960, (unsigned int)i);
	}
	/* Less than the objects' own pages, by more than a purge round's
	 * decay of the idle barn (half of it) could have given. */
	held = learned - base_pages;
	CHECK(za_stat(mm, "nr_slab_pages") - learned < SWING * 960 / 4096 - held / 2);
	for (int i = 0; i < SWING; i++) {
		check_fill(objs[i], 960, (unsigned int)i);
		za_free(objs[i]);
	}
	/* The barn forgot: the first round back finds it empty, and so does
	 * the second, its limit back at the base. */
	CHECK(build_and_drop(objs, 448, 99) > 0);
	CHECK(build_and_drop(objs, 448, 100) > 0);
	CHECK(za_verify(mm) == 0);
}

/* mallinfo2 says what the arena holds. */
static void test_mallinfo(void)
{
	void *p = za_malloc(1 << 20), *q = za_malloc(map_min);
	struct mallinfo2 mi = za_mallinfo2();
	CHECK(mi.arena >= mi.uordblks && mi.uordblks >= (1 << 20));
	CHECK_EQ(mi.arena, mi.uordblks + mi.fordblks);
	CHECK(mi.hblks >= 1 && mi.hblkhd >= map_min);
	za_free(p);
	za_free(q);
}

static void test_idle_thread_gives_back_small(void)
{
	idle_thread_gives_back(16);
}

static void test_idle_thread_gives_back_block(void)
{
	idle_thread_gives_back(64 << 10);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "sizes", test_sizes },
		{ "contract", test_contract },
		{ "realloc", test_realloc },
		{ "aligned", test_aligned },
		{ "sized_free", test_sized_free },
		{ "mallinfo", test_mallinfo },
		{ "threads", test_threads },
		{ "remote_first", test_remote_first },
		{ "fork", test_fork },
		{ "idle_thread_gives_back_small", test_idle_thread_gives_back_small },
		{ "idle_thread_gives_back_block", test_idle_thread_gives_back_block },
		{ "page_lists_tuned", test_page_lists_tuned },
		{ "barn_follows_swing", test_barn_follows_swing },
		{ "trim_and_purge", test_trim_and_purge },
		{ "busy_gives_back", test_busy_gives_back },
		{ "large_reuse_and_decay", test_large_reuse_and_decay },
		{ "giant_runs", test_giant_runs },
	};
	/* over the caller's ZA_CONFIG (ctest's percpu=lock run) */
	char config[256];
	const char *outer = getenv("ZA_CONFIG");
	snprintf(config, sizeof(config), "%s%spurge_delay_ms=%d", outer ? outer : "", outer ? "," : "",
		 PURGE_DELAY_MS);
	setenv("ZA_CONFIG", config, 1);
	CHECK((mm = za_malloc_system()));
	CHECK_STR_HAS(za_mm_config_string(mm), "deferred_init=1");
	map_min = mapped_min();
	return run_test_cases("test_malloc", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
