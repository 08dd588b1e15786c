/*
 * What the malloc front end can say about itself: mallinfo2() and the
 * statistics ZA_STATS asks for at exit (also za_malloc_stats()).
 */
#include "internal.h"
#include "mm_layers.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * mallinfo2, honestly: arena is the memory the buddy lists manage so far
 * (the arena grows on demand), uordblks what is taken from them (blocks,
 * slabs -- free objects cached in slabs and sheaves included), fordblks
 * what is free in them (per-CPU lists included), ordblks the free blocks;
 * hblks/hblkhd the direct mappings.  Nothing else applies.
 */
struct mallinfo2 za_mallinfo2(void)
{
	struct mallinfo2 mi = { 0 };
	za_mm_t *mm = za_malloc_system();
	if (!mm)
		return mi;
	long long managed = za_stat(mm, "nr_managed_pages");
	long long free_pages = za_stat(mm, "nr_free_pages") + za_stat(mm, "nr_pcp_pages");
	char name[32];
	for (unsigned int o = 0; o <= mm->max_order; o++) {
		snprintf(name, sizeof(name), "nr_free_blocks_order%u", o);
		mi.ordblks += (size_t)za_stat(mm, name);
	}
	struct mapping_stats vs;
	mapping_stats(&vs);
	mi.hblks = vs.count;
	mi.hblkhd = vs.bytes;
	mi.arena = (size_t)managed * PAGE_SIZE;
	mi.uordblks = (size_t)(managed - free_pages) * PAGE_SIZE;
	mi.fordblks = (size_t)free_pages * PAGE_SIZE;
	return mi;
}

static int clamp_int(size_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

struct mallinfo za_mallinfo(void)
{
	struct mallinfo2 m = za_mallinfo2();
	return (struct mallinfo){
		.arena = clamp_int(m.arena), .ordblks = clamp_int(m.ordblks),
		.hblks = clamp_int(m.hblks), .hblkhd = clamp_int(m.hblkhd),
		.uordblks = clamp_int(m.uordblks), .fordblks = clamp_int(m.fordblks),
	};
}

/* ------------------------------------------------------------------------
 * The summary
 * ------------------------------------------------------------------------ */
static long current_rss_kib(void)
{
	char buf[64];
	long pages = 0, resident = 0;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%ld %ld", &pages, &resident) != 2)
		return -1;
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

enum { WINDOW = 4096 };

/* Resident pages of the `pages` from addr, by mincore a window at a time. */
static unsigned long resident_range(char *addr, unsigned long pages)
{
	unsigned char vec[WINDOW];
	unsigned long n = 0;
	for (unsigned long at = 0; at < pages; at += WINDOW) {
		unsigned long len = pages - at < WINDOW ? pages - at : WINDOW;
		if (mincore(addr + (at << PAGE_SHIFT), len << PAGE_SHIFT, vec))
			continue;
		for (unsigned long i = 0; i < len; i++)
			n += vec[i] & 1;
	}
	return n;
}

/* mincore's answer for WINDOW pages from pfn `start` (within a section),
 * so that a walk over the blocks in pfn order makes one call a window,
 * not one a block. */
struct resident_window {
	unsigned long start, len;
	unsigned char vec[WINDOW];
};

/* Resident pages of the block at pfn (within one section). */
static unsigned long resident_pages(za_mm_t *mm, struct resident_window *w, unsigned long pfn,
				    unsigned long span)
{
	unsigned long n = 0, section = 1UL << pfn_section_shift(mm);
	for (unsigned long at = pfn; at < pfn + span; at++) {
		if (at < w->start || at >= w->start + w->len) {
			unsigned long left = section - (at & (section - 1));
			w->start = at;
			w->len = left < WINDOW ? left : WINDOW;
			if (mincore(pfn_to_virt(mm, at), w->len << PAGE_SHIFT, w->vec))
				memset(w->vec, 0, w->len);
		}
		n += w->vec[at - w->start] & 1;
	}
	return n;
}

/* Resident pages by what holds them. */
enum { RES_SLAB, RES_LARGE, RES_PCP, RES_FREE, RES_META, NR_RES };

/* The pages of the block at pfn of order o, within its section and the
 * zone's initialised part: the walk runs while the program allocates, and
 * a block merged behind it may be read from a stale descriptor. */
static unsigned long block_span(za_mm_t *mm, const struct za_zone *z, unsigned long pfn,
				unsigned int o)
{
	unsigned long span = 1UL << o, section = 1UL << pfn_section_shift(mm);
	unsigned long end = zone_init_end_pfn(z), section_end = (pfn & ~(section - 1)) + section;
	if (end > section_end)
		end = section_end;
	return pfn + span <= end ? span : end - pfn;
}

/*
 * One walk over the blocks each zone manages: the arena's resident pages
 * by what holds them, and (out not NULL) the blocks allocated now, per
 * order, slabs apart.  A page found inside a slab (a tail: the walk raced
 * a merge and a new slab) counts alone.
 */
static void walk_arena(za_mm_t *mm, FILE *out, unsigned long *resident)
{
	struct resident_window win = { .len = 0 };
	if (out)
		fprintf(out, "  blocks allocated now (large / slab), by order:\n");
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		struct za_zone *z = mm->zone_by_id[id];
		unsigned long large[ZA_MAX_ORDER_LIMIT + 1] = { 0 }, slab[ZA_MAX_ORDER_LIMIT + 1] = { 0 };
		for (unsigned long pfn = z->start_pfn; pfn < zone_init_end_pfn(z);) {
			struct za_page *p = pfn_to_page(mm, pfn);
			uint32_t f = page_flags(p);
			unsigned int o = f && !(f & PG_tail) ? page_order(p) : 0;
			unsigned long span = block_span(mm, z, pfn, o);
			if (f & PG_alloc)
				(f & PG_slab ? slab : large)[o]++;
			resident[f & PG_slab ? RES_SLAB : f & PG_alloc ? RES_LARGE :
				 f & PG_pcp ? RES_PCP : RES_FREE] += resident_pages(mm, &win, pfn, span);
			pfn += span;
		}
		if (!out)
			continue;
		fprintf(out, "    node %d %-8s", z->node, z->name);
		for (unsigned int o = 0; o <= mm->max_order; o++)
			fprintf(out, " %lu/%lu", large[o], slab[o]);
		fputc('\n', out);
	}
}

/* The resident pages of each section's descriptors and slab info, which
 * sit below its memory. */
static unsigned long metadata_resident(za_mm_t *mm)
{
	unsigned long n = 0, below = (mm->view.info_below + PAGE_SIZE) >> PAGE_SHIFT;
	for (unsigned long i = 0; i < mm->nr_sections; i++) {
		char *mem = load_relaxed(&mm->section_mem[i]);
		if (mem)
			n += resident_range(mem - (below << PAGE_SHIFT), below);
	}
	return n;
}

/* Bytes of the size classes' slab objects: in use by the program or in
 * its threads' (or CPUs') caches, in the barns, and free in the slabs. */
struct class_bytes {
	double used, barns, free;
};

static struct class_bytes class_bytes(void)
{
	struct class_bytes cb = { 0 };
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		const za_cache_t *cache = atomic_load_explicit(&zm.classes[c].cache, memory_order_acquire);
		unsigned long active, total;
		if (!cache)
			continue;
		za_cache_objects(cache, &active, &total);
		double size = zm.classes[c].size, barn = (double)barn_objects(c);
		cb.barns += barn * size;
		cb.used += ((double)active > barn ? (double)active - barn : 0) * size;
		cb.free += (double)(total - active) * size;
	}
	return cb;
}

/*
 * What the RSS is made of: the arena's resident pages by what holds them,
 * the size classes' slab objects by where they are (object bytes: of the
 * slabs' resident pages), the sections' descriptors, the direct mappings
 * live and kept for reuse (taken as resident: a mapping never written
 * makes the rest come out low, even negative), and the rest of the
 * process -- its image, stacks and libraries -- as what is left.
 */
static void print_rss(za_mm_t *mm, FILE *out, FILE *blocks)
{
	const double mib = 1 << 20;
	unsigned long res[NR_RES] = { 0 };
	double part[NR_RES], arena = 0, rss = (double)current_rss_kib() / 1024;
	struct mapping_stats vs;
	walk_arena(mm, blocks, res);
	res[RES_META] = metadata_resident(mm);
	for (int i = 0; i < NR_RES; i++)
		arena += part[i] = (double)res[i] * PAGE_SIZE / mib;
	mapping_stats(&vs);
	double mapped = (double)(vs.bytes + vs.cached_bytes) / mib;
	struct class_bytes cb = class_bytes();
	fprintf(out, "  where the RSS of %.1f MiB is: %.1f MiB in the arena (slabs %.1f, large blocks "
		"%.1f, per-CPU lists %.1f, free not yet purged %.1f, page descriptors %.1f), %.1f MiB "
		"directly mapped (%.1f freed, kept for reuse), %.1f MiB outside the malloc\n",
		rss, arena, part[RES_SLAB], part[RES_LARGE], part[RES_PCP], part[RES_FREE],
		part[RES_META], mapped, (double)vs.cached_bytes / mib, rss - arena - mapped);
	fprintf(out, "  small objects in the slabs: %.1f MiB in use or in the threads' caches, %.1f MiB "
		"in the barns, %.1f MiB free in their slabs\n", cb.used / mib, cb.barns / mib, cb.free / mib);
}

/* za_report(mm, "rss"): where the malloc's RSS is, as ZA_STATS says it. */
void malloc_rss_report(struct za_mm *mm, FILE *out)
{
	if (mm != zm.mm) {
		fprintf(out, "  (the malloc's system only)\n");
		return;
	}
	print_rss(mm, out, NULL);
}

/* The malloc layer's events (vmstat.c folds them into every counter
 * read): its caches' hits and misses, the default system's only.  Hits
 * are counted only with ZA_STATS (count_hit), misses always. */
static const char *const malloc_event_names[NR_MALLOC_EVENTS] = {
	"malloc_alloc_hits", "malloc_alloc_misses", "malloc_free_hits", "malloc_free_misses",
};

const char *malloc_event_name(int e)
{
	return malloc_event_names[e];
}

void malloc_stat_fold(struct za_mm *mm, uint64_t *totals)
{
	memset(totals, 0, sizeof(uint64_t) * NR_MALLOC_EVENTS);
	if (mm == zm.mm)
		sheaves_fold_stats(&totals[0], &totals[1], &totals[2], &totals[3]);
}

static void print_cache_hits(za_mm_t *mm, FILE *out)
{
	uint64_t ah, am, fh, fm;
	const char *what = zm.cpu_cache ? "per-CPU object stacks" : "per-thread sheaves";
	sheaves_fold_stats(&ah, &am, &fh, &fm);
	if (zm.count_hits || zm.cpu_cache)
		fprintf(out, "  %s: malloc %llu hits (%.1f%%), %llu misses; free %llu hits "
			"(%.1f%%), %llu misses", what,
			(unsigned long long)ah, pct(ah, ah + am), (unsigned long long)am,
			(unsigned long long)fh, pct(fh, fh + fm), (unsigned long long)fm);
	else
		fprintf(out, "  %s: malloc %llu misses, free %llu misses (hits are counted "
			"with ZA_STATS)", what, (unsigned long long)am, (unsigned long long)fm);
	fprintf(out, "; %llu small frees took the full checks\n",
		(unsigned long long)load_relaxed(&zm.checked_small_frees));
	if (!zm.cpu_cache)
		fprintf(out, "  idle threads: %llu gave their sheaves and blocks back at their next call\n",
			(unsigned long long)load_relaxed(&zm.idle_flushes));
	long long fast = za_stat(mm, "slab_alloc_fastpath"), slow = za_stat(mm, "slab_alloc_slowpath");
	long long fresh = za_stat(mm, "slab_alloc_from_new_slab");
	fprintf(out, "  per-CPU slabs: %lld objects from the CPU freelist (%.1f%%), %lld refills, "
		"%lld objects straight from new slabs\n",
		fast, pct((uint64_t)fast, (uint64_t)(fast + slow)), slow, fresh);
	fprintf(out, "  per-CPU page lists:");
	for (int o = 0; o <= PCP_MAX_ORDER; o++) {
		char a[32], h[32];
		snprintf(a, sizeof(a), "pcp_alloc_order%d", o);
		snprintf(h, sizeof(h), "pcp_alloc_hit_order%d", o);
		long long all = za_stat(mm, a), hit = za_stat(mm, h);
		fprintf(out, " order %d %lld (%.1f%% hits)", o, all, pct((uint64_t)hit, (uint64_t)all));
	}
	fputc('\n', out);
}

/* Every counter but those zero or not meaningful here (stat_in_summary),
 * in the vmstat format; per zone too when there are several. */
static void print_nonzero_counters(za_mm_t *mm, FILE *out)
{
	long long vals[1024];
	int n = za_stat_all(mm, vals, (int)ZA_ARRAY_SIZE(vals));
	fprintf(out, "vmstat, the counters not zero (ZA_STATS=2: all of them, slabinfo, buddyinfo):\n");
	for (int i = 0; i < n; i++)
		if (vals[i] && stat_in_summary(mm, i))
			fprintf(out, "%s %lld\n", za_stat_name(i), vals[i]);
	for (int zi = 0; mm->nr_zones > 1 && zi < mm->nr_zones; zi++) {
		char name[48];
		snprintf(name, sizeof(name), "pgalloc_%s", za_zone_name(mm, zi));
		long long v = za_stat(mm, name);
		if (v)
			fprintf(out, "%s %lld\n", name, v);
	}
}

/* ------------------------------------------------------------------------
 * ZA_STATS: how much, where, and the print at exit
 * ------------------------------------------------------------------------ */
static void malloc_stats_at_exit(void);

static int stats_level;                 /* 0: off, 1: summary, 2: everything */
static char stats_path[PATH_MAX];       /* ZA_STATS_FILE, %p not yet replaced */
/* A duplicate of stderr as the program started, close-on-exec, for a
 * program that closes stderr before exit (GNU coreutils' close_stdout
 * does, in an atexit handler that runs before this one). */
static int stderr_copy = -1;
static dev_t stderr_dev;
static ino_t stderr_ino;

void za_malloc_stats(FILE *out)
{
	za_mm_t *mm = za_malloc_system();
	struct rusage ru;
	struct mapping_stats vs;
	if (!mm)
		return;
	getrusage(RUSAGE_SELF, &ru);
	mapping_stats(&vs);
	fprintf(out, "zonealloc: malloc statistics (pid %d)\n", (int)getpid());
	fprintf(out, "  peak RSS %.1f MiB, now %.1f MiB; arena: %lld MiB managed, %lld MiB in use, "
		"%lld MiB purged to the OS; %zu direct mappings (%.1f MiB), %.1f MiB of freed ones "
		"kept; %llu mapped, %llu served from the kept\n",
		ru.ru_maxrss / 1024.0, current_rss_kib() / 1024.0,
		za_stat(mm, "nr_managed_pages") >> 8, za_stat(mm, "nr_allocated_pages") >> 8,
		za_stat(mm, "pgpurge") >> 8, vs.count, (double)vs.bytes / (1 << 20),
		(double)vs.cached_bytes / (1 << 20), (unsigned long long)vs.maps,
		(unsigned long long)vs.reuses);
	for (int i = 0; i < mm->nr_zones; i++) {
		char name[48];
		snprintf(name, sizeof(name), "pgalloc_%s", za_zone_name(mm, i));
		fprintf(out, "  pages allocated from %s: %lld\n", za_zone_name(mm, i), za_stat(mm, name));
	}
	print_rss(mm, out, out);
	print_cache_hits(mm, out);
	fputc('\n', out);
	if (stats_level < 2) {
		print_nonzero_counters(mm, out);
		return;
	}
	za_report(mm, "slabinfo", out);
	fputc('\n', out);
	za_report(mm, "buddyinfo", out);
	fputc('\n', out);
	za_report(mm, "vmstat", out);
}

/* One line on stderr, while the malloc starts (no stdio). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char msg[PATH_MAX + 200];
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	len = len < 0 ? 0 : len > (int)sizeof(msg) - 2 ? (int)sizeof(msg) - 2 : len;
	msg[len++] = '\n';
	if (write(STDERR_FILENO, msg, (size_t)len) < 0)
		msg[0] = 0;
}

/* Out of the way of the descriptors a program expects (the lowest free
 * one on open), within its limit; none if there is no room. */
static void keep_stderr(void)
{
	struct stat st;
	struct rlimit nofile;
	int low = 512;
	if (fstat(STDERR_FILENO, &st))
		return;
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < 1024)
		low = (int)nofile.rlim_cur / 2;
	if (low < 10)
		return;
	stderr_copy = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, low);
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
}

void malloc_stats_init(void)
{
	const char *level = getenv("ZA_STATS"), *file = getenv("ZA_STATS_FILE");
	if (!level || !*level || !strcmp(level, "0"))
		return;
	zm.count_hits = true;
	if (!strcmp(level, "1") || !strcmp(level, "2")) {
		stats_level = level[0] - '0';
	} else {
		stats_level = 1;
		say("zonealloc: ZA_STATS=%.40s is not 0, 1 or 2; taken as 1", level);
	}
	if (file && *file) {
		if (strlen(file) < sizeof(stats_path))
			strcpy(stats_path, file);
		else
			say("zonealloc: ZA_STATS_FILE is longer than %zu bytes; statistics go to stderr",
			    sizeof(stats_path) - 1);
	}
	if (!stats_path[0])
		keep_stderr();
	atexit(malloc_stats_at_exit);
}

/* stderr now, or the copy kept if the program has closed it since; a
 * stream of a descriptor of its own, since the C library's stderr may be
 * closed too. */
static FILE *open_stderr(void)
{
	struct stat st;
	int fd = -1;
	if (fcntl(STDERR_FILENO, F_GETFD) >= 0)
		fd = STDERR_FILENO;
	else if (stderr_copy >= 0 && !fstat(stderr_copy, &st) && st.st_dev == stderr_dev &&
		 st.st_ino == stderr_ino)
		fd = stderr_copy;
	if (fd < 0 || (fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

/* ZA_STATS_FILE with %p replaced by the pid (%% by %): a file of this
 * process's own, made anew; without %p, one all processes append to. */
static FILE *open_stats_file(char *path, size_t size)
{
	bool per_process = false;
	size_t len = 0;
	for (const char *s = stats_path; *s && len + 1 < size; s++) {
		if (s[0] == '%' && s[1] == 'p') {
			int n = snprintf(path + len, size - len, "%d", (int)getpid());
			len = n > 0 && len + (size_t)n < size ? len + (size_t)n : size - 1;
			per_process = true;
			s++;
		} else {
			s += s[0] == '%' && s[1] == '%';
			path[len++] = *s;
		}
	}
	path[len] = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (per_process ? O_TRUNC : O_APPEND), 0666);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, per_process ? "w" : "a");
	if (!f)
		close(fd);
	return f;
}

static void malloc_stats_at_exit(void)
{
	char path[PATH_MAX];
	FILE *out = NULL;
	if (stats_path[0] && !(out = open_stats_file(path, sizeof(path)))) {
		int err = errno;
		if ((out = open_stderr()))
			fprintf(out, "zonealloc: ZA_STATS_FILE: cannot open %s: %s; statistics on stderr\n",
				path, strerror(err));
	}
	if (!out && !(out = open_stderr()))
		return;
	za_malloc_stats(out);
	fclose(out);
}
