/*
 * One line of a kmem trace into an event: ftrace's, trace-cmd report's and
 * perf script's layouts, told apart within the line.  Every layout has
 *
 *	<comm>-<pid> or <comm> <pid> ... [<cpu>] ... <secs>.<frac>: [kmem:]<event>: <key>=<value> ...
 *
 * (trace-cmd -l: "<cpu><flags>" just before the timestamp instead of
 * "[<cpu>]"), so the parser finds the timestamp (the first "<digits>: "
 * preceded by a blank), takes the CPU just before it and the event just
 * after it, then the fields in any order.  Hand-written scanning: memchr
 * and digit loops only, no allocation, nothing kept between calls (the
 * "# zoneinfo" lines' place is in the header).
 */
#include "trace.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define TGFP_RECLAIM (TGFP_DIRECT_RECLAIM | TGFP_KSWAPD_RECLAIM)
#define TGFP_ALL (TGFP_DMA | TGFP_HIGHMEM | TGFP_DMA32 | TGFP_MOVABLE | TGFP_RECLAIMABLE | \
		  TGFP_HIGH | TGFP_IO | TGFP_FS | TGFP_ZERO | TGFP_RECLAIM | TGFP_COMP | \
		  TGFP_THISNODE | TGFP_ACCOUNT)

#define STRLEN(s) (sizeof(s) - 1)
/* [p, end) starts with the literal s. */
#define STARTS(p, end, s) ((size_t)((end) - (p)) >= STRLEN(s) && !memcmp(p, s, STRLEN(s)))

/*
 * The names read: each type's own at its index (EV_AT: by construction),
 * so that trace_event_name reads its row, then older kernels' for the same
 * events.  test_trace_parse's test_names finds a type left out.
 */
#define EV(name, type) { name, STRLEN(name), type }
#define EV_AT(type, name) [type] = EV(name, type)
static const struct {
	const char *name;
	size_t len;
	enum trace_event_type type;
} event_table[] = {
	EV_AT(TEV_PAGE_ALLOC, "mm_page_alloc"),
	EV_AT(TEV_PAGE_FREE, "mm_page_free"),
	EV_AT(TEV_PAGE_FREE_BATCHED, "mm_page_free_batched"),
	EV_AT(TEV_ZONE_LOCKED, "mm_page_alloc_zone_locked"),
	EV_AT(TEV_PCPU_DRAIN, "mm_page_pcpu_drain"),
	EV_AT(TEV_EXTFRAG, "mm_page_alloc_extfrag"),
	EV_AT(TEV_KMALLOC, "kmalloc"),
	EV_AT(TEV_KFREE, "kfree"),
	EV_AT(TEV_CACHE_ALLOC, "kmem_cache_alloc"),
	EV_AT(TEV_CACHE_FREE, "kmem_cache_free"),
	EV_AT(TEV_ZONE_LOCK_CONTENDED, "mm_zone_lock_contended"),
	EV_AT(TEV_ZONE_LOCK_LOCKED, "mm_zone_locked"),
	EV_AT(TEV_ZONE_LOCK_UNLOCK, "mm_zone_lock_unlock"),
	EV("kmalloc_node", TEV_KMALLOC),                /* before 6.1 */
	EV("kmem_cache_alloc_node", TEV_CACHE_ALLOC),   /* before 6.1 */
	EV("mm_page_free_direct", TEV_PAGE_FREE),       /* before 3.3 */
	/* before 3.3 a pagevec free was traced only as this, not also as
	 * mm_page_free_direct: a free of its own, not a repeat */
	EV("mm_pagevec_free", TEV_PAGE_FREE),
};

const char *trace_event_name(enum trace_event_type t)
{
	return (unsigned)t < NR_TEV ? event_table[t].name : "?";
}

int trace_event_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(event_table) / sizeof(event_table[0]); i++)
		if (event_table[i].len == len && !memcmp(event_table[i].name, name, len))
			return event_table[i].type;
	return -1;
}

/* ---- numbers ---- */

static inline unsigned digit(char c)
{
	return (unsigned)(unsigned char)c - '0';
}

/* Decimal [p, end) into *v: false if empty, not all digits, or over 64 bits. */
static bool parse_dec(const char *p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	if (p == end)
		return false;
	if (end - p < 20) {     /* 19 digits cannot overflow */
		for (; p < end; p++) {
			unsigned d = digit(*p);
			if (d > 9)
				return false;
			x = x * 10 + d;
		}
	} else {
		for (; p < end; p++) {
			unsigned d = digit(*p);
			if (d > 9 || x > (UINT64_MAX - d) / 10)
				return false;
			x = x * 10 + d;
		}
	}
	*v = x;
	return true;
}

/* Hex digits (no prefix) [p, end) into *v: at most 16. */
static bool parse_hex(const char *p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	if (p == end || end - p > 16)
		return false;
	for (; p < end; p++) {
		unsigned d = digit(*p);
		if (d > 9) {
			d = ((unsigned)(unsigned char)*p | 0x20) - 'a';
			if (d > 5)
				return false;
			d += 10;
		}
		x = x << 4 | d;
	}
	*v = x;
	return true;
}

/* "0x..." in hex, else decimal. */
static bool parse_num(const char *p, const char *end, uint64_t *v)
{
	if (end - p > 2 && p[0] == '0' && (p[1] | 0x20) == 'x')
		return parse_hex(p + 2, end, v);
	return parse_dec(p, end, v);
}

/* An int, maybe negative, within [lo, hi]. */
static bool parse_int(const char *p, const char *end, int lo, int hi, int *v)
{
	bool neg = p < end && *p == '-';
	uint64_t x;
	if (!parse_num(p + neg, end, &x) || x > (uint64_t)INT_MAX)
		return false;
	int i = neg ? -(int)x : (int)x;
	if (i < lo || i > hi)
		return false;
	*v = i;
	return true;
}

/* ---- gfp flags ---- */

/* Sorted by bytes (memcmp, then the shorter first): binary searched. */
#define GFP_NAME(name, bits) { name, STRLEN(name), bits }
static const struct {
	const char *name;
	size_t len;
	uint32_t bits;
} gfp_names[] = {
	GFP_NAME("GFP_ATOMIC", TGFP_HIGH | TGFP_KSWAPD_RECLAIM),
	GFP_NAME("GFP_DMA", TGFP_DMA),
	GFP_NAME("GFP_DMA32", TGFP_DMA32),
	GFP_NAME("GFP_HIGHUSER", TGFP_RECLAIM | TGFP_IO | TGFP_FS | TGFP_HIGHMEM),
	GFP_NAME("GFP_HIGHUSER_MOVABLE", TGFP_RECLAIM | TGFP_IO | TGFP_FS | TGFP_HIGHMEM | TGFP_MOVABLE),
	GFP_NAME("GFP_IOFS", TGFP_IO | TGFP_FS),
	GFP_NAME("GFP_KERNEL", TGFP_RECLAIM | TGFP_IO | TGFP_FS),
	GFP_NAME("GFP_KERNEL_ACCOUNT", TGFP_RECLAIM | TGFP_IO | TGFP_FS | TGFP_ACCOUNT),
	GFP_NAME("GFP_NOFS", TGFP_RECLAIM | TGFP_IO),
	GFP_NAME("GFP_NOIO", TGFP_RECLAIM),
	GFP_NAME("GFP_NOWAIT", TGFP_KSWAPD_RECLAIM),
	GFP_NAME("GFP_TEMPORARY", TGFP_RECLAIM | TGFP_IO | TGFP_FS | TGFP_RECLAIMABLE),
	GFP_NAME("GFP_TRANSHUGE", TGFP_IO | TGFP_FS | TGFP_HIGHMEM | TGFP_MOVABLE | TGFP_COMP |
		 TGFP_DIRECT_RECLAIM),
	GFP_NAME("GFP_TRANSHUGE_LIGHT", TGFP_IO | TGFP_FS | TGFP_HIGHMEM | TGFP_MOVABLE | TGFP_COMP),
	GFP_NAME("GFP_USER", TGFP_RECLAIM | TGFP_IO | TGFP_FS),
	GFP_NAME("__GFP_ACCOUNT", TGFP_ACCOUNT),
	GFP_NAME("__GFP_ATOMIC", 0),
	GFP_NAME("__GFP_COLD", 0),
	GFP_NAME("__GFP_COMP", TGFP_COMP),
	GFP_NAME("__GFP_DIRECT_RECLAIM", TGFP_DIRECT_RECLAIM),
	GFP_NAME("__GFP_DMA", TGFP_DMA),
	GFP_NAME("__GFP_DMA32", TGFP_DMA32),
	GFP_NAME("__GFP_FS", TGFP_FS),
	GFP_NAME("__GFP_HARDWALL", 0),
	GFP_NAME("__GFP_HIGH", TGFP_HIGH),
	GFP_NAME("__GFP_HIGHMEM", TGFP_HIGHMEM),
	GFP_NAME("__GFP_IO", TGFP_IO),
	GFP_NAME("__GFP_KMEMCG", 0),
	GFP_NAME("__GFP_KSWAPD_RECLAIM", TGFP_KSWAPD_RECLAIM),
	GFP_NAME("__GFP_MEMALLOC", 0),
	GFP_NAME("__GFP_MOVABLE", TGFP_MOVABLE),
	GFP_NAME("__GFP_NOACCOUNT", 0),
	GFP_NAME("__GFP_NOFAIL", 0),
	GFP_NAME("__GFP_NOLOCKDEP", 0),
	GFP_NAME("__GFP_NOMEMALLOC", 0),
	GFP_NAME("__GFP_NORETRY", 0),
	GFP_NAME("__GFP_NOTRACK", 0),
	GFP_NAME("__GFP_NOTRACK_FALSE_POSITIVE", 0),
	GFP_NAME("__GFP_NOWARN", 0),
	GFP_NAME("__GFP_NO_OBJ_EXT", 0),
	GFP_NAME("__GFP_OTHER_NODE", 0),
	GFP_NAME("__GFP_RECLAIM", TGFP_RECLAIM),
	GFP_NAME("__GFP_RECLAIMABLE", TGFP_RECLAIMABLE),
	GFP_NAME("__GFP_REPEAT", 0),
	GFP_NAME("__GFP_RETRY_MAYFAIL", 0),
	GFP_NAME("__GFP_SKIP_KASAN", 0),
	GFP_NAME("__GFP_SKIP_KASAN_POISON", 0),
	GFP_NAME("__GFP_SKIP_KASAN_UNPOISON", 0),
	GFP_NAME("__GFP_SKIP_ZERO", 0),
	GFP_NAME("__GFP_THISNODE", TGFP_THISNODE),
	GFP_NAME("__GFP_UNMAPPED", 0),
	GFP_NAME("__GFP_WAIT", TGFP_DIRECT_RECLAIM),      /* before 4.4: may sleep */
	GFP_NAME("__GFP_WRITE", 0),
	GFP_NAME("__GFP_ZERO", TGFP_ZERO),
	GFP_NAME("__GFP_ZEROTAGS", 0),
	GFP_NAME("none", 0),
};
#define NR_GFP_NAMES (sizeof(gfp_names) / sizeof(gfp_names[0]))

static int name_cmp(const char *p, size_t n, size_t i)
{
	size_t m = n < gfp_names[i].len ? n : gfp_names[i].len;
	int c = memcmp(p, gfp_names[i].name, m);
	return c ? c : (n > gfp_names[i].len) - (n < gfp_names[i].len);
}

/* The table's index of [p, p + n), or -1. */
static int gfp_lookup(const char *p, size_t n)
{
	size_t lo = 0, hi = NR_GFP_NAMES;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = name_cmp(p, n, mid);
		if (!c)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/*
 * A name not in the table: a flag of another kernel (ignored) if it looks
 * like one, unless it is the start of a known name: a line cut short.
 */
static bool unknown_flag_ok(const char *p, size_t n)
{
	if (!STARTS(p, p + n, "GFP_") && !STARTS(p, p + n, "__GFP_"))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '_'))
			return false;
	for (size_t i = 0; i < NR_GFP_NAMES; i++)
		if (gfp_names[i].len > n && !memcmp(gfp_names[i].name, p, n))
			return false;
	return true;
}

uint32_t trace_gfp_bits(uint64_t kernel_gfp)
{
	return (uint32_t)kernel_gfp & TGFP_ALL;
}

/* One of the '|'-separated parts: a name, or a number (the bits the
 * kernel had no name for, or the whole value). */
static bool gfp_part(const char *p, const char *end, uint32_t *gfp)
{
	uint64_t x;
	if (p < end && digit(*p) <= 9) {
		if (!parse_num(p, end, &x))
			return false;
		*gfp |= trace_gfp_bits(x);
		return true;
	}
	int i = gfp_lookup(p, end - p);
	if (i >= 0) {
		*gfp |= gfp_names[i].bits;
		return true;
	}
	return unknown_flag_ok(p, end - p);
}

int trace_parse_gfp(const char *s, size_t len, uint32_t *gfp)
{
	const char *end = s + len;
	uint32_t g = 0;
	for (const char *p = s;;) {
		const char *bar = memchr(p, '|', end - p);
		if (!bar)
			bar = end;
		if (bar == p || !gfp_part(p, bar, &g))
			return -1;
		if (bar == end)
			break;
		p = bar + 1;
	}
	*gfp = g;
	return 0;
}

/* ---- the event's fields ---- */

enum field {
	F_NONE, F_PAGE, F_PFN, F_ORDER, F_MT, F_GFP, F_REFILL, F_AORDER, F_FORDER,
	F_AMT, F_FMT, F_FRAG, F_CHOWN, F_PTR, F_REQ, F_ALLOC, F_NAME, F_CONTENDED, F_PBORDER,
};
#define B(f) (1u << (f))

/* The fields each event needs.  An allocation that failed (page=(null))
 * needs no pfn. */
static const unsigned required[NR_TEV] = {
	[TEV_PAGE_ALLOC] = B(F_PFN) | B(F_ORDER) | B(F_GFP),
	[TEV_PAGE_FREE] = B(F_PFN) | B(F_ORDER),
	[TEV_PAGE_FREE_BATCHED] = B(F_PFN),
	[TEV_ZONE_LOCKED] = B(F_PFN) | B(F_ORDER),
	[TEV_PCPU_DRAIN] = B(F_PFN) | B(F_ORDER),
	[TEV_EXTFRAG] = B(F_PFN) | B(F_AORDER) | B(F_FORDER) | B(F_AMT) | B(F_FMT) | B(F_FRAG) |
			B(F_CHOWN),
	[TEV_KMALLOC] = B(F_PTR) | B(F_REQ) | B(F_ALLOC) | B(F_GFP),
	[TEV_KFREE] = B(F_PTR),
	[TEV_CACHE_ALLOC] = B(F_PTR) | B(F_REQ) | B(F_ALLOC) | B(F_GFP),
	[TEV_CACHE_FREE] = B(F_PTR),
	[TEV_ZONE_LOCK_LOCKED] = B(F_CONTENDED),
};

static enum field field_id(const char *k, size_t n)
{
#define KEY(s) (n == STRLEN(s) && !memcmp(k, s, STRLEN(s)))
	switch (n) {
	case 3: return KEY("pfn") ? F_PFN : KEY("ptr") ? F_PTR : F_NONE;
	case 4: return KEY("page") ? F_PAGE : KEY("name") ? F_NAME : F_NONE;
	case 5: return KEY("order") ? F_ORDER : F_NONE;
	case 9: return KEY("gfp_flags") ? F_GFP : KEY("bytes_req") ? F_REQ :
		       KEY("contended") ? F_CONTENDED : F_NONE;
	case 11:
		return KEY("migratetype") ? F_MT : KEY("alloc_order") ? F_AORDER :
		       KEY("bytes_alloc") ? F_ALLOC : KEY("fragmenting") ? F_FRAG : F_NONE;
	case 13: return KEY("percpu_refill") ? F_REFILL : F_NONE;
	case 14: return KEY("fallback_order") ? F_FORDER : F_NONE;
	case 15: return KEY("pageblock_order") ? F_PBORDER : F_NONE;
	case 16: return KEY("change_ownership") ? F_CHOWN : F_NONE;
	case 17: return KEY("alloc_migratetype") ? F_AMT : F_NONE;
	case 20: return KEY("fallback_migratetype") ? F_FMT : F_NONE;
	default: return F_NONE;
	}
#undef KEY
}

/* A NULL pointer as %p prints it: "(null)", "(nil)", or zeros. */
static bool null_ptr(const char *p, const char *end)
{
	if (STARTS(p, end, "(null)") || STARTS(p, end, "(nil)"))
		return true;
	if (STARTS(p, end, "0x"))
		p += 2;
	for (; p < end; p++)
		if (*p != '0')
			return false;
	return true;
}

/* A pointer: hex with or without 0x (%p prints it hashed, without). */
static bool parse_ptr(const char *p, const char *end, uint64_t *v)
{
	if (null_ptr(p, end)) {
		*v = 0;
		return true;
	}
	if (STARTS(p, end, "0x"))
		p += 2;
	return parse_hex(p, end, v);
}

static bool parse_u32(const char *p, const char *end, uint32_t *v)
{
	uint64_t x;
	if (!parse_num(p, end, &x) || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* One field's value [p, end) into *ev; false if it does not parse. */
static bool parse_field(enum field f, const char *p, const char *end, struct trace_event *ev,
			bool *page_null, int *pageblock_order)
{
	switch (f) {
	case F_PAGE:
		*page_null = null_ptr(p, end);
		return p < end;
	case F_PFN: return parse_num(p, end, &ev->pfn);
	case F_ORDER: case F_AORDER: return parse_int(p, end, 0, 63, &ev->order);
	case F_FORDER: return parse_int(p, end, 0, 63, &ev->fallback_order);
	case F_MT: case F_AMT: return parse_int(p, end, -1, 255, &ev->migratetype);
	case F_FMT: return parse_int(p, end, -1, 255, &ev->fallback_migratetype);
	case F_REFILL: return parse_int(p, end, 0, 1, &ev->percpu_refill);
	case F_FRAG: return parse_int(p, end, 0, 63, &ev->fragmenting);
	case F_PBORDER: return parse_int(p, end, 0, 63, pageblock_order);
	case F_CHOWN: return parse_int(p, end, 0, 1, &ev->change_ownership);
	case F_GFP: return !trace_parse_gfp(p, end - p, &ev->gfp);
	case F_PTR: return parse_ptr(p, end, &ev->ptr);
	case F_REQ: return parse_u32(p, end, &ev->bytes_req);
	case F_ALLOC: return parse_u32(p, end, &ev->bytes_alloc);
	case F_CONTENDED: return parse_int(p, end, 0, 1, &ev->contended);
	case F_NAME: {
		size_t n = (size_t)(end - p) < sizeof(ev->cache) ? (size_t)(end - p) : sizeof(ev->cache) - 1;
		memcpy(ev->cache, p, n);
		ev->cache[n] = '\0';
		return n > 0;
	}
	default: return true;
	}
}

/*
 * The "key=value" fields after the event's name, blank-separated, in any
 * order; words without '=' (trace-cmd's "(call_site+0x10)", a module's
 * "[name]") and unknown keys are passed over.  -1 and *why if a known
 * field does not parse, there are no fields at all (a line cut short), or
 * one the event needs is absent.
 */
static int parse_fields(const char *p, const char *end, struct trace_event *ev,
			enum trace_skip *why)
{
	unsigned seen = 0, nfields = 0;
	bool page_null = false;
	int pageblock_order = -1;
	while (p < end) {
		if (*p == ' ') {
			p++;
			continue;
		}
		const char *word_end = memchr(p, ' ', end - p);
		if (!word_end)
			word_end = end;
		const char *eq = memchr(p, '=', word_end - p);
		if (eq) {
			enum field f = field_id(p, eq - p);
			nfields++;
			if (f != F_NONE && !parse_field(f, eq + 1, word_end, ev, &page_null, &pageblock_order)) {
				*why = SKIP_MALFORMED;
				return -1;
			}
			seen |= B(f);
		}
		p = word_end;
	}
	if (page_null && (ev->type == TEV_PAGE_ALLOC || ev->type == TEV_ZONE_LOCKED)) {
		ev->pfn = TRACE_NO_PFN;
		seen |= B(F_PFN);
	}
	if (ev->type == TEV_PAGE_FREE_BATCHED)
		ev->order = 0;
	/* The kernel prints fragmenting as fallback_order < pageblock_order;
	 * libtraceevent (trace-cmd report) cannot evaluate that and prints
	 * fallback_order instead.  So the comparison is made here, with
	 * x86-64's pageblock order if the line has none. */
	if (ev->type == TEV_EXTFRAG &&
	    (pageblock_order >= 0 || ev->fragmenting > 1 || ev->fragmenting == ev->fallback_order))
		ev->fragmenting = ev->fallback_order <
				  (pageblock_order >= 0 ? pageblock_order : TRACE_PAGEBLOCK_ORDER);
	if (!nfields) {
		*why = SKIP_MALFORMED;
		return -1;
	}
	if ((seen & required[ev->type]) != required[ev->type]) {
		*why = SKIP_MISSING_FIELD;
		return -1;
	}
	return 1;
}

/* ---- the line's prefix ---- */

/*
 * The timestamp ending at colon: "<secs>[.<frac>]" preceded by a blank or
 * the line's start; *start is its first character.  A clock without a
 * fraction (counter, x86-tsc) is taken as ns.
 */
static bool parse_ts(const char *line, const char *colon, uint64_t *ns, const char **start)
{
	const char *s = colon, *dot = NULL;
	while (s > line && (digit(s[-1]) <= 9 || s[-1] == '.')) {
		if (s[-1] == '.') {
			if (dot)
				return false;
			dot = s - 1;
		}
		s--;
	}
	if ((s > line && s[-1] != ' ') || s == colon || s == dot)
		return false;
	uint64_t secs, frac = 0;
	*start = s;
	if (!dot)
		return parse_dec(s, colon, ns);
	size_t nfrac = colon - dot - 1;
	if (dot - s > 10 || nfrac > 9 || !parse_dec(s, dot, &secs) ||
	    (nfrac && !parse_dec(dot + 1, colon, &frac)))
		return false;
	for (size_t i = nfrac; i < 9; i++)
		frac *= 10;
	*ns = secs * 1000000000u + frac;
	return true;
}

/*
 * The CPU before the timestamp at ts: trace-cmd -l's "<cpu><flags>" word
 * just before it, else the last "[<cpu>]" before it, else none (perf
 * script without -a): CPU_UNNAMED.  -1 if the brackets hold no number.
 */
#define CPU_UNNAMED (-2)
static int parse_cpu(const char *line, const char *ts)
{
	const char *e = ts, *b, *rb, *lb;
	uint64_t cpu;
	while (e > line && e[-1] == ' ')
		e--;
	for (b = e; b > line && b[-1] != ' '; b--)
		;
	if (b < e && digit(*b) <= 9) {
		const char *d = b;
		while (d < e && digit(*d) <= 9)
			d++;
		/* The irqs-off flag, never a digit, follows the CPU. */
		if (d < e && memchr(".dDXb", *d, 5))
			return parse_dec(b, d, &cpu) && cpu < (1u << 20) ? (int)cpu : -1;
	}
	rb = memrchr(line, ']', e - line);
	if (!rb)
		return CPU_UNNAMED;
	for (lb = rb; lb > line && lb[-1] != '['; lb--)
		;
	if (lb == line || !parse_dec(lb, rb, &cpu) || cpu >= (1u << 20))
		return -1;
	return (int)cpu;
}

/* A page event printed with nothing like a time before it ("<digits>:"),
 * as perf script -F without time prints them; not one whose time is
 * garbled, which is malformed. */
static bool page_event_untimed(const char *p, const char *end)
{
	const char *ev = memmem(p, end - p, "mm_page_", 8);
	if (!ev || !memmem(ev, end - ev, "pfn=", 4))
		return false;
	for (const char *c = p + 1; c < ev; c++)
		if (*c == ':' && digit(c[-1]) <= 9)
			return false;
	return true;
}

/* A line with no timestamp: a marker of lost events, a trace-cmd report
 * line that is no event, a page event printed without its time, or
 * nothing known. */
static int parse_other(const char *p, const char *end, struct trace_header *h,
		       enum trace_skip *why)
{
	uint64_t n;
	if ((memmem(p, end - p, "LOST", 4) && memmem(p, end - p, "EVENTS", 6)) ||
	    memmem(p, end - p, "EVENTS DROPPED", 14) || STARTS(p, end, "PERF_RECORD_LOST")) {
		*why = SKIP_LOST_EVENTS;
		return -1;
	}
	if (page_event_untimed(p, end)) {
		*why = SKIP_UNTIMED;
		return -1;
	}
	if (STARTS(p, end, "cpus=")) {
		if (!parse_dec(p + 5, end, &n) || !n || n > (1u << 20))
			goto malformed;
		if (!h->nr_cpus)
			h->nr_cpus = (int)n;
		return 0;
	}
	if (STARTS(p, end, "version = ") ||
	    (STARTS(p, end, "CPU") && end - p >= 8 && !memcmp(end - 8, "is empty", 8)))
		return 0;
malformed:
	*why = SKIP_MALFORMED;
	return -1;
}

/* [p, end) past its first word and the blanks after it. */
static const char *next_word(const char *p, const char *end)
{
	while (p < end && *p != ' ')
		p++;
	while (p < end && *p == ' ')
		p++;
	return p;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && *p == ' ')
		p++;
	return p;
}

/* ---- header lines ---- */

/* Where the "# zoneinfo" lines are within a zone (zi_part). */
enum { ZI_ZONE, ZI_CPU0, ZI_CPUS };

/* "Node 0, zone   Normal": a new zone, in the slot after the populated
 * ones until its "managed" line shows it is populated too. */
static void zoneinfo_node(const char *p, const char *end, struct trace_header *h)
{
	uint64_t node;
	const char *comma = memchr(p, ',', end - p);
	h->zi_zone = 0;
	if (!comma || !parse_dec(skip_blanks(p + 4, comma), comma, &node) || node > INT_MAX)
		return;
	if (h->nr_zones >= TRACE_MAX_ZONES) {
		h->zones_dropped++;
		return;
	}
	const char *name = skip_blanks(comma + 1, end);
	if (!STARTS(name, end, "zone "))
		return;
	name = skip_blanks(name + 5, end);
	struct trace_zone *z = &h->zones[h->nr_zones];
	memset(z, 0, sizeof(*z));
	z->node = (int)node;
	size_t n = (size_t)(end - name) < sizeof(z->name) ? (size_t)(end - name) : sizeof(z->name) - 1;
	memcpy(z->name, name, n);
	h->zi_zone = h->nr_zones + 1;
	h->zi_part = ZI_ZONE;
}

/* The other lines of a zone: "<key> <number>" or "<key>: <number>". */
static void zoneinfo_value(const char *key, const char *end, struct trace_header *h)
{
	struct trace_zone *z = &h->zones[h->zi_zone - 1];
	const char *val = next_word(key, end), *vend = val;
	size_t klen = (size_t)(val - key);
	uint64_t v;
	while (vend < end && *vend != ' ')
		vend++;
	while (klen && key[klen - 1] == ' ')
		klen--;
#define ZKEY(s) (klen == STRLEN(s) && !memcmp(key, s, STRLEN(s)))
	if (!parse_dec(val, vend, &v))
		return;
	int iv = v > INT_MAX ? INT_MAX : (int)v;
	if (ZKEY("cpu:")) {
		h->zi_part = h->zi_part == ZI_ZONE ? ZI_CPU0 : ZI_CPUS;
		h->zi_cpu = iv;
		if (iv < INT_MAX && iv + 1 > z->nr_pagesets)
			z->nr_pagesets = iv + 1;
		return;
	}
	if (h->zi_part != ZI_ZONE && h->zi_cpu < TRACE_PCP_CPUS && (ZKEY("count:") || ZKEY("high:"))) {
		(ZKEY("count:") ? z->pcp_count : z->pcp_high)[h->zi_cpu] = iv;
		return;
	}
	if (ZKEY("spanned"))
		z->spanned = v;
	else if (ZKEY("present"))
		z->present = v;
	else if (ZKEY("managed")) {
		z->managed = v;
		if (v && h->zi_zone == h->nr_zones + 1)
			h->nr_zones++;
	} else if (ZKEY("min"))
		z->min = v;
	else if (ZKEY("low"))
		z->low = v;
	else if (ZKEY("high"))
		z->high = v;
	else if (ZKEY("start_pfn:"))
		z->start_pfn = v;
	else if (h->zi_part != ZI_CPU0)
		return;
	else if (ZKEY("batch:"))
		z->batch = iv;
	else if (ZKEY("high_min:"))
		z->high_min = iv;
	else if (ZKEY("high_max:"))
		z->high_max = iv;
#undef ZKEY
}

static void parse_zoneinfo(const char *p, const char *end, struct trace_header *h)
{
	p = skip_blanks(p, end);
	h->present = true;
	if (STARTS(p, end, "Node "))
		zoneinfo_node(p, end, h);
	else if (h->zi_zone)
		zoneinfo_value(p, end, h);
}

static const char *const sysctl_names[NR_TRACE_SYSCTLS] = {
	[TS_HIGH_FRACTION] = "vm.percpu_pagelist_high_fraction",
	[TS_MIN_FREE_KBYTES] = "vm.min_free_kbytes",
	[TS_WATERMARK_SCALE_FACTOR] = "vm.watermark_scale_factor",
	[TS_WATERMARK_BOOST_FACTOR] = "vm.watermark_boost_factor",
};

const char *trace_sysctl_name(enum trace_sysctl s)
{
	return sysctl_names[s];
}

/* What a "KEY VALUE" or "KEY = VALUE" line is. */
enum sysctl_line { SYSCTL_OTHER, SYSCTL_READ, SYSCTL_BAD_VALUE, SYSCTL_NOT_ONE };

/* A dotted key of letters, digits and _-/. */
static bool sysctl_key(const char *key, const char *kend)
{
	if (kend == key || !memchr(key, '.', kend - key))
		return false;
	for (const char *c = key; c < kend; c++)
		if (!(*c == '.' || *c == '_' || *c == '-' || *c == '/' || digit(*c) <= 9 ||
		      (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			return false;
	return true;
}

/* The sysctls the mirror reads are kept; others, whatever their value
 * (`sysctl -a` prints some empty), passed over. */
static enum sysctl_line parse_sysctl(const char *p, const char *end, struct trace_header *h)
{
	const char *key = skip_blanks(p, end), *kend = key;
	uint64_t n;
	while (kend < end && *kend != ' ' && *kend != '=')
		kend++;
	const char *val = skip_blanks(kend, end);
	bool equals = val < end && *val == '=';
	if (equals)
		val = skip_blanks(val + 1, end);
	while (end > val && end[-1] == ' ')
		end--;
	if (!sysctl_key(key, kend) || (val == end && !equals))
		return SYSCTL_NOT_ONE;
	for (int i = 0; i < NR_TRACE_SYSCTLS; i++) {
		size_t len = strlen(sysctl_names[i]);
		if ((size_t)(kend - key) != len || memcmp(key, sysctl_names[i], len))
			continue;
		if (!parse_dec(val, end, &n))
			return SYSCTL_BAD_VALUE;
		h->sysctl_known[i] = true;
		h->sysctl[i] = n > INT64_MAX ? INT64_MAX : (int64_t)n;
		return SYSCTL_READ;
	}
	return SYSCTL_OTHER;
}

/* The digits at p, up to end or the first other character: false if none. */
static bool parse_dec_prefix(const char **p, const char *end, uint64_t *v)
{
	const char *e = *p;
	while (e < end && digit(*e) <= 9)
		e++;
	bool ok = parse_dec(*p, e, v);
	*p = e;
	return ok;
}

/*
 * The tracefs "trace" file's header, "entries-in-buffer/entries-written:
 * 93865/93865   #P:2": the CPUs (for a trace without nr_cpus), and, when
 * the buffer holds fewer events than were written, a marker of the ones
 * the ring buffer overwrote.
 */
static int parse_entries(const char *p, const char *end, struct trace_header *h,
			 enum trace_skip *why)
{
	uint64_t held, written, cpus;
	p = skip_blanks(p, end);
	if (!parse_dec_prefix(&p, end, &held) || p == end || *p++ != '/' ||
	    !parse_dec_prefix(&p, end, &written))
		return 0;
	const char *at = memmem(p, end - p, "#P:", 3);
	if (at && (at += 3, parse_dec_prefix(&at, end, &cpus)) && cpus && cpus <= (1u << 20) &&
	    !h->nr_cpus)
		h->nr_cpus = (int)cpus;
	if (held < written) {
		*why = SKIP_LOST_EVENTS;
		return -1;
	}
	return 0;
}

/* A line starting with '#': the header's, ftrace's "##### CPU n buffer
 * started ####" (what came before on that CPU was lost) and "trace"
 * file's header, /proc/zoneinfo behind "# ", or a comment. */
static int parse_hash(const char *p, const char *end, struct trace_header *h,
		      enum trace_skip *why)
{
	uint64_t n;
	if (STARTS(p, end, "#####") && memmem(p, end - p, "buffer started", 14)) {
		*why = SKIP_LOST_EVENTS;
		return -1;
	}
	if (STARTS(p, end, "# entries-in-buffer/entries-written:"))
		return parse_entries(p + STRLEN("# entries-in-buffer/entries-written:"), end, h, why);
	if (STARTS(p, end, "# zoneinfo ")) {
		parse_zoneinfo(p + STRLEN("# zoneinfo "), end, h);
	} else if (STARTS(p, end, "# Node ") || (h->zi_zone && STARTS(p, end, "#  "))) {
		parse_zoneinfo(p + 1, end, h);
	} else if (STARTS(p, end, "# nr_cpus ")) {
		p = skip_blanks(p + STRLEN("# nr_cpus "), end);
		while (end > p && end[-1] == ' ')
			end--;
		if (parse_dec(p, end, &n) && n && n <= (1u << 20)) {
			h->nr_cpus = (int)n;
			h->present = true;
		}
	} else if (STARTS(p, end, "# excerpt ")) {
		/* excerpt.py's "... from event line N: ...": past the first? */
		const char *from = memmem(p, end - p, "from event line ", 16), *e = from;
		while (from && e < end && *e != ':')
			e++;
		h->zoneinfo_later = from && !(parse_dec(from + 16, e, &n) && n == 1);
	} else if (STARTS(p, end, "# sysctl ")) {
		parse_sysctl(p + STRLEN("# sysctl "), end, h);
	} else if (STARTS(p, end, "# uname ")) {
		p = skip_blanks(p + STRLEN("# uname "), end);
		size_t len = (size_t)(end - p) < sizeof(h->uname) ? (size_t)(end - p) : sizeof(h->uname) - 1;
		memcpy(h->uname, p, len);
		h->uname[len] = '\0';
	}
	return 0;
}

/* ---- files recorded beside a trace ---- */

/* NULL for a line of the file, or why it is not one. */
typedef const char *(*line_fn)(const char *line, const char *end, struct trace_header *h);

/* Each line of the file through fn; the first it refuses is named. */
static int read_lines(const char *path, line_fn fn, struct trace_header *h, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t nr = 0;
	int rc = 0;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	errno = 0;
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		nr++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		const char *why = fn(line, line + len, h);
		if (why) {
			snprintf(err, errlen, "%s:%llu: %s: \"%.*s\"", path, (unsigned long long)nr, why,
				 (int)(len < 60 ? len : 60), line);
			rc = -1;
		}
	}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		rc = -1;
	}
	free(line);
	fclose(f);
	return rc;
}

/* Lines of /proc/zoneinfo: "Node N, zone NAME", then indented ones. */
static const char *zoneinfo_line(const char *p, const char *end, struct trace_header *h)
{
	if (p == end)
		return NULL;
	if (STARTS(p, end, "Node "))
		zoneinfo_node(p, end, h);
	else if (*p != ' ' || !h->zi_zone)
		return "not a line of /proc/zoneinfo";
	else
		zoneinfo_value(skip_blanks(p, end), end, h);
	if (h->zones_dropped)
		return "more zones than zonealloc reads (16 populated)";
	return h->zi_zone ? NULL : "not a line of /proc/zoneinfo";
}

int trace_read_zoneinfo(const char *path, struct trace_header *h, char *err, size_t errlen)
{
	struct trace_header read = { 0 };
	if (read_lines(path, zoneinfo_line, &read, err, errlen))
		return -1;
	if (!read.nr_zones) {
		snprintf(err, errlen, "%s: no populated zone (no \"managed\" above 0): not /proc/zoneinfo",
			 path);
		return -1;
	}
	h->nr_zones = read.nr_zones;
	memcpy(h->zones, read.zones, sizeof(h->zones));
	h->zi_zone = 0;
	h->present = true;
	return 0;
}

static const char *sysctl_line(const char *p, const char *end, struct trace_header *h)
{
	if (skip_blanks(p, end) == end)
		return NULL;
	switch (parse_sysctl(p, end, h)) {
	case SYSCTL_NOT_ONE:
		return "not a line of `sysctl -a` (KEY = VALUE)";
	case SYSCTL_BAD_VALUE:
		return "not a number, for a key the replay reads";
	default:
		return NULL;
	}
}

int trace_read_sysctl(const char *path, struct trace_header *h, char *err, size_t errlen)
{
	return read_lines(path, sysctl_line, h, err, errlen);
}

int trace_release(const struct trace_header *h)
{
	int major, minor;
	return sscanf(h->uname, "%d.%d", &major, &minor) == 2 && major >= 0 && major < 1000 &&
	       minor >= 0 && minor < 1000 ? major * 1000 + minor : 0;
}

int trace_alloc_migratetype(const struct trace_event *ev)
{
	return ev->migratetype >= 0 ? ev->migratetype :
	       ev->gfp & TGFP_MOVABLE ? 1 : ev->gfp & TGFP_RECLAIMABLE ? 2 : 0;
}

int trace_parse_slabinfo(const char *line, size_t len, struct trace_slab *s)
{
	const char *end = line + len, *p = line, *w;
	uint64_t v[5];
	if (!STARTS(p, end, "# slabinfo "))
		return -1;
	p = skip_blanks(p + STRLEN("# slabinfo "), end);
	if (p == end || *p == '#' || STARTS(p, end, "slabinfo - "))
		return 0;
	w = next_word(p, end);
	size_t n = (size_t)(w - p);
	while (n && p[n - 1] == ' ')
		n--;
	if (n >= sizeof(s->name))
		return -1;
	memcpy(s->name, p, n);
	s->name[n] = '\0';
	for (int i = 0; i < 5; i++) {
		const char *e = w;
		while (e < end && *e != ' ')
			e++;
		if (!parse_dec(w, e, &v[i]))
			return -1;
		w = skip_blanks(e, end);
	}
	if (v[2] > UINT32_MAX || v[3] > UINT32_MAX || v[4] > UINT32_MAX)
		return -1;
	s->active_objs = v[0];
	s->num_objs = v[1];
	s->objsize = (uint32_t)v[2];
	s->objperslab = (uint32_t)v[3];
	s->pagesperslab = (uint32_t)v[4];
	return 1;
}

/* ---- the line ---- */

/* The first ": " whose word before it is a timestamp; NULL if none. */
static const char *find_ts(const char *line, const char *end, uint64_t *ns, const char **ts)
{
	const char *c = line;
	while ((c = memchr(c, ':', end - c))) {
		if (c + 1 < end && c[1] == ' ' && parse_ts(line, c, ns, ts))
			return c;
		c++;
	}
	return NULL;
}

static void event_defaults(struct trace_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->migratetype = -1;
	ev->percpu_refill = -1;
}

int trace_parse_line(const char *line, size_t len, struct trace_header *h,
		     struct trace_event *ev, enum trace_skip *why)
{
	const char *end = line + len, *p = skip_blanks(line, end), *ts, *colon;
	uint64_t ns;
	if (p == end)
		return 0;
	if (*p == '#')
		return parse_hash(p, end, h, why);
	colon = find_ts(line, end, &ns, &ts);
	if (!colon && !h->events_begun && (STARTS(p, end, "Node ") || (h->zi_zone && p > line))) {
		parse_zoneinfo(p, end, h);      /* /proc/zoneinfo as it is */
		return 0;
	}
	if (!colon)
		return parse_other(p, end, h, why);
	h->zi_zone = 0;
	h->events_begun = true;
	event_defaults(ev);
	ev->ts_ns = ns;
	ev->cpu = parse_cpu(line, ts);
	if (ev->cpu == CPU_UNNAMED) {
		h->cpu_unnamed = true;
		ev->cpu = 0;
	}
	/* The event: after perf's period or trace-cmd --ts-diff's "(+N)" if
	 * either printed one, maybe "kmem:". */
	p = skip_blanks(colon + 1, end);
	if (p < end && digit(*p) <= 9) {
		while (p < end && digit(*p) <= 9)
			p++;
		p = skip_blanks(p, end);
	} else if (end - p > 2 && p[0] == '(' && p[1] == '+') {
		const char *close = memchr(p, ')', end - p);
		p = close ? skip_blanks(close + 1, end) : p;
	}
	const char *name_end = memchr(p, ' ', end - p);
	if (!name_end)
		name_end = end;
	if (ev->cpu < 0 || name_end - p < 2 || name_end[-1] != ':') {
		*why = SKIP_MALFORMED;
		return -1;
	}
	if (name_end - p > 6 && !memcmp(p, "kmem:", 5))
		p += STRLEN("kmem:");
	int type = trace_event_lookup(p, name_end - 1 - p);
	if (type < 0) {
		*why = SKIP_UNKNOWN_EVENT;
		return -1;
	}
	ev->type = (enum trace_event_type)type;
	return parse_fields(name_end, end, ev, why);
}

int trace_pfn_zone(const struct trace_header *h, uint64_t pfn)
{
	for (int i = 0; i < h->nr_zones; i++)
		if (pfn >= h->zones[i].start_pfn && pfn - h->zones[i].start_pfn < h->zones[i].spanned)
			return i;
	return -1;
}
