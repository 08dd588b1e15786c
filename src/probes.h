#ifndef ZA_PROBES_H
#define ZA_PROBES_H

/*
 * USDT probes, provider "zonealloc", at the slow paths a user traces
 * (bpftrace -e 'usdt:/path/libzonealloc-malloc.so:zonealloc:refill ...').
 * Built with <sys/sdt.h> (systemtap-sdt-dev): a probe is a nop and a note
 * in the binary until a tracer attaches; without the header, nothing.
 *
 *   refill(cpu, order, pages, migratetype)  a per-CPU list refilled from the zone
 *   drain(zone, pages)                      a bulk free of per-CPU pages to the zone
 *   slab_new(cache, order)                  a slab allocated (cache: its name)
 *   slab_discard(cache, order)              an empty slab given back
 *   large_alloc(bytes, pages)               a run of pages beyond a block, or beyond max_order
 *   purge(pages)                            free memory given back to the OS
 *   reclaim(order, reclaimed)               a direct reclaim, and what it freed
 *   kswapd_wake(node, order)                kswapd woken
 *   alloc_fail(order, gfp)                  an allocation that failed after reclaim
 */
#ifdef ZA_HAVE_SDT
#include <sys/sdt.h>
#define ZA_PROBE1(name, a) DTRACE_PROBE1(zonealloc, name, a)
#define ZA_PROBE2(name, a, b) DTRACE_PROBE2(zonealloc, name, a, b)
#define ZA_PROBE4(name, a, b, c, d) DTRACE_PROBE4(zonealloc, name, a, b, c, d)
#else
#define ZA_PROBE1(name, a) ((void)0)
#define ZA_PROBE2(name, a, b) ((void)0)
#define ZA_PROBE4(name, a, b, c, d) ((void)0)
#endif

#endif /* ZA_PROBES_H */
