/*
 * The configuration of a system that mirrors the machine a trace was
 * recorded on, derived from whatever the trace's header (and the files
 * recorded beside it) hold, and what was derived from where and what was
 * assumed, for the replay's first lines.
 */
#ifndef ZABENCH_MIRROR_H
#define ZABENCH_MIRROR_H

#include "trace.h"

#include <stddef.h>
#include <stdio.h>

#define MIRROR_NOTES 12

struct mirror {
	char config[2048];              /* for za_mm_create */
	int nr_cpus;                    /* the recorded machine's, 0 if unknown */
	int nnotes;
	char note[MIRROR_NOTES][200];   /* "derived: ...", "assumed: ..." */
};

void mirror_machine(const struct trace_header *h, struct mirror *m);
void mirror_print(const struct mirror *m, FILE *out);

#endif
