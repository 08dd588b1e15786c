/*
 * What main (zabench.c) runs besides one experiment's run: an experiment's
 * --sweep (sweep.c), which zabench report runs too; zabench report
 * (report.c); zabench record (trace/record.c); zabench scorecard
 * (trace/scorecard.c), which zabench report runs too; zabench top (top.c).  Each returns the exit
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

/* The fidelity scorecard of the corpus at corpus_path (trace/scorecard.c):
 * its table to txt, its rows to json (either may be NULL).  0, 1 if a
 * trace could not be replayed, 2 if the corpus file is not one. */
int run_scorecard(const char *corpus_path, FILE *txt, FILE *json);
/* A file zabench ships (plot.py, traces/...): the source tree's, or the
 * installed one. */
const char *find_bench_file(const char *name, char *path, size_t len);
/* zabench scorecard [--corpus FILE] [--json], from argv[0] "scorecard". */
int scorecard_command(int argc, char **argv);

/* zabench top [PID] [options], from argv[0] "top" (top.c). */
int top_command(int argc, char **argv);

#endif
