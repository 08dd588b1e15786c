/*
 * A minimal test harness: CHECK macros that print the failing expression
 * with its values and exit non-zero, and helpers shared by the tests.
 */
#ifndef ZA_TEST_H
#define ZA_TEST_H

#include "zonealloc.h"
#include "../src/sanitizers.h"     /* ZA_TSAN, ZA_ASAN */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The case run_test_cases() is running, if any: failures name it. */
static const char *running_case __attribute__((unused));

/* Ends the test: "file:line: " and the message on stderr, then the running
 * case's name, and exit status 1. */
static inline __attribute__((noreturn, format(printf, 3, 4))) void
check_failed(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (running_case)
		fprintf(stderr, " (case %s)", running_case);
	fprintf(stderr, "\n");
	exit(1);
}

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond))                                                     \
			check_failed(__FILE__, __LINE__, "CHECK failed: %s", #cond); \
	} while (0)

#define CHECK_EQ(a, b)                                                              \
	do {                                                                        \
		long long a_ = (long long)(a), b_ = (long long)(b);                 \
		if (a_ != b_)                                                       \
			check_failed(__FILE__, __LINE__,                            \
				     "CHECK_EQ failed: %s == %s (%lld vs %lld)", #a, #b, a_, b_); \
	} while (0)

#define CHECK_STR_HAS(s, sub)                                                       \
	do {                                                                        \
		const char *s_ = (s);                                               \
		if (!s_ || !strstr(s_, (sub)))                                      \
			check_failed(__FILE__, __LINE__, "'%s' does not contain '%s'", \
				     s_ ? s_ : "(null)", (sub));                    \
	} while (0)

/* Creates a system or fails the test with the library's message. */
static inline za_mm_t *test_mm(const char *config)
{
	za_mm_t *mm = za_mm_create(config);
	if (!mm) {
		fprintf(stderr, "za_mm_create(\"%s\"): %s\n", config, za_last_error());
		exit(1);
	}
	return mm;
}

/* Collects run-time error reports instead of printing them. */
struct captured {
	int count;
	char last[256];
};

static inline void capture_error(const char *msg, void *ctx)
{
	struct captured *c = ctx;
	c->count++;
	snprintf(c->last, sizeof(c->last), "%s", msg);
}

/*
 * Every page accounted for, exactly: free + per-CPU + what the test holds =
 * total.  Only at a quiescent point: no thread of the test allocating or
 * freeing, and nothing kswapd could reclaim (it never touches the per-CPU
 * lists, and frees only page cache, slab and quicklist pages).
 */
static inline void check_accounting(za_mm_t *mm, long held_pages)
{
	long long total = za_stat(mm, "nr_managed_pages");
	long long free_pages = za_stat(mm, "nr_free_pages");
	long long pcp = za_stat(mm, "nr_pcp_pages");
	if (free_pages + pcp + held_pages != total) {
		fprintf(stderr, "accounting: free %lld + pcp %lld + held %ld != total %lld\n",
			free_pages, pcp, held_pages, total);
		exit(1);
	}
	CHECK(za_verify(mm) == 0);
}

/* After freeing everything and draining: every zone is whole max-order blocks. */
static inline void check_fully_coalesced(za_mm_t *mm, unsigned int max_order)
{
	char name[64];
	za_drain_all_pages(mm);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), 0);
	CHECK_EQ(za_stat(mm, "nr_free_pages"), za_stat(mm, "nr_managed_pages"));
	snprintf(name, sizeof(name), "nr_free_blocks_order%u", max_order);
	CHECK_EQ(za_stat(mm, name) << max_order, za_stat(mm, "nr_managed_pages"));
}

/* Pages of [p, p + len) mapped in the process (resident), len at most
 * 16 MiB. */
static inline long resident_pages(const void *p, size_t len)
{
	unsigned char vec[4096];
	long n = 0;
	CHECK(len <= sizeof(vec) * 4096);
	CHECK(mincore((void *)p, len, vec) == 0);
	for (size_t i = 0; i < (len + 4095) / 4096; i++)
		n += vec[i] & 1;
	return n;
}

/* xorshift64*: a fast reproducible generator for tests. */
static inline unsigned long long test_rand(unsigned long long *state)
{
	unsigned long long x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Runs the cases named on the command line (in the table's order), or all
 * of them, with a line "program: case ok" after each; an unknown name is an
 * error that lists the known ones. */
struct test_case {
	const char *name;
	void (*run)(void);
};

static inline int run_test_cases(const char *program, int argc, char **argv,
				 const struct test_case *cases, size_t n)
{
	for (int a = 1; a < argc; a++) {
		size_t i = 0;
		while (i < n && strcmp(cases[i].name, argv[a]))
			i++;
		if (i == n) {
			fprintf(stderr, "%s: no case '%s'; the cases are:", program, argv[a]);
			for (i = 0; i < n; i++)
				fprintf(stderr, " %s", cases[i].name);
			fprintf(stderr, "\n");
			return 2;
		}
	}
	for (size_t i = 0; i < n; i++) {
		bool named = argc < 2;
		for (int a = 1; a < argc && !named; a++)
			named = !strcmp(cases[i].name, argv[a]);
		if (named) {
			running_case = cases[i].name;
			cases[i].run();
			running_case = NULL;
			printf("%s: %s ok\n", program, cases[i].name);
			fflush(stdout);         /* there even if a later case crashes */
		}
	}
	return 0;
}

#endif
