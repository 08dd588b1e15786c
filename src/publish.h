#ifndef ZA_PUBLISH_H
#define ZA_PUBLISH_H

/*
 * The published segment (publish=1): /dev/shm/zonealloc.<pid>.<n>, mode
 * 0600, the n-th published system of process pid.  Layout version 1:
 *
 *   struct pub_header                 at 0, header_size bytes
 *   names   [names_len]               nr_stats NUL-terminated counter names
 *   kinds   [nr_stats]                enum za_stat_kind of each
 *   values  [nr_stats] int64_t        at values_off (8-aligned)
 *   reports [reports_cap]             report i's text at report[i].off, len
 *
 * The names and kinds are written once, when the segment is made; the
 * values and reports at each publish, between two stores of seq: odd while
 * they change, even when they are whole.  A reader copies what it needs
 * and takes it only if seq was the same even value before and after.
 * Everything in it is the writer's word only: a reader checks each size,
 * offset and string against the segment's own size before using it.
 *
 * The writer holds a shared flock on the file while the segment is live
 * (its descriptor is close-on-exec): one nobody holds is a leftover.
 *
 * Reports take the most of a publish, so they are written only while
 * someone watches: a reader sets the segment file's access time (its own,
 * as the owner may), and a publish within PUB_WATCH_S of that renders them.
 */
#include <stdatomic.h>
#include <stdint.h>

#define PUB_MAGIC "zapub\0\0\0"
#define PUB_VERSION 1
#define PUB_MAX_REPORTS 8
#define PUB_MAX_STATS 4096
#define PUB_REPORTS_CAP (1u << 20)
#define PUB_WATCH_S 10
#define PUB_PREFIX "zonealloc."

struct pub_report {
	char name[16];
	uint32_t off, len;
};

struct pub_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;           /* sizeof(struct pub_header) */
	uint64_t segment_size;
	int32_t pid;
	uint32_t uid;
	uint64_t start_time;            /* the process's, clock ticks after boot (proc(5)) */
	uint32_t system;                /* n of the name */
	uint32_t nr_stats;
	uint32_t names_off, names_len;
	uint32_t kinds_off, values_off;
	uint32_t reports_off, reports_cap;
	char comm[32];
	char config[1024];              /* za_mm_config_string, cut to fit */
	_Atomic uint64_t seq;
	uint64_t time_ns;               /* CLOCK_REALTIME of the publish */
	uint64_t publishes;
	uint64_t reports_time_ns;       /* of the publish that wrote the reports; 0: never */
	uint32_t nr_reports;
	uint32_t pad;
	struct pub_report report[PUB_MAX_REPORTS];
};

struct za_mm;

/* mm_init.c: with publish=1, the segment and (publish_interval_ms > 0)
 * the publisher thread; 0, or -1 with errno and the last error set. */
int publish_init(struct za_mm *mm);
/* Stops the thread and removes the segment (only in the process that
 * made it: a forked child leaves its parent's alone). */
void publish_exit(struct za_mm *mm);

/* The segment's name removed, in the process that made it: for a system
 * that lives until the process ends (the malloc's, at exit). */
void publish_unlink(struct za_mm *mm);

/* In a forked child: a publish the parent had under way is no one's. */
void publish_after_fork(struct za_mm *mm);

/* Opens the segment file `name` of dir for reading: never blocking (the
 * name may be anyone's FIFO), and, when it is ours, without setting its
 * access time (only a reader's deliberate mark says "watched"). */
int pub_open(int dir, const char *name);

/* What the file `name` of dir, named for process pid, is: not a regular
 * file of ours (or unreadable); a live segment; or a leftover -- nobody
 * holds its writer's lock, and it is whole (its writer locks it before the
 * magic goes in) or its process is gone -- which is removed, if the name
 * is still that file (an exec'd writer may have made a new one).  *h gets
 * its header, as far as it reads. */
enum pub_file { PUB_FOREIGN, PUB_LIVE, PUB_REMOVED };
enum pub_file pub_check(int dir, const char *name, int pid, struct pub_header *h);

/* The start time of process pid (proc(5) field 22), 0 if it is gone. */
uint64_t pub_process_start(int pid);

#endif /* ZA_PUBLISH_H */
