/*
 * The mean RSS of a child process over its life: what a memory cgroup
 * holds it to, where the peak says only how high it once went.  Shared by
 * zabench malloc (its benchmarks' processes) and malloc-suite (the
 * interpreters it runs as children).
 */
#ifndef ZABENCH_RSS_SAMPLER_H
#define ZABENCH_RSS_SAMPLER_H

#include <sys/resource.h>
#include <sys/types.h>

/* Waits for pid as wait4 does, reading its RSS every few milliseconds
 * meanwhile; *mean_kib is the mean of those readings (0 if it ended
 * before the first).  Returns wait4's result. */
pid_t wait_sampling_rss(pid_t pid, int *status, struct rusage *ru, double *mean_kib);
/* The resident pages in an open /proc/PID/statm (its second field), or -1
 * once the process is gone; pread and sscanf only, no malloc. */
long rss_pages(int fd);

#endif
