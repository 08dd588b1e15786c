/* The per-CPU floor (floor.h). */
#include "floor.h"

#define FLOOR_PAIRS (1L << 22)          /* ~20 ms at a few ns a pair */

void floor_measure(const struct bench *b, const struct variant *v, struct floor_book *fb)
{
	int i = (int)(v - b->variants);
	double ns = za_percpu_floor_ns(v->mm, FLOOR_PAIRS);
	if (ns > 0 && i >= 0 && i < MAX_VARIANTS && fb->n[i] < MAX_ITERS)
		fb->ns[i][fb->n[i]++] = ns;
}

static double median(const double *v, int n)
{
	struct summary sum;
	summarize(v, n, &sum);
	return sum.median;
}

void floor_print(const struct bench *b, const struct floor_book *fb, int m, FILE *out)
{
	fprintf(out, "\nFloor: a restartable push + pop of one pointer on this CPU's stack, the "
		     "system's own sections and nothing else (za_percpu_floor_ns), medians\n");
	fprintf(out, "%-28s", "");
	for (int i = 0; i < b->nvariants; i++)
		fprintf(out, " %14s", b->variants[i].name);
	fprintf(out, "\n%-28s", "floor (ns/pair)");
	for (int i = 0; i < b->nvariants; i++) {
		if (fb->n[i])
			fprintf(out, " %14.2f", median(fb->ns[i], fb->n[i]));
		else
			fprintf(out, " %14s", "- (no rseq)");
	}
	fprintf(out, "\n%-28s", "pair / floor");
	for (int i = 0; i < b->nvariants; i++) {
		const struct variant *v = &b->variants[i];
		if (fb->n[i] && v->niters)
			fprintf(out, " %13.2fx", median(v->values[m], v->niters) /
						 median(fb->ns[i], fb->n[i]));
		else
			fprintf(out, " %14s", "-");
	}
	fputc('\n', out);
}
