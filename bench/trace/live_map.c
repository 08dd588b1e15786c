/*
 * The replay's map of live blocks and objects (live_map.h).
 */
#include "live_map.h"

#include <stdlib.h>

static size_t live_hash(const struct live_map *m, uint64_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> (64 - m->bits));
}

int map_init(struct live_map *m, unsigned int bits)
{
	m->bits = bits;
	m->used = 0;
	m->slot = malloc(sizeof(*m->slot) << bits);
	if (!m->slot)
		return -1;
	for (size_t i = 0; i < (size_t)1 << bits; i++)
		m->slot[i].key = NO_KEY;
	return 0;
}

struct live *map_find(const struct live_map *m, uint64_t key)
{
	size_t mask = ((size_t)1 << m->bits) - 1;
	if (key == NO_KEY)
		return NULL;
	for (size_t i = live_hash(m, key);; i = (i + 1) & mask) {
		if (m->slot[i].key == key)
			return &m->slot[i];
		if (m->slot[i].key == NO_KEY)
			return NULL;
	}
}

static int map_grow(struct live_map *m);

struct live *map_insert(struct live_map *m, uint64_t key)
{
	if (key == NO_KEY || (m->used + 1 > ((size_t)1 << m->bits) / 2 && map_grow(m)))
		return NULL;
	size_t mask = ((size_t)1 << m->bits) - 1, i = live_hash(m, key);
	while (m->slot[i].key != NO_KEY)
		i = (i + 1) & mask;
	m->slot[i].key = key;
	m->used++;
	return &m->slot[i];
}

struct live *map_get(struct live_map *m, uint64_t key)
{
	struct live *l = map_find(m, key);
	return l ? l : map_insert(m, key);
}

static int map_grow(struct live_map *m)
{
	struct live_map bigger;
	if (map_init(&bigger, m->bits + 1))
		return -1;
	for (size_t i = 0; i < (size_t)1 << m->bits; i++)
		if (m->slot[i].key != NO_KEY)
			*map_insert(&bigger, m->slot[i].key) = m->slot[i];
	free(m->slot);
	*m = bigger;
	return 0;
}

/* Removes e, moving back any later entry of its cluster that the hole
 * would otherwise cut off from its home slot. */
void map_delete(struct live_map *m, struct live *e)
{
	size_t mask = ((size_t)1 << m->bits) - 1, hole = (size_t)(e - m->slot);
	for (size_t i = (hole + 1) & mask; m->slot[i].key != NO_KEY; i = (i + 1) & mask) {
		size_t home = live_hash(m, m->slot[i].key);
		/* may the entry at i move to the hole?  Only if its home is not
		 * cyclically within (hole, i] */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->slot[hole] = m->slot[i];
			hole = i;
		}
	}
	m->slot[hole].key = NO_KEY;
	m->used--;
}

