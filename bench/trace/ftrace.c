/*
 * tracefs: mounting it, saving and restoring what `zabench record` changes,
 * the per-CPU loss counters.
 */
#include "ftrace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#define NEEDS_ROOT "needs root to enable kernel tracepoints (run as root or with sudo)"

static void path_of(char *path, size_t len, const char *file)
{
	snprintf(path, len, "%s/%s", TRACEFS_DIR, file);
}

static int mount_tracefs(char *err, size_t errlen)
{
	if (!mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL))
		return 0;
	if (errno == EPERM || errno == EACCES)
		snprintf(err, errlen, "%s", NEEDS_ROOT);
	else if (errno == ENODEV)
		snprintf(err, errlen, "tracefs is not available: this kernel has no tracefs "
			 "(built without CONFIG_TRACING?)");
	else
		snprintf(err, errlen, "tracefs is not available: mount -t tracefs nodev %s: %s",
			 TRACEFS_DIR, strerror(errno));
	return -1;
}

int ftrace_ready(char *err, size_t errlen)
{
	/* Without root, the directory itself is usually unreadable: the mount
	 * is then tried and refused with EPERM, which says the same thing. */
	if (access(TRACEFS_DIR "/tracing_on", F_OK) && mount_tracefs(err, errlen))
		return -1;
	if (access(TRACEFS_DIR "/set_event", W_OK)) {
		if (errno == EACCES || errno == EPERM || errno == EROFS)
			snprintf(err, errlen, "%s", NEEDS_ROOT);
		else
			snprintf(err, errlen, "tracefs is not available: %s/set_event: %s",
				 TRACEFS_DIR, strerror(errno));
		return -1;
	}
	return 0;
}

int ftrace_lock(char *err, size_t errlen)
{
	int fd = open(TRACEFS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB))
		return 0;       /* fd stays open: the lock is the process's */
	if (errno == EWOULDBLOCK)
		snprintf(err, errlen, "another zabench record is using %s", TRACEFS_DIR);
	else
		snprintf(err, errlen, "cannot lock %s: %s", TRACEFS_DIR, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

ssize_t ftrace_read(const char *file, char *buf, size_t len)
{
	char path[256];
	path_of(path, sizeof(path), file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < len - 1) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = 0;
	close(fd);
	return (ssize_t)got;
}

/* Writes s to an open tracefs file in one call: the kernel parses one
 * value (one event name) per write, so a short write is an error, not
 * something to continue. */
static int write_value(int fd, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;
	do
		n = write(fd, s, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int open_truncated(const char *file)
{
	char path[256];
	path_of(path, sizeof(path), file);
	return open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
}

int ftrace_write(const char *file, const char *s)
{
	int fd = open_truncated(file);
	if (fd < 0)
		return -1;
	int rc = *s ? write_value(fd, s) : 0;
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* The whole of a file that may be long (set_event); NULL on failure. */
static char *read_all(const char *file)
{
	size_t cap = 1 << 16;
	for (;;) {
		char *buf = malloc(cap);
		if (!buf)
			return NULL;
		ssize_t n = ftrace_read(file, buf, cap);
		if (n >= 0 && (size_t)n < cap - 1)
			return buf;
		free(buf);
		if (n < 0)
			return NULL;
		cap *= 4;
	}
}

static void trim(char *s)
{
	s[strcspn(s, " )\n")] = 0;
}

static void save_cpu_sizes(struct ftrace_state *s)
{
	s->cpu_kb = calloc((size_t)s->nr_cpus, sizeof(*s->cpu_kb));
	for (int c = 0; s->cpu_kb && c < s->nr_cpus; c++) {
		char file[64], val[64];
		snprintf(file, sizeof(file), "per_cpu/cpu%d/buffer_size_kb", c);
		if (ftrace_read(file, val, sizeof(val)) > 0)
			s->cpu_kb[c] = strtol(val, NULL, 10);
	}
}

int ftrace_save(struct ftrace_state *s, int nr_cpus)
{
	memset(s, 0, sizeof(*s));
	s->nr_cpus = nr_cpus;
	if (ftrace_read("tracing_on", s->tracing_on, sizeof(s->tracing_on)) <= 0 ||
	    ftrace_read("buffer_size_kb", s->buffer_kb, sizeof(s->buffer_kb)) <= 0 ||
	    !(s->events = read_all("set_event")))
		return -1;
	/* "7 (expanded: 1408)": the buffers are not allocated yet, and would
	 * be 1408 KiB once used: that is the size to put back (writing 7
	 * would shrink them to 7 KiB for good). */
	const char *expanded = strstr(s->buffer_kb, "expanded: ");
	if (expanded)
		memmove(s->buffer_kb, expanded + strlen("expanded: "),
			strlen(expanded + strlen("expanded: ")) + 1);
	trim(s->tracing_on);
	trim(s->buffer_kb);
	if (!strcmp(s->buffer_kb, "X"))
		save_cpu_sizes(s);
	return 0;
}

static void restore_sizes(const struct ftrace_state *s)
{
	if (strcmp(s->buffer_kb, "X")) {
		if (ftrace_write("buffer_size_kb", s->buffer_kb))
			fprintf(stderr, "zabench record: cannot restore buffer_size_kb %s: %s\n",
				s->buffer_kb, strerror(errno));
		return;
	}
	for (int c = 0; s->cpu_kb && c < s->nr_cpus; c++) {
		char file[64], val[32];
		snprintf(file, sizeof(file), "per_cpu/cpu%d/buffer_size_kb", c);
		snprintf(val, sizeof(val), "%ld", s->cpu_kb[c]);
		if (s->cpu_kb[c] > 0 && ftrace_write(file, val))
			fprintf(stderr, "zabench record: cannot restore %s: %s\n", file,
				strerror(errno));
	}
}

/* Enables one event on set_event's fd; 0, or -1 with bad naming it and why. */
static int enable_event(int fd, const char *name, char *bad, size_t badlen)
{
	if (!write_value(fd, name))
		return 0;
	snprintf(bad, badlen, "%s: %s", name, strerror(errno));
	return -1;
}

/* Enables the events of a set_event text, one a line, after clearing all. */
static int enable_lines(const char *text, char *bad, size_t badlen)
{
	int fd = open_truncated("set_event");
	if (fd < 0)
		return -1;
	int rc = 0;
	for (const char *p = text; *p && !rc; p += strcspn(p, "\n"), p += *p == '\n') {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, "\n"), p);
		if (*name)
			rc = enable_event(fd, name, bad, badlen);
	}
	close(fd);
	return rc;
}

void ftrace_restore(struct ftrace_state *s)
{
	char bad[320];
	if (s->events && enable_lines(s->events, bad, sizeof(bad)))
		fprintf(stderr, "zabench record: cannot re-enable event %s\n", bad);
	restore_sizes(s);
	if (*s->tracing_on && ftrace_write("tracing_on", s->tracing_on))
		fprintf(stderr, "zabench record: cannot restore tracing_on: %s\n", strerror(errno));
	free(s->cpu_kb);
	free(s->events);
	memset(s, 0, sizeof(*s));
}

int ftrace_set_events(const char *const *events, int n, char *err, size_t errlen)
{
	int fd = open_truncated("set_event");
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s/set_event: %s", TRACEFS_DIR, strerror(errno));
		return -1;
	}
	char bad[320];
	int rc = 0;
	for (int i = 0; i < n && !rc; i++)
		rc = enable_event(fd, events[i], bad, sizeof(bad));
	if (rc)
		snprintf(err, errlen, "the kernel refused event %s", bad);
	close(fd);
	return rc;
}

/* "overrun: 12" in a per-CPU stats text; 0 if absent. */
static uint64_t stat_field(const char *text, const char *name)
{
	const char *p = strstr(text, name);
	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

void ftrace_loss(int nr_cpus, struct ftrace_loss *l)
{
	memset(l, 0, sizeof(*l));
	for (int c = 0; c < nr_cpus; c++) {
		char file[64], text[1024];
		snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", c);
		if (ftrace_read(file, text, sizeof(text)) <= 0)
			continue;
		/* "\noverrun:" is not "commit overrun:", which counts events
		 * refused while a full buffer was mid-commit: dropped too. */
		l->overrun += stat_field(text, "\noverrun:");
		l->dropped += stat_field(text, "\ndropped events:") +
			      stat_field(text, "\ncommit overrun:");
	}
}
