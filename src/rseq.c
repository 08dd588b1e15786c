/*
 * Choosing the per-CPU mechanism, the thread's rseq area, and the fence
 * (rseq.h).
 *
 * A thread has at most one rseq area, registered with the kernel.  glibc
 * 2.35+ registers one for every thread, from its first instruction to its
 * last, and fork keeps it: that one serves whenever it exists.  Where the C
 * library has no rseq support at all (glibc before 2.35, other C
 * libraries), zonealloc registers an area of its own in each thread, at
 * the thread's first per-CPU slow path.  Where glibc has support but
 * registered none -- GLIBC_TUNABLES=glibc.pthread.rseq=0, often set so that
 * another runtime can register its own -- the per-CPU trylock serves,
 * unless rseq_area=own says the area is ours to take.
 */
#include "rseq.h"

#include "mmzone.h"
#include "percpu.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc 2.35+'s registration, weak: NULL with a C library without rseq. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
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

/*
 * The area zonealloc registers itself (the ABI's struct rseq).  Until its
 * thread registers it, cpu_id and mm_cid read -1: as an index, larger than
 * any, so every section fails and the thread takes a slow path, which
 * registers it (this_cpu_slow).  A thread the kernel refuses keeps -2
 * there and the lock paths for good.  The library is never unloaded
 * (-z nodelete), so no registered area outlives its TLS.
 */
struct rseq_abi_area {
	uint32_t cpu_id_start, cpu_id;
	uint64_t rseq_cs;
	uint32_t flags, node_id, mm_cid, reserved;
} __attribute__((aligned(32)));

enum { AREA_UNREGISTERED = -1, AREA_REFUSED = -2 };

static __thread struct rseq_abi_area own_area __attribute__((tls_model("initial-exec"))) = {
	.cpu_id = (uint32_t)AREA_UNREGISTERED,
	.mm_cid = (uint32_t)AREA_UNREGISTERED,
};

static int own_area_state(void)
{
	return *(const volatile int *)&own_area.cpu_id;
}

/* Registers the calling thread's own area once; 0, or the errno of the
 * refusal (the thread then keeps the lock paths). */
static int own_area_register(void)
{
	if (own_area_state() != AREA_UNREGISTERED)
		return own_area_state() == AREA_REFUSED ? EPERM : 0;
	if (syscall(__NR_rseq, &own_area, sizeof(own_area), 0, RSEQ_SIG) == 0)
		return 0;
	int err = errno;
	*(volatile uint32_t *)&own_area.cpu_id = (uint32_t)AREA_REFUSED;
	return err;
}

bool rseq_thread_register(void)
{
	return own_area_register() == 0;
}

static const char *own_area_refused(int err)
{
	switch (err) {
	case ENOSYS:
		return "the kernel has no rseq (before 4.18)";
	case EBUSY:
		return "another library registered this thread's rseq area";
	default:
		return "the kernel refused zonealloc's rseq registration";
	}
}

/* The rseq area the sections use: its offset from the thread pointer, or
 * 0 and why none.  *own: threads register it themselves. */
static const char *rseq_area(const struct za_config *cfg, long *off, bool *own)
{
	*off = 0;
	*own = false;
	if (&__rseq_size && __rseq_size) {
		if (*(const volatile int *)(thread_pointer() + __rseq_offset + RSEQ_CPU_ID) < 0)
			return "the kernel refused this thread's rseq registration";
		*off = (long)__rseq_offset;
		return NULL;
	}
	if (&__rseq_size && strcmp(cfg->rseq_area, "own"))
		return "glibc registered no rseq area (glibc.pthread.rseq=0, or the kernel has "
		       "none; rseq_area=own registers zonealloc's)";
	int err = own_area_register();
	if (err)
		return own_area_refused(err);
	*off = (char *)&own_area - thread_pointer();
	*own = true;
	return NULL;
}

/* Why the sections cannot run here, or NULL. */
static const char *rseq_sections(long area)
{
#if defined(ZA_TSAN)
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
	bool own;
	const char *why = rseq_area(&mm->cfg, &area, &own);
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
	mm->rseq_own_area = own;
	if (mm->percpu_rseq)
		rseq_cs_tls = area + RSEQ_CS;
	bool asked = (want_rseq && !mm->percpu_rseq) || (want_cid && !cid);
	snprintf(mm->percpu_mode, sizeof(mm->percpu_mode), "%s, indexed by %s%s%s%s",
		 mm->percpu_rseq ? "rseq" : "lock", cid ? "mm_cid" : "CPU",
		 mm->percpu_rseq && own ? " (zonealloc's own rseq area)" : "",
		 asked && why ? ": " : "", asked && why ? why : "");
}

const char *za_percpu_mode(const za_mm_t *mm)
{
	return mm->percpu_mode;
}

/* ------------------------------------------------------------------------
 * The floor: what a per-CPU hit costs at least on this machine
 * ------------------------------------------------------------------------ */
struct floor_slot {
	struct rseq_stack stack;
	_Atomic uint32_t stop;
} __attribute__((aligned(ZA_CACHELINE)));

_Static_assert(sizeof(struct floor_slot) == 1u << 6, "a slot a cache line: shift 6");

/* One element, pushed and popped `pairs` times on the CPU's stack by the
 * same sections the fronts and quicklists run, with no other work: no
 * tally fields to fold, no check of the element, a plain link.  An abort
 * (preemption, migration) runs the section again, uncounted: the floor is
 * no event of the system's. */
static __attribute__((noinline)) long floor_pairs(const struct rseq_percpu *pc, void *elem, long pairs)
{
	static const struct rseq_link plain = { .off = 0 };
	long done = 0;
	for (; done < pairs; done++) {
		void *got;
		int st;
		while ((st = rseq_push(pc, &plain, elem, elem, 1, 0, 0, 0)) == RSEQ_ABORTED)
			;
		while (st == RSEQ_OK && (st = rseq_pop(pc, &plain, (uint64_t)-1, 0, &got)) == RSEQ_ABORTED)
			;
		if (st != RSEQ_OK)
			break;
	}
	return done;
}

/* A migration between the push and the pop leaves the element on the
 * CPU it was pushed on and the pop finds its own stack empty: the
 * measurement starts over, on stacks emptied again. */
#define FLOOR_TRIES 3

double za_percpu_floor_ns(za_mm_t *mm, long pairs)
{
	if (pairs <= 0) {
		za_set_last_error("za_percpu_floor_ns: %ld pairs", pairs);
		errno = EINVAL;
		return -1;
	}
	if (!mm->percpu_rseq || !percpu_unbound(mm)) {
		za_set_last_error("za_percpu_floor_ns: the system's per-CPU paths are not "
				  "restartable sequences (%s)", mm->percpu_mode);
		errno = ENOTSUP;
		return -1;
	}
	size_t size = (size_t)mm->nr_cpus * sizeof(struct floor_slot);
	struct floor_slot *slots = za_os_alloc(size);
	void **elem = za_os_alloc(ZA_CACHELINE);
	double ns = -1;
	if (!slots || !elem)
		errno = ENOMEM;
	struct rseq_percpu pc = {
		.base = slots ? (char *)&slots[0].stack : NULL,
		.stop = (long)offsetof(struct floor_slot, stop),
		.shift = 6,
		.nr = (unsigned int)mm->nr_cpus,
		.index_tls = mm->rseq_cpu_offset,
	};
	for (int try = 0; slots && elem && ns < 0 && try < FLOOR_TRIES; try++) {
		memset(slots, 0, size);
		if (floor_pairs(&pc, elem, pairs / 16 + 1) <= pairs / 16)       /* warm */
			continue;
		uint64_t t0 = za_now_ns();
		if (floor_pairs(&pc, elem, pairs) == pairs)
			ns = (double)(za_now_ns() - t0) / (double)pairs;
	}
	za_os_free(slots, size);
	za_os_free(elem, ZA_CACHELINE);
	if (ns < 0 && slots && elem) {
		za_set_last_error("za_percpu_floor_ns: the thread migrated mid-pair in each of "
				  "%d tries", FLOOR_TRIES);
		errno = EAGAIN;
	}
	return ns;
}
