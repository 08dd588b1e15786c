/*
 * Statistics in mmtests' conventions: Hmean for rates, Amean for times,
 * sample standard deviation, and a % change that is positive when the
 * "after" value is better, whichever way better points.
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void summarize(const double *v, int n, struct summary *s)
{
	memset(s, 0, sizeof(*s));
	if (n <= 0)
		return;
	double sum = 0, inv = 0, sorted[MAX_ITERS];
	bool positive = true;
	for (int i = 0; i < n; i++) {
		sum += v[i];
		if (v[i] > 0)
			inv += 1.0 / v[i];
		else
			positive = false;
		sorted[i] = v[i];
	}
	qsort(sorted, (size_t)n, sizeof(double), cmp_double);
	s->amean = sum / n;
	s->hmean = positive ? n / inv : 0;   /* undefined with zeros: mmtests prints 0 */
	s->min = sorted[0];
	s->max = sorted[n - 1];
	s->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	double sq = 0;
	for (int i = 0; i < n; i++)
		sq += (v[i] - s->amean) * (v[i] - s->amean);
	s->stddev = n > 1 ? sqrt(sq / (n - 1)) : 0;
}

double pct_change(double before, double after, enum direction dir)
{
	if (before == 0)
		return NAN;     /* no baseline to compare with: printed n/a */
	double change = (after - before) / fabs(before) * 100;
	return (dir == HIGHER_IS_BETTER ? change : -change) + 0.0;   /* no "-0.00%" */
}

/* ------------------------------------------------------------------------
 * A/B verdicts
 *
 * The change of a metric between "before" and "after" is the median of
 * the after/before ratios of every pair of iterations (the Hodges-Lehmann
 * estimate: close to the ratio of the medians, and always inside its
 * interval, which the latter is not when a sample is bimodal).  Its
 * interval is the distribution-free one that goes with
 * the Mann-Whitney rank test (Hodges and Lehmann): of the n*m pairwise
 * differences after[j] - before[i], sorted, the c-th from either end, c
 * taken from the exact null distribution of the U statistic so that the
 * interval covers the true shift with at least CONFIDENCE probability.  The
 * differences are of logarithms when every value is positive (noise on a
 * rate or a time is multiplicative), so the interval is one of ratios;
 * otherwise of the values, relative to the median before.  It assumes only
 * that the two variants' samples are independent draws of one shape
 * shifted: it needs no normality, and an outlier moves it by one rank.
 * With 3 samples a side no interval reaches 95% (1 - 2/20 = 90%): the
 * smallest sample that can give a verdict is 4 a side.
 * ------------------------------------------------------------------------ */

/*
 * P(U <= k) for every k under the null, for samples of n and m: the
 * coefficients of the Gaussian binomial [n+m choose n] in q, over their sum.
 * Writes n*m+1 values into cdf.
 */
static void mann_whitney_cdf(int n, int m, double *cdf)
{
	int top = n * m;
	for (int k = 0; k <= top; k++)
		cdf[k] = k == 0;
	for (int i = 1; i <= n; i++) {
		/* multiply by (1 - q^(m+i)), then divide by (1 - q^i) */
		for (int k = top; k >= m + i; k--)
			cdf[k] -= cdf[k - m - i];
		for (int k = i; k <= top; k++)
			cdf[k] += cdf[k - i];
	}
	double total = 0;
	for (int k = 0; k <= top; k++)
		total += cdf[k];
	double run = 0;
	for (int k = 0; k <= top; k++) {
		run += cdf[k];
		cdf[k] = run / total;
	}
}

static bool all_positive(const double *v, int n)
{
	for (int i = 0; i < n; i++)
		if (!(v[i] > 0))
			return false;
	return true;
}

static double median_of(const double *v, int n)
{
	struct summary s;
	summarize(v, n, &s);
	return s.median;
}

const char *verdict_name(enum verdict v)
{
	switch (v) {
	case VERDICT_BETTER: return "better";
	case VERDICT_WORSE: return "worse";
	case VERDICT_NOISE: return "within noise";
	case VERDICT_INCONCLUSIVE: return "inconclusive";
	default: return "n/a";
	}
}

void compare_samples(const double *before, int nb, const double *after, int na,
		     enum direction dir, struct comparison *c)
{
	static double diff[MAX_ITERS * MAX_ITERS], cdf[MAX_ITERS * MAX_ITERS + 1];
	memset(c, 0, sizeof(*c));
	c->verdict = VERDICT_NA;
	double base = median_of(before, nb);
	if (nb < 2 || na < 2 || nb > MAX_ITERS || na > MAX_ITERS || base == 0)
		return;
	bool logs = all_positive(before, nb) && all_positive(after, na);
	int k = 0;
	for (int i = 0; i < nb; i++)
		for (int j = 0; j < na; j++)
			diff[k++] = logs ? log(after[j]) - log(before[i]) : after[j] - before[i];
	qsort(diff, (size_t)k, sizeof(double), cmp_double);
	mann_whitney_cdf(nb, na, cdf);
	/* The interval [diff[u], diff[k-1-u]] misses the true shift with
	 * probability 2 * P(U <= u): u is the largest that keeps it within
	 * 1 - CONFIDENCE.  None may: then the whole range, and no verdict. */
	int u = -1;
	while (u + 1 < k / 2 && cdf[u + 1] <= (1 - CONFIDENCE) / 2)
		u++;
	bool enough = u >= 0;
	if (!enough)
		u = 0;
	double lo = diff[u], hi = diff[k - 1 - u];
	c->level = 1 - 2 * cdf[u];
	/* As fractional changes, signed so that positive is better. */
	double sign = dir == HIGHER_IS_BETTER ? 1 : -1;
	double flo = logs ? expm1(lo) : lo / fabs(base);
	double fhi = logs ? expm1(hi) : hi / fabs(base);
	double mid = k % 2 ? diff[k / 2] : (diff[k / 2 - 1] + diff[k / 2]) / 2;
	c->change = sign * (logs ? expm1(mid) : mid / fabs(base)) + 0.0;
	c->lo = fmin(sign * flo, sign * fhi) + 0.0;
	c->hi = fmax(sign * flo, sign * fhi) + 0.0;
	if (!enough)
		c->verdict = VERDICT_INCONCLUSIVE;      /* too few samples for CONFIDENCE */
	else if (c->lo > 0)
		c->verdict = VERDICT_BETTER;
	else if (c->hi < 0)
		c->verdict = VERDICT_WORSE;
	else
		c->verdict = VERDICT_NOISE;
}

bool is_ab(const struct bench *b)
{
	return b->opts.ab && b->nvariants == 2 && !b->exp->make_variants;
}

void compare_ab(const struct bench *b, int m, struct comparison *c)
{
	const struct variant *before = &b->variants[0], *after = &b->variants[1];
	compare_samples(before->values[m], before->niters, after->values[m], after->niters,
			b->metrics[m].dir, c);
}

/* A change the interval confines within this of zero is no change. */
#define NOISE_FLOOR 0.03

bool comparison_open(const struct comparison *c)
{
	if (c->verdict == VERDICT_INCONCLUSIVE)
		return true;
	return c->verdict == VERDICT_NOISE && (c->lo < -NOISE_FLOOR || c->hi > NOISE_FLOOR);
}
