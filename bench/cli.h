/*
 * zabench's command line (cli.c): the help, one experiment's arguments
 * parsed into a struct bench, --ab's spec and usage errors.  What runs an
 * experiment (runner.c, sweep.c, report.c, main in zabench.c) comes here;
 * nothing here runs one.
 */
#ifndef ZABENCH_CLI_H
#define ZABENCH_CLI_H

#include "bench.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* zabench --help: the usage, the common options, then print_list's. */
void print_usage(FILE *out);
/* zabench list: the experiments and the switches --ab compares. */
void print_list(FILE *out);

/* "zabench: " fmt with arg, and the short usage; returns 2, the exit
 * status of a usage error. */
int usage_error(const char *fmt, const char *arg);

/* A whole decimal number in [lo, hi] into out; false, out untouched, if s
 * is not one. */
bool parse_long(const char *s, long lo, long hi, long *out);

/* The configuration keys of --ab's variant `which` (0 before, 1 after),
 * each after a comma; false if the spec is malformed. */
bool ab_part(const char *spec, int which, char *out, size_t len);

const struct experiment *find_experiment(const char *name);
/* Sets up b for one experiment from its arguments (argv[0] is its name):
 * its options and its title.  0, or the exit status of a usage error
 * (printed); --help prints the help and exits. */
int bench_prepare(struct bench *b, int argc, char **argv);

#endif
