/* The switches --ab compares and what the seed postings measured. */
#ifndef ZABENCH_SEEDS_H
#define ZABENCH_SEEDS_H

#include <stddef.h>

struct ab_switch {
	const char *name;
	const char *seed;       /* "000".."004", NULL for the others */
	const char *since;      /* a later kernel's mechanism: its release; NULL: hardening */
	const char *values;     /* "before|after" */
	const char *what;
};

struct seed_figure {
	const char *sw, *experiment;    /* experiment NULL: any */
	const char *args;               /* a piece of the run's arguments, or NULL */
	const char *counter;            /* the mechanism: this counter ... */
	const char *per;                /* ... per this one (NULL: per operation) */
	const char *published;          /* the posting's figure, or NULL */
};

extern const struct ab_switch ab_switches[];
const struct ab_switch *find_switch(const char *name, size_t len);
const struct seed_figure *seed_figure(const char *sw, const char *experiment, const char *args);

#endif
