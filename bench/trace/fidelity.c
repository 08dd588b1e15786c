/*
 * The fidelity table: what the kernel's per-CPU lists did with a stream,
 * from the trace's own tracepoint events, beside what zonealloc's did
 * with the same stream, from its tracepoints of the same meaning.  Every
 * figure is per 1000 page allocations of the trace (the same denominator
 * for every column and row, so the orders' rows add up to the all-orders
 * row and the CPUs' to all CPUs).
 */
#include "replay.h"
#include "bench.h"
#include "table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const row_metric[NR_FID_ROWS] = {
	[FID_PCP_REFILL_PAGES] = "pcp_refill_pages",
	[FID_ZONE_LOCKED_ALLOCS] = "zone_locked_allocs",
	[FID_PCP_DRAIN_PAGES] = "pcp_drain_pages",
	[FID_EXTFRAG_FALLBACKS] = "extfrag_fallbacks",
	[FID_PAGEBLOCK_STEALS] = "pageblock_steals",
	[FID_ZONE_LOCK_HOLDS] = "zone_lock_bulk_holds",
	[FID_ZONE_LOCK_CONTENDED] = "zone_lock_bulk_contended",
};

/* Rows counted for all orders only, and shown only when the kernel's
 * trace has their events (so some holds). */
static bool lock_row(int row)
{
	return row >= FID_ZONE_LOCK_HOLDS;
}

static bool row_shown(const struct fidelity *kernel, int row)
{
	return !lock_row(row) || kernel->count[kernel->nr_cpus][FID_ZONE_LOCK_HOLDS][FID_ALL];
}

const char *fid_row_metric(enum fid_row row)
{
	return row_metric[row];
}

int fidelity_init(struct fidelity *f, int nr_cpus)
{
	f->nr_cpus = nr_cpus < 1 ? 1 : nr_cpus;
	f->count = calloc((size_t)f->nr_cpus + 1, sizeof(*f->count));
	f->page_allocs = 0;
	return f->count ? 0 : -1;
}

void fidelity_free(struct fidelity *f)
{
	free(f->count);
	f->count = NULL;
}

void fidelity_reset(struct fidelity *f)
{
	memset(f->count, 0, ((size_t)f->nr_cpus + 1) * sizeof(*f->count));
	f->page_allocs = 0;
}

/* Counted for the CPU and for all CPUs, for the order and for all orders.
 * A CPU beyond the table (a trace without header) counts in all CPUs only. */
static void fidelity_add(struct fidelity *f, enum fid_row row, int cpu, int order, uint64_t n)
{
	int all = f->nr_cpus;
	f->count[all][row][FID_ALL] += n;
	if (order >= 0 && order < FID_ORDERS)
		f->count[all][row][order] += n;
	if (cpu < 0 || cpu >= all)
		return;
	f->count[cpu][row][FID_ALL] += n;
	if (order >= 0 && order < FID_ORDERS)
		f->count[cpu][row][order] += n;
}

double fidelity_per_1000(const struct fidelity *f, enum fid_row row, int cpu, int order)
{
	if (!f->page_allocs)
		return NAN;
	int c = cpu < 0 || cpu >= f->nr_cpus ? f->nr_cpus : cpu;
	return (double)f->count[c][row][order] * 1000.0 / (double)f->page_allocs;
}

/* Pages of a block: orders beyond any machine's (a corrupt trace.dat)
 * count as nothing rather than shift by them. */
static uint64_t order_pages(int order)
{
	return order >= 0 && order < 32 ? 1ULL << order : 0;
}

void fidelity_zone_locked(struct fidelity *f, int cpu, int order, int percpu_refill)
{
	if (percpu_refill)
		fidelity_add(f, FID_PCP_REFILL_PAGES, cpu, order, order_pages(order));
	else
		fidelity_add(f, FID_ZONE_LOCKED_ALLOCS, cpu, order, 1);
}

void fidelity_drain(struct fidelity *f, int cpu, int order)
{
	fidelity_add(f, FID_PCP_DRAIN_PAGES, cpu, order, order_pages(order));
}

void fidelity_extfrag(struct fidelity *f, int cpu, int order, int fragmenting, int change_ownership)
{
	if (fragmenting)
		fidelity_add(f, FID_EXTFRAG_FALLBACKS, cpu, order, 1);
	if (change_ownership)
		fidelity_add(f, FID_PAGEBLOCK_STEALS, cpu, order, 1);
}

void fidelity_zone_lock(struct fidelity *f, int cpu, int contended)
{
	fidelity_add(f, FID_ZONE_LOCK_HOLDS, cpu, -1, 1);
	if (contended)
		fidelity_add(f, FID_ZONE_LOCK_CONTENDED, cpu, -1, 1);
}

void fidelity_count_kernel(struct fidelity *f, const struct trace_event *ev)
{
	switch (ev->type) {
	case TEV_PAGE_ALLOC:
		f->page_allocs += ev->pfn != TRACE_NO_PFN;
		break;
	case TEV_ZONE_LOCKED:
		/* before 5.19 the event had no percpu_refill and came only
		 * from refills and high orders: the per-CPU orders were refills */
		fidelity_zone_locked(f, ev->cpu, ev->order,
				     ev->percpu_refill >= 0 ? ev->percpu_refill : ev->order < FID_ORDERS);
		break;
	case TEV_PCPU_DRAIN:
		fidelity_drain(f, ev->cpu, ev->order);
		break;
	case TEV_EXTFRAG:
		fidelity_extfrag(f, ev->cpu, ev->order, ev->fragmenting, ev->change_ownership);
		break;
	case TEV_ZONE_LOCK_LOCKED:
		fidelity_zone_lock(f, ev->cpu, ev->contended);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------
 * Reading the table
 * ------------------------------------------------------------------------ */
#define FIDELITY_TOLERANCE 0.25

/* Rows below one event per 1000 allocations on both sides are noise of
 * the trace's start and end, not a difference of mechanism. */
#define FIDELITY_FLOOR 1.0

/* Does the model's all-orders row differ from the kernel's by more than 25%? */
static bool fidelity_differs(const struct fidelity *kernel, const struct fidelity *model,
			     enum fid_row row)
{
	double k = fidelity_per_1000(kernel, row, -1, FID_ALL);
	double m = fidelity_per_1000(model, row, -1, FID_ALL);
	if (isnan(k) || isnan(m) || (k < FIDELITY_FLOOR && m < FIDELITY_FLOOR) ||
	    !row_shown(kernel, row) || row == FID_ZONE_LOCK_CONTENDED)
		return false;
	return fabs(m - k) > FIDELITY_TOLERANCE * (k > m ? k : m);
}

/* The kernel mechanism behind a row that differs. */
static const char *fidelity_explain(enum fid_row row)
{
	static const char *const why[NR_FID_ROWS] = {
		[FID_PCP_REFILL_PAGES] =
			"refill size and per-CPU high: since 6.7 a refill grows with consecutive "
			"refills (alloc_factor, up to batch << pcp_batch_scale_max) and each refill "
			"raises the auto-tuned high (pcp_high_auto); the kernel also caches THP "
			"(order 9) on its per-CPU lists, whose refills count here",
		[FID_ZONE_LOCKED_ALLOCS] =
			"orders the per-CPU lists cache (pcp_high_order: 0..3; the kernel also THP) "
			"and per-CPU lock contention (a failed trylock takes the buddy path)",
		[FID_PCP_DRAIN_PAGES] =
			"per-CPU high: the 6.7 auto-tuned high between high_min and high_max with its "
			"decay each vmstat tick (pcp_high_auto), percpu_pagelist_high_fraction, and "
			"the free_high drain of high-order frees (pcp_free_high: 5.18, 6.7)",
		[FID_EXTFRAG_FALLBACKS] =
			"fallback policy: ALLOC_NOFRAGMENT (5.0) tries the next zone before "
			"mixing a pageblock, and since 6.15 claim and steal are separate steps; "
			"the kernel's free memory is also older and more fragmented than a fresh model's",
		[FID_PAGEBLOCK_STEALS] =
			"pageblock claiming: the kernel claims a pageblock when half of it is free "
			"or compatible (try_to_claim_block), counted on its real, aged pageblocks",
		[FID_ZONE_LOCK_HOLDS] =
			"how much each hold does: refill sizes (alloc_factor) and drain sizes "
			"(pcp_drain_chunks=2: 6.19 frees a batch per hold)",
		[FID_ZONE_LOCK_CONTENDED] = "",
	};
	return why[row];
}

/* ------------------------------------------------------------------------
 * Printing
 * ------------------------------------------------------------------------ */
static void add_figure(struct table *t, const struct fidelity *f, enum fid_row row, int cpu, int order)
{
	table_add_value(t, fidelity_per_1000(f, row, cpu, order));
}

static void header_row(struct table *t, const struct fid_column *cols, int ncols, const char *first,
		       const char *second)
{
	table_add(t, "%s", first);
	table_add(t, "%s", second);
	for (int c = 0; c < ncols; c++)
		table_add(t, "%s", cols[c].name);
}

static void print_orders(const struct fid_column *cols, int ncols, FILE *out)
{
	struct table t;
	table_init(&t, 2 + ncols);
	static const int orders[] = { FID_ALL, 0, 1, 2, 3 };
	_Static_assert(sizeof(orders) / sizeof(orders[0]) == FID_ORDERS + 1, "every order slot");
	header_row(&t, cols, ncols, "per 1000 page allocations", "order");
	for (int row = 0; row < NR_FID_ROWS; row++) {
		if (!row_shown(cols[0].f, row))
			continue;
		for (size_t i = 0; i < (lock_row(row) ? 1 : sizeof(orders) / sizeof(orders[0])); i++) {
			int o = orders[i];
			table_add(&t, "%s", o == FID_ALL ? row_metric[row] : "");
			table_add(&t, o == FID_ALL ? "all" : "%d", o);
			for (int c = 0; c < ncols; c++)
				add_figure(&t, cols[c].f, row, -1, o);
		}
	}
	table_print(&t, out);
	table_free(&t);
}

static void print_cpus(const struct fid_column *cols, int ncols, FILE *out)
{
	struct table t;
	table_init(&t, 2 + ncols);
	header_row(&t, cols, ncols, "per CPU, all orders", "cpu");
	for (int row = 0; row < NR_FID_ROWS; row++) {
		if (!row_shown(cols[0].f, row))
			continue;
		for (int cpu = 0; cpu < cols[0].f->nr_cpus; cpu++) {
			table_add(&t, "%s", cpu ? "" : row_metric[row]);
			table_add(&t, "%d", cpu);
			for (int c = 0; c < ncols; c++)
				add_figure(&t, cols[c].f, row, cpu, FID_ALL);
		}
	}
	table_print(&t, out);
	table_free(&t);
}

static void print_differences(const struct fid_column *cols, int ncols, FILE *out)
{
	for (int row = 0; row < NR_FID_ROWS; row++) {
		bool named = false;
		for (int c = 0; c < ncols; c++) {
			const struct fid_column *m = &cols[c];
			if (m->ref < 0 || !fidelity_differs(cols[m->ref].f, m->f, (enum fid_row)row))
				continue;
			fprintf(out, "%s %s differs from %s by more than 25%%", named ? "  and" : "*",
				m->name, cols[m->ref].name);
			named = true;
		}
		if (named)
			fprintf(out, " in %s: %s.\n", row_metric[row], fidelity_explain((enum fid_row)row));
	}
}

void fidelity_print(const struct fid_column *cols, int ncols, FILE *out)
{
	fprintf(out, "\nFidelity: the kernel's per-CPU lists beside zonealloc's, per 1000 page "
		     "allocations (%llu in the trace)\n", (unsigned long long)cols[0].f->page_allocs);
	print_orders(cols, ncols, out);
	if (cols[0].f->nr_cpus > 1) {
		fputc('\n', out);
		print_cpus(cols, ncols, out);
	}
	print_differences(cols, ncols, out);
}

/* ------------------------------------------------------------------------
 * JSON
 * ------------------------------------------------------------------------ */
static void json_row(const struct fidelity *kernel, const struct fidelity *model, int row, int cpu,
		     int order, bool first, FILE *out)
{
	fprintf(out, "%s{\"metric\": \"%s\", \"order\": ", first ? "" : ", ", row_metric[row]);
	fprintf(out, order == FID_ALL ? "null" : "%d", order);
	fprintf(out, cpu < 0 ? ", \"cpu\": null" : ", \"cpu\": %d", cpu);
	fprintf(out, ", \"kernel\": ");
	json_number(out, fidelity_per_1000(kernel, (enum fid_row)row, cpu, order));
	fprintf(out, ", \"zonealloc\": ");
	json_number(out, fidelity_per_1000(model, (enum fid_row)row, cpu, order));
	fprintf(out, "}");
}

void fidelity_json(const struct fidelity *kernel, const struct fidelity *model, FILE *out)
{
	bool first = true;
	fprintf(out, "{\"page_allocs\": %llu, \"rows\": [", (unsigned long long)kernel->page_allocs);
	for (int row = 0; row < NR_FID_ROWS; row++)
		for (int cpu = -1; cpu < kernel->nr_cpus && row_shown(kernel, row); cpu++)
			for (int o = lock_row(row) ? FID_ALL : 0; o <= FID_ALL; o++, first = false)
				json_row(kernel, model, row, cpu, o, first, out);
	fprintf(out, "]}");
}
