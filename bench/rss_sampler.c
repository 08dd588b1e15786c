/* The mean RSS of a child process (rss_sampler.h). */
#include "rss_sampler.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_NS 5000000L

long rss_pages(int fd)
{
	char buf[128];
	long size, resident;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return sscanf(buf, "%ld %ld", &size, &resident) == 2 ? resident : -1;
}

pid_t wait_sampling_rss(pid_t pid, int *status, struct rusage *ru, double *mean_kib)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	double sum = 0;
	long samples = 0, page_kib = sysconf(_SC_PAGESIZE) / 1024;
	pid_t got;
	/* The first reading a period after the fork: until its exec, the
	 * child's pages are its parent's. */
	for (;;) {
		nanosleep(&(struct timespec){ 0, SAMPLE_NS }, NULL);
		if ((got = wait4(pid, status, WNOHANG, ru)) != 0)
			break;
		long pages = fd >= 0 ? rss_pages(fd) : -1;
		if (pages > 0) {
			sum += (double)pages;
			samples++;
		}
	}
	if (fd >= 0)
		close(fd);
	*mean_kib = samples ? sum / (double)samples * (double)page_kib : 0;
	return got;
}
