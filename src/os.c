/*
 * The operating-system primitives the rest of the library uses: anonymous
 * memory for metadata, futexes, and the calibration of the cycle counter.
 */
#include "bitops.h"
#include "platform.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void *za_os_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void za_os_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/* The pages cost nothing until written again, and then read as zero;
 * false if the OS refused (locked memory: mlockall), the pages as they
 * were. */
bool za_os_release(void *p, size_t size)
{
	return madvise(p, size, MADV_DONTNEED) == 0;
}

/* ------------------------------------------------------------------------
 * Helper threads
 *
 * The C library ends a process when its last thread ends, counting ours:
 * a helper that outlived the program's threads would keep the process
 * alive, with every signal blocked.  So each helper, whenever it wakes,
 * asks whether any thread of the program is left, and returns if none is;
 * the C library then ends the process on it as it would have on the
 * program's last thread (exit(0)), under the signal mask of the program
 * thread that started it.
 *
 * The kernel counts a process's threads, a leader that called pthread_exit
 * among them until the process ends (a zombie); the helpers are counted
 * here, from after their creation until just before they return, so that
 * a helper starting or ending makes the answer "a thread is left".  The
 * count is one word with the pid it belongs to (a forked child starts with
 * none: a word of another pid counts none) and a generation every start
 * and end bumps, so that a look at /proc/self/stat between two equal words
 * saw no helper come or go.
 * ------------------------------------------------------------------------ */
#define HELPERS_PID_SHIFT 40
#define HELPERS_GEN_SHIFT 16
#define HELPERS_COUNT_MASK 0xffffu
#define HELPERS_GEN_MASK 0xffffffu

static _Atomic uint64_t helpers;

static unsigned int helpers_of(uint64_t w, uint64_t pid)
{
	return w >> HELPERS_PID_SHIFT == pid ? (unsigned int)(w & HELPERS_COUNT_MASK) : 0;
}

static void helpers_add(int delta)
{
	uint64_t pid = (uint64_t)getpid(), w = atomic_load(&helpers), next;
	do {
		uint64_t gen = ((w >> HELPERS_GEN_SHIFT) + 1) & HELPERS_GEN_MASK;
		uint64_t count = (helpers_of(w, pid) + (unsigned int)delta) & HELPERS_COUNT_MASK;
		next = pid << HELPERS_PID_SHIFT | gen << HELPERS_GEN_SHIFT | count;
	} while (!atomic_compare_exchange_weak(&helpers, &w, next));
}

int za_thread_start(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
		    sigset_t *program_mask)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, program_mask);
	int err = pthread_create(thread, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, program_mask, NULL);
	if (!err)
		helpers_add(1);
	return err;
}

void za_thread_exit(const sigset_t *program_mask)
{
	helpers_add(-1);
	if (program_mask)
		pthread_sigmask(SIG_SETMASK, program_mask, NULL);
}

void za_thread_name(const char *name)
{
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* A helper's sleep: until *word is no longer val or ns have passed
 * (UINT64_MAX: only the former).  It looks whether the program is gone at
 * most and at least about once a second; false once it is. */
#define HELPER_LOOK_NS 1000000000u
static __thread uint64_t helper_last_look;

bool za_helper_sleep(_Atomic uint32_t *word, uint32_t val, uint64_t ns)
{
	uint64_t start = za_now_ns();
	while (atomic_load(word) == val) {
		uint64_t now = za_now_ns();
		if (now - start >= ns)
			return true;
		if (now - helper_last_look >= HELPER_LOOK_NS) {
			helper_last_look = now;
			if (za_program_gone())
				return false;
		}
		uint64_t nap = ns - (now - start);
		za_futex_wait_timeout(word, val, nap < HELPER_LOOK_NS ? nap : HELPER_LOOK_NS);
	}
	return true;
}

/* The field after `skip` spaces from s, as a number; -1 if there is none. */
static long stat_field(const char *s, int skip)
{
	for (; skip > 0 && s; skip--)
		if ((s = strchr(s, ' ')))
			s++;
	return s && *s >= '0' && *s <= '9' ? strtol(s, NULL, 10) : -1;
}

/* /proc/self/stat: after the command's closing parenthesis come the
 * leader's state (field 3) and, seventeen fields on, the threads (20).
 * False when it cannot tell (no /proc, a helper came or went): the
 * helper then stays, and asks again later. */
bool za_program_gone(void)
{
	char buf[512];
	uint64_t before = atomic_load(&helpers);
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || atomic_load(&helpers) != before)
		return false;
	buf[n] = 0;
	const char *s = strrchr(buf, ')');
	if (!s || s[1] != ' ')
		return false;
	long threads = stat_field(s + 2, 17);
	bool leader_gone = s[2] == 'Z';
	return threads > 0 && threads - leader_gone - helpers_of(before, (uint64_t)getpid()) <= 0;
}

void za_futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

void za_futex_wait_timeout(_Atomic uint32_t *addr, uint32_t val, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

void za_futex_wake(_Atomic uint32_t *addr, int nr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, nr, NULL, NULL, 0);
}

uint64_t za_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t za_cycles_fallback(void)
{
	return za_now_ns();
}

static uint64_t ns_per_2_32_cycles;   /* fixed point: ns = cycles * this >> 32 */
static pthread_once_t calibrate_once = PTHREAD_ONCE_INIT;

/* Compares the cycle counter against the monotonic clock over 2 ms. */
static void calibrate(void)
{
	uint64_t t0 = za_now_ns(), c0 = za_cycles(), t1, c1;
	do {
		t1 = za_now_ns();
		c1 = za_cycles();
	} while (t1 - t0 < 2000000);
	uint64_t cycles = c1 - c0 ? c1 - c0 : 1;
	ns_per_2_32_cycles = (uint64_t)(((unsigned __int128)(t1 - t0) << 32) / cycles);
}

uint64_t za_cycles_to_ns(uint64_t cycles)
{
	pthread_once(&calibrate_once, calibrate);
	return (uint64_t)(((unsigned __int128)cycles * ns_per_2_32_cycles) >> 32);
}

uint64_t get_random_u64(void)
{
	uint64_t v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = za_cycles() * 0x9E3779B97F4A7C15ULL;
	return v;
}
