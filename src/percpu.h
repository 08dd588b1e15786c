/*
 * Which CPU the calling thread runs on.
 *
 * glibc (2.35+) registers a restartable-sequences area for every thread, in
 * which the kernel keeps cpu_id (and since 6.3 mm_cid) current.  The memory
 * system caches where the field it indexes by (rseq.c: percpu_index) sits
 * relative to the thread pointer, so reading it is two loads, no system
 * call.  Without rseq, sched_getcpu() (a vDSO call) is the
 * fallback.  The answer may be stale the moment it is read: callers use it
 * only to pick a per-CPU structure, which they then lock (or which a
 * restartable section re-reads for itself), so a migration costs locality,
 * never correctness.
 */
#ifndef ZA_PERCPU_H
#define ZA_PERCPU_H

#include "mmzone.h"

int this_cpu_slow(const struct za_mm *mm);

static inline char *thread_pointer(void)
{
#if defined(__x86_64__)
	char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
#elif defined(__aarch64__)
	return __builtin_thread_pointer();
#else
	return NULL;
#endif
}

/*
 * za_bind_cpu: the CPU the calling thread acts as, for one system.  A
 * system counts the threads bound to it, so that this_cpu() of a system
 * nobody binds reads only its own (already cached) line.
 */
struct cpu_binding {
	const struct za_mm *mm;
	int cpu;
};
extern __thread struct cpu_binding cpu_binding __attribute__((tls_model("initial-exec")));
/* za_mm_destroy: the destroying thread's binding to mm ends with it. */
void cpu_binding_forget(const struct za_mm *mm);

/* The index the kernel keeps in the thread's rseq area (cpu_id or
 * mm_cid, rseq.c: percpu_index); mm->rseq_cpu_offset must be set.  -1
 * (as unsigned: huge) if the kernel refused the registration. */
static inline unsigned int rseq_index(const struct za_mm *mm)
{
	return *(const volatile unsigned int *)(thread_pointer() + mm->rseq_cpu_offset);
}

/* The system's index of the current CPU (configurations with fewer CPUs
 * than the machine fold the machine's CPUs onto theirs), or the CPU the
 * thread is bound to. */
static inline int this_cpu(const struct za_mm *mm)
{
	if (unlikely(load_relaxed(&mm->nr_cpu_bindings)) &&
	    cpu_binding.mm == mm && cpu_binding.cpu < mm->nr_cpus)
		return cpu_binding.cpu;
	if (likely(mm->rseq_cpu_offset)) {
		unsigned int cpu = rseq_index(mm);
		if (likely(cpu < (unsigned int)mm->nr_cpus))
			return (int)cpu;
	}
	return this_cpu_slow(mm);
}

/* percpu=rseq: may the calling thread's fast paths run as restartable
 * sections?  Not a thread playing a CPU (za_bind_cpu): the sections index
 * by the CPU it runs on, not the one it plays. */
static inline bool percpu_unbound(const struct za_mm *mm)
{
	return likely(!load_relaxed(&mm->nr_cpu_bindings));
}

static inline bool percpu_sections(const struct za_mm *mm)
{
	return mm->percpu_rseq && percpu_unbound(mm);
}

/* CPU topology. */
int machine_nr_cpus(void);
int machine_cpu_to_node(int cpu, int nr_nodes);
/* The machine's last-level cache per CPU sharing it, in bytes; 0 if unknown. */
uint64_t machine_llc_per_cpu(void);

#endif /* ZA_PERCPU_H */
