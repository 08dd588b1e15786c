/*
 * Publishing (publish=1): a system's counters and reports in a segment of
 * /dev/shm that another process of the same user reads (peek.c, zabench
 * top), laid out as publish.h says.
 *
 * Nothing on an allocation's path writes the segment: a publish folds the
 * counters (za_stat_all) and, while someone watches, renders the reports
 * (za_report), from the publisher thread every publish_interval_ms, from
 * the malloc's purge worker each round, or from za_publish().  Publishing
 * is an observer: a system whose segment cannot be made runs unpublished,
 * and za_publish() says why.
 */
#include "publish.h"
#include "internal.h"
#include "lock.h"
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const published_reports[] = {
	"buddyinfo", "zoneinfo", "vmstat", "pagetypeinfo", "slabinfo", "rss",
};
_Static_assert(sizeof(published_reports) / sizeof(published_reports[0]) <= PUB_MAX_REPORTS,
	       "the header has room for every report");

/* Where the parts lie (publish.h): kept here, never read back from the
 * segment, which any process of the user may write. */
struct pub_layout {
	uint32_t names_off, names_len, kinds_off, values_off, reports_off, reports_cap;
	size_t size;
};

#define REPORT_GROW (64u << 10)         /* the report area is backed this much at a time */

struct za_publisher {
	struct pub_header *seg;         /* NULL: unpublished (why says why) or not yet made */
	struct pub_layout lay;
	int fd;
	ino_t ino;                      /* fd's file: a program may close the fd (closefrom) */
	unsigned int system;            /* n of the name */
	pid_t pid;                      /* the process seg is of; another: make one anew */
	int err;
	char why[128];
	char path[64];
	za_lock_t lock;                 /* one publish at a time: a busy one is skipped */
	struct za_worker *worker;
	/* The reports' stream: a cookie over the report area that never
	 * writes a page it has not backed (posix_fallocate), so that a full
	 * /dev/shm cuts a report instead of raising SIGBUS; made with the
	 * system, so that rendering allocates nothing. */
	FILE *sink;
	uint32_t sink_pos, backed;
	int nr_stats;
	long long *vals;                /* za_stat_all's, before they go in */
	size_t alloc_size;              /* of this and vals */
};

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reads a small /proc file into buf (NUL-terminated); its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

uint64_t pub_process_start(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	const char *p = strrchr(buf, ')');         /* the command may hold anything */
	unsigned long long start = 0;
	/* after ") ": state, then fields 4..21, then 22, the start time */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			 "%*d %*d %*d %llu", &start) != 1)
		return 0;
	return start;
}

static size_t names_length(int n)
{
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += strlen(za_stat_name(i)) + 1;
	return len;
}

static struct pub_layout lay_out(int n)
{
	struct pub_layout l = { .names_len = (uint32_t)names_length(n) };
	size_t off = sizeof(struct pub_header);
	l.names_off = (uint32_t)off;
	off += l.names_len;
	l.kinds_off = (uint32_t)off;
	off = (off + (size_t)n + 7) & ~(size_t)7;
	l.values_off = (uint32_t)off;
	off += (size_t)n * sizeof(int64_t);
	l.reports_off = (uint32_t)((off + 4095) & ~(size_t)4095);
	l.reports_cap = PUB_REPORTS_CAP;
	l.size = l.reports_off + (size_t)PUB_REPORTS_CAP;
	return l;
}

/* The header and the parts written once: names, kinds, who we are. */
static void fill_segment(struct za_mm *mm, struct za_publisher *p, uint64_t start)
{
	struct pub_header *h = p->seg;
	const struct pub_layout *l = &p->lay;
	char *names = (char *)h + l->names_off;
	uint8_t *kinds = (uint8_t *)h + l->kinds_off;
	for (int i = 0; i < p->nr_stats; i++) {
		size_t len = strlen(za_stat_name(i)) + 1;
		memcpy(names, za_stat_name(i), len);
		names += len;
		kinds[i] = (uint8_t)za_stat_kind(i);
	}
	h->version = PUB_VERSION;
	h->header_size = sizeof(*h);
	h->segment_size = l->size;
	h->pid = (int32_t)p->pid;
	h->uid = (uint32_t)geteuid();
	h->start_time = start;
	h->system = p->system;
	h->nr_stats = (uint32_t)p->nr_stats;
	h->names_off = l->names_off;
	h->names_len = l->names_len;
	h->kinds_off = l->kinds_off;
	h->values_off = l->values_off;
	h->reports_off = l->reports_off;
	h->reports_cap = l->reports_cap;
	if (read_small("/proc/self/comm", h->comm, sizeof(h->comm)) > 0)
		h->comm[strcspn(h->comm, "\n")] = '\0';
	snprintf(h->config, sizeof(h->config), "%s", za_mm_config_string(mm));
	/* Last, released after the rest: a reader may look now. */
	uint64_t magic;
	memcpy(&magic, PUB_MAGIC, sizeof(magic));
	atomic_store_explicit((_Atomic uint64_t *)(void *)h->magic, magic, memory_order_release);
}

int pub_open(int dir, const char *name)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	int fd = openat(dir, name, flags | O_NOATIME);
	return fd < 0 && errno == EPERM ? openat(dir, name, flags) : fd;
}

enum pub_file pub_check(int dir, const char *name, int pid, struct pub_header *h)
{
	struct stat st, now;
	int fd = pub_open(dir, name);
	memset(h, 0, sizeof(*h));
	if (fd < 0)
		return PUB_FOREIGN;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return PUB_FOREIGN;
	}
	bool whole = pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) &&
		     !memcmp(h->magic, PUB_MAGIC, sizeof(h->magic));
	bool leftover = !flock(fd, LOCK_EX | LOCK_NB) && (whole || (kill(pid, 0) && errno == ESRCH));
	bool removed = leftover && !fstatat(dir, name, &now, AT_SYMLINK_NOFOLLOW) &&
		       now.st_ino == st.st_ino && !unlinkat(dir, name, 0);
	close(fd);
	h->comm[sizeof(h->comm) - 1] = '\0';
	return removed ? PUB_REMOVED : leftover ? PUB_FOREIGN : PUB_LIVE;
}

/* Makes /dev/shm/zonealloc.<pid>.<n> for the first free n; its fd, or -1. */
static int create_file(struct za_publisher *p, unsigned int *system)
{
	for (unsigned int n = 0; n < 4096; n++) {
		snprintf(p->path, sizeof(p->path), "/dev/shm/" PUB_PREFIX "%d.%u", (int)p->pid, n);
		int fd = open(p->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0) {
			if (!flock(fd, LOCK_SH | LOCK_NB)) {    /* held while the segment is live */
				*system = n;
				return fd;
			}
			int err = errno;
			unlink(p->path);
			close(fd);
			errno = err;
			return -1;
		}
		struct pub_header h;
		if (errno != EEXIST)
			return -1;
		if (pub_check(AT_FDCWD, p->path, p->pid, &h) == PUB_REMOVED)
			n--;            /* that n again */
	}
	errno = EEXIST;
	return -1;
}

static void unpublished(struct za_publisher *p, const char *what)
{
	p->err = errno;
	snprintf(p->why, sizeof(p->why), "%s %s: %s", what, p->path, strerror(p->err));
}

/* The segment of this process (p->pid); false with p->why if none.  All
 * but the report area is backed at once: a store to a page of a full
 * tmpfs would be a SIGBUS. */
static bool make_segment(struct za_mm *mm, struct za_publisher *p)
{
	uint64_t start = pub_process_start(p->pid);
	unsigned int system = 0;
	int fd = create_file(p, &system);
	if (fd < 0) {
		unpublished(p, "cannot create");
		return false;
	}
	void *seg = MAP_FAILED;
	struct stat st;
	int err = 0;
	if (ftruncate(fd, (off_t)p->lay.size) ||
	    (err = posix_fallocate(fd, 0, (off_t)p->lay.reports_off)) || fstat(fd, &st) ||
	    (seg = mmap(NULL, p->lay.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		if (err)
			errno = err;
		unpublished(p, "cannot size, back or map");
		unlink(p->path);
		close(fd);
		return false;
	}
	/* Not watched yet: the access time the readers set starts at 0. */
	const struct timespec times[2] = { { 0, 0 }, { 0, UTIME_OMIT } };
	futimens(fd, times);
	p->seg = seg;
	p->fd = fd;
	p->ino = st.st_ino;
	p->system = system;
	p->backed = 0;
	fill_segment(mm, p, start);
	return true;
}

/* The descriptor is still the segment's (a program may have closed it,
 * and another file taken its number). */
static bool fd_is_ours(const struct za_publisher *p, struct stat *st)
{
	return !fstat(p->fd, st) && st->st_ino == p->ino;
}

static void drop_segment(struct za_publisher *p, bool remove)
{
	struct stat st;
	if (!p->seg)
		return;
	if (remove)
		unlink(p->path);
	munmap(p->seg, p->lay.size);
	if (fd_is_ours(p, &st))
		close(p->fd);
	p->seg = NULL;
}

/* Someone read the segment in the last PUB_WATCH_S seconds. */
static bool watched(const struct za_publisher *p, uint64_t now)
{
	struct stat st;
	if (!fd_is_ours(p, &st))
		return false;
	uint64_t atime = (uint64_t)st.st_atim.tv_sec * 1000000000u + (uint64_t)st.st_atim.tv_nsec;
	return atime && now - atime < (uint64_t)PUB_WATCH_S * 1000000000u;
}

/* The sink's write: what fits in the backed part of the area, backing
 * more a step at a time; a short count (an error to stdio) once full. */
static ssize_t sink_write(void *cookie, const char *buf, size_t len)
{
	struct za_publisher *p = cookie;
	const struct pub_layout *l = &p->lay;
	/* a NUL ends each report: room for it stays */
	size_t room = p->sink_pos + 1 < l->reports_cap ? l->reports_cap - 1 - p->sink_pos : 0;
	if (len > room)
		len = room;
	while (p->sink_pos + len > p->backed) {
		uint32_t step = l->reports_cap - p->backed < REPORT_GROW ? l->reports_cap - p->backed
									 : REPORT_GROW;
		struct stat st;
		if (!step || !fd_is_ours(p, &st) ||
		    posix_fallocate(p->fd, (off_t)(l->reports_off + p->backed), (off_t)step)) {
			len = p->backed > p->sink_pos ? p->backed - p->sink_pos : 0;
			break;
		}
		p->backed += step;
	}
	memcpy((char *)p->seg + l->reports_off + p->sink_pos, buf, len);
	p->sink_pos += (uint32_t)len;
	return (ssize_t)len;
}

/* Each report into the area, one after the other, each ended by a NUL;
 * one that does not fit is cut where the area (or the memory) ends. */
static void render_reports(struct za_mm *mm, struct za_publisher *p)
{
	struct pub_header *h = p->seg;
	char *area = (char *)h + p->lay.reports_off;
	uint32_t n = 0;
	p->sink_pos = 0;
	clearerr(p->sink);
	for (size_t i = 0; i < ZA_ARRAY_SIZE(published_reports) && p->sink_pos + 1 < p->lay.reports_cap;
	     i++) {
		uint32_t off = p->sink_pos;
		za_report(mm, published_reports[i], p->sink);
		fflush(p->sink);
		if (p->sink_pos >= p->backed)
			break;          /* no room for its NUL */
		struct pub_report *r = &h->report[n++];
		snprintf(r->name, sizeof(r->name), "%s", published_reports[i]);
		r->off = off;
		r->len = p->sink_pos - off;
		area[p->sink_pos++] = '\0';
	}
	h->nr_reports = n;
}

/* The values (and reports) between the two stores of seq (publish.h). */
static void write_snapshot(struct za_mm *mm, struct za_publisher *p)
{
	struct pub_header *h = p->seg;
	uint64_t now = realtime_ns(), seq = atomic_load_explicit(&h->seq, memory_order_relaxed);
	bool reports = p->sink && watched(p, now);
	/* odd first: an acquire RMW, so that no store below goes before it */
	atomic_exchange_explicit(&h->seq, seq | 1, memory_order_acquire);
	int64_t *values = (int64_t *)(void *)((char *)h + p->lay.values_off);
	for (int i = 0; i < p->nr_stats; i++)
		values[i] = p->vals[i];
	if (reports) {
		render_reports(mm, p);
		h->reports_time_ns = now;
	}
	h->time_ns = now;
	h->publishes++;
	atomic_store_explicit(&h->seq, (seq | 1) + 1, memory_order_release);
}

int za_publish(za_mm_t *mm)
{
	struct za_publisher *p = mm->publisher;
	if (!p) {
		za_set_last_error("za_publish: the system was made with publish=0");
		errno = EINVAL;
		return -1;
	}
	if (!za_lock_try(&p->lock)) {
		za_set_last_error("za_publish: another publish of the system is under way");
		errno = EBUSY;
		return -1;
	}
	if (p->pid != getpid()) {               /* a forked child: the segment is its parent's */
		drop_segment(p, false);
		p->pid = getpid();
		make_segment(mm, p);
	}
	if (!p->seg) {
		za_unlock(&p->lock);
		za_set_last_error("za_publish: unpublished: %s", p->why);
		errno = p->err;
		return -1;
	}
	za_stat_all(mm, p->vals, p->nr_stats);
	write_snapshot(mm, p);
	za_unlock(&p->lock);
	return 0;
}

static void publish_tick(struct za_mm *mm)
{
	za_publish(mm);
}

int publish_init(struct za_mm *mm)
{
	if (!mm->cfg.publish)
		return 0;
	int n = za_stat_count();
	size_t size = (sizeof(struct za_publisher) + (size_t)n * sizeof(long long) + 4095) & ~(size_t)4095;
	struct za_publisher *p = za_os_alloc(size);     /* the values' buffer after it */
	if (!p) {
		za_set_last_error("za_mm_create: out of memory for publish=1");
		errno = ENOMEM;
		return -1;
	}
	*p = (struct za_publisher){ .fd = -1, .pid = getpid(), .nr_stats = n, .lay = lay_out(n),
				    .vals = (long long *)(void *)(p + 1), .alloc_size = size };
	mm->publisher = p;
	static const cookie_io_functions_t sink_io = { .write = sink_write };
	if ((p->sink = fopencookie(p, "w", sink_io)))
		setvbuf(p->sink, NULL, _IONBF, 0);      /* no buffer to allocate later */
	if (make_segment(mm, p))
		za_publish(mm);
	if (mm->cfg.publish_interval_ms > 0 &&
	    !(p->worker = worker_start(mm, "za-publish",
				       (uint64_t)mm->cfg.publish_interval_ms * 1000000u, publish_tick))) {
		publish_exit(mm);
		za_set_last_error("za_mm_create: cannot start the publisher thread "
				  "(publish_interval_ms=0 runs without it)");
		errno = EAGAIN;
		return -1;
	}
	return 0;
}

void publish_unlink(struct za_mm *mm)
{
	struct za_publisher *p = mm->publisher;
	if (p && p->seg && p->pid == getpid())
		unlink(p->path);
}

/* Plain system calls only: the parent may have been multithreaded.  The
 * child lets go of its parent's segment at once -- its descriptor would
 * keep the parent's lock, and so the segment, alive after the parent is
 * gone -- and makes its own at its first publish. */
void publish_after_fork(struct za_mm *mm)
{
	struct za_publisher *p = mm->publisher;
	if (!p)
		return;
	p->lock = (za_lock_t){ 0 };
	drop_segment(p, false);
}

int za_publish_id(za_mm_t *mm)
{
	const struct za_publisher *p = mm->publisher;
	if (!p || !p->seg || p->pid != getpid()) {
		errno = EINVAL;
		return -1;
	}
	return (int)p->system;
}

void publish_exit(struct za_mm *mm)
{
	struct za_publisher *p = mm->publisher;
	if (!p)
		return;
	worker_stop(&p->worker);
	drop_segment(p, p->pid == getpid());
	if (p->sink)
		fclose(p->sink);
	mm->publisher = NULL;
	za_os_free(p, p->alloc_size);
}
