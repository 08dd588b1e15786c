/*
 * `zabench record -o FILE [--slab] [--buffer-kb N] [--pipe] -- COMMAND [ARGS...]`:
 * the kernel's kmem tracepoints while COMMAND runs, as ftrace text with
 * the header trace.h describes, for `zabench replay`.
 *
 * The buffers are cleared and sized, the events enabled (only they: any
 * other enabled event is off meanwhile), COMMAND runs, and a thread drains
 * trace_pipe into the file (compressed by its suffix) as it does.  When
 * COMMAND exits the events are disabled, the rest is drained, and tracefs
 * is put back as it was: tracing_on, the buffers' size, the enabled events;
 * SIGINT or SIGTERM to zabench goes to COMMAND, whose exit ends the
 * recording the same way.  Built with libtracefs, the thread copies the
 * per-CPU raw buffers instead, which keeps up with far more events, and
 * they are formatted after COMMAND (record_raw.c); --pipe reads trace_pipe.
 *
 * Exit status: COMMAND's (128 + the signal if one killed it); 1 if the
 * trace could not be recorded or written completely; 2 for a usage error.
 */
#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "ftrace.h"
#include "record.h"
#include "trace.h"
#include "trace_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_BUFFER_KB 16384         /* per CPU */
#define MAX_BUFFER_KB (4L << 20)
/* trace_pipe returns at most a page a read; READ_BUF bytes go to the
 * compressor at once. */
#define PAGE_READ 4096
#define READ_BUF (256 << 10)

#define EVENT_NAME_MAX 64       /* "kmem:" and the longest trace_event_name */

#define USAGE "zabench record -o FILE [--slab] [--buffer-kb N] [--pipe] -- COMMAND [ARGS...]"

#ifdef ZA_RECORD_RAW
#define RAW_BUILT true
#else
#define RAW_BUILT false
#endif

struct record_opts {
	const char *out;
	bool slab, help;
	bool raw;               /* the raw buffers, not trace_pipe */
	long buffer_kb;
	char **cmd;
};

/* The event types recorded (kmem's), into types[NR_TEV]: the page events
 * (before TEV_KMALLOC), with --slab the slab events, and the zone-lock
 * events (from TEV_ZONE_LOCK_CONTENDED) where the kernel has them: they
 * were proposed in 2026.  How many. */
static int record_types(const struct record_opts *o, int *types)
{
	int n = 0;
	for (int t = 0; t < NR_TEV; t++) {
		bool slab = t >= TEV_KMALLOC && t < TEV_ZONE_LOCK_CONTENDED;
		bool lock = t >= TEV_ZONE_LOCK_CONTENDED;
		if ((slab && !o->slab) ||
		    (lock && access(TRACEFS_DIR "/events/kmem/mm_zone_locked", F_OK)))
			continue;
		types[n++] = t;
	}
	return n;
}

/* What the reader saw in the stream. */
struct pipe_stats {
	struct record_counts n; /* events: lines neither comments nor markers */
	char head[64];          /* the start of the line being read */
	size_t headlen;
};

struct pipe_reader {
	int fd;                 /* trace_pipe, non-blocking */
	struct reader_thread thread;
	struct trace_writer *w;
	struct pipe_stats stats;
	int read_errno;         /* a read that failed and ended the reader */
};

/* The command being recorded, for the signal handler; 0 when none runs. */
static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t pending_signal;

/* ------------------------------------------------------------------------
 * The stream: counted line by line as it passes to the file
 * ------------------------------------------------------------------------ */

/* A whole line's start: an event, a comment, or a lost-events marker
 * ("CPU:1 [LOST 523 EVENTS]", or "[LOST EVENTS]" when the count is not
 * known). */
static void count_line(struct pipe_stats *s, const char *head)
{
	if (!*head || *head == '#')
		return;
	const char *lost = strncmp(head, "CPU:", 4) ? NULL : strstr(head, "[LOST ");
	if (!lost) {
		s->n.events++;
		return;
	}
	s->n.lost_markers++;
	s->n.lost += strtoull(lost + strlen("[LOST "), NULL, 10);
}

/* Counts the lines of buf, which may begin or end inside one. */
static void count_lines(struct pipe_stats *s, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		size_t room = sizeof(s->head) - 1 - s->headlen;
		if (n > room)
			n = room;
		memcpy(s->head + s->headlen, p, n);
		s->headlen += n;
		if (!nl)
			return;
		s->head[s->headlen] = 0;
		count_line(s, s->head);
		s->headlen = 0;
		p = nl + 1;
	}
}

/* Reads what trace_pipe has into buf, up to READ_BUF bytes; *all says
 * whether that was all of it.  A failure other than "nothing now" is left
 * in r->read_errno. */
static size_t read_batch(struct pipe_reader *r, char *buf, bool *all)
{
	size_t got = 0;
	*all = false;
	/* A read returns at most a page: stop while one more surely fits. */
	while (got + PAGE_READ <= READ_BUF) {
		ssize_t n = read(r->fd, buf + got, READ_BUF - got);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			r->read_errno = errno;
		*all = true;
		break;
	}
	return got;
}

/* The reader thread: drains trace_pipe every DRAIN_MS until told to stop,
 * then once more to its end (the events are off by then). */
static void *drain_pipe(void *arg)
{
	struct pipe_reader *r = arg;
	char *buf = malloc(READ_BUF);
	bool stopping = false, all;
	if (!buf) {
		r->read_errno = ENOMEM;
		return NULL;
	}
	for (;;) {
		size_t got = read_batch(r, buf, &all);
		if (got) {
			count_lines(&r->stats, buf, got);
			trace_writer_write(r->w, buf, got);
		}
		if (r->read_errno || (stopping && all))
			break;
		if (!all)
			continue;
		stopping = reader_thread_wait(&r->thread);
	}
	free(buf);
	return NULL;
}

/* Opens trace_pipe and starts the reader, with every signal blocked in it
 * so that the main thread's handler gets them. */
static int start_reader(struct pipe_reader *r, struct trace_writer *w)
{
	memset(r, 0, sizeof(*r));
	r->w = w;
	r->fd = open(TRACEFS_DIR "/trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd < 0) {
		fprintf(stderr, "zabench record: cannot open %s/trace_pipe: %s\n", TRACEFS_DIR,
			strerror(errno));
		return -1;
	}
	int rc = reader_thread_start(&r->thread, drain_pipe, r);
	if (!rc)
		return 0;
	if (rc < 0)
		perror("zabench record: pipe");
	else
		fprintf(stderr, "zabench record: cannot start the reader: %s\n", strerror(rc));
	close(r->fd);
	return -1;
}

static void stop_reader(struct pipe_reader *r)
{
	reader_thread_stop(&r->thread);
	close(r->fd);
	if (r->read_errno)
		fprintf(stderr, "zabench record: reading trace_pipe: %s\n",
			strerror(r->read_errno));
}

/* ------------------------------------------------------------------------
 * The header and footer
 * ------------------------------------------------------------------------ */

/* The possible CPUs: one more than the highest number "0-3,8-11" names. */
static int possible_cpus(void)
{
	char buf[256];
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int highest = -1;
	if (f && fgets(buf, sizeof(buf), f)) {
		for (char *p = buf; *p; ) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			highest = v > highest ? (int)v : highest;
			p = end + (*end == ',' || *end == '-');
		}
	}
	if (f)
		fclose(f);
	return highest >= 0 ? highest + 1 : get_nprocs_conf();
}

/* Every line of a file, prefixed.  A file that cannot be read is noted. */
static void copy_prefixed(struct trace_writer *w, const char *path, const char *prefix)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		trace_writer_printf(w, "# no %s: %s\n", path, strerror(errno));
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0)
		trace_writer_printf(w, "%s%s%s", prefix, line, line[n - 1] == '\n' ? "" : "\n");
	free(line);
	fclose(f);
}

/* The command as a shell would take it back: words quoted where needed. */
static void quote_command(char **cmd, char *out, size_t len)
{
	size_t n = 0;
	for (int i = 0; cmd[i] && n + 8 < len; i++) {
		const char *a = cmd[i];
		bool plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					 "0123456789_./=:,+-@%") == strlen(a);
		n += (size_t)snprintf(out + n, len - n, "%s%s", i ? " " : "", plain ? a : "'");
		for (const char *p = a; !plain && *p && n + 8 < len; p++)
			n += (size_t)snprintf(out + n, len - n, *p == '\'' ? "'\\''" : "%c", *p);
		if (!plain && n + 2 < len)
			n += (size_t)snprintf(out + n, len - n, "'");
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every readable one-line vm.* sysctl, by name: the watermarks, the
 * per-CPU lists' high fraction and whatever else a replay may mirror. */
static void write_sysctls(struct trace_writer *w)
{
	DIR *d = opendir("/proc/sys/vm");
	struct dirent *e;
	char *names[256];
	int n = 0;
	if (!d) {
		trace_writer_printf(w, "# no /proc/sys/vm: %s\n", strerror(errno));
		return;
	}
	while (n < 256 && (e = readdir(d)))
		if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)))
			n++;
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	for (int i = 0; i < n; i++) {
		char path[320], val[256] = "";
		snprintf(path, sizeof(path), "/proc/sys/vm/%s", names[i]);
		FILE *f = fopen(path, "r");     /* write-only ones (drop_caches) fail */
		if (f && fgets(val, sizeof(val), f) && strchr(val, '\n'))
			trace_writer_printf(w, "# sysctl vm.%s %s", names[i], val);
		if (f)
			fclose(f);
		free(names[i]);
	}
}

static void write_header(struct trace_writer *w, const struct record_opts *o, int nr_cpus)
{
	struct utsname u;
	char when[64], cmd[2048] = "", clock[256] = "";
	time_t now = time(NULL);
	uname(&u);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	quote_command(o->cmd, cmd, sizeof(cmd));
	/* trace_clock lists the clocks, the one in use in brackets. */
	ftrace_read("trace_clock", clock, sizeof(clock));
	char *in_use = strchr(clock, '[');
	trace_writer_printf(w, "# zabench record: kernel kmem tracepoints, ftrace text\n"
			    "# nr_cpus %d\n# uname %s\n# machine %s\n# recorded %s\n# command %s\n",
			    nr_cpus, u.release, u.machine, when, cmd);
	int types[NR_TEV], n = record_types(o, types);
	trace_writer_printf(w, "# events");
	for (int i = 0; i < n; i++)
		trace_writer_printf(w, " kmem:%s", trace_event_name(types[i]));
	trace_writer_printf(w, "\n# buffer_size_kb %ld\n# trace_clock %.*s\n# page_size %ld\n",
			    o->buffer_kb, in_use ? (int)strcspn(in_use + 1, "]") : 0,
			    in_use ? in_use + 1 : "", sysconf(_SC_PAGESIZE));
	trace_writer_printf(w, "# reader %s\n", o->raw ?
			    "raw per-CPU buffers, formatted by libtraceevent (pointers not hashed, "
			    "page= is the pfn)" : "trace_pipe");
	write_sysctls(w);
	copy_prefixed(w, "/proc/zoneinfo", "# zoneinfo ");
	copy_prefixed(w, "/proc/buddyinfo", "# buddyinfo ");
	copy_prefixed(w, "/proc/pagetypeinfo", "# pagetypeinfo ");
}

/* ------------------------------------------------------------------------
 * The command
 * ------------------------------------------------------------------------ */

/* Goes to the command, unless the terminal sent it: the terminal signals
 * the whole foreground group, the command included. */
static void on_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	pending_signal = sig;
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill(child_pid, sig);
}

static void catch_signals(bool on)
{
	struct sigaction sa = { 0 };
	if (on) {
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO;       /* no SA_RESTART: waitpid sees EINTR */
	} else
		sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* Runs cmd and waits for it: its exit status, 128 + the signal that killed
 * it, or -1 if it could not be started. */
static int run_command(char **cmd)
{
	pid_t pid = fork();
	if (pid < 0) {
		perror("zabench record: fork");
		return -1;
	}
	if (!pid) {
		catch_signals(false);
		execvp(cmd[0], cmd);
		fprintf(stderr, "zabench record: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("zabench record: waitpid");
			child_pid = 0;
			return -1;
		}
	child_pid = 0;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* ------------------------------------------------------------------------
 * The recording
 * ------------------------------------------------------------------------ */

struct recording {
	struct pipe_reader reader;
#ifdef ZA_RECORD_RAW
	struct raw_capture *raw;
#endif
	struct record_counts counts;
	struct ftrace_loss before, after;
	double seconds;
	int status;             /* the command's, or -1 */
};

/* Clears and sizes the buffers, enables the events; 0 or -1 (printed). */
static int setup_tracing(const struct record_opts *o)
{
	char kb[32], err[512], names[NR_TEV][EVENT_NAME_MAX];
	const char *events[NR_TEV];
	int types[NR_TEV], n = record_types(o, types);
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "kmem:%s", trace_event_name(types[i]));
		events[i] = names[i];
	}
	snprintf(kb, sizeof(kb), "%ld", o->buffer_kb);
	if (ftrace_write("tracing_on", "0") || ftrace_write("trace", "")) {
		fprintf(stderr, "zabench record: cannot stop and clear the trace buffers: %s\n",
			strerror(errno));
		return -1;
	}
	if (ftrace_write("buffer_size_kb", kb)) {
		fprintf(stderr, "zabench record: cannot make the trace buffers %s KiB per CPU: "
			"%s%s\n", kb, strerror(errno),
			errno == ENOMEM ? " (try a smaller --buffer-kb)" : "");
		return -1;
	}
	if (ftrace_set_events(events, n, err, sizeof(err))) {
		fprintf(stderr, "zabench record: %s\n", err);
		return -1;
	}
	return 0;
}

/* Starts the reader o asks for: 0 or -1 (printed). */
static int start_reading(const struct record_opts *o, struct trace_writer *w, int nr_cpus,
			 struct recording *rec)
{
	if (!o->raw)
		return start_reader(&rec->reader, w);
#ifdef ZA_RECORD_RAW
	char err[512];
	if ((rec->raw = raw_start(nr_cpus, err, sizeof(err))))
		return 0;
	fprintf(stderr, "zabench record: %s\n", err);
#else
	(void)nr_cpus;          /* o->raw is never true */
#endif
	return -1;
}

/* Stops the reader with the events off: 0, or -1 if it failed (printed). */
static int stop_reading(struct recording *rec)
{
#ifdef ZA_RECORD_RAW
	if (rec->raw)
		return raw_stop(rec->raw);
#endif
	stop_reader(&rec->reader);
	rec->counts = rec->reader.stats.n;
	return rec->reader.read_errno ? -1 : 0;
}

/* Runs the command with the events on and the reader draining them. */
static int record(const struct record_opts *o, struct trace_writer *w, int nr_cpus,
		  struct recording *rec)
{
	if (setup_tracing(o) || start_reading(o, w, nr_cpus, rec))
		return -1;
	ftrace_loss(nr_cpus, &rec->before);
	double t0 = now_seconds();
	int rc = ftrace_write("tracing_on", "1");
	if (rc)
		fprintf(stderr, "zabench record: cannot turn tracing on: %s\n", strerror(errno));
	else if (pending_signal) {
		fprintf(stderr, "zabench record: interrupted before the command started\n");
		rc = -1;
	} else
		rec->status = run_command(o->cmd);
	/* Events off, then the rest drained: the reader's last pass ends. */
	ftrace_write("set_event", "");
	rec->seconds = now_seconds() - t0;
	if (stop_reading(rec))
		rc = -1;
	ftrace_loss(nr_cpus, &rec->after);
	return rc || rec->status < 0 ? -1 : 0;
}

/* The raw reader's events, formatted now that tracefs is put back. */
static int format_events(struct recording *rec, struct trace_writer *w)
{
#ifdef ZA_RECORD_RAW
	if (rec->raw)
		return raw_format(rec->raw, w, &rec->counts);
#else
	(void)rec;
	(void)w;
#endif
	return 0;
}

static uint64_t lost_events(const struct recording *rec)
{
	uint64_t counted = rec->after.overrun - rec->before.overrun +
			   rec->after.dropped - rec->before.dropped;
	/* The markers and the overrun counter count the same events. */
	return counted > rec->counts.lost ? counted : rec->counts.lost;
}

static void write_footer(struct trace_writer *w, const struct recording *rec)
{
	copy_prefixed(w, "/proc/slabinfo", "# slabinfo ");
	trace_writer_printf(w, "# events_written %llu\n# lost_events %llu\n# seconds %.3f\n",
			    (unsigned long long)rec->counts.events,
			    (unsigned long long)lost_events(rec), rec->seconds);
}

static void print_summary(const struct record_opts *o, const struct recording *rec,
			  uint64_t text, uint64_t written)
{
	uint64_t lost = lost_events(rec);
	fprintf(stderr, "zabench record: %llu events in %.2f s to %s (%.1f MB of text, "
		"%.1f MB written); ",
		(unsigned long long)rec->counts.events, rec->seconds, o->out, text / 1e6,
		written / 1e6);
	if (!lost && !rec->counts.lost_markers) {
		fprintf(stderr, "no events lost\n");
		return;
	}
	fprintf(stderr, "LOST %llu events (%llu LOST EVENTS markers in the stream counting %llu; "
		"per-CPU overrun +%llu, dropped +%llu): the buffers filled faster than they "
		"were read; raise --buffer-kb (now %ld per CPU)\n",
		(unsigned long long)lost, (unsigned long long)rec->counts.lost_markers,
		(unsigned long long)rec->counts.lost,
		(unsigned long long)(rec->after.overrun - rec->before.overrun),
		(unsigned long long)(rec->after.dropped - rec->before.dropped), o->buffer_kb);
}

/* ------------------------------------------------------------------------
 * The command line
 * ------------------------------------------------------------------------ */

static void print_help(void)
{
	printf("usage: " USAGE "\n"
	       "  -o FILE        the trace, compressed if FILE ends in .zst, .xz or .gz\n"
	       "  --slab         kmalloc, kfree, kmem_cache_alloc and kmem_cache_free too\n"
	       "  --buffer-kb N  the kernel's trace buffer per CPU, KiB (default %d)\n"
	       "  --pipe         read trace_pipe, not the raw per-CPU buffers\n"
	       "                 (%s)\n",
	       DEFAULT_BUFFER_KB,
	       RAW_BUILT ? "which are read by default: they keep up with more events"
			 : "this zabench reads trace_pipe anyway: built without libtracefs");
}

static int parse_record(int argc, char **argv, struct record_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->buffer_kb = DEFAULT_BUFFER_KB;
	o->raw = RAW_BUILT;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			o->help = true;
			return 0;
		} else if (!strcmp(argv[i], "--slab"))
			o->slab = true;
		else if (!strcmp(argv[i], "--pipe"))
			o->raw = false;
		else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc)
			o->out = argv[++i];
		else if (!strcmp(argv[i], "--buffer-kb") && i + 1 < argc) {
			if (!parse_long(argv[++i], 1, MAX_BUFFER_KB, &o->buffer_kb))
				return usage_error("record: bad --buffer-kb '%s' "
						   "(KiB per CPU, 1..4194304)", argv[i]);
		} else
			return usage_error("record: unknown or incomplete option '%s' (" USAGE ")",
					   argv[i]);
	}
	if (!o->out)
		return usage_error("%s", "record needs -o FILE (" USAGE ")");
	if (i == argc)
		return usage_error("%s", "record needs a command to run (" USAGE ")");
	o->cmd = argv + i;
	return 0;
}

int run_record(int argc, char **argv)
{
	struct record_opts o;
	char err[512];
	int rc = parse_record(argc, argv, &o);
	if (rc || o.help) {
		if (o.help)
			print_help();
		return rc;
	}
	if (ftrace_ready(err, sizeof(err)) || ftrace_lock(err, sizeof(err))) {
		fprintf(stderr, "zabench record: %s\n", err);
		return 1;
	}
	int nr_cpus = possible_cpus();
	struct ftrace_state saved;
	if (ftrace_save(&saved, nr_cpus)) {
		fprintf(stderr, "zabench record: cannot read the tracing state: %s\n",
			strerror(errno));
		return 1;
	}
	struct trace_writer *w = trace_writer_open(o.out, err, sizeof(err));
	if (!w) {
		fprintf(stderr, "zabench record: %s\n", err);
		ftrace_restore(&saved);
		return 1;
	}
	write_header(w, &o, nr_cpus);
	struct recording rec = { .status = -1 };
	catch_signals(true);
	rc = record(&o, w, nr_cpus, &rec);
	ftrace_restore(&saved);
	catch_signals(false);
	if (format_events(&rec, w))
		rc = -1;
	write_footer(w, &rec);
	uint64_t text, written;
	if (trace_writer_close(w, &text, &written))
		rc = -1;
	print_summary(&o, &rec, text, written);
	if (rc && rec.status >= 0)
		fprintf(stderr, "zabench record: the trace is incomplete; the command's exit "
			"status was %d\n", rec.status);
	return rc ? 1 : rec.status;
}
