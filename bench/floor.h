/*
 * The floor beside a per-CPU experiment's pairs (repeat, slab-repeat): what
 * a restartable push and pop of one pointer on this CPU's stack costs on
 * this machine, with the system's own sections (za_percpu_floor_ns),
 * measured after each iteration of each variant, so that a pair reads as
 * "x the floor" and compares across machines.
 */
#ifndef ZABENCH_FLOOR_H
#define ZABENCH_FLOOR_H

#include "bench.h"

struct floor_book {
	double ns[MAX_VARIANTS][MAX_ITERS];
	int n[MAX_VARIANTS];
};

/* After an iteration of v: one measurement (none without rseq). */
void floor_measure(const struct bench *b, const struct variant *v, struct floor_book *fb);
/* The floor's median per variant and the median pair metric m over it. */
void floor_print(const struct bench *b, const struct floor_book *fb, int m, FILE *out);

#endif
