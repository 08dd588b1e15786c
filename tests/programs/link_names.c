/*
 * A program may use any name that is not the library's API.  This one
 * defines, with bodies and values of its own, every global name the library
 * used internally before its internal symbols were made local (functions,
 * variables, a thread-local), calls and reads each, and uses the library
 * beside them.  Built twice, against libzonealloc.a and libzonealloc.so: a
 * clash is a link error (duplicate definition) or, worse, one of the two
 * sides silently using the other's definition, which the checks catch (the
 * library must never reach the program's names, nor the program the
 * library's).  tests/check_symbols.py checks the libraries' symbol tables.
 */
#include "../test.h"

#include <pthread.h>
#include <stdint.h>

/* The 82 functions and 5 variables (tcache thread-local) the static library
 * exported before its internal symbols were made local. */
#define OLD_FUNCTIONS(X)                                                                  \
	X(arena_release) X(arena_reserve) X(block_alloc) X(block_free)                      \
	X(buddy_add_initial_block) X(buddy_coalesce) X(buddy_free) X(buddy_free_purged)     \
	X(buddy_grow) X(buddy_isolate_dirty) X(buddy_rmqueue) X(buddy_rmqueue_bulk)         \
	X(buddy_shrink) X(debug_alloc_check) X(debug_free) X(debug_free_check)              \
	X(debug_get_freepointer) X(debug_init_object) X(debug_malloc) X(debug_metadata_size) \
	X(debug_usable_size) X(deferred_grow_zone) X(filemap_close_all) X(lru_add)          \
	X(lru_del) X(machine_cpu_to_node) X(machine_nr_cpus) X(malloc_block_head)           \
	X(malloc_class_cache) X(malloc_debug_init) X(malloc_debug_lock) X(malloc_misuse)    \
	X(malloc_stats_at_exit) X(mark_page_accessed) X(migratetype_name) X(mm_lock_all)    \
	X(mm_unlock_all) X(pcp_drain_cpu) X(pcp_free_batch) X(pcp_init)                    \
	X(pcp_refill) X(purge_worker_after_fork) X(purge_worker_kick) X(quicklist_event_name) \
	X(quicklist_pages) X(quicklist_stat_fold) X(reclaimable_pages) X(remove_from_page_cache) \
	X(rseq_cpu_id_offset) X(setup_zone_watermarks) X(sheaf_alloc_slow) X(sheaf_free_slow) \
	X(sheaves_after_fork_child) X(sheaves_flush_barns) X(sheaves_flush_thread) X(sheaves_fold_stats) \
	X(slab_alloc_caller) X(slab_event_name) X(slab_free_object) X(slab_lock_all)        \
	X(slab_pages) X(slab_report) X(slab_shrink_reclaim) X(slab_stat_fold)               \
	X(slabinfo_report) X(slub_debug_check) X(slub_debug_flags_for) X(slub_destroy_all)  \
	X(this_cpu_slow) X(thread_cache_exit) X(try_to_free_pages) X(vmalloc_alloc)         \
	X(vmalloc_free) X(vmalloc_lock) X(vmalloc_realloc) X(vmalloc_size)                  \
	X(vmalloc_stats) X(vmalloc_unlock) X(vmscan_exit) X(vmscan_init)                    \
	X(wakeup_kswapd) X(writeback_pages)

/* tcache, the fifth, is thread-local and checked on its own. */
#define OLD_VARIABLES(X) X(zm) X(class_by_step) X(boot_tcache) X(exited_tcache)

enum {
#define ID(name) ID_##name,
	OLD_FUNCTIONS(ID)
	NR_FUNCTIONS,
	OLD_VARIABLES(ID)
	NR_NAMES_PLUS_ONE
#undef ID
};
#define NR_VARIABLES (NR_NAMES_PLUS_ONE - NR_FUNCTIONS - 1)

/* Each function counts its calls and answers a value only it gives. */
static unsigned long calls[NR_FUNCTIONS];

static unsigned long answer(unsigned long id, unsigned long arg)
{
	return arg * 1000003ul + id + 1;
}

#define DEFINE_FUNCTION(name)                                   \
	unsigned long name(unsigned long arg);                  \
	unsigned long name(unsigned long arg)                   \
	{                                                       \
		calls[ID_##name]++;                             \
		return answer(ID_##name, arg);                  \
	}
OLD_FUNCTIONS(DEFINE_FUNCTION)

/* Each variable is four words of a pattern of its own, smaller than the
 * library's objects of the same name: either side using the other's would
 * show as a changed pattern or a crash. */
#define PATTERN(id, i) (0x5a5a000000000000ull + ((unsigned long long)(id) << 8) + (i))
#define DEFINE_VARIABLE(name)                                                    \
	unsigned long long name[4] = { PATTERN(ID_##name, 0), PATTERN(ID_##name, 1), \
				       PATTERN(ID_##name, 2), PATTERN(ID_##name, 3) };
OLD_VARIABLES(DEFINE_VARIABLE)

/* The library's is an initial-exec pointer to the thread's cache, which
 * za_malloc() dereferences: this one is not a pointer at all. */
#define TCACHE_MAIN 0x7ca4e000000000a1ull
_Thread_local unsigned long long tcache = TCACHE_MAIN;

struct function {
	const char *name;
	unsigned long (*fn)(unsigned long);
	unsigned long id;
};
static const struct function functions[] = {
#define FUNCTION_ENTRY(name) { #name, name, ID_##name },
	OLD_FUNCTIONS(FUNCTION_ENTRY)
#undef FUNCTION_ENTRY
};

struct variable {
	const char *name;
	unsigned long long *v;
	unsigned long id;
};
static const struct variable variables[] = {
#define VARIABLE_ENTRY(name) { #name, name, ID_##name },
	OLD_VARIABLES(VARIABLE_ENTRY)
#undef VARIABLE_ENTRY
};

static void check_variables(const char *when)
{
	for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
		for (int w = 0; w < 4; w++)
			if (variables[i].v[w] != PATTERN(variables[i].id, w)) {
				fprintf(stderr, "%s: the program's %s[%d] changed: %#llx\n",
					when, variables[i].name, w, variables[i].v[w]);
				exit(1);
			}
}

/* Calls every function once more; all must have been called exactly
 * `expected` times before (by this program only). */
static void call_functions(unsigned long expected)
{
	for (size_t i = 0; i < NR_FUNCTIONS; i++) {
		const struct function *f = &functions[i];
		if (calls[f->id] != expected) {
			fprintf(stderr, "%s was called %lu times, expected %lu\n", f->name,
				calls[f->id], expected);
			exit(1);
		}
		unsigned long arg = 17 + i;
		unsigned long r = f->fn(arg);
		if (r != answer(f->id, arg)) {
			fprintf(stderr, "%s(%lu) returned %lu, not this program's answer\n",
				f->name, arg, r);
			exit(1);
		}
	}
}

/* The library in use: a system, a page, the malloc (on its own default
 * system, which runs on the library's own tcache and zm). */
static void use_library(const char *who)
{
	za_mm_t *mm = test_mm("memory=64M,zones=Normal");
	unsigned char *page = za_alloc_pages(mm, ZA_GFP_ZERO, 0);
	CHECK(page != NULL);
	for (int i = 0; i < 4096; i++)
		CHECK_EQ(page[i], 0);
	memset(page, 0xab, 4096);
	CHECK_EQ(za_stat(mm, "nr_allocated_pages"), 1);
	CHECK_EQ(za_free_pages(mm, page, 0), 0);
	CHECK_EQ(za_stat(mm, "nr_allocated_pages"), 0);
	CHECK_EQ(za_mm_destroy(mm), 0);

	char *small = za_malloc(100);
	char *large = za_malloc(1 << 20);
	CHECK(small != NULL && large != NULL);
	CHECK(za_malloc_usable_size(small) >= 100);
	memset(small, 1, 100);
	memset(large, 2, 1 << 20);
	CHECK_EQ(small[99] + large[(1 << 20) - 1], 3);
	za_free(small);
	za_free(large);
	printf("%s: za_mm_create/za_alloc_pages/za_free_pages/za_mm_destroy and "
	       "za_malloc/za_free work\n", who);
}

#define TCACHE_THREAD 0x7ca4e000000000b2ull

static void *thread_main(void *arg)
{
	(void)arg;
	CHECK(tcache == TCACHE_MAIN); /* the program's initial value */
	tcache = TCACHE_THREAD;
	use_library("a second thread");
	CHECK(tcache == TCACHE_THREAD);
	return NULL;
}

int main(void)
{
	check_variables("at start");
	CHECK(tcache == TCACHE_MAIN);
	call_functions(0);
	printf("the program's own %d functions named as the library's old internal ones "
	       "called: each answered its own value\n", NR_FUNCTIONS);

	use_library("main thread");
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, thread_main, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);

	check_variables("after using the library");
	CHECK(tcache == TCACHE_MAIN);
	printf("the program's own %d variables (%s, ...) and thread-local tcache "
	       "unchanged by the library, in both threads\n", (int)NR_VARIABLES,
	       variables[0].name);

	call_functions(1); /* the library called none of them */
	call_functions(2);
	printf("the library called none of the program's functions\n");
	printf("%d names checked: ok\n", NR_FUNCTIONS + NR_VARIABLES + 1);
	return 0;
}
