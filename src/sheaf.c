/*
 * The barn's lists (sheaf.h): what SLUB's sheaves and the malloc's share.
 */
#include "sheaf.h"
#include "internal.h"

struct sheaf empty_sheaf;       /* capacity 0: every fast path misses */

static struct sheaf **barn_list(struct barn *b, bool full, unsigned int **nr)
{
	*nr = full ? &b->nr_full : &b->nr_empty;
	return full ? &b->full : &b->empty;
}

void barn_add(struct za_mm *mm, struct barn *b, struct sheaf *s, bool full)
{
	unsigned int *nr;
	struct sheaf **list = barn_list(b, full, &nr);
	za_lock_assert_held(mm, &b->lock);
	VM_BUG_ON(mm, s == &empty_sheaf || s->size != (full ? s->capacity : 0));
	s->next = *list;
	*list = s;
	(*nr)++;
}

struct sheaf *barn_take(struct za_mm *mm, struct barn *b, bool full)
{
	unsigned int *nr;
	struct sheaf **list = barn_list(b, full, &nr), *s = *list;
	za_lock_assert_held(mm, &b->lock);
	if (s) {
		*list = s->next;
		(*nr)--;
	}
	return s;
}

void barn_put(struct za_mm *mm, struct barn *b, struct sheaf *s, bool full)
{
	za_lock(&b->lock);
	barn_add(mm, b, s, full);
	za_unlock(&b->lock);
}

struct sheaf *barn_get(struct za_mm *mm, struct barn *b, bool full)
{
	za_lock(&b->lock);
	struct sheaf *s = barn_take(mm, b, full);
	za_unlock(&b->lock);
	return s;
}

/* The barn's count of sheaves stays: the limits on either list need no
 * look (the kernel's barn_replace_empty_sheaf ignores them too). */
struct sheaf *barn_trade(struct za_mm *mm, struct barn *b, struct sheaf *give, bool give_full)
{
	struct sheaf *got = barn_take(mm, b, !give_full);
	if (got)
		barn_add(mm, b, give, give_full);
	return got;
}

static int verify_list(const struct sheaf *s, unsigned int capacity, bool full, unsigned int nr,
		       const char *what)
{
	unsigned int n = 0;
	for (; s; s = s->next, n++)
		VERIFY(s->capacity == capacity && s->size == (full ? capacity : 0),
		       "%s: a%s sheaf of its barn holds %u of %u (capacity %u)", what,
		       full ? " full" : "n empty", s->size, s->capacity, capacity);
	VERIFY(n == nr, "%s: the barn has %u %s sheaves, counted %u", what, n,
	       full ? "full" : "empty", nr);
	return 0;
}

int barn_verify(struct za_mm *mm, struct barn *b, unsigned int capacity, const char *what)
{
	za_lock_assert_held(mm, &b->lock);
	return verify_list(b->full, capacity, true, b->nr_full, what) ||
	       verify_list(b->empty, capacity, false, b->nr_empty, what) ? -1 : 0;
}
