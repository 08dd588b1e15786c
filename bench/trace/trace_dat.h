/*
 * trace-cmd's binary trace.dat as events (trace_dat.c), where zabench was
 * built with libtracecmd (ZA_TRACECMD).  Internal to the trace reader.
 */
#ifndef ZABENCH_TRACE_DAT_H
#define ZABENCH_TRACE_DAT_H

#include "trace.h"

struct trace_dat;

/*
 * Opens a trace.dat and sets h->nr_cpus from it.  NULL with a message on
 * failure, or if this build cannot read trace.dat (naming the packages).
 */
struct trace_dat *trace_dat_open(const char *path, struct trace_header *h,
				 char *err, size_t errlen);

/*
 * The next record of every buffer and CPU, by timestamp: 1 with *ev filled
 * (but ev->line), 0 at the end, or -1 with *why for a record not used.  A
 * record after lost ones is preceded by one SKIP_LOST_EVENTS result.
 */
int trace_dat_next(struct trace_dat *d, struct trace_event *ev, enum trace_skip *why);

void trace_dat_close(struct trace_dat *d);

#endif
