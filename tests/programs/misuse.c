/*
 * Misuse, one case per run: `misuse <case>`.  Run under
 * LD_PRELOAD=libzonealloc-malloc.so by test_malloc_misuse.py, which
 * expects each case to end in abort() with zonealloc's diagnostic, and
 * "clean" to exit 0 (no false alarm), in the default and the debug mode.
 * Plain C library calls: the program does not know zonealloc.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* C23's sized frees: not in this C library's headers, found at run time. */
static void call_free_sized(void *p, size_t n)
{
	void (*fn)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
	if (!fn) {
		fprintf(stderr, "free_sized not found: is zonealloc preloaded?\n");
		exit(3);
	}
	fn(p, n);
}

static void call_free_aligned_sized(void *p, size_t align, size_t n)
{
	void (*fn)(void *, size_t, size_t) =
		(void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
	if (!fn)
		exit(3);
	fn(p, align, n);
}

/* A pointer laundered through a volatile, taken before the misuse, so that
 * the compiler cannot see (and warn about, or remove) what follows. */
static void *volatile sink;
static void *opaque(void *p)
{
	sink = p;
	return sink;
}

static char *alloc(size_t n)
{
	return opaque(malloc(n));
}

static void *worker(void *arg)
{
	char **blocks = arg;
	for (int i = 0; i < 2000; i++) {
		free(blocks[i]);
		blocks[i] = malloc((size_t)(i % 700) + 1);
		memset(blocks[i], 1, (size_t)(i % 700) + 1);
	}
	return NULL;
}

/* Everything legal, heavily: no diagnostic may fire. */
static int clean(void)
{
	static char *blocks[2000];
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)(i * 37 % 70000);
		blocks[i] = malloc(n);
		memset(blocks[i], 2, n);
	}
	pthread_t t;
	pthread_create(&t, NULL, worker, blocks);       /* frees the main thread's blocks */
	pthread_join(t, NULL);
	for (int i = 0; i < 2000; i++) {
		blocks[i] = realloc(blocks[i], (size_t)(i % 300) * 50 + 1);
		free(blocks[i]);
	}
	void *p = NULL;
	if (posix_memalign(&p, 256, 1000) || (uintptr_t)p % 256)
		return 1;
	memset(p, 3, 1000);
	free(p);
	p = aligned_alloc(64, 640);
	call_free_aligned_sized(p, 64, 640);
	p = malloc(100);
	call_free_sized(p, 100);
	p = calloc(10, 10);
	sink = realloc(p, 0);
	p = malloc(20 << 20);                           /* a direct mapping */
	memset(p, 4, 20 << 20);
	p = realloc(p, 40 << 20);
	free(p);
	free(malloc(0));
	printf("usable %zu\n", malloc_usable_size(opaque(malloc(33))));
	malloc_trim(0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	char stack_object[32];
	char *p, *q;
	(void)q;

	if (!strcmp(c, "clean"))
		return clean();
	/* Default mode: pointers zonealloc never returned. */
	if (!strcmp(c, "free-foreign"))
		free(opaque(stack_object));
	if (!strcmp(c, "free-interior")) {
		p = alloc(64);
		free(opaque(p + 8));
	}
	if (!strcmp(c, "realloc-foreign"))
		sink = realloc(opaque(stack_object), 10);
	if (!strcmp(c, "usable-size-foreign"))
		printf("%zu\n", malloc_usable_size(opaque(stack_object)));
	/* Double frees, with other allocations in between. */
	if (!strcmp(c, "double-free-small")) {
		p = alloc(64);
		q = alloc(64);
		free(opaque(p));
		for (int i = 0; i < 100; i++)
			sink = malloc((size_t)(100 + i));
		free(q);
		free(p);
	}
	/* The allocations in between are of other (larger) blocks: had they
	 * reused the freed block's memory, the second free would free theirs. */
	if (!strcmp(c, "double-free-large")) {
		p = alloc(100000);
		free(opaque(p));
		for (int i = 0; i < 20; i++)
			sink = malloc((size_t)(300000 + 4096 * i));
		free(p);
	}
	if (!strcmp(c, "double-free-huge")) {
		p = alloc(100 << 20);      /* beyond the largest run: a mapping */
		free(opaque(p));
		free(p);
	}
	/* 48-byte objects: 85 to a page, 16 bytes of slack after the last (the
	 * default mode's layout). */
	if (!strcmp(c, "free-past-last-object")) {
		for (int i = 0; i < 10000 && ((uintptr_t)(p = alloc(48)) & 4095) != 84 * 48; i++)
			;
		free(opaque(p + 48));
	}
	if (!strcmp(c, "usable-size-freed")) {
		p = alloc(50);
		free(opaque(p));
		printf("%zu\n", malloc_usable_size(p));
	}
	/* Sized frees that do not match. */
	if (!strcmp(c, "free-sized-mismatch"))
		call_free_sized(alloc(100), 300);
	if (!strcmp(c, "free-sized-mismatch-large"))
		call_free_sized(alloc(100000), 40000);
	if (!strcmp(c, "free-sized-near-block"))
		call_free_sized(alloc(20000), 19000);
	if (!strcmp(c, "free-sized-near-mapping"))
		call_free_sized(alloc(100 << 20), (100 << 20) - 100);
	if (!strcmp(c, "free-aligned-mismatch"))
		call_free_aligned_sized(opaque(aligned_alloc(64, 100)), 4096, 100);
	/* A smaller alignment than the allocation's, which the pointer meets. */
	if (!strcmp(c, "free-aligned-mismatch-block"))
		call_free_aligned_sized(opaque(aligned_alloc(65536, 20000)), 4096, 20000);
	if (!strcmp(c, "free-aligned-mismatch-mapping"))
		call_free_aligned_sized(opaque(aligned_alloc(1 << 21, 100 << 20)), 4096, 100 << 20);
	/* malloc(0)'s pointers are checked as any other block's. */
	if (!strcmp(c, "malloc0-double-free")) {
		p = alloc(0);
		free(opaque(p));
		for (int i = 0; i < 10; i++)
			sink = malloc(0);
		free(p);
	}
	if (!strcmp(c, "malloc0-free-offset"))
		free(opaque(alloc(0) + 1));
	if (!strcmp(c, "malloc0-realloc-freed")) {
		p = alloc(0);
		free(opaque(p));
		sink = realloc(p, 10);
	}
	if (!strcmp(c, "malloc0-usable-size-freed")) {
		p = alloc(0);
		free(opaque(p));
		printf("%zu\n", malloc_usable_size(p));
	}
	if (!strcmp(c, "malloc0-free-sized-mismatch"))
		call_free_sized(alloc(0), 8);
	/* Debug mode only. */
	if (!strcmp(c, "overflow-small")) {
		p = alloc(10);
		((volatile char *)p)[10] = 1;           /* one byte past the request */
		free(p);
	}
	if (!strcmp(c, "overflow-large")) {
		p = alloc(100000);
		((volatile char *)p)[100000] = 1;
		free(p);
	}
	if (!strcmp(c, "write-after-free-small")) {
		/* The class allocated again (another slot: the freed one is
		 * held back), then the stale write, then enough frees to push
		 * the object out of the quarantine, where it is checked. */
		p = alloc(24);
		free(opaque(p));
		sink = malloc(24);
		((volatile char *)p)[3] = 'x';
		for (int i = 0; i < 5000; i++)
			free(opaque(alloc(24)));
	}
	/* A stale write, then no more frees of the class: reported at exit. */
	if (!strcmp(c, "write-after-free-small-exit")) {
		p = alloc(40);
		free(opaque(p));
		((volatile char *)p)[5] = 'x';
		return 0;
	}
	/* ... and at once, by the class's next allocation. */
	if (!strcmp(c, "write-after-free-small-next")) {
		p = alloc(40);
		free(opaque(p));
		((volatile char *)p)[5] = 'x';
		sink = malloc(40);
		fprintf(stderr, "misuse: case '%s' was not caught\n", c);
		_exit(2);               /* not at exit: this case is the early check's */
	}
	if (!strcmp(c, "free-aligned-mismatch-small"))
		call_free_aligned_sized(opaque(aligned_alloc(64, 100)), 32, 100);
	if (!strcmp(c, "write-after-free-large")) {
		p = alloc(100000);
		free(opaque(p));
		((volatile char *)p)[10] = 'x';
	}
	if (!strcmp(c, "read-after-free-large")) {
		p = alloc(100000);
		free(opaque(p));
		printf("%d\n", ((volatile char *)p)[10]);
	}
	if (!strcmp(c, "malloc0-read")) {
		p = alloc(0);
		printf("%d\n", *(volatile char *)p);
	}
	if (!strcmp(c, "malloc0-write")) {
		p = alloc(0);
		*(volatile char *)p = 1;
	}
	if (!strcmp(c, "realloc-freed")) {
		p = alloc(50);
		free(opaque(p));
		sink = realloc(p, 100);
	}
	if (!strcmp(c, "realloc-freed-large")) {
		p = alloc(100000);
		free(opaque(p));
		sink = realloc(p, 200000);
	}
	fprintf(stderr, "misuse: case '%s' was not caught\n", c);
	return 2;
}
