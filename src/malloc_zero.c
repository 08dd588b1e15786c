/*
 * malloc(0), in both modes: distinct addresses in a region without access,
 * aligned as asked (memalign(64, 0) too), so that a read or write through
 * one faults, and the fault is reported as what it is.  The region is
 * reserved at the first malloc(0) (address space is what ulimit -v
 * limits).  Once it is used up, or for an alignment it cannot offer many
 * of, or without address space for it, the caller gives a block of its
 * own instead, recorded as a request of 0 bytes.  The size class table sends 0 to a slot whose
 * sheaf is always empty, so no other size pays for this.
 *
 * The SIGSEGV handler reports faults in zonealloc's own inaccessible
 * memory only -- this region, and in debug mode the quarantined blocks --
 * and hands every other fault to the handler that was there before.
 */
#include "malloc_internal.h"

#include <signal.h>
#include <sys/mman.h>

/* 256 Ki distinct addresses: address space is what ulimit -v limits, and
 * the program's other allocations need it more. */
#define ZERO_REGION (4UL << 20)
#define ZERO_ALIGN_MAX (ZERO_REGION / 4)
static char *_Atomic zero_region;       /* reserved at the first malloc(0) */
static _Atomic size_t zero_next;        /* offset of the next free address */

bool in_zero_region(const void *p)
{
	char *region = atomic_load_explicit(&zero_region, memory_order_acquire);
	return region && (uintptr_t)p - (uintptr_t)region < ZERO_REGION;
}

/* The region, reserved by whichever thread gets there first; NULL if the
 * address space has no room. */
static char *zero_region_get(void)
{
	char *region = atomic_load_explicit(&zero_region, memory_order_acquire), *none = NULL;
	if (region)
		return region;
	region = mmap(NULL, ZERO_REGION, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	if (region == MAP_FAILED)
		return NULL;
	if (!atomic_compare_exchange_strong(&zero_region, &none, region)) {
		munmap(region, ZERO_REGION);
		return none;
	}
	return region;
}

void *zero_alloc(size_t align)
{
	size_t at = atomic_load(&zero_next), start;
	char *region = align <= ZERO_ALIGN_MAX ? zero_region_get() : NULL;
	if (!region)
		return NULL;
	if (align < MALLOC_ALIGN)
		align = MALLOC_ALIGN;
	/* Addresses below 2^47 and align <= ZERO_ALIGN_MAX: no sum wraps.  The
	 * next offset only grows, so an address is never handed out twice. */
	do {
		uintptr_t a = ALIGN_UP((uintptr_t)region + at, (uintptr_t)align);
		start = a - (uintptr_t)region;
		if (start >= ZERO_REGION)
			return NULL;
	} while (!atomic_compare_exchange_weak(&zero_next, &at, start + MALLOC_ALIGN));
	return region + start;
}

static struct sigaction previous_segv;

/*
 * A fault in the malloc(0) region or a quarantined block is reported; any
 * other goes to the handler that was there before (called directly, so
 * that this one stays for the faults after it), or, if there was none,
 * happens again under the default action.
 */
static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	const void *addr = si->si_addr;
	if (in_zero_region(addr))
		malloc_misuse("read or write through a malloc(0) pointer (%p)", addr);
	if (zm.debug)
		debug_fault(addr);
	if (previous_segv.sa_flags & SA_SIGINFO)
		previous_segv.sa_sigaction(sig, si, uc);
	else if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN)
		previous_segv.sa_handler(sig);
	else
		signal(sig, SIG_DFL);
}

void malloc_zero_init(void)
{
	struct sigaction sa = { .sa_sigaction = segv_handler, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &previous_segv);
}
