/*
 * zabench record's two readers of the kernel's trace buffers: trace_pipe,
 * which the kernel formats as it is read (record.c), and, where libtracefs
 * was found, the per-CPU raw buffers, copied as they fill and formatted
 * after the command (record_raw.c).  Both write the same text layout.
 */
#ifndef ZABENCH_RECORD_H
#define ZABENCH_RECORD_H

#include "trace_write.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A reader drains the buffers this often.  A 16 MiB buffer holds some
 * 300k page events, a third of a second at the rates a build reaches on
 * one CPU, so 10 ms leaves a wide margin; waking on every event instead
 * would cost a wake-up for every few. */
#define DRAIN_MS 10

/* A reader's thread (reader_thread.c), and the pipe that tells it the
 * events are off. */
struct reader_thread {
	pthread_t tid;
	int stop[2];            /* written when the events are off */
};

/*
 * Runs fn(arg) in a thread that takes no signal meant for zabench or the
 * command (all blocked while it is created).  0; -1 with errno if the stop
 * pipe could not be made; or pthread_create's error, the pipe closed.
 */
int reader_thread_start(struct reader_thread *t, void *(*fn)(void *), void *arg);

/* In the thread: waits DRAIN_MS, or less once told to stop; true if told. */
bool reader_thread_wait(const struct reader_thread *t);

/* Tells the thread to stop, waits for it to end and closes the pipe. */
void reader_thread_stop(struct reader_thread *t);

/* What a reader wrote. */
struct record_counts {
	uint64_t events;        /* event lines */
	uint64_t lost;          /* the counts of the "CPU:n [LOST k EVENTS]" lines */
	uint64_t lost_markers;  /* those lines, with or without a count */
};

#ifdef ZA_RECORD_RAW
struct raw_capture;

/* Starts copying every CPU's raw buffer to temporary files, every
 * DRAIN_MS, in a thread of its own.  NULL with err on failure. */
struct raw_capture *raw_start(int nr_cpus, char *err, size_t errlen);

/* With the events off: copies what is left, stops the thread and loads
 * the processes' names.  0, or -1 if a read or write failed (printed). */
int raw_stop(struct raw_capture *c);

/* Writes the copied events to w as ftrace text, oldest first, with a
 * "CPU:n [LOST k EVENTS]" line where a buffer lost some; frees c.  0, or -1
 * if the copies could not be read back (printed). */
int raw_format(struct raw_capture *c, struct trace_writer *w, struct record_counts *n);
#endif

#endif
