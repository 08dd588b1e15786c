/*
 * Files for streamread and parallelio: made once per run with plain
 * write(2), outside the allocator under test.
 */
#include "files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *bench_file(struct bench *b, const char *name, long bytes, char *buf, size_t len)
{
	struct stat st;
	snprintf(buf, len, "%s/%s", bench_dir(b), name);
	if (!stat(buf, &st) && st.st_size == bytes)
		return buf;
	int fd = open(buf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(buf);
		exit(1);
	}
	enum { CHUNK = 1 << 20 };
	char *chunk = malloc(CHUNK);
	for (long off = 0; off < bytes; off += CHUNK) {
		for (int i = 0; i < CHUNK; i += 8)
			*(long *)(chunk + i) = off + i;
		size_t n = bytes - off < CHUNK ? (size_t)(bytes - off) : CHUNK;
		if (write(fd, chunk, n) != (ssize_t)n) {
			perror(buf);
			exit(1);
		}
	}
	free(chunk);
	fsync(fd);
	close(fd);
	return buf;
}

void record_zone_lru(struct variant *v)
{
	for (int z = 0; z < za_nr_zones(v->mm); z++) {
		char name[48];
		snprintf(name, sizeof(name), "nr_active_file_%s", za_zone_name(v->mm, z));
		set_extra_counter(v, name, za_stat(v->mm, name));
		snprintf(name, sizeof(name), "nr_inactive_file_%s", za_zone_name(v->mm, z));
		set_extra_counter(v, name, za_stat(v->mm, name));
	}
}
