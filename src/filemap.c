/*
 * The page cache: file pages in memory, looked up by a per-file index.
 *
 * The index is a two-level table of atomic page pointers (leaves of 512
 * slots, allocated on first use and kept until close).  Lookups take no
 * lock, as the kernel's do under RCU: a page descriptor is never unmapped,
 * so a reader may try to take a reference on a page it found even if the
 * page was freed meanwhile -- the try fails on a zero count, and a page
 * reused for another file or index fails the recheck after the reference
 * is taken.
 *
 * References: the index holds one per page; each user (a read or write in
 * progress, a get_page) one more.  Reclaim frees a page only by moving the
 * count from 1 to 0 (no user), and only if it is clean; writers set
 * PG_dirty after copying and before dropping their reference, so a page
 * dirtied behind reclaim's back is noticed and kept.  What was written is
 * what is read, across any eviction, until close.
 */
#include "internal.h"
#include "percpu.h"
#include "vmscan.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LEAF_SHIFT 9
#define LEAF_SLOTS (1UL << LEAF_SHIFT)
#define MAX_LEAVES (1UL << 20)          /* files up to 2 TiB */
#define RA_PAGES 32                     /* readahead window and write-back run, 128 KiB */

typedef _Atomic(struct za_page *) slot_t;

struct za_file {
	struct za_mm *mm;
	int fd;
	atomic_bool direct;             /* O_DIRECT in use */
	_Atomic long size;              /* bytes */
	za_lock_t lock;                 /* leaf allocation */
	_Atomic(slot_t *) *leaves;      /* [MAX_LEAVES] */
	_Atomic unsigned long ra_next;  /* the index a sequential reader asks next */
	struct za_file *next;           /* mm's open files */
	char path[256];
};

/* ------------------------------------------------------------------------
 * The index
 * ------------------------------------------------------------------------ */
static slot_t *slot_of(struct za_file *f, unsigned long index, bool create)
{
	if (index >> LEAF_SHIFT >= MAX_LEAVES)
		return NULL;
	_Atomic(slot_t *) *leafp = &f->leaves[index >> LEAF_SHIFT];
	slot_t *leaf = atomic_load_explicit(leafp, memory_order_acquire);
	if (!leaf && create) {
		za_lock(&f->lock);
		if (!(leaf = atomic_load_explicit(leafp, memory_order_acquire))) {
			leaf = za_os_alloc(LEAF_SLOTS * sizeof(slot_t));
			atomic_store_explicit(leafp, leaf, memory_order_release);
		}
		za_unlock(&f->lock);
	}
	return leaf ? &leaf[index & (LEAF_SLOTS - 1)] : NULL;
}

static bool page_try_get(struct za_page *page)
{
	int v = atomic_load_explicit(&page->refcount, memory_order_relaxed);
	do {
		if (v <= 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&page->refcount, &v, v + 1,
							memory_order_acquire, memory_order_relaxed));
	return true;
}

/* Drops a reference the caller holds: never the last (the index's, which
 * only reclaim and close drop, by moving the count from 1 to 0). */
static void put_page(struct za_page *page)
{
	int old = atomic_fetch_sub_explicit(&page->refcount, 1, memory_order_release);
	VM_BUG_ON(NULL, old <= 1);
}

/* The page at index with a reference taken, or NULL. */
static struct za_page *find_get_page(struct za_file *f, unsigned long index)
{
	slot_t *slot = slot_of(f, index, false);
	if (!slot)
		return NULL;
	for (;;) {
		struct za_page *page = atomic_load_explicit(slot, memory_order_acquire);
		if (!page)
			return NULL;
		if (!page_try_get(page))
			continue;       /* being freed (the slot empties soon) or added */
		if (page->mapping == f && page->index == index &&
		    atomic_load_explicit(slot, memory_order_acquire) == page)
			return page;
		put_page(page);                 /* reused meanwhile: look again */
	}
}

/* ------------------------------------------------------------------------
 * I/O
 * ------------------------------------------------------------------------ */
static void *page_address(struct za_file *f, struct za_page *page)
{
	return za_page_to_virt(f->mm, page);
}

/* The filesystem refused O_DIRECT: use buffered I/O and say so, once. */
static void fall_back_to_buffered(struct za_file *f)
{
	static atomic_bool said;
	int fl = fcntl(f->fd, F_GETFL);
	fcntl(f->fd, F_SETFL, fl & ~O_DIRECT);
	atomic_store(&f->direct, false);
	if (!atomic_exchange(&said, true))
		fprintf(stderr, "zonealloc: %s: the filesystem refuses O_DIRECT; using buffered I/O "
				"with POSIX_FADV_DONTNEED instead\n", f->path);
}

/* One I/O over n pages that are consecutive in the file (not in memory). */
static ssize_t pages_io(struct za_file *f, bool write, struct za_page **pages, int n)
{
	struct iovec iov[RA_PAGES];
	for (int i = 0; i < n; i++)
		iov[i] = (struct iovec){ page_address(f, pages[i]), PAGE_SIZE };
	off_t off = (off_t)pages[0]->index << PAGE_SHIFT;
	for (;;) {
		ssize_t r = write ? pwritev(f->fd, iov, n, off) : preadv(f->fd, iov, n, off);
		if (r < 0 && errno == EINVAL && atomic_load(&f->direct)) {
			fall_back_to_buffered(f);
			continue;
		}
		if (r >= 0 && !atomic_load(&f->direct))
			posix_fadvise(f->fd, off, (off_t)n * PAGE_SIZE, POSIX_FADV_DONTNEED);
		return r;
	}
}

/* Marks a new page's contents valid and lets the readers waiting on it in
 * (wait_on_page_locked): the release orders the contents before the bit. */
static void unlock_page(struct za_page *page)
{
	set_page_flag(page, PG_uptodate);
	clear_page_flag(page, PG_locked);
}

/* Fills new (locked) pages from the file, zeros past its end, and unlocks
 * them. */
static void read_pages(struct za_file *f, struct za_page **pages, int n)
{
	long size = atomic_load(&f->size);
	ssize_t got = ((long)pages[0]->index << PAGE_SHIFT) < size ? pages_io(f, false, pages, n) : 0;
	for (int i = 0; i < n; i++) {
		char *addr = page_address(f, pages[i]);
		ssize_t have = got - (ssize_t)i * (ssize_t)PAGE_SIZE;
		if (got < 0)
			set_page_flag(pages[i], PG_io_error);
		have = have < 0 ? 0 : have > (ssize_t)PAGE_SIZE ? (ssize_t)PAGE_SIZE : have;
		memset(addr + have, 0, PAGE_SIZE - (size_t)have);
		unlock_page(pages[i]);
	}
}

static void account_dirty(struct za_file *f, struct za_page *page, long n)
{
	atomic_fetch_add(&f->mm->zone_by_id[page->zone]->nr_dirty, n);
}

static void set_page_dirty(struct za_file *f, struct za_page *page)
{
	if (!test_and_set_page_flag(page, PG_dirty))
		account_dirty(f, page, 1);
}

static bool by_file_and_index(const struct za_page *a, const struct za_page *b)
{
	return a->mapping != b->mapping ? (uintptr_t)a->mapping < (uintptr_t)b->mapping
					: a->index < b->index;
}

/*
 * Writes back the dirty ones among pages the caller holds (referenced, or
 * isolated by reclaim): runs that are consecutive in a file go out as one
 * I/O.  Each page's dirty bit is cleared before its I/O, so a write racing
 * with it dirties the page again; a page found clean was written by
 * someone else meanwhile.  Adds the pages written to *written; returns -1
 * if some I/O failed (those pages stay dirty), else 0.
 */
int writeback_pages(struct za_page **pages, int n, unsigned long *written)
{
	for (int i = 1; i < n; i++)             /* insertion sort: n is small */
		for (int j = i; j > 0 && by_file_and_index(pages[j], pages[j - 1]); j--) {
			struct za_page *t = pages[j];
			pages[j] = pages[j - 1];
			pages[j - 1] = t;
		}
	int rc = 0;
	for (int i = 0; i < n;) {
		struct za_page *run[RA_PAGES];
		int len = 0;
		struct za_file *f = pages[i]->mapping;
		for (; i < n && len < RA_PAGES; i++) {
			if (len && (pages[i]->mapping != f || pages[i]->index != run[len - 1]->index + 1))
				break;
			if (!test_and_clear_page_flag(pages[i], PG_dirty)) {
				if (len)
					break;
				continue;
			}
			run[len++] = pages[i];
		}
		if (!len)
			continue;
		if (pages_io(f, true, run, len) == (ssize_t)len * (ssize_t)PAGE_SIZE) {
			*written += (unsigned long)len;
			for (int k = 0; k < len; k++)
				account_dirty(f, run[k], -1);
		} else {
			for (int k = 0; k < len; k++)
				set_page_flag(run[k], PG_dirty);
			rc = -1;
		}
	}
	return rc;
}

/* ------------------------------------------------------------------------
 * Getting pages in and out
 * ------------------------------------------------------------------------ */

/* A new locked page for index, in the index and on the LRU; NULL with
 * errno ENOMEM, or NULL with errno EEXIST if another thread got there. */
static struct za_page *add_page(struct za_file *f, unsigned long index)
{
	slot_t *slot = slot_of(f, index, true);
	if (!slot) {
		errno = EFBIG;
		return NULL;
	}
	void *addr = za_alloc_pages(f->mm, ZA_GFP_MOVABLE, 0);
	if (!addr)
		return NULL;
	struct za_page *page = za_virt_to_page(f->mm, addr);
	page->mapping = f;
	page->index = index;
	set_page_flags(page, PG_alloc | PG_locked);
	/* The count stays 0 until the page is in the index: a reader holding
	 * a stale pointer to this (reused) page cannot take a reference that
	 * a failed insertion would then have to take back. */
	struct za_page *none = NULL;
	if (!atomic_compare_exchange_strong_explicit(slot, &none, page, memory_order_acq_rel,
						     memory_order_acquire)) {
		set_page_flags(page, PG_alloc);
		za_free_pages(f->mm, addr, 0);
		errno = EEXIST;
		return NULL;
	}
	atomic_store_explicit(&page->refcount, 2, memory_order_release);   /* the index's and ours */
	lru_add(f->mm, page);
	return page;
}

/* The acquire pairs with unlock_page's release: what was put in the page
 * before it was unlocked is visible after. */
static void wait_on_page_locked(struct za_page *page)
{
	for (int spins = 0; atomic_load_explicit(&page->flags, memory_order_acquire) & PG_locked;
	     spins++)
		if (spins > 64)
			sched_yield();
}

/*
 * A miss: read the page in, and, when the reader is sequential, the pages
 * after it up to the readahead window (all missing, within the file) in
 * the same I/O.  Returns the first, referenced; NULL with errno EEXIST if
 * another thread added it meanwhile.  Without fill the page is returned
 * locked and not up to date, its contents the previous owner's: the
 * caller (a write) fills it and unlocks it, while readers wait.
 */
static struct za_page *read_in(struct za_file *f, unsigned long index, bool fill)
{
	struct za_page *pages[RA_PAGES];
	int n = 0, want = 1;
	long size = atomic_load(&f->size);
	if (fill && atomic_load(&f->ra_next) == index)
		want = RA_PAGES;
	for (unsigned long i = index; n < want; i++) {
		if (n && (long)(i << PAGE_SHIFT) >= size)
			break;
		struct za_page *page = add_page(f, i);
		if (!page) {
			if (!n)
				return NULL;
			break;
		}
		pages[n++] = page;
	}
	atomic_store(&f->ra_next, index + (unsigned long)n);
	if (fill) {
		ev_add_atomic(&f->mm->cpu_stat[this_cpu(f->mm)], EV_PGMAJFAULT, 1);
		read_pages(f, pages, n);
	}
	for (int i = 1; i < n; i++)
		put_page(pages[i]);             /* kept by the index only */
	return pages[0];
}

/*
 * The page at index, referenced and up to date -- except a new page when
 * fill is false (the caller writes it without reading the file first):
 * that one is locked and not up to date (see read_in).
 */
static struct za_page *get_page(struct za_file *f, unsigned long index, bool fill)
{
	for (;;) {
		struct za_page *page = find_get_page(f, index);
		if (page) {
			wait_on_page_locked(page);
			ev_add_atomic(&f->mm->cpu_stat[this_cpu(f->mm)], EV_PGCACHE_HIT, 1);
			if (atomic_load(&f->ra_next) == index)
				atomic_store(&f->ra_next, index + 1);
		} else if (!(page = read_in(f, index, fill))) {
			if (errno == EEXIST)
				continue;
			return NULL;
		}
		if (test_page_flag(page, PG_io_error)) {
			put_page(page);
			errno = EIO;
			return NULL;
		}
		return page;
	}
}

/* The last reference of the index: false if a user holds the page, or it
 * was dirtied meanwhile.  For reclaim. */
bool remove_from_page_cache(struct za_page *page)
{
	struct za_file *f = page->mapping;
	int one = 1;
	VM_BUG_ON_PAGE(f->mm, test_page_flag(page, PG_lru), page);   /* isolated by reclaim */
	if (!atomic_compare_exchange_strong_explicit(&page->refcount, &one, 0, memory_order_acq_rel,
						     memory_order_relaxed))
		return false;
	if (test_page_flag(page, PG_dirty)) {
		atomic_store_explicit(&page->refcount, 1, memory_order_release);
		return false;
	}
	atomic_store_explicit(slot_of(f, page->index, false), NULL, memory_order_release);
	page->mapping = NULL;
	set_page_flags(page, PG_alloc);
	return true;
}

/* ------------------------------------------------------------------------
 * The API
 * ------------------------------------------------------------------------ */
static void grow_size(struct za_file *f, long end)
{
	long size = atomic_load(&f->size);
	while (end > size && !atomic_compare_exchange_weak(&f->size, &size, end))
		;
}

long za_file_read(za_file_t *f, long offset, void *buf, size_t len)
{
	long size = atomic_load(&f->size);
	if (offset < 0) {
		errno = EINVAL;
		return -1;
	}
	if (offset >= size)
		return 0;
	if ((long)len > size - offset)
		len = (size_t)(size - offset);
	size_t done = 0;
	while (done < len) {
		unsigned long index = (unsigned long)(offset + (long)done) >> PAGE_SHIFT;
		size_t in = (size_t)(offset + (long)done) & (PAGE_SIZE - 1);
		size_t n = PAGE_SIZE - in < len - done ? PAGE_SIZE - in : len - done;
		struct za_page *page = get_page(f, index, true);
		if (!page)
			return done ? (long)done : -1;
		memcpy((char *)buf + done, (char *)page_address(f, page) + in, n);
		mark_page_accessed(f->mm, page);
		put_page(page);
		done += n;
	}
	return (long)done;
}

long za_file_write(za_file_t *f, long offset, const void *buf, size_t len)
{
	if (offset < 0) {
		errno = EINVAL;
		return -1;
	}
	size_t done = 0;
	while (done < len) {
		long pos = offset + (long)done;
		unsigned long index = (unsigned long)pos >> PAGE_SHIFT;
		size_t in = (size_t)pos & (PAGE_SIZE - 1);
		size_t n = PAGE_SIZE - in < len - done ? PAGE_SIZE - in : len - done;
		/* A partial page over existing data must be read first. */
		bool fill = n < PAGE_SIZE && ((long)index << PAGE_SHIFT) < atomic_load(&f->size);
		struct za_page *page = get_page(f, index, fill);
		if (!page)
			return done ? (long)done : -1;
		char *addr = page_address(f, page);
		bool fresh = !test_page_flag(page, PG_uptodate);
		if (fresh) {            /* a hole, or all overwritten: zero the rest */
			memset(addr, 0, in);
			memset(addr + in + n, 0, PAGE_SIZE - in - n);
		}
		memcpy(addr + in, (const char *)buf + done, n);
		if (fresh)
			unlock_page(page);
		set_page_dirty(f, page);
		mark_page_accessed(f->mm, page);
		grow_size(f, pos + (long)n);
		put_page(page);
		done += n;
	}
	return (long)done;
}

void *za_file_get_page(za_file_t *f, unsigned long index)
{
	struct za_page *page = get_page(f, index, true);
	if (!page)
		return NULL;
	mark_page_accessed(f->mm, page);
	return page_address(f, page);
}

int za_file_put_page(za_file_t *f, void *addr, int dirty)
{
	struct za_page *page = za_virt_to_page(f->mm, addr);
	if (!page || page->mapping != f || ((uintptr_t)addr & (PAGE_SIZE - 1)) ||
	    load_relaxed(&page->refcount) < 2) {
		za_report_error(f->mm, "za_file_put_page(%p): not a page this file handed out", addr);
		errno = EINVAL;
		return -1;
	}
	if (dirty) {
		set_page_dirty(f, page);
		grow_size(f, (long)(page->index + 1) << PAGE_SHIFT);
	}
	put_page(page);
	return 0;
}

long za_file_size(const za_file_t *f)
{
	return atomic_load(&f->size);
}

/* Write-back goes by whole pages: cut the file back to its size, if it
 * differs (a file opened read-only cannot be truncated, and need not be). */
static int set_disk_size(struct za_file *f)
{
	struct stat st;
	long size = atomic_load(&f->size);
	if (fstat(f->fd, &st))
		return -1;
	return st.st_size == size ? 0 : ftruncate(f->fd, size);
}

/* Writes every dirty page back, in runs of RA_PAGES, holding references. */
int za_file_sync(za_file_t *f)
{
	int rc = 0;
	for (unsigned long l = 0; l < MAX_LEAVES; l++) {
		if (!atomic_load_explicit(&f->leaves[l], memory_order_acquire))
			continue;
		for (unsigned long i = 0; i < LEAF_SLOTS; i += RA_PAGES) {
			struct za_page *dirty[RA_PAGES];
			int n = 0;
			for (unsigned long k = i; k < i + RA_PAGES; k++) {
				struct za_page *page = find_get_page(f, (l << LEAF_SHIFT) | k);
				if (page && test_page_flag(page, PG_dirty))
					dirty[n++] = page;
				else if (page)
					put_page(page);
			}
			unsigned long written = 0;
			if (n && writeback_pages(dirty, n, &written))
				rc = -1;
			for (int k = 0; k < n; k++)
				put_page(dirty[k]);
		}
	}
	if (set_disk_size(f))
		rc = -1;
	if (rc)
		errno = EIO;
	return rc;
}

static void unlink_file(struct za_file *f)
{
	struct za_mm *mm = f->mm;
	za_lock(&mm->files_lock);
	for (struct za_file **p = &mm->files; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
	za_unlock(&mm->files_lock);
}

int za_file_close(za_file_t *f)
{
	struct za_mm *mm = f->mm;
	int rc = za_file_sync(f);
	long held = 0;
	/* No reclaim is in the middle of one of our pages after this. */
	pthread_rwlock_wrlock(&mm->reclaim_lock);
	for (unsigned long l = 0; l < MAX_LEAVES; l++) {
		slot_t *leaf = atomic_load_explicit(&f->leaves[l], memory_order_acquire);
		if (!leaf)
			continue;
		for (unsigned long i = 0; i < LEAF_SLOTS; i++) {
			struct za_page *page = atomic_load(&leaf[i]);
			if (!page)
				continue;
			lru_del(mm, page);
			int one = 1;
			if (!atomic_compare_exchange_strong(&page->refcount, &one, 0)) {
				held++;                 /* a get_page user: leave it to them */
				continue;
			}
			if (test_and_clear_page_flag(page, PG_dirty))
				account_dirty(f, page, -1);     /* its write-back failed */
			page->mapping = NULL;
			set_page_flags(page, PG_alloc);
			za_free_pages(mm, za_page_to_virt(mm, page), 0);
		}
		za_os_free(leaf, LEAF_SLOTS * sizeof(slot_t));
	}
	pthread_rwlock_unlock(&mm->reclaim_lock);
	if (held) {
		za_report_error(mm, "za_file_close(%s): %ld pages still referenced", f->path, held);
		rc = -1;
	}
	unlink_file(f);
	close(f->fd);
	za_os_free(f->leaves, MAX_LEAVES * sizeof(*f->leaves));
	za_os_free(f, sizeof(*f));
	return rc;
}

za_file_t *za_file_open(za_mm_t *mm, const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT | O_CLOEXEC, 0644);
	bool direct = fd >= 0;
	if (fd < 0 && errno == EINVAL)
		fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	struct za_file *f = za_os_alloc(sizeof(*f));
	_Atomic(slot_t *) *leaves = za_os_alloc(MAX_LEAVES * sizeof(*leaves));
	if (!f || !leaves) {
		za_os_free(f, sizeof(*f));
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	f->mm = mm;
	f->fd = fd;
	f->leaves = leaves;
	snprintf(f->path, sizeof(f->path), "%s", path);
	atomic_store(&f->size, (long)lseek(fd, 0, SEEK_END));
	atomic_store(&f->direct, direct);
	if (!direct)
		fall_back_to_buffered(f);
	za_lock(&mm->files_lock);
	f->next = mm->files;
	mm->files = f;
	za_unlock(&mm->files_lock);
	return f;
}

/* Destroy: files still open are closed (their data written back). */
void filemap_close_all(struct za_mm *mm)
{
	while (mm->files) {
		za_report_error(mm, "za_mm_destroy: %s still open; closing it", mm->files->path);
		za_file_close(mm->files);
	}
}
