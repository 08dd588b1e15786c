/*
 * zabench record's raw reader: every CPU's trace_pipe_raw copied, a
 * sub-buffer at a time, to an unlinked temporary file while the command
 * runs, then formatted as ftrace text, oldest event first, by
 * libtraceevent.  Splicing a full sub-buffer costs the kernel next to
 * nothing where trace_pipe formats every event as it goes, so the buffers
 * are drained far faster than trace_pipe can (some 0.3-0.5 M events/s on
 * a machine like this one); the formatting waits until the command is
 * done.
 *
 * The text is the kernel's but for what it prints from kernel memory:
 * pointers are not hashed, and page= is the pfn (libtraceevent cannot
 * evaluate vmemmap_base).  Process names are looked up at the end, so
 * saved_cmdlines is enlarged meanwhile to remember every process.
 */
#include "record.h"
#include "ftrace.h"

#include <errno.h>
#include <event-parse.h>
#include <fcntl.h>
#include <kbuffer.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <trace-seq.h>
#include <tracefs.h>
#include <unistd.h>

#define SAVED_CMDLINES "32768"          /* the kernel's most: PID_MAX_DEFAULT */
#define PIPE_BYTES (1 << 20)            /* pipe-max-size's default */

/* The layout of a trace_pipe line. */
#define LINE_FORMAT "%16s-%-7d [%03d] %s %6.1000d: %s: %s\n"

struct raw_cpu {
	int fd;                 /* per_cpu/cpuN/trace_pipe_raw, non-blocking */
	int tmp;                /* its sub-buffers, each subbuf bytes */
	off_t size, pos;        /* bytes in tmp; the next to format */
	/* formatting: the sub-buffer loaded and its event at hand */
	void *page;
	struct kbuffer *kbuf;
	void *event;            /* NULL when the CPU has no more */
	unsigned long long ts;
	int missed;             /* the sub-buffer's lost events, not yet said */
};

struct raw_capture {
	int nr_cpus;
	size_t subbuf;          /* what one read of trace_pipe_raw returns */
	struct tep_handle *tep;
	struct raw_cpu *cpus;
	char *buf;              /* the copying thread's sub-buffer */
	int pipe[2];            /* what it splices through */
	size_t pipe_size;
	struct reader_thread thread;
	int copy_errno;         /* a read or write that ended the copying */
	char saved_cmdlines[32];        /* saved_cmdlines_size, to put back */
};

/* Moves the full sub-buffers of one CPU's buffer to its file, through the
 * pipe without a copy to user space; 0 or an errno.  Splicing takes only
 * full ones: reading a sub-buffer the kernel is still filling would store
 * a few events in a whole one, again and again at a high rate. */
static int splice_cpu(struct raw_capture *c, struct raw_cpu *rc)
{
	for (;;) {
		ssize_t n = splice(rc->fd, NULL, c->pipe[1], NULL, c->pipe_size,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 && errno != EAGAIN ? errno : 0;
		for (ssize_t m; n > 0; n -= m, rc->size += m) {
			m = splice(c->pipe[0], NULL, rc->tmp, NULL, (size_t)n, SPLICE_F_MOVE);
			if (m <= 0)
				return m < 0 ? errno : EIO;
		}
	}
}

/* Copies the rest of one CPU's buffer, the sub-buffer being filled
 * included, once the events are off; 0 or an errno.  A read returns one
 * sub-buffer, full or not (its header says how much is data); each is
 * stored whole, so that the n-th is at n * subbuf. */
static int read_rest(struct raw_capture *c, struct raw_cpu *rc)
{
	for (;;) {
		ssize_t n = read(rc->fd, c->buf, c->subbuf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 && errno != EAGAIN ? errno : 0;
		memset(c->buf + n, 0, c->subbuf - (size_t)n);
		if (write_all(rc->tmp, c->buf, c->subbuf) < c->subbuf)
			return errno;
		rc->size += (off_t)c->subbuf;
	}
}

static void *copy_thread(void *arg)
{
	struct raw_capture *c = arg;
	bool stopping = false;
	while (!stopping && !c->copy_errno) {
		stopping = reader_thread_wait(&c->thread);
		for (int cpu = 0; cpu < c->nr_cpus && !c->copy_errno; cpu++)
			c->copy_errno = splice_cpu(c, &c->cpus[cpu]);
	}
	for (int cpu = 0; cpu < c->nr_cpus && !c->copy_errno; cpu++)
		c->copy_errno = read_rest(c, &c->cpus[cpu]);
	return NULL;
}

/* A temporary file, unlinked: in TMPDIR, or /tmp. */
static int temp_file(void)
{
	const char *dir = getenv("TMPDIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/zabench-raw-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

static void free_capture(struct raw_capture *c)
{
	for (int cpu = 0; c->cpus && cpu < c->nr_cpus; cpu++) {
		struct raw_cpu *rc = &c->cpus[cpu];
		if (rc->fd >= 0)
			close(rc->fd);
		if (rc->tmp >= 0)
			close(rc->tmp);
		if (rc->kbuf)
			kbuffer_free(rc->kbuf);
		free(rc->page);
	}
	free(c->cpus);
	free(c->buf);
	for (int i = 0; i < 2; i++)
		if (c->pipe[i] >= 0)
			close(c->pipe[i]);
	if (c->tep)
		tep_free(c->tep);
	free(c);
}

/* Opens a CPU's raw buffer and its temporary file; 0, or -1 with err. */
static int open_cpu(struct raw_cpu *rc, int cpu, char *err, size_t errlen)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", TRACEFS_DIR, cpu);
	rc->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (rc->fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if ((rc->tmp = temp_file()) < 0) {
		snprintf(err, errlen, "cannot create a temporary file: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The event formats (kmem's only) and the layout of a sub-buffer. */
static int load_formats(struct raw_capture *c, char *err, size_t errlen)
{
	const char *const systems[] = { "kmem", NULL };
	if (!(c->tep = tracefs_local_events_system(NULL, systems))) {
		snprintf(err, errlen, "libtracefs cannot read the kmem event formats");
		return -1;
	}
	int size = tep_get_sub_buffer_size(c->tep);
	c->subbuf = size > 0 ? (size_t)size : (size_t)sysconf(_SC_PAGESIZE);
	return 0;
}

struct raw_capture *raw_start(int nr_cpus, char *err, size_t errlen)
{
	struct raw_capture *c = calloc(1, sizeof(*c));
	if (!c || !(c->cpus = calloc((size_t)nr_cpus, sizeof(*c->cpus)))) {
		snprintf(err, errlen, "out of memory");
		free(c);
		return NULL;
	}
	c->nr_cpus = nr_cpus;
	c->pipe[0] = c->pipe[1] = -1;
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		c->cpus[cpu].fd = c->cpus[cpu].tmp = -1;
	if (load_formats(c, err, errlen))
		goto fail;
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		if (open_cpu(&c->cpus[cpu], cpu, err, errlen))
			goto fail;
	if (!(c->buf = malloc(c->subbuf)) || pipe2(c->pipe, O_CLOEXEC))
		goto fail_errno;
	/* A larger pipe moves more sub-buffers a call; the default will do. */
	fcntl(c->pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
	int size = fcntl(c->pipe[1], F_GETPIPE_SZ);
	c->pipe_size = size > 0 ? (size_t)size : c->subbuf;
	int rc = reader_thread_start(&c->thread, copy_thread, c);
	if (rc < 0)
		goto fail_errno;
	if (rc) {
		snprintf(err, errlen, "cannot start the copying thread: %s", strerror(rc));
		goto fail;
	}
	/* Enlarged only once nothing here can fail, so that raw_stop puts it
	 * back; tracing is still off, so no process is missed. */
	if (ftrace_read("saved_cmdlines_size", c->saved_cmdlines, sizeof(c->saved_cmdlines)) > 0)
		ftrace_write("saved_cmdlines_size", SAVED_CMDLINES);
	return c;
fail_errno:
	snprintf(err, errlen, "%s", strerror(errno));
fail:
	free_capture(c);
	return NULL;
}

int raw_stop(struct raw_capture *c)
{
	reader_thread_stop(&c->thread);
	tracefs_load_cmdlines(NULL, c->tep);
	if (*c->saved_cmdlines)
		ftrace_write("saved_cmdlines_size", c->saved_cmdlines);
	if (!c->copy_errno)
		return 0;
	fprintf(stderr, "zabench record: copying the raw buffers: %s\n", strerror(c->copy_errno));
	return -1;
}

/* Loads the CPU's next sub-buffer that holds an event; false at the end. */
static bool next_subbuf(struct raw_capture *c, struct raw_cpu *rc)
{
	while (rc->pos < rc->size) {
		ssize_t n = pread(rc->tmp, rc->page, c->subbuf, rc->pos);
		if (n != (ssize_t)c->subbuf)
			break;          /* raw_format sees pos short of size */
		rc->pos += (off_t)c->subbuf;
		kbuffer_load_subbuffer(rc->kbuf, rc->page);
		rc->missed = kbuffer_missed_events(rc->kbuf);
		if ((rc->event = kbuffer_read_event(rc->kbuf, &rc->ts)))
			return true;
	}
	rc->event = NULL;
	return false;
}

static int start_formatting(struct raw_capture *c)
{
	enum kbuffer_long_size lsize = tep_get_header_page_size(c->tep) == 8 ?
				       KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4;
	enum kbuffer_endian endian = tep_is_file_bigendian(c->tep) ?
				     KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE;
	for (int cpu = 0; cpu < c->nr_cpus; cpu++) {
		struct raw_cpu *rc = &c->cpus[cpu];
		if (!(rc->page = malloc(c->subbuf)) || !(rc->kbuf = kbuffer_alloc(lsize, endian)))
			return -1;
		next_subbuf(c, rc);
	}
	return 0;
}

/* The CPU whose event at hand is the oldest, or NULL when all are done. */
static struct raw_cpu *oldest(struct raw_capture *c)
{
	struct raw_cpu *min = NULL;
	for (int cpu = 0; cpu < c->nr_cpus; cpu++) {
		struct raw_cpu *rc = &c->cpus[cpu];
		if (rc->event && (!min || rc->ts < min->ts))
			min = rc;
	}
	return min;
}

static void write_event(struct raw_capture *c, struct raw_cpu *rc, struct trace_seq *s,
			struct trace_writer *w, struct record_counts *n)
{
	int cpu = (int)(rc - c->cpus);
	if (rc->missed) {
		if (rc->missed > 0)
			trace_writer_printf(w, "CPU:%d [LOST %d EVENTS]\n", cpu, rc->missed);
		else
			trace_writer_printf(w, "CPU:%d [LOST EVENTS]\n", cpu);
		n->lost += rc->missed > 0 ? (uint64_t)rc->missed : 0;
		n->lost_markers++;
		rc->missed = 0;
	}
	struct tep_record rec = {
		.ts = rc->ts, .cpu = cpu, .data = rc->event, .ref_count = 1,
		.size = kbuffer_event_size(rc->kbuf), .record_size = kbuffer_curr_size(rc->kbuf),
	};
	struct tep_event *e = tep_find_event(c->tep, tep_data_type(c->tep, &rec));
	if (!e)
		return;         /* not a kmem event: another tool's, enabled meanwhile */
	trace_seq_reset(s);
	tep_print_event(c->tep, s, &rec, LINE_FORMAT, TEP_PRINT_COMM, TEP_PRINT_PID,
			TEP_PRINT_CPU, TEP_PRINT_LATENCY, TEP_PRINT_TIME, TEP_PRINT_NAME,
			TEP_PRINT_INFO);
	trace_writer_write(w, s->buffer, s->len);
	n->events++;
}

int raw_format(struct raw_capture *c, struct trace_writer *w, struct record_counts *n)
{
	struct trace_seq s;
	int rc = start_formatting(c);
	trace_seq_init(&s);
	for (struct raw_cpu *cpu; !rc && (cpu = oldest(c)); ) {
		write_event(c, cpu, &s, w, n);
		if (!(cpu->event = kbuffer_next_event(cpu->kbuf, &cpu->ts)))
			next_subbuf(c, cpu);
	}
	trace_seq_destroy(&s);
	for (int cpu = 0; cpu < c->nr_cpus && !rc; cpu++)
		if (c->cpus[cpu].pos < c->cpus[cpu].size)
			rc = -1;        /* a copy that could not be read back */
	if (rc)
		fprintf(stderr, "zabench record: cannot read back the raw buffers' copies\n");
	free_capture(c);
	return rc;
}
