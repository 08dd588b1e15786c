/*
 * A system's periodic helpers (worker.h).  The work is a function of the
 * system's state only; the worker's waiting between calls is the only use
 * of the clock.
 */
#include "worker.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

struct za_worker {
	struct za_mm *mm;
	void (*fn)(struct za_mm *);
	const char *name;
	pthread_t thread;
	pid_t pid;                      /* the process it runs in (not a forked child) */
	uint64_t interval_ns;
	_Atomic uint32_t stop;          /* futex word */
	sigset_t program_mask;          /* of the thread that started it */
};

static void *worker_main(void *arg)
{
	struct za_worker *w = arg;
	bool alive;
	za_thread_name(w->name);
	while ((alive = za_helper_sleep(&w->stop, 0, w->interval_ns)) && !atomic_load(&w->stop))
		w->fn(w->mm);
	za_thread_exit(alive ? NULL : &w->program_mask);
	return NULL;
}

struct za_worker *worker_start(struct za_mm *mm, const char *name, uint64_t interval_ns,
			       void (*fn)(struct za_mm *))
{
	struct za_worker *w = za_os_alloc(sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	*w = (struct za_worker){ .mm = mm, .fn = fn, .name = name, .pid = getpid(),
				 .interval_ns = interval_ns };
	if (za_thread_start(&w->thread, NULL, worker_main, w, &w->program_mask)) {
		za_os_free(w, sizeof(*w));
		errno = EAGAIN;
		return NULL;
	}
	return w;
}

void worker_stop(struct za_worker **wp)
{
	struct za_worker *w = *wp;
	if (!w)
		return;
	*wp = NULL;
	if (w->pid == getpid()) {
		atomic_store(&w->stop, 1);
		za_futex_wake(&w->stop, 1);
		pthread_join(w->thread, NULL);
	}
	za_os_free(w, sizeof(*w));
}
