/*
 * Choosing the per-CPU mechanism, and the fence (rseq.h).
 *
 * zonealloc does not register an rseq area of its own: glibc 2.35+ does for
 * every thread, unless told not to (GLIBC_TUNABLES=glibc.pthread.rseq=0) or
 * the kernel has none; in those cases, and with older C libraries, the
 * per-CPU trylock serves.  A thread's registration is glibc's, so it is
 * there from the thread's first instruction to its last, and fork keeps it.
 */
#include "rseq.h"

#include "mmzone.h"
#include "percpu.h"

#include <linux/membarrier.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define HAVE_GLIBC_RSEQ 1
#endif

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#endif

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

long rseq_cs_tls;

/* The rseq area's fields, by offset: the ABI's (linux/rseq.h). */
enum { RSEQ_CPU_ID = 4, RSEQ_CS = 8, RSEQ_MM_CID = 24 };

static long membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

/* Registered once per process; later systems find it done. */
static __attribute__((unused)) int fence_ready(void)
{
	static _Atomic int ready;       /* 0 unknown, 1 yes, -1 no */
	int r = load_relaxed(&ready);
	if (!r) {
		r = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0 ? 1 : -1;
		store_relaxed(&ready, r);
	}
	return r > 0;
}

void rseq_fence(void)
{
	/* Cannot fail: rseq_setup chose rseq only after the registration
	 * (fence_ready) succeeded, and the command takes no arguments. */
	membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ);
}

void rseq_count_abort(struct za_mm *mm)
{
	counter_add_atomic(&mm->cpu_stat[this_cpu(mm)].ev[EV_RSEQ_ABORT], 1);
}

/* glibc's rseq area: its offset from the thread pointer, or 0 and why not. */
static const char *rseq_area(long *off)
{
	*off = 0;
#if !defined(HAVE_GLIBC_RSEQ)
	return "the C library registers no rseq area";
#else
	if (__rseq_size == 0)
		return "glibc registered no rseq area (glibc.pthread.rseq=0, or the kernel has none)";
	if (*(const volatile int *)(thread_pointer() + __rseq_offset + RSEQ_CPU_ID) < 0)
		return "the kernel refused this thread's rseq registration";
	*off = (long)__rseq_offset;
	return NULL;
#endif
}

/* Why the sections cannot run here, or NULL. */
static const char *rseq_sections(long area)
{
#if defined(UNDER_TSAN)
	(void)area;
	return "TSan cannot follow restartable sequences";
#elif defined(RSEQ_ARCH_NONE)
	(void)area;
	return "no restartable sequences on this architecture";
#else
	if (!area)
		return NULL;
	if (!__builtin_cpu_supports("avx"))
		return "the processor has no AVX (atomic 16-byte stores)";
	return fence_ready() ? NULL : "the kernel has no membarrier rseq fence";
#endif
}

void rseq_setup(struct za_mm *mm)
{
	long area;
	const char *why = rseq_area(&area);
	bool want_rseq = !strcmp(mm->cfg.percpu, "rseq");
	bool want_cid = !strcmp(mm->cfg.percpu_index, "cid");
	bool cid = area && want_cid &&
		   getauxval(AT_RSEQ_FEATURE_SIZE) >= RSEQ_MM_CID + sizeof(uint32_t);
	if (!why && want_cid && !cid)
		why = "the kernel gives no mm_cid (before 6.3)";
	if (!why && want_rseq)
		why = rseq_sections(area);
	/* A section serves one index from one CPU at a time: CPUs folded
	 * onto the system's fewer ones would share an index. */
	if (!why && want_rseq && !cid && mm->nr_cpus < machine_nr_cpus())
		why = "cpus= is below the machine's CPUs, which would share lists "
		      "(percpu_index=cid can serve such a system)";
	mm->percpu_rseq = want_rseq && !why;
	mm->rseq_cpu_offset = area ? area + (cid ? RSEQ_MM_CID : RSEQ_CPU_ID) : 0;
	if (mm->percpu_rseq)
		rseq_cs_tls = area + RSEQ_CS;
	bool asked = (want_rseq && !mm->percpu_rseq) || (want_cid && !cid);
	snprintf(mm->percpu_mode, sizeof(mm->percpu_mode), "%s, indexed by %s%s%s",
		 mm->percpu_rseq ? "rseq" : "lock", cid ? "mm_cid" : "CPU",
		 asked && why ? ": " : "", asked && why ? why : "");
}

const char *za_percpu_mode(const za_mm_t *mm)
{
	return mm->percpu_mode;
}
