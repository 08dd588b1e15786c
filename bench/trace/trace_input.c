/*
 * Trace files as lines: read(2) in large chunks, through zlib, liblzma or
 * libzstd when the magic bytes say so (each optional at build time), split
 * at '\n' in place.  Memory is fixed: one line buffer and one buffer of
 * compressed input, whatever the file's length.
 */
#include "trace_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

enum {
	BUF_SIZE = 4 * TRACE_MAX_LINE,  /* decompressed text, lines cut from it */
	READ_MIN = TRACE_MAX_LINE,      /* free room worth a read(2) */
	ZIN_SIZE = 128 * 1024,          /* compressed input */
};

struct trace_input {
	int fd;
	enum trace_format fmt;
	/*
	 * buf[start, end) is text not yet returned; a line is returned in
	 * place.  skipping: the line at start is over TRACE_MAX_LINE and is
	 * being dropped up to its newline.
	 */
	char *buf;
	size_t start, end;
	bool eof, skipping;
	uint64_t lineno;
	/* Compressed input, zin[zpos, zlen) not yet consumed; zeof at its end. */
	unsigned char *zin;
	size_t zpos, zlen;
	bool zeof;
	/* The decoder is at a clean end: of a gzip member, of the xz
	 * streams, between zstd frames with all output flushed. */
	bool zdone;
	/* It failed (the stream is cut short, or corrupt: zdetail). */
	bool zfailed, ztruncated;
	const char *zdetail;
#ifdef ZA_HAVE_ZLIB
	z_stream gz;
#endif
#ifdef ZA_HAVE_LZMA
	lzma_stream xz;
#endif
#ifdef ZA_HAVE_ZSTD
	ZSTD_DStream *zs;
#endif
	char *path;
	char err[512];
};

/* The formats' names, and the library and Debian package each needs. */
static const struct {
	const char *name, *lib, *pkg;
} fmt_info[NR_TFMT] = {
	[TFMT_PLAIN] = { "plain", NULL, NULL },
	[TFMT_GZIP] = { "gzip", "zlib", "zlib1g-dev" },
	[TFMT_XZ] = { "xz", "liblzma", "liblzma-dev" },
	[TFMT_ZSTD] = { "zstd", "libzstd", "libzstd-dev" },
	[TFMT_DAT] = { "trace.dat", NULL, NULL },         /* trace_dat.c reads it */
	[TFMT_BZIP2] = { "bzip2", NULL, NULL },
	[TFMT_LZ4] = { "lz4", NULL, NULL },
};

static const struct {
	enum trace_format fmt;
	const char *magic;
	size_t len;
} magics[] = {
	{ TFMT_GZIP, "\x1f\x8b", 2 },
	{ TFMT_XZ, "\xfd" "7zXZ\0", 6 },
	{ TFMT_ZSTD, "\x28\xb5\x2f\xfd", 4 },
	{ TFMT_DAT, "\x17\x08\x44tracing", 10 },
	{ TFMT_BZIP2, "BZh", 3 },
	{ TFMT_LZ4, "\x04\x22\x4d\x18", 4 },
};

static void set_err(struct trace_input *in, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "FILE: line N: ..." where N is the line being read when it failed. */
static void set_err(struct trace_input *in, const char *fmt, ...)
{
	int n = snprintf(in->err, sizeof(in->err), "%s: line %llu: ", in->path,
			 (unsigned long long)in->lineno + 1);
	if (n < 0 || (size_t)n >= sizeof(in->err))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(in->err + n, sizeof(in->err) - n, fmt, ap);
	va_end(ap);
}

int trace_input_sniff(const char *path, enum trace_format *fmt, char *err, size_t errlen)
{
	unsigned char head[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	ssize_t n = read(fd, head, sizeof(head));
	int saved = errno;
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(saved));
		return -1;
	}
	*fmt = TFMT_PLAIN;
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
		if ((size_t)n >= magics[i].len && !memcmp(head, magics[i].magic, magics[i].len))
			*fmt = magics[i].fmt;
	return 0;
}

/* The decoder's error, now that the text before it is used up. */
static ssize_t report_stream_error(struct trace_input *in)
{
	if (in->ztruncated)
		set_err(in, "truncated %s stream", fmt_info[in->fmt].name);
	else
		set_err(in, "corrupt %s stream (%s)", fmt_info[in->fmt].name, in->zdetail);
	return -1;
}

/* The file's next bytes, plain text or compressed; -1 (set_err) on error. */
static ssize_t file_read(struct trace_input *in, void *dst, size_t cap)
{
	ssize_t n;
	do
		n = read(in->fd, dst, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		set_err(in, "read error: %s", strerror(errno));
	return n;
}

#if defined(ZA_HAVE_ZLIB) || defined(ZA_HAVE_LZMA) || defined(ZA_HAVE_ZSTD)
/* Reads the next compressed chunk into zin; false on a read error. */
static bool zin_fill(struct trace_input *in)
{
	ssize_t n = file_read(in, in->zin, ZIN_SIZE);
	if (n < 0)
		return false;
	in->zpos = 0;
	in->zlen = n;
	in->zeof = n == 0;
	return true;
}

/* A stream error after done bytes of text: those are returned first. */
static ssize_t stream_error(struct trace_input *in, bool truncated, const char *detail,
			    size_t done)
{
	in->zfailed = true;
	in->ztruncated = truncated;
	in->zdetail = detail;
	return done ? (ssize_t)done : report_stream_error(in);
}
#endif

/*
 * Each decoder: up to cap bytes of text into dst; the count, 0 at the
 * stream's clean end, -1 with the message set (or, for a stream error
 * after some text, the text now and the error at the next call).  They
 * consume zin and refill it only when the decoder can make no progress
 * without more input.
 */
#ifdef ZA_HAVE_ZLIB
static bool gz_init(struct trace_input *in)
{
	/* 15 + 16: a gzip header and trailer around deflate data. */
	return inflateInit2(&in->gz, 15 + 16) == Z_OK;
}

/* Concatenated members (pigz, cat a.gz b.gz) are one stream. */
static ssize_t gz_read(struct trace_input *in, char *dst, size_t cap)
{
	z_stream *z = &in->gz;
	z->next_out = (unsigned char *)dst;
	z->avail_out = cap;
	while (z->avail_out == cap) {
		if (in->zpos == in->zlen) {
			if (!zin_fill(in))
				return -1;
			if (in->zeof && in->zdone)
				return 0;
		}
		if (in->zdone) {
			inflateReset(z);
			in->zdone = false;
		}
		z->next_in = in->zin + in->zpos;
		z->avail_in = in->zlen - in->zpos;
		int ret = inflate(z, Z_NO_FLUSH);
		in->zpos = in->zlen - z->avail_in;
		if (ret == Z_STREAM_END) {
			in->zdone = true;
		} else if (ret == Z_BUF_ERROR || (ret == Z_OK && z->avail_out == cap)) {
			if (in->zeof)
				return stream_error(in, true, NULL, cap - z->avail_out);
		} else if (ret != Z_OK) {
			return stream_error(in, false, z->msg ? z->msg : "zlib error",
					    cap - z->avail_out);
		}
	}
	return cap - z->avail_out;
}

static void gz_end(struct trace_input *in)
{
	inflateEnd(&in->gz);
}
#endif

#ifdef ZA_HAVE_LZMA
static bool xz_init(struct trace_input *in)
{
	lzma_stream init = LZMA_STREAM_INIT;
	in->xz = init;
	return lzma_stream_decoder(&in->xz, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK;
}

static const char *xz_strerror(lzma_ret ret)
{
	switch (ret) {
	case LZMA_MEM_ERROR: return "out of memory";
	case LZMA_FORMAT_ERROR: return "not in the xz format";
	case LZMA_OPTIONS_ERROR: return "unsupported options";
	case LZMA_DATA_ERROR: return "compressed data is corrupt";
	default: return "liblzma error";
	}
}

/* LZMA_CONCATENATED: at the input's end LZMA_FINISH tells a clean end
 * (LZMA_STREAM_END) from a cut one (LZMA_BUF_ERROR, no progress). */
static ssize_t xz_read(struct trace_input *in, char *dst, size_t cap)
{
	lzma_stream *s = &in->xz;
	s->next_out = (uint8_t *)dst;
	s->avail_out = cap;
	while (s->avail_out == cap && !in->zdone) {
		if (in->zpos == in->zlen && !in->zeof && !zin_fill(in))
			return -1;
		s->next_in = in->zin + in->zpos;
		s->avail_in = in->zlen - in->zpos;
		lzma_ret ret = lzma_code(s, in->zeof ? LZMA_FINISH : LZMA_RUN);
		in->zpos = in->zlen - s->avail_in;
		if (ret == LZMA_STREAM_END) {
			in->zdone = true;
		} else if (ret == LZMA_BUF_ERROR) {
			return stream_error(in, true, NULL, cap - s->avail_out);
		} else if (ret != LZMA_OK) {
			return stream_error(in, false, xz_strerror(ret), cap - s->avail_out);
		}
	}
	return cap - s->avail_out;
}

static void xz_end(struct trace_input *in)
{
	lzma_end(&in->xz);
}
#endif

#ifdef ZA_HAVE_ZSTD
static bool zs_init(struct trace_input *in)
{
	in->zs = ZSTD_createDStream();
	return in->zs && !ZSTD_isError(ZSTD_initDStream(in->zs));
}

/* Consecutive frames are one stream; it may end only between frames,
 * where ZSTD_decompressStream has returned 0 (after which, given no
 * input, it asks for the next frame's header). */
static ssize_t zs_read(struct trace_input *in, char *dst, size_t cap)
{
	ZSTD_outBuffer out = { dst, cap, 0 };
	while (out.pos == 0) {
		if (in->zpos == in->zlen && !in->zeof && !zin_fill(in))
			return -1;
		if (in->zpos == in->zlen && in->zeof && in->zdone)
			return 0;
		ZSTD_inBuffer src = { in->zin, in->zlen, in->zpos };
		size_t ret = ZSTD_decompressStream(in->zs, &out, &src);
		in->zpos = src.pos;
		if (ZSTD_isError(ret))
			return stream_error(in, false, ZSTD_getErrorName(ret), out.pos);
		in->zdone = !ret;
		if (out.pos == 0 && in->zeof && in->zpos == in->zlen) {
			if (!ret)
				return 0;
			return stream_error(in, true, NULL, 0);
		}
	}
	return out.pos;
}

static void zs_end(struct trace_input *in)
{
	ZSTD_freeDStream(in->zs);
}
#endif

static ssize_t decode(struct trace_input *in, char *dst, size_t cap)
{
	if (in->zfailed)
		return report_stream_error(in);
	switch (in->fmt) {
#ifdef ZA_HAVE_ZLIB
	case TFMT_GZIP: return gz_read(in, dst, cap);
#endif
#ifdef ZA_HAVE_LZMA
	case TFMT_XZ: return xz_read(in, dst, cap);
#endif
#ifdef ZA_HAVE_ZSTD
	case TFMT_ZSTD: return zs_read(in, dst, cap);
#endif
	default: return file_read(in, dst, cap);
	}
}

/* Sets up the decoder; false if this build has none for the format. */
static bool decoder_init(struct trace_input *in, char *err, size_t errlen)
{
	bool ok;
	switch (in->fmt) {
	case TFMT_PLAIN: return true;
#ifdef ZA_HAVE_ZLIB
	case TFMT_GZIP: ok = gz_init(in); break;
#endif
#ifdef ZA_HAVE_LZMA
	case TFMT_XZ: ok = xz_init(in); break;
#endif
#ifdef ZA_HAVE_ZSTD
	case TFMT_ZSTD: ok = zs_init(in); break;
#endif
	default:
		if (fmt_info[in->fmt].lib)
			snprintf(err, errlen, "%s is %s-compressed but this zabench was built without %s "
				 "(Debian: apt-get install %s, then rebuild)", in->path,
				 fmt_info[in->fmt].name, fmt_info[in->fmt].lib, fmt_info[in->fmt].pkg);
		else
			snprintf(err, errlen, "%s is %s-compressed, which zabench does not read: "
				 "decompress it, or recompress it with zstd, xz or gzip", in->path,
				 fmt_info[in->fmt].name);
		return false;
	}
	if (!ok)
		snprintf(err, errlen, "%s: cannot set up the %s decoder (out of memory?)", in->path,
			 fmt_info[in->fmt].name);
	in->zdone = false;
	return ok;
}

static void decoder_end(struct trace_input *in)
{
	switch (in->fmt) {
#ifdef ZA_HAVE_ZLIB
	case TFMT_GZIP: gz_end(in); break;
#endif
#ifdef ZA_HAVE_LZMA
	case TFMT_XZ: xz_end(in); break;
#endif
#ifdef ZA_HAVE_ZSTD
	case TFMT_ZSTD: zs_end(in); break;
#endif
	default: break;
	}
}

struct trace_input *trace_input_open(const char *path, enum trace_format fmt,
				     char *err, size_t errlen)
{
	struct trace_input *in = calloc(1, sizeof(*in));
	if (!in) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	in->fd = -1;
	in->fmt = fmt;
	if (!(in->buf = malloc(BUF_SIZE)) || !(in->zin = malloc(ZIN_SIZE)) ||
	    !(in->path = strdup(path))) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	in->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (in->fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!decoder_init(in, err, errlen))
		goto fail;
	return in;
fail:
	/* The decoders' end functions accept a zeroed or failed stream. */
	decoder_end(in);
	if (in->fd >= 0)
		close(in->fd);
	free(in->path);
	free(in->zin);
	free(in->buf);
	free(in);
	return NULL;
}

/*
 * More text after buf[end]: the unreturned text moved to the front first
 * when little room is left.  0 at the end of the text, -1 on an error.
 */
static int refill(struct trace_input *in)
{
	if (BUF_SIZE - in->end < READ_MIN) {
		memmove(in->buf, in->buf + in->start, in->end - in->start);
		in->end -= in->start;
		in->start = 0;
	}
	ssize_t n = decode(in, in->buf + in->end, BUF_SIZE - in->end);
	if (n <= 0)
		return (int)n;
	in->end += n;
	return 1;
}

/* Hands out buf[start, stop) as a line, less a '\r' at its end; the
 * next one starts at next. */
static int take_line(struct trace_input *in, size_t stop, size_t next,
		     const char **line, size_t *len)
{
	*line = in->buf + in->start;
	*len = stop - in->start;
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	in->start = next;
	in->lineno++;
	return TIN_LINE;
}

int trace_input_line(struct trace_input *in, const char **line, size_t *len)
{
	for (;;) {
		char *p = in->buf + in->start;
		char *nl = memchr(p, '\n', in->end - in->start);
		if (in->skipping) {
			in->start = nl ? (size_t)(nl - in->buf) + 1 : in->end;
			if (nl) {
				in->skipping = false;
				in->lineno++;
				return TIN_LONG;
			}
		} else if (nl) {
			size_t stop = nl - in->buf;
			return take_line(in, stop, stop + 1, line, len);
		} else if (in->end - in->start >= TRACE_MAX_LINE) {
			in->skipping = true;
			continue;
		}
		if (in->eof)
			break;
		int got = refill(in);
		if (got < 0)
			return TIN_ERROR;
		in->eof = got == 0;
	}
	/* The text ended without a newline after its last line. */
	if (in->skipping) {
		in->skipping = false;
		in->lineno++;
		return TIN_LONG;
	}
	if (in->start < in->end)
		return take_line(in, in->end, in->end, line, len);
	return TIN_END;
}

const char *trace_input_error(const struct trace_input *in)
{
	return in->err;
}

void trace_input_close(struct trace_input *in)
{
	if (!in)
		return;
	decoder_end(in);
	close(in->fd);
	free(in->path);
	free(in->zin);
	free(in->buf);
	free(in);
}
