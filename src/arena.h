#ifndef ZA_ARENA_H
#define ZA_ARENA_H

#include "mmzone.h"

/* Reserves nr_pages of arena aligned to 4 KiB << align_order, honouring the
 * hugepages= and populate= keys.  Returns 0 or -1 with errno. */
int arena_reserve(struct za_mm *mm, unsigned long nr_pages, unsigned int align_order);
void arena_release(struct za_mm *mm);

#endif
