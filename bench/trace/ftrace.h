/*
 * The kernel's tracefs as `zabench record` drives it: mounted if need be,
 * the state it changes saved and put back, the per-CPU buffers' loss
 * counters.  File names are relative to TRACEFS_DIR.
 */
#ifndef ZABENCH_FTRACE_H
#define ZABENCH_FTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TRACEFS_DIR "/sys/kernel/tracing"

/* Mounts tracefs if it is not; 0, or -1 with err saying what is missing
 * (root, or tracefs itself). */
int ftrace_ready(char *err, size_t errlen);

/* Holds tracefs for this process (an advisory lock, until it exits): two
 * recordings at once would each restore the other's settings.  0, or -1
 * with err saying why not. */
int ftrace_lock(char *err, size_t errlen);

/* A tracefs file's text, NUL-terminated and cut to len - 1; bytes or -1. */
ssize_t ftrace_read(const char *file, char *buf, size_t len);
/* Opens file truncated (which for "trace" and "set_event" clears it) and
 * writes s; 0, or -1 with errno set. */
int ftrace_write(const char *file, const char *s);

/* What record changes: tracing_on, the buffers' size, the enabled events. */
struct ftrace_state {
	char tracing_on[8];
	char buffer_kb[32];     /* "X" if the CPUs' sizes differ: then cpu_kb */
	int nr_cpus;
	long *cpu_kb;
	char *events;           /* set_event's text: one enabled event a line */
};
int ftrace_save(struct ftrace_state *s, int nr_cpus);
/* Puts the state back as far as the kernel lets it (a failure is printed);
 * frees what ftrace_save allocated. */
void ftrace_restore(struct ftrace_state *s);

/* Enables exactly these events ("kmem:mm_page_alloc"), every other one
 * disabled; 0, or -1 with err naming the event the kernel refused. */
int ftrace_set_events(const char *const *events, int n, char *err, size_t errlen);

/* The per-CPU buffers' counts of events they could not keep: overwritten
 * before they were read (overrun), or refused when full (dropped, and
 * "commit overrun"). */
struct ftrace_loss {
	uint64_t overrun, dropped;
};
void ftrace_loss(int nr_cpus, struct ftrace_loss *l);

#endif
