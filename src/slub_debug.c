/*
 * SLUB debugging (slub_debug letters, per cache or global):
 *   F  sanity checks: a freed object must not already be on its slab's
 *      free list (double free);
 *   Z  red zones around each object: 0xcc while allocated, 0xbb while free,
 *      checked at free (writes past or before the object, double frees)
 *      and at allocation (writes while free);
 *   P  poisoning: free objects are filled with 0x6b and end in 0xa5,
 *      checked at allocation (writes after free);
 *   U  the last allocation and free of each object (caller, thread, CPU,
 *      time), printed with every report about it.
 * A debug cache has no per-CPU freelists: every operation goes through
 * its node's list_lock, where these checks see a stable slab.  Caches
 * without debug flags never run any of this.
 */
#include "slab.h"
#include "internal.h"
#include "percpu.h"

#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RED_INACTIVE 0xbb
#define RED_ACTIVE   0xcc
#define POISON_FREE  0x6b
#define POISON_END   0xa5

/* ------------------------------------------------------------------------
 * slub_debug=FLAGS[:cache[:cache...]][;FLAGS:cache...]
 * ------------------------------------------------------------------------ */
static unsigned int letter_flag(char c)
{
	switch (c) {
	case 'F': case 'f': return SLAB_CONSISTENCY_CHECKS;
	case 'Z': case 'z': return SLAB_RED_ZONE;
	case 'P': case 'p': return SLAB_POISON;
	case 'U': case 'u': return SLAB_STORE_USER;
	case '-': return 0;
	default: return ~0u;
	}
}

/* Does pattern (a name, or a prefix ending in '*') match name? */
static bool name_matches(const char *pat, size_t len, const char *name)
{
	if (len && pat[len - 1] == '*')
		return !strncmp(pat, name, len - 1);
	return strlen(name) == len && !strncmp(pat, name, len);
}

/*
 * Walks the spec; with name == NULL only validates.  Returns the flags for
 * name, or ~0u for a malformed spec.
 */
static unsigned int walk_spec(const char *spec, const char *name)
{
	unsigned int result = 0;
	while (*spec) {
		const char *end = strchr(spec, ';');
		if (!end)
			end = spec + strlen(spec);
		unsigned int flags = 0;
		const char *p = spec;
		for (; p < end && *p != ':'; p++) {
			unsigned int f = letter_flag(*p);
			if (f == ~0u)
				return ~0u;
			flags |= f;
		}
		if (p == spec)
			return ~0u;
		if (p == end) {                 /* no names: every cache */
			result |= flags;
		} else {
			while (p < end) {
				const char *q = ++p;
				while (p < end && *p != ':')
					p++;
				if (p == q)
					return ~0u;
				if (name && name_matches(q, (size_t)(p - q), name))
					result |= flags;
			}
		}
		spec = *end ? end + 1 : end;
	}
	return result;
}

const char *slub_debug_check(const char *spec)
{
	return walk_spec(spec, NULL) == ~0u ? "expected letters of FZPU, optionally "
					      "followed by :cache names, groups separated by ;"
					    : NULL;
}

unsigned int slub_debug_flags_for(const struct za_mm *mm, const char *cache_name)
{
	return walk_spec(mm->cfg.slub_debug, cache_name);
}

/* ------------------------------------------------------------------------
 * Layout
 * ------------------------------------------------------------------------ */
unsigned int debug_metadata_size(const struct za_kmem_cache *s)
{
	return s->debug & SLAB_STORE_USER ? 2 * sizeof(struct track) : 0;
}

static struct track *tracks(const struct za_kmem_cache *s, void *obj)
{
	return (struct track *)((char *)obj + s->inuse + (s->offset >= s->inuse ? sizeof(void *) : 0));
}

static bool poisoned(const struct za_kmem_cache *s)
{
	return (s->debug & SLAB_POISON) && !s->ctor;
}

static void set_track(struct za_kmem_cache *s, void *obj, int which, void *caller)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	tracks(s, obj)[which] = (struct track){
		.caller = caller,
		.cpu = this_cpu(s->mm),
		.tid = (int)syscall(SYS_gettid),
		.when_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
	};
}

static void set_redzones(struct za_kmem_cache *s, void *obj, int value)
{
	if (!(s->debug & SLAB_RED_ZONE))
		return;
	memset((char *)obj - s->red_left_pad, value, s->red_left_pad);
	memset((char *)obj + s->object_size, value, s->inuse - s->object_size);
}

static void poison(struct za_kmem_cache *s, void *obj)
{
	if (!poisoned(s))
		return;
	memset(obj, POISON_FREE, s->object_size - 1);
	((unsigned char *)obj)[s->object_size - 1] = POISON_END;
}

void debug_init_object(struct za_kmem_cache *s, void *obj)
{
	set_redzones(s, obj, RED_INACTIVE);
	poison(s, obj);
	if (s->debug & SLAB_STORE_USER)
		memset(tracks(s, obj), 0, 2 * sizeof(struct track));
}

/* ------------------------------------------------------------------------
 * Reports
 * ------------------------------------------------------------------------ */
void slab_report(struct za_kmem_cache *s, const void *obj, const char *fmt, ...)
{
	char msg[160], who[160] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((s->debug & SLAB_STORE_USER) && obj) {
		const struct track *t = tracks(s, (void *)obj);
		snprintf(who, sizeof(who), " (last allocated by %p, thread %d, cpu %d; freed by %p, "
			 "thread %d, cpu %d)", t[0].caller, t[0].tid, t[0].cpu, t[1].caller, t[1].tid,
			 t[1].cpu);
	}
	za_report_error(s->mm, "slub: %s: %s%s", s->name, msg, who);
}

/* The first byte in [start, start+len) that is not value, or NULL. */
static const unsigned char *first_not(const void *start, size_t len, int value)
{
	const unsigned char *p = start;
	for (size_t i = 0; i < len; i++)
		if (p[i] != value)
			return p + i;
	return NULL;
}

static const unsigned char *redzone_damage(struct za_kmem_cache *s, void *obj, int value,
					   const char **where)
{
	const unsigned char *bad = first_not((char *)obj + s->object_size, s->inuse - s->object_size,
					     value);
	*where = "past the end of";
	if (!bad && (bad = first_not((char *)obj - s->red_left_pad, s->red_left_pad, value)))
		*where = "before the start of";
	return bad;
}

/* ------------------------------------------------------------------------
 * Checks
 * ------------------------------------------------------------------------ */
bool debug_alloc_check(struct za_kmem_cache *s, void *obj, void *caller)
{
	const unsigned char *bad;
	const char *where;
	if (poisoned(s)) {
		bad = first_not(obj, s->object_size - 1, POISON_FREE);
		if (!bad && ((unsigned char *)obj)[s->object_size - 1] != POISON_END)
			bad = (unsigned char *)obj + s->object_size - 1;
		if (bad) {
			slab_report(s, obj, "write after free: object %p modified at offset %td "
				    "(byte 0x%02x) while free; it is taken out of use", obj,
				    bad - (unsigned char *)obj, *bad);
			return false;
		}
	}
	if ((s->debug & SLAB_RED_ZONE) && (bad = redzone_damage(s, obj, RED_INACTIVE, &where))) {
		slab_report(s, obj, "red zone %s free object %p overwritten (byte 0x%02x); it is "
			    "taken out of use", where, obj, *bad);
		return false;
	}
	set_redzones(s, obj, RED_ACTIVE);
	if (s->debug & SLAB_STORE_USER)
		set_track(s, obj, 0, caller);
	return true;
}

/*
 * F: is obj on the slab's free list already?  Each free pointer is checked
 * to be an object of the slab before it is followed: a write after free may
 * have replaced it.  A corrupted one is reported and ends the walk (the
 * rest of the list cannot be reached), so the answer is then "no".
 */
static bool on_free_list(struct za_kmem_cache *s, const struct za_page *slab, const void *obj,
			 void *free_head)
{
	unsigned int objects = slab_objects(slab), limit = objects;
	for (void *p = free_head; p && limit--;) {
		if (p == obj)
			return true;
		void *next = debug_get_freepointer(s, p);
		if (next && !object_in_slab(s, slab, next, objects)) {
			slab_report(s, p, "corrupted free pointer in free object %p (decodes to %p); "
				    "the double-free check of %p stops there", p, next, obj);
			return false;
		}
		p = next;
	}
	return false;
}

bool debug_free_check(struct za_kmem_cache *s, struct za_page *slab, void *obj, void *caller,
		      void *free_head)
{
	const unsigned char *bad;
	const char *where;
	za_lock_assert_held(s->mm, &s->node[slab_nid(s->mm, slab)].list_lock);
	if ((s->debug & SLAB_CONSISTENCY_CHECKS) && on_free_list(s, slab, obj, free_head)) {
		slab_report(s, obj, "double free of object %p", obj);
		return false;
	}
	if (s->debug & SLAB_RED_ZONE) {
		if (!first_not((char *)obj + s->object_size, s->inuse - s->object_size, RED_INACTIVE)) {
			slab_report(s, obj, "double free of object %p", obj);
			return false;
		}
		if ((bad = redzone_damage(s, obj, RED_ACTIVE, &where)))
			slab_report(s, obj, "write %s object %p: red zone byte at %p is 0x%02x, "
				    "expected 0x%02x", where, obj, bad, *bad, RED_ACTIVE);
	}
	set_redzones(s, obj, RED_INACTIVE);
	poison(s, obj);
	if (s->debug & SLAB_STORE_USER)
		set_track(s, obj, 1, caller);
	return true;
}
