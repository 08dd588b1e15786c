/*
 * Small arithmetic helpers used across the library (the kernel's log2.h,
 * align.h and get_random_u64), written once.
 */
#ifndef ZA_BITOPS_H
#define ZA_BITOPS_H

#include "zonealloc.h"

#include <stddef.h>
#include <stdint.h>

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))

/* The position of the highest set bit, 1-based; 0 for 0 (the kernel's fls). */
static inline unsigned int fls_u(unsigned int x)
{
	return x ? 32 - (unsigned int)__builtin_clz(x) : 0;
}

static inline unsigned int fls_ul(unsigned long x)
{
	return x ? 64 - (unsigned int)__builtin_clzl(x) : 0;
}

/* The smallest order o with 2^o >= n (n >= 1; the kernel's order_base_2). */
static inline unsigned int order_base_2(unsigned long n)
{
	return n > 1 ? fls_ul(n - 1) : 0;
}

/* The order of the smallest block of pages that holds size bytes (any
 * size: no sum that could wrap). */
static inline unsigned int get_order(size_t size)
{
	return size ? order_base_2(((size - 1) >> ZA_PAGE_SHIFT) + 1) : 0;
}

/* 64 random bits, from getrandom() or, where it cannot answer at once,
 * the cycle counter mixed (random enough for keys that must only not be
 * guessed by accident). */
uint64_t get_random_u64(void);

#endif /* ZA_BITOPS_H */
