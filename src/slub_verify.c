/*
 * za_verify for the slab layer (the kernel's validate_slab_cache): with
 * every cache's locks held, as fork takes them, the zones walked under
 * their locks, at a quiescent point (no other thread allocating or
 * freeing: a free pushes onto a slab's list without a lock, and a slab is
 * made or discarded outside the list locks):
 *
 *  - a CPU's slab is frozen and of its cache, and the CPU's freelist holds
 *    object starts of it; a CPU's partial slabs are of its cache, unfrozen
 *    and on no node list;
 *  - a node's partial list holds only unfrozen slabs of its cache with a
 *    free object, as many as nr_partial says;
 *  - every slab in the arena belongs to a cache of the system; its free
 *    list holds object starts of it, objects - inuse of them; it is frozen
 *    exactly when it is some CPU's slab;
 *  - the nodes' slab, page and object counts, and the zones' slab pages,
 *    agree with the slabs found.
 */
#include "slab.h"

#include <string.h>

/* Counts of one cache, per node, as the walk finds them. */
struct cache_tally {
	long slabs, pages, objects, frozen;
};

/* The free list at head (an object start of slab, or NULL) holds `free`
 * object starts of the slab and ends. */
static int verify_chain(struct za_kmem_cache *s, struct za_page *slab, void *head,
			unsigned int free, const char *what)
{
	struct za_mm *mm = s->mm;
	unsigned int objects = slab_objects(slab), n = 0;
	for (void *p = head; p; p = debug_get_freepointer(s, p), n++)
		VERIFY(n < objects && object_in_slab(s, slab, p, objects),
		       "cache %s: %s of slab pfn %lu: %p is not an object start (after %u)",
		       s->name, what, page_to_pfn(mm, slab), p, n);
	VERIFY(free == UINT32_MAX || n == free,
	       "cache %s: slab pfn %lu: %u objects on its %s, %u free by its counters", s->name,
	       page_to_pfn(mm, slab), n, what, free);
	return 0;
}

static int verify_slab(struct za_kmem_cache *s, struct za_page *slab)
{
	struct za_mm *mm = s->mm;
	uint64_t st = slab_state(slab);
	unsigned int objects = st_objects(st), inuse = st_inuse(st);
	VERIFY(objects && objects <= MAX_OBJS_PER_SLAB && inuse <= objects &&
		   (st_head(st) == SLAB_NONE || st_head(st) < objects),
	       "cache %s: slab pfn %lu has objects %u inuse %u head %u", s->name,
	       page_to_pfn(mm, slab), objects, inuse, st_head(st));
	for (unsigned long i = 1; i < 1UL << page_order(slab); i++)
		VERIFY(page_flags(&slab[i]) == PG_tail && slab[i].slab_cache == s &&
			   (struct za_page *)page_private(&slab[i]) == slab,
		       "cache %s: page %lu of slab pfn %lu is not its tail", s->name, i,
		       page_to_pfn(mm, slab));
	return verify_chain(s, slab, slab_object(s, slab, st_head(st)), objects - inuse, "free list");
}

/* One CPU's slab, freelist and partial list. */
static int verify_cpu(struct za_kmem_cache *s, struct kmem_cache_cpu *c, int cpu, long frozen[])
{
	struct za_mm *mm = s->mm;
	struct za_page *slab = c->slab;
	if (slab) {
		VERIFY((page_flags(slab) & PG_slab) && slab->slab_cache == s &&
			   st_frozen(slab_state(slab)),
		       "cache %s cpu %d: its slab pfn %lu is not a frozen slab of the cache",
		       s->name, cpu, page_to_pfn(mm, slab));
		frozen[slab_nid(mm, slab)]++;
		if (verify_chain(s, slab, c->freelist, UINT32_MAX, "CPU freelist"))
			return -1;
	}
	for (slab = c->partial; slab; slab = slab->cpu_partial.next)
		VERIFY((page_flags(slab) & (PG_slab | PG_slab_partial)) == PG_slab &&
			   slab->slab_cache == s && !st_frozen(slab_state(slab)),
		       "cache %s cpu %d: partial slab pfn %lu is not an unfrozen, unlisted "
		       "slab of the cache", s->name, cpu, page_to_pfn(mm, slab));
	return 0;
}

/* Under every CPU lock; percpu=rseq's stacks are taken for the look. */
static int verify_cpus(struct za_kmem_cache *s, long frozen[])
{
	for (int cpu = 0; cpu < s->mm->nr_cpus; cpu++) {
		struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
		cpu_take_stopped(s, c);
		int r = verify_cpu(s, c, cpu, frozen);
		cpu_give(s, c);
		if (r)
			return -1;
	}
	return 0;
}

static int verify_node(struct za_kmem_cache *s, int node)
{
	struct za_mm *mm = s->mm;
	struct kmem_cache_node *n = &s->node[node];
	unsigned long count = 0;
	for (struct za_list *l = n->partial.next; l != &n->partial; l = l->next, count++) {
		struct za_page *slab = container_of(l, struct za_page, lru);
		uint64_t st = slab_state(slab);
		VERIFY((page_flags(slab) & (PG_slab | PG_slab_partial)) == (PG_slab | PG_slab_partial) &&
			   slab->slab_cache == s && !st_frozen(st) && st_head(st) != SLAB_NONE,
		       "cache %s node %d: listed slab pfn %lu is not a partial slab of the cache",
		       s->name, node, page_to_pfn(mm, slab));
	}
	VERIFY(count == load_relaxed(&n->nr_partial),
	       "cache %s node %d: %lu slabs on the partial list, nr_partial %lu", s->name, node,
	       count, load_relaxed(&n->nr_partial));
	return 0;
}

static struct za_kmem_cache *cache_of(struct za_mm *mm, const struct za_kmem_cache *s, int *idx)
{
	*idx = 0;
	for (struct za_kmem_cache *c = mm->caches; c; c = c->next, (*idx)++)
		if (c == s)
			return c;
	return NULL;
}

/* Every slab of the zone, by walking its blocks (under the zone lock, so
 * that they stay whole): tallies[cache index * nodes + node]. */
static int verify_zone_slabs(struct za_mm *mm, struct za_zone *z, struct cache_tally *tallies)
{
	long zone_pages = 0;
	for (unsigned long pfn = z->start_pfn, end = zone_init_end_pfn(z); pfn < end;) {
		struct za_page *slab = pfn_to_page(mm, pfn);
		uint32_t f = page_flags(slab);
		unsigned int order = f ? page_order(slab) : 0;
		pfn += 1UL << order;
		if (!(f & PG_slab)) {
			for (unsigned long i = 0; i < 1UL << order; i++)
				VERIFY(!slab_info(mm, &slab[i]),
				       "zone %s: pfn %lu, no slab, has slab info %#x", z->name,
				       pfn - (1UL << order) + i, slab_info(mm, &slab[i]));
			continue;
		}
		int idx;
		struct za_kmem_cache *s = cache_of(mm, slab->slab_cache, &idx);
		VERIFY(s, "zone %s: slab pfn %lu of no cache of the system", z->name,
		       pfn - (1UL << order));
		for (unsigned long i = 0; i < 1UL << order; i++) {
			uint32_t info = slab_info(mm, &slab[i]);
			VERIFY(slab_info_tag(info) == s->owner_tag && slab_info_order(info) == order,
			       "cache %s: page %lu of slab pfn %lu has tag %u and order %u, not the "
			       "cache's %u and the slab's %u", s->name, i, pfn - (1UL << order),
			       slab_info_tag(info), slab_info_order(info), s->owner_tag, order);
		}
		if (verify_slab(s, slab))
			return -1;
		struct cache_tally *t = &tallies[idx * mm->nr_nodes + z->node];
		t->slabs++;
		t->pages += 1L << order;
		t->objects += slab_objects(slab);
		t->frozen += st_frozen(slab_state(slab));
		zone_pages += 1L << order;
	}
	VERIFY(zone_pages == load_relaxed(&z->nr_slab_pages),
	       "zone %s: %ld pages in slabs, nr_slab_pages %ld", z->name, zone_pages,
	       load_relaxed(&z->nr_slab_pages));
	return 0;
}

static int verify_slabs(struct za_mm *mm, struct cache_tally *tallies)
{
	for (int id = 0; id < mm->nr_nodes * mm->nr_zones; id++) {
		struct za_zone *z = mm->zone_by_id[id];
		zone_lock_quiet(z);
		int r = verify_zone_slabs(mm, z, tallies);
		zone_unlock_quiet(z);
		if (r)
			return -1;
	}
	return 0;
}

static int verify_cache(struct za_kmem_cache *s, const struct cache_tally *t)
{
	struct za_mm *mm = s->mm;
	long frozen[ZA_MAX_NODES] = { 0 };
	if (verify_cpus(s, frozen) || pcs_verify(s))
		return -1;
	for (int node = 0; node < mm->nr_nodes; node++) {
		const struct kmem_cache_node *n = &s->node[node];
		if (verify_node(s, node))
			return -1;
		struct slab_counts c = node_slab_counts(s, n);
		VERIFY(t[node].slabs == c.slabs && t[node].pages == c.pages &&
			   t[node].objects == c.objects && t[node].frozen == frozen[node],
		       "cache %s node %d: found %ld slabs, %ld pages, %ld objects, %ld frozen; "
		       "counted %ld, %ld, %ld, and %ld CPU slabs", s->name, node, t[node].slabs,
		       t[node].pages, t[node].objects, t[node].frozen, c.slabs, c.pages, c.objects,
		       frozen[node]);
	}
	return 0;
}

int slab_verify(struct za_mm *mm)
{
	int nr_caches = 0, r = -1;
	za_lock(&mm->caches_lock);
	for (struct za_kmem_cache *s = mm->caches; s; s = s->next)
		nr_caches++;
	size_t len = sizeof(struct cache_tally) * (size_t)(nr_caches ? nr_caches : 1) *
		     (size_t)mm->nr_nodes;
	struct cache_tally *tallies = za_os_alloc(len);
	if (!tallies)
		za_set_last_error("verify: no memory for the slab counts");
	if (tallies) {
		slab_lock_all(mm, true);
		r = verify_slabs(mm, tallies);
		int idx = 0;
		for (struct za_kmem_cache *s = mm->caches; s && !r; s = s->next, idx++)
			r = verify_cache(s, &tallies[idx * mm->nr_nodes]);
		slab_lock_all(mm, false);
		za_os_free(tallies, len);
	}
	za_unlock(&mm->caches_lock);
	return r;
}
