/*
 * What main (zabench.c) runs besides one experiment's run: an experiment's
 * --sweep (sweep.c), which zabench report runs too; zabench report
 * (report.c); zabench record (trace/record.c).  Each returns the exit
 * status.
 */
#ifndef ZABENCH_COMMANDS_H
#define ZABENCH_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

/* --sweep KEY=V1,V2,...: argv as bench_prepare takes it; the runs' JSON
 * and tables go where o says (either may be NULL). */
struct sweep_out {
	FILE *json, *txt;
	bool quick;
	double seconds;         /* 0: the runs' own */
};
int run_sweep(int argc, char **argv, const char *spec, const struct sweep_out *o);

/* zabench report [options], from argv[0] "report". */
int run_report(int argc, char **argv);

/* zabench record [options] -- COMMAND [ARGS...], from argv[0] "record". */
int run_record(int argc, char **argv);

#endif
