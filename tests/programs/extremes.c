/*
 * Every allocation entry point at the edges: `extremes [section]`, run by
 * test_malloc_extremes.py without LD_PRELOAD (glibc: the expectations are
 * glibc 2.36's), under LD_PRELOAD=libzonealloc-malloc.so and under
 * ZA_CONFIG=debug=1.  Plain C library calls: the program does not know
 * zonealloc; the C23 sized frees and the C++ operators are found at run
 * time and skipped where the allocator in use has none.
 *
 * Sections: `calls` (the default) and `compat` check results and print
 * "extremes: N checks, M failed"; `rss` allocates and frees 200 MB in 1 MiB
 * blocks (`rss-small`: 4000 bytes) and waits for its RSS to fall.
 *
 * Expectations, per request: a size below 2^24 + 2 (and an alignment up to
 * 2^20) must succeed with a usable block aligned as asked; one of 2^48 or
 * more, an alignment of 2^62 or more, or a sum that overflows must fail
 * with ENOMEM; between, the machine decides (overcommit, memory), so either
 * a usable block or ENOMEM.  Bad alignments fail with EINVAL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int checks, failures;
static void *volatile sink;
static volatile size_t launder;

/* Values through a volatile, so that the compiler neither warns about
 * (nor folds) the impossible requests this program makes on purpose, nor
 * follows a pointer across a realloc that failed and kept it. */
static size_t V(size_t n)
{
	launder = n;
	return launder;
}

static void *opaque(void *p)
{
	sink = p;
	return sink;
}

/* Called through pointers: the headers declare these alloc_align, and the
 * compiler would assume (and warn about) the alignments this program
 * passes on purpose that are no power of two. */
static void *(*volatile memalign_v)(size_t, size_t) = memalign;
static void *(*volatile aligned_alloc_v)(size_t, size_t) = aligned_alloc;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failures++;
}

static void check(bool ok, const char *what, size_t a, size_t n)
{
	checks++;
	if (!ok)
		fail("%s (align %#zx, size %#zx)", what, a, n);
}

/* ------------------------------------------------------------------------
 * What a request must give
 * ------------------------------------------------------------------------ */
enum outcome { MUST_WORK, MAY_WORK, MUST_FAIL };

#define SURE_MAX   ((1UL << 24) + 1)    /* always there */
#define NEVER_MIN  (1UL << 48)          /* beyond any user address space */
#define WRITE_MAX  (1UL << 20)          /* written whole up to this */

static enum outcome outcome(size_t n, size_t align)
{
	if (n >= NEVER_MIN || align >= (1UL << 62))
		return MUST_FAIL;
	return n <= SURE_MAX && align <= (1UL << 20) ? MUST_WORK : MAY_WORK;
}

/* The smallest power of two >= a (1 for 0): the alignment glibc 2.36's
 * memalign gives for a <= 2^63. */
static size_t pow2_ceil(size_t a)
{
	size_t p = 1;
	while (p < a)
		p <<= 1;
	return p;
}

/*
 * Checks a result: p against what the request must give (errno ENOMEM on
 * failure), then uses a block: aligned, at least n usable bytes, written
 * whole when small, else at both ends.  Frees it unless keep; returns it.
 */
static void *judge(const char *fn, void *p, int err, size_t n, size_t align, enum outcome want,
		   bool keep)
{
	char what[96];
	if (!p) {
		snprintf(what, sizeof(what), "%s failed with errno %d, expected %s", fn, err,
			 want == MUST_WORK ? "a block" : "ENOMEM");
		check(want != MUST_WORK && err == ENOMEM, what, align, n);
		return NULL;
	}
	snprintf(what, sizeof(what), "%s returned a block, expected ENOMEM", fn);
	check(want != MUST_FAIL, what, align, n);
	snprintf(what, sizeof(what), "%s: misaligned %p", fn, p);
	check(!((uintptr_t)p & (align - 1)), what, align, n);
	snprintf(what, sizeof(what), "%s: malloc_usable_size below the size", fn);
	check(malloc_usable_size(p) >= n, what, align, n);
	if (n <= WRITE_MAX) {
		memset(p, 0xa5, n);
	} else {
		((volatile char *)p)[0] = 1;
		((volatile char *)p)[n - 1] = 1;
	}
	if (!keep)
		free(p);
	return p;
}

/* call's result judged, with the errno it left. */
#define ALLOC(fn, call, n, align, want, keep) ({                              \
	errno = 0;                                                            \
	void *p_ = (call);                                                    \
	int err_ = errno;                                                     \
	judge(fn, p_, err_, n, align, want, keep);                            \
})

/* True if call failed with NULL and errno err (a block it returns leaks). */
#define FAILS(call, err) ({                                                   \
	errno = 0;                                                            \
	void *p_ = (call);                                                    \
	!p_ && errno == (err);                                                \
})

/* ------------------------------------------------------------------------
 * The values
 * ------------------------------------------------------------------------ */
static size_t sizes[3 * 63 + 8];
static unsigned int nr_sizes;

static void make_sizes(void)
{
	sizes[nr_sizes++] = 0;
	sizes[nr_sizes++] = 1;
	for (unsigned int k = 1; k < 64; k++) {
		sizes[nr_sizes++] = (1UL << k) - 1;
		sizes[nr_sizes++] = 1UL << k;
		sizes[nr_sizes++] = (1UL << k) + 1;
	}
	sizes[nr_sizes++] = SIZE_MAX - 4096;
	sizes[nr_sizes++] = SIZE_MAX;
	/* SIZE_MAX / 2 and SIZE_MAX / 2 + 1 are 2^63 - 1 and 2^63: above. */
}

static const size_t aligns[] = {
	1, 2, 3, 8, 16, 48, 4096, 1UL << 20, 1UL << 40, 1UL << 62, 1UL << 63,
};
#define NR_ALIGNS (sizeof(aligns) / sizeof(aligns[0]))

/* Sizes tried with every alignment: small, around the classes and pages,
 * the page allocator's largest block, and the impossible. */
static const size_t aligned_sizes[] = {
	0, 1, 15, 16, 17, 100, 4095, 4096, 4097, 16384, 16385, (1UL << 20) + 1,
	(1UL << 24) - 1, (1UL << 24) + 1, 1UL << 40, SIZE_MAX / 2, SIZE_MAX / 2 + 1,
	SIZE_MAX - 4096, SIZE_MAX,
};
#define NR_ALIGNED_SIZES (sizeof(aligned_sizes) / sizeof(aligned_sizes[0]))

/* ------------------------------------------------------------------------
 * Each entry point
 * ------------------------------------------------------------------------ */
static void sizes_alone(void)
{
	for (unsigned int i = 0; i < nr_sizes; i++) {
		size_t n = sizes[i];
		enum outcome want = outcome(n, 16);
		ALLOC("malloc", malloc(n), n, 16, want, false);
		ALLOC("realloc(NULL)", realloc(NULL, n), n, 16, want, false);
		ALLOC("reallocarray(NULL, n, 1)", reallocarray(NULL, n, 1), n, 16, want, false);
		ALLOC("valloc", valloc(n), n, 4096, outcome(n, 4096), false);
		/* pvalloc rounds n up to pages: past SIZE_MAX that is ENOMEM. */
		size_t rounded = n > SIZE_MAX - 4095 ? SIZE_MAX : (n + 4095) & ~4095UL;
		ALLOC("pvalloc", pvalloc(n), n ? rounded : 0, 4096, outcome(rounded, 4096), false);
		/* calloc zeroes: only where that is cheap (a zeroing allocator
		 * may touch every page). */
		if (n <= SURE_MAX || n >= NEVER_MIN) {
			errno = 0;
			volatile char *p = calloc(n, 1);
			int err = errno;
			if (p && n)
				check(!p[0] && !p[n <= WRITE_MAX ? n - 1 : n / 2], "calloc: not zeroed",
				      16, n);
			judge("calloc(n, 1)", (void *)p, err, n, 16, want, false);
			ALLOC("calloc(1, n)", calloc(1, n), n, 16, want, false);
		}
	}
}

/* Growing and shrinking through every size keeps the contents; a failed
 * realloc leaves the block as it was. */
static void realloc_chain(void)
{
	unsigned char *p = malloc(1), *q;
	size_t have = 1;
	p[0] = 0x5a;
	for (unsigned int i = 0; i < nr_sizes; i++) {
		size_t n = sizes[i], keep = n < have ? n : have, check_len = keep < 64 ? keep : 64;
		if (!n)
			continue;
		errno = 0;
		q = realloc(opaque(p), n);
		if (!q) {
			p = opaque(p);
			check(outcome(n, 16) != MUST_WORK && errno == ENOMEM,
			      "realloc failed where it must not, or without ENOMEM", 16, n);
			for (size_t j = 0; j < (have < 64 ? have : 64); j++)
				check(p[j] == (unsigned char)(0x5a + j), "failed realloc changed the block",
				      16, n);
			continue;
		}
		check(outcome(n, 16) != MUST_FAIL, "realloc returned a block, expected ENOMEM", 16, n);
		for (size_t j = 0; j < check_len; j++)
			if (q[j] != (unsigned char)(0x5a + j)) {
				check(false, "realloc lost the contents", 16, n);
				break;
			}
		p = q;
		have = n;
		size_t fill = have < 64 ? have : 64;
		for (size_t j = 0; j < fill; j++)
			p[j] = (unsigned char)(0x5a + j);
		/* Back to small, so that the next step copies little. */
		if (have > 4096) {
			q = realloc(p, 64);
			check(q != NULL, "realloc shrinking to 64 bytes failed", 16, have);
			if (q)
				p = q, have = 64;
		}
	}
	errno = 0;
	q = reallocarray(opaque(p), V(SIZE_MAX / 2), 3);
	check(!q && errno == ENOMEM, "reallocarray overflow: expected ENOMEM", 16, SIZE_MAX);
	p = opaque(p);
	check(p[0] == 0x5a, "failed reallocarray changed the block", 16, SIZE_MAX);
	free(p);
}

static void with_alignments(void)
{
	for (unsigned int i = 0; i < NR_ALIGNS; i++) {
		size_t a = aligns[i], real = pow2_ceil(a);
		bool posix_ok = !(a & (a - 1)) && a >= sizeof(void *);
		for (unsigned int j = 0; j < NR_ALIGNED_SIZES; j++) {
			size_t n = aligned_sizes[j];
			enum outcome want = outcome(n, real);
			ALLOC("memalign", memalign_v(a, n), n, real, want, false);
			ALLOC("aligned_alloc", aligned_alloc_v(a, n), n, real, want, false);
			void *p = (void *)&sink;
			errno = 0;
			int r = posix_memalign(&p, a, n);
			if (!posix_ok) {
				check(r == EINVAL && p == (void *)&sink && !errno,
				      "posix_memalign: expected EINVAL, *out and errno untouched", a, n);
			} else if (r) {
				check(r == ENOMEM && want != MUST_WORK && p == (void *)&sink,
				      "posix_memalign failed where it must not, or not with ENOMEM", a, n);
			} else {
				judge("posix_memalign", p, 0, n, a, want, false);
			}
		}
	}
}

/* Alignments that are not powers of two (glibc 2.36 rounds them up), and
 * those no power of two can be. */
static void odd_alignments(void)
{
	static const size_t odd[] = { 0, 3, 5, 24, 48, 100, 4097, (1UL << 20) + 1 };
	static const size_t bad[] = { (1UL << 63) + 1, SIZE_MAX - 4096, SIZE_MAX };
	for (unsigned int i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		size_t a = odd[i], real = pow2_ceil(a);
		ALLOC("memalign (odd alignment)", memalign_v(a, 100), 100, real, MUST_WORK, false);
		ALLOC("aligned_alloc (odd alignment)", aligned_alloc_v(a, 100), 100, real, MUST_WORK, false);
		void *p = (void *)&sink;
		errno = 0;
		check(posix_memalign(&p, a, 100) == EINVAL && p == (void *)&sink && !errno,
		      "posix_memalign (odd alignment): expected EINVAL", a, 100);
	}
	/* 2^62 + 1 rounds up to 2^63: a power of two no mapping can reach. */
	check(FAILS(memalign_v((1UL << 62) + 1, 100), ENOMEM), "memalign(2^62 + 1): expected ENOMEM",
	      (1UL << 62) + 1, 100);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t a = bad[i];
		check(FAILS(memalign_v(a, 100), EINVAL), "memalign: expected EINVAL", a, 100);
		check(FAILS(aligned_alloc_v(a, 100), EINVAL), "aligned_alloc: expected EINVAL", a, 100);
		void *p = (void *)&sink;
		errno = 0;
		check(posix_memalign(&p, a, 100) == EINVAL && p == (void *)&sink && !errno,
		      "posix_memalign: expected EINVAL", a, 100);
	}
}

static void calloc_products(void)
{
	static const size_t over[][2] = {
		{ SIZE_MAX, 2 }, { 2, SIZE_MAX }, { 1UL << 32, 1UL << 32 }, { SIZE_MAX / 2 + 1, 2 },
		{ SIZE_MAX, SIZE_MAX }, { (1UL << 32) + 1, (1UL << 32) - 1 },
	};
	for (unsigned int i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		check(FAILS(calloc(over[i][0], over[i][1]), ENOMEM), "calloc overflow: expected ENOMEM",
		      over[i][0], over[i][1]);
		check(FAILS(reallocarray(NULL, over[i][0], over[i][1]), ENOMEM),
		      "reallocarray overflow: expected ENOMEM", over[i][0], over[i][1]);
	}
	/* A product of 0 is malloc(0), whatever the other factor. */
	ALLOC("calloc(0, SIZE_MAX)", calloc(0, V(SIZE_MAX)), 0, 16, MUST_WORK, false);
	ALLOC("calloc(SIZE_MAX, 0)", calloc(V(SIZE_MAX), 0), 0, 16, MUST_WORK, false);
	/* A product just under the limit of the sure sizes, zeroed. */
	unsigned char *z = calloc(4097, 4095);
	check(z != NULL, "calloc(4097, 4095) failed", 16, 4097 * 4095);
	if (z) {
		size_t nonzero = 0;
		for (size_t i = 0; i < 4097 * 4095; i++)
			nonzero += z[i] != 0;
		check(!nonzero, "calloc(4097, 4095): not zeroed", 16, 4097 * 4095);
		free(z);
	}
}

/* ------------------------------------------------------------------------
 * C23's sized frees and the C++ operators, when the allocator has them
 * ------------------------------------------------------------------------ */
static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static void sized_frees(void)
{
	void (*free_sized)(void *, size_t) = (void (*)(void *, size_t))sym("free_sized");
	void (*free_aligned_sized)(void *, size_t, size_t) =
		(void (*)(void *, size_t, size_t))sym("free_aligned_sized");
	if (!free_sized || !free_aligned_sized) {
		printf("skip: free_sized and free_aligned_sized (not in this C library)\n");
		return;
	}
	free_sized(NULL, 0);
	free_sized(NULL, SIZE_MAX);
	free_aligned_sized(NULL, 1UL << 63, SIZE_MAX);
	for (unsigned int j = 0; j < NR_ALIGNED_SIZES; j++) {
		size_t n = aligned_sizes[j];
		if (outcome(n, 16) != MUST_WORK)
			continue;
		void *p = ALLOC("malloc (for free_sized)", malloc(n), n, 16, MUST_WORK, true);
		free_sized(p, n);
		for (unsigned int i = 0; i < NR_ALIGNS; i++) {
			size_t a = aligns[i];
			if ((a & (a - 1)) || outcome(n, a) != MUST_WORK)
				continue;
			p = ALLOC("aligned_alloc (for free_aligned_sized)", aligned_alloc_v(a, n), n, a,
				  MUST_WORK, true);
			free_aligned_sized(p, a, n);
		}
	}
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_nothrow_fn)(size_t, const void *);
typedef void *(*new_aligned_fn)(size_t, size_t);
typedef void *(*new_aligned_nothrow_fn)(size_t, size_t, const void *);
typedef void (*delete_fn)(void *);
typedef void (*delete_sized_fn)(void *, size_t);
typedef void (*delete_aligned_fn)(void *, size_t);
typedef void (*delete_sized_aligned_fn)(void *, size_t, size_t);

static void cxx_operators(void)
{
	new_fn nw = (new_fn)sym("_Znwm"), na = (new_fn)sym("_Znam");
	new_nothrow_fn nw_nt = (new_nothrow_fn)sym("_ZnwmRKSt9nothrow_t");
	new_nothrow_fn na_nt = (new_nothrow_fn)sym("_ZnamRKSt9nothrow_t");
	new_aligned_fn nw_al = (new_aligned_fn)sym("_ZnwmSt11align_val_t");
	new_aligned_nothrow_fn nw_al_nt, na_al_nt;
	nw_al_nt = (new_aligned_nothrow_fn)sym("_ZnwmSt11align_val_tRKSt9nothrow_t");
	na_al_nt = (new_aligned_nothrow_fn)sym("_ZnamSt11align_val_tRKSt9nothrow_t");
	delete_fn dl = (delete_fn)sym("_ZdlPv"), da = (delete_fn)sym("_ZdaPv");
	delete_sized_fn dl_s = (delete_sized_fn)sym("_ZdlPvm");
	delete_aligned_fn dl_al = (delete_aligned_fn)sym("_ZdlPvSt11align_val_t");
	delete_sized_aligned_fn dl_s_al = (delete_sized_aligned_fn)sym("_ZdlPvmSt11align_val_t");
	delete_sized_aligned_fn da_s_al = (delete_sized_aligned_fn)sym("_ZdaPvmSt11align_val_t");
	if (!nw || !na || !nw_nt || !na_nt || !nw_al || !nw_al_nt || !na_al_nt || !dl || !da || !dl_s ||
	    !dl_al || !dl_s_al || !da_s_al) {
		printf("skip: the C++ operators (no C++ runtime loaded)\n");
		return;
	}
	char nothrow;           /* std::nothrow_t is empty: any address does */
	/* The throwing forms only where they must succeed: a failure would
	 * throw, and this program has no C++ runtime to catch it. */
	for (unsigned int j = 0; j < NR_ALIGNED_SIZES; j++) {
		size_t n = aligned_sizes[j];
		enum outcome want = outcome(n, 16);
		void *p = ALLOC("new nothrow", nw_nt(n, &nothrow), n, 16, want, true);
		dl(p);
		p = ALLOC("new[] nothrow", na_nt(n, &nothrow), n, 16, want, true);
		da(p);
		if (want == MUST_WORK) {
			p = ALLOC("new", nw(n), n, 16, want, true);
			dl_s(p, n);
			p = ALLOC("new[]", na(n), n, 16, want, true);
			da(p);
		}
		for (unsigned int i = 0; i < NR_ALIGNS; i++) {
			size_t a = aligns[i];
			if (a & (a - 1))
				continue;       /* not a valid align_val_t */
			want = outcome(n, a);
			p = ALLOC("aligned new nothrow", nw_al_nt(n, a, &nothrow), n, a, want, true);
			if (p)
				dl_al(p, a);
			p = ALLOC("aligned new[] nothrow", na_al_nt(n, a, &nothrow), n, a, want, true);
			if (p)
				da_s_al(p, n, a);
			if (want == MUST_WORK) {
				p = ALLOC("aligned new", nw_al(n, a), n, a, want, true);
				dl_s_al(p, n, a);
			}
		}
	}
	dl(NULL);
	dl_s(NULL, SIZE_MAX);
	dl_al(NULL, 1UL << 63);
}

/* ------------------------------------------------------------------------
 * What programs rely on: glibc 2.36's answers
 * ------------------------------------------------------------------------ */
static void compat(void)
{
	void *p, *q;
	/* Non-power-of-two alignments are rounded up, aligned_alloc too. */
	static const size_t odd[][2] = { { 3, 4 }, { 48, 64 }, { 100, 128 }, { 0, 1 } };
	for (unsigned int i = 0; i < 4; i++) {
		ALLOC("memalign", memalign_v(odd[i][0], 100), 100, odd[i][1], MUST_WORK, false);
		ALLOC("aligned_alloc", aligned_alloc_v(odd[i][0], 100), 100, odd[i][1], MUST_WORK, false);
	}
	/* Alignments beyond SIZE_MAX / 2: EINVAL if no power of two, else ENOMEM. */
	check(FAILS(memalign_v(SIZE_MAX / 2 + 2, 100), EINVAL), "memalign: EINVAL", SIZE_MAX / 2 + 2, 100);
	check(FAILS(memalign_v(SIZE_MAX / 2 + 1, 100), ENOMEM), "memalign: ENOMEM", SIZE_MAX / 2 + 1, 100);
	check(FAILS(aligned_alloc_v(SIZE_MAX, 100), EINVAL), "aligned_alloc: EINVAL", SIZE_MAX, 100);
	p = NULL;
	check(posix_memalign(&p, 1UL << 63, 100) == ENOMEM && !p, "posix_memalign(2^63): ENOMEM",
	      1UL << 63, 100);
	static const size_t bad[] = { 0, 1, 2, 3, 4, 12, 48, 100, SIZE_MAX };
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = NULL;
		errno = 0;
		check(posix_memalign(&p, bad[i], 100) == EINVAL && !p && !errno,
		      "posix_memalign: EINVAL, *out and errno untouched", bad[i], 100);
	}
	/* posix_memalign's success leaves errno alone. */
	errno = 1234;
	check(!posix_memalign(&p, 64, 100) && errno == 1234, "posix_memalign: errno changed", 64, 100);
	free(p);
	/* Zero sizes: a block each, distinct. */
	ALLOC("valloc(0)", valloc(0), 0, 4096, MUST_WORK, false);
	ALLOC("pvalloc(0)", pvalloc(0), 0, 4096, MUST_WORK, false);
	p = malloc(0);
	q = malloc(0);
	check(p && q && p != q, "malloc(0): two distinct blocks", 16, 0);
	free(p);
	free(q);
	ALLOC("realloc(NULL, 0)", realloc(NULL, 0), 0, 16, MUST_WORK, false);
	/* realloc(p, 0) frees p and returns NULL, errno untouched. */
	static const size_t frees[] = { 1, 100, 100000, 20 << 20 };
	for (unsigned int i = 0; i < 4; i++) {
		p = malloc(frees[i]);
		errno = 0;
		check(!realloc(p, 0) && !errno, "realloc(p, 0): NULL, errno untouched", 16, frees[i]);
		p = malloc(frees[i]);
		errno = 0;
		check(!reallocarray(p, 0, 5) && !errno, "reallocarray(p, 0, 5): NULL, errno untouched",
		      16, frees[i]);
		/* free keeps errno (POSIX.1-2024), glibc since 2.33. */
		p = malloc(frees[i]);
		errno = 1234;
		free(p);
		check(errno == 1234, "free changed errno", 16, frees[i]);
	}
	/* The impossible: NULL and ENOMEM, the block untouched. */
	check(FAILS(malloc(V(SIZE_MAX)), ENOMEM), "malloc(SIZE_MAX): ENOMEM", 16, SIZE_MAX);
	check(FAILS(calloc(V(SIZE_MAX), 2), ENOMEM), "calloc overflow: ENOMEM", 16, SIZE_MAX);
	p = malloc(10);
	strcpy(p, "kept");
	check(FAILS(realloc(opaque(p), V(SIZE_MAX)), ENOMEM) && !strcmp(opaque(p), "kept"),
	      "realloc(p, SIZE_MAX): NULL, ENOMEM, p kept", 16, SIZE_MAX);
	free(p);
	errno = 0;
	check(malloc_usable_size(NULL) == 0 && !errno, "malloc_usable_size(NULL): 0", 0, 0);
	errno = 0;
	free(NULL);
	check(!errno, "free(NULL) set errno", 0, 0);
}

/* ------------------------------------------------------------------------
 * Memory given back
 * ------------------------------------------------------------------------ */
#define MIB (1UL << 20)

static size_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* count blocks of size bytes, written, then freed. */
static size_t churn_once(size_t count, size_t size)
{
	static char *blocks[64 << 10];
	size_t peak;
	for (size_t i = 0; i < count; i++) {
		blocks[i] = malloc(size);
		if (!blocks[i]) {
			fail("malloc(%zu) failed in round", size);
			return 0;
		}
		memset(blocks[i], (int)i, size);
	}
	peak = rss_bytes();
	for (size_t i = 0; i < count; i++)
		free(blocks[i]);
	return peak;
}

/* The RSS falls back after 200 MB in blocks of size bytes are freed:
 * within a few purge delays. */
static int rss(size_t size)
{
	size_t peak = churn_once(200 * MIB / size, size), rss = peak;
	double start = now();
	printf("rss: %zu MB after allocating 200 MB\n", peak / MIB);
	if (peak < 150 * MIB) {
		printf("FAIL: the allocations were not resident\n");
		return 1;
	}
	/* The purge delay is 1 s and the worker purges blocks free for two
	 * of its rounds: expect it by 2.5 s, allow twice that on a busy
	 * machine (this asserts the fall, not its speed). */
	while (now() - start < 5.0 && (rss = rss_bytes()) >= 60 * MIB)
		usleep(100 * 1000);
	printf("rss: %zu MB %.1f s after the frees\n", rss / MIB, now() - start);
	if (rss >= 60 * MIB) {
		printf("FAIL: RSS still %zu MB\n", rss / MIB);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *section = argc > 1 ? argv[1] : "calls";
	setvbuf(stdout, NULL, _IONBF, 0);
	/* Which malloc this is, for the script to check that the preload took. */
	printf("allocator: %s\n", sym("za_malloc_system") ? "zonealloc" : "other");
	make_sizes();
	if (!strcmp(section, "rss"))
		return rss(MIB);
	if (!strcmp(section, "rss-small"))
		return rss(4000);
	if (!strcmp(section, "compat")) {
		compat();
	} else if (!strcmp(section, "calls")) {
		sizes_alone();
		realloc_chain();
		with_alignments();
		odd_alignments();
		calloc_products();
		sized_frees();
		cxx_operators();
	} else {
		fprintf(stderr, "usage: extremes [calls|compat|rss|churn]\n");
		return 2;
	}
	printf("extremes: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
