/*
 * zabench's statistics against hand-computed values, the sign convention
 * of % change (positive = better, whichever way better points), and what
 * `zabench report` runs.
 */
#include "bench.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>

#define CHECK_NEAR(a, b) CHECK(fabs((double)(a) - (double)(b)) < 1e-9 * (fabs((double)(b)) + 1))

/* Does one of e's report runs compare sw (--ab ...,sw[=A:B],...)? */
static bool report_compares(const struct experiment *e, const char *sw)
{
	size_t len = strlen(sw);
	for (const char *const *run = e->report_runs; *run; run++) {
		const char *p = strstr(*run, "--ab ");
		if (!p)
			continue;
		for (p += 5;; p++) {            /* each SWITCH of the comma list */
			if (!strncmp(p, sw, len) && strchr(",= ", p[len]))
				return true;
			p += strcspn(p, ", ");
			if (*p != ',')
				break;
		}
	}
	return false;
}

/* fsmark is the control: it must show no regression for any switch.  The
 * runner wants the tool's list of experiments: here, just fsmark. */
extern const struct experiment exp_fsmark;
const struct experiment *const experiments[] = { &exp_fsmark, NULL };

static void test_fsmark_compares_every_switch(void)
{
	static const char *const switches[] = {
		"pcp_high_order", "bulkfree_outside_lock", "slub_max_order", "slub_big_system",
		"fair_zone", "kswapd_wake_high", "quicklists", "slab_freelist_random",
		"slab_freelist_hardened",
	};
	for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++) {
		if (!report_compares(&exp_fsmark, switches[i])) {
			fprintf(stderr, "fsmark's report runs do not compare %s\n", switches[i]);
			exit(1);
		}
	}
	CHECK(!report_compares(&exp_fsmark, "slub_max"));   /* whole names only */
}

int main(void)
{
	struct summary s;
	const double v[] = { 1, 2, 4 };
	summarize(v, 3, &s);
	CHECK_NEAR(s.amean, 7.0 / 3);
	CHECK_NEAR(s.hmean, 3 / (1 + 0.5 + 0.25));          /* 12/7 */
	CHECK_NEAR(s.stddev, sqrt(((1 - 7.0 / 3) * (1 - 7.0 / 3) + (2 - 7.0 / 3) * (2 - 7.0 / 3) +
				   (4 - 7.0 / 3) * (4 - 7.0 / 3)) / 2));
	CHECK_NEAR(s.min, 1);
	CHECK_NEAR(s.max, 4);
	CHECK_NEAR(s.median, 2);

	const double w[] = { 10, 30, 20, 40 };
	summarize(w, 4, &s);
	CHECK_NEAR(s.median, 25);
	CHECK_NEAR(s.amean, 25);
	CHECK_NEAR(s.hmean, 4 / (0.1 + 1.0 / 30 + 0.05 + 0.025));
	CHECK_NEAR(s.stddev, sqrt((225 + 25 + 25 + 225) / 3.0));

	/* One value: no spread; a zero value: Hmean undefined, printed as 0. */
	summarize(v, 1, &s);
	CHECK_NEAR(s.stddev, 0);
	const double z[] = { 0, 5 };
	summarize(z, 2, &s);
	CHECK_NEAR(s.hmean, 0);

	/* The seed's table: 178.38 -> 256.74 is +43.93%, higher is better. */
	CHECK(fabs(pct_change(178.38, 256.74, HIGHER_IS_BETTER) - 43.93) < 0.005);
	/* Its stddev row: 0.89 -> 3.24 is -264.04%: a larger spread is worse. */
	CHECK(fabs(pct_change(0.89, 3.24, LOWER_IS_BETTER) - -264.04) < 0.01);
	/* A time that halves is +50%. */
	CHECK_NEAR(pct_change(20, 10, LOWER_IS_BETTER), 50);
	CHECK_NEAR(pct_change(20, 30, LOWER_IS_BETTER), -50);
	CHECK_NEAR(pct_change(20, 30, HIGHER_IS_BETTER), 50);
	CHECK_NEAR(pct_change(5, 5, LOWER_IS_BETTER), 0);
	CHECK(!signbit(pct_change(5, 5, LOWER_IS_BETTER)));
	CHECK_NEAR(pct_change(0, 5, HIGHER_IS_BETTER), 0);
	test_fsmark_compares_every_switch();
	printf("test_bench_stats: ok\n");
	return 0;
}
