/* Test files for the page-cache experiments. */
#ifndef ZABENCH_FILES_H
#define ZABENCH_FILES_H

#include "bench.h"

/* dir/name holding `bytes` bytes of a pattern, created unless it already
 * has that size; returns its path (static storage per call site's buf). */
const char *bench_file(struct bench *b, const char *name, long bytes, char *buf, size_t len);

/* Sets nr_active_file_<Zone> and nr_inactive_file_<Zone> extra counters. */
void record_zone_lru(struct variant *v);

#endif
