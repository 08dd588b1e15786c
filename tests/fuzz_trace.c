/*
 * The trace reader fuzzed, deterministically: the fixtures mutated (bit
 * flips, cuts, inserted bytes, spliced and repeated lines, huge numbers,
 * overlong lines) go through trace_parse_line line by line, and through
 * trace_open/trace_next as files, plain or compressed, the compressed
 * bytes mutated too.  Nothing may crash or overrun (CI runs it under ASan
 * and UBSan), and the counts must add up: events + skipped <= lines, the
 * events in (timestamp, line) order.
 *
 * Usage: fuzz_trace TRACES_DIR [ITERATIONS [SEED]]
 */
#include "trace_util.h"

static struct buf texts[NR_FIXTURES];
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: the same run everywhere. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t below(size_t n)
{
	return n ? rnd() % n : 0;
}

/* Room for len more bytes at pos, moving the rest up. */
static char *open_gap(struct buf *b, size_t pos, size_t len)
{
	b->p = realloc(b->p, b->len + len + 1);
	CHECK(b->p);
	memmove(b->p + pos + len, b->p + pos, b->len - pos);
	b->len += len;
	return b->p + pos;
}

/* A random line of another fixture: [*start, *start + *len). */
static void pick_line(const struct buf *src, size_t *start, size_t *len)
{
	size_t s = below(src->len);
	while (s > 0 && src->p[s - 1] != '\n')
		s--;
	const char *nl = memchr(src->p + s, '\n', src->len - s);
	*start = s;
	*len = (nl ? (size_t)(nl - src->p) + 1 : src->len) - s;
}

static void mutate(struct buf *b)
{
	static const char alphabet[] = "0123456789abcdefx:=[]|. \n#-_()GFPkmem\0";
	size_t pos = below(b->len + 1);
	switch (below(8)) {
	case 0:                                         /* bit flips */
		for (int i = 0, n = 1 + below(8); i < n && b->len; i++)
			b->p[below(b->len)] ^= (char)(1 << below(8));
		break;
	case 1:                                         /* cut */
		b->len = pos;
		break;
	case 2: {                                       /* bytes inserted */
		size_t n = 1 + below(16);
		char *p = open_gap(b, pos, n);
		for (size_t i = 0; i < n; i++)
			p[i] = alphabet[below(sizeof(alphabet) - 1)];
		break;
	}
	case 3: {                                       /* a line of another fixture */
		const struct buf *src = &texts[below(NR_FIXTURES)];
		size_t s, n;
		pick_line(src, &s, &n);
		memcpy(open_gap(b, pos, n), src->p + s, n);
		break;
	}
	case 4: {                                       /* a stretch repeated */
		size_t s = below(b->len), n = below(b->len - s + 1) % 4096;
		char *copy = malloc(n + 1);
		memcpy(copy, b->p + s, n);
		memcpy(open_gap(b, pos, n), copy, n);
		free(copy);
		break;
	}
	case 5: {                                       /* a stretch deleted */
		size_t n = below(b->len - (pos < b->len ? pos : b->len) + 1) % 512;
		memmove(b->p + pos, b->p + pos + n, b->len - pos - n);
		b->len -= n;
		break;
	}
	case 6:                                         /* a huge number */
		memcpy(open_gap(b, pos, 24), "184467440737095516159999", 24);
		break;
	default:                                        /* rarely, an overlong line */
		if (!below(16))
			memset(open_gap(b, pos, 70000), 'a' + below(26), 70000);
		break;
	}
}

static void check_event(const struct trace_event *ev)
{
	CHECK((unsigned)ev->type < NR_TEV);
	CHECK(ev->cpu >= 0);
	CHECK(ev->order >= 0 && ev->order <= 63);
	CHECK(strnlen(ev->cache, sizeof(ev->cache)) < sizeof(ev->cache));
}

/* Every line on its own, in a buffer of its exact length. */
static void fuzz_lines(const struct buf *b)
{
	struct trace_header h = { 0 };
	struct trace_event ev;
	struct trace_slab slab;
	enum trace_skip why;
	for (size_t s = 0; s < b->len;) {
		const char *nl = memchr(b->p + s, '\n', b->len - s);
		size_t len = (nl ? (size_t)(nl - b->p) : b->len) - s;
		char *line = malloc(len ? len : 1);
		memcpy(line, b->p + s, len);
		int rc = trace_parse_line(line, len, &h, &ev, &why);
		CHECK(rc >= -1 && rc <= 1);
		if (rc < 0)
			CHECK((unsigned)why < NR_TRACE_SKIP);
		if (rc > 0)
			check_event(&ev);
		if (trace_parse_slabinfo(line, len, &slab) > 0)
			CHECK(strnlen(slab.name, sizeof(slab.name)) < sizeof(slab.name));
		CHECK(h.nr_zones >= 0 && h.nr_zones <= TRACE_MAX_ZONES);
		CHECK(h.zi_zone >= 0 && h.zi_zone <= TRACE_MAX_ZONES);
		CHECK(h.nr_cpus >= 0);
		free(line);
		s += len + 1;
	}
}

/* Through the reader, as a file: plain, or compressed (cmp < NR_CFMT),
 * the compressed bytes maybe mutated too. */
static void fuzz_file(const struct buf *b, int cmp)
{
	char path[256];
	struct readout o;
	scratch("fuzz", path, sizeof(path));
	if (cmp < NR_CFMT) {
		struct buf z = compress_buf(cmp, b->p, b->len);
		if (below(2))
			mutate(&z);
		write_file(path, z.p, z.len);
		free(z.p);
	} else {
		write_file(path, b->p, b->len);
	}
	read_trace(path, &o);
	if (!o.opened) {
		CHECK(o.err[0]);
		return;
	}
	CHECK(o.rc == 0 || o.rc == -1);
	CHECK(o.rc == 0 || o.err[0]);
	CHECK(o.n + total_skipped(&o) <= o.lines);
	for (size_t i = 0; i < o.n; i++) {
		check_event(&o.ev[i]);
		CHECK(o.ev[i].line >= 1 && o.ev[i].line <= o.lines);
	}
	check_order(&o);
	free(o.ev);
}

/* A fixture, or (one time in 8) 30 of them: more than a window's events. */
static struct buf pick_text(void)
{
	const struct buf *src = &texts[below(NR_FIXTURES)];
	int copies = below(8) ? 1 : 30;
	struct buf b = { malloc(copies * src->len + 1), copies * src->len };
	CHECK(b.p);
	for (int i = 0; i < copies; i++)
		memcpy(b.p + i * src->len, src->p, src->len);
	return b;
}

int main(int argc, char **argv)
{
	char path[512];
	if (argc < 2) {
		fprintf(stderr, "usage: %s TRACES_DIR [ITERATIONS [SEED]]\n", argv[0]);
		return 2;
	}
	long iterations = argc > 2 ? atol(argv[2]) : 4000;
	if (argc > 3)
		rng_state ^= strtoull(argv[3], NULL, 0) * 0x2545f4914f6cdd1dull | 1;
	for (size_t i = 0; i < NR_FIXTURES; i++) {
		snprintf(path, sizeof(path), "%s/%s", argv[1], fixtures[i]);
		texts[i] = read_file(path);
	}
	int cmp = 0;
	for (long it = 0; it < iterations; it++) {
		struct buf b = pick_text();
		for (int m = 0, n = 1 + below(4); m < n; m++)
			mutate(&b);
		fuzz_lines(&b);
		if (it % 4 == 0) {
			/* plain, then each compressed format built in, in turn */
			do
				cmp = (cmp + 1) % (NR_CFMT + 1);
			while (cmp < NR_CFMT && !cfmt_built(cmp));
			fuzz_file(&b, cmp);
		}
		free(b.p);
	}
	for (size_t i = 0; i < NR_FIXTURES; i++)
		free(texts[i].p);
	static const char *const files[] = { "fuzz", NULL };
	unlink_scratch(files);
	printf("fuzz_trace: %ld iterations, no crash, counts consistent\n", iterations);
	return 0;
}
