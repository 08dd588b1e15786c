/*
 * zabench: reproduces the seed patches' measurements A/B in one run.
 * See docs/seeds.md (which experiment reproduces which patch) and
 * README.md; `zabench --help` lists the experiments.
 */
#include "bench.h"

extern const struct experiment exp_page_fault1, exp_repeat, exp_bulk, exp_rand, exp_frag,
	exp_netperf, exp_sockperf, exp_hackbench, exp_mmap1, exp_fsmark, exp_slab_repeat,
	exp_pgtable, exp_streamread, exp_parallelio, exp_malloc, exp_replay;

const struct experiment *const experiments[] = {
	&exp_page_fault1,
	&exp_repeat,
	&exp_bulk,
	&exp_rand,
	&exp_frag,
	&exp_netperf,
	&exp_sockperf,
	&exp_hackbench,
	&exp_mmap1,
	&exp_fsmark,
	&exp_slab_repeat,
	&exp_pgtable,
	&exp_streamread,
	&exp_parallelio,
	&exp_malloc,
	&exp_replay,
	NULL,
};

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
