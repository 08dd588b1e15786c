/*
 * zabench top [PID] [--system N] [--interval S] [--count N] [--json]
 *             [--once --report NAME]
 *
 * With no PID, the processes of this user running a published zonealloc
 * system (the drop-in malloc's publishes by default).  With one, that
 * process's allocator live: full screen on a terminal, a line per interval
 * otherwise; --once the full screen's first view as text; --json one
 * snapshot; --once --report NAME the report (buddyinfo, zoneinfo, vmstat,
 * pagetypeinfo, slabinfo; rss, the malloc's: where its RSS is) as
 * za_report wrote it there.
 */
#include "commands.h"
#include "top.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct top_opts {
	int pid, system, count;
	double interval;
	bool json, once;
	const char *report;
};

static int top_usage(const char *why)
{
	fprintf(stderr, "zabench top: %s\n"
		"usage: zabench top [PID] [--system N] [--interval S] [--count N] [--json]\n"
		"                   [--once --report buddyinfo|zoneinfo|vmstat|pagetypeinfo|slabinfo|rss]\n",
		why);
	return 2;
}

static unsigned long long now_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };
	nanosleep(&ts, NULL);
}

/* The process's resident memory from /proc (kB): VmRSS and its parts. */
static void read_rss(int pid, unsigned long long kb[4])
{
	static const char *const keys[4] = { "VmRSS:", "RssAnon:", "RssFile:", "RssShmem:" };
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	memset(kb, 0, 4 * sizeof(*kb));
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		for (int i = 0; i < 4; i++)
			if (!strncmp(line, keys[i], strlen(keys[i])))
				kb[i] = strtoull(line + strlen(keys[i]), NULL, 10);
	fclose(f);
}

static void take(struct top_sample *s, long long *into)
{
	for (int i = 0; i < s->nr_stats; i++)
		into[i] = za_peek_stat_value(s->peek, i);
}

/* The next read: the last one becomes the previous, unless no publish
 * came between (the rates stay those of the last two publishes). */
static bool next_sample(struct top_sample *s)
{
	if (s->failed)
		return false;
	if (za_peek_read(s->peek)) {
		fprintf(stderr, "zabench top: %s\n", za_last_error());
		s->failed = true;
		return false;
	}
	if (za_peek_stat_count(s->peek) != s->nr_stats) {
		fprintf(stderr, "zabench top: process %d exec'd a program of another zonealloc "
			"release (%d counters, not %d)\n", za_peek_pid(s->peek),
			za_peek_stat_count(s->peek), s->nr_stats);
		s->failed = true;
		return false;
	}
	if (za_peek_time_ns(s->peek) != s->cur_ns) {
		long long *t = s->prev;
		s->prev = s->cur;
		s->cur = t;
		s->prev_ns = s->cur_ns;
		s->cur_ns = za_peek_time_ns(s->peek);
		take(s, s->cur);
	}
	read_rss(za_peek_pid(s->peek), s->rss_kb);
	return true;
}

static int list_processes(void)
{
	struct za_peek_entry e[256];
	int n = za_peek_list(e, 256);
	if (n < 0) {
		fprintf(stderr, "zabench top: %s\n", za_last_error());
		return 1;
	}
	printf("%7s %3s %-16s %10s\n", "PID", "SYS", "COMMAND", "RSS(KiB)");
	for (int i = 0; i < n && i < 256; i++) {
		unsigned long long kb[4];
		read_rss(e[i].pid, kb);
		printf("%7d %3d %-16s %10llu\n", e[i].pid, e[i].system, e[i].comm, kb[0]);
	}
	if (!n)
		printf("(no process of this user publishes a zonealloc system: the drop-in malloc "
		       "does by default, za_mm_create with publish=1)\n");
	return 0;
}

/* A JSON string of s (the reports' text, a command's name). */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void print_json(const struct top_sample *s, FILE *out)
{
	static const char *const reports[] = { "buddyinfo", "zoneinfo", "vmstat", "pagetypeinfo",
					       "slabinfo", "rss" };
	const za_peek_t *p = s->peek;
	fprintf(out, "{\"pid\": %d, \"comm\": ", za_peek_pid(p));
	json_string(out, za_peek_comm(p));
	fprintf(out, ", \"time_ns\": %llu, \"publishes\": %llu, \"reports_time_ns\": %llu, "
		"\"rss_kb\": %llu, \"rss_anon_kb\": %llu, \"rss_file_kb\": %llu, \"rss_shmem_kb\": %llu, "
		"\"config\": ", za_peek_time_ns(p), za_peek_publishes(p), za_peek_reports_time_ns(p),
		s->rss_kb[0], s->rss_kb[1], s->rss_kb[2], s->rss_kb[3]);
	json_string(out, za_peek_config(p));
	fprintf(out, ",\n \"stats\": {");
	for (int i = 0; i < s->nr_stats; i++) {
		fputs(i ? ", " : "", out);
		json_string(out, za_peek_stat_name(p, i));
		fprintf(out, ": %lld", za_peek_stat_value(p, i));
	}
	fprintf(out, "},\n \"reports\": {");
	bool first = true;
	for (size_t i = 0; i < sizeof(reports) / sizeof(reports[0]); i++) {
		const char *text = za_peek_report(p, reports[i]);
		if (!text)
			continue;
		fprintf(out, "%s\"%s\": ", first ? "" : ", ", reports[i]);
		json_string(out, text);
		first = false;
	}
	fprintf(out, "}}\n");
}

/* Reads again every 50 ms, for up to `wait` seconds, until done(s, arg);
 * whether it came. */
static bool poll_until(struct top_sample *s, double wait,
		       bool (*done)(const struct top_sample *, unsigned long long), unsigned long long arg)
{
	for (double waited = 0; !done(s, arg); waited += 0.05) {
		if (waited >= wait)
			return false;
		sleep_s(0.05);
		if (!next_sample(s))
			return false;
	}
	return true;
}

static bool reports_since(const struct top_sample *s, unsigned long long ns)
{
	return za_peek_reports_time_ns(s->peek) >= ns;
}

static bool published_since(const struct top_sample *s, unsigned long long publishes)
{
	return za_peek_publishes(s->peek) != publishes;
}

/* A publish that rendered the reports in the last `wait` seconds (opening
 * the segment asked for them), waiting that long for one. */
static bool wait_reports(struct top_sample *s, double wait)
{
	return poll_until(s, wait, reports_since, now_realtime_ns() - (unsigned long long)(wait * 1e9));
}

/* The next publish, so that the rates have two to go by. */
static void wait_publish(struct top_sample *s, double wait)
{
	poll_until(s, wait, published_since, za_peek_publishes(s->peek));
}

static int print_report(struct top_sample *s, const char *name, double wait)
{
	bool fresh = wait_reports(s, wait);
	const char *text = za_peek_report(s->peek, name);
	if (!text) {
		fprintf(stderr, "zabench top: process %d has %s report '%s'%s\n", za_peek_pid(s->peek),
			errno == EAGAIN ? "not published its reports yet, so no" : "no", name,
			errno == EAGAIN ? " (it publishes from a thread or the malloc's purge worker; "
					  "an idle process may not)" : "");
		return 1;
	}
	if (!fresh)
		fprintf(stderr, "zabench top: process %d's reports are %.1f s old (it has not published "
			"since)\n", za_peek_pid(s->peek),
			(double)(now_realtime_ns() - za_peek_reports_time_ns(s->peek)) / 1e9);
	fputs(text, stdout);
	return 0;
}

/* A line per interval when the output is no terminal. */
static int print_lines(struct top_sample *s, const struct top_opts *o)
{
	printf("%-8s %10s %10s %7s %9s %9s %9s %8s %9s %9s %9s\n", "time", "pgalloc/s", "pgfree/s",
	       "pcphit%", "refill/s", "drainpg/s", "zlock/s", "hold_ns", "free_MiB", "slab_MiB",
	       "rss_MiB");
	for (int n = 0; !o->count || n < o->count; n++) {
		if (n) {
			sleep_s(o->interval);
			if (!next_sample(s))
				return 1;
		}
		double hits = top_rate_orders(s, "pcp_alloc_hit_");
		double allocs = top_rate_orders(s, "pcp_alloc_");
		double locks = top_rate(s, "zone_lock_acquire");
		time_t t = (time_t)(s->cur_ns / 1000000000ull);
		char when[16];
		strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
		printf("%-8s %10.0f %10.0f %7.1f %9.0f %9.0f %9.0f %8.0f %9.1f %9.1f %9.1f\n", when,
		       top_rate(s, "pgalloc"), top_rate(s, "pgfree"), allocs ? 100 * hits / allocs : 0,
		       top_rate(s, "pcp_refill"), top_rate(s, "pcp_bulkfree_pages"), locks,
		       locks ? top_rate(s, "zone_lock_hold_ns") / locks : 0,
		       (double)top_value(s, "nr_free_pages") / 256, (double)top_value(s, "nr_slab_pages") / 256,
		       (double)s->rss_kb[0] / 1024);
		fflush(stdout);
	}
	return 0;
}

/* What the options ask for, of the process opened. */
static int show(struct top_sample *s, const struct top_opts *o)
{
	if (o->report)
		return print_report(s, o->report, fmax(3 * o->interval, 3));
	if (o->json || o->once) {
		wait_reports(s, 3);
		wait_publish(s, 2);
		if (s->failed)
			return 1;
		if (o->json)
			print_json(s, stdout);
		else
			top_draw(stdout, s, VIEW_OVERVIEW, SORT_MEMORY);
		return 0;
	}
	if (isatty(STDOUT_FILENO) && !o->count && top_screen(s, o->interval, next_sample))
		return 0;
	return print_lines(s, o);
}

static int parse_top(int argc, char **argv, struct top_opts *o)
{
	static const struct option opts[] = {
		{ "system", required_argument, NULL, 's' }, { "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },  { "json", no_argument, NULL, 'j' },
		{ "once", no_argument, NULL, '1' },         { "report", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct top_opts){ .interval = 1 };
	optind = 1;
	for (int c; (c = getopt_long(argc, argv, "s:i:n:j1r:", opts, NULL)) != -1;) {
		char *end = NULL;
		switch (c) {
		case 's': o->system = (int)strtol(optarg, &end, 10); break;
		case 'i': o->interval = strtod(optarg, &end); break;
		case 'n': o->count = (int)strtol(optarg, &end, 10); break;
		case 'j': o->json = true; break;
		case '1': o->once = true; break;
		case 'r': o->report = optarg; break;
		default: return top_usage("unknown option");
		}
		if (end && (*end || end == optarg))
			return top_usage("a number was expected");
	}
	if (o->interval <= 0 || o->interval > 3600 || o->count < 0 || o->system < 0)
		return top_usage("--interval must be in (0, 3600], --count and --system >= 0");
	if (optind < argc) {
		char *end;
		o->pid = (int)strtol(argv[optind], &end, 10);
		if (*end || o->pid <= 0 || ++optind < argc)
			return top_usage("one PID was expected");
	}
	if (o->report && !o->once)
		return top_usage("--report goes with --once");
	return 0;
}

int top_command(int argc, char **argv)
{
	struct top_opts o;
	int rc = parse_top(argc, argv, &o);
	if (rc || !o.pid)
		return rc ? rc : list_processes();
	struct top_sample s = { 0 };
	if (!(s.peek = za_peek_open(o.pid, o.system))) {
		fprintf(stderr, "zabench top: %s\n", za_last_error());
		return 1;
	}
	int n = s.nr_stats = za_peek_stat_count(s.peek);
	s.prev = calloc((size_t)n, sizeof(long long));
	s.cur = calloc((size_t)n, sizeof(long long));
	if (!s.prev || !s.cur) {
		fprintf(stderr, "zabench top: out of memory\n");
		rc = 1;
	} else {
		take(&s, s.cur);
		memcpy(s.prev, s.cur, (size_t)n * sizeof(long long));
		s.prev_ns = s.cur_ns = za_peek_time_ns(s.peek);
		read_rss(o.pid, s.rss_kb);
		rc = show(&s, &o);
	}
	free(s.prev);
	free(s.cur);
	za_peek_close(s.peek);
	return rc;
}
