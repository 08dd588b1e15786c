/*
 * zabench: reproduces the seed patches' measurements A/B in one run.
 * See docs/seeds.md (which experiment reproduces which patch) and
 * README.md; `zabench --help` lists the experiments.
 *
 * The tool: its experiments, and main, which hands each subcommand to the
 * file that does it and runs an experiment (cli.c parses its arguments,
 * runner.c runs it, results.c prints it; --sweep is sweep.c's).
 */
#include "bench.h"
#include "cli.h"
#include "commands.h"

#include <string.h>

extern const struct experiment exp_page_fault1, exp_repeat, exp_bulk, exp_rand, exp_frag,
	exp_netperf, exp_sockperf, exp_hackbench, exp_mmap1, exp_fsmark, exp_slab_repeat,
	exp_pgtable, exp_streamread, exp_parallelio, exp_malloc, exp_replay, exp_drain, exp_purger,
	exp_rcu_free, exp_publish;

const struct experiment *const experiments[] = {
	&exp_page_fault1,
	&exp_repeat,
	&exp_bulk,
	&exp_rand,
	&exp_drain,
	&exp_purger,
	&exp_frag,
	&exp_netperf,
	&exp_sockperf,
	&exp_hackbench,
	&exp_mmap1,
	&exp_fsmark,
	&exp_slab_repeat,
	&exp_rcu_free,
	&exp_pgtable,
	&exp_streamread,
	&exp_parallelio,
	&exp_malloc,
	&exp_replay,
	&exp_publish,
	NULL,
};

/* zabench EXPERIMENT [options]: one run, or --sweep's runs, printed. */
static int run_experiment(int argc, char **argv)
{
	static struct bench b;
	int rc = bench_prepare(&b, argc, argv);
	if (!rc && b.opts.sweep) {
		struct sweep_out o = { .json = b.opts.json ? stdout : NULL,
				       .txt = b.opts.json ? NULL : stdout };
		return run_sweep(argc, argv, b.opts.sweep, &o);
	}
	if (!rc)
		rc = bench_run(&b);
	if (rc)
		return rc;
	if (b.opts.json)
		print_json(&b, stdout);
	else
		print_table(&b, stdout);
	bench_finish(&b);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("%s", "no experiment given");
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "report"))
		return run_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "record"))
		return run_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "scorecard"))
		return scorecard_command(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return top_command(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list")) {
		print_list(stdout);
		return 0;
	}
	return run_experiment(argc - 1, argv + 1);
}
