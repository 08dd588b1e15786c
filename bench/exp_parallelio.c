/*
 * parallelio (E4, seed 003): a foreground key-value workload -- random 1 KiB
 * record reads from a hot file that fits in memory (60% of it),
 * memcachetest-like -- runs while a background stream writes --io-size
 * percent of memory's size into another file.  Unfair zone aging lets the
 * stream push the hot pages of the preferred zone out (foreground misses
 * go up, reclaim scans more for what it frees); fair_zone spreads the
 * stream over both zones.
 *
 * Metrics: ops (foreground reads per second), io_duration_s (the stream,
 * including its final write-back; with --io-size 0 there is no stream and
 * no such metric, rather than the cost of reading the clock twice).  ops
 * counter = foreground reads.
 * Printed: kswapd and direct reclaim efficiency, foreground misses per
 * 1000 foreground reads, per-zone scan velocity, and the per-zone
 * active/inactive counts at the end (extra counters nr_active_file_<zone>,
 * nr_inactive_file_<zone>, as streamread's).
 */
#include "files.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define RECORD 1024
#define CHUNK (1 << 20)

struct pio_state {
	char hot_path[512], bg_path[512];
	long hot_bytes, bg_bytes;
	za_mm_t *mm;
	za_file_t *hot;
	double deadline, io_duration;
	atomic_bool bg_done;
	atomic_llong reads;
	int m_ops, m_io;
};

static void pio_declare(struct bench *b)
{
	struct pio_state *st = calloc(1, sizeof(*st));
	st->m_ops = bench_metric(b, "ops", "reads/s", HIGHER_IS_BETTER);
	st->m_io = b->opts.io_size ? bench_metric(b, "io_duration_s", "s", LOWER_IS_BETTER) : -1;
	b->state = st;
}

static void pio_cleanup(struct bench *b, struct variant *v)
{
	(void)b;
	if (v->files[0])
		za_file_close(v->files[0]);
}

static void foreground(struct pio_state *st, int id)
{
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
	char rec[RECORD];
	long long n = 0;
	long records = st->hot_bytes / RECORD;
	while (now_seconds() < st->deadline || !atomic_load(&st->bg_done)) {
		long r = (long)(bench_rand(&rng) % (uint64_t)records);
		if (za_file_read(st->hot, r * RECORD, rec, RECORD) != RECORD) {
			perror("zabench parallelio");
			exit(1);
		}
		n++;
	}
	atomic_fetch_add(&st->reads, n);
}

static void background(struct pio_state *st)
{
	double t0 = now_seconds();
	if (st->bg_bytes) {
		char *chunk = malloc(CHUNK);
		memset(chunk, 0x5a, CHUNK);
		za_file_t *f = za_file_open(st->mm, st->bg_path, O_RDWR | O_CREAT | O_TRUNC);
		if (!f) {
			perror(st->bg_path);
			exit(1);
		}
		for (long off = 0; off < st->bg_bytes; off += CHUNK)
			if (za_file_write(f, off, chunk, CHUNK) != CHUNK) {
				perror("zabench parallelio");
				exit(1);
			}
		za_file_close(f);
		free(chunk);
	}
	/* No stream (less than a chunk): exactly 0, not the clock's cost. */
	st->io_duration = st->bg_bytes ? now_seconds() - t0 : 0;
	atomic_store(&st->bg_done, true);
}

static void pio_worker(int i, void *arg)
{
	if (i == 0)
		background(arg);
	else
		foreground(arg, i);
}

static void pio_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct pio_state *st = b->state;
	long memory = za_stat(v->mm, "nr_managed_pages") * (long)ZA_PAGE_SIZE;
	st->mm = v->mm;
	st->bg_bytes = memory / 100 * b->opts.io_size / CHUNK * CHUNK;
	if (!v->files[0]) {
		st->hot_bytes = memory * 60 / 100 / CHUNK * CHUNK;
		bench_file(b, "parallelio-hot.dat", st->hot_bytes, st->hot_path, sizeof(st->hot_path));
		snprintf(st->bg_path, sizeof(st->bg_path), "%s/parallelio-stream.dat", bench_dir(b));
		if (!(v->files[0] = za_file_open(v->mm, st->hot_path, O_RDONLY))) {
			perror(st->hot_path);
			exit(1);
		}
		char *chunk = malloc(CHUNK);           /* bring the working set in */
		for (long off = 0; off < st->hot_bytes; off += CHUNK)
			za_file_read(v->files[0], off, chunk, CHUNK);
		free(chunk);
	}
	st->hot = v->files[0];
	atomic_store(&st->bg_done, false);
	atomic_store(&st->reads, 0);
	long long scan[2][4];
	for (int z = 0; z < za_nr_zones(v->mm); z++) {
		char name[48];
		snprintf(name, sizeof(name), "pgscan_kswapd_%s", za_zone_name(v->mm, z));
		scan[0][z] = za_stat(v->mm, name);
		snprintf(name, sizeof(name), "pgscan_direct_%s", za_zone_name(v->mm, z));
		scan[0][z] += za_stat(v->mm, name);
	}
	double t0 = now_seconds();
	st->deadline = t0 + bench_seconds(b);
	double wall = run_threads(1 + b->opts.threads, pio_worker, st);
	it->ops = atomic_load(&st->reads);
	it->value[st->m_ops] = (double)it->ops / wall;
	if (st->m_io >= 0)
		it->value[st->m_io] = st->io_duration;
	/* Scan velocity per zone: pages scanned per second, this iteration. */
	for (int z = 0; z < za_nr_zones(v->mm); z++) {
		char name[48];
		snprintf(name, sizeof(name), "pgscan_kswapd_%s", za_zone_name(v->mm, z));
		scan[1][z] = za_stat(v->mm, name);
		snprintf(name, sizeof(name), "pgscan_direct_%s", za_zone_name(v->mm, z));
		scan[1][z] += za_stat(v->mm, name);
		snprintf(name, sizeof(name), "scan_velocity_%s", za_zone_name(v->mm, z));
		set_extra_counter(v, name, (long long)((double)(scan[1][z] - scan[0][z]) / wall));
	}
	record_zone_lru(v);
}

static long long counter(const struct variant *v, const char *name)
{
	for (int c = 0; c < za_stat_count(); c++)
		if (!strcmp(za_stat_name(c), name))
			return v->counters[c];
	return 0;
}

static double ratio(const struct variant *v, const char *num, const char *den)
{
	long long d = counter(v, den);
	return d ? 100.0 * (double)counter(v, num) / (double)d : 0;
}

/* The seed's view of the LRU lists: grep active_file /proc/zoneinfo. */
static void print_zone_lru(const struct variant *v, FILE *out)
{
	fprintf(out, "\n%s: grep active_file /proc/zoneinfo\n", v->name);
	for (int e = 0; e + 1 < v->nextra; e++)
		if (!strncmp(v->extra_name[e], "nr_active_file_", 15))
			fprintf(out, "%-28s %10lld\n%-28s %10lld\n", v->extra_name[e + 1],
				v->extra_value[e + 1], v->extra_name[e], v->extra_value[e]);
}

/* The seed's summary lines. */
static void pio_print(const struct bench *b, FILE *out)
{
	fprintf(out, "\n%-32s", "");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14s", b->variants[i].name);
	fprintf(out, "\n%-32s", "Kswapd efficiency (%)");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14.1f", ratio(&b->variants[i], "pgsteal_kswapd", "pgscan_kswapd"));
	fprintf(out, "\n%-32s", "Direct efficiency (%)");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14.1f", ratio(&b->variants[i], "pgsteal_direct", "pgscan_direct"));
	fprintf(out, "\n%-32s", "Foreground misses per 1000 ops");
	for (int i = 0; i < b->nvariants; i++) {
		const struct variant *v = &b->variants[i];
		fprintf(out, " %14.2f", v->ops ? 1000.0 * (double)counter(v, "pgmajfault") / (double)v->ops : 0);
	}
	fputc('\n', out);
	for (int i = 0; i < b->nvariants; i++)
		print_zone_lru(&b->variants[i], out);
}

static const char *const pio_report[] = {
	"--io-size 0 --ab fair_zone",
	"--io-size 10 --ab fair_zone",
	"--io-size 33 --ab fair_zone",
	"--io-size 55 --ab fair_zone",
	"--io-size 55 --ab kswapd_wake_high",
	NULL,
};

const struct experiment exp_parallelio = {
	.name = "parallelio",
	.summary = "E4: random record reads of a hot file while a stream writes --io-size % of memory",
	.config = "memory=512M,zones=DMA32:128M+Normal",
	.threads = 1,
	.declare = pio_declare,
	.run = pio_run,
	.cleanup = pio_cleanup,
	.report_runs = pio_report,
	.print_extra = pio_print,
	.notes = "io_duration_s is the background stream's time, its write-back at close "
		 "included; with --io-size 0 there is no stream and so no io_duration_s. An "
		 "iteration lasts until the time is up and the stream has finished, so at the "
		 "larger --io-size it runs longer than --seconds (about 0.6 s for 55% of the "
		 "default 512 MiB), and ops is foreground reads per second over that whole time.",
};
