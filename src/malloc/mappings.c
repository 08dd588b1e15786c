/*
 * Direct mappings: requests beyond the page allocator's largest block get
 * a mapping of their own, as the kernel's kvmalloc falls back to vmalloc.
 *
 * A freed mapping is kept, not unmapped, while the program may want its
 * memory again (the mapping cache below): the next large request takes
 * the smallest kept range that holds it, split to whole pages, or grows
 * the largest smaller one in place (mremap: its pages move, they are not
 * copied or faulted again).  Ranges that touch are merged.  How much is
 * kept follows demand, not a timer: at most what the program had live in
 * mappings at its peak over the last one or two windows (each
 * DEMAND_WINDOW_ROUNDS rounds of the purge worker), minus what it has live
 * now -- tcmalloc's skip-subrelease.  So a program that keeps replacing
 * large buffers keeps reusing the same memory, and one whose demand fell
 * for a whole window gives the difference back.  An idle process, and
 * malloc_trim, give back everything.
 *
 * Every mapping is recorded (the kernel keeps a vmap_area per mapping) in
 * an open-addressing hash table keyed by its start, so that free() tells a
 * mapping from a foreign pointer by a lookup, never by reading memory in
 * front of the pointer.  The table lives in memory from the OS, not from
 * malloc; its lock is a leaf, and no system call is made under it.
 */
#include "internal.h"

#include <errno.h>
#include <sys/mman.h>

struct mapping {
	uintptr_t addr;                 /* 0: empty slot */
	size_t size;                    /* mapped bytes, a multiple of the page */
	size_t requested;               /* what malloc was asked for (sized frees) */
	size_t dirty;                   /* bytes from the start that may not be zero */
	unsigned int align_shift;       /* log2 of the alignment malloc was asked for */
};

/* A range of the mapping cache, freed at `seq` (older goes first). */
struct free_range {
	uintptr_t addr;
	size_t size;
	uint64_t seq;
};

#define CACHE_RANGES 32
#define DEMAND_WINDOW_ROUNDS 20

/*
 * Everything below is under the lock.  Between two holders the cache has a
 * free slot (nr_cached < CACHE_RANGES): whoever adds a range -- a free, the
 * tail of a split -- evicts in the same hold until it does, so that any
 * number of threads freeing at once find room (cache_put).
 */
static struct {
	za_lock_t lock;
	struct mapping *slots;
	size_t capacity;                /* a power of two, or 0 */
	size_t count, bytes;            /* live mappings */
	/* the mapping cache */
	struct free_range cached[CACHE_RANGES];
	unsigned int nr_cached;
	size_t cached_bytes;
	uint64_t seq;
	size_t peak[2];                 /* live bytes' peak: this window, the last */
	unsigned int rounds;            /* of this window */
	uint64_t maps, reuses, frees;   /* mmap calls; requests served from the cache; frees */
} vm;

static size_t slot_of(uintptr_t addr, size_t capacity)
{
	return (size_t)((addr >> PAGE_SHIFT) * 0x9E3779B97F4A7C15ULL >> 20) & (capacity - 1);
}

/* Linear probing: the slot holding addr, or the empty slot ending its run. */
static struct mapping *find_slot(struct mapping *slots, size_t capacity, uintptr_t addr)
{
	size_t i = slot_of(addr, capacity);
	while (slots[i].addr && slots[i].addr != addr)
		i = (i + 1) & (capacity - 1);
	return &slots[i];
}

/* Grows the table when half full.  Called without the lock: allocating
 * the new table is a system call.  Returns false without memory. */
static bool reserve_slot(void)
{
	for (;;) {
		za_lock(&vm.lock);
		if ((vm.count + 1) * 2 <= vm.capacity)
			return true;                    /* with the lock held */
		size_t old_cap = vm.capacity;
		za_unlock(&vm.lock);

		size_t cap = old_cap ? 2 * old_cap : 256;
		struct mapping *slots = za_os_alloc(cap * sizeof(*slots));
		if (!slots)
			return false;
		za_lock(&vm.lock);
		struct mapping *old = vm.slots;
		if (vm.capacity == old_cap) {           /* nobody grew it meanwhile */
			for (size_t i = 0; i < old_cap; i++)
				if (old[i].addr)
					*find_slot(slots, cap, old[i].addr) = old[i];
			vm.slots = slots;
			vm.capacity = cap;
			slots = old;
		}
		za_unlock(&vm.lock);
		za_os_free(slots, (slots == old ? old_cap : cap) * sizeof(*slots));
	}
}

/* Under the lock, with a free slot reserved. */
static void insert(void *p, size_t size, size_t requested, size_t dirty, size_t align)
{
	za_lock_assert_held(zm.mm, &vm.lock);
	VM_BUG_ON(zm.mm, (vm.count + 1) * 2 > vm.capacity);
	*find_slot(vm.slots, vm.capacity, (uintptr_t)p) =
		(struct mapping){ (uintptr_t)p, size, requested, dirty, order_base_2(align) };
	vm.count++;
	vm.bytes += size;
	if (vm.bytes > vm.peak[0])
		vm.peak[0] = vm.bytes;
}

/* Records a mapping and counts it (in *counter: vm.maps or vm.reuses). */
static bool record(void *p, size_t size, size_t requested, size_t dirty, size_t align,
		   uint64_t *counter)
{
	if (!reserve_slot())
		return false;
	insert(p, size, requested, dirty, align);
	++*counter;
	za_unlock(&vm.lock);
	return true;
}

/* Removes the slot, shifting back the entries of its probe run (no
 * tombstones).  Under the lock. */
static void remove_slot(struct mapping *hole)
{
	size_t mask = vm.capacity - 1, i = (size_t)(hole - vm.slots);
	za_lock_assert_held(zm.mm, &vm.lock);
	vm.count--;
	vm.bytes -= hole->size;
	for (size_t j = (i + 1) & mask; vm.slots[j].addr; j = (j + 1) & mask) {
		size_t home = slot_of(vm.slots[j].addr, vm.capacity);
		/* Entry j may fill the hole at i if its home is not in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			vm.slots[i] = vm.slots[j];
			i = j;
		}
	}
	vm.slots[i] = (struct mapping){ 0 };
}

/* p's record, taken out of the table if remove; all zero if p starts no
 * mapping. */
static struct mapping find_area(const void *p, bool remove)
{
	struct mapping found = { 0 };
	za_lock(&vm.lock);
	if (vm.capacity) {
		struct mapping *a = find_slot(vm.slots, vm.capacity, (uintptr_t)p);
		found = *a;
		if (a->addr && remove)
			remove_slot(a);
	}
	za_unlock(&vm.lock);
	return found;
}

size_t mapping_size(const void *p, size_t *requested, size_t *align)
{
	struct mapping a = find_area(p, false);
	if (requested)
		*requested = a.requested;
	if (align)
		*align = (size_t)1 << a.align_shift;
	return a.size;
}

size_t mapping_dirty(const void *p)
{
	return find_area(p, false).dirty;
}

/* ------------------------------------------------------------------------
 * The mapping cache (under the lock; the system calls after it)
 * ------------------------------------------------------------------------ */
/* What the cache may hold: the recent peak of live bytes beyond today's. */
static size_t cache_allowance(void)
{
	size_t peak = vm.peak[0] > vm.peak[1] ? vm.peak[0] : vm.peak[1];
	return peak > vm.bytes ? peak - vm.bytes : 0;
}

static void cache_take(unsigned int i)
{
	vm.cached_bytes -= vm.cached[i].size;
	vm.cached[i] = vm.cached[--vm.nr_cached];
}

/* Keeps [addr, addr + size), merged with the ranges it touches, in the
 * free slot every holder of the lock leaves. */
static void cache_put(uintptr_t addr, size_t size)
{
	za_lock_assert_held(zm.mm, &vm.lock);
	VM_BUG_ON(zm.mm, vm.nr_cached >= CACHE_RANGES);
	for (unsigned int i = 0; i < vm.nr_cached;) {
		struct free_range *r = &vm.cached[i];
		if (r->addr + r->size == addr || addr + size == r->addr) {
			addr = r->addr < addr ? r->addr : addr;
			size += r->size;
			cache_take(i);
			continue;       /* slot i holds another range now */
		}
		i++;
	}
	vm.cached[vm.nr_cached++] = (struct free_range){ addr, size, ++vm.seq };
	vm.cached_bytes += size;
}

/* Takes out the oldest ranges until the cache is within `keep` bytes and
 * has a free slot again; they go to out[] (at most CACHE_RANGES) for
 * unmapping once the lock is dropped. */
static unsigned int cache_evict(size_t keep, struct free_range *out)
{
	unsigned int n = 0;
	za_lock_assert_held(zm.mm, &vm.lock);
	while (vm.nr_cached && (vm.cached_bytes > keep || vm.nr_cached == CACHE_RANGES)) {
		unsigned int old = 0;
		for (unsigned int i = 1; i < vm.nr_cached; i++)
			if (vm.cached[i].seq < vm.cached[old].seq)
				old = i;
		out[n++] = vm.cached[old];
		cache_take(old);
	}
	return n;
}

static void unmap_ranges(const struct free_range *r, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		munmap((void *)r[i].addr, r[i].size);
}

/* The smallest range of at least len bytes, else the largest smaller one
 * (to grow), as an index; -1 if the cache is empty. */
static int cache_fit(size_t len)
{
	int best = -1, grow = -1;
	for (unsigned int i = 0; i < vm.nr_cached; i++) {
		size_t size = vm.cached[i].size;
		if (size >= len && (best < 0 || size < vm.cached[best].size))
			best = (int)i;
		if (size < len && (grow < 0 || size > vm.cached[grow].size))
			grow = (int)i;
	}
	return best >= 0 ? best : grow;
}

/*
 * A page-aligned mapping of len bytes from the cache, recorded with the
 * request's size and alignment (at most a page), or NULL.
 * A larger range is split (its tail stays cached); a smaller one is grown
 * by mremap, after which only the growth is new memory.  With the lock
 * held and a slot reserved; returns with it released.
 */
static void *cache_alloc(size_t len, size_t requested, size_t align)
{
	int i = cache_fit(len);
	if (i < 0) {
		za_unlock(&vm.lock);
		return NULL;
	}
	struct free_range r = vm.cached[i];
	cache_take((unsigned int)i);
	if (r.size >= len) {
		if (r.size > len)       /* into the slot r left */
			cache_put(r.addr + len, r.size - len);
		insert((void *)r.addr, len, requested, len, align);
		vm.reuses++;
		za_unlock(&vm.lock);
		return (void *)r.addr;
	}
	za_unlock(&vm.lock);
	void *q = mremap((void *)r.addr, r.size, len, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		munmap((void *)r.addr, r.size);
		return NULL;
	}
	/* the growth is new, zero */
	if (!record(q, len, requested, r.size, align, &vm.reuses)) {
		munmap(q, len);
		return NULL;
	}
	return q;
}

/* With the lock held: the cache down to keep bytes and a free slot, the
 * lock released, what it gave back unmapped.  Returns whether it gave any.
 * One hold with whatever the caller did first: another thread's free may
 * be waiting for the slot. */
static bool unlock_giving_back(size_t keep)
{
	struct free_range out[CACHE_RANGES];
	unsigned int n = cache_evict(keep, out);
	za_unlock(&vm.lock);
	unmap_ranges(out, n);
	return n != 0;
}

/* Everything the cache holds back to the OS (mmap was refused). */
static bool cache_give_back_all(void)
{
	za_lock(&vm.lock);
	return unlock_giving_back(0);
}

/*
 * The purge worker's round (and malloc_trim, with everything): the demand
 * window moves on every DEMAND_WINDOW_ROUNDS rounds, and the cache gives
 * back what exceeds the allowance -- all of it when the process is idle.
 */
void mapping_cache_decay(bool everything)
{
	za_lock(&vm.lock);
	if (++vm.rounds >= DEMAND_WINDOW_ROUNDS) {
		vm.peak[1] = vm.peak[0];
		vm.peak[0] = vm.bytes;
		vm.rounds = 0;
	}
	unlock_giving_back(everything ? 0 : cache_allowance());
}

/*
 * size rounded up to whole pages (at least one: a record of 0 bytes would
 * read as "no mapping"), or 0 if that is more than a mapping can be: no
 * object may be larger than PTRDIFF_MAX bytes, and mmap refuses that much
 * anyway.
 */
static size_t page_round(size_t size)
{
	size_t len;
	if (size > PTRDIFF_MAX || __builtin_add_overflow(size, PAGE_SIZE - 1, &len))
		return 0;
	len &= ~(PAGE_SIZE - 1);
	return len ? len : PAGE_SIZE;
}

/* A mapping of size bytes aligned to align (a power of two), for a request
 * of `requested` bytes (sized frees are checked against it): from the
 * cache if it can (page alignment), else map align more, then unmap the
 * misaligned head and the tail.  Every sum is checked: a request no
 * address space can hold is ENOMEM, never a wrapped length. */
void *mapping_alloc(size_t size, size_t align, size_t requested)
{
	size_t len = page_round(size), extra = align > PAGE_SIZE ? align : 0, map;
	if (!len || __builtin_add_overflow(len, extra, &map) || map > PTRDIFF_MAX)
		goto nomem;
	if (!extra) {
		if (!reserve_slot())
			goto nomem;
		void *p = cache_alloc(len, requested, align);
		if (p)
			return p;
	}
	/* Committed, unlike the arena: the kernel's overcommit heuristic then
	 * refuses what the machine could never hold, as it does for glibc.
	 * Refused, it is tried again without the mapping cache, whose ranges
	 * hold address space (ulimit -v) and commit charge. */
	char *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED && cache_give_back_all())
		p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		goto nomem;
	if (extra) {
		/* p is page aligned, so the aligned start is within extra of it
		 * and aligned + len <= p + map. */
		char *aligned = (char *)ALIGN_UP((uintptr_t)p, (uintptr_t)align);
		if (aligned > p)
			munmap(p, (size_t)(aligned - p));
		munmap(aligned + len, (size_t)(p + extra - aligned));
		p = aligned;
	}
	/* hugepages=1: 2 MiB pages where the kernel can (THP), as for the arena */
	if (zm.mm->cfg.hugepages)
		madvise(p, len, MADV_HUGEPAGE);
	if (!record(p, len, requested, 0, align, &vm.maps)) {
		munmap(p, len);
		goto nomem;
	}
	return p;
nomem:
	errno = ENOMEM;
	return NULL;
}

/* The mapping goes to the cache (keep), and what the cache may not keep
 * now -- beyond the allowance, or for the free slot -- goes back to the
 * OS. */
static bool free_mapping(void *p, bool keep)
{
	struct mapping a = find_area(p, true);
	if (!a.addr)
		return false;
	if (!keep) {
		munmap(p, a.size);
		return true;
	}
	za_lock(&vm.lock);
	vm.frees++;
	cache_put(a.addr, a.size);
	unlock_giving_back(cache_allowance());
	purge_worker_kick();
	return true;
}

bool mapping_free(void *p)
{
	return free_mapping(p, true);
}

bool mapping_unmap(void *p)
{
	return free_mapping(p, false);
}

/* Grows or shrinks a mapping in place or by moving its pages (mremap):
 * no copy.  NULL (p untouched) without memory.  The record goes before the
 * range is released (another thread may map it at once) and comes back if
 * mremap fails; taking a record out keeps a slot free for its return. */
void *mapping_realloc(void *p, size_t size)
{
	size_t len = page_round(size);
	if (!len) {
		errno = ENOMEM;
		return NULL;
	}
	struct mapping old = find_area(p, true);
	void *q = mremap(p, old.size, len, MREMAP_MAYMOVE);
	za_lock(&vm.lock);
	if (q == MAP_FAILED)
		insert(p, old.size, old.requested, old.size, (size_t)1 << old.align_shift);
	else
		insert(q, len, size, len, MALLOC_ALIGN);    /* realloc's: malloc's alignment */
	za_unlock(&vm.lock);
	if (q == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	return q;
}

void mapping_stats(struct mapping_stats *st)
{
	za_lock(&vm.lock);
	*st = (struct mapping_stats){ vm.count, vm.bytes, vm.cached_bytes, vm.maps, vm.reuses,
				     vm.frees };
	za_unlock(&vm.lock);
}

void mappings_lock(void)
{
	za_lock(&vm.lock);
}

void mappings_unlock(void)
{
	za_unlock(&vm.lock);
}

/* ------------------------------------------------------------------------
 * za_verify's part (under the lock)
 * ------------------------------------------------------------------------ */
/* Do [a, a + alen) and [b, b + blen) share a byte (or, with touch, meet)? */
static bool ranges_meet(uintptr_t a, size_t alen, uintptr_t b, size_t blen, bool touch)
{
	return touch ? a <= b + blen && b <= a + alen : a < b + blen && b < a + alen;
}

/* The table holds vm.count mappings of vm.bytes, each in the slot a
 * lookup of its start finds. */
static int verify_table(void)
{
	size_t count = 0, bytes = 0;
	for (size_t i = 0; i < vm.capacity; i++) {
		const struct mapping *a = &vm.slots[i];
		if (!a->addr)
			continue;
		count++;
		bytes += a->size;
		VERIFY(find_slot(vm.slots, vm.capacity, a->addr) == a,
		       "mapping %#lx of %zu bytes is not where a lookup finds it",
		       (unsigned long)a->addr, a->size);
		VERIFY(a->size && !(a->size & (PAGE_SIZE - 1)) && a->requested <= a->size,
		       "mapping %#lx: %zu bytes for a request of %zu", (unsigned long)a->addr,
		       a->size, a->requested);
	}
	VERIFY(count == vm.count && bytes == vm.bytes,
	       "the mapping table holds %zu mappings of %zu bytes, counted %zu of %zu", count,
	       bytes, vm.count, vm.bytes);
	return 0;
}

/* The cache has a free slot and holds what it counts, in ranges apart
 * from each other (touching ones merge) and from every live mapping. */
static int verify_cache(void)
{
	size_t bytes = 0;
	VERIFY(vm.nr_cached < CACHE_RANGES, "the mapping cache holds %u ranges, its slots %d",
	       vm.nr_cached, CACHE_RANGES);
	for (unsigned int i = 0; i < vm.nr_cached; i++) {
		const struct free_range *r = &vm.cached[i];
		bytes += r->size;
		VERIFY(r->size && !((r->addr | r->size) & (PAGE_SIZE - 1)),
		       "the mapping cache's range %#lx of %zu bytes is not whole pages",
		       (unsigned long)r->addr, r->size);
		for (unsigned int j = i + 1; j < vm.nr_cached; j++)
			VERIFY(!ranges_meet(r->addr, r->size, vm.cached[j].addr, vm.cached[j].size, true),
			       "the mapping cache's ranges %#lx and %#lx meet unmerged",
			       (unsigned long)r->addr, (unsigned long)vm.cached[j].addr);
		for (size_t s = 0; s < vm.capacity; s++)
			VERIFY(!vm.slots[s].addr ||
				       !ranges_meet(r->addr, r->size, vm.slots[s].addr, vm.slots[s].size, false),
			       "the mapping cache's range %#lx overlaps the live mapping %#lx",
			       (unsigned long)r->addr, (unsigned long)vm.slots[s].addr);
	}
	VERIFY(bytes == vm.cached_bytes, "the mapping cache holds %zu bytes, counted %zu", bytes,
	       vm.cached_bytes);
	return 0;
}

int mappings_verify(void)
{
	za_lock(&vm.lock);
	int r = verify_table() || verify_cache() ? -1 : 0;
	za_unlock(&vm.lock);
	return r;
}
