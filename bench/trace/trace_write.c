/*
 * The trace file, compressed by its suffix.  Levels are the libraries'
 * fast ones (zstd 3, xz 0, gzip 1): the writer runs in the thread that
 * drains trace_pipe, and a slow one loses events.  `zstd -19` afterwards
 * makes a file to keep.
 */
#include "trace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef ZA_HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef ZA_HAVE_LZMA
#include <lzma.h>
#endif
#ifdef ZA_HAVE_ZLIB
#include <zlib.h>
#endif

#define ZSTD_LEVEL 3
#define XZ_PRESET 0
#define GZIP_LEVEL 1
/* The most one call hands a library: zlib counts in 32 bits. */
#define FEED_MAX (1u << 20)

enum codec { CODEC_PLAIN, CODEC_ZSTD, CODEC_XZ, CODEC_GZIP };

#ifdef ZA_HAVE_ZSTD
#define BUILT_ZSTD true
#else
#define BUILT_ZSTD false
#endif
#ifdef ZA_HAVE_LZMA
#define BUILT_XZ true
#else
#define BUILT_XZ false
#endif
#ifdef ZA_HAVE_ZLIB
#define BUILT_GZIP true
#else
#define BUILT_GZIP false
#endif

static const struct codec_def {
	const char *suffix;
	enum codec codec;
	const char *library, *package;
	bool built;
} codecs[] = {
	{ ".zst", CODEC_ZSTD, "libzstd", "libzstd-dev", BUILT_ZSTD },
	{ ".xz", CODEC_XZ, "liblzma", "liblzma-dev", BUILT_XZ },
	{ ".gz", CODEC_GZIP, "zlib", "zlib1g-dev", BUILT_GZIP },
};

struct trace_writer {
	int fd;
	enum codec codec;
	bool failed;
	uint64_t in, out;
	char error[256];
#ifdef ZA_HAVE_ZSTD
	ZSTD_CCtx *zstd;
#endif
#ifdef ZA_HAVE_LZMA
	lzma_stream xz;
#endif
#ifdef ZA_HAVE_ZLIB
	z_stream gz;
#endif
	unsigned char obuf[1 << 17];    /* compressed output on its way to fd */
};

/* Records the first failure; returns -1. */
__attribute__((format(printf, 2, 3)))
static int fail(struct trace_writer *w, const char *fmt, ...)
{
	if (!w->failed) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->error, sizeof(w->error), fmt, ap);
		va_end(ap);
	}
	w->failed = true;
	return -1;
}

size_t write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		done += (size_t)n;
	}
	return done;
}

/* Writes all of buf to the file; out counts what reached it. */
static int put(struct trace_writer *w, const void *buf, size_t len)
{
	size_t done = write_all(w->fd, buf, len);
	w->out += done;
	return done < len ? fail(w, "write: %s", strerror(errno)) : 0;
}

#ifdef ZA_HAVE_ZSTD
static int zstd_feed(struct trace_writer *w, const void *buf, size_t len, bool end)
{
	ZSTD_inBuffer in = { buf, len, 0 };
	for (;;) {
		ZSTD_outBuffer out = { w->obuf, sizeof(w->obuf), 0 };
		size_t left = ZSTD_compressStream2(w->zstd, &out, &in,
						   end ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(left))
			return fail(w, "zstd: %s", ZSTD_getErrorName(left));
		if (put(w, w->obuf, out.pos))
			return -1;
		if (end ? left == 0 : in.pos == in.size)
			return 0;
	}
}
#endif

#ifdef ZA_HAVE_LZMA
static int xz_feed(struct trace_writer *w, const void *buf, size_t len, bool end)
{
	w->xz.next_in = buf;
	w->xz.avail_in = len;
	for (;;) {
		w->xz.next_out = w->obuf;
		w->xz.avail_out = sizeof(w->obuf);
		lzma_ret r = lzma_code(&w->xz, end ? LZMA_FINISH : LZMA_RUN);
		if (r != LZMA_OK && r != LZMA_STREAM_END)
			return fail(w, "xz: error %d", (int)r);
		if (put(w, w->obuf, sizeof(w->obuf) - w->xz.avail_out))
			return -1;
		if (end ? r == LZMA_STREAM_END : w->xz.avail_in == 0)
			return 0;
	}
}
#endif

#ifdef ZA_HAVE_ZLIB
static int gz_feed(struct trace_writer *w, const void *buf, size_t len, bool end)
{
	w->gz.next_in = (unsigned char *)buf;   /* zlib does not write through it */
	w->gz.avail_in = (uInt)len;
	for (;;) {
		w->gz.next_out = w->obuf;
		w->gz.avail_out = sizeof(w->obuf);
		int r = deflate(&w->gz, end ? Z_FINISH : Z_NO_FLUSH);
		if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
			return fail(w, "gzip: error %d", r);
		if (put(w, w->obuf, sizeof(w->obuf) - w->gz.avail_out))
			return -1;
		if (end ? r == Z_STREAM_END : w->gz.avail_in == 0)
			return 0;
	}
}
#endif

/* Hands len (at most FEED_MAX) bytes to the codec; end finishes the stream. */
static int feed(struct trace_writer *w, const void *buf, size_t len, bool end)
{
	switch (w->codec) {
#ifdef ZA_HAVE_ZSTD
	case CODEC_ZSTD:
		return zstd_feed(w, buf, len, end);
#endif
#ifdef ZA_HAVE_LZMA
	case CODEC_XZ:
		return xz_feed(w, buf, len, end);
#endif
#ifdef ZA_HAVE_ZLIB
	case CODEC_GZIP:
		return gz_feed(w, buf, len, end);
#endif
	default:
		(void)end;      /* plain text has no end to write */
		return put(w, buf, len);
	}
}

/* Sets up the codec's stream; 0 or -1 with w->error set. */
static int codec_init(struct trace_writer *w)
{
	switch (w->codec) {
#ifdef ZA_HAVE_ZSTD
	case CODEC_ZSTD:
		if (!(w->zstd = ZSTD_createCCtx()))
			return fail(w, "zstd: out of memory");
		ZSTD_CCtx_setParameter(w->zstd, ZSTD_c_compressionLevel, ZSTD_LEVEL);
		ZSTD_CCtx_setParameter(w->zstd, ZSTD_c_checksumFlag, 1);
		return 0;
#endif
#ifdef ZA_HAVE_LZMA
	case CODEC_XZ:
		w->xz = (lzma_stream)LZMA_STREAM_INIT;
		if (lzma_easy_encoder(&w->xz, XZ_PRESET, LZMA_CHECK_CRC64) != LZMA_OK)
			return fail(w, "xz: cannot set up the encoder");
		return 0;
#endif
#ifdef ZA_HAVE_ZLIB
	case CODEC_GZIP:
		/* 15 + 16: a 32 KiB window, with the gzip header and trailer. */
		if (deflateInit2(&w->gz, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return fail(w, "gzip: cannot set up the encoder");
		return 0;
#endif
	default:
		return 0;
	}
}

static void codec_free(struct trace_writer *w)
{
	switch (w->codec) {
#ifdef ZA_HAVE_ZSTD
	case CODEC_ZSTD:
		ZSTD_freeCCtx(w->zstd);
		break;
#endif
#ifdef ZA_HAVE_LZMA
	case CODEC_XZ:
		lzma_end(&w->xz);
		break;
#endif
#ifdef ZA_HAVE_ZLIB
	case CODEC_GZIP:
		deflateEnd(&w->gz);
		break;
#endif
	default:
		break;
	}
}

/* The codec path's suffix names, or NULL for plain text. */
static const struct codec_def *codec_of(const char *path)
{
	size_t len = strlen(path);
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
		size_t sl = strlen(codecs[i].suffix);
		if (len > sl && !strcmp(path + len - sl, codecs[i].suffix))
			return &codecs[i];
	}
	return NULL;
}

struct trace_writer *trace_writer_open(const char *path, char *err, size_t errlen)
{
	const struct codec_def *c = codec_of(path);
	if (c && !c->built) {
		snprintf(err, errlen, "%s: writing %s needs %s, which this zabench was built "
			 "without (install %s and rebuild)", path, c->suffix, c->library,
			 c->package);
		return NULL;
	}
	struct trace_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->codec = c ? c->codec : CODEC_PLAIN;
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		free(w);
		return NULL;
	}
	if (codec_init(w)) {
		snprintf(err, errlen, "%s: %s", path, w->error);
		close(w->fd);
		free(w);
		return NULL;
	}
	return w;
}

int trace_writer_write(struct trace_writer *w, const void *buf, size_t len)
{
	const char *p = buf;
	w->in += len;
	while (len && !w->failed) {
		size_t n = len < FEED_MAX ? len : FEED_MAX;
		if (feed(w, p, n, false))
			break;
		p += n;
		len -= n;
	}
	return w->failed ? -1 : 0;
}

int trace_writer_printf(struct trace_writer *w, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return fail(w, "cannot format a header line");
	/* A line longer than the buffer is cut, but still ends in a newline. */
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	return trace_writer_write(w, line, (size_t)n);
}

int trace_writer_close(struct trace_writer *w, uint64_t *bytes_in, uint64_t *bytes_out)
{
	if (!w->failed)
		feed(w, NULL, 0, true);
	codec_free(w);
	if (close(w->fd))
		fail(w, "close: %s", strerror(errno));
	int rc = w->failed ? -1 : 0;
	if (rc)
		fprintf(stderr, "zabench record: writing the trace: %s\n", w->error);
	if (bytes_in)
		*bytes_in = w->in;
	if (bytes_out)
		*bytes_out = w->out;
	free(w);
	return rc;
}
