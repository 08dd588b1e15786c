/*
 * The trace file `zabench record` writes: plain text, or compressed by the
 * file's name (.zst, .xz, .gz) at a level fast enough to keep up with the
 * tracepoints, since the writer runs in the thread that drains trace_pipe.
 */
#ifndef ZABENCH_TRACE_WRITE_H
#define ZABENCH_TRACE_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct trace_writer;

/*
 * Creates path (truncating it).  NULL on failure, with a message in err:
 * the file cannot be created, or its suffix needs a compression library
 * this build lacks (the message names the package).
 */
struct trace_writer *trace_writer_open(const char *path, char *err, size_t errlen);

/* 0, or -1 after which the writer only counts: trace_writer_close prints why. */
int trace_writer_write(struct trace_writer *w, const void *buf, size_t len);
int trace_writer_printf(struct trace_writer *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Ends the compressed stream and closes the file; 0, or -1 if anything
 * failed since the open (the message is printed on stderr).  Frees w. */
int trace_writer_close(struct trace_writer *w, uint64_t *bytes_in, uint64_t *bytes_out);

/* Writes buf to fd, again after a signal or a short write: the bytes
 * written, len unless a write failed (errno says why). */
size_t write_all(int fd, const void *buf, size_t len);

#endif
