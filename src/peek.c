/*
 * Reading another process's published system (publish.h's segment): the
 * za_peek_* calls behind zabench top.
 *
 * Nothing read is trusted.  The segment is read with pread, not mapped, so
 * that one truncated under us is a short read and not a SIGBUS; every size,
 * offset and string is checked against the segment's own size before it is
 * used; a copy is taken only if the writer's sequence number was the same
 * even value before and after it.  The segment must be the reader's own
 * (its owner's uid) and its process the one that made it (pid and start
 * time): a segment left by a process that is gone says so.
 */
#include "publish.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PEEK_MAX_SEGMENT (64u << 20)
#define PEEK_RETRY_NS 1000000u          /* between reads of a segment mid-update */
#define PEEK_GIVE_UP_NS 1000000000u
#define PEEK_TOUCH_NS 2000000000u       /* how often a read renews "watched" */

struct za_peek {
	int fd, pid, system;
	uint64_t size, start_time, touched_ns;
	struct pub_header h;            /* of the last read */
	const char **names;
	uint8_t *kinds;
	int64_t *values, *scratch;      /* of the last read; the next one's copy */
	char *name_buf, *reports;
	size_t reports_len;
};

static int peek_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int peek_error(int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	za_set_last_error("%s", msg);
	errno = err;
	return -1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* All of [off, off + len) of the segment, or -1 (EPROTO) if it is shorter. */
static int read_at(const za_peek_t *p, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(p->fd, buf, len, (off_t)off);
	if (n == (ssize_t)len)
		return 0;
	return peek_error(EPROTO, "segment of process %d: truncated (%zd of %zu bytes at %llu)",
			  p->pid, n, len, (unsigned long long)off);
}

static bool in_segment(uint64_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* The parts of a header that never change, checked against the file. */
static int check_layout(const za_peek_t *p, const struct pub_header *h)
{
	const char *what = NULL;
	uint64_t n = h->nr_stats;
	if (memcmp(h->magic, PUB_MAGIC, sizeof(h->magic)))
		what = "not a zonealloc segment (no magic)";
	else if (h->version != PUB_VERSION)
		return peek_error(EPROTO, "segment of process %d: layout version %u; this library "
				  "reads version %u (use the zabench of the same release)",
				  p->pid, h->version, PUB_VERSION);
	else if (h->header_size != sizeof(*h) || h->segment_size != p->size)
		what = "header or segment size does not match the file";
	else if (h->pid != p->pid || h->system != (uint32_t)p->system)
		what = "names another process or system than its file";
	else if (!n || n > PUB_MAX_STATS || !in_segment(p->size, h->names_off, h->names_len) ||
		 !in_segment(p->size, h->kinds_off, n) || h->values_off % 8 ||
		 !in_segment(p->size, h->values_off, n * 8) ||
		 !in_segment(p->size, h->reports_off, h->reports_cap))
		what = "counters or reports lie outside it";
	if (what)
		return peek_error(EPROTO, "segment of process %d: %s", p->pid, what);
	return 0;
}

/* A later header must describe the same layout as the first. */
static bool same_layout(const struct pub_header *a, const struct pub_header *b)
{
	return !memcmp(a, b, offsetof(struct pub_header, comm));
}

/* The counters' names: nr_stats strings, each ending inside names_len. */
static int read_names(za_peek_t *p)
{
	const struct pub_header *h = &p->h;
	p->name_buf = malloc(h->names_len + 1u);
	p->names = calloc(h->nr_stats, sizeof(*p->names));
	p->kinds = malloc(h->nr_stats);
	p->values = calloc(h->nr_stats, sizeof(*p->values));
	p->scratch = calloc(h->nr_stats, sizeof(*p->scratch));
	if (!p->name_buf || !p->names || !p->kinds || !p->values || !p->scratch)
		return peek_error(ENOMEM, "out of memory reading process %d's segment", p->pid);
	if (read_at(p, p->name_buf, h->names_len, h->names_off) ||
	    read_at(p, p->kinds, h->nr_stats, h->kinds_off))
		return -1;
	p->name_buf[h->names_len] = '\0';
	size_t at = 0;
	for (uint32_t i = 0; i < h->nr_stats; i++) {
		size_t len = strnlen(p->name_buf + at, h->names_len - at);
		if (at + len >= h->names_len || p->kinds[i] > ZA_STAT_GAUGE)
			return peek_error(EPROTO, "segment of process %d: counter %u's name or kind "
					  "is malformed", p->pid, i);
		p->names[i] = p->name_buf + at;
		at += len + 1;
	}
	return 0;
}

/* The reports of one read, each ending inside the area. */
static int check_reports(const za_peek_t *p, const struct pub_header *h, uint64_t *end)
{
	*end = 0;
	if (h->nr_reports > PUB_MAX_REPORTS)
		return peek_error(EPROTO, "segment of process %d: %u reports", p->pid, h->nr_reports);
	for (uint32_t i = 0; i < h->nr_reports; i++) {
		const struct pub_report *r = &h->report[i];
		if (!memchr(r->name, '\0', sizeof(r->name)) ||
		    !in_segment(h->reports_cap, r->off, (uint64_t)r->len + 1))
			return peek_error(EPROTO, "segment of process %d: report %u is malformed",
					  p->pid, i);
		if ((uint64_t)r->off + r->len + 1 > *end)
			*end = (uint64_t)r->off + r->len + 1;
	}
	return 0;
}

/* Its writer is the process that made it, and has not exited or exec'd
 * (the writer's lock, publish.h). */
static bool process_alive(const za_peek_t *p)
{
	uint64_t start = pub_process_start(p->pid);
	if (start && p->start_time && start != p->start_time)
		return false;           /* its pid is another process's now */
	if (flock(p->fd, LOCK_EX | LOCK_NB))
		return true;
	flock(p->fd, LOCK_UN);
	return false;
}

/* The reader's mark that the system is watched: the file's access time. */
static void touch(za_peek_t *p)
{
	const struct timespec times[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
	futimens(p->fd, times);
	p->touched_ns = now_ns();
}

static int read_seq(const za_peek_t *p, uint64_t *seq)
{
	return read_at(p, seq, sizeof(*seq), offsetof(struct pub_header, seq));
}

/* One try: 1 taken, 0 mid-update (try again), -1 an error.  The sequence
 * number is read alone first and last: the copy's own loads may come in
 * any order, but each pread is a system call of its own, which the next
 * does not overtake. */
static int read_once(za_peek_t *p)
{
	struct pub_header h;
	uint64_t seq, again, end;
	if (read_seq(p, &seq))
		return -1;
	if (seq & 1)
		return 0;
	if (read_at(p, &h, sizeof(h), 0))
		return -1;
	if (!same_layout(&h, &p->h))
		return peek_error(EPROTO, "segment of process %d: its layout changed", p->pid);
	if (check_reports(p, &h, &end) ||
	    read_at(p, p->scratch, (size_t)h.nr_stats * 8, h.values_off))
		return -1;
	char *reports = end ? malloc(end) : NULL;
	if (end && !reports)
		return peek_error(ENOMEM, "out of memory reading process %d", p->pid);
	if (end && read_at(p, reports, end, h.reports_off)) {
		free(reports);
		return -1;
	}
	if (read_seq(p, &again)) {
		free(reports);
		return -1;
	}
	if (again != seq || h.seq != seq) {
		free(reports);
		return 0;
	}
	for (uint32_t i = 0; i < h.nr_reports; i++)
		reports[h.report[i].off + h.report[i].len] = '\0';
	int64_t *t = p->values;
	p->values = p->scratch;
	p->scratch = t;
	free(p->reports);
	p->reports = reports;
	p->reports_len = end;
	p->h = h;
	p->h.comm[sizeof(p->h.comm) - 1] = p->h.config[sizeof(p->h.config) - 1] = '\0';
	return 1;
}

static void release(za_peek_t *p)
{
	if (p->fd >= 0)
		close(p->fd);
	free(p->names);
	free(p->name_buf);
	free(p->kinds);
	free(p->values);
	free(p->scratch);
	free(p->reports);
}

/* The writer is gone.  If the process exec'd a program that publishes
 * too, the name holds its new segment: follow it. */
static int writer_gone(za_peek_t *p)
{
	char path[96];
	struct stat now, ours;
	snprintf(path, sizeof(path), "/dev/shm/" PUB_PREFIX "%d.%d", p->pid, p->system);
	if (pub_process_start(p->pid) != p->start_time)
		return peek_error(ESRCH, "process %d is gone", p->pid);
	if (stat(path, &now) || fstat(p->fd, &ours) || now.st_ino == ours.st_ino)
		return peek_error(ESRCH, "process %d exec'd another program, which has not "
				  "published: its segment is the old one's", p->pid);
	za_peek_t *q = za_peek_open(p->pid, p->system);
	if (!q)
		return -1;
	release(p);
	*p = *q;
	free(q);
	return 0;
}

int za_peek_read(za_peek_t *p)
{
	uint64_t start = now_ns();
	for (;;) {
		int got = read_once(p);
		if (got < 0)
			return -1;
		if (!process_alive(p))
			return writer_gone(p);
		if (got) {
			if (now_ns() - p->touched_ns >= PEEK_TOUCH_NS)
				touch(p);
			return 0;
		}
		if (now_ns() - start >= PEEK_GIVE_UP_NS)
			return peek_error(EAGAIN, "segment of process %d: mid-update for over a second "
					  "(its writer may have stopped while publishing)", p->pid);
		nanosleep(&(struct timespec){ 0, PEEK_RETRY_NS }, NULL);
	}
}

/* The file: the reader's own, a regular file of a sane size. */
static int open_file(za_peek_t *p)
{
	char path[96];
	struct stat st;
	snprintf(path, sizeof(path), "/dev/shm/" PUB_PREFIX "%d.%d", p->pid, p->system);
	if ((p->fd = pub_open(AT_FDCWD, path)) < 0)
		return peek_error(errno, "%s: %s (is process %d on zonealloc with publish=1?)", path,
				  strerror(errno), p->pid);
	if (fstat(p->fd, &st) || !S_ISREG(st.st_mode))
		return peek_error(EPROTO, "%s: not a regular file", path);
	if (st.st_uid != geteuid())
		return peek_error(EACCES, "%s belongs to uid %u; only its owner may read it", path,
				  (unsigned int)st.st_uid);
	if (st.st_size < (off_t)sizeof(struct pub_header) || st.st_size > PEEK_MAX_SEGMENT)
		return peek_error(EPROTO, "%s: %lld bytes, not a zonealloc segment", path,
				  (long long)st.st_size);
	p->size = (uint64_t)st.st_size;
	return 0;
}

za_peek_t *za_peek_open(int pid, int n)
{
	za_peek_t *p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->fd = -1;
	p->pid = pid;
	p->system = n;
	if (pid <= 0 || n < 0) {
		peek_error(EINVAL, "za_peek_open: no process %d or system %d", pid, n);
	} else if (!open_file(p) && !read_at(p, &p->h, sizeof(p->h), 0) &&
		   !check_layout(p, &p->h)) {
		p->start_time = p->h.start_time;
		if (!process_alive(p)) {
			if (!writer_gone(p))
				return p;
		} else if (!read_names(p)) {
			touch(p);
			if (!za_peek_read(p))
				return p;
		}
	}
	int err = errno;
	za_peek_close(p);
	errno = err;
	return NULL;
}

void za_peek_close(za_peek_t *p)
{
	if (!p)
		return;
	release(p);
	free(p);
}

int za_peek_stat_count(const za_peek_t *p)
{
	return (int)p->h.nr_stats;
}

const char *za_peek_stat_name(const za_peek_t *p, int i)
{
	return i >= 0 && i < (int)p->h.nr_stats ? p->names[i] : NULL;
}

enum za_stat_kind za_peek_stat_kind(const za_peek_t *p, int i)
{
	return i >= 0 && i < (int)p->h.nr_stats ? (enum za_stat_kind)p->kinds[i] : ZA_STAT_GAUGE;
}

long long za_peek_stat_value(const za_peek_t *p, int i)
{
	return i >= 0 && i < (int)p->h.nr_stats ? (long long)p->values[i] : 0;
}

long long za_peek_stat(const za_peek_t *p, const char *name)
{
	for (uint32_t i = 0; i < p->h.nr_stats; i++)
		if (!strcmp(p->names[i], name))
			return (long long)p->values[i];
	errno = EINVAL;
	return -1;
}

const char *za_peek_report(const za_peek_t *p, const char *what)
{
	for (uint32_t i = 0; i < p->h.nr_reports; i++)
		if (!strcmp(p->h.report[i].name, what))
			return p->reports + p->h.report[i].off;
	errno = p->h.reports_time_ns ? EINVAL : EAGAIN;
	return NULL;
}

unsigned long long za_peek_time_ns(const za_peek_t *p)
{
	return p->h.time_ns;
}

unsigned long long za_peek_reports_time_ns(const za_peek_t *p)
{
	return p->h.reports_time_ns;
}

unsigned long long za_peek_publishes(const za_peek_t *p)
{
	return p->h.publishes;
}

int za_peek_pid(const za_peek_t *p)
{
	return p->pid;
}

const char *za_peek_comm(const za_peek_t *p)
{
	return p->h.comm;
}

const char *za_peek_config(const za_peek_t *p)
{
	return p->h.config;
}

/* "zonealloc.<pid>.<n>" and nothing after. */
static bool segment_name(const char *name, int *pid, int *n)
{
	int used = 0;
	return sscanf(name, PUB_PREFIX "%d.%d%n", pid, n, &used) == 2 && !name[used] && *pid > 0 &&
	       *n >= 0;
}

int za_peek_list(struct za_peek_entry *out, int max)
{
	DIR *d = opendir("/dev/shm");
	if (!d)
		return peek_error(errno, "/dev/shm: %s", strerror(errno));
	int count = 0, pid, n;
	for (struct dirent *e; (e = readdir(d));) {
		struct pub_header h;
		if (!segment_name(e->d_name, &pid, &n) ||
		    pub_check(dirfd(d), e->d_name, pid, &h) != PUB_LIVE)
			continue;
		if (count < max) {
			out[count] = (struct za_peek_entry){ .pid = pid, .system = n };
			snprintf(out[count].comm, sizeof(out[count].comm), "%s", h.comm);
		}
		count++;
	}
	closedir(d);
	return count;
}
