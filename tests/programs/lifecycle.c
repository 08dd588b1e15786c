/*
 * A process's life on the drop-in malloc, one case per run: `lifecycle
 * <case>`.  Run under LD_PRELOAD=libzonealloc-malloc.so by
 * test_malloc_lifecycle.py, in the default and the debug mode, which
 * checks how each ends: a process ends when its program's last thread
 * does (whatever threads the malloc runs), a fork's child ends as its
 * program says, and the program's SIGSEGV handlers run as sigaction
 * defines them whether installed before or after the malloc's own.
 * Plain C library calls: the program does not know zonealloc.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink;

/* Memory back to the page allocator and a mapping freed: the malloc's
 * purge worker runs. */
static void churn(void)
{
	for (int i = 0; i < 200; i++) {
		char *p = malloc((size_t)(i % 50 + 1) << 12);
		p[0] = 1;
		sink = p;
		free(p);
	}
	char *big = malloc(100 << 20);
	big[0] = 1;
	free(big);
	free(malloc(1 << 20));
}

static void say(const char *s)
{
	if (write(STDOUT_FILENO, s, strlen(s)) < 0)
		_exit(9);
}

/* ------------------------------------------------------------------------
 * The last thread
 * ------------------------------------------------------------------------ */
static void *allocate_then_return(void *arg)
{
	(void)arg;
	churn();
	usleep(100000);
	churn();
	say("thread done\n");
	return NULL;
}

static void *sleep_then_return(void *arg)
{
	(void)arg;
	usleep(300000);                 /* no allocation: the malloc never sees it */
	say("thread done\n");
	return NULL;
}

static void *allocate_then_wait(void *arg)
{
	(void)arg;
	churn();
	say("ready\n");
	for (;;)
		pause();
	return NULL;
}

/* main starts a thread and calls pthread_exit: the process ends when the
 * thread does, exit status 0. */
static void main_exits(void *(*fn)(void *))
{
	pthread_t t;
	churn();
	if (pthread_create(&t, NULL, fn, NULL))
		exit(3);
	pthread_exit(NULL);
}

/* The process's exit runs on whichever thread ends last, the malloc's own
 * if it outlived the program's: with a stack a program's exit can use. */
static void big_atexit(void)
{
	volatile char frame[2 << 20];
	memset((char *)frame, 1, sizeof(frame));
	say(frame[12345] == 1 ? "atexit ran\n" : "atexit broken\n");
}

/* main calls exit while threads allocate. */
static void *allocate_forever(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	void *keep[32] = { 0 };
	for (;;) {
		int i = rand_r(&seed) % 32;
		free(keep[i]);
		keep[i] = malloc((size_t)1 << (rand_r(&seed) % 22));
	}
	return NULL;
}

static int exit_while_allocating(void)
{
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, allocate_forever, (void *)(uintptr_t)(i + 1)))
			return 3;
	usleep(200000);
	say("exiting\n");
	exit(0);
}

/* ------------------------------------------------------------------------
 * fork from a thread other than main, and what a child may do after
 * ------------------------------------------------------------------------ */
static const char *child_does;
static char *self_path;

static void *fork_here(void *arg)
{
	(void)arg;
	churn();
	pid_t pid = fork();
	if (pid < 0)
		exit(3);
	if (pid == 0) {
		churn();
		if (!strcmp(child_does, "_exit"))
			_exit(7);
		if (!strcmp(child_does, "exec")) {
			char *args[] = { self_path, "exec-target", NULL };
			execv(self_path, args);
			_exit(8);
		}
		return NULL;            /* the child's only thread returns */
	}
	int status;
	alarm(30);                      /* a child that never ends fails the case */
	if (waitpid(pid, &status, 0) != pid)
		exit(4);
	alarm(0);
	printf("child %s %d\n", WIFEXITED(status) ? "exited" : "killed",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return NULL;
}

static int fork_from_thread(const char *what)
{
	pthread_t t;
	child_does = what;
	churn();
	if (pthread_create(&t, NULL, fork_here, NULL))
		return 3;
	pthread_join(t, NULL);
	return 0;
}

/* ------------------------------------------------------------------------
 * SIGSEGV handlers: the program's, installed before or after the
 * malloc's own (the first malloc(0) installs it; debug mode, the first
 * malloc).
 * ------------------------------------------------------------------------ */
static volatile sig_atomic_t handled;
static sigjmp_buf recover;
static void *volatile fault_addr;

static void install(int flags, void (*fn)(int), void (*info)(int, siginfo_t *, void *),
		    int masked)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (masked)
		sigaddset(&sa.sa_mask, masked);
	sa.sa_flags = flags;
	if (info)
		sa.sa_sigaction = info;
	else
		sa.sa_handler = fn;
	sigaction(SIGSEGV, &sa, NULL);
}

/* A crash logger: logs, and lets the default action end the process. */
static void log_once(int sig)
{
	(void)sig;
	handled++;
	say(handled == 1 ? "handler\n" : "handler again\n");
	if (handled > 3)
		_exit(5);               /* looping: the case failed */
}

static void fault(void)
{
	fault_addr = (char *)(uintptr_t)4096 + 16;
	*(volatile int *)fault_addr = 1;
}

/* Recovers with siglongjmp, checking the address it was given. */
static void recover_at(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	handled++;
	if (si->si_addr != fault_addr || si->si_code <= 0)
		_exit(6);
	siglongjmp(recover, 1);
}

/* Reports what is blocked while it runs. */
static void report_mask(int sig)
{
	sigset_t now;
	char line[64];
	(void)sig;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	snprintf(line, sizeof(line), "segv blocked %d usr1 blocked %d\n",
		 sigismember(&now, SIGSEGV), sigismember(&now, SIGUSR1));
	say(line);
	_exit(0);
}

static int handlers(const char *c)
{
	bool before = strstr(c, "-before");
	if (!before)
		sink = malloc(0);
	if (!strncmp(c, "handler-resethand", 17))
		install(SA_RESETHAND, log_once, NULL, 0);
	else if (!strncmp(c, "handler-recover", 15))
		install(SA_SIGINFO, NULL, recover_at, 0);
	else if (!strncmp(c, "handler-nodefer", 15))
		install(SA_NODEFER, report_mask, NULL, SIGUSR1);
	else if (!strncmp(c, "handler-ignored", 15))
		signal(SIGSEGV, SIG_IGN);
	if (before)
		sink = malloc(0);
	if (!strncmp(c, "handler-recover", 15)) {
		for (int i = 0; i < 3; i++)
			if (!sigsetjmp(recover, 1))
				fault();
		printf("recovered %d\n", (int)handled);
		return 0;
	}
	if (strstr(c, "-raise")) {
		raise(SIGSEGV);         /* a signal sent, not a fault */
		say("survived\n");
		return 0;
	}
	fault();
	say("survived\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	self_path = argv[0];
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(c, "main-exits"))
		main_exits(allocate_then_return);
	if (!strcmp(c, "main-exits-quiet-thread"))
		main_exits(sleep_then_return);
	if (!strcmp(c, "main-exits-then-sigterm"))
		main_exits(allocate_then_wait);
	if (!strcmp(c, "main-exits-atexit")) {
		atexit(big_atexit);
		main_exits(allocate_then_return);
	}
	if (!strcmp(c, "exit-while-allocating"))
		return exit_while_allocating();
	if (!strcmp(c, "fork-from-thread"))
		return fork_from_thread("return");
	if (!strcmp(c, "fork-from-thread-_exit"))
		return fork_from_thread("_exit");
	if (!strcmp(c, "fork-from-thread-exec"))
		return fork_from_thread("exec");
	if (!strcmp(c, "exec-target")) {
		churn();
		return 0;
	}
	if (!strncmp(c, "handler-", 8))
		return handlers(c);
	fprintf(stderr, "lifecycle: no case '%s'\n", c);
	return 2;
}
