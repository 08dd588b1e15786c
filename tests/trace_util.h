/*
 * What the trace reader's tests share: the text fixtures, files in a
 * scratch directory, the compressors the build has (to make .gz/.xz/.zst
 * variants at test time), and a whole trace read into memory with the
 * check of its events' order.
 */
#ifndef ZA_TRACE_UTIL_H
#define ZA_TRACE_UTIL_H

#include "test.h"
#include "trace.h"

#include <stdint.h>
#include <unistd.h>

#ifdef ZA_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef ZA_HAVE_LZMA
#include <lzma.h>
#endif
#ifdef ZA_HAVE_ZSTD
#include <zstd.h>
#endif

struct buf {
	char *p;
	size_t len;
};

/* The text traces in TRACES_DIR, one of each layout (trace.dat apart:
 * only a build with libtracecmd reads it). */
static const char *const fixtures[] = {
	"ftrace.txt", "trace-cmd.txt", "trace-cmd-latency.txt", "perf.txt", "record.txt",
};
#define NR_FIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

static char scratch_dir[64];

/* The scratch directory, made on first use; unlink_scratch removes it. */
static inline const char *scratch(const char *name, char *path, size_t size)
{
	if (!scratch_dir[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(scratch_dir, sizeof(scratch_dir), "%s/za-trace-XXXXXX", tmp ? tmp : "/tmp");
		CHECK(mkdtemp(scratch_dir));
	}
	snprintf(path, size, "%s/%s", scratch_dir, name);
	return path;
}

static inline void unlink_scratch(const char *const *names)
{
	char path[256];
	for (; *names; names++)
		unlink(scratch(*names, path, sizeof(path)));
	rmdir(scratch_dir);
}

static inline struct buf read_file(const char *path)
{
	struct buf b = { NULL, 0 };
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	CHECK(!fseek(f, 0, SEEK_END));
	long n = ftell(f);
	CHECK(n >= 0);
	rewind(f);
	b.p = malloc(n + 1);
	CHECK(b.p);
	b.len = fread(b.p, 1, n, f);
	CHECK(b.len == (size_t)n);
	fclose(f);
	return b;
}

static inline void write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(p, 1, len, f) == len);
	CHECK(!fclose(f));
}

/* The compressed formats, each with the suffix its files get. */
enum cfmt { C_GZ, C_XZ, C_ZST, NR_CFMT };

static inline const char *cfmt_name(enum cfmt c)
{
	return c == C_GZ ? "gzip" : c == C_XZ ? "xz" : "zstd";
}

static inline bool cfmt_built(enum cfmt c)
{
	switch (c) {
#ifdef ZA_HAVE_ZLIB
	case C_GZ: return true;
#endif
#ifdef ZA_HAVE_LZMA
	case C_XZ: return true;
#endif
#ifdef ZA_HAVE_ZSTD
	case C_ZST: return true;
#endif
	default: return false;
	}
}

/* in compressed as c, each format's integrity check on; cfmt_built(c). */
static inline struct buf compress_buf(enum cfmt c, const void *in, size_t len)
{
	struct buf b = { NULL, 0 };
	size_t cap = len + len / 2 + 1024;
	b.p = malloc(cap);
	CHECK(b.p);
	switch (c) {
#ifdef ZA_HAVE_ZLIB
	case C_GZ: {
		z_stream z = { 0 };
		CHECK(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
		z.next_in = (unsigned char *)in;
		z.avail_in = len;
		z.next_out = (unsigned char *)b.p;
		z.avail_out = cap;
		CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
		b.len = z.total_out;
		deflateEnd(&z);
		break;
	}
#endif
#ifdef ZA_HAVE_LZMA
	case C_XZ:
		CHECK(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, NULL, in, len,
					      (uint8_t *)b.p, &b.len, cap) == LZMA_OK);
		break;
#endif
#ifdef ZA_HAVE_ZSTD
	case C_ZST: {
		ZSTD_CCtx *cc = ZSTD_createCCtx();
		CHECK(cc);
		CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)));
		b.len = ZSTD_compress2(cc, b.p, cap, in, len);
		CHECK(!ZSTD_isError(b.len));
		ZSTD_freeCCtx(cc);
		break;
	}
#endif
	default:
		(void)in;
		CHECK(!"compressor not built");
	}
	return b;
}

/* A whole trace as read: its events, counts and how it ended. */
struct readout {
	int opened;                     /* 0: trace_open failed, err says why */
	int rc;                         /* trace_next's last: 0 or -1 */
	char err[1024];
	struct trace_event *ev;
	size_t n;
	uint64_t lines;
	uint64_t skipped[NR_TRACE_SKIP], first[NR_TRACE_SKIP];
	struct trace_header h;
	int nslabs;
	struct trace_slab slabs[16];
};

static inline void read_trace(const char *path, struct readout *o)
{
	memset(o, 0, sizeof(*o));
	struct trace_reader *r = trace_open(path, o->err, sizeof(o->err));
	if (!r)
		return;
	o->opened = 1;
	size_t cap = 0;
	struct trace_event ev;
	while ((o->rc = trace_next(r, &ev)) == 1) {
		if (o->n == cap) {
			cap = cap ? 2 * cap : 256;
			o->ev = realloc(o->ev, cap * sizeof(*o->ev));
			CHECK(o->ev);
		}
		o->ev[o->n++] = ev;
	}
	if (o->rc < 0)
		snprintf(o->err, sizeof(o->err), "%s", trace_error(r));
	o->lines = trace_lines(r);
	CHECK_EQ(trace_events(r), o->n);
	for (int i = 0; i < NR_TRACE_SKIP; i++)
		o->skipped[i] = trace_skipped(r, i, &o->first[i]);
	o->h = *trace_header(r);
	const struct trace_slab *slabs;
	o->nslabs = trace_slabs(r, &slabs);
	for (int i = 0; i < o->nslabs && i < 16; i++)
		o->slabs[i] = slabs[i];
	trace_close(r);
}

static inline uint64_t total_skipped(const struct readout *o)
{
	uint64_t n = 0;
	for (int i = 0; i < NR_TRACE_SKIP; i++)
		n += o->skipped[i];
	return n;
}

/* Timestamp order, ties in file order. */
static inline void check_order(const struct readout *o)
{
	for (size_t i = 1; i < o->n; i++)
		CHECK(o->ev[i - 1].ts_ns < o->ev[i].ts_ns ||
		      (o->ev[i - 1].ts_ns == o->ev[i].ts_ns && o->ev[i - 1].line < o->ev[i].line));
}

#endif
