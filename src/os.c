/*
 * The operating-system primitives the rest of the library uses: anonymous
 * memory for metadata, futexes, and the calibration of the cycle counter.
 */
#include "bitops.h"
#include "platform.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
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

int za_thread_start(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(thread, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
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

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t za_cycles_fallback(void)
{
	return now_ns();
}

static uint64_t ns_per_2_32_cycles;   /* fixed point: ns = cycles * this >> 32 */
static pthread_once_t calibrate_once = PTHREAD_ONCE_INIT;

/* Compares the cycle counter against the monotonic clock over 2 ms. */
static void calibrate(void)
{
	uint64_t t0 = now_ns(), c0 = za_cycles(), t1, c1;
	do {
		t1 = now_ns();
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
