/*
 * The malloc's shared structures under many threads at once: the mapping
 * cache (large blocks freed and allocated together), the page-block cache
 * and the barns (blocks handed between threads and freed by others), and
 * the purge worker (running its rounds meanwhile, retiring when the
 * process is quiet and starting again).  Run by name:
 *
 *   test_malloc_threads [mapping_cache_races] [api_fuzz] [purge_worker_lifecycle]
 *
 * The system is small-grained so that every path is reached often: blocks
 * up to 1 MiB (max_order=8), sections of 4 MiB, so that requests beyond
 * 1 MiB are mappings; the purge worker's rounds every 10 ms.
 */
#include "test.h"

#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

static za_mm_t *mm;

enum { MIB = 1 << 20, MAP_MIN = MIB + 1 };

/* Sanitizers run every access several times slower. */
#if defined(ZA_TSAN) || defined(ZA_ASAN)
#define SCALE 4
#else
#define SCALE 1
#endif

/* ------------------------------------------------------------------------
 * Contents: a block of n bytes tagged t holds at each of its sampled bytes
 * a value derived from both: every byte up to 64 KiB, beyond that its
 * first and last `edge` bytes (a page, or 64 where the frees should follow
 * each other closely) and every 64 KiB between.  A realloc keeps the
 * samples of the old size below the new one.
 * ------------------------------------------------------------------------ */
static unsigned char byte_at(size_t i, unsigned int tag)
{
	return (unsigned char)(tag * 131 + i * 7 + (i >> 12));
}

/* fn on each sample of a block of n bytes below limit. */
static void for_each_sample(unsigned char *p, size_t n, size_t limit, size_t edge,
			    unsigned int tag, void (*fn)(unsigned char *, size_t, unsigned int))
{
	size_t whole = n <= (64 << 10) ? n : edge;
	for (size_t i = 0; i < whole && i < limit; i++)
		fn(p, i, tag);
	if (whole == n)
		return;
	for (size_t i = n - edge; i < limit && i < n; i++)
		fn(p, i, tag);
	for (size_t i = 64 << 10; i < n - edge && i < limit; i += 64 << 10)
		fn(p, i, tag);
}

static void put_byte(unsigned char *p, size_t i, unsigned int tag)
{
	p[i] = byte_at(i, tag);
}

static void check_byte(unsigned char *p, size_t i, unsigned int tag)
{
	if (p[i] != byte_at(i, tag)) {
		fprintf(stderr, "block %p (tag %u) changed at byte %zu: %#x, expected %#x\n",
			(void *)p, tag, i, p[i], byte_at(i, tag));
		exit(1);
	}
}

static void fill(unsigned char *p, size_t n, unsigned int tag)
{
	for_each_sample(p, n, n, 4096, tag, put_byte);
}

static void check(unsigned char *p, size_t n, unsigned int tag)
{
	for_each_sample(p, n, n, 4096, tag, check_byte);
}

/* The first `keep` bytes of what was a block of n bytes. */
static void check_prefix(unsigned char *p, size_t n, size_t keep, unsigned int tag)
{
	for_each_sample(p, n, keep, 4096, tag, check_byte);
}

/* ------------------------------------------------------------------------
 * The mapping cache: every thread maps a few dozen blocks, each followed
 * by a page of its own mapping so that no two of them touch (freed, they
 * stay separate ranges in the cache instead of merging), then all threads
 * free theirs at the same moment: the cache fills to its slots with many
 * threads putting at once.  Then they take from it again, splitting and
 * growing its ranges.  No block is handed out twice, every byte is kept,
 * and the cache's invariants hold after each round (za_verify).
 * ------------------------------------------------------------------------ */
enum { MAP_THREADS = 8, MAP_BLOCKS = 40, MAP_ROUNDS = 100 / SCALE };
static pthread_barrier_t map_barrier;
static unsigned char *live_maps[MAP_THREADS][MAP_BLOCKS];
static size_t live_sizes[MAP_THREADS][MAP_BLOCKS];

/* Few samples: the frees should follow each other closely, as in a
 * program that drops many buffers at once. */
static void stamp(unsigned char *p, size_t n, unsigned int tag, bool verify)
{
	for_each_sample(p, n, n, 64, tag, verify ? check_byte : put_byte);
}

static void *map_thread(void *arg)
{
	int id = (int)(uintptr_t)arg;
	unsigned long long rnd = 0x9e37 + (unsigned long long)id;
	size_t *sizes = live_sizes[id];
	void *spacers[MAP_BLOCKS];
	for (int round = 0; round < MAP_ROUNDS; round++) {
		for (int i = 0; i < MAP_BLOCKS; i++) {
			sizes[i] = MAP_MIN + (test_rand(&rnd) % 48) * 65536 + test_rand(&rnd) % 4096;
			unsigned char *p = za_malloc(sizes[i]);
			CHECK(p);
			stamp(p, sizes[i], (unsigned int)(id * 1000 + i), false);
			live_maps[id][i] = p;
			spacers[i] = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			CHECK(spacers[i] != MAP_FAILED);
		}
		pthread_barrier_wait(&map_barrier);
		/* No block is another's: the main thread compares them all. */
		pthread_barrier_wait(&map_barrier);
		for (int i = 0; i < MAP_BLOCKS; i++)
			stamp(live_maps[id][i], sizes[i], (unsigned int)(id * 1000 + i), true);
		for (int i = 0; i < MAP_BLOCKS; i++) {
			if (i % 3 == 2)
				za_free_sized(live_maps[id][i], sizes[i]);
			else
				za_free(live_maps[id][i]);
		}
		pthread_barrier_wait(&map_barrier);
		pthread_barrier_wait(&map_barrier);     /* the main thread verifies */
		for (int i = 0; i < MAP_BLOCKS; i++)
			munmap(spacers[i], 4096);
	}
	return NULL;
}

static void check_maps_disjoint(void)
{
	for (int a = 0; a < MAP_THREADS * MAP_BLOCKS; a++)
		for (int b = a + 1; b < MAP_THREADS * MAP_BLOCKS; b++) {
			unsigned char *p = live_maps[a / MAP_BLOCKS][a % MAP_BLOCKS];
			unsigned char *q = live_maps[b / MAP_BLOCKS][b % MAP_BLOCKS];
			size_t p_len = live_sizes[a / MAP_BLOCKS][a % MAP_BLOCKS];
			size_t q_len = live_sizes[b / MAP_BLOCKS][b % MAP_BLOCKS];
			CHECK(p + p_len <= q || q + q_len <= p);
		}
}

static void test_mapping_cache_races(void)
{
	pthread_t t[MAP_THREADS];
	CHECK(pthread_barrier_init(&map_barrier, NULL, MAP_THREADS + 1) == 0);
	for (int i = 0; i < MAP_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, map_thread, (void *)(uintptr_t)i) == 0);
	for (int round = 0; round < MAP_ROUNDS; round++) {
		pthread_barrier_wait(&map_barrier);
		check_maps_disjoint();
		CHECK_EQ(za_mallinfo2().hblks, MAP_THREADS * MAP_BLOCKS);
		pthread_barrier_wait(&map_barrier);
		pthread_barrier_wait(&map_barrier);
		CHECK(za_verify(mm) == 0);
		CHECK_EQ(za_mallinfo2().hblks, 0);
		pthread_barrier_wait(&map_barrier);
	}
	for (int i = 0; i < MAP_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&map_barrier);
	CHECK(za_verify(mm) == 0);
}

/* ------------------------------------------------------------------------
 * The API, fuzzed from several threads over one table of blocks: each
 * step takes a slot (so one thread at a time owns its block), checks the
 * block's contents, and frees it -- by free, free_sized,
 * free_aligned_sized, or realloc to another size (its prefix kept) -- or
 * allocates into an empty slot by any entry point, of any kind of size.
 * Blocks move between threads through the table, so frees are remote as
 * often as local, and the purge worker runs its rounds all along.
 * ------------------------------------------------------------------------ */
enum { SLOTS = 2048, FUZZ_THREADS = 4 };

struct block {
	unsigned char *p;
	size_t n, align;                /* align: 0 unless from an aligned entry point */
	unsigned int tag;
};

struct slot {
	atomic_bool busy;               /* taken by a thread: the block is its own */
	struct block b;
};

static struct slot slots[SLOTS];

/* Mostly small, some page blocks, a few mappings. */
static size_t fuzz_size(unsigned long long *rnd)
{
	unsigned int r = (unsigned int)(test_rand(rnd) % 1000);
	if (r < 5)
		return 0;
	if (r < 800)
		return 1 + test_rand(rnd) % 1024;
	if (r < 950)
		return 1025 + test_rand(rnd) % (16 << 10);
	if (r < 995)
		return (16 << 10) + test_rand(rnd) % MIB;
	return MAP_MIN + test_rand(rnd) % (2 * MIB);
}

static void fuzz_alloc(struct block *s, unsigned long long *rnd, unsigned int tag)
{
	size_t n = fuzz_size(rnd), align = 0;
	void *p = NULL;
	switch (test_rand(rnd) % 5) {
	case 0:
		p = za_calloc(1, n);
		for (size_t i = 0; p && i < n; i += 1 + i / 8)
			CHECK(((unsigned char *)p)[i] == 0);
		break;
	case 1:
		align = (size_t)16 << (test_rand(rnd) % 9);     /* 16 .. 4096 */
		p = za_aligned_alloc(align, n);
		break;
	case 2:
		align = (size_t)32 << (test_rand(rnd) % 12);    /* 32 .. 64 KiB */
		CHECK(za_posix_memalign(&p, align, n) == 0);
		break;
	default:
		p = za_malloc(n);
	}
	CHECK(p);
	CHECK(!align || (uintptr_t)p % align == 0);
	CHECK(za_malloc_usable_size(p) >= n);
	fill(p, n, tag);
	*s = (struct block){ .p = p, .n = n, .align = align, .tag = tag };
}

static void fuzz_free(struct block *s, unsigned long long *rnd, unsigned int tag)
{
	check(s->p, s->n, s->tag);
	switch (test_rand(rnd) % 4) {
	case 0:
		if (s->align)
			za_free_aligned_sized(s->p, s->align, s->n);
		else
			za_free_sized(s->p, s->n);
		break;
	case 1: {
		size_t n = fuzz_size(rnd) + 1, keep = n < s->n ? n : s->n;
		unsigned char *q = za_realloc(s->p, n);
		CHECK(q);
		check_prefix(q, s->n, keep, s->tag);
		fill(q, n, tag);
		*s = (struct block){ .p = q, .n = n, .tag = tag };
		return;
	}
	default:
		za_free(s->p);
	}
	s->p = NULL;
}

static void *fuzz_thread(void *arg)
{
	unsigned long long rnd = 0xf00d + (uintptr_t)arg;
	for (unsigned int step = 1; step <= 60000 / SCALE; step++) {
		struct slot *s = &slots[test_rand(&rnd) % SLOTS];
		bool idle = false;
		if (!atomic_compare_exchange_strong(&s->busy, &idle, true))
			continue;               /* another thread's, for now */
		unsigned int tag = (unsigned int)((uintptr_t)arg << 24 | step);
		if (s->b.p)
			fuzz_free(&s->b, &rnd, tag);
		else
			fuzz_alloc(&s->b, &rnd, tag);
		if (step % 20000 == 0)
			za_malloc_trim(0);
		atomic_store(&s->busy, false);
	}
	return NULL;
}

static void test_api_fuzz(void)
{
	pthread_t t[FUZZ_THREADS];
	for (int i = 0; i < FUZZ_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, fuzz_thread, (void *)(uintptr_t)(i + 1)) == 0);
	for (int i = 0; i < FUZZ_THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(za_verify(mm) == 0);
	for (int i = 0; i < SLOTS; i++) {
		struct block *b = &slots[i].b;
		if (!b->p)
			continue;
		check(b->p, b->n, b->tag);
		za_free(b->p);
		*b = (struct block){ 0 };
	}
	za_malloc_trim(0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mallinfo2().hblks, 0);
}

/* ------------------------------------------------------------------------
 * The purge worker is a thread only while there is work: it starts when
 * memory goes back, and ends after three quiet rounds, with no thread
 * left behind; started again, it purges what the program freed.  Meanwhile
 * threads of the program come and go (their exits make it look whether
 * the program is gone: it is not, and the worker must stay).
 * ------------------------------------------------------------------------ */
/* Is a thread of this process named za-purge? */
static bool purge_worker_running(void)
{
	DIR *d = opendir("/proc/self/task");
	bool found = false;
	CHECK(d);
	for (struct dirent *e; (e = readdir(d)) && !found;) {
		char path[300], comm[32] = "";
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f))
			found = !strcmp(comm, "za-purge\n");
		if (f)
			fclose(f);
	}
	closedir(d);
	return found;
}

/* Waits up to 10 s for the worker to have ended. */
static bool purge_worker_ends(void)
{
	for (int ms = 0; ms < 10000; ms += 5) {
		if (!purge_worker_running())
			return true;
		usleep(5000);
	}
	return false;
}

/* A thread that writes and frees a block of 512 KiB (kept in its block
 * cache) and exits: its cache goes back to the page allocator. */
static void *short_lived(void *arg)
{
	(void)arg;
	unsigned char *p = za_malloc(512 << 10);
	CHECK(p);
	memset(p, 1, 512 << 10);
	za_free(p);
	for (int i = 0; i < 100; i++)
		za_free(za_malloc(100 + (size_t)i));
	return NULL;
}

static void test_purge_worker_lifecycle(void)
{
	za_malloc_trim(0);
	CHECK(purge_worker_ends());
	for (int round = 0; round < 3; round++) {
		long long purged = za_stat(mm, "pgpurge");
		for (int i = 0; i < 4; i++) {
			pthread_t t;
			CHECK(pthread_create(&t, NULL, short_lived, NULL) == 0);
			pthread_join(t, NULL);
		}
		/* Purged by a worker, which then ended. */
		for (int ms = 0; ms < 10000 && za_stat(mm, "pgpurge") - purged < 128; ms += 5)
			usleep(5000);
		CHECK(za_stat(mm, "pgpurge") - purged >= 128);
		CHECK(purge_worker_ends());
	}
	CHECK(za_verify(mm) == 0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "mapping_cache_races", test_mapping_cache_races },
		{ "api_fuzz", test_api_fuzz },
		{ "purge_worker_lifecycle", test_purge_worker_lifecycle },
	};
	char config[256];
	const char *outer = getenv("ZA_CONFIG");
	snprintf(config, sizeof(config), "%s%spurge_delay_ms=20,max_order=8,section_size=4M",
		 outer ? outer : "", outer ? "," : "");
	setenv("ZA_CONFIG", config, 1);
	CHECK((mm = za_malloc_system()));
	return run_test_cases("test_malloc_threads", argc, argv, cases,
			      sizeof(cases) / sizeof(cases[0]));
}
