#include "histogram.h"

#define LINEAR_NS (1LL << HIST_LINEAR_BITS)
#define SUB_BUCKETS (1 << HIST_SUB_BITS)

int hist_bucket(long long ns)
{
	if (ns < LINEAR_NS)
		return ns < 0 ? 0 : (int)ns;
	int e = 63 - __builtin_clzll((unsigned long long)ns);  /* >= HIST_LINEAR_BITS */
	int sub = (int)(ns >> (e - HIST_SUB_BITS)) & (SUB_BUCKETS - 1);
	return (int)LINEAR_NS + (e - HIST_LINEAR_BITS) * SUB_BUCKETS + sub;
}

/* The middle of a bucket's range (the value itself in the linear part). */
static double bucket_value(int b)
{
	if (b < LINEAR_NS)
		return b;
	int e = (b - (int)LINEAR_NS) / SUB_BUCKETS + HIST_LINEAR_BITS;
	int sub = (b - (int)LINEAR_NS) % SUB_BUCKETS;
	double step = (double)(1LL << (e - HIST_SUB_BITS));
	return (double)(SUB_BUCKETS + sub) * step + step / 2;
}

double hist_percentile(const long long *hist, long long total, long long num, long long den)
{
	if (!total)
		return 0;
	long long rank = total * num / den, seen = 0;
	for (int b = 0; b < HIST_BUCKETS; b++)
		if ((seen += hist[b]) > rank)
			return bucket_value(b);
	return 0;
}
