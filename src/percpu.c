/*
 * CPU numbering and topology.  No stdio or malloc here: the malloc front end
 * creates its memory system before malloc works.
 */
#include "percpu.h"

#include "config.h"
#include "rseq.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__thread struct cpu_binding cpu_binding __attribute__((tls_model("initial-exec")));

int za_bind_cpu(za_mm_t *mm, int cpu)
{
	if (cpu < -1 || cpu >= mm->nr_cpus) {
		za_set_last_error("za_bind_cpu: no CPU %d (the system has %d)", cpu, mm->nr_cpus);
		errno = EINVAL;
		return -1;
	}
	if (cpu_binding.mm)
		atomic_fetch_sub_explicit((_Atomic int *)&cpu_binding.mm->nr_cpu_bindings, 1,
					  memory_order_relaxed);
	cpu_binding = (struct cpu_binding){ cpu >= 0 ? mm : NULL, cpu };
	if (cpu >= 0)
		atomic_fetch_add_explicit(&mm->nr_cpu_bindings, 1, memory_order_relaxed);
	return 0;
}

void cpu_binding_forget(const struct za_mm *mm)
{
	if (cpu_binding.mm == mm)
		cpu_binding = (struct cpu_binding){ NULL, 0 };
}

/* No rseq, a CPU beyond the configured ones, a thread whose rseq
 * registration failed, or one yet to register its own area (rseq.c). */
int this_cpu_slow(const struct za_mm *mm)
{
	int cpu = -1;
	if (mm->rseq_cpu_offset) {
		cpu = (int)rseq_index(mm);
		if (cpu < 0 && mm->rseq_own_area && rseq_thread_register())
			cpu = (int)rseq_index(mm);
	}
	if (cpu < 0)
		cpu = sched_getcpu();
	return cpu < 0 ? 0 : cpu % mm->nr_cpus;
}

int machine_nr_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	return n < 1 ? 1 : n > ZA_MAX_CPUS ? ZA_MAX_CPUS : (int)n;
}

/* Reads a small sysfs file into buf; returns its length or -1. */
static int read_small_file(const char *path, char *buf, int len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, (size_t)len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

/* The next range of a cpulist such as "0-3,8,10-11", advancing *s past
 * it; false at its end. */
static bool cpulist_next(const char **s, int *lo, int *hi)
{
	const char *p = *s;
	if (*p < '0' || *p > '9')
		return false;
	for (*lo = 0; *p >= '0' && *p <= '9'; p++)
		*lo = *lo * 10 + (*p - '0');
	*hi = *lo;
	if (*p == '-')
		for (*hi = 0, p++; *p >= '0' && *p <= '9'; p++)
			*hi = *hi * 10 + (*p - '0');
	*s = *p == ',' ? p + 1 : p;
	return true;
}

/* Does a cpulist contain cpu? */
static bool cpulist_has(const char *s, int cpu)
{
	for (int lo, hi; cpulist_next(&s, &lo, &hi);)
		if (cpu >= lo && cpu <= hi)
			return true;
	return false;
}

static bool machine_has_exactly_nodes(int nr_nodes)
{
	char path[64];
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", nr_nodes - 1);
	if (access(path, F_OK))
		return false;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", nr_nodes);
	return access(path, F_OK) != 0;
}

/*
 * Fake NUMA assigns CPUs to nodes round-robin.  When the machine really has
 * as many nodes as configured (and more than one), its topology is used,
 * read from the same sysfs files libnuma reads.
 */
int machine_cpu_to_node(int cpu, int nr_nodes)
{
	if (nr_nodes > 1 && machine_has_exactly_nodes(nr_nodes)) {
		char path[64], list[1024];
		for (int node = 0; node < nr_nodes; node++) {
			snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
			if (read_small_file(path, list, sizeof(list)) > 0 && cpulist_has(list, cpu))
				return node;
		}
	}
	return cpu % nr_nodes;
}

/* The number of CPUs in a cpulist. */
static int cpulist_count(const char *s)
{
	int n = 0;
	for (int lo, hi; cpulist_next(&s, &lo, &hi);)
		n += hi >= lo ? hi - lo + 1 : 0;
	return n;
}

/*
 * The kernel's per_cpu_data_slice_size (cacheinfo): the size of CPU 0's
 * last-level cache, if it holds data, divided by the CPUs that share it;
 * 0 if the machine does not say.
 */
uint64_t machine_llc_per_cpu(void)
{
	int best_level = 0;
	uint64_t slice = 0;
	for (int i = 0; i < 16; i++) {
		char path[80], buf[256], type[32];
		int level;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (read_small_file(path, buf, sizeof(buf)) <= 0)
			break;
		level = atoi(buf);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (read_small_file(path, type, sizeof(type)) <= 0 || level < best_level)
			continue;
		best_level = level;
		slice = 0;
		if (strncmp(type, "Data", 4) && strncmp(type, "Unified", 7))
			continue;       /* an instruction cache last: no data slice */
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (read_small_file(path, buf, sizeof(buf)) <= 0)
			continue;
		char *end;
		uint64_t size = strtoull(buf, &end, 10);
		size <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
		int sharers = read_small_file(path, buf, sizeof(buf)) > 0 ? cpulist_count(buf) : 0;
		slice = sharers ? size / (uint64_t)sharers : 0;
	}
	return slice;
}
