/*
 * The page cache and reclaim: data integrity under heavy eviction against
 * a model, write-back before free, holes and new pages never showing a
 * previous owner's data, sync and close, the activation and second-chance
 * rules, deactivation, kswapd waking, balancing, sleeping and giving up,
 * direct reclaim and ENOMEM, shrinkers, and the fair zone allocation
 * policy's proportions and node locality.
 *
 * Tests that drive reclaim step by step use kswapd=0 and cpus=1, so that
 * every scan happens in the test's thread and the counters are exact.
 */
#include "test.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[256];

static const char *path(const char *name)
{
	static char buf[512];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Reads a value until it has not changed for ten polls of 10 ms (at most
 * about 20 s): what a background thread does with it has come to rest. */
static long long wait_until_still(long long (*read)(void *), void *ctx)
{
	long long v = read(ctx);
	for (int still = 0, polls = 0; still < 10 && polls < 2000; polls++) {
		sleep_ms(10);
		long long w = read(ctx);
		still = w == v ? still + 1 : 0;
		v = w;
	}
	return v;
}

/* Polls until cond(ctx) holds, at most about 10 s; returns whether it did. */
static bool wait_for(bool (*cond)(void *), void *ctx)
{
	for (int polls = 0; polls < 1000; polls++) {
		if (cond(ctx))
			return true;
		sleep_ms(10);
	}
	return cond(ctx);
}

static long long pgscan_kswapd(void *mm)
{
	return za_stat(mm, "pgscan_kswapd");
}

/* A file of `pages` pages of `byte` on disk, with nothing of it cached. */
static void make_file(za_mm_t *mm, const char *name, long pages, int byte)
{
	static char page[4096];
	memset(page, byte, sizeof(page));
	za_file_t *f = za_file_open(mm, path(name), O_RDWR | O_CREAT | O_TRUNC);
	CHECK(f);
	for (long i = 0; i < pages; i++)
		CHECK_EQ(za_file_write(f, i * 4096, page, 4096), 4096);
	CHECK_EQ(za_file_close(f), 0);
}

/* Leaves `n` free pages holding `byte` at the head of the per-CPU lists
 * (cpus=1), where the next page cache pages come from. */
static void dirty_free_pages(za_mm_t *mm, int n, int byte)
{
	void *p[64];
	CHECK(n <= 64);
	for (int i = 0; i < n; i++) {
		CHECK((p[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
		memset(p[i], byte, 4096);
	}
	for (int i = 0; i < n; i++)
		CHECK_EQ(za_free_pages(mm, p[i], 0), 0);
}

/* Allocates order-0 pages into pages[*n...] until one allocation entered
 * direct reclaim (kswapd=0: every allocation below the min watermark). */
static void alloc_until_stall(za_mm_t *mm, void **pages, long *n)
{
	long long stalls = za_stat(mm, "allocstall");
	while (za_stat(mm, "allocstall") == stalls) {
		CHECK((pages[*n] = za_alloc_pages(mm, 0, 0)));
		(*n)++;
	}
}

static void free_all(za_mm_t *mm, void **pages, long n)
{
	for (long i = 0; i < n; i++)
		CHECK_EQ(za_free_pages(mm, pages[i], 0), 0);
}

/* A shrinker that always has something and never frees anything: reclaim
 * never runs out of hope because of it, and its calls count reclaim passes. */
static atomic_ulong stuck_calls;

static unsigned long stuck_count(void *ctx)
{
	(void)ctx;
	return 1000;
}

static unsigned long stuck_scan(void *ctx, unsigned long nr)
{
	(void)ctx;
	(void)nr;
	atomic_fetch_add(&stuck_calls, 1);
	return 0;
}

static long long stuck_calls_now(void *ctx)
{
	(void)ctx;
	return (long long)atomic_load(&stuck_calls);
}

/* ------------------------------------------------------------------------
 * Integrity: several threads, random reads and writes of their own stripes
 * of a file twice the memory size, against an in-memory model.
 * ------------------------------------------------------------------------ */
enum { THREADS = 3, STRIPE = 1 << 20 };

static za_mm_t *imm;
static za_file_t *ifile;
static unsigned char *model;
static long file_bytes;

static void *integrity_worker(void *arg)
{
	long id = (long)arg;
	unsigned long long rng = 77 + (unsigned long long)id;
	unsigned char buf[3 * 4096];
	long stripes = file_bytes / STRIPE;
	for (int op = 0; op < 6000; op++) {
		long stripe = (long)(test_rand(&rng) % (unsigned long long)(stripes / THREADS)) * THREADS + id;
		long off = stripe * STRIPE + (long)(test_rand(&rng) % (STRIPE - sizeof(buf)));
		size_t len = 1 + test_rand(&rng) % sizeof(buf);
		if (test_rand(&rng) % 3 == 0) {
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)test_rand(&rng);
			CHECK_EQ(za_file_write(ifile, off, buf, len), (long)len);
			memcpy(model + off, buf, len);
		} else {
			CHECK_EQ(za_file_read(ifile, off, buf, len), (long)len);
			if (memcmp(buf, model + off, len)) {
				fprintf(stderr, "thread %ld: data differs at %ld+%zu\n", id, off, len);
				exit(1);
			}
		}
	}
	return NULL;
}

static void test_integrity(void)
{
	imm = test_mm("memory=32M,zones=DMA32:8M+Normal");
	file_bytes = 64L << 20;
	model = malloc((size_t)file_bytes);
	unsigned long long rng = 5;
	for (long i = 0; i < file_bytes; i++)
		model[i] = (unsigned char)(test_rand(&rng) >> 56);
	ifile = za_file_open(imm, path("integrity"), O_RDWR | O_CREAT | O_TRUNC);
	CHECK(ifile);
	/* Fill through the cache: most of it is written back by reclaim. */
	for (long off = 0; off < file_bytes; off += 1 << 16)
		CHECK_EQ(za_file_write(ifile, off, model + off, 1 << 16), 1 << 16);
	CHECK_EQ(za_file_size(ifile), file_bytes);
	CHECK(za_stat(imm, "pgwrite_reclaim") > 0);
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, integrity_worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(za_stat(imm, "pgmajfault") > 0 && za_stat(imm, "pgcache_hit") > 0);
	CHECK(za_stat(imm, "pgsteal_kswapd") + za_stat(imm, "pgsteal_direct") > 0);
	/* Everything reaches the file at close: compare the file itself. */
	CHECK_EQ(za_file_close(ifile), 0);
	int fd = open(path("integrity"), O_RDONLY);
	unsigned char *disk = malloc((size_t)file_bytes);
	CHECK_EQ(pread(fd, disk, (size_t)file_bytes, 0), file_bytes);
	CHECK(memcmp(disk, model, (size_t)file_bytes) == 0);
	close(fd);
	free(disk);
	free(model);
	CHECK(za_verify(imm) == 0);
	CHECK_EQ(za_mm_destroy(imm), 0);
}

/* ------------------------------------------------------------------------
 * Sync and close write back and set the exact size; reopen reads it.
 * ------------------------------------------------------------------------ */
static void test_sync_close(void)
{
	za_mm_t *mm = test_mm("memory=32M,zones=Normal");
	za_file_t *f = za_file_open(mm, path("sync"), O_RDWR | O_CREAT | O_TRUNC);
	char msg[] = "hello, page cache";
	CHECK_EQ(za_file_write(f, 10000, msg, sizeof(msg)), (long)sizeof(msg));
	CHECK_EQ(za_file_size(f), 10000 + (long)sizeof(msg));
	CHECK(za_stat(mm, "nr_dirty") == 1);
	CHECK_EQ(za_file_sync(f), 0);
	CHECK_EQ(za_stat(mm, "nr_dirty"), 0);
	struct stat st;
	CHECK(stat(path("sync"), &st) == 0 && st.st_size == 10000 + (long)sizeof(msg));
	/* Reads past the end are short; holes read as zeros. */
	char buf[64] = { 1 };
	CHECK_EQ(za_file_read(f, 10000 + 5, buf, sizeof(buf)), (long)sizeof(msg) - 5);
	CHECK(!memcmp(buf, msg + 5, sizeof(msg) - 5));
	CHECK_EQ(za_file_read(f, 0, buf, 16), 16);
	for (int i = 0; i < 16; i++)
		CHECK(buf[i] == 0);
	CHECK_EQ(za_file_read(f, 1 << 20, buf, 16), 0);
	/* Zero-copy access: the page stays put while referenced. */
	char *page = za_file_get_page(f, 5);
	CHECK(page);
	memcpy(page + 100, "direct", 6);
	CHECK_EQ(za_file_put_page(f, page, 1), 0);
	CHECK_EQ(za_file_size(f), 6 * 4096);
	/* Close without sync still writes everything back. */
	CHECK_EQ(za_file_close(f), 0);
	f = za_file_open(mm, path("sync"), O_RDWR);
	CHECK_EQ(za_file_size(f), 6 * 4096);
	CHECK_EQ(za_file_read(f, 5 * 4096 + 100, buf, 6), 6);
	CHECK(!memcmp(buf, "direct", 6));
	CHECK_EQ(za_file_read(f, 10000, buf, sizeof(msg)), (long)sizeof(msg));
	CHECK(!memcmp(buf, msg, sizeof(msg)));
	/* A page still referenced at close is reported, not freed under its user. */
	struct captured cap = { 0 };
	za_mm_set_error_handler(mm, capture_error, &cap);
	page = za_file_get_page(f, 0);
	CHECK_EQ(za_file_close(f), -1);
	CHECK_STR_HAS(cap.last, "1 pages still referenced");
	CHECK_EQ(za_mm_destroy(mm), 1);
}

/* ------------------------------------------------------------------------
 * Holes: a partial write to a page at or past the end of the file zeroes
 * the rest of the page, in memory and on disk -- never the data of the
 * page's previous owner.
 * ------------------------------------------------------------------------ */
static void check_zero(const char *buf, long from, long to)
{
	for (long i = from; i < to; i++)
		if (buf[i]) {
			fprintf(stderr, "byte %ld is %#x, not 0\n", i, (unsigned char)buf[i]);
			exit(1);
		}
}

static void check_hole_file(const char *buf)
{
	check_zero(buf, 0, 100);
	CHECK(!memcmp(buf + 100, "abc", 3));
	check_zero(buf, 103, 8000);
	CHECK(!memcmp(buf + 8000, "xyz", 3));
}

static void test_holes(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	za_file_t *f = za_file_open(mm, path("hole"), O_RDWR | O_CREAT | O_TRUNC);
	static char buf[8003];
	dirty_free_pages(mm, 8, 0xee);
	CHECK_EQ(za_file_write(f, 100, "abc", 3), 3);      /* page 0: past the end */
	dirty_free_pages(mm, 8, 0xee);
	CHECK_EQ(za_file_write(f, 8000, "xyz", 3), 3);     /* page 1: a hole, then data */
	CHECK_EQ(za_file_read(f, 0, buf, sizeof(buf)), (long)sizeof(buf));
	check_hole_file(buf);
	CHECK_EQ(za_file_close(f), 0);
	int fd = open(path("hole"), O_RDONLY);
	memset(buf, 0x55, sizeof(buf));
	CHECK_EQ(pread(fd, buf, sizeof(buf), 0), (long)sizeof(buf));
	check_hole_file(buf);
	close(fd);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* ------------------------------------------------------------------------
 * A page a write fills without reading the file stays locked until the
 * write's copy is done: a reader never sees what the page held before.
 * The writer's source faults (PROT_NONE), and the fault handler lets a
 * reader at the page before the copy can go on.
 * ------------------------------------------------------------------------ */
static char *fresh_src;
static atomic_int fresh_state;          /* 1: the writer faulted, 2: the reader is done */

static void fresh_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if ((char *)si->si_addr < fresh_src || (char *)si->si_addr >= fresh_src + 4096) {
		signal(sig, SIG_DFL);
		return;
	}
	/* Until the reader is done -- or, if it waits on the locked page, for
	 * 200 ms: then the copy goes on and unlocks the page for it. */
	atomic_store(&fresh_state, 1);
	for (int i = 0; i < 200 && atomic_load(&fresh_state) != 2; i++)
		sleep_ms(1);
	mprotect(fresh_src, 4096, PROT_READ);
}

static za_file_t *fresh_file;

static void *fresh_reader(void *arg)
{
	static char buf[4096];
	(void)arg;
	while (atomic_load(&fresh_state) != 1)
		sched_yield();
	CHECK_EQ(za_file_read(fresh_file, 4096, buf, 4096), 4096);
	atomic_store(&fresh_state, 2);
	for (int i = 0; i < 4096; i++)
		if (buf[i] != 'a' && buf[i] != 'b') {
			fprintf(stderr, "reader saw %#x at %d: a previous owner's data\n",
				(unsigned char)buf[i], i);
			exit(1);
		}
	return NULL;
}

static void test_fresh_page_locked(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	make_file(mm, "fresh", 2, 'a');
	fresh_file = za_file_open(mm, path("fresh"), O_RDWR);
	fresh_src = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(fresh_src != MAP_FAILED);
	memset(fresh_src, 'b', 4096);
	mprotect(fresh_src, 4096, PROT_NONE);
	struct sigaction sa = { .sa_sigaction = fresh_fault, .sa_flags = SA_SIGINFO }, old;
	sigaction(SIGSEGV, &sa, &old);
	dirty_free_pages(mm, 8, 0xee);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fresh_reader, NULL) == 0);
	CHECK_EQ(za_file_write(fresh_file, 4096, fresh_src, 4096), 4096);   /* all of page 1 */
	pthread_join(t, NULL);
	sigaction(SIGSEGV, &old, NULL);
	static char buf[4096];
	CHECK_EQ(za_file_read(fresh_file, 4096, buf, 4096), 4096);
	CHECK(!memcmp(buf, fresh_src, 4096));
	munmap(fresh_src, 4096);
	CHECK_EQ(za_file_close(fresh_file), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* ------------------------------------------------------------------------
 * The inactive list's tail, one direct reclaim at a time: a page only
 * referenced gets a second chance; a page in use and referenced is
 * activated, in use and not referenced kept and marked; the rest go.
 * Exact counts: every scan is in this thread.
 * ------------------------------------------------------------------------ */
struct lru_counts {
	long long scan, steal, rotated, activate, deactivate;
};

static struct lru_counts lru_counts(za_mm_t *mm)
{
	return (struct lru_counts){ za_stat(mm, "pgscan_direct"), za_stat(mm, "pgsteal_direct"),
				    za_stat(mm, "pgrotated"), za_stat(mm, "pgactivate"),
				    za_stat(mm, "pgdeactivate") };
}

#define CHECK_LRU_DELTA(mm, before, dscan, dsteal, drot, dact, ddeact)                \
	do {                                                                          \
		struct lru_counts now_ = lru_counts(mm);                              \
		CHECK_EQ(now_.scan - (before).scan, dscan);                           \
		CHECK_EQ(now_.steal - (before).steal, dsteal);                        \
		CHECK_EQ(now_.rotated - (before).rotated, drot);                      \
		CHECK_EQ(now_.activate - (before).activate, dact);                    \
		CHECK_EQ(now_.deactivate - (before).deactivate, ddeact);              \
	} while (0)

static long lru_pages(za_mm_t *mm)
{
	return (long)(za_stat(mm, "nr_inactive_file") + za_stat(mm, "nr_active_file"));
}

/* A 16M system, a file of `file_pages` on disk and open, nothing cached,
 * and room for the pages the test allocates to push it out. */
struct lru_test {
	za_mm_t *mm;
	za_file_t *f;
	void **pages;
	long n;
};

static struct lru_test lru_test_start(const char *name, long file_pages, int byte)
{
	struct lru_test t = { test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0"), NULL,
			      calloc(4096, sizeof(void *)), 0 };
	make_file(t.mm, name, file_pages, byte);
	t.f = za_file_open(t.mm, path(name), O_RDONLY);
	CHECK(t.f);
	return t;
}

static void lru_test_end(struct lru_test *t)
{
	free_all(t->mm, t->pages, t->n);
	CHECK_EQ(za_file_close(t->f), 0);
	CHECK_EQ(za_mm_destroy(t->mm), 0);
	free(t->pages);
}

static void test_second_chance(void)
{
	struct lru_test t = lru_test_start("chance", 32, 'c');
	static char buf[32 * 4096];
	CHECK_EQ(za_file_read(t.f, 0, buf, sizeof(buf)), (long)sizeof(buf));   /* each once */
	CHECK_EQ(za_stat(t.mm, "nr_inactive_file"), 32);
	/* Priority 12 rotates all 32 (bits cleared), priority 11 frees them. */
	struct lru_counts before = lru_counts(t.mm);
	alloc_until_stall(t.mm, t.pages, &t.n);
	CHECK_LRU_DELTA(t.mm, before, 64, 32, 32, 0, 0);
	CHECK_EQ(lru_pages(t.mm), 0);
	lru_test_end(&t);
}

static void test_activation_by_reclaim(void)
{
	struct lru_test t = lru_test_start("inuse", 32, 'u');
	/* Page 0 in use and referenced; readahead brought 1..31 in untouched. */
	char *held = za_file_get_page(t.f, 0);
	CHECK(held);
	CHECK_EQ(za_stat(t.mm, "nr_inactive_file"), 32);
	/*
	 * Priority 12: page 0 activated, 1..31 freed.  Then, the inactive list
	 * being empty, page 0 is deactivated, kept and marked (11), activated
	 * again (10), and so on down to priority 0: 7 activations, 6
	 * deactivations, 6 rotations.
	 */
	struct lru_counts before = lru_counts(t.mm);
	alloc_until_stall(t.mm, t.pages, &t.n);
	CHECK_LRU_DELTA(t.mm, before, 32 + 12, 31, 6, 7, 6);
	CHECK_EQ(za_stat(t.mm, "nr_active_file"), 1);
	CHECK_EQ(lru_pages(t.mm), 1);
	CHECK_EQ(held[0], 'u');
	/* Out of use, it goes at the next reclaim. */
	CHECK_EQ(za_file_put_page(t.f, held, 0), 0);
	alloc_until_stall(t.mm, t.pages, &t.n);
	CHECK_EQ(lru_pages(t.mm), 0);
	lru_test_end(&t);
}

/*
 * Deactivation keeps the inactive list at least as long as the active one
 * (the kernel's ratio is 1 below 1 GiB): none while it is, a cluster from
 * the active tail as soon as it is not.
 */
static void test_deactivation(void)
{
	struct lru_test t = lru_test_start("deact", 104, 'd');
	static char buf[104 * 4096];
	CHECK_EQ(za_file_read(t.f, 0, buf, 40 * 4096), 40 * 4096);
	CHECK_EQ(za_file_read(t.f, 0, buf, 40 * 4096), 40 * 4096);           /* 0..39 active */
	CHECK_EQ(za_file_read(t.f, 40 * 4096, buf, 64 * 4096), 64 * 4096);   /* 40..103 once */
	CHECK_EQ(za_stat(t.mm, "nr_active_file"), 40);
	CHECK_EQ(za_stat(t.mm, "nr_inactive_file"), 64);
	/* 64 >= 40: no deactivation; two clusters rotated, one freed. */
	struct lru_counts before = lru_counts(t.mm);
	alloc_until_stall(t.mm, t.pages, &t.n);
	CHECK_LRU_DELTA(t.mm, before, 96, 32, 64, 0, 0);
	CHECK_EQ(za_stat(t.mm, "nr_inactive_file"), 32);
	/* 32 < 40: a cluster of the active tail moves over first. */
	before = lru_counts(t.mm);
	alloc_until_stall(t.mm, t.pages, &t.n);
	CHECK_LRU_DELTA(t.mm, before, 32, 32, 0, 0, 32);
	CHECK_EQ(za_stat(t.mm, "nr_inactive_file"), 32);
	CHECK_EQ(za_stat(t.mm, "nr_active_file"), 8);
	lru_test_end(&t);
}

/* ------------------------------------------------------------------------
 * A costly order (above 3) fails after one round of direct reclaim without
 * progress; order 3 gets the kernel's 16.
 * ------------------------------------------------------------------------ */
static void test_costly_order_gives_up(void)
{
	za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
	long total = za_stat(mm, "nr_managed_pages");
	void **pages = calloc((size_t)total, sizeof(void *));
	long n = 0;
	while ((pages[n] = za_alloc_pages(mm, ZA_GFP_NOWAIT, 0)))
		n++;
	void *stuck = za_shrinker_register(mm, stuck_count, stuck_scan, NULL);
	long long stalls = za_stat(mm, "allocstall");
	errno = 0;
	CHECK(za_alloc_pages(mm, 0, 4) == NULL && errno == ENOMEM);
	CHECK_EQ(za_stat(mm, "allocstall") - stalls, 1);
	stalls = za_stat(mm, "allocstall");
	CHECK(za_alloc_pages(mm, 0, 3) == NULL && errno == ENOMEM);
	CHECK_EQ(za_stat(mm, "allocstall") - stalls, 16);
	za_shrinker_unregister(mm, stuck);
	free_all(mm, pages, n);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/* ------------------------------------------------------------------------
 * The activation rule: referenced on the first access, active on the
 * second, and reclaim deactivates when the inactive list runs low.
 * ------------------------------------------------------------------------ */
static void test_activation(void)
{
	za_mm_t *mm = test_mm("memory=32M,zones=Normal,cpus=1");
	za_file_t *f = za_file_open(mm, path("act"), O_RDWR | O_CREAT | O_TRUNC);
	char buf[4096] = { 0 };
	CHECK_EQ(za_file_write(f, 0, buf, 4096), 4096);   /* new page: referenced */
	CHECK_EQ(za_stat(mm, "nr_inactive_file"), 1);
	CHECK_EQ(za_stat(mm, "nr_active_file"), 0);
	CHECK_EQ(za_file_read(f, 0, buf, 1), 1);          /* second access: active */
	CHECK_EQ(za_stat(mm, "nr_active_file"), 1);
	CHECK_EQ(za_stat(mm, "pgactivate"), 1);
	CHECK_EQ(za_file_read(f, 0, buf, 1), 1);
	CHECK_EQ(za_file_read(f, 0, buf, 1), 1);
	CHECK_EQ(za_stat(mm, "pgactivate"), 1);           /* already active */
	/* A page read once stays inactive. */
	CHECK_EQ(za_file_write(f, 4096, buf, 4096), 4096);
	CHECK_EQ(za_stat(mm, "nr_inactive_file"), 1);
	CHECK_EQ(za_file_close(f), 0);
	CHECK_EQ(za_stat(mm, "nr_inactive_file") + za_stat(mm, "nr_active_file"), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* ------------------------------------------------------------------------
 * kswapd: woken by pressure, balances the node to its high watermarks,
 * then sleeps (the next pressure wakes it again: a wakeup is counted only
 * for a sleeping kswapd); stopped by destroy.
 * ------------------------------------------------------------------------ */
static void write_mb(za_file_t *f, long from_mb, long mb)
{
	static char buf[1 << 16];
	for (long off = from_mb << 20; off < (from_mb + mb) << 20; off += sizeof(buf))
		CHECK_EQ(za_file_write(f, off, buf, sizeof(buf)), (long)sizeof(buf));
}

static void test_kswapd(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=DMA32:16M+Normal");
	za_file_t *f = za_file_open(mm, path("kswapd"), O_RDWR | O_CREAT | O_TRUNC);
	write_mb(f, 0, 96);
	CHECK(za_stat(mm, "kswapd_wakeup") > 0);
	CHECK(za_stat(mm, "pgscan_kswapd") > 0);
	CHECK(za_stat(mm, "pgsteal_kswapd") > 0);
	/* Left alone, it brings every zone above its high watermark and stops. */
	long long scanned = wait_until_still(pgscan_kswapd, mm);
	CHECK_EQ(za_stat(mm, "pgscan_kswapd"), scanned);
	char *text = NULL;
	size_t len = 0;
	FILE *zi = open_memstream(&text, &len);
	za_report(mm, "zoneinfo", zi);
	fclose(zi);
	for (char *z = strstr(text, "pages free"); z; z = strstr(z + 1, "pages free")) {
		long free_pages = strtol(z + 10, NULL, 10);
		long high = strtol(strstr(z, "high") + 4, NULL, 10);
		CHECK(free_pages > high);
	}
	free(text);
	long long wakeups = za_stat(mm, "kswapd_wakeup");
	write_mb(f, 96, 64);
	CHECK(za_stat(mm, "kswapd_wakeup") > wakeups);
	CHECK(za_stat(mm, "pgscan_kswapd") > scanned);
	CHECK_EQ(za_file_close(f), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);             /* joins kswapd */
}

/* ------------------------------------------------------------------------
 * kswapd with nothing to reclaim (memory between min and low, held): it
 * gives up after MAX_RECLAIM_RETRIES balance runs of DEF_PRIORITY + 1
 * passes (one call of each shrinker per pass), is not woken again while
 * hopeless, and never drains the per-CPU lists meanwhile.
 * ------------------------------------------------------------------------ */
static void test_kswapd_gives_up(void)
{
	za_mm_t *mm = test_mm("memory=32M,zones=Normal,cpus=1,fair_zone=0");
	long total = za_stat(mm, "nr_managed_pages");
	void **pages = calloc((size_t)total, sizeof(void *));
	long n = 0;
	atomic_store(&stuck_calls, 0);
	void *stuck = za_shrinker_register(mm, stuck_count, stuck_scan, NULL);
	while (!za_stat(mm, "alloc_slowpath"))          /* until below the low watermark */
		CHECK((pages[n++] = za_alloc_pages(mm, 0, 0)));
	long long wakeups = za_stat(mm, "kswapd_wakeup");  /* 0 if it was not asleep yet */
	CHECK(wakeups <= 1);
	long long drains = za_stat(mm, "pcp_drain");
	for (int i = 0; i < 20000; i++) {               /* every one fails the low watermark */
		void *p = za_alloc_pages(mm, 0, 0);
		CHECK(p);
		CHECK_EQ(za_free_pages(mm, p, 0), 0);
	}
	CHECK_EQ(wait_until_still(stuck_calls_now, NULL), 16 * 13);
	CHECK_EQ(za_stat(mm, "kswapd_wakeup"), wakeups);
	CHECK_EQ(za_stat(mm, "pcp_drain"), drains);
	/* Hopeless: the next allocation under the low watermark does not wake it. */
	long long missed = za_stat(mm, "kswapd_wake_missed");
	CHECK((pages[n++] = za_alloc_pages(mm, 0, 0)));
	CHECK_EQ(za_stat(mm, "kswapd_wake_missed"), missed + 1);
	CHECK_EQ(za_stat(mm, "kswapd_wakeup"), wakeups);
	CHECK_EQ(stuck_calls_now(NULL), 16 * 13);
	CHECK_EQ(za_stat(mm, "allocstall"), 0);
	za_shrinker_unregister(mm, stuck);
	free_all(mm, pages, n);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/* ------------------------------------------------------------------------
 * The zones kswapd balances are the highest any waker asked for: a waker
 * that may use Normal, arriving while kswapd balances for a DMA32-only
 * one, gets Normal reclaimed.  A shrinker holds kswapd in its first pass
 * while the second waker comes.
 * ------------------------------------------------------------------------ */
static pthread_t test_thread;
static atomic_int hold_state;           /* 1 armed, 2 kswapd held, 3 released */

static unsigned long hold_count(void *ctx)
{
	(void)ctx;
	return atomic_load(&hold_state) == 1;
}

static unsigned long hold_scan(void *ctx, unsigned long nr)
{
	int armed = 1;
	(void)ctx;
	(void)nr;
	if (pthread_equal(pthread_self(), test_thread) ||
	    !atomic_compare_exchange_strong(&hold_state, &armed, 2))
		return 0;
	while (atomic_load(&hold_state) == 2)
		sleep_ms(1);
	return 0;
}

static bool kswapd_held(void *ctx)
{
	(void)ctx;
	return atomic_load(&hold_state) == 2;
}

/* kswapd counts a batch scanned before it reclaims from it: the steal is
 * what to wait for. */
static bool normal_reclaimed(void *mm)
{
	return za_stat(mm, "pgsteal_kswapd_Normal") > 0;
}

static void test_kswapd_highest_zone(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=DMA32:16M+Normal,cpus=1,fair_zone=0");
	long total = za_stat(mm, "nr_managed_pages");
	void **pages = calloc((size_t)total, sizeof(void *));
	long n = 0;
	test_thread = pthread_self();
	atomic_store(&hold_state, 0);
	void *hold = za_shrinker_register(mm, hold_count, hold_scan, NULL);
	/* Page cache in Normal only, then Normal down to its low watermark. */
	za_file_t *f = za_file_open(mm, path("highest"), O_RDWR | O_CREAT | O_TRUNC);
	static char buf[1 << 16];
	for (long off = 0; off < (8L << 20); off += sizeof(buf))
		CHECK_EQ(za_file_write(f, off, buf, sizeof(buf)), (long)sizeof(buf));
	CHECK_EQ(za_stat(mm, "nr_inactive_file_DMA32") + za_stat(mm, "nr_active_file_DMA32"), 0);
	for (;;) {
		CHECK((pages[n] = za_alloc_pages(mm, 0, 0)));
		if (za_page_zone(mm, za_virt_to_page(mm, pages[n])) == 0)
			break;                  /* Normal failed its low watermark */
		n++;
	}
	CHECK_EQ(za_free_pages(mm, pages[n], 0), 0);
	CHECK_EQ(za_stat(mm, "alloc_slowpath"), 0);
	/* A DMA32-only waker: kswapd balances DMA32, where nothing is reclaimable. */
	atomic_store(&hold_state, 1);
	while (!za_stat(mm, "alloc_slowpath"))
		CHECK((pages[n++] = za_alloc_pages(mm, ZA_GFP_DMA32, 0)));
	CHECK(wait_for(kswapd_held, NULL));
	/* A waker that could use Normal, while kswapd runs. */
	CHECK((pages[n++] = za_alloc_pages(mm, 0, 0)));
	atomic_store(&hold_state, 3);
	CHECK(wait_for(normal_reclaimed, mm));
	CHECK(za_stat(mm, "pgscan_kswapd_Normal") > 0);
	za_shrinker_unregister(mm, hold);
	free_all(mm, pages, n);
	CHECK_EQ(za_file_close(f), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/* ------------------------------------------------------------------------
 * Direct reclaim takes page cache back for allocations; with nothing left
 * to reclaim, allocations fail with ENOMEM (no OOM killer).  kswapd=0: a
 * kswapd freeing a batch it had isolated could let the allocation after
 * the first ENOMEM succeed.
 * ------------------------------------------------------------------------ */
static unsigned long fake_objects;
static unsigned long shrinker_calls;

static unsigned long fake_count(void *ctx)
{
	(void)ctx;
	return fake_objects;
}

static unsigned long fake_scan(void *ctx, unsigned long nr)
{
	(void)ctx;
	shrinker_calls++;
	unsigned long n = nr < fake_objects ? nr : fake_objects;
	fake_objects -= n;
	return 0;       /* frees no pages: the allocator must not count on it */
}

static void test_direct_reclaim_and_enomem(void)
{
	za_mm_t *mm = test_mm("memory=32M,zones=Normal,kswapd=0");
	long total = za_stat(mm, "nr_managed_pages");
	za_file_t *f = za_file_open(mm, path("direct"), O_RDWR | O_CREAT | O_TRUNC);
	static char buf[1 << 16];
	for (long off = 0; off < (24L << 20); off += sizeof(buf))
		CHECK_EQ(za_file_write(f, off, buf, sizeof(buf)), (long)sizeof(buf));
	CHECK(za_stat(mm, "nr_inactive_file") + za_stat(mm, "nr_active_file") > total / 2);
	fake_objects = 1000;
	void *shrinker = za_shrinker_register(mm, fake_count, fake_scan, NULL);
	CHECK(shrinker);
	/* Unreclaimable allocations push the page cache out... */
	void **pages = calloc((size_t)total, sizeof(void *));
	long n = 0;
	while ((pages[n] = za_alloc_pages(mm, 0, 0)))
		n++;
	CHECK_EQ(errno, ENOMEM);
	CHECK(n > total * 9 / 10);
	CHECK(za_stat(mm, "nr_inactive_file") + za_stat(mm, "nr_active_file") == 0);
	CHECK(za_stat(mm, "allocstall") > 0);
	CHECK(za_stat(mm, "alloc_fail") > 0);
	/* ... and the shrinkers were asked along the way. */
	CHECK(shrinker_calls > 0);
	CHECK(fake_objects < 1000);
	/* Nothing left: the next allocation fails at once, after reclaim. */
	long long stalls = za_stat(mm, "allocstall");
	errno = 0;
	CHECK(za_alloc_pages(mm, 0, 0) == NULL && errno == ENOMEM);
	CHECK(za_stat(mm, "allocstall") > stalls);
	/* NOWAIT never reclaims. */
	stalls = za_stat(mm, "allocstall");
	CHECK(za_alloc_pages(mm, ZA_GFP_NOWAIT, 0) == NULL);
	CHECK_EQ(za_stat(mm, "allocstall"), stalls);
	for (long i = 0; i < n; i++)
		za_free_pages(mm, pages[i], 0);
	za_shrinker_unregister(mm, shrinker);
	/* The file's data survived its eviction. */
	char check[64];
	CHECK_EQ(za_file_read(f, 5 << 20, check, sizeof(check)), (long)sizeof(check));
	CHECK_EQ(za_file_close(f), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/* The built-in shrinkers give back empty slabs and per-CPU pages. */
static void test_builtin_shrinkers(void)
{
	za_mm_t *mm = test_mm("memory=32M,zones=Normal");
	long total = za_stat(mm, "nr_managed_pages");
	za_cache_t *c = za_cache_create(mm, "shrinkme", 256, 0, 0, NULL);
	void *objs[20000];
	for (int i = 0; i < 20000; i++)
		CHECK((objs[i] = za_cache_alloc(c, 0)));
	for (int i = 0; i < 20000; i++)
		CHECK_EQ(za_cache_free(c, objs[i]), 0);
	long long slab = za_stat(mm, "nr_slab_pages");
	CHECK(slab > 0);
	void **pages = calloc((size_t)total, sizeof(void *));
	long n = 0;
	while ((pages[n] = za_alloc_pages(mm, 0, 0)))
		n++;
	/* Every empty slab of the cache went back to the page allocator. */
	CHECK(za_stat(mm, "nr_slab_pages") < slab);
	CHECK_EQ(za_cache_stat(c, "alloc_slab"), za_cache_stat(c, "free_slab"));
	for (long i = 0; i < n; i++)
		za_free_pages(mm, pages[i], 0);
	CHECK_EQ(za_cache_destroy(c), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

/* ------------------------------------------------------------------------
 * fair_zone: a long allocation stream lands in each zone in proportion to
 * its size (DMA32 a quarter, within 5 points); without it, the preferred
 * zone takes nearly all of it.
 * ------------------------------------------------------------------------ */
static double dma32_share(const char *config)
{
	za_mm_t *mm = test_mm(config);
	long total = za_stat(mm, "nr_managed_pages");
	long n = total * 2 / 5;
	void **pages = calloc((size_t)n, sizeof(void *));
	for (long i = 0; i < n; i++)
		CHECK((pages[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
	long dma = 0;
	for (long i = 0; i < n; i++)
		dma += za_page_zone(mm, za_virt_to_page(mm, pages[i])) == 0;
	for (long i = 0; i < n; i++)
		za_free_pages(mm, pages[i], 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
	return (double)dma / (double)n;
}

static void test_fair_zone(void)
{
	double fair = dma32_share("memory=256M,zones=DMA32:64M+Normal,fair_zone=1");
	double unfair = dma32_share("memory=256M,zones=DMA32:64M+Normal,fair_zone=0");
	printf("  DMA32 share of the stream: fair %.3f, unfair %.3f (zone share 0.25)\n", fair, unfair);
	CHECK(fair > 0.20 && fair < 0.30);
	CHECK(unfair < 0.02);
}

/*
 * fair_zone, counted exactly: on one CPU, allocating and freeing one block
 * in a loop spends the local zones' batches (high - low watermark each) in
 * turn; once both are spent the fast path fails and the slow path resets
 * them (nothing is short of memory: no reclaim, no kswapd).  A zone is used
 * while its batch is above zero, so a round is ceil(batch / block) blocks
 * of each zone; the allocation that resets is the next round's first.  So
 * n allocations enter the slow path (n - 1) / round times -- whether the
 * blocks come from the per-CPU lists or, for an order they do not cache,
 * from the buddy lists, whose charges the CPU's view of the batch must see
 * too (it used not to: the batch went negative and was never reset).
 */
static void fair_zone_rounds(const char *config, unsigned int order, bool via_pcp)
{
	za_mm_t *mm = test_mm(config);
	long block = 1L << order;
	long normal = za_stat(mm, "nr_alloc_batch_Normal"), dma32 = za_stat(mm, "nr_alloc_batch_DMA32");
	long round = (normal + block - 1) / block + (dma32 + block - 1) / block;
	long n = 20 * round + 3;
	CHECK(normal > 0 && dma32 > 0);
	long long hits = za_stat(mm, "pcp_alloc_hit_order0") + za_stat(mm, "pcp_alloc_hit_order1");
	for (long i = 0; i < n; i++) {
		void *p = za_alloc_pages(mm, ZA_GFP_KERNEL, order);
		CHECK(p);
		CHECK_EQ(za_free_pages(mm, p, order), 0);
	}
	printf("  %s, order %u: batches %ld + %ld pages, %ld allocations, %lld slow-path entries\n",
	       config, order, normal, dma32, n, za_stat(mm, "alloc_slowpath"));
	CHECK_EQ(za_stat(mm, "alloc_slowpath"), (n - 1) / round);
	CHECK_EQ(za_stat(mm, "allocstall"), 0);
	CHECK_EQ(za_stat(mm, "kswapd_wakeup"), 0);
	CHECK_EQ(za_stat(mm, "wmark_fail"), 0);
	/* Never spent past one block: each zone's batch is checked before use. */
	CHECK(za_stat(mm, "nr_alloc_batch_Normal") > -block);
	CHECK(za_stat(mm, "nr_alloc_batch_DMA32") > -block);
	long long now = za_stat(mm, "pcp_alloc_hit_order0") + za_stat(mm, "pcp_alloc_hit_order1");
	if (via_pcp)
		CHECK_EQ(now - hits, n - 2);    /* all but each zone's first: per-CPU hits */
	else
		CHECK_EQ(now, hits);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

static void test_fair_zone_rounds(void)
{
	/* One CPU: thresholds 4 (Normal) and 2 (DMA32) divide the batches, 96
	 * and 32 pages, so the per-CPU charges are folded exactly at the end. */
	const char *base = "memory=256M,zones=DMA32:64M+Normal,cpus=1,kswapd=0,fair_zone=1";
	char config[256];
	fair_zone_rounds(base, 0, true);
	snprintf(config, sizeof(config), "%s,pcp_high_order=1", base);
	fair_zone_rounds(config, 1, true);
	snprintf(config, sizeof(config), "%s,pcp_high_order=0", base);
	fair_zone_rounds(config, 1, false);     /* the buddy lists, under the zone lock */
	fair_zone_rounds(base, 4, false);       /* above the per-CPU orders */
	/* And no round robin without the policy. */
	snprintf(config, sizeof(config), "%s", "memory=256M,zones=DMA32:64M+Normal,cpus=1,kswapd=0,"
		 "fair_zone=0");
	za_mm_t *mm = test_mm(config);
	for (int i = 0; i < 10000; i++) {
		void *p = za_alloc_pages(mm, ZA_GFP_KERNEL, i % 5);
		CHECK(p);
		CHECK_EQ(za_free_pages(mm, p, (unsigned int)(i % 5)), 0);
	}
	CHECK_EQ(za_stat(mm, "alloc_slowpath"), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
}

/* The stream's proportions hold for blocks the per-CPU lists do not cache. */
static void test_fair_zone_high_order(void)
{
	static const char *const configs[] = {
		"memory=256M,zones=DMA32:64M+Normal,fair_zone=1,pcp_high_order=0",
		"memory=256M,zones=DMA32:64M+Normal,fair_zone=1",
	};
	for (int c = 0; c < 2; c++) {
		unsigned int order = c ? 4 : 1;
		za_mm_t *mm = test_mm(configs[c]);
		long n = za_stat(mm, "nr_managed_pages") * 2 / 5 >> order;
		void **blocks = calloc((size_t)n, sizeof(void *));
		long dma = 0;
		for (long i = 0; i < n; i++) {
			CHECK((blocks[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, order)));
			dma += za_page_zone(mm, za_virt_to_page(mm, blocks[i])) == 0;
		}
		double share = (double)dma / (double)n;
		printf("  %s, order %u: DMA32 share %.3f (zone share 0.25)\n", configs[c], order, share);
		CHECK(share > 0.20 && share < 0.30);
		for (long i = 0; i < n; i++)
			CHECK_EQ(za_free_pages(mm, blocks[i], order), 0);
		CHECK_EQ(za_mm_destroy(mm), 0);
		free(blocks);
	}
}

/* With two nodes, the fair pass stays on the thread's node: a stream from a
 * thread pinned to a CPU of node N lands on node N only, spread over its
 * zones in proportion to their size. */
static void test_fair_zone_local_node(void)
{
	za_mm_t *mm = test_mm("memory=512M,nodes=2,zones=DMA32:64M+Normal,cpus=2,fair_zone=1,"
			      "kswapd=0");
	cpu_set_t saved, one;
	CHECK(sched_getaffinity(0, sizeof(saved), &saved) == 0);
	int cpu = 0;
	while (!CPU_ISSET(cpu, &saved))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
	int node = za_cpu_to_node(mm, za_current_cpu(mm));
	long n = za_stat(mm, "nr_managed_pages") / 2 * 2 / 5;
	void **pages = calloc((size_t)n, sizeof(void *));
	long remote = 0, dma = 0;
	for (long i = 0; i < n; i++) {
		CHECK((pages[i] = za_alloc_pages(mm, ZA_GFP_MOVABLE, 0)));
		za_page_t *page = za_virt_to_page(mm, pages[i]);
		remote += za_page_to_nid(mm, page) != node;
		dma += za_page_zone(mm, page) == 0;
	}
	CHECK(sched_setaffinity(0, sizeof(saved), &saved) == 0);
	double share = (double)dma / (double)n;
	printf("  node %d: %ld of %ld pages remote, DMA32 share %.3f (zone share 0.25)\n", node,
	       remote, n, share);
	CHECK_EQ(remote, 0);
	CHECK(share > 0.20 && share < 0.30);
	free_all(mm, pages, n);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(pages);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "sync_close", test_sync_close },
		{ "holes", test_holes },
		{ "fresh_page_locked", test_fresh_page_locked },
		{ "activation", test_activation },
		{ "second_chance", test_second_chance },
		{ "activation_by_reclaim", test_activation_by_reclaim },
		{ "deactivation", test_deactivation },
		{ "fair_zone", test_fair_zone },
		{ "fair_zone_rounds", test_fair_zone_rounds },
		{ "fair_zone_high_order", test_fair_zone_high_order },
		{ "fair_zone_local_node", test_fair_zone_local_node },
		{ "builtin_shrinkers", test_builtin_shrinkers },
		{ "direct_reclaim_and_enomem", test_direct_reclaim_and_enomem },
		{ "costly_order_gives_up", test_costly_order_gives_up },
		{ "kswapd", test_kswapd },
		{ "kswapd_gives_up", test_kswapd_gives_up },
		{ "kswapd_highest_zone", test_kswapd_highest_zone },
		{ "integrity", test_integrity },
	};
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/za-reclaim-XXXXXX", tmp ? tmp : "/var/tmp");
	CHECK(mkdtemp(dir));
	int rc = run_test_cases("test_reclaim", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
	const char *names[] = { "integrity", "sync", "act", "kswapd", "direct", "hole", "fresh",
				"chance", "inuse", "deact", "highest" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(path(names[i]));
	rmdir(dir);
	return rc;
}
