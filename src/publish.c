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
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const published_reports[] = {
	"buddyinfo", "zoneinfo", "vmstat", "pagetypeinfo", "slabinfo",
};
_Static_assert(sizeof(published_reports) / sizeof(published_reports[0]) <= PUB_MAX_REPORTS,
	       "the header has room for every report");

struct za_publisher {
	struct pub_header *seg;         /* NULL: unpublished, err says why */
	size_t size;
	int fd;
	pid_t pid;                      /* the process the segment is of */
	int err;
	char why[128];
	char path[64];
	za_lock_t lock;                 /* one publish at a time: a busy one is skipped */
	struct za_worker *worker;
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

/* The layout's offsets for n counters whose names take names_len bytes. */
static size_t lay_out(struct pub_header *h, int n, size_t names_len)
{
	size_t off = sizeof(*h);
	h->names_off = (uint32_t)off;
	h->names_len = (uint32_t)names_len;
	off += names_len;
	h->kinds_off = (uint32_t)off;
	off = (off + (size_t)n + 7) & ~(size_t)7;
	h->values_off = (uint32_t)off;
	off += (size_t)n * sizeof(int64_t);
	h->reports_off = (uint32_t)off;
	h->reports_cap = PUB_REPORTS_CAP;
	return (off + PUB_REPORTS_CAP + 4095) & ~(size_t)4095;
}

static size_t names_length(int n)
{
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += strlen(za_stat_name(i)) + 1;
	return len;
}

/* The header and the parts written once: names, kinds, who we are. */
static void fill_segment(struct za_mm *mm, struct za_publisher *p, unsigned int system,
			 uint64_t start)
{
	struct pub_header *h = p->seg;
	size_t size = lay_out(h, p->nr_stats, names_length(p->nr_stats));
	char *names = (char *)h + h->names_off;
	uint8_t *kinds = (uint8_t *)h + h->kinds_off;
	for (int i = 0; i < p->nr_stats; i++) {
		size_t len = strlen(za_stat_name(i)) + 1;
		memcpy(names, za_stat_name(i), len);
		names += len;
		kinds[i] = (uint8_t)za_stat_kind(i);
	}
	h->version = PUB_VERSION;
	h->header_size = sizeof(*h);
	h->segment_size = size;
	h->pid = (int32_t)p->pid;
	h->uid = (uint32_t)geteuid();
	h->start_time = start;
	h->system = system;
	h->nr_stats = (uint32_t)p->nr_stats;
	if (read_small("/proc/self/comm", h->comm, sizeof(h->comm)) > 0)
		h->comm[strcspn(h->comm, "\n")] = '\0';
	snprintf(h->config, sizeof(h->config), "%s", za_mm_config_string(mm));
	memcpy(h->magic, PUB_MAGIC, sizeof(h->magic));  /* last: a reader may look now */
}

/* A segment of our name that is no live system: one a process gone before
 * us left (our pid, another start time), or our own image's before an
 * exec, whose descriptor the exec closed and with it its lock. */
static bool leftover(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	bool unlocked = !flock(fd, LOCK_EX | LOCK_NB);
	close(fd);
	return unlocked;
}

/* Makes /dev/shm/zonealloc.<pid>.<n> for the first free n; its fd, or -1. */
static int create_file(struct za_publisher *p, unsigned int *system)
{
	for (unsigned int n = 0; n < 4096; n++) {
		snprintf(p->path, sizeof(p->path), "/dev/shm/" PUB_PREFIX "%d.%u", (int)p->pid, n);
		int fd = open(p->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0) {
			flock(fd, LOCK_SH);     /* held while the segment is live */
			*system = n;
			return fd;
		}
		if (errno != EEXIST)
			return -1;
		if (leftover(p->path) && !unlink(p->path))
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

/* The segment of this process (p->pid); false with p->why if none. */
static bool make_segment(struct za_mm *mm, struct za_publisher *p)
{
	uint64_t start = pub_process_start(p->pid);
	unsigned int system = 0;
	struct pub_header probe = { 0 };
	size_t size = lay_out(&probe, p->nr_stats, names_length(p->nr_stats));
	int fd = create_file(p, &system);
	if (fd < 0) {
		unpublished(p, "cannot create");
		return false;
	}
	void *seg = MAP_FAILED;
	if (ftruncate(fd, (off_t)size) ||
	    (seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		unpublished(p, "cannot size or map");
		unlink(p->path);
		close(fd);
		return false;
	}
	/* Not watched yet: the access time the readers set starts at 0. */
	const struct timespec times[2] = { { 0, 0 }, { 0, UTIME_OMIT } };
	futimens(fd, times);
	p->seg = seg;
	p->size = size;
	p->fd = fd;
	fill_segment(mm, p, system, start);
	return true;
}

static void drop_segment(struct za_publisher *p, bool remove)
{
	if (!p->seg)
		return;
	if (remove)
		unlink(p->path);
	munmap(p->seg, p->size);
	close(p->fd);
	p->seg = NULL;
}

/* Someone read the segment in the last PUB_WATCH_S seconds. */
static bool watched(const struct za_publisher *p, uint64_t now)
{
	struct stat st;
	if (fstat(p->fd, &st))
		return false;
	uint64_t atime = (uint64_t)st.st_atim.tv_sec * 1000000000u + (uint64_t)st.st_atim.tv_nsec;
	return atime && now - atime < (uint64_t)PUB_WATCH_S * 1000000000u;
}

/* Each report into the segment's report area, one after the other; one
 * that does not fit is cut where the area ends. */
static void render_reports(struct za_mm *mm, struct pub_header *h)
{
	char *area = (char *)h + h->reports_off;
	uint32_t off = 0, n = 0;
	for (size_t i = 0; i < ZA_ARRAY_SIZE(published_reports) && off + 1 < h->reports_cap; i++) {
		FILE *f = fmemopen(area + off, h->reports_cap - off, "w");
		if (!f)
			break;
		za_report(mm, published_reports[i], f);
		long len = ftell(f);
		fclose(f);
		if (len < 0)
			break;
		if ((uint64_t)len >= h->reports_cap - off)
			len = (long)(h->reports_cap - off - 1);
		struct pub_report *r = &h->report[n++];
		snprintf(r->name, sizeof(r->name), "%s", published_reports[i]);
		r->off = off;
		r->len = (uint32_t)len;
		off += (uint32_t)len + 1;
	}
	h->nr_reports = n;
}

/* The values (and reports) between the two stores of seq (publish.h). */
static void write_snapshot(struct za_mm *mm, struct za_publisher *p)
{
	struct pub_header *h = p->seg;
	uint64_t now = realtime_ns(), seq = atomic_load_explicit(&h->seq, memory_order_relaxed);
	bool reports = watched(p, now);
	atomic_store_explicit(&h->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	int64_t *values = (int64_t *)(void *)((char *)h + h->values_off);
	for (int i = 0; i < p->nr_stats; i++)
		values[i] = p->vals[i];
	if (reports) {
		render_reports(mm, h);
		h->reports_time_ns = now;
	}
	h->time_ns = now;
	h->publishes++;
	atomic_store_explicit(&h->seq, seq + 2, memory_order_release);
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
	if (p->seg && p->pid != getpid()) {     /* a forked child: the segment is its parent's */
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
	*p = (struct za_publisher){ .fd = -1, .pid = getpid(), .nr_stats = n,
				    .vals = (long long *)(void *)(p + 1), .alloc_size = size };
	mm->publisher = p;
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

void publish_after_fork(struct za_mm *mm)
{
	if (mm->publisher)
		mm->publisher->lock = (za_lock_t){ 0 };
}

void publish_exit(struct za_mm *mm)
{
	struct za_publisher *p = mm->publisher;
	if (!p)
		return;
	worker_stop(&p->worker);
	drop_segment(p, p->pid == getpid());
	mm->publisher = NULL;
	za_os_free(p, p->alloc_size);
}
