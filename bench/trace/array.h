/*
 * The trace wing's growing arrays: room for element n of an array of
 * *cap elements of `size` bytes, doubling it (from 8) when full.
 */
#ifndef ZABENCH_ARRAY_H
#define ZABENCH_ARRAY_H

#include <stdlib.h>

/* The array, moved if it grew; NULL, the array left as it was, if it
 * could not grow. */
static inline void *array_grow(void *a, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return a;
	size_t c = *cap ? *cap * 2 : 8;
	void *b = realloc(a, c * size);
	if (b)
		*cap = c;
	return b;
}

#endif
