/*
 * The kernel's untraced allocations, found in a trace by what they leave.
 *
 * alloc_pages_bulk() (vmalloc's order-0 pages: every vmalloc'd kernel
 * stack a fork makes, page pools, sunrpc) takes its pages off the CPU's
 * list with __rmqueue_pcplist and traces none of them: no mm_page_alloc.
 * Their frees are traced (vfree frees them one by one).  So a page that
 * went onto a CPU's list -- a refill of it, or a free -- and is freed
 * again with no allocation of it between was taken off that list by a
 * bulk allocation.  A replay that does not take it keeps it on the list
 * to serve a traced allocation the kernel refilled for: fork-heavy
 * traces refill half what the kernel does without this.
 *
 * When the bulk allocation came is not traced either.  The lists are
 * LIFO and a refill comes only when one is empty, so while the page sat
 * on it no refill of that list can have come and no traced allocation
 * took it; taking it right after the event that put it there changes no
 * refill and moves a drain by at most its one page.
 */
#ifndef ZABENCH_BULK_ALLOC_H
#define ZABENCH_BULK_ALLOC_H

#include "trace.h"

#include <stddef.h>
#include <stdint.h>

/* A page a bulk allocation took: right after the trace's event number
 * `after` (0-based, as trace_next returns them), off the list of `cpu`
 * for `migratetype` -- the refill's, the type the page was last allocated
 * as, or unmovable (what vmalloc asks) for a page the trace never saw
 * allocated. */
struct bulk_take {
	uint64_t after;
	uint64_t pfn;
	int cpu, migratetype;
};

struct bulk_takes {
	struct bulk_take *take;         /* in the order of `after` */
	size_t n, cap;
};

/* Reads the stream to its end.  0, or -1 with a message in err; bulk_free
 * in either case. */
int bulk_scan(struct trace_reader *tr, int nr_cpus, struct bulk_takes *bt, char *err, size_t errlen);
void bulk_free(struct bulk_takes *bt);

/* The take due right after event number `seen`, for the page the event
 * names, advancing *next past it; NULL if none is due.  Call with
 * increasing `seen` for each event the stream returns. */
const struct bulk_take *bulk_take_due(const struct bulk_takes *bt, size_t *next, uint64_t seen);

#endif
