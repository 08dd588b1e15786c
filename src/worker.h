#ifndef ZA_WORKER_H
#define ZA_WORKER_H

#include <stdint.h>

struct za_mm;
struct za_worker;

/*
 * A system's periodic helper: a thread that calls fn(mm) every interval
 * until stopped, takes no signal meant for the program and never keeps it
 * alive (platform.h's helpers).  The vmstat worker and the publisher are
 * two.  NULL with errno (EAGAIN, ENOMEM) if the thread cannot start.
 */
struct za_worker *worker_start(struct za_mm *mm, const char *name, uint64_t interval_ns,
			       void (*fn)(struct za_mm *));

/* Stops and joins it; in a forked child, where it does not run, only
 * forgets it.  *w is NULL after. */
void worker_stop(struct za_worker **w);

#endif /* ZA_WORKER_H */
