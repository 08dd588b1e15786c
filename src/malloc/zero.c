/*
 * malloc(0), in both modes: distinct addresses in a region without access,
 * aligned as asked (memalign(64, 0) too), so that a read or write through
 * one faults, and the fault is reported as what it is.  The region is
 * reserved at the first malloc(0) (address space is what ulimit -v
 * limits).  Once it is used up, or for an alignment it cannot offer many
 * of, or without address space for it, the caller gives a block of its
 * own instead, recorded as a request of 0 bytes.  The size class table
 * sends 0 to a slot whose sheaf is always empty, so no other size pays for
 * this.
 *
 * Each 16-byte step of the region has two bits, in two bitmaps mapped
 * after it: handed out, and freed.  An address is handed out once (the
 * next offset only grows), so the bits say of any pointer into the region
 * whether it is a live malloc(0) block, a freed one (a double free), or
 * never was one (an interior or invented pointer): malloc.c's lookup asks,
 * and reports misuse of them as of any other block.  A bitmap's page becomes resident only once 512 KiB of
 * addresses before it were handed out.
 *
 * The SIGSEGV handler, installed when the region is reserved (and in debug
 * mode at the start, for the quarantine), reports faults in zonealloc's own
 * inaccessible memory only -- this region, and in debug mode the
 * quarantined blocks -- and delivers every other fault as the kernel would
 * have without it (forward_fault).
 */
#include "internal.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

/* 256 Ki distinct addresses: address space is what ulimit -v limits, and
 * the program's other allocations need it more. */
#define ZERO_REGION (4UL << 20)
#define ZERO_ALIGN_MAX (ZERO_REGION / 4)
#define ZERO_SLOTS (ZERO_REGION / MALLOC_ALIGN)

struct zero_bits {
	_Atomic uint64_t handed[ZERO_SLOTS / 64];
	_Atomic uint64_t freed[ZERO_SLOTS / 64];
};

static char *_Atomic zero_region;       /* reserved at the first malloc(0) */
static _Atomic size_t zero_next;        /* offset of the next free address */

bool in_zero_region(const void *p)
{
	char *region = atomic_load_explicit(&zero_region, memory_order_acquire);
	return region && (uintptr_t)p - (uintptr_t)region < ZERO_REGION;
}

static struct zero_bits *zero_bits(char *region)
{
	return (struct zero_bits *)(region + ZERO_REGION);
}

/* The region and its bitmaps, reserved by whichever thread gets there
 * first; NULL if the address space has no room. */
static char *zero_region_get(void)
{
	char *region = atomic_load_explicit(&zero_region, memory_order_acquire), *none = NULL;
	if (region)
		return region;
	region = mmap(NULL, ZERO_REGION + sizeof(struct zero_bits), PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (region == MAP_FAILED)
		return NULL;
	if (mprotect(zero_bits(region), sizeof(struct zero_bits), PROT_READ | PROT_WRITE) ||
	    !atomic_compare_exchange_strong(&zero_region, &none, region)) {
		munmap(region, ZERO_REGION + sizeof(struct zero_bits));
		return none;
	}
	malloc_fault_handler_install();
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
	size_t slot = start / MALLOC_ALIGN;
	uint64_t was = atomic_fetch_or_explicit(&zero_bits(region)->handed[slot / 64],
						1ULL << (slot % 64), memory_order_relaxed);
	/* Handed out once, aligned as asked. */
	VM_BUG_ON(zm.mm, (was >> (slot % 64) & 1) || (uintptr_t)(region + start) % align);
	return region + start;
}

/* What p, an address in the region, is.  The bits of a slot handed out
 * are its block's alone: only its owner frees it. */
enum zero_state zero_state(const void *p)
{
	char *region = atomic_load_explicit(&zero_region, memory_order_acquire);
	size_t off = (size_t)((const char *)p - region), slot = off / MALLOC_ALIGN;
	struct zero_bits *bits = zero_bits(region);
	uint64_t bit = 1ULL << (slot % 64);
	if ((off % MALLOC_ALIGN) || !(load_relaxed(&bits->handed[slot / 64]) & bit))
		return ZERO_NONE;
	return load_relaxed(&bits->freed[slot / 64]) & bit ? ZERO_FREED : ZERO_LIVE;
}

void zero_mark_freed(const void *p)
{
	char *region = atomic_load_explicit(&zero_region, memory_order_acquire);
	size_t slot = (size_t)((const char *)p - region) / MALLOC_ALIGN;
	uint64_t was = atomic_fetch_or_explicit(&zero_bits(region)->freed[slot / 64],
						1ULL << (slot % 64), memory_order_relaxed);
	VM_BUG_ON(zm.mm, was >> (slot % 64) & 1);      /* free's lookup found it live */
}

/* ------------------------------------------------------------------------
 * Faults
 * ------------------------------------------------------------------------ */
static struct sigaction previous_segv;
static atomic_bool handler_installed;

/* SIGSEGV's action back to the default: ours goes, as the program's would
 * have with SA_RESETHAND. */
static void restore_default(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
}

/*
 * A fault that is not ours goes where it would have gone without us: to
 * the action that was there before, delivered as the kernel delivers a
 * signal -- under the mask the thread had plus the action's own and the
 * signal itself unless SA_NODEFER; with SA_RESETHAND the action is reset
 * first (so a crash handler that returns meets the default action at the
 * fault's second coming, not itself).  The default action, and SIG_IGN
 * (which the kernel does not honour for a fault), let a fault the hardware
 * raised happen again as this returns, with our handler gone; a SIGSEGV a
 * process sent is ignored, or sent again to take effect as this returns.
 */
static void forward_fault(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = &previous_segv;
	bool sent = si->si_code <= 0;
	if (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN) {
		if (sent && prev->sa_handler == SIG_IGN)
			return;
		restore_default(sig);
		if (sent)
			raise(sig);
		return;
	}
	if (prev->sa_flags & SA_RESETHAND)
		restore_default(sig);
	sigset_t mask = ((ucontext_t *)uc)->uc_sigmask, old;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&prev->sa_mask, s) == 1)
			sigaddset(&mask, s);
	if (prev->sa_flags & SA_NODEFER)
		sigdelset(&mask, sig);
	else
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	if (prev->sa_flags & SA_SIGINFO)
		prev->sa_sigaction(sig, si, uc);
	else
		prev->sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A fault in the malloc(0) region or a quarantined block is reported;
 * anything else is forwarded. */
static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code > 0) {          /* raised by the hardware: si_addr is the address */
		if (in_zero_region(si->si_addr))
			malloc_misuse("read or write through a malloc(0) pointer (%p)", si->si_addr);
		if (zm.debug)
			debug_fault(si->si_addr);
	}
	forward_fault(sig, si, uc);
}

/* Once.  Ours runs where the action it replaces would have (its
 * SA_ONSTACK: the alternate stack; SA_RESTART for a signal sent); the
 * action found is kept before ours replaces it, so that a fault meanwhile
 * finds it, and the one replaced is kept as the exchange found it, should
 * the program have changed it meanwhile. */
void malloc_fault_handler_install(void)
{
	struct sigaction sa = { .sa_sigaction = segv_handler }, found;
	if (atomic_exchange(&handler_installed, true))
		return;
	sigaction(SIGSEGV, NULL, &found);
	previous_segv = found;
	sa.sa_flags = SA_SIGINFO | (found.sa_flags & (SA_ONSTACK | SA_RESTART));
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &previous_segv);
}
