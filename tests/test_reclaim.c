/*
 * The page cache and reclaim: data integrity under heavy eviction against
 * a model, write-back before free, sync and close, the activation rule,
 * kswapd waking, balancing and sleeping, direct reclaim and ENOMEM,
 * shrinkers, and the fair zone allocation policy's proportions.
 */
#include "test.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
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
 * then sleeps; stopped by destroy.
 * ------------------------------------------------------------------------ */
static void test_kswapd(void)
{
	za_mm_t *mm = test_mm("memory=64M,zones=DMA32:16M+Normal");
	za_file_t *f = za_file_open(mm, path("kswapd"), O_RDWR | O_CREAT | O_TRUNC);
	static char buf[1 << 16];
	for (long off = 0; off < (96L << 20); off += sizeof(buf))
		CHECK_EQ(za_file_write(f, off, buf, sizeof(buf)), (long)sizeof(buf));
	CHECK(za_stat(mm, "kswapd_wakeup") > 0);
	CHECK(za_stat(mm, "pgscan_kswapd") > 0);
	/* Left alone, it brings every zone above its high watermark and stops. */
	long long scanned = -1;
	for (int i = 0; i < 500 && scanned != za_stat(mm, "pgscan_kswapd"); i++) {
		scanned = za_stat(mm, "pgscan_kswapd");
		sleep_ms(20);
	}
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
	CHECK_EQ(za_file_close(f), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);             /* joins kswapd */
}

/* ------------------------------------------------------------------------
 * Direct reclaim takes page cache back for allocations; with nothing left
 * to reclaim, allocations fail with ENOMEM (no OOM killer).
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
	za_mm_t *mm = test_mm("memory=32M,zones=Normal");
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

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/za-reclaim-XXXXXX", tmp ? tmp : "/var/tmp");
	CHECK(mkdtemp(dir));
	test_sync_close();
	test_activation();
	test_fair_zone();
	test_builtin_shrinkers();
	test_direct_reclaim_and_enomem();
	test_kswapd();
	test_integrity();
	const char *names[] = { "integrity", "sync", "act", "kswapd", "direct" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(path(names[i]));
	rmdir(dir);
	printf("test_reclaim: ok\n");
	return 0;
}
