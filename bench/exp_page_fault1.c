/*
 * page_fault1 (E2, seed 001): will-it-scale's page_fault1 with the
 * allocator in place of the fault path.  Each thread allocates 128 MiB of
 * order-0 pages one by one, writes a byte to each, then frees them all,
 * over and over.  The frees overflow the per-CPU lists constantly, so this
 * is the workload where the bulk free's zone-lock hold time matters.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdlib.h>

#define CYCLE_PAGES ((128UL << 20) / ZA_PAGE_SIZE)

struct pf_state {
	za_mm_t *mm;
	double deadline;
	void ***slots;                  /* [thread][CYCLE_PAGES] */
	atomic_llong pages;
	int m_pps;
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
	atomic_fetch_add(&st->pages, pages);
}

static void pf_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct pf_state *st = b->state;
	st->mm = v->mm;
	atomic_store(&st->pages, 0);
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(b->opts.threads, pf_worker, st);
	it->ops = atomic_load(&st->pages);
	it->value[st->m_pps] = (double)it->ops / wall;
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
};
