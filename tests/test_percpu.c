/*
 * The per-CPU fast paths under fire: per-CPU page lists (orders 0..3), the
 * SLUB CPU slab and the quicklists, driven by 32 threads on a system with
 * the machine's CPUs (far more threads than CPUs), while
 *   - a signaller thread sends SIGUSR1 to the workers as fast as it can
 *     (the handler only counts; a signal aborts a restartable sequence);
 *   - half the workers are pinned to one CPU, the others float, and some
 *     of those move themselves between CPU a, CPU b and every CPU;
 *   - workers yield now and then, exit holding nothing and are replaced
 *     by new threads, and hand blocks to each other (remote frees);
 *   - the main thread forks, once with every worker parked outside the
 *     library, and the child allocates and frees and verifies.
 * It does not set percpu=: ctest runs it once per mechanism through
 * ZA_CONFIG, which za_mm_create() appends to the configuration.
 *
 * A block handed out twice is caught two ways: an owner table keyed by
 * address (one entry per page of a block, per object start), taken with
 * an atomic exchange when a block comes out of the library and given back
 * before it goes in; and a pattern unique to the owner (its thread serial
 * and a sequence number) written over every block and checked before its
 * free.  At the quiescent points every page is accounted for, exactly,
 * and the library's counters agree with what the workers did.
 *
 * ZA_PERCPU_ROUNDS sets each worker's rounds (default 8000, 600 under
 * TSan).
 * ZA_PERCPU_LIVE_FORK=1 adds a fork while the workers run inside the
 * library: za_mm_create()'s systems have no fork handlers today, so the
 * child may find a lock held by a thread that does not exist in it; the
 * child then hangs until its alarm and the test fails, naming that.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	WORKERS = 32,
	POOL = 16,              /* items a worker keeps across rounds */
	BATCH = 12,             /* items a round allocates, at most */
	SHARED = 64,            /* items in transit between workers */
	CHURN_GENERATIONS = 4,  /* short-lived slots: threads per slot */
	GRANULE_SHIFT = 4,      /* owner table: one entry per 16 bytes */
};

static const char *const config = "memory=128M,zones=DMA32:32M+Normal";
static const size_t cache_size[2] = { 64, 192 };

enum item_kind { K_PAGES, K_OBJ0, K_OBJ1, K_QL0, K_QL1, NR_KINDS };

/* One block or object held by the test, with the pattern written over it
 * and the owner-table value it was taken with. */
struct item {
	void *addr;
	uint64_t tag;
	uint16_t owner;
	uint8_t kind, order;
};

/* What the workers did, summed as they exit: the library's counters must
 * agree with it. */
struct tally {
	long pages;             /* pages allocated with za_alloc_pages */
	long blocks[4];         /* ... as blocks of each order */
	long obj_alloc[2], obj_free[2];
	long ql_alloc[2], ql_free[2];
	long migrations;        /* CPU changes a worker saw */
};

static za_mm_t *mm;
static za_cache_t *caches[2];
static _Atomic uint16_t *owner;        /* per granule of the arena */
static size_t nr_granules;
static _Atomic(struct item *) shared[SHARED];
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tally total;
/* TSan makes every round some 15 times slower; ASan about twice. */
#ifdef ZA_TSAN
static long rounds_per_worker = 600;
#else
static long rounds_per_worker = 8000;
#endif
static atomic_long rounds_done;
static atomic_int serials;             /* thread serials, for owners and tags */

/* The CPUs this process may run on. */
static cpu_set_t allowed;
static int cpus[CPU_SETSIZE], nr_allowed;
/* Per-CPU structures are picked by the CPU (not percpu_index=cid). */
static bool index_is_cpu;

/* ------------------------------------------------------------------------
 * Failure reports
 * ------------------------------------------------------------------------ */
static const char *const kind_name[NR_KINDS] = {
	"page block", "object of cache 64", "object of cache 192", "quicklist 0 page",
	"quicklist 1 page"
};

static __attribute__((noreturn, format(printf, 2, 3))) void fail(const struct item *it,
								   const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "test_percpu: %s %p (order %u, owner %u, tag %#llx): ",
		kind_name[it->kind], it->addr, it->order, it->owner, (unsigned long long)it->tag);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ------------------------------------------------------------------------
 * The owner table: an entry per page of a block and per object start.  A
 * block the library hands out while another owner holds it finds that
 * owner's value there.
 * ------------------------------------------------------------------------ */
static size_t nr_keys(const struct item *it)
{
	return it->kind == K_PAGES ? (size_t)1 << it->order : 1;
}

static size_t granule(const struct item *it)
{
	za_page_t *page = za_virt_to_page(mm, it->addr);
	if (!page)
		fail(it, "not an address of the system's arena");
	size_t pfn = za_page_to_pfn(mm, page);
	size_t g = (pfn << (ZA_PAGE_SHIFT - GRANULE_SHIFT)) +
		   (((uintptr_t)it->addr & (ZA_PAGE_SIZE - 1)) >> GRANULE_SHIFT);
	if (g + (nr_keys(it) - 1) * (ZA_PAGE_SIZE >> GRANULE_SHIFT) >= nr_granules)
		fail(it, "beyond the arena's %zu pages",
		     nr_granules >> (ZA_PAGE_SHIFT - GRANULE_SHIFT));
	return g;
}

static void own(const struct item *it)
{
	size_t g = granule(it);
	for (size_t i = 0; i < nr_keys(it); i++) {
		size_t k = g + (i << (ZA_PAGE_SHIFT - GRANULE_SHIFT));
		uint16_t prev = atomic_exchange(&owner[k], it->owner);
		if (prev)
			fail(it, "handed out while owner %u holds it (page %zu of the block)", prev, i);
	}
}

static void disown(const struct item *it)
{
	size_t g = granule(it);
	for (size_t i = 0; i < nr_keys(it); i++) {
		size_t k = g + (i << (ZA_PAGE_SHIFT - GRANULE_SHIFT));
		uint16_t prev = atomic_exchange(&owner[k], 0);
		if (prev != it->owner)
			fail(it, "owner table says %u at page %zu of the block", prev, i);
	}
}

/* ------------------------------------------------------------------------
 * Patterns: every 64-byte line of a page block, every word of an object,
 * the first half of a quicklist page (whose second half is the
 * constructor's, or zero).
 * ------------------------------------------------------------------------ */
static atomic_long ql_ctor_calls, ql_dtor_calls;

static void ql_ctor(void *p)
{
	atomic_fetch_add(&ql_ctor_calls, 1);
	memset((char *)p + ZA_PAGE_SIZE / 2, 0x42, ZA_PAGE_SIZE / 2);
}

static void ql_dtor(void *p)
{
	(void)p;
	atomic_fetch_add(&ql_dtor_calls, 1);
}

/* Word i of the pattern: the tag and the word's place, so that a block
 * moved or copied shows too. */
static uint64_t pattern(const struct item *it, size_t i)
{
	return it->tag ^ ((uint64_t)i * 0x9e3779b97f4a7c15ULL);
}

/* The words the pattern covers: every word of an object, the first word
 * of each 64-byte line of a page block, and of the first half of a
 * quicklist page. */
static size_t span_words(const struct item *it)
{
	switch (it->kind) {
	case K_PAGES:
		return (ZA_PAGE_SIZE << it->order) / 8;
	case K_OBJ0:
	case K_OBJ1:
		return cache_size[it->kind - K_OBJ0] / 8;
	default:
		return ZA_PAGE_SIZE / 2 / 8;
	}
}

static size_t stride_words(const struct item *it)
{
	return it->kind == K_OBJ0 || it->kind == K_OBJ1 ? 1 : 8;
}

static void fill(const struct item *it)
{
	uint64_t *w = it->addr;
	for (size_t i = 0; i < span_words(it); i += stride_words(it))
		w[i] = pattern(it, i);
}

static void check_pattern(const struct item *it)
{
	const uint64_t *w = it->addr;
	for (size_t i = 0; i < span_words(it); i += stride_words(it))
		if (w[i] != pattern(it, i))
			fail(it, "word %zu is %#llx, not the owner's %#llx: written by someone else "
				 "(handed out twice, or freed under its owner)",
			     i, (unsigned long long)w[i], (unsigned long long)pattern(it, i));
}

/* A quicklist page comes zeroed, or as the constructor left it. */
static void check_ql_state(const struct item *it)
{
	const unsigned char *b = it->addr;
	for (size_t i = 0; i < ZA_PAGE_SIZE; i++) {
		unsigned char want = it->kind == K_QL1 && i >= ZA_PAGE_SIZE / 2 ? 0x42 : 0;
		if (b[i] != want)
			fail(it, "byte %zu is %#x at allocation, not %#x (%s)", i, b[i], want,
			     i < 8 ? "the list's link left in it" : "written after its free");
	}
}

/* An object asked for zeroed is zero from its first byte to its last. */
static void check_zeroed(const struct item *it)
{
	const unsigned char *b = it->addr;
	for (size_t i = 0; i < cache_size[it->kind - K_OBJ0]; i++)
		if (b[i])
			fail(it, "byte %zu is %#x in an object allocated with ZA_GFP_ZERO", i, b[i]);
}

/* Back to the state it came in: the first half zero again. */
static void ql_clean(const struct item *it)
{
	uint64_t *w = it->addr;
	for (size_t i = 0; i < span_words(it); i += stride_words(it))
		w[i] = 0;
}

/* ------------------------------------------------------------------------
 * Items in and out of the library
 * ------------------------------------------------------------------------ */
struct worker_state {
	int serial;
	uint16_t owner;
	uint64_t seq;
	unsigned long long rng;
	struct tally t;
};

static void alloc_item(struct worker_state *ws, struct item *it, enum item_kind kind)
{
	bool zero = false;
	*it = (struct item){ .kind = (uint8_t)kind, .owner = ws->owner };
	it->tag = ((uint64_t)ws->serial << 40) | ++ws->seq;
	switch (kind) {
	case K_PAGES: {
		it->order = (uint8_t)(test_rand(&ws->rng) % 4);
		za_gfp_t gfp = (za_gfp_t)(test_rand(&ws->rng) % 3) << 3;   /* unmovable/movable/reclaimable */
		it->addr = za_alloc_pages(mm, gfp, it->order);
		break;
	}
	case K_OBJ0:
	case K_OBJ1:
		zero = test_rand(&ws->rng) % 4 == 0;
		it->addr = za_cache_alloc(caches[kind - K_OBJ0], zero ? ZA_GFP_ZERO : 0);
		break;
	case K_QL0:
	case K_QL1:
		it->addr = za_quicklist_alloc(mm, kind - K_QL0, 0, kind == K_QL1 ? ql_ctor : NULL);
		break;
	default:
		break;
	}
	if (!it->addr) {
		fprintf(stderr, "test_percpu: serial %d: allocation of a %s failed: %s (errno %d)\n",
			ws->serial, kind_name[kind], za_last_error(), errno);
		exit(1);
	}
	own(it);
	if (kind == K_QL0 || kind == K_QL1)
		check_ql_state(it);
	if (zero)
		check_zeroed(it);
	fill(it);
	switch (kind) {
	case K_PAGES:
		ws->t.pages += 1L << it->order;
		ws->t.blocks[it->order]++;
		break;
	case K_OBJ0:
	case K_OBJ1:
		ws->t.obj_alloc[kind - K_OBJ0]++;
		break;
	default:
		ws->t.ql_alloc[kind - K_QL0]++;
		break;
	}
}

/* Checks the owner's pattern, gives the table entry back, frees. */
static void free_item(struct worker_state *ws, struct item *it)
{
	check_pattern(it);
	disown(it);
	int r;
	switch (it->kind) {
	case K_PAGES:
		r = za_free_pages(mm, it->addr, it->order);
		break;
	case K_OBJ0:
	case K_OBJ1:
		r = za_cache_free(caches[it->kind - K_OBJ0], it->addr);
		ws->t.obj_free[it->kind - K_OBJ0]++;
		break;
	default:
		ql_clean(it);
		r = za_quicklist_free(mm, it->kind - K_QL0, it->kind == K_QL1 ? ql_dtor : NULL, it->addr);
		ws->t.ql_free[it->kind - K_QL0]++;
		break;
	}
	if (r)
		fail(it, "the free returned %d: %s", r, za_last_error());
	it->addr = NULL;
}

/* Hands an item to whichever worker comes next; takes what was there. */
static void hand_over(struct item *it)
{
	struct item *box = malloc(sizeof(*box));
	CHECK(box);
	*box = *it;
	struct item *old = atomic_exchange(&shared[(uintptr_t)it->tag % SHARED], box);
	it->addr = NULL;
	if (old) {
		*it = *old;
		free(old);
	}
}

static void tally_add(const struct tally *t)
{
	pthread_mutex_lock(&tally_lock);
	total.pages += t->pages;
	for (int o = 0; o < 4; o++)
		total.blocks[o] += t->blocks[o];
	for (int i = 0; i < 2; i++) {
		total.obj_alloc[i] += t->obj_alloc[i];
		total.obj_free[i] += t->obj_free[i];
		total.ql_alloc[i] += t->ql_alloc[i];
		total.ql_free[i] += t->ql_free[i];
	}
	total.migrations += t->migrations;
	pthread_mutex_unlock(&tally_lock);
}

/* ------------------------------------------------------------------------
 * Where threads run
 * ------------------------------------------------------------------------ */
static void set_cpus(int which)      /* -1: every allowed CPU */
{
	cpu_set_t set;
	if (which < 0) {
		set = allowed;
	} else {
		CPU_ZERO(&set);
		CPU_SET(cpus[which % nr_allowed], &set);
	}
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0);
}

/* Any thread's per-CPU index is one of the system's; a pinned thread's is
 * its CPU's, from its first allocation on (a new thread's rseq
 * registration, on a stack and TLS another thread left, included). */
static void check_current_cpu(int serial, int pinned)
{
	int cpu = za_current_cpu(mm);
	if (cpu < 0 || cpu >= za_nr_cpus(mm)) {
		fprintf(stderr, "test_percpu: serial %d: za_current_cpu %d, not a CPU of the "
				"system's %d\n", serial, cpu, za_nr_cpus(mm));
		exit(1);
	}
	if (pinned >= 0 && index_is_cpu && pinned < za_nr_cpus(mm) && cpu != pinned) {
		fprintf(stderr, "test_percpu: serial %d: pinned to CPU %d, za_current_cpu says "
				"%d\n", serial, pinned, cpu);
		exit(1);
	}
}

enum placement { PINNED, FLOATING, MIGRATING };

/* Even slots are pinned; odd slots float, every other one moving itself
 * between two CPUs and all of them. */
static enum placement placement_of(int slot)
{
	return slot % 2 == 0 ? PINNED : slot % 4 == 3 ? MIGRATING : FLOATING;
}

/* Slots 1 and 2 mod 4 are short-lived: CHURN_GENERATIONS threads in turn,
 * each a share of the rounds. */
static bool churns(int slot)
{
	return slot % 4 == 1 || slot % 4 == 2;
}

/* ------------------------------------------------------------------------
 * The fork gate: the main thread closes it, waits until every live
 * worker waits at it (outside the library), forks, opens it.
 * ------------------------------------------------------------------------ */
static atomic_int gate_closed, parked, active;

static void gate(void)
{
	if (!atomic_load(&gate_closed))
		return;
	atomic_fetch_add(&parked, 1);
	while (atomic_load(&gate_closed)) {
		struct timespec ts = { 0, 200 * 1000 };
		nanosleep(&ts, NULL);
	}
	atomic_fetch_sub(&parked, 1);
}

/* ------------------------------------------------------------------------
 * Workers and their slots
 * ------------------------------------------------------------------------ */
struct slot {
	pthread_mutex_t lock;           /* the signaller's pthread_kill vs the thread's end */
	pthread_t tid;
	bool alive;                     /* under lock: tid may be signalled */
	atomic_bool done;               /* the thread has returned (or is about to) */
	bool started;
	int index, generation;
	long rounds;
};

static struct slot slots[WORKERS];
static bool sections;           /* the mechanism is rseq */

/* Does the calling thread have an rseq area registered (glibc's, or the
 * one zonealloc registers itself with rseq_area=own)?  The kernel takes a
 * second registration only where there is none; one made here is undone. */
static bool thread_has_rseq(void)
{
	static __thread uint32_t probe[8] __attribute__((aligned(32)));
	if (syscall(__NR_rseq, probe, sizeof(probe), 0, 0x53053053) != 0)
		return errno != ENOSYS;
	CHECK(syscall(__NR_rseq, probe, sizeof(probe), 1 /* unregister */, 0x53053053) == 0);
	return false;
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	struct worker_state ws = { 0 };
	ws.serial = atomic_fetch_add(&serials, 1) + 1;
	ws.owner = (uint16_t)(ws.serial % 65535 + 1);
	ws.rng = 0x9e3779b97f4a7c15ULL * (unsigned long long)ws.serial + 1;
	enum placement where = placement_of(s->index);
	int pinned = where == PINNED ? cpus[s->index / 2 % nr_allowed] : -1;
	set_cpus(where == PINNED ? s->index / 2 : -1);
	check_current_cpu(ws.serial, pinned);
	int last_cpu = sched_getcpu();

	struct item pool[POOL] = { 0 }, batch[BATCH + 1];
	for (long round = 0; round < s->rounds; round++) {
		gate();
		if (where == MIGRATING && round % 8 == 0) {
			int step = (int)(round / 8 % 3);      /* CPU a, CPU b, every CPU */
			set_cpus(step == 2 ? -1 : step + s->index);
		}
		if (round % 8 == 0)
			sched_yield();
		check_current_cpu(ws.serial, pinned);
		int cpu = sched_getcpu();
		ws.t.migrations += cpu != last_cpu;
		last_cpu = cpu;

		/* A batch of mixed items; one may go to another worker, and
		 * what comes back is freed with the batch. */
		int n = 1 + (int)(test_rand(&ws.rng) % BATCH);
		for (int i = 0; i < n; i++)
			alloc_item(&ws, &batch[i], (enum item_kind)(test_rand(&ws.rng) % NR_KINDS));
		if (test_rand(&ws.rng) % 4 == 0) {
			hand_over(&batch[n - 1]);
			if (!batch[n - 1].addr)
				n--;
		}
		/* Some live on in the pool, replacing older ones. */
		struct item *p = &pool[test_rand(&ws.rng) % POOL];
		if (n > 0 && test_rand(&ws.rng) % 2) {
			struct item keep = batch[0];
			if (p->addr)
				batch[0] = *p;
			else
				batch[0] = batch[--n];
			*p = keep;
		}
		/* Freed last-in first-out, or first-in first-out. */
		if (round % 2)
			for (int i = n - 1; i >= 0; i--)
				free_item(&ws, &batch[i]);
		else
			for (int i = 0; i < n; i++)
				free_item(&ws, &batch[i]);
		atomic_fetch_add(&rounds_done, 1);
	}
	/* Every thread runs the sections, registered by now if the area
	 * is zonealloc's. */
	if (sections)
		CHECK(thread_has_rseq());
	/* The thread ends holding nothing. */
	for (int i = 0; i < POOL; i++)
		if (pool[i].addr) {
			gate();
			free_item(&ws, &pool[i]);
		}
	tally_add(&ws.t);
	pthread_mutex_lock(&s->lock);
	s->alive = false;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_sub(&active, 1);
	atomic_store(&s->done, true);
	return NULL;
}

static void start_worker(struct slot *s)
{
	s->rounds = churns(s->index) ? rounds_per_worker / CHURN_GENERATIONS : rounds_per_worker;
	atomic_store(&s->done, false);
	atomic_fetch_add(&active, 1);
	pthread_mutex_lock(&s->lock);
	CHECK(pthread_create(&s->tid, NULL, worker, s) == 0);
	s->alive = true;
	s->started = true;
	pthread_mutex_unlock(&s->lock);
	s->generation++;
}

/* Joins a finished thread; true if the slot is to get another. */
static bool reap(struct slot *s)
{
	if (!s->started || !atomic_load(&s->done))
		return false;
	CHECK(pthread_join(s->tid, NULL) == 0);
	s->started = false;
	return churns(s->index) && s->generation < CHURN_GENERATIONS;
}

/* ------------------------------------------------------------------------
 * Signals: the handler only counts.
 * ------------------------------------------------------------------------ */
static atomic_long signals_sent, signals_received;
static atomic_bool signaller_stop;

static void on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&signals_received, 1, memory_order_relaxed);
}

static void *signaller(void *arg)
{
	(void)arg;
	long sent = 0;
	while (!atomic_load(&signaller_stop)) {
		for (int i = 0; i < WORKERS; i++) {
			pthread_mutex_lock(&slots[i].lock);
			if (slots[i].alive && pthread_kill(slots[i].tid, SIGUSR1) == 0)
				sent++;
			pthread_mutex_unlock(&slots[i].lock);
		}
		sched_yield();
	}
	atomic_fetch_add(&signals_sent, sent);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Fork: the child, the only thread of its process, allocates and frees
 * through the system it inherited and verifies it.
 * ------------------------------------------------------------------------ */
static long long held_by_library(void)
{
	return za_stat(mm, "nr_free_pages") + za_stat(mm, "nr_pcp_pages") +
	       za_stat(mm, "nr_slab_pages") + za_stat(mm, "nr_quicklist_pages");
}

static void child_work(void)
{
	alarm(60);      /* a lock held by a thread that did not follow: hang, then SIGALRM */
	struct worker_state ws = { .serial = 0xffff, .owner = 0xffff, .rng = 42 };
	struct item items[BATCH * 2];
	/* Counts the workers' blocks as they were: the child alone changes them. */
	long long before = held_by_library();
	for (int round = 0; round < 300; round++) {
		int n = 1 + round % (BATCH * 2);
		for (int i = 0; i < n; i++)
			alloc_item(&ws, &items[i], (enum item_kind)((round + i) % NR_KINDS));
		for (int i = n - 1; i >= 0; i--)
			free_item(&ws, &items[i]);
	}
	/* Every page the child took came back to the library. */
	CHECK_EQ(held_by_library(), before);
	CHECK(za_verify(mm) == 0);
	za_drain_all_pages(mm);
	CHECK_EQ(za_stat(mm, "nr_pcp_pages"), 0);
	CHECK_EQ(held_by_library(), before);
	CHECK(za_verify(mm) == 0);
	_exit(0);
}

static void fork_and_check(const char *how)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child_work();
	if (!strcmp(how, "parked"))         /* the workers go on while the child runs */
		atomic_store(&gate_closed, 0);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "test_percpu: child of a fork (%s workers) killed by signal %d%s\n",
			how, WTERMSIG(status),
			WTERMSIG(status) == SIGALRM ? ": it hung, most likely on a lock of the system "
						      "held by a thread that does not exist in it" : "");
		exit(1);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "test_percpu: child of a fork (%s workers) exited with status %d\n",
			how, WEXITSTATUS(status));
		exit(1);
	}
}

/* Every live worker waits at the gate: none is inside the library. */
static void fork_parked(void)
{
	atomic_store(&gate_closed, 1);
	for (;;) {
		int a = atomic_load(&active), p = atomic_load(&parked);
		if (p == a && atomic_load(&active) == a)
			break;
		sched_yield();
	}
	fork_and_check("parked");
}

/* The arena's size, from the effective configuration (ZA_CONFIG may
 * change memory=): the owner table covers every page of it. */
static size_t arena_bytes(void)
{
	const char *p = strstr(za_mm_config_string(mm), "memory="), *units = "KMGT", *u;
	CHECK(p);
	char *end;
	size_t bytes = (size_t)strtoull(p + strlen("memory="), &end, 10);
	if (*end && (u = strchr(units, *end)))
		bytes <<= 10 * (u - units + 1);
	return bytes;
}

/* ------------------------------------------------------------------------
 * Phases
 * ------------------------------------------------------------------------ */
/* Runs a generation of workers in every slot (and their successors in the
 * short-lived slots) to the end; forks at a third and two thirds of the
 * way if asked. */
static void run_phase(bool forks, bool live_fork)
{
	long target = atomic_load(&rounds_done) + (long)WORKERS * rounds_per_worker;
	long start = atomic_load(&rounds_done);
	bool forked_parked = !forks, forked_live = !forks || !live_fork;
	for (int i = 0; i < WORKERS; i++) {
		slots[i].generation = 0;
		start_worker(&slots[i]);
	}
	for (;;) {
		bool running = false;
		for (int i = 0; i < WORKERS; i++) {
			if (reap(&slots[i]))
				start_worker(&slots[i]);
			running |= slots[i].started;
		}
		if (!running)
			break;
		long done = atomic_load(&rounds_done) - start;
		if (!forked_parked && done >= (target - start) / 3) {
			fork_parked();
			forked_parked = true;
		}
		if (!forked_live && done >= (target - start) * 2 / 3) {
			fork_and_check("running");
			forked_live = true;
		}
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	/* What was left in transit goes back too. */
	struct worker_state ws = { 0 };
	for (int i = 0; i < SHARED; i++) {
		struct item *it = atomic_exchange(&shared[i], NULL);
		if (it) {
			free_item(&ws, it);
			free(it);
		}
	}
	tally_add(&ws.t);
}

/* Quiescent, nothing held by the test: every page is free, on a per-CPU
 * list, in a slab or on a quicklist, exactly. */
static void check_quiescent(void)
{
	CHECK_EQ(held_by_library(), za_stat(mm, "nr_managed_pages"));
	CHECK(za_verify(mm) == 0);
}

static long long stat_of(const char *name)
{
	long long v = za_stat(mm, name);
	if (v < 0) {
		fprintf(stderr, "test_percpu: za_stat(\"%s\"): %s\n", name, za_last_error());
		exit(1);
	}
	return v;
}

/* ------------------------------------------------------------------------
 * The cases
 * ------------------------------------------------------------------------ */
static bool live_fork;                  /* ZA_PERCPU_LIVE_FORK */
static long long free_before, pgalloc0, pgfree0;

/* A phase with the signaller running, then the quiescent check. */
static void signalled_phase(bool forks, bool live)
{
	pthread_t sig;
	atomic_store(&signaller_stop, false);
	CHECK(pthread_create(&sig, NULL, signaller, NULL) == 0);
	run_phase(forks, live);
	atomic_store(&signaller_stop, true);
	CHECK(pthread_join(sig, NULL) == 0);
	check_quiescent();
}

/* 32 threads and their successors. */
static void test_workers(void)
{
	signalled_phase(false, false);
}

/* Threads created after all of those exited; forks meanwhile. */
static void test_new_workers_and_forks(void)
{
	signalled_phase(true, live_fork);
}

/* The slab layer: no object freed twice or unknown; every free counted
 * once, on the fast or the slow path; an allocation at most once (one made
 * past a busy CPU slab is not counted).  Returns the slabs' pages. */
static long long check_slab_books(void)
{
	long long slab_pages = 0;
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(total.obj_alloc[i], total.obj_free[i]);
		CHECK_EQ(za_cache_stat(caches[i], "bad_free"), 0);
		CHECK_EQ(za_cache_stat(caches[i], "free_fastpath") +
				 za_cache_stat(caches[i], "free_slowpath"),
			 total.obj_free[i]);
		CHECK(za_cache_stat(caches[i], "alloc_fastpath") +
			      za_cache_stat(caches[i], "alloc_slowpath") <= total.obj_alloc[i]);
		struct za_cache_info info;
		za_cache_info(caches[i], &info);
		CHECK_EQ(za_cache_stat(caches[i], "order_fallback"), 0);   /* every slab of info.order */
		slab_pages += za_cache_stat(caches[i], "alloc_slab") << info.order;
		/* Everything freed: a shrink frees every slab there is. */
		za_cache_shrink(caches[i]);
		CHECK_EQ(za_cache_stat(caches[i], "alloc_slab"), za_cache_stat(caches[i], "free_slab"));
	}
	CHECK_EQ(stat_of("nr_slab_pages"), 0);
	return slab_pages;
}

/* Quicklists: each allocation a hit or a miss; what the lists hold is what
 * was pushed, less what was popped and trimmed.  Returns the misses. */
static long long check_quicklist_books(void)
{
	CHECK_EQ(total.ql_alloc[0], total.ql_free[0]);
	CHECK_EQ(total.ql_alloc[1], total.ql_free[1]);
	long long ql_miss = stat_of("quicklist_miss");
	CHECK_EQ(stat_of("quicklist_hit") + ql_miss, total.ql_alloc[0] + total.ql_alloc[1]);
	CHECK_EQ(stat_of("nr_quicklist_pages"),
		 stat_of("quicklist_free") - stat_of("quicklist_hit") - stat_of("quicklist_trim"));
	CHECK(atomic_load(&ql_ctor_calls) <= ql_miss);
	za_quicklist_shrink(mm);
	CHECK_EQ(stat_of("nr_quicklist_pages"), 0);
	/* Every constructed page was destroyed once, at its release. */
	CHECK_EQ(atomic_load(&ql_dtor_calls), atomic_load(&ql_ctor_calls));
	return ql_miss;
}

static void print_summary(void)
{
	printf("  %ld rounds by %d threads at a time (%d in all) on %d CPU%s: %ld pages in %ld/%ld/%ld/%ld "
	       "blocks of order 0/1/2/3, %ld + %ld objects, %ld + %ld quicklist pages\n",
	       atomic_load(&rounds_done), WORKERS, atomic_load(&serials), nr_allowed,
	       nr_allowed == 1 ? "" : "s", total.pages, total.blocks[0], total.blocks[1],
	       total.blocks[2], total.blocks[3], total.obj_alloc[0], total.obj_alloc[1],
	       total.ql_alloc[0], total.ql_alloc[1]);
	printf("  %ld signals sent, %ld handled; %ld CPU changes seen; %lld per-CPU trylock "
	       "failures\n", atomic_load(&signals_sent), atomic_load(&signals_received),
	       total.migrations, stat_of("pcp_trylock_fail"));
	long long aborts = za_stat(mm, "rseq_abort");
	if (aborts >= 0)
		printf("  rseq_abort %lld\n", aborts);
	else
		printf("  no rseq_abort counter\n");
}

/* The library's counters agree with what the workers of the cases run
 * before this one did.  Pages: every page the library handed out -- to the
 * workers, as a quicklist miss, as a slab -- came back, and nothing else
 * moved. */
static void test_books(void)
{
	long long slab_pages = check_slab_books(), ql_miss = check_quicklist_books();
	za_drain_all_pages(mm);
	CHECK_EQ(stat_of("bad_free"), 0);
	CHECK_EQ(stat_of("nr_pcp_pages"), 0);
	CHECK_EQ(stat_of("nr_free_pages"), free_before);
	long long pgalloc = stat_of("pgalloc") - pgalloc0, pgfree = stat_of("pgfree") - pgfree0;
	CHECK_EQ(pgalloc, total.pages + ql_miss + slab_pages);
	CHECK_EQ(pgfree, pgalloc);
	check_fully_coalesced(mm, 10);
	print_summary();
}

/* The environment, the CPUs, the signal handler, the system, its caches
 * and the owner table. */
static void set_up(void)
{
	const char *env = getenv("ZA_PERCPU_ROUNDS");
	if (env)
		rounds_per_worker = atol(env);
	CHECK(rounds_per_worker >= CHURN_GENERATIONS);
	env = getenv("ZA_PERCPU_LIVE_FORK");
	live_fork = env && atoi(env);

	CHECK(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[nr_allowed++] = c;
	CHECK(nr_allowed > 0);
	if (nr_allowed == 1)
		printf("  one CPU: pinned, floating and migrating threads all run on CPU %d\n", cpus[0]);

	struct sigaction sa = { 0 };
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

	mm = test_mm(config);
	printf("  per-CPU mechanism: %s\n", za_percpu_mode(mm));
	sections = !strncmp(za_percpu_mode(mm), "rseq", 4);
	const char *cfg = za_mm_config_string(mm);
	index_is_cpu = !strstr(cfg, "percpu_index=") || strstr(cfg, "percpu_index=cpu");
	nr_granules = arena_bytes() >> GRANULE_SHIFT;
	owner = calloc(nr_granules, sizeof(*owner));
	CHECK(owner);
	for (int i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "percpu-%zu", cache_size[i]);
		CHECK((caches[i] = za_cache_create(mm, name, cache_size[i], 0, 0, NULL)));
	}
	for (int i = 0; i < WORKERS; i++) {
		CHECK(pthread_mutex_init(&slots[i].lock, NULL) == 0);
		slots[i].index = i;
	}
	long long managed = stat_of("nr_managed_pages");
	free_before = stat_of("nr_free_pages");
	CHECK_EQ(free_before, managed);
	pgalloc0 = stat_of("pgalloc");
	pgfree0 = stat_of("pgfree");
}

static void tear_down(void)
{
	for (int i = 0; i < 2; i++)
		CHECK_EQ(za_cache_destroy(caches[i]), 0);
	CHECK(za_verify(mm) == 0);
	CHECK_EQ(za_mm_destroy(mm), 0);
	free(owner);
}

/* The floor (za_percpu_floor_ns): a time with restartable sequences,
 * ENOTSUP without; the stacks it used leave the system's counters alone. */
static void test_floor(void)
{
	long long pgalloc = stat_of("pgalloc");
	double ns = za_percpu_floor_ns(mm, 1000);
	if (sections) {
		CHECK(ns > 0);
	} else {
		CHECK(ns < 0 && errno == ENOTSUP);
		CHECK_STR_HAS(za_last_error(), "not restartable sequences");
	}
	CHECK(za_percpu_floor_ns(mm, 0) < 0 && errno == EINVAL);
	CHECK_EQ(stat_of("pgalloc"), pgalloc);
	za_mm_t *locked = test_mm("memory=64M,percpu=lock,kswapd=0,vmstat_interval_ms=0");
	CHECK(za_percpu_floor_ns(locked, 1000) < 0 && errno == ENOTSUP);
	CHECK_EQ(za_mm_destroy(locked), 0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "floor", test_floor },
		{ "workers", test_workers },
		{ "new_workers_and_forks", test_new_workers_and_forks },
		{ "books", test_books },
	};
	set_up();
	int rc = run_test_cases("test_percpu", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
	tear_down();
	return rc;
}
