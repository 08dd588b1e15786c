/*
 * The thread of zabench record's reader, trace_pipe's (record.c) or the
 * raw buffers' (record_raw.c): it takes no signal meant for zabench or the
 * command, drains every DRAIN_MS, and is told to stop through a pipe.
 */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

int reader_thread_start(struct reader_thread *t, void *(*fn)(void *), void *arg)
{
	if (pipe2(t->stop, O_CLOEXEC))
		return -1;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t->tid, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(t->stop[0]);
		close(t->stop[1]);
	}
	return rc;
}

bool reader_thread_wait(const struct reader_thread *t)
{
	struct pollfd stop = { .fd = t->stop[0], .events = POLLIN };
	return poll(&stop, 1, DRAIN_MS) > 0;
}

void reader_thread_stop(struct reader_thread *t)
{
	ssize_t n;
	do
		n = write(t->stop[1], "", 1);
	while (n < 0 && errno == EINTR);
	pthread_join(t->tid, NULL);
	close(t->stop[0]);
	close(t->stop[1]);
}
