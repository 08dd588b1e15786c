/*
 * `zabench report`: every experiment with short defaults, A/B for every
 * switch that has one, into bench-results/<date-time>/: report.md with the
 * tables, one JSON file per run, and PNG plots drawn by plot.py when
 * matplotlib is available.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef ZA_BENCH_DIR
#define ZA_BENCH_DIR "bench"
#endif

struct run_record {
	char id[64];
	char title[640];
};

static int mkdir_p(const char *path)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	struct stat st;
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -1;
	if (stat(buf, &st) || !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* Splits "--order 0 --ab x" into argv after the experiment's name. */
static int split_args(char *line, char **argv, int max)
{
	int n = 0;
	for (char *tok = strtok(line, " "); tok && n < max - 1; tok = strtok(NULL, " "))
		argv[n++] = tok;
	argv[n] = NULL;
	return n;
}

static FILE *open_in(const char *dir, const char *name, const char *mode)
{
	char path[1280];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, mode);
	if (!f)
		fprintf(stderr, "zabench: cannot open %s: %s\n", path, strerror(errno));
	return f;
}

/* Runs one report entry; writes <id>.json and <id>.txt.  Returns 0 or -1. */
static int run_entry(const struct experiment *e, const char *args, bool quick, const char *dir,
		     struct run_record *rec, int seq)
{
	char line[512], *argv[32];
	snprintf(line, sizeof(line), "%s %s", e->name, args);
	snprintf(rec->title, sizeof(rec->title), "zabench %s%s", line, quick ? " (quick)" : "");
	snprintf(rec->id, sizeof(rec->id), "%02d-%s", seq, e->name);
	int argc = split_args(line, argv, 32);

	static struct bench b;
	if (bench_prepare(&b, argc, argv))
		return -1;
	b.opts.quick = quick;
	fprintf(stderr, "zabench report: %s\n", rec->title);
	if (bench_run(&b))
		return -1;
	char name[96];
	snprintf(name, sizeof(name), "%s.json", rec->id);
	FILE *json = open_in(dir, name, "w");
	snprintf(name, sizeof(name), "%s.txt", rec->id);
	FILE *txt = open_in(dir, name, "w");
	if (json && txt) {
		print_json(&b, json);
		print_table(&b, txt);
	}
	if (json)
		fclose(json);
	if (txt)
		fclose(txt);
	bench_finish(&b);
	return json && txt ? 0 : -1;
}

/* Draws the plots; returns NULL or why there are none. */
static const char *draw_plots(const char *dir)
{
	static char why[640];
	const char *script = getenv("ZABENCH_PLOT");
	char path[512];
	if (!script) {
		snprintf(path, sizeof(path), "%s/plot.py", ZA_BENCH_DIR);
		script = path;
	}
	if (access(script, R_OK)) {
		snprintf(why, sizeof(why), "the plot script %s is missing", script);
		return why;
	}
	/* The first interpreter that has matplotlib: $ZABENCH_PYTHON, python3 on
	 * the PATH (which may be a pyenv without it), Debian's. */
	const char *pythons[] = { getenv("ZABENCH_PYTHON"), "python3", "/usr/bin/python3" };
	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		if (!pythons[i])
			continue;
		pid_t pid = fork();
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);
			if (devnull >= 0)
				dup2(devnull, STDERR_FILENO);
			execlp(pythons[i], pythons[i], script, dir, (char *)NULL);
			_exit(127);
		}
		int status = 0;
		if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)
			return NULL;
	}
	snprintf(why, sizeof(why), "no python3 with matplotlib was found "
		 "(scripts/install-deps bench installs Debian's python3-matplotlib)");
	return why;
}

static void copy_file_into(FILE *out, const char *dir, const char *name)
{
	FILE *in = open_in(dir, name, "r");
	char buf[4096];
	size_t n;
	if (!in)
		return;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
}

static void write_markdown(const char *dir, const struct run_record *recs, int n,
			   const char *no_plots, int failures)
{
	FILE *md = open_in(dir, "report.md", "w");
	if (!md)
		return;
	time_t t = time(NULL);
	char when[64];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	fprintf(md, "# zabench report, %s\n\n", when);
	fprintf(md, "Every experiment, A/B for each switch it has: \"before\" is the switch off "
		    "(the kernel without the seed patch), \"after\" on.  %% change is positive when "
		    "\"after\" is better.  Counters are per operation (`ops`), summed over the "
		    "measured iterations.  Raw numbers: the `.json` files beside this report.\n\n");
	if (no_plots)
		fprintf(md, "**No plots:** %s.\n\n", no_plots);
	if (failures)
		fprintf(md, "**%d runs failed**; see the output of `zabench report`.\n\n", failures);
	for (int i = 0; i < n; i++) {
		char name[96];
		fprintf(md, "## %s\n\n", recs[i].title);
		if (!no_plots)
			fprintf(md, "![%s](%s.png)\n\n", recs[i].id, recs[i].id);
		fprintf(md, "```text\n");
		snprintf(name, sizeof(name), "%s.txt", recs[i].id);
		copy_file_into(md, dir, name);
		fprintf(md, "```\n\n");
	}
	fclose(md);
}

int run_report(int argc, char **argv)
{
	bool quick = false;
	char dir[512] = "";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			snprintf(dir, sizeof(dir), "%s", argv[++i]);
		else
			return usage_error("unknown report option '%s'", argv[i]);
	}
	if (!*dir) {
		time_t t = time(NULL);
		char stamp[64];
		strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H%M%S", localtime(&t));
		snprintf(dir, sizeof(dir), "bench-results/%s", stamp);
	}
	if (mkdir_p(dir)) {
		fprintf(stderr, "zabench: cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}

	static struct run_record recs[128];
	int n = 0, failures = 0;
	double t0 = now_seconds();
	for (int i = 0; experiments[i]; i++) {
		const struct experiment *e = experiments[i];
		for (int r = 0; e->report_runs && e->report_runs[r] && n < 128; r++) {
			if (run_entry(e, e->report_runs[r], quick, dir, &recs[n], n + 1))
				failures++;
			else
				n++;
		}
	}
	const char *no_plots = draw_plots(dir);
	write_markdown(dir, recs, n, no_plots, failures);
	printf("zabench: %d runs in %.0f s; report: %s/report.md%s\n", n, now_seconds() - t0, dir,
	       no_plots ? " (without plots)" : "");
	return failures ? 1 : 0;
}
