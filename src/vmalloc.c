/*
 * Direct mappings: requests beyond the page allocator's largest block get
 * a mapping of their own, as the kernel's kvmalloc falls back to vmalloc.
 *
 * Every mapping is recorded (the kernel keeps a vmap_area per mapping) in
 * an open-addressing hash table keyed by its start, so that free() tells a
 * mapping from a foreign pointer by a lookup, never by reading memory in
 * front of the pointer.  The table lives in memory from the OS, not from
 * malloc; its lock is a leaf, and no system call is made under it.
 */
#include "malloc_internal.h"

#include <errno.h>
#include <sys/mman.h>

struct vmap_area {
	uintptr_t addr;                 /* 0: empty slot */
	size_t size;                    /* mapped bytes, a multiple of the page */
};

static struct {
	za_lock_t lock;
	struct vmap_area *slots;
	size_t capacity;                /* a power of two, or 0 */
	size_t count, bytes;
} vm;

static size_t slot_of(uintptr_t addr, size_t capacity)
{
	return (size_t)((addr >> PAGE_SHIFT) * 0x9E3779B97F4A7C15ULL >> 20) & (capacity - 1);
}

/* Linear probing: the slot holding addr, or the empty slot ending its run. */
static struct vmap_area *find_slot(struct vmap_area *slots, size_t capacity, uintptr_t addr)
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
		struct vmap_area *slots = za_os_alloc(cap * sizeof(*slots));
		if (!slots)
			return false;
		za_lock(&vm.lock);
		struct vmap_area *old = vm.slots;
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
static void insert(void *p, size_t size)
{
	za_lock_assert_held(zm.mm, &vm.lock);
	VM_BUG_ON(zm.mm, (vm.count + 1) * 2 > vm.capacity);
	*find_slot(vm.slots, vm.capacity, (uintptr_t)p) = (struct vmap_area){ (uintptr_t)p, size };
	vm.count++;
	vm.bytes += size;
}

static bool record(void *p, size_t size)
{
	if (!reserve_slot())
		return false;
	insert(p, size);
	za_unlock(&vm.lock);
	return true;
}

/* Removes the slot, shifting back the entries of its probe run (no
 * tombstones).  Under the lock. */
static void remove_slot(struct vmap_area *hole)
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
	vm.slots[i] = (struct vmap_area){ 0 };
}

/* Takes p's record out; returns its size, or 0 if p starts no mapping. */
static size_t unrecord(const void *p)
{
	size_t size = 0;
	za_lock(&vm.lock);
	if (vm.capacity) {
		struct vmap_area *a = find_slot(vm.slots, vm.capacity, (uintptr_t)p);
		if (a->addr) {
			size = a->size;
			remove_slot(a);
		}
	}
	za_unlock(&vm.lock);
	return size;
}

size_t vmalloc_size(const void *p)
{
	size_t size = 0;
	za_lock(&vm.lock);
	if (vm.capacity) {
		const struct vmap_area *a = find_slot(vm.slots, vm.capacity, (uintptr_t)p);
		size = a->addr ? a->size : 0;
	}
	za_unlock(&vm.lock);
	return size;
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

/* A mapping of size bytes aligned to align (a power of two): map align
 * more, then unmap the misaligned head and the tail.  Every sum is checked:
 * a request no address space can hold is ENOMEM, never a wrapped length. */
void *vmalloc_alloc(size_t size, size_t align)
{
	size_t len = page_round(size), extra = align > PAGE_SIZE ? align : 0, map;
	if (!len || __builtin_add_overflow(len, extra, &map) || map > PTRDIFF_MAX)
		goto nomem;
	/* Committed, unlike the arena: the kernel's overcommit heuristic then
	 * refuses what the machine could never hold, as it does for glibc. */
	char *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
	if (!record(p, len)) {
		munmap(p, len);
		goto nomem;
	}
	return p;
nomem:
	errno = ENOMEM;
	return NULL;
}

bool vmalloc_free(void *p)
{
	size_t size = unrecord(p);
	if (size)
		munmap(p, size);
	return size != 0;
}

/* Grows or shrinks a mapping in place or by moving its pages (mremap):
 * no copy.  NULL (p untouched) without memory.  The record goes before the
 * range is released (another thread may map it at once) and comes back if
 * mremap fails; taking a record out keeps a slot free for its return. */
void *vmalloc_realloc(void *p, size_t size)
{
	if (!(size = page_round(size))) {
		errno = ENOMEM;
		return NULL;
	}
	size_t old = unrecord(p);
	void *q = mremap(p, old, size, MREMAP_MAYMOVE);
	za_lock(&vm.lock);
	if (q == MAP_FAILED)
		insert(p, old);
	else
		insert(q, size);
	za_unlock(&vm.lock);
	if (q == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	return q;
}

void vmalloc_stats(size_t *count, size_t *bytes)
{
	za_lock(&vm.lock);
	*count = vm.count;
	*bytes = vm.bytes;
	za_unlock(&vm.lock);
}

void vmalloc_lock(void)
{
	za_lock(&vm.lock);
}

void vmalloc_unlock(void)
{
	za_unlock(&vm.lock);
}
