/*
 * The configuration keys and their defaults as the library has them, for
 * test_config_keys.py (which holds README.md and zonealloc.h to them).
 * Two lines:
 *
 *   defaults <key=value,...>   the table in config.c (keys[]) formatted with
 *                              the values of za_config_defaults(): "auto"
 *                              where a value is computed at creation
 *   effective <key=value,...>  za_mm_config_string() of a system created
 *                              with the defaults: "auto" resolved
 *
 * The first is internal (config.h, linked from the library's objects): the
 * public API shows only resolved values, so it cannot tell a default of
 * "auto" from the value auto gave on this machine.
 */
#include "zonealloc.h"
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	unsetenv("ZA_CONFIG");          /* the defaults, not the caller's overrides */

	struct za_config cfg;
	za_config_defaults(&cfg);
	size_t len = za_config_format(&cfg, NULL, 0) + 1;
	char *defaults = malloc(len);
	if (!defaults)
		return 1;
	za_config_format(&cfg, defaults, len);
	printf("defaults %s\n", defaults);
	free(defaults);

	za_mm_t *mm = za_mm_create(NULL);
	if (!mm) {
		fprintf(stderr, "config_keys: za_mm_create(NULL): %s\n", za_last_error());
		return 1;
	}
	printf("effective %s\n", za_mm_config_string(mm));
	long leaked = za_mm_destroy(mm);
	return leaked != 0;
}
