/*
 * Live blocks and objects of a replay: a trace's key (pfn, or hashed
 * object pointer) to what zonealloc returned.  Open addressing with linear
 * probing; deletion shifts the rest of the cluster back, so there are no
 * tombstones and a long trace does not degrade the table.
 */
#ifndef ZABENCH_LIVE_MAP_H
#define ZABENCH_LIVE_MAP_H

#include <stddef.h>
#include <stdint.h>

#define NO_KEY UINT64_MAX

struct live {
	uint64_t key;
	union {
		void *addr;     /* a replay's: the block or object zonealloc returned */
		uint64_t seen;  /* a first pass's: the event that set the entry */
	};
	/* A replay's pages: the order and the allocation's TGFP_* flags;
	 * objects: the cache index (-1 kmalloc).  A first pass keeps its own
	 * state in them (untraced.c, prime.c say what). */
	int tag;
	uint32_t gfp;
};

struct live_map {
	struct live *slot;
	unsigned int bits;
	size_t used;
};

int map_init(struct live_map *m, unsigned int bits);    /* 0, or -1: no memory */
/* NO_KEY marks an empty slot: a trace that names it (a corrupt pfn or
 * pointer of all ones) finds nothing and can insert nothing. */
struct live *map_find(const struct live_map *m, uint64_t key);
/* A new entry for key, which must not be present.  NULL if out of memory. */
struct live *map_insert(struct live_map *m, uint64_t key);
/* key's entry, a new one if it has none.  NULL if out of memory. */
struct live *map_get(struct live_map *m, uint64_t key);
void map_delete(struct live_map *m, struct live *e);

#endif
