/*
 * A histogram of nanoseconds for percentiles: values below 4096 ns
 * exactly, above with 256 buckets per power of two (0.4%).  An array of
 * HIST_BUCKETS counters, hist_bucket() the index of a value.
 */
#ifndef ZABENCH_HISTOGRAM_H
#define ZABENCH_HISTOGRAM_H

#define HIST_LINEAR_BITS 12
#define HIST_SUB_BITS 8
#define HIST_BUCKETS ((1 << HIST_LINEAR_BITS) + (63 - HIST_LINEAR_BITS + 1) * (1 << HIST_SUB_BITS))

int hist_bucket(long long ns);
/* The value of the sample of rank total * num / den (0-based), as a sort
 * of every sample would give to within a bucket; 0 without samples. */
double hist_percentile(const long long *hist, long long total, long long num, long long den);

#endif /* ZABENCH_HISTOGRAM_H */
