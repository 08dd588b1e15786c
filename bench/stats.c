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
		return 0;       /* no baseline to compare with */
	double change = (after - before) / fabs(before) * 100;
	return (dir == HIGHER_IS_BETTER ? change : -change) + 0.0;   /* no "-0.00%" */
}
