/*
 * The malloc front end's start and its fork handlers: the default memory
 * system created on the first call (a bootstrap that the system's own
 * allocations, made while it is created, get through on a static heap),
 * the size classes and their caches made on first use, and the locks a
 * fork takes so that the child finds none held.
 */
#include "internal.h"
#include "publish.h"
#include "mm_layers.h"
#include "slab.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct za_malloc zm;
uint8_t class_by_step[1024 / 16 + 1];
struct sparse_view malloc_arena;

/* ------------------------------------------------------------------------
 * Misuse
 * ------------------------------------------------------------------------ */
void malloc_misuse(const char *fmt, ...)
{
	char msg[320] = "zonealloc: ";
	size_t len = strlen(msg);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + len, sizeof(msg) - len - 1, fmt, ap);
	va_end(ap);
	len = strlen(msg);
	msg[len++] = '\n';
	if (write(STDERR_FILENO, msg, len) < 0)
		msg[0] = 0;
	abort();
}

/* What the page allocator and the slab caches report under the malloc
 * front end is misuse too. */
static void report_and_abort(const char *msg, void *ctx)
{
	(void)ctx;
	malloc_misuse("%s", msg);
}

/* ------------------------------------------------------------------------
 * Bootstrap
 *
 * Creating the system may itself call malloc (pthread_atfork does, for
 * one): such calls, from the creating thread only, get memory from a small
 * static heap that free() recognises and ignores.  Other threads wait.
 * ------------------------------------------------------------------------ */
_Atomic int malloc_boot_state;
static __thread bool booting __attribute__((tls_model("initial-exec")));

static struct {
	_Alignas(MALLOC_ALIGN) char heap[128 << 10];
	_Atomic size_t used;
} boot_heap;

/* Each block is preceded by its size, for realloc. */
void *boot_alloc(size_t n)
{
	size_t need = MALLOC_ALIGN + ALIGN_UP(n, (size_t)MALLOC_ALIGN);
	size_t at = atomic_fetch_add(&boot_heap.used, need);
	if (n > sizeof(boot_heap.heap) || at + need > sizeof(boot_heap.heap)) {
		errno = ENOMEM;
		return NULL;
	}
	char *p = boot_heap.heap + at + MALLOC_ALIGN;   /* never used before: zero */
	*(size_t *)(p - sizeof(size_t)) = n;
	return p;
}

bool in_boot_heap(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_heap.heap < sizeof(boot_heap.heap);
}

size_t boot_size(const void *p)
{
	return *(const size_t *)((const char *)p - sizeof(size_t));
}

/* The address space the process may have (ulimit -v), or 0 if unlimited. */
static uint64_t address_space_limit(void)
{
	struct rlimit as;
	return !getrlimit(RLIMIT_AS, &as) && as.rlim_cur != RLIM_INFINITY ? as.rlim_cur : 0;
}

/* The machine's memory, or the address space the process may have if
 * that is less: more could never be used. */
static uint64_t usable_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t mem = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 1ULL << 32;
	uint64_t limit = address_space_limit();
	return limit && limit < mem ? limit : mem;
}

/*
 * The default system: the machine's memory size in one zone, grown on
 * demand (deferred_init: sections of address space are taken from the OS
 * as the zone grows into them), no kswapd (nothing to page out; free memory
 * goes back to the OS through the purge worker instead).  The watermarks
 * stay the kernel's: the free memory they keep at hand is address space,
 * and runs placed in it use less memory than with a zone grown a block at
 * a time (zabench malloc's large).  Sections of 256 MiB: runs go up to a
 * quarter of one (a run is one piece of address space), and large runs
 * replaced at random leave less of a section unused the larger it is
 * (bigbuf's peak RSS: 550 MiB with 64 MiB sections, 501 with 256).  Under
 * an address-space limit, sections of 32 MiB: the last one, which the
 * limit may not leave room for, is what the program loses.  ZA_CONFIG,
 * appended by za_mm_create, overrides any of it.  Should the metadata of
 * that size not fit, smaller systems are tried.
 *
 * The per-CPU page lists are tuned as since 6.7 (pcp_high_auto): a CPU's
 * high rises while the program refills the list or frees in bursts, so
 * that a program working through many blocks of one size reuses them from
 * the list, hot, instead of through the buddy lists; the purge worker's
 * rounds are the vmstat ticks that lower it again, by half (the kernel's
 * eighth a second would keep a burst's pages for seconds, RSS here,
 * where to the kernel they are only free memory).  The kernel's range
 * (the low watermark's share to an eighth of the zone) is a machine's:
 * here it is capped to 2..16 MiB a CPU, and a refill that only untouched
 * memory could serve first returns what the lists hold of other orders
 * beyond the floor (pcp_refill_drain), so that a program moving on to
 * another size reuses that memory instead of touching new memory.  Not
 * under an address-space limit, where every section counts: there the
 * untuned lists leave the runs of test_malloc_limits' fill (1 MiB + 64
 * bytes each) room for one more (966 MiB against 965, 95% of glibc's
 * being 966).  The system publishes (publish=1) for zabench top, the
 * purge worker's rounds refreshing it -- also not under such a limit,
 * where the segment's mapping would take address space from the program.
 */
#define MALLOC_MAX_ORDER 12             /* blocks of up to 16 MiB */

static za_mm_t *create_system(void)
{
	char config[320];
	uint64_t mem = usable_memory();
	bool limited = zm.address_limited;
	const char *lists = limited ? "" : "pcp_high_auto=1,pcp_high_min=2M,pcp_high_max=16M,"
					   "pcp_decay_shift=1,pcp_refill_drain=1,vmstat_interval_ms=0,";
	const char *section = limited ? "32M" : "256M";
	const char *publish = limited ? "" : "publish=1,";
	for (; mem >= (uint64_t)PAGE_SIZE << MALLOC_MAX_ORDER; mem /= 2) {     /* one block */
		snprintf(config, sizeof(config),
			 "memory=%lluM,zones=Normal,max_order=%d,kswapd=0,deferred_init=1,quicklists=0,"
			 "%spublish_interval_ms=0,%ssection_size=%s",
			 (unsigned long long)(mem >> 20), MALLOC_MAX_ORDER, publish, lists, section);
		za_mm_t *mm = za_mm_create(config);
		if (mm || errno != ENOMEM)
			return mm;
	}
	za_set_last_error("%llu MiB of memory or address space (ulimit -v) is too little",
			  (unsigned long long)(usable_memory() >> 20));
	return NULL;
}

static unsigned int sheaf_capacity(unsigned int size)
{
	unsigned int cap = 32768 / size;
	return cap < 2 ? 2 : cap > SHEAF_MAX_CAPACITY ? SHEAF_MAX_CAPACITY : cap;
}

static void init_classes(void)
{
	for (size_t step = 0; step <= 1024 / 16; step++)
		class_by_step[step] = (uint8_t)(step <= 8 ? (step ? step - 1 : ZERO_SLOT)
							 : size_class_computed(step * 16));
	for (unsigned int c = 0; c < NR_CLASSES; c++) {
		struct malloc_class *mc = &zm.classes[c];
		mc->size = class_size(c);
		/* Classes grow, each a multiple of malloc's alignment, the last
		 * SMALL_MAX; a size finds the first class that holds it. */
		VM_BUG_ON(zm.mm, mc->size % MALLOC_ALIGN || (c && mc->size <= zm.classes[c - 1].size) ||
				 size_class(mc->size) != c || (c == NR_CLASSES - 1 && mc->size != SMALL_MAX));
		mc->capacity = sheaf_capacity(mc->size);
		VM_BUG_ON(zm.mm, mc->capacity > SHEAF_MAX_CAPACITY);
		/* About 64 KiB of full sheaves per class in the barn, 2..8. */
		unsigned int full = (64u << 10) / (mc->capacity * mc->size);
		zm.barns[c].base_full = full < 2 ? 2 : full > 8 ? 8 : full;
		zm.barns[c].max_full = zm.barns[c].base_full;
	}
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static bool init_front_end(void)
{
	zm.address_limited = address_space_limit() != 0;
	za_mm_t *mm = create_system();
	if (!mm) {
		malloc_misuse("cannot create the default memory system: %s", za_last_error());
		return false;
	}
	za_mm_set_error_handler(mm, report_and_abort, NULL);
	zm.mm = mm;
	/* slub_debug asks for checked slab caches: the sheaves, the free
	 * signature and the alignment of classes assume plain ones, so it
	 * means debug mode. */
	zm.debug = mm->debug || mm->cfg.slub_debug[0];
	/* Runs go beyond the largest block (za_alloc_pages_exact), up to a
	 * quarter of a section, so that a zone holding such runs finds room
	 * for the next one in what is free around them, not only in a fresh
	 * section. */
	zm.large_max_pages = 1UL << (pfn_section_shift(mm) - 2);
	if (zm.large_max_pages < 1UL << mm->max_order)
		zm.large_max_pages = 1UL << mm->max_order;
	if (zm.large_max_pages > BLOCK_MAX_PAGES)       /* what a block's word holds */
		zm.large_max_pages = BLOCK_MAX_PAGES;
	zm.free_key = get_random_u64() | 1;
	init_classes();
	zm.sheaf_cache = za_cache_create(mm, "malloc-sheaf",
					 sizeof(struct sheaf) + SHEAF_MAX_CAPACITY * sizeof(void *),
					 0, 0, NULL);
	zm.thread_cache_cache = za_cache_create(mm, "malloc-thread", sizeof(struct thread_cache),
						ZA_CACHELINE, 0, NULL);
	if (!zm.sheaf_cache || !zm.thread_cache_cache ||
	    pthread_key_create(&zm.thread_key, thread_cache_exit))
		return false;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (zm.debug)
		malloc_debug_init();
	malloc_stats_init();
	zm.cpu_cache = !strcmp(mm->cfg.malloc_cache, "cpu") && cpu_cache_init();
	view_copy(&malloc_arena, &mm->view);
	return true;
}

/* True once the system exists; false for this thread's calls made while
 * creating it (they use the boot heap). */
__attribute__((noinline, cold)) bool malloc_bootstrap(void)
{
	int expect = BOOT_NONE;
	if (booting)
		return false;
	if (atomic_compare_exchange_strong(&malloc_boot_state, &expect, BOOT_RUNNING)) {
		booting = true;
		bool ok = init_front_end();
		booting = false;
		atomic_store_explicit(&malloc_boot_state, ok ? BOOT_DONE : BOOT_FAILED, memory_order_release);
		return ok;
	}
	while (atomic_load_explicit(&malloc_boot_state, memory_order_acquire) == BOOT_RUNNING)
		sched_yield();
	return atomic_load_explicit(&malloc_boot_state, memory_order_acquire) == BOOT_DONE;
}

za_mm_t *za_malloc_system(void)
{
	return malloc_ready() ? zm.mm : NULL;
}

/* ------------------------------------------------------------------------
 * Classes and their caches
 * ------------------------------------------------------------------------ */
/* What a class's min_partial may keep on its node's partial list, in
 * bytes (at least one slab). */
#define MIN_PARTIAL_BYTES (64u << 10)

za_cache_t *malloc_class_cache(unsigned int c)
{
	struct malloc_class *mc = &zm.classes[c];
	za_cache_t *cache = atomic_load_explicit(&mc->cache, memory_order_acquire);
	if (likely(cache))
		return cache;
	za_lock(&zm.threads_lock);
	if (!(cache = load_relaxed(&mc->cache))) {
		char name[32];
		snprintf(name, sizeof(name), "malloc-%u", mc->size);
		unsigned int flags = zm.debug ? ZA_SLAB_CONSISTENCY_CHECKS | ZA_SLAB_RED_ZONE |
						ZA_SLAB_POISON | ZA_SLAB_STORE_USER : ZA_SLAB_FREEPTR_EARLY;
		cache = cache_prepare(zm.mm, name, mc->size, MALLOC_ALIGN, flags, NULL);
		VM_BUG_ON(zm.mm, cache && cache->object_size != mc->size);
		if (cache) {
			_Static_assert(NR_CLASSES < 255, "a class is a slab page's tag (slab.h)");
			cache->owner_tag = c;
			/* The sheaves and barns are this cache's per-CPU layer:
			 * no per-CPU partial slabs under them, which would hold
			 * each class's emptied slabs per CPU.  The node's few
			 * empty slabs (min_partial) stay: shared by every CPU,
			 * they serve a class whose objects are freed on one CPU
			 * and allocated on another.  No more of them than
			 * MIN_PARTIAL_BYTES, where the kernel's count grows
			 * with the object size: what a class of big objects
			 * empties beyond that goes to the page allocator,
			 * where every class can reuse it. */
			cache_disable_sheaves(cache);   /* its own are in front */
			cache->cpu_partial_slabs = 0;
			unsigned int slabs = MIN_PARTIAL_BYTES >> (PAGE_SHIFT + cache->order);
			if (cache->min_partial > slabs)
				cache->min_partial = slabs ? slabs : 1;
			/* Debug mode's objects are red-zoned and its blocks
			 * start past a header: the class says it has none, so
			 * that free's fast path takes no pointer for an object
			 * start there (debug_free checks them).  So does any
			 * class whose objects do not start at a multiple of
			 * their size, which the fast path's check assumes. */
			mc->inv_odd = cache->inv_odd;
			mc->size_tz = cache->size_tz;
			mc->order = cache->order;
			mc->slab_mask = (PAGE_SIZE << cache->order) - 1;
			mc->objects = zm.debug || cache->red_left_pad ? 0 : cache->objects;
			cache_publish(cache);
		}
		atomic_store_explicit(&mc->cache, cache, memory_order_release);
	}
	za_unlock(&zm.threads_lock);
	return cache;
}

/* ------------------------------------------------------------------------
 * fork: every lock of the front end and the system, in the order code nests
 * them, so that the child of a fork finds none held.
 * ------------------------------------------------------------------------ */
static void fork_prepare(void)
{
	cpu_cache_lock(true);
	for (unsigned int c = 0; c < NR_CLASSES; c++)
		za_lock(&zm.barns[c].b.lock);
	za_lock(&zm.threads_lock);
	malloc_debug_lock(true);
	mappings_lock();
	mm_lock_all(zm.mm);
}

static void fork_unlock(bool in_child)
{
	mm_unlock_all(zm.mm, in_child);
	mappings_unlock();
	malloc_debug_lock(false);
	za_unlock(&zm.threads_lock);
	for (unsigned int c = 0; c < NR_CLASSES; c++)
		za_unlock(&zm.barns[c].b.lock);
	cpu_cache_lock(false);
}

static void fork_parent(void)
{
	fork_unlock(false);
}

static void fork_child(void)
{
	fork_unlock(true);
	publish_after_fork(zm.mm);
	purge_worker_after_fork(sheaves_after_fork_child());
}

