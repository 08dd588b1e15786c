/*
 * page_fault1 (E2, seed 001): will-it-scale's page_fault1 with the
 * allocator in place of the fault path.  Each thread allocates 128 MiB of
 * order-0 pages one by one, writes a byte to each, then frees them all,
 * over and over.  The frees overflow the per-CPU lists constantly, so this
 * is the workload where the bulk free's zone-lock hold time matters.
 *
 * Metric: pages_per_sec.  ops = pages.  Printed after the tables: the
 * workers' involuntary context switches (getrusage), which is what the
 * longest bulk-free hold measures, and that hold against the average one.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define CYCLE_PAGES ((128UL << 20) / ZA_PAGE_SIZE)

struct pf_state {
	za_mm_t *mm;
	double deadline;
	void ***slots;                  /* [thread][CYCLE_PAGES] */
	atomic_llong pages;
	atomic_llong preempted;         /* involuntary context switches, this iteration */
	int m_pps;
	/* Per variant, over the measured iterations: the workers' involuntary
	 * context switches and their time. */
	long long nivcsw[MAX_VARIANTS];
	double thread_seconds[MAX_VARIANTS];
};

static void pf_declare(struct bench *b)
{
	struct pf_state *st = calloc(1, sizeof(*st));
	st->m_pps = bench_metric(b, "pages_per_sec", "pages/s", HIGHER_IS_BETTER);
	st->slots = calloc((size_t)b->opts.threads, sizeof(void **));
	for (int i = 0; i < b->opts.threads; i++)
		st->slots[i] = calloc(CYCLE_PAGES, sizeof(void *));
	b->state = st;
}

static void pf_release(struct bench *b)
{
	struct pf_state *st = b->state;
	for (int i = 0; i < b->opts.threads; i++)
		free(st->slots[i]);
	free(st->slots);
}

static void pf_worker(int i, void *arg)
{
	struct pf_state *st = arg;
	void **slot = st->slots[i];
	long long pages = 0;
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	do {
		for (unsigned long k = 0; k < CYCLE_PAGES; k++) {
			char *p = za_alloc_pages(st->mm, ZA_GFP_MOVABLE, 0);
			if (!p) {
				fprintf(stderr, "zabench page_fault1: out of memory (%s); "
						"give it more with --config memory=...\n", za_last_error());
				exit(1);
			}
			*p = 1;
			slot[k] = p;
		}
		for (unsigned long k = 0; k < CYCLE_PAGES; k++)
			za_free_pages(st->mm, slot[k], 0);
		pages += CYCLE_PAGES;
	} while (now_seconds() < st->deadline);
	getrusage(RUSAGE_THREAD, &r1);
	atomic_fetch_add(&st->pages, pages);
	atomic_fetch_add(&st->preempted, r1.ru_nivcsw - r0.ru_nivcsw);
}

static void pf_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct pf_state *st = b->state;
	st->mm = v->mm;
	atomic_store(&st->pages, 0);
	atomic_store(&st->preempted, 0);
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(b->opts.threads, pf_worker, st);
	it->ops = atomic_load(&st->pages);
	it->value[st->m_pps] = (double)it->ops / wall;
	if (!b->warmup) {
		st->nivcsw[v - b->variants] += atomic_load(&st->preempted);
		st->thread_seconds[v - b->variants] += wall * b->opts.threads;
	}
}

static long long counter(const struct variant *v, const char *name)
{
	for (int c = 0; c < za_stat_count(); c++)
		if (!strcmp(za_stat_name(c), name))
			return v->counters[c];
	return 0;
}

/* What the longest bulk-free hold is made of: the workers' preemptions,
 * and the longest hold against the average one. */
static void pf_print(const struct bench *b, FILE *out)
{
	const struct pf_state *st = b->state;
	fprintf(out, "\n%-38s", "Workers (measured iterations)");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14s", b->variants[i].name);
	fprintf(out, "\n%-38s", "involuntary context switches");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14lld", st->nivcsw[i]);
	fprintf(out, "\n%-38s", "  per second of a worker's time");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14.1f",
			st->thread_seconds[i] > 0 ? (double)st->nivcsw[i] / st->thread_seconds[i] : 0);
	fprintf(out, "\n%-38s", "longest bulk-free hold / average");
	for (int i = 0; i < b->nvariants; i++) {
		const struct variant *v = &b->variants[i];
		long long n = counter(v, "pcp_bulkfree"), held = counter(v, "pcp_bulkfree_hold_ns");
		double longest = (double)counter(v, "pcp_bulkfree_hold_max_ns");
		fprintf(out, " %14.0f", n && held ? longest / ((double)held / (double)n) : 0);
	}
	fputc('\n', out);
}

static const char *const pf_report[] = {
	"--threads 2 --ab bulkfree_outside_lock",
	"--threads 4 --ab bulkfree_outside_lock",
	NULL,
};

const struct experiment exp_page_fault1 = {
	.name = "page_fault1",
	.summary = "E2: 128 MiB of order-0 pages per thread, one by one, touched, freed",
	.config = "memory=4G,zones=DMA32:1G+Normal",
	.threads = 2,
	.declare = pf_declare,
	.run = pf_run,
	.release = pf_release,
	.report_runs = pf_report,
	.print_extra = pf_print,
	.notes = "The longest bulk-free hold is the time from taking the zone lock to letting "
		 "it go, including any time the holder spent off its CPU: in user space a lock "
		 "holder can be preempted, which the kernel's spinlock holder cannot. One bulk "
		 "free returns at most 64 blocks (63 pages here) in a microsecond or two, so a "
		 "hold of milliseconds -- a scheduler slice, tens of them on a loaded machine -- "
		 "is a preemption, not work. The Workers table counts the workers' involuntary "
		 "context switches: with hundreds per second, some land inside a hold, and the "
		 "longest hold is then the longest of those. Compare the variants on the "
		 "averages per bulk free; the maximum only says how busy the machine was.",
};
