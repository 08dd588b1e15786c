/*
 * The executable invariants (src/debug_vm.h, lock.h).  With ZA_DEBUG_VM: a
 * broken condition is reported through the system's error handler as
 * "VM_BUG_ON at <file>:<line>: <condition>" (with the page, for
 * VM_BUG_ON_PAGE) and the process aborts; a lock-held assertion passes
 * for the holder only; and a page descriptor corrupted on a per-CPU list
 * is caught at the allocation that takes it.  Without ZA_DEBUG_VM the
 * checks are nothing: their operands are not even evaluated.
 *
 * Each failing case runs in a child, whose report comes back through a
 * pipe.  Links the library's objects: it uses internal headers.
 */
#include "test.h"
#include "mmzone.h"

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

static int report_fd;

static void to_pipe(const char *msg, void *ctx)
{
	(void)ctx;
	if (write(report_fd, msg, strlen(msg)) < 0)
		_exit(3);
}

/* Runs fn(mm) in a child with its reports going to a pipe; returns the
 * report, and whether the child died of SIGABRT in *aborted. */
static char *in_child(void (*fn)(za_mm_t *), bool *aborted)
{
	static char buf[512];
	int fds[2];
	CHECK(pipe(fds) == 0);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(fds[0]);
		report_fd = fds[1];
		signal(SIGABRT, SIG_DFL);
		za_mm_t *mm = test_mm("memory=16M,zones=Normal,cpus=1,kswapd=0");
		za_mm_set_error_handler(mm, to_pipe, NULL);
		fn(mm);
		_exit(0);
	}
	close(fds[1]);
	ssize_t n, len = 0;
	while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	buf[len] = 0;
	close(fds[0]);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	*aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
	CHECK(*aborted || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
	return buf;
}

static int evaluated;

static void broken_condition(za_mm_t *mm)
{
	int x = 1;
	VM_BUG_ON(mm, (evaluated++, x == 1));
}

static void broken_page(za_mm_t *mm)
{
	void *p = za_alloc_pages(mm, 0, 0);
	struct za_page *page = virt_to_page(mm, p);
	VM_BUG_ON_PAGE(mm, (evaluated++, page_flags(page) & PG_alloc), page);
}

static za_lock_t lock;

static void held_lock(za_mm_t *mm)
{
	za_lock(&lock);
	za_lock_assert_held(mm, &lock);
	za_unlock(&lock);
}

static void unheld_lock(za_mm_t *mm)
{
	za_lock_assert_held(mm, &lock);
}

static void *take_lock(void *arg)
{
	(void)arg;
	za_lock(&lock);
	return NULL;
}

static void other_threads_lock(za_mm_t *mm)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, take_lock, NULL) == 0);
	pthread_join(t, NULL);
	za_lock_assert_held(mm, &lock);
}

/* A block on a per-CPU list whose descriptor says "allocated" (a stray
 * write into the memory map): the allocation that takes it stops there. */
static void corrupt_pcp_page(za_mm_t *mm)
{
	void *p = za_alloc_pages(mm, 0, 0);
	CHECK_EQ(za_free_pages(mm, p, 0), 0);
	set_page_flags(virt_to_page(mm, p), PG_alloc);
	za_alloc_pages(mm, 0, 0);
}

#ifdef ZA_DEBUG_VM
static const bool on = true;
#else
static const bool on = false;
#endif

/* Runs fn in a child: with ZA_DEBUG_VM it aborts if it should, and its
 * report says each of the strings from says on (up to a NULL); without, it
 * reports nothing. */
static void expect(void (*fn)(za_mm_t *), bool aborts, const char *says, ...)
{
	bool aborted;
	const char *msg = in_child(fn, &aborted);
	CHECK_EQ(aborted, on && aborts);
	if (!on) {
		CHECK_EQ(strlen(msg), 0);
		return;
	}
	va_list ap;
	va_start(ap, says);
	for (; says; says = va_arg(ap, const char *))
		CHECK_STR_HAS(msg, says);
	va_end(ap);
}

static void test_broken_condition(void)
{
	expect(broken_condition, true, "VM_BUG_ON at ", "test_debug_vm.c:", "x == 1", NULL);
}

static void test_broken_page(void)
{
	expect(broken_page, true, "page_flags(page) & PG_alloc", "(page pfn ", NULL);
}

static void test_held_lock(void)
{
	expect(held_lock, false, NULL);
}

static void test_unheld_lock(void)
{
	expect(unheld_lock, true, "lock_held_here(&lock)", NULL);
}

static void test_other_threads_lock(void)
{
	expect(other_threads_lock, true, "lock_held_here(&lock)", NULL);
}

static void test_corrupt_pcp_page(void)
{
	expect(corrupt_pcp_page, true, "pcp.h:", "!= PG_pcp", NULL);
}

/* Without ZA_DEBUG_VM the operands are not even evaluated (with it, the
 * cases above cover the checks). */
static void test_operands_unevaluated(void)
{
	if (on)
		return;
	broken_condition(NULL);
	CHECK_EQ(evaluated, 0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "broken_condition", test_broken_condition },
		{ "broken_page", test_broken_page },
		{ "held_lock", test_held_lock },
		{ "unheld_lock", test_unheld_lock },
		{ "other_threads_lock", test_other_threads_lock },
		{ "corrupt_pcp_page", test_corrupt_pcp_page },
		{ "operands_unevaluated", test_operands_unevaluated },
	};
	printf("test_debug_vm: ZA_DEBUG_VM %s\n", on ? "on: checks fatal" : "off: checks compiled out");
	return run_test_cases("test_debug_vm", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
