/*
 * pgtable (E5, seed 004): page-table pages.  A "process" builds a sparse
 * four-level tree -- a pgd, then a pud, pmd and pte page per region it maps
 * -- writes a few entries into each, then tears it down, clearing what it
 * wrote so every page goes back clean, as fork/exit-heavy loads do.  pgd
 * pages have a constructor that copies a template of "kernel mappings"
 * into their upper half.  Lists: 0 for pgds (constructed), 1 for the other
 * levels (zeroed).  Every allocation is timed with the cycle counter.
 *
 * Metrics: <level>_avg_ns, _min_ns, _max_ns for pgd, pud, pmd, pte.
 * ops = page-table pages allocated.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 512
#define REGIONS 4
#define LEVELS 4

enum { PGD, PUD, PMD, PTE };
static const char *const level_name[LEVELS] = { "pgd", "pud", "pmd", "pte" };
static uint64_t kernel_template[ENTRIES / 2];

struct level_stat {
	long long count;
	double total_ns, min_ns, max_ns;
};

struct pt_state {
	za_mm_t *mm;
	double ns_per_cycle;
	double timer_ns;                /* cost of the timing itself, subtracted */
	struct level_stat lvl[LEVELS];
	int m_avg[LEVELS], m_min[LEVELS], m_max[LEVELS];
	/* For the table: per variant, accumulated over the measured iterations. */
	struct level_stat total[MAX_VARIANTS][LEVELS];
	long long hits[MAX_VARIANTS], misses[MAX_VARIANTS], zeroed[MAX_VARIANTS];
};

static void pgd_ctor(void *p)
{
	memcpy((uint64_t *)p + ENTRIES / 2, kernel_template, sizeof(kernel_template));
}

static inline uint64_t cycles(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return (uint64_t)(now_seconds() * 1e9);
#endif
}

static void calibrate(struct pt_state *st)
{
	double t0 = now_seconds();
	uint64_t c0 = cycles();
	while (now_seconds() - t0 < 0.01)
		;
	st->ns_per_cycle = (now_seconds() - t0) * 1e9 / (double)(cycles() - c0);
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 1000; i++) {
		uint64_t a = cycles(), b = cycles();
		if (b - a < best)
			best = b - a;
	}
	st->timer_ns = (double)best * st->ns_per_cycle;
}

static void pt_declare(struct bench *b)
{
	struct pt_state *st = calloc(1, sizeof(*st));
	for (int l = 0; l < LEVELS; l++) {
		char name[32];
		snprintf(name, sizeof(name), "%s_avg_ns", level_name[l]);
		st->m_avg[l] = bench_metric(b, name, "ns", LOWER_IS_BETTER);
		snprintf(name, sizeof(name), "%s_min_ns", level_name[l]);
		st->m_min[l] = bench_metric(b, name, "ns", LOWER_IS_BETTER);
		snprintf(name, sizeof(name), "%s_max_ns", level_name[l]);
		st->m_max[l] = bench_metric(b, name, "ns", LOWER_IS_BETTER);
	}
	for (int i = 0; i < ENTRIES / 2; i++)
		kernel_template[i] = 0x8000000000000000ULL | ((uint64_t)i << 12) | 0x63;
	calibrate(st);
	b->state = st;
}

/* One page-table page of a level, timed. */
static uint64_t *alloc_table(struct pt_state *st, int level)
{
	uint64_t c0 = cycles();
	uint64_t *p = za_quicklist_alloc(st->mm, level == PGD ? 0 : 1, ZA_GFP_KERNEL,
					 level == PGD ? pgd_ctor : NULL);
	double ns = (double)(cycles() - c0) * st->ns_per_cycle - st->timer_ns;
	if (!p) {
		fprintf(stderr, "zabench pgtable: %s\n", za_last_error());
		exit(1);
	}
	struct level_stat *s = &st->lvl[level];
	if (ns < 0)
		ns = 0;
	if (!s->count || ns < s->min_ns)
		s->min_ns = ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
	s->total_ns += ns;
	s->count++;
	return p;
}

/* The table one level down from entry idx of table t, created on demand. */
static uint64_t *walk(struct pt_state *st, uint64_t *t, unsigned int idx, int level)
{
	if (!t[idx])
		t[idx] = (uint64_t)(uintptr_t)alloc_table(st, level) | 1;
	return (uint64_t *)(uintptr_t)(t[idx] & ~1ULL);
}

/* Clears what a process wrote and frees its tables back, clean. */
static void teardown(struct pt_state *st, uint64_t *t, int level)
{
	if (level < PTE) {
		for (int i = 0; i < (level == PGD ? ENTRIES / 2 : ENTRIES); i++) {
			if (t[i]) {
				teardown(st, (uint64_t *)(uintptr_t)(t[i] & ~1ULL), level + 1);
				t[i] = 0;
			}
		}
	} else {
		memset(t, 0, ENTRIES * sizeof(uint64_t));   /* a real exit walks just its entries */
	}
	za_quicklist_free(st->mm, level == PGD ? 0 : 1, NULL, t);
}

static void one_process(struct pt_state *st, uint64_t *rng)
{
	uint64_t *pgd = alloc_table(st, PGD);
	for (int r = 0; r < REGIONS; r++) {
		uint64_t va = bench_rand(rng) & ((1ULL << 47) - 1);   /* user half */
		uint64_t *pud = walk(st, pgd, (unsigned int)(va >> 39) & 511, PUD);
		uint64_t *pmd = walk(st, pud, (unsigned int)(va >> 30) & 511, PMD);
		uint64_t *pte = walk(st, pmd, (unsigned int)(va >> 21) & 511, PTE);
		int n = 1 + (int)(bench_rand(rng) % 8);      /* sparse: a few pages */
		for (int i = 0; i < n; i++)
			pte[((va >> 12) + (unsigned int)i) & 511] = (va & ~4095ULL) | 0x67;
	}
	teardown(st, pgd, PGD);
}

/* Adds one iteration's level to the variant's total. */
static void add_level(struct level_stat *t, const struct level_stat *s)
{
	if (!t->count || s->min_ns < t->min_ns)
		t->min_ns = s->min_ns;
	if (s->max_ns > t->max_ns)
		t->max_ns = s->max_ns;
	t->total_ns += s->total_ns;
	t->count += s->count;
}

static void pt_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct pt_state *st = b->state;
	st->mm = v->mm;
	memset(st->lvl, 0, sizeof(st->lvl));
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(v->niters + 1);
	long long h0 = za_stat(v->mm, "quicklist_hit"), m0 = za_stat(v->mm, "quicklist_miss");
	long long z0 = za_stat(v->mm, "bytes_zeroed");
	double deadline = now_seconds() + bench_seconds(b);
	do {
		for (int k = 0; k < 64; k++)
			one_process(st, &rng);
	} while (now_seconds() < deadline);

	for (int l = 0; l < LEVELS; l++) {
		const struct level_stat *s = &st->lvl[l];
		it->value[st->m_avg[l]] = s->total_ns / (double)s->count;
		it->value[st->m_min[l]] = s->min_ns;
		it->value[st->m_max[l]] = s->max_ns;
		it->ops += s->count;
	}
	if (b->warmup)
		return;                 /* the table, like the counters, leaves it out */
	int vi = (int)(v - b->variants);
	for (int l = 0; l < LEVELS; l++)
		add_level(&st->total[vi][l], &st->lvl[l]);
	st->hits[vi] += za_stat(v->mm, "quicklist_hit") - h0;
	st->misses[vi] += za_stat(v->mm, "quicklist_miss") - m0;
	st->zeroed[vi] += za_stat(v->mm, "bytes_zeroed") - z0;
}

static void fmt_ns(char *buf, size_t len, double ns)
{
	if (ns >= 1e6)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else
		snprintf(buf, len, "%.0fns", ns);
}

/* The seed's table: per level, count, total time, min/avg/max per call;
 * then what each allocation costs in zeroing and cache lines (computed: a
 * hit touches the CPU's list and the page's first line; a miss zeroes the
 * page, 64 lines, and a pgd miss copies the 32-line template too). */
static void pt_print(const struct bench *b, FILE *out)
{
	const struct pt_state *st = b->state;
	for (int i = 0; i < b->nvariants; i++) {
		fprintf(out, "\n%s\n", b->variants[i].name);
		for (int l = LEVELS - 1; l >= 0; l--) {
			const struct level_stat *t = &st->total[i][l];
			char total[32], mn[32], avg[32], mx[32];
			fmt_ns(total, sizeof(total), t->total_ns);
			fmt_ns(mn, sizeof(mn), t->min_ns);
			fmt_ns(avg, sizeof(avg), t->count ? t->total_ns / (double)t->count : 0);
			fmt_ns(mx, sizeof(mx), t->max_ns);
			fprintf(out, "%s_alloc %12lld %s(%s/%s/%s)\n", level_name[l], t->count, total, mn,
				avg, mx);
		}
		long long allocs = st->hits[i] + st->misses[i];
		long long pgds = st->total[i][PGD].count;
		double miss = allocs ? (double)st->misses[i] / (double)allocs : 0;
		fprintf(out, "bytes zeroed per allocation      %10.1f\n",
			allocs ? (double)st->zeroed[i] / (double)allocs : 0);
		fprintf(out, "cache lines touched per allocation %8.1f\n",
			allocs ? 2 * (1 - miss) + 64 * miss + 32.0 * miss * (double)pgds / (double)allocs : 0);
	}
	fprintf(out, "(the timer's own %.1f ns per reading is subtracted)\n", st->timer_ns);
}

static const char *const pt_report[] = {
	"--ab quicklists",
	NULL,
};

const struct experiment exp_pgtable = {
	.name = "pgtable",
	.summary = "E5: four-level page-table pages built sparse and torn down clean",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 1,
	.declare = pt_declare,
	.run = pt_run,
	.report_runs = pt_report,
	.print_extra = pt_print,
};
