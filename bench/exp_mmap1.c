/*
 * mmap1 (E3, seed 002): will-it-scale's mmap1 with the allocator in place
 * of the VM.  Each thread keeps a window of 64 live "mappings"; every
 * operation maps a new one -- a 200-byte vm_area_struct, a 104-byte
 * anon_vma and a 64-byte anon_vma_chain, each from its own cache -- and
 * unmaps the oldest.  A quarter of the unmaps happen on another thread.
 * Objects freed long after their slab stopped being a CPU slab go through
 * the partial lists, and so through the nodes' list_lock: the contention
 * seed 002 cuts with larger slabs and per-CPU partial lists.
 *
 * Metric: ops_per_sec (mmap+munmap pairs).  ops = pairs.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define SHARED 64
#define POOL 256

struct mapping {
	void *vma, *anon_vma, *avc;
	atomic_bool in_transit;         /* handed off, not yet unmapped */
};

struct mm1_state {
	za_cache_t *vma, *anon_vma, *avc;
	double deadline;
	_Atomic(struct mapping *) shared[SHARED];
	struct mapping (*pool)[POOL];   /* [thread]: storage of handed-off mappings */
	atomic_llong ops;
	int m_ops;
};

static void mm1_declare(struct bench *b)
{
	struct mm1_state *st = calloc(1, sizeof(*st));
	st->m_ops = bench_metric(b, "ops_per_sec", "mmap+munmap/s", HIGHER_IS_BETTER);
	st->pool = calloc((size_t)b->opts.threads, sizeof(*st->pool));
	b->state = st;
}

static void mm1_release(struct bench *b)
{
	struct mm1_state *st = b->state;
	free(st->pool);
}

static void map(struct mm1_state *st, struct mapping *m)
{
	m->vma = za_cache_alloc(st->vma, 0);
	m->anon_vma = za_cache_alloc(st->anon_vma, 0);
	m->avc = za_cache_alloc(st->avc, 0);
	if (!m->vma || !m->anon_vma || !m->avc) {
		fprintf(stderr, "zabench mmap1: %s\n", za_last_error());
		exit(1);
	}
	memset(m->vma, 0, 64);          /* initialise the hot fields */
	memset(m->anon_vma, 0, 32);
	memset(m->avc, 0, 64);
}

static void unmap(struct mm1_state *st, struct mapping *m)
{
	za_cache_free(st->avc, m->avc);
	za_cache_free(st->anon_vma, m->anon_vma);
	za_cache_free(st->vma, m->vma);
	atomic_store_explicit(&m->in_transit, false, memory_order_release);
}

static void mm1_worker(int i, void *arg)
{
	struct mm1_state *st = arg;
	struct mapping window[WINDOW], *pool = st->pool[i];
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
	long long ops = 0;
	int next = 0;
	for (int k = 0; k < WINDOW; k++)
		map(st, &window[k]);
	do {
		for (int k = 0; k < WINDOW; k++, ops++) {
			struct mapping old = window[k];
			map(st, &window[k]);
			struct mapping *mine = &pool[next];
			if (k % 4 || atomic_load_explicit(&mine->in_transit, memory_order_acquire)) {
				unmap(st, &old);
				continue;
			}
			/* Leave it to another thread; unmap what another thread left. */
			next = (next + 1) % POOL;
			mine->vma = old.vma;
			mine->anon_vma = old.anon_vma;
			mine->avc = old.avc;
			atomic_store(&mine->in_transit, true);
			struct mapping *theirs = atomic_exchange(&st->shared[bench_rand(&rng) % SHARED], mine);
			if (theirs)
				unmap(st, theirs);
		}
	} while (now_seconds() < st->deadline);
	for (int k = 0; k < WINDOW; k++)
		unmap(st, &window[k]);
	atomic_fetch_add(&st->ops, ops);
}

static void mm1_run(struct bench *b, struct variant *v, struct iteration *it)
{
	struct mm1_state *st = b->state;
	st->vma = variant_cache(v, 0, "vm_area_struct", 200);
	st->anon_vma = variant_cache(v, 1, "anon_vma", 104);
	st->avc = variant_cache(v, 2, "anon_vma_chain", 64);
	atomic_store(&st->ops, 0);
	st->deadline = now_seconds() + bench_seconds(b);
	double wall = run_threads(b->opts.threads, mm1_worker, st);
	for (int k = 0; k < SHARED; k++) {
		struct mapping *m = atomic_exchange(&st->shared[k], NULL);
		if (m)
			unmap(st, m);
	}
	it->ops = atomic_load(&st->ops);
	it->value[st->m_ops] = (double)it->ops / wall;
}

/*
 * E3 asks for objects per slab and slab order per cache, for each variant.
 * The per-CPU partial list's limit is kept in slabs (cpu_partial_slabs),
 * derived as the kernel does from a number of objects; both are shown, the
 * objects being what those slabs hold when full.  With slub_sheaves, a
 * CPU's sheaves hold up to two sheaves of objects instead (7.0 has no
 * CPU partial list).
 */
static void mm1_print_caches(const struct bench *b, FILE *out)
{
	fprintf(out, "\nCaches (cpu partial: the per-CPU partial list's limit, in slabs and in "
		     "the objects those slabs hold; sheaf: objects per sheaf, 0 without; held: free "
		     "objects in sheaves and barns at the end, and their bytes)\n");
	fprintf(out, "%-18s %-8s %6s %10s %18s %17s %6s %7s %9s\n", "cache", "variant", "order",
		"objs/slab", "cpu partial slabs", "cpu partial objs", "sheaf", "held", "held KiB");
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < b->nvariants; i++) {
			struct za_cache_info info;
			za_cache_info(b->variants[i].caches[c], &info);
			fprintf(out, "%-18s %-8s %6u %10u %18u %17u %6u %7lu %9.1f\n", info.name,
				b->variants[i].name, info.order, info.objects, info.cpu_partial_slabs,
				info.cpu_partial_slabs * info.objects, info.sheaf_capacity,
				info.sheaf_objects, info.sheaf_objects * info.size / 1024.0);
		}
}

static const char *const mm1_report[] = {
	"--threads 8 --ab slub_max_order=3:4,slub_big_system=0:1 --config nr_cpus=224",
	/* Does seed 002 still matter with 7.0's sheaves?  And sheaves against
	 * the CPU slabs (7.0 without them is 6.19's SLUB). */
	"--threads 8 --ab slub_max_order=3:4,slub_big_system=0:1 --config nr_cpus=224,kernel=7.0",
	"--threads 8 --ab slub_sheaves=0:2 --config kernel=7.0",
	NULL,
};

const struct experiment exp_mmap1 = {
	.name = "mmap1",
	.summary = "E3: vma/anon_vma/avc objects per mmap+munmap, a window per thread",
	.config = "memory=1G,zones=DMA32:256M+Normal",
	.threads = 8,
	.declare = mm1_declare,
	.run = mm1_run,
	.release = mm1_release,
	.report_runs = mm1_report,
	.print_extra = mm1_print_caches,
	.notes = "Seed 002 acts here through min_objects: with nr_cpus=224, slub_big_system "
		 "doubles it (36 to 72 objects), which moves each cache one order up and doubles "
		 "its objects per slab; slub_max_order=4 changes nothing for objects this small, "
		 "whose orders stay at 2 or below. The per-CPU partial limit is kept in slabs, "
		 "worked out as the kernel does from a number of objects (120 for these sizes, "
		 "240 on a big system): enough slabs for twice that many, slabs being assumed "
		 "half full. The seed doubles the objects, but its slabs hold twice as many, so "
		 "the Caches table shows the same number of slabs and twice the objects.",
};
