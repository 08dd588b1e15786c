/*
 * Publishing (publish=1) and reading it from another process (za_peek_*):
 * exact counts and reports equal to the writer's own, stale segments
 * removed, corrupt, truncated, mid-update and foreign segments refused
 * with a message.  INTERNAL: the misuse cases write segments by the
 * layout of src/publish.h.
 */
#include "test.h"
#include "publish.h"

#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define QUIET_PUBLISHED "memory=64M,kswapd=0,vmstat_interval_ms=0,publish=1,publish_interval_ms=0"
#define PAGES 37
#define OBJECTS 501

static void put(int fd, const void *buf, size_t len)
{
	CHECK_EQ(write(fd, buf, len), (long long)len);
}

static void get(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		CHECK(n > 0);
		got += (size_t)n;
	}
}

/* A report of the writer's, sent whole: its length, then its text. */
static void send_report(int fd, za_mm_t *mm, const char *what)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f && !za_report(mm, what, f));
	fclose(f);
	put(fd, &len, sizeof(len));
	put(fd, text, len);
	free(text);
}

static char *receive_report(int fd)
{
	size_t len;
	get(fd, &len, sizeof(len));
	char *text = malloc(len + 1);
	CHECK(text);
	get(fd, text, len);
	text[len] = '\0';
	return text;
}

static long long slab_events(const za_peek_t *p, const char *what)
{
	char fast[64], slow[64];
	snprintf(fast, sizeof(fast), "slab_%s_fastpath", what);
	snprintf(slow, sizeof(slow), "slab_%s_slowpath", what);
	return za_peek_stat(p, fast) + za_peek_stat(p, slow);
}

/* The child's side: a system, then on each byte from the parent a step
 * (allocate, free), a publish, and its own view sent back. */
static void writer(int cmd, int reply)
{
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	za_cache_t *cache = za_cache_create(mm, "published-objects", 200, 0, 0, NULL);
	CHECK(cache);
	void *pages[PAGES], *objs[OBJECTS];
	char step;
	put(reply, "r", 1);
	while (read(cmd, &step, 1) == 1) {
		for (int i = 0; step == 'a' && i < PAGES; i++)
			CHECK((pages[i] = za_alloc_pages(mm, ZA_GFP_KERNEL, 0)));
		for (int i = 0; step == 'a' && i < OBJECTS; i++)
			CHECK((objs[i] = za_cache_alloc(cache, ZA_GFP_KERNEL)));
		for (int i = 0; step == 'f' && i < PAGES; i++)
			CHECK(!za_free_pages(mm, pages[i], 0));
		for (int i = 0; step == 'f' && i < OBJECTS; i++)
			CHECK(!za_cache_free(cache, objs[i]));
		CHECK(!za_publish(mm));
		long long allocated = za_stat(mm, "nr_allocated_pages");
		put(reply, &allocated, sizeof(allocated));
		send_report(reply, mm, "slabinfo");
		send_report(reply, mm, "buddyinfo");
	}
	_exit(0);
}

struct child {
	pid_t pid;
	int cmd, reply;
};

static struct child start_writer(void)
{
	int to[2], from[2];
	CHECK(!pipe(to) && !pipe(from));
	struct child c = { .pid = fork() };
	CHECK(c.pid >= 0);
	if (!c.pid) {
		close(to[1]);
		close(from[0]);
		writer(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	c.cmd = to[1];
	c.reply = from[0];
	char ready;
	get(c.reply, &ready, 1);
	return c;
}

static void stop_writer(struct child *c)
{
	close(c->cmd);
	int status;
	CHECK(waitpid(c->pid, &status, 0) == c->pid && WIFEXITED(status) && !WEXITSTATUS(status));
	close(c->reply);
}

/* One step of the child; the parent's read of it beside the child's own,
 * and the objects allocated and freed in the step counted exactly. */
static void step_and_compare(struct child *c, za_peek_t *p, char step, long allocs, long frees)
{
	long long allocated, allocs0 = slab_events(p, "alloc"), frees0 = slab_events(p, "free");
	put(c->cmd, &step, 1);
	get(c->reply, &allocated, sizeof(allocated));
	char *slabinfo = receive_report(c->reply), *buddyinfo = receive_report(c->reply);
	CHECK(!za_peek_read(p));
	CHECK_EQ(za_peek_stat(p, "nr_allocated_pages"), allocated);
	CHECK(!strcmp(za_peek_report(p, "slabinfo"), slabinfo));
	CHECK(!strcmp(za_peek_report(p, "buddyinfo"), buddyinfo));
	CHECK_EQ(slab_events(p, "alloc") - allocs0, allocs);
	CHECK_EQ(slab_events(p, "free") - frees0, frees);
	CHECK_STR_HAS(za_peek_report(p, "slabinfo"), "published-objects");
	free(slabinfo);
	free(buddyinfo);
}

static void test_exact_counts(void)
{
	struct child c = start_writer();
	za_peek_t *p = za_peek_open(c.pid, 0);
	if (!p)
		fprintf(stderr, "%s\n", za_last_error());
	CHECK(p);
	CHECK_EQ(za_peek_pid(p), c.pid);
	CHECK_STR_HAS(za_peek_config(p), "publish=1");
	long long before = za_peek_stat(p, "nr_allocated_pages");
	unsigned long long publishes = za_peek_publishes(p);
	step_and_compare(&c, p, 'a', OBJECTS, 0);
	CHECK_EQ(za_peek_publishes(p), publishes + 1);
	CHECK(za_peek_stat(p, "nr_allocated_pages") >= before + PAGES);
	step_and_compare(&c, p, 'f', 0, OBJECTS);
	CHECK(za_peek_stat(p, "nr_allocated_pages") <= before + 8);    /* the cache's slabs may stay */
	stop_writer(&c);
	za_peek_close(p);
}

static bool segment_exists(pid_t pid, int n)
{
	char path[96];
	snprintf(path, sizeof(path), "/dev/shm/zonealloc.%d.%d", (int)pid, n);
	return !access(path, F_OK);
}

/* A process that ends without destroying its system leaves its segment;
 * the next list removes it, and an open says the process is gone. */
static void test_stale_removed(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		test_mm(QUIET_PUBLISHED);
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	CHECK(segment_exists(pid, 0));
	CHECK(!za_peek_open(pid, 0) && errno == ESRCH);
	struct za_peek_entry e[64];
	CHECK(za_peek_list(e, 64) >= 0);
	CHECK(!segment_exists(pid, 0));
	CHECK(!za_peek_open(pid, 0) && errno == ENOENT);
}

static void test_listed(void)
{
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	struct za_peek_entry e[256];
	int n = za_peek_list(e, 256);
	bool found = false;
	for (int i = 0; i < n && i < 256; i++)
		found |= e[i].pid == getpid();
	CHECK(found);
	za_mm_destroy(mm);
	CHECK(!segment_exists(getpid(), 0));
}

/* Our own live system's file, copied to name n of our pid, as written by
 * edit (which may cut it).  Returns a descriptor of it holding the
 * writer's lock, so that the copy looks live. */
static int copy_segment(int n, void (*edit)(struct pub_header *, size_t *), char *path, size_t len)
{
	char src[96];
	snprintf(src, sizeof(src), "/dev/shm/zonealloc.%d.0", (int)getpid());
	snprintf(path, len, "/dev/shm/zonealloc.%d.%d", (int)getpid(), n);
	int in = open(src, O_RDONLY);
	CHECK(in >= 0);
	struct stat st;
	CHECK(!fstat(in, &st));
	size_t size = (size_t)st.st_size;
	char *buf = calloc(1, size);
	CHECK(buf && pread(in, buf, size, 0) == (ssize_t)size);
	close(in);
	((struct pub_header *)(void *)buf)->system = (uint32_t)n;
	edit((struct pub_header *)(void *)buf, &size);
	int out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(out >= 0 && !flock(out, LOCK_SH));
	put(out, buf, size);
	free(buf);
	return out;
}

static void cut_to_header(struct pub_header *h, size_t *size)
{
	(void)h;
	*size = 100;
}

static void garbage(struct pub_header *h, size_t *size)
{
	memset(h, 0x5a, *size < 4096 ? *size : 4096);
}

static void newer_layout(struct pub_header *h, size_t *size)
{
	(void)size;
	h->version = PUB_VERSION + 1;
}

static void names_outside(struct pub_header *h, size_t *size)
{
	(void)size;
	h->names_len = 0xfffffff0u;
}

/* Each bad segment is refused with EPROTO and a message, never a crash. */
static void test_corrupt_refused(void)
{
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	static const struct {
		void (*edit)(struct pub_header *, size_t *);
		const char *said;
	} bad[] = {
		{ cut_to_header, "not a zonealloc segment" },
		{ garbage, "no magic" },
		{ newer_layout, "layout version" },
		{ names_outside, "outside" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char path[96];
		int fd = copy_segment(40 + (int)i, bad[i].edit, path, sizeof(path));
		errno = 0;
		CHECK(!za_peek_open(getpid(), 40 + (int)i));
		CHECK_EQ(errno, EPROTO);
		CHECK_STR_HAS(za_last_error(), bad[i].said);
		unlink(path);
		close(fd);
	}
	za_mm_destroy(mm);
}

static unsigned int fuzz_seed = 12345;

/* A few bytes of the header and the names changed at random, or the file
 * cut anywhere. */
static void scramble(struct pub_header *h, size_t *size)
{
	unsigned char *b = (unsigned char *)h;
	size_t span = *size < 8192 ? *size : 8192;
	for (int k = rand_r(&fuzz_seed) % 6; k >= 0; k--)
		b[(size_t)rand_r(&fuzz_seed) % span] = (unsigned char)rand_r(&fuzz_seed);
	if (rand_r(&fuzz_seed) % 4 == 0)
		*size = (size_t)rand_r(&fuzz_seed) % *size;
}

/* Random damage never crashes a reader: each open fails with a message or
 * gives a read whose strings all end. */
static void test_fuzzed(void)
{
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	static const char *const reports[] = { "buddyinfo", "zoneinfo", "vmstat", "slabinfo" };
	za_peek_t *own = za_peek_open(getpid(), 0);    /* watched: the publish renders reports */
	CHECK(own && !za_publish(mm) && !za_peek_read(own) && za_peek_report(own, "zoneinfo"));
	za_peek_close(own);
	int opened = 0;
	for (int i = 0; i < 400; i++) {
		char path[96];
		int fd = copy_segment(60, scramble, path, sizeof(path));
		za_peek_t *p = za_peek_open(getpid(), 60);
		CHECK(p || za_last_error()[0]);
		opened += p != NULL;
		for (int s = 0; p && s < za_peek_stat_count(p); s++)
			CHECK(strlen(za_peek_stat_name(p, s)) < 4096);
		for (size_t r = 0; p && r < sizeof(reports) / sizeof(reports[0]); r++) {
			const char *text = za_peek_report(p, reports[r]);
			CHECK(!text || strlen(text) < PUB_REPORTS_CAP);
		}
		za_peek_close(p);
		unlink(path);
		close(fd);
	}
	CHECK(opened > 0);              /* damage off the checked parts still reads */
	za_mm_destroy(mm);
}

/* A segment whose sequence stays odd (a writer stopped mid-publish): the
 * read gives up with EAGAIN after about a second. */
static void test_mid_update(void)
{
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	za_peek_t *p = za_peek_open(getpid(), 0);
	CHECK(p);
	char path[96];
	snprintf(path, sizeof(path), "/dev/shm/zonealloc.%d.0", (int)getpid());
	int fd = open(path, O_RDWR);
	uint64_t seq;
	CHECK(fd >= 0 && pread(fd, &seq, sizeof(seq), offsetof(struct pub_header, seq)) == 8);
	uint64_t odd = seq | 1;
	CHECK(pwrite(fd, &odd, sizeof(odd), offsetof(struct pub_header, seq)) == 8);
	CHECK(za_peek_read(p) && errno == EAGAIN);
	CHECK_STR_HAS(za_last_error(), "mid-update");
	CHECK(pwrite(fd, &seq, sizeof(seq), offsetof(struct pub_header, seq)) == 8);
	CHECK(!za_peek_read(p));
	close(fd);
	za_peek_close(p);
	za_mm_destroy(mm);
}

/* Another user's segment is refused (as root, which may make one). */
static void test_other_user(void)
{
	if (geteuid()) {
		printf("  (skipped: needs root to give a segment to another uid)\n");
		return;
	}
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	char path[96];
	snprintf(path, sizeof(path), "/dev/shm/zonealloc.%d.0", (int)getpid());
	CHECK(!chown(path, 65534, 65534));
	CHECK(!za_peek_open(getpid(), 0) && errno == EACCES);
	CHECK_STR_HAS(za_last_error(), "belongs to uid 65534");
	CHECK(!chown(path, 0, 0));
	za_mm_destroy(mm);
}

/* A FIFO (anyone may make one in /dev/shm) at the name a writer wants, or
 * a reader opens, blocks neither: the writer takes the next name. */
static void test_fifo_names(void)
{
	char path[96];
	snprintf(path, sizeof(path), "/dev/shm/zonealloc.%d.0", (int)getpid());
	CHECK(!mkfifo(path, 0600));
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	CHECK_EQ(za_publish_id(mm), 1);
	CHECK(!za_peek_open(getpid(), 0) && errno == EPROTO);
	CHECK_STR_HAS(za_last_error(), "not a regular file");
	za_peek_t *p = za_peek_open(getpid(), 1);
	CHECK(p);
	za_peek_close(p);
	za_mm_destroy(mm);
	CHECK(!unlink(path));
}

/* A forked child publishes a segment of its own at its first publish,
 * and its parent's stays as it was, before and after the child is gone. */
static void test_forked_child(void)
{
	za_mm_t *mm = test_mm(QUIET_PUBLISHED);
	int id = za_publish_id(mm);
	CHECK(id >= 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		CHECK_EQ(za_publish_id(mm), -1);        /* the parent's is not the child's */
		CHECK(!za_publish(mm));
		CHECK_EQ(za_publish_id(mm), 0);
		CHECK(segment_exists(getpid(), 0));
		za_mm_destroy(mm);
		CHECK(!segment_exists(getpid(), 0));
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	CHECK(segment_exists(getpid(), id));
	za_peek_t *p = za_peek_open(getpid(), id);
	CHECK(p && za_peek_pid(p) == getpid());
	CHECK(!za_publish(mm) && !za_peek_read(p));
	za_peek_close(p);
	za_mm_destroy(mm);
	CHECK(!segment_exists(getpid(), id));
}

/* publish=0 has no segment; za_publish says so. */
static void test_unpublished(void)
{
	za_mm_t *mm = test_mm("memory=64M,kswapd=0,vmstat_interval_ms=0");
	CHECK(za_publish(mm) && errno == EINVAL);
	CHECK(za_publish_id(mm) == -1 && errno == EINVAL);
	CHECK(!segment_exists(getpid(), 0));
	za_mm_destroy(mm);
	CHECK(!za_peek_open(getpid(), 0) && errno == ENOENT);
	CHECK(!za_peek_open(-1, 0) && errno == EINVAL);
}

/* The publisher thread publishes on its own. */
static void test_publisher_thread(void)
{
	za_mm_t *mm = test_mm("memory=64M,kswapd=0,vmstat_interval_ms=0,publish=1,"
			      "publish_interval_ms=10");
	za_peek_t *p = za_peek_open(getpid(), 0);
	CHECK(p);
	unsigned long long first = za_peek_publishes(p);
	for (int i = 0; i < 500 && za_peek_publishes(p) < first + 3; i++) {
		usleep(10000);
		CHECK(!za_peek_read(p));
	}
	CHECK(za_peek_publishes(p) >= first + 3);
	za_peek_close(p);
	za_mm_destroy(mm);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "exact_counts", test_exact_counts },
		{ "stale_removed", test_stale_removed },
		{ "listed", test_listed },
		{ "corrupt_refused", test_corrupt_refused },
		{ "fuzzed", test_fuzzed },
		{ "mid_update", test_mid_update },
		{ "other_user", test_other_user },
		{ "fifo_names", test_fifo_names },
		{ "forked_child", test_forked_child },
		{ "unpublished", test_unpublished },
		{ "publisher_thread", test_publisher_thread },
	};
	return run_test_cases("test_publish", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
