/*
 * streamread (E4, seed 003): read a file 1.1 times the size of memory from
 * start to end, four times.  No page can stay resident long enough to be
 * read twice, so nothing should be activated -- unless the zones age at
 * different speeds: without fair_zone the preferred zone takes nearly every
 * allocation and is reclaimed over and over, while pages in the lower zone
 * outlive a whole pass and get activated on the next.  Afterwards the
 * per-zone active/inactive counts are printed as /proc/zoneinfo shows them.
 *
 * Every iteration starts from a cold cache: the file is closed and opened
 * again (it stays open after the last one, so the counters show the end
 * state).  Metrics: read_mb_per_sec, activations (pgactivate per
 * iteration).  ops = pages read.  Files go in --dir (default: a temporary
 * directory).
 */
#include "files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1 << 20)

struct str_state {
	char path[512];
	long bytes;
	char *buf;
	int m_rate, m_act;
};

static void str_declare(struct bench *b)
{
	struct str_state *st = calloc(1, sizeof(*st));
	st->buf = malloc(CHUNK);
	st->m_rate = bench_metric(b, "read_mb_per_sec", "MiB/s", HIGHER_IS_BETTER);
	st->m_act = bench_metric(b, "activations", "pages", LOWER_IS_BETTER);
	b->state = st;
}

static void str_release(struct bench *b)
{
	free(((struct str_state *)b->state)->buf);
}

static void str_cleanup(struct bench *b, struct variant *v)
{
	(void)b;
	if (v->files[0])
		za_file_close(v->files[0]);
}

static void str_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct str_state *st = b->state;
	st->bytes = za_stat(v->mm, "nr_managed_pages") * ZA_PAGE_SIZE * 11 / 10;
	bench_file(b, "streamread.dat", st->bytes, st->path, sizeof(st->path));
	if (v->files[0])
		za_file_close(v->files[0]);
	if (!(v->files[0] = za_file_open(v->mm, st->path, O_RDONLY))) {
		perror(st->path);
		exit(1);
	}
	long long act0 = za_stat(v->mm, "pgactivate");
	double t0 = now_seconds();
	for (int pass = 0; pass < 4; pass++)
		for (long off = 0; off < st->bytes; off += CHUNK)
			if (za_file_read(v->files[0], off, st->buf, CHUNK) < 0) {
				perror("zabench streamread");
				exit(1);
			}
	double t = now_seconds() - t0;
	it->value[st->m_rate] = 4.0 * (double)st->bytes / (1 << 20) / t;
	it->value[st->m_act] = (double)(za_stat(v->mm, "pgactivate") - act0);
	it->ops = 4 * st->bytes / (long)ZA_PAGE_SIZE;
	record_zone_lru(v);
}

/* The seed's view: grep active_file /proc/zoneinfo. */
static void str_print(const struct bench *b, FILE *out)
{
	for (int i = 0; i < b->nvariants; i++) {
		const struct variant *v = &b->variants[i];
		fprintf(out, "\n%s: grep active_file /proc/zoneinfo\n", v->name);
		for (int e = 0; e + 1 < v->nextra; e += 2)
			fprintf(out, "%-28s %10lld\n%-28s %10lld\n", v->extra_name[e + 1],
				v->extra_value[e + 1], v->extra_name[e], v->extra_value[e]);
	}
}

static const char *const str_report[] = {
	"--ab fair_zone",
	"--ab kswapd_wake_high",
	NULL,
};

const struct experiment exp_streamread = {
	.name = "streamread",
	.summary = "E4: read a file 1.1x memory four times; activations should be ~0",
	.config = "memory=256M,zones=DMA32:64M+Normal",
	.threads = 1,
	.declare = str_declare,
	.run = str_run,
	.cleanup = str_cleanup,
	.release = str_release,
	.report_runs = str_report,
	.print_extra = str_print,
};
