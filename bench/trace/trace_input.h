/*
 * A trace file as a stream of lines (trace_input.c): plain, or compressed
 * with gzip, xz or zstd, told apart by the file's first bytes, never by its
 * name.  Internal to the trace reader (trace_read.c).
 */
#ifndef ZABENCH_TRACE_INPUT_H
#define ZABENCH_TRACE_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* What a file's magic bytes say it is. */
enum trace_format {
	TFMT_PLAIN,             /* anything else: text, or not a trace at all */
	TFMT_GZIP,
	TFMT_XZ,
	TFMT_ZSTD,
	TFMT_DAT,               /* trace-cmd's binary trace.dat */
	TFMT_BZIP2,             /* recognised, to say it is not read */
	TFMT_LZ4,
	NR_TFMT
};

/* Longest line returned; longer ones are reported as TIN_LONG. */
#define TRACE_MAX_LINE (64 * 1024)

/* trace_input_line's results. */
enum {
	TIN_ERROR = -1,         /* read error, truncated or corrupt stream */
	TIN_END = 0,
	TIN_LINE = 1,
	TIN_LONG = 2,           /* a line over TRACE_MAX_LINE, skipped whole */
};

struct trace_input;

/* The file's format by its first bytes; -1 with a message if it cannot be read. */
int trace_input_sniff(const char *path, enum trace_format *fmt, char *err, size_t errlen);

/*
 * Opens path, whose format trace_input_sniff returned (not TFMT_DAT).  NULL
 * with a message on failure, including a format this build cannot read.
 */
struct trace_input *trace_input_open(const char *path, enum trace_format fmt,
				     char *err, size_t errlen);

/*
 * The next line, without its newline (nor a '\r' before it): valid until
 * the next call.  A last line without a newline is returned as one; one cut
 * by a truncated compressed stream is not (TIN_ERROR instead).
 */
int trace_input_line(struct trace_input *in, const char **line, size_t *len);

/* After TIN_ERROR: "FILE: line N: truncated zstd stream" and the like. */
const char *trace_input_error(const struct trace_input *in);

void trace_input_close(struct trace_input *in);

#endif
