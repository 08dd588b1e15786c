/*
 * malloc_cache=cpu: per-CPU object stacks in place of per-thread sheaves
 * (tcmalloc's per-CPU caches, on rseq.h's sections).
 *
 * Each CPU (or mm_cid) has, per class, a stack of free objects linked
 * through their second word (the first carries the freed signature that
 * free's checks read).  malloc pops and free pushes in one restartable
 * section each (cpu_cache_alloc, cpu_cache_free: out of line, so that
 * the sheaves' own hit paths stay short), counting the hit in the stack's
 * tally; a thread holds nothing of its own, so a program with many more
 * threads than CPUs keeps at most a CPU's worth of objects per CPU
 * instead of a thread's worth per thread.
 *
 * A section that fails -- the stack empty or full, or its hit counts due
 * for a fold -- sends the thread here, where it takes the stack whole in
 * one section (the index is the thread's CPU of the moment: whatever it
 * takes, it owns), folds the counts, and pushes back what the CPU keeps:
 *   empty: half a stack from the slab cache in one bulk allocation;
 *   full:  the freed object and the top half; the rest to the slab cache
 *          in one bulk free.
 * No lock: only sections touch a stack, and the bulk operations are the
 * slab caches'.  A drain (malloc_trim, the idle purge) and za_verify stop
 * every index and fence, and own the stacks until they start them again.
 */
#include "internal.h"
#include "percpu.h"
#include "slab.h"

#include <errno.h>
#include <string.h>

char *cpu_objects_base;
static za_lock_t stop_lock;             /* one stopper at a time; held across fork */
static za_counter_t folded_hits[2];     /* [0] allocations, [1] frees */
static za_counter_t misses[2];

static struct cpu_objects *cpu_objects(int cpu)
{
	return (struct cpu_objects *)(cpu_objects_base + ((size_t)cpu << CPU_OBJECTS_SHIFT));
}

bool cpu_cache_init(void)
{
	if (!zm.mm->percpu_rseq || zm.debug)
		return false;
	size_t bytes = (size_t)zm.mm->nr_cpus << CPU_OBJECTS_SHIFT;
	cpu_objects_base = za_alloc_pages_exact(zm.mm, 0, bytes);
	if (!cpu_objects_base)
		return false;
	memset(cpu_objects_base, 0, bytes);
	return true;
}

static void *next_of(void *obj)
{
	return ((void **)obj)[1];
}

static void set_next(void *obj, void *next)
{
	((void **)obj)[1] = next;
}

/* Frees a chain of at most 2 * SHEAF_MAX_CAPACITY objects to the slab
 * cache in bulk. */
static void free_chain(unsigned int c, void *head)
{
	void *objs[2 * SHEAF_MAX_CAPACITY];
	size_t n = 0;
	for (; head; head = next_of(head))
		objs[n++] = head;
	if (n)
		za_cache_free_bulk(malloc_class_cache(c), n, objs);
}

/* A taken stack's hits go to the totals. */
static void fold_hits(uint64_t tally)
{
	counter_add_atomic(&folded_hits[0], tally_pops(tally));
	counter_add_atomic(&folded_hits[1], tally_pushes(tally));
}

/* Takes the stack of class c of the thread's CPU of the moment, folding its
 * counts; false if the thread's index has no stack (stopped, or an own
 * rseq area not registered yet: this registers it, rseq.c). */
static bool take_stack(unsigned int c, void **head, uint64_t *len)
{
	struct rseq_percpu pc = cpu_cache_percpu(zm.mm, c);
	struct rseq_stack old;
	unsigned int index = rseq_index(zm.mm);
	if (index >= pc.nr) {
		if (zm.mm->rseq_own_area)
			rseq_thread_register();
		return false;
	}
	if (rseq_take_retry(zm.mm, &pc, index, &old) != RSEQ_OK)
		return false;
	fold_hits(old.tally);
	*head = old.head;
	*len = old.tally & RSEQ_LEN_MASK;
	return true;
}

/* Pushes the chain first..last of n objects back; to the slab cache if
 * the thread is now elsewhere and that stack has no room. */
static void put_chain(unsigned int c, void *first, void *last, uint64_t n)
{
	struct rseq_percpu pc = cpu_cache_percpu(zm.mm, c);
	if (n && rseq_push_retry(zm.mm, &pc, &object_link, first, last, n,
				 cpu_cache_limit(c) | RSEQ_FOLD, 0, 0) != RSEQ_OK)
		free_chain(c, first);
}

/* The last of a chain of n (>= 1) objects. */
static void *chain_last(void *head, uint64_t n)
{
	while (--n)
		head = next_of(head);
	return head;
}

/* objs[0..n) become a chain of free objects, carrying the freed
 * signature. */
static void chain_fresh(void **objs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		*(uint64_t *)objs[i] = free_signature(objs[i]);
		set_next(objs[i], i + 1 < n ? objs[i + 1] : NULL);
	}
}

/* malloc's pop failed: the stack was empty (half a stack from the slab
 * cache, one of it for the caller), or only its counts were due. */
static void *cpu_cache_alloc_slow(unsigned int c)
{
	void *head, *objs[SHEAF_MAX_CAPACITY];
	uint64_t len;
	counter_add_atomic(&misses[0], 1);
	if (!take_stack(c, &head, &len))
		return class_alloc_one(c);
	if (head) {
		put_chain(c, next_of(head), len > 1 ? chain_last(head, len) : NULL, len - 1);
		return head;
	}
	za_cache_t *cache = malloc_class_cache(c);
	size_t n = cache ? za_cache_alloc_bulk(cache, 0, cpu_cache_limit(c) / 2, objs) : 0;
	if (!n)
		return class_alloc_one(c);      /* short of memory: one will do */
	chain_fresh(objs + 1, n - 1);
	put_chain(c, objs[1], objs[n - 1], n - 1);
	return objs[0];
}

/* free's push failed: obj carries the freed signature. */
static void cpu_cache_free_slow(unsigned int c, void *obj)
{
	void *head;
	uint64_t len, keep = cpu_cache_limit(c) / 2;
	counter_add_atomic(&misses[1], 1);
	if (!take_stack(c, &head, &len)) {
		za_cache_free(malloc_class_cache(c), obj);
		return;
	}
	set_next(obj, head);
	if (++len > keep) {             /* full: the top half stays */
		void *last = chain_last(obj, keep);
		free_chain(c, next_of(last));
		set_next(last, NULL);
		len = keep;
	}
	put_chain(c, obj, chain_last(obj, len), len);
}

void *cpu_cache_alloc(unsigned int c)
{
	struct rseq_percpu pc = cpu_cache_percpu(zm.mm, c);
	void *p;
	if (unlikely(rseq_pop_retry(zm.mm, &pc, &object_link, RSEQ_POP_ONE - 1, RSEQ_FOLD,
				    &p) != RSEQ_OK) &&
	    !(p = cpu_cache_alloc_slow(c))) {
		errno = ENOMEM;
		return NULL;
	}
	VM_BUG_ON(zm.mm, object_class(p) != c);     /* a stack holds its class's objects */
	*(uint64_t *)p = 0;     /* no longer free */
	return p;
}

void cpu_cache_free(unsigned int c, void *obj)
{
	struct rseq_percpu pc = cpu_cache_percpu(zm.mm, c);
	VM_BUG_ON(zm.mm, object_class(obj) != c || *(uint64_t *)obj != free_signature(obj));
	if (unlikely(rseq_push_retry(zm.mm, &pc, &object_link, obj, obj, RSEQ_PUSH_ONE + 1,
				     cpu_cache_limit(c) | RSEQ_FOLD, 0, 0) != RSEQ_OK))
		cpu_cache_free_slow(c, obj);
}

/* Stops every index's sections; the caller owns every stack until
 * start_all.  Not while a fork copies the stacks (fork_prepare). */
static void stop_all(void)
{
	za_lock(&stop_lock);
	for (int cpu = 0; cpu < zm.mm->nr_cpus; cpu++)
		rseq_index_mark(&cpu_objects(cpu)->stop);
	rseq_fence();
}

static void start_all(void)
{
	for (int cpu = 0; cpu < zm.mm->nr_cpus; cpu++)
		rseq_index_start(&cpu_objects(cpu)->stop);
	za_unlock(&stop_lock);
}

/* Everything the CPUs hold goes back to the slab caches. */
void cpu_cache_drain(void)
{
	if (!zm.cpu_cache)
		return;
	stop_all();
	for (int cpu = 0; cpu < zm.mm->nr_cpus; cpu++)
		for (unsigned int c = 0; c < NR_CLASSES; c++) {
			struct rseq_stack *s = &cpu_objects(cpu)->stack[c];
			struct rseq_stack old = *s;
			rseq_stack_publish(s, (struct rseq_stack){ NULL, 0 });
			fold_hits(old.tally);
			free_chain(c, old.head);
		}
	start_all();
}

void cpu_cache_fold_stats(uint64_t *alloc_hits, uint64_t *alloc_misses, uint64_t *free_hits,
			  uint64_t *free_misses)
{
	if (!zm.cpu_cache)
		return;
	*alloc_hits += load_relaxed(&folded_hits[0]);
	*free_hits += load_relaxed(&folded_hits[1]);
	*alloc_misses += load_relaxed(&misses[0]);
	*free_misses += load_relaxed(&misses[1]);
	for (int cpu = 0; cpu < zm.mm->nr_cpus; cpu++)
		for (unsigned int c = 0; c < NR_CLASSES; c++) {
			uint64_t t = rseq_tally_load(&cpu_objects(cpu)->stack[c]);
			*alloc_hits += tally_pops(t);
			*free_hits += tally_pushes(t);
		}
}

/* A stack holds as many free objects of its class as its tally says,
 * fewer than the class's limit, each carrying the freed signature. */
static int verify_stack(int cpu, unsigned int c, const struct rseq_stack *s)
{
	uint64_t len = s->tally & RSEQ_LEN_MASK, n = 0;
	for (void *p = s->head; p && n <= len; p = next_of(p), n++) {
		struct za_page *slab = virt_to_slab(zm.mm, p);
		VERIFY(slab && slab->slab_cache == load_relaxed(&zm.classes[c].cache) &&
		       *(uint64_t *)p == free_signature(p),
		       "malloc-%u: CPU %d's stack holds %p, not a free object of the class",
		       class_size(c), cpu, p);
	}
	VERIFY(n == len && len < cpu_cache_limit(c),
	       "malloc-%u: CPU %d's stack holds %llu objects, its tally says %llu (limit %llu)",
	       class_size(c), cpu, (unsigned long long)n, (unsigned long long)len,
	       (unsigned long long)cpu_cache_limit(c));
	return 0;
}

int cpu_cache_verify(void)
{
	if (!zm.cpu_cache)
		return 0;
	int r = 0;
	stop_all();
	for (int cpu = 0; cpu < zm.mm->nr_cpus && !r; cpu++)
		for (unsigned int c = 0; c < NR_CLASSES && !r; c++)
			r = verify_stack(cpu, c, &cpu_objects(cpu)->stack[c]);
	start_all();
	return r;
}

/* fork: no stopper runs while the stacks are copied (taken first, before
 * the slab caches' locks a drain takes under it).  A thread between a take
 * and its push back loses those objects in the child: a bounded leak, as
 * with the sheaves of the parent's other threads. */
void cpu_cache_lock(bool lock)
{
	if (lock)
		za_lock(&stop_lock);
	else
		za_unlock(&stop_lock);
}
