/*
 * zabench's statistics against hand-computed values, the sign convention
 * of % change (positive = better, whichever way better points), and what
 * `zabench report` runs.
 */
#include "bench.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>

#define CHECK_NEAR(a, b) CHECK(fabs((double)(a) - (double)(b)) < 1e-9 * (fabs((double)(b)) + 1))

/* Does one of e's report runs compare sw (--ab ...,sw[=A:B],...)? */
static bool report_compares(const struct experiment *e, const char *sw)
{
	size_t len = strlen(sw);
	for (const char *const *run = e->report_runs; *run; run++) {
		const char *p = strstr(*run, "--ab ");
		if (!p)
			continue;
		for (p += 5;; p++) {            /* each SWITCH of the comma list */
			if (!strncmp(p, sw, len) && strchr(",= ", p[len]))
				return true;
			p += strcspn(p, ", ");
			if (*p != ',')
				break;
		}
	}
	return false;
}

/* fsmark is the control: it must show no regression for any switch.  The
 * runner wants the tool's list of experiments: here, just fsmark. */
extern const struct experiment exp_fsmark;
const struct experiment *const experiments[] = { &exp_fsmark, NULL };

static void test_fsmark_compares_every_switch(void)
{
	static const char *const switches[] = {
		"pcp_high_order", "bulkfree_outside_lock", "slub_max_order", "slub_big_system",
		"fair_zone", "kswapd_wake_high", "quicklists", "slab_freelist_random",
		"slab_freelist_hardened",
	};
	for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++) {
		if (!report_compares(&exp_fsmark, switches[i])) {
			fprintf(stderr, "fsmark's report runs do not compare %s\n", switches[i]);
			exit(1);
		}
	}
	CHECK(!report_compares(&exp_fsmark, "slub_max"));   /* whole names only */
}

/* Normal deviates (Box-Muller) from a fixed seed: the trials repeat. */
static double gauss(uint64_t *seed)
{
	double u1 = ((double)(bench_rand(seed) >> 11) + 0.5) / 9007199254740992.0;
	double u2 = (double)(bench_rand(seed) >> 11) / 9007199254740992.0;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* n samples of base * (1 + effect), each with multiplicative noise. */
static void draw(uint64_t *seed, double *v, int n, double base, double effect, double noise)
{
	for (int i = 0; i < n; i++)
		v[i] = base * (1 + effect) * exp(noise * gauss(seed));
}

/* Verdicts over many trials of n samples a side. */
static void trials(int n, double effect, double noise, enum direction dir, int counts[5])
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	double before[MAX_ITERS], after[MAX_ITERS];
	memset(counts, 0, 5 * sizeof(int));
	for (int t = 0; t < 2000; t++) {
		struct comparison c;
		draw(&seed, before, n, 1000, 0, noise);
		draw(&seed, after, n, 1000, effect, noise);
		compare_samples(before, n, after, n, dir, &c);
		CHECK(c.lo <= c.hi);
		counts[c.verdict]++;
	}
}

static void test_interval_by_hand(void)
{
	struct comparison c;
	/* 5 a side: the 95% interval drops 2 of the 25 differences at each
	 * end (P(U <= 2) = 4/252), so its confidence is 1 - 8/252. */
	const double b5[] = { 100, 101, 102, 103, 104 }, a5[] = { 90, 91, 92, 93, 94 };
	compare_samples(b5, 5, a5, 5, LOWER_IS_BETTER, &c);
	CHECK_NEAR(c.level, 1 - 8.0 / 252);
	CHECK(c.verdict == VERDICT_BETTER);                 /* a time that fell */
	CHECK(c.lo <= c.change && c.change <= c.hi);
	CHECK(fabs(c.change - 10.0 / 102) < 1e-3);         /* about the ratio of medians */
	/* ratios after/before sorted, the third from each end: 91/104 and
	 * 93/100; a ratio r is a change of 1 - r for a time */
	CHECK_NEAR(c.lo, 1 - 93.0 / 100);
	CHECK_NEAR(c.hi, 1 - 91.0 / 104);
	compare_samples(b5, 5, a5, 5, HIGHER_IS_BETTER, &c);
	CHECK(c.verdict == VERDICT_WORSE);                  /* a rate that fell */
	/* 3 a side: no interval reaches 95%, whatever the data. */
	compare_samples(b5, 3, a5, 3, LOWER_IS_BETTER, &c);
	CHECK(c.verdict == VERDICT_INCONCLUSIVE);
	CHECK_NEAR(c.level, 1 - 2.0 / 20);
	/* identical samples: no change, exactly */
	compare_samples(b5, 5, b5, 5, LOWER_IS_BETTER, &c);
	CHECK(c.verdict == VERDICT_NOISE);
	/* zeros: differences of values, relative to the median before */
	const double zb[] = { 0, 2, 2, 2, 4 }, za[] = { 10, 12, 12, 12, 14 };
	compare_samples(zb, 5, za, 5, HIGHER_IS_BETTER, &c);
	CHECK(c.verdict == VERDICT_BETTER);
	CHECK_NEAR(c.change, 5);
	/* nothing to divide by */
	const double zero[] = { 0, 0, 0, 0, 0 };
	compare_samples(zero, 5, za, 5, HIGHER_IS_BETTER, &c);
	CHECK(c.verdict == VERDICT_NA);
}

/* No effect: "within noise" in at least 95% of trials, whatever the noise. */
static void test_no_effect_is_noise(void)
{
	static const int sizes[] = { 4, 5, 8, 12 };
	static const double noises[] = { 0.01, 0.05, 0.3 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (size_t k = 0; k < sizeof(noises) / sizeof(noises[0]); k++) {
			int counts[5];
			trials(sizes[s], 0, noises[k], HIGHER_IS_BETTER, counts);
			if (counts[VERDICT_NOISE] < 1900) {
				fprintf(stderr, "no effect, n=%d noise %.2f: %d of 2000 within noise\n",
					sizes[s], noises[k], counts[VERDICT_NOISE]);
				exit(1);
			}
		}
	}
}

/* A 20% effect with 5 samples a side and 5% noise is found, the right way. */
static void test_effect_is_found(void)
{
	int counts[5];
	trials(5, 0.2, 0.05, HIGHER_IS_BETTER, counts);
	CHECK(counts[VERDICT_BETTER] >= 1900);
	CHECK(counts[VERDICT_WORSE] == 0);
	trials(5, 0.2, 0.05, LOWER_IS_BETTER, counts);
	CHECK(counts[VERDICT_WORSE] >= 1900);
	trials(5, -0.2, 0.05, HIGHER_IS_BETTER, counts);
	CHECK(counts[VERDICT_WORSE] >= 1900);
}

/* Mean, harmonic mean, spread, extremes and median of a few values. */
static void test_summarize(void)
{
	struct summary s;
	const double v[] = { 1, 2, 4 };
	summarize(v, 3, &s);
	CHECK_NEAR(s.amean, 7.0 / 3);
	CHECK_NEAR(s.hmean, 3 / (1 + 0.5 + 0.25));          /* 12/7 */
	CHECK_NEAR(s.stddev, sqrt(((1 - 7.0 / 3) * (1 - 7.0 / 3) + (2 - 7.0 / 3) * (2 - 7.0 / 3) +
				   (4 - 7.0 / 3) * (4 - 7.0 / 3)) / 2));
	CHECK_NEAR(s.min, 1);
	CHECK_NEAR(s.max, 4);
	CHECK_NEAR(s.median, 2);

	const double w[] = { 10, 30, 20, 40 };
	summarize(w, 4, &s);
	CHECK_NEAR(s.median, 25);
	CHECK_NEAR(s.amean, 25);
	CHECK_NEAR(s.hmean, 4 / (0.1 + 1.0 / 30 + 0.05 + 0.025));
	CHECK_NEAR(s.stddev, sqrt((225 + 25 + 25 + 225) / 3.0));

	/* One value: no spread; a zero value: Hmean undefined, printed as 0. */
	summarize(v, 1, &s);
	CHECK_NEAR(s.stddev, 0);
	const double z[] = { 0, 5 };
	summarize(z, 2, &s);
	CHECK_NEAR(s.hmean, 0);
}

/* % change: positive is better, whichever way better points. */
static void test_pct_change(void)
{
	/* The seed's table: 178.38 -> 256.74 is +43.93%, higher is better. */
	CHECK(fabs(pct_change(178.38, 256.74, HIGHER_IS_BETTER) - 43.93) < 0.005);
	/* Its stddev row: 0.89 -> 3.24 is -264.04%: a larger spread is worse. */
	CHECK(fabs(pct_change(0.89, 3.24, LOWER_IS_BETTER) - -264.04) < 0.01);
	/* A time that halves is +50%. */
	CHECK_NEAR(pct_change(20, 10, LOWER_IS_BETTER), 50);
	CHECK_NEAR(pct_change(20, 30, LOWER_IS_BETTER), -50);
	CHECK_NEAR(pct_change(20, 30, HIGHER_IS_BETTER), 50);
	CHECK_NEAR(pct_change(5, 5, LOWER_IS_BETTER), 0);
	CHECK(!signbit(pct_change(5, 5, LOWER_IS_BETTER)));
	CHECK(isnan(pct_change(0, 5, HIGHER_IS_BETTER)));      /* nothing to divide: n/a */
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "summarize", test_summarize },
		{ "pct_change", test_pct_change },
		{ "fsmark_compares_every_switch", test_fsmark_compares_every_switch },
		{ "interval_by_hand", test_interval_by_hand },
		{ "no_effect_is_noise", test_no_effect_is_noise },
		{ "effect_is_found", test_effect_is_found },
	};
	return run_test_cases("test_bench_stats", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
