/*
 * A program that forks: the parent and the child each allocate and exit
 * (test_malloc_stats.py runs it under the drop-in malloc with ZA_STATS, to
 * see one report per process).  Nothing on stdout or stderr of its own.
 * `stats_fork live`: no fork; exits holding LIVE_SMALL blocks of 100
 * bytes and one of LIVE_LARGE, all written (what the RSS breakdown must
 * find in use).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Seen by the compiler as used elsewhere, so that it keeps the calls (it
 * may drop a malloc whose block nothing reads). */
static char *volatile kept;

static int use_memory(size_t n)
{
	kept = malloc(n);
	if (!kept)
		return 1;
	memset(kept, 1, n);
	int ok = kept[n - 1] == 1;
	free(kept);
	return !ok;
}

#define LIVE_SMALL 80000
#define LIVE_LARGE (4u << 20)

static int keep_live(void)
{
	static char *volatile live[LIVE_SMALL];         /* kept to the end, as kept is */
	for (int i = 0; i < LIVE_SMALL; i++) {
		if (!(live[i] = malloc(100)))
			return 1;
		memset(live[i], 1, 100);
	}
	kept = malloc(LIVE_LARGE);
	if (!kept)
		return 1;
	memset(kept, 1, LIVE_LARGE);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "live") ? 2 : keep_live();
	if (use_memory(100))
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		exit(use_memory(200000));
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return use_memory(5000);
}
