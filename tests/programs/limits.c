/*
 * The malloc must not say no while the machine (or the limit it runs
 * under) has memory: `limits <case> [args]`, one case per run, one result
 * line on stdout (MiB), exit 0 on success, 1 when malloc returned NULL
 * where it should not, 2 on bad usage.  Run by test_malloc_limits.py under
 * the C library's malloc and under LD_PRELOAD=libzonealloc-malloc.so.
 * Plain C library calls: the program does not know zonealloc.
 *
 *   frag LO HI BIG [SLEEP_S]  200 MiB of LO..HI-byte objects, freed in
 *                             random order, a sleep, then BIG-byte blocks
 *                             up to 200 MiB: "ok 200" or "null-after N"
 *   shift                     phases of small, medium and large objects,
 *                             part of each kept, then 3.5 MiB blocks
 *   soak N                    N random malloc/free/realloc, 16 B..4 MiB
 *   fill SIZE                 SIZE-byte blocks until NULL: "got N" (exit 0)
 *   one SIZE                  one malloc(SIZE): "ok" or "null"
 *   big-churn SIZE ROUNDS     one SIZE-byte block after another, each freed
 *   cgroup-churn ROUNDS       200 MiB in touched 1 and 32 MiB blocks, freed, a
 *                             2 s sleep, ROUNDS times
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MiB (1024 * 1024)
#define PAGE 4096

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* xorshift64*: the same sequence whatever the C library. */
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static size_t rnd_range(size_t lo, size_t hi)
{
	return lo + (size_t)(rnd() % (hi - lo + 1));
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* One byte per page (and the last): the memory is really used. */
static void touch(char *p, size_t n)
{
	for (size_t i = 0; i < n; i += PAGE)
		p[i] = 1;
	p[n - 1] = 1;
}

/* Pointer arrays come from mmap, not malloc: only the objects are measured. */
static void **table(size_t n)
{
	void *t = mmap(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED) {
		perror("mmap");
		exit(3);
	}
	return t;
}

static void shuffle(void **v, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(rnd() % i);
		void *t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* BIG-byte blocks, touched, until `total` bytes are held: the MiB held when
 * malloc said no, or -1 when it never did.  The blocks are freed. */
static long hold(size_t big, size_t total)
{
	size_t n = (total + big - 1) / big, i;
	void **v = table(n);
	long got = -1;
	for (i = 0; i < n; i++) {
		if (!(v[i] = malloc(big))) {
			got = (long)(i * big / MiB);
			break;
		}
		touch(v[i], big);
	}
	while (i--)
		free(v[i]);
	munmap(v, n * sizeof(void *));
	return got;
}

static int frag(size_t lo, size_t hi, size_t big, double sleep)
{
	const size_t total = 200 * MiB;
	size_t n = 0, bytes = 0;
	void **v = table(total / lo + 1);
	while (bytes < total) {
		size_t size = rnd_range(lo, hi);
		if (!(v[n] = malloc(size))) {
			printf("null-small %zu\n", bytes / MiB);
			return 1;
		}
		memset(v[n++], 0x5a, size);
		bytes += size;
	}
	shuffle(v, n);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	sleep_s(sleep);
	long got = hold(big, total);
	if (got >= 0) {
		printf("null-after %ld\n", got);
		return 1;
	}
	printf("ok %zu\n", total / MiB);
	return 0;
}

/*
 * A shifting size mix: rounds of three phases (small 16..1023, medium
 * 1..64 KiB, large 1..4 MiB), each allocating 64 MiB and keeping one
 * object in eight; after each round half of what was kept is freed.  The
 * live set stays under ~120 MiB (a phase's 64 MiB included); at the end
 * come 3.5 MiB blocks.
 */
static int shift(void)
{
	static const size_t sizes[3][2] = {
		{ 16, 1023 }, { 1024, 64 * 1024 }, { MiB, 4 * MiB },
	};
	const size_t phase_bytes = 64 * MiB, big = 3 * MiB + MiB / 2;
	size_t nkept = 0, live = 0, *kept_size;
	void **kept = table(1 << 20), **v = table(phase_bytes / 16 + 1);

	kept_size = (size_t *)table(1 << 20);
	for (int round = 0; round < 6; round++) {
		for (int ph = 0; ph < 3; ph++) {
			size_t n = 0, bytes = 0;
			while (bytes < phase_bytes) {
				size_t size = rnd_range(sizes[ph][0], sizes[ph][1]);
				if (!(v[n] = malloc(size))) {
					printf("null %zu (round %d phase %d, live %zu MiB)\n",
					       size, round, ph, live / MiB);
					return 1;
				}
				touch(v[n], size);
				if (rnd() % 8 == 0) {
					kept_size[nkept] = size;
					kept[nkept++] = v[n];
					live += size;
				} else {
					n++;
				}
				bytes += size;
			}
			shuffle(v, n);
			for (size_t i = 0; i < n; i++)
				free(v[i]);
		}
		/* Half the kept objects go: the mix shifts under them. */
		size_t j = 0;
		for (size_t i = 0; i < nkept; i++) {
			if (rnd() % 2) {
				free(kept[i]);
				live -= kept_size[i];
			} else {
				kept_size[j] = kept_size[i];
				kept[j++] = kept[i];
			}
		}
		nkept = j;
	}
	long got = hold(big, 32 * big);
	if (got >= 0) {
		printf("null %zu (3.5 MiB blocks after %ld MiB, live %zu MiB)\n", big, got, live / MiB);
		return 1;
	}
	printf("ok %zu\n", 32 * big / MiB);
	return 0;
}

/* 16 B .. 4 MiB, skewed to small: 90% up to 1 KiB, 9% to 64 KiB, 0.9% to
 * 1 MiB, 0.1% to 4 MiB. */
static size_t soak_size(void)
{
	uint64_t r = rnd() % 1000;
	if (r < 900)
		return rnd_range(16, 1024);
	if (r < 990)
		return rnd_range(1025, 64 * 1024);
	if (r < 999)
		return rnd_range(64 * 1024 + 1, MiB);
	return rnd_range(MiB + 1, 4 * MiB);
}

/* The first and last bytes carry a tag that must survive realloc. */
static void tag(char *p, size_t size, char t)
{
	p[0] = t;
	p[size - 1] = t;
}

static int soak(long nops)
{
	enum { SLOTS = 1 << 15 };
	const size_t max_live = 200 * MiB;
	static char *p[SLOTS];
	static size_t sz[SLOTS];
	size_t live = 0, peak = 0;

	for (long op = 0; op < nops; op++) {
		size_t i = (size_t)(rnd() % SLOTS), size = soak_size();
		char t = (char)(i | 1);
		if (!p[i]) {
			if (live + size > max_live)
				continue;
			if (!(p[i] = malloc(size))) {
				printf("null %zu (op %ld, live %zu MiB)\n", size, op, live / MiB);
				return 1;
			}
			tag(p[i], size, t);
		} else if (rnd() % 2 || live - sz[i] + size > max_live) {
			free(p[i]);
			p[i] = NULL;
			live -= sz[i];
			continue;
		} else {
			char *q = realloc(p[i], size);
			if (!q) {
				printf("null %zu (realloc, op %ld, live %zu MiB)\n", size, op, live / MiB);
				return 1;
			}
			if (q[0] != t || (size >= sz[i] && q[sz[i] - 1] != t)) {
				printf("corrupt (realloc, op %ld)\n", op);
				return 1;
			}
			p[i] = q;
			live -= sz[i];
			tag(q, size, t);
		}
		sz[i] = size;
		live += size;
		if (live > peak)
			peak = live;
	}
	for (size_t i = 0; i < SLOTS; i++)
		free(p[i]);
	printf("ok %ld (peak live %zu MiB)\n", nops, peak / MiB);
	return 0;
}

/* Under ulimit -v: how much a program gets in SIZE-byte blocks. */
static int fill(size_t size)
{
	size_t n = 0;
	char *p;
	while ((p = malloc(size))) {
		touch(p, size);
		n++;
	}
	printf("got %zu\n", n * size / MiB);
	return 0;
}

static int one(size_t size)
{
	char *p = malloc(size);
	if (!p) {
		printf("null\n");
		return 1;
	}
	memset(p, 1, size < PAGE ? size : PAGE);
	free(p);
	printf("ok\n");
	return 0;
}

/* Under a memory cgroup's limit: freed memory must leave the RSS, from
 * page blocks (1 MiB) and direct mappings (32 MiB) alike. */
static int cgroup_churn(int rounds)
{
	enum { N = 138 };
	void **v = table(N);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < N; i++) {
			size_t size = i < N - 2 ? MiB : 32 * MiB;
			if (!(v[i] = malloc(size))) {
				printf("null (round %d, block %d)\n", r, i);
				return 1;
			}
			memset(v[i], r + 1, size);
		}
		for (int i = 0; i < N; i++)
			free(v[i]);
		sleep_s(2);
	}
	printf("ok %d\n", rounds);
	return 0;
}

/* One block of size after another, each freed before the next: under an
 * address-space limit, freed memory must become available again (debug
 * mode's quarantine too). */
static int big_churn(size_t size, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		char *p = malloc(size);
		if (!p) {
			printf("null (round %d)\n", r);
			return 1;
		}
		memset(p, 1, PAGE);
		free(p);
	}
	printf("ok %d\n", rounds);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: limits frag LO HI BIG [SLEEP_S] | shift | soak N | fill SIZE"
			" | one SIZE | cgroup-churn ROUNDS | big-churn SIZE ROUNDS\n");
	return 2;
}

static size_t num(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (*end || !v) {
		usage();
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);       /* no stdio buffer to allocate */
	if (!strcmp(c, "frag") && (argc == 5 || argc == 6)) {
		size_t lo = num(argv[2]), hi = num(argv[3]);
		if (hi < lo)
			return usage();
		return frag(lo, hi, num(argv[4]), argc == 6 ? strtod(argv[5], NULL) : 2.0);
	}
	if (!strcmp(c, "shift") && argc == 2)
		return shift();
	if (!strcmp(c, "soak") && argc == 3)
		return soak((long)num(argv[2]));
	if (!strcmp(c, "fill") && argc == 3)
		return fill(num(argv[2]));
	if (!strcmp(c, "one") && argc == 3)
		return one(num(argv[2]));
	if (!strcmp(c, "cgroup-churn") && argc == 3)
		return cgroup_churn((int)num(argv[2]));
	if (!strcmp(c, "big-churn") && argc == 4)
		return big_churn(num(argv[2]), (int)num(argv[3]));
	return usage();
}
