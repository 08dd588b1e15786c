// C++ on zonealloc's operators: `new_delete clean` uses every form of new
// and delete and the standard containers, and must exit 0; a thrown
// std::bad_alloc must reach the program; `new_delete sized-delete-mismatch`
// must be caught.  Run by test_malloc_misuse.py under LD_PRELOAD.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <map>
#include <new>
#include <string>
#include <vector>

struct alignas(128) Wide {
	char bytes[300];
};

static int clean()
{
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 20000; i++)
		m["key" + std::to_string(i % 997)].push_back(i);
	long sum = 0;
	for (auto &kv : m)
		for (int v : kv.second)
			sum += v;
	Wide *w = new Wide[7];
	if (reinterpret_cast<uintptr_t>(w) % 128)
		return 1;
	delete[] w;
	Wide *one = new Wide;
	delete one;
	int *n = new (std::nothrow) int(5);
	delete n;
	void *raw = ::operator new(100);
	// Routed to zonealloc: its 112-byte class, not glibc's 104-byte chunk.
	std::printf("usable %zu\n", malloc_usable_size(raw));
	::operator delete(raw, 100);
	bool threw = false;
	try {
		volatile size_t huge = size_t(1) << 60;
		char *p = new char[huge];
		p[0] = 1;
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	std::printf("sum %ld threw %d\n", sum, threw);
	return threw ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	if (!std::strcmp(c, "clean"))
		return clean();
	if (!std::strcmp(c, "sized-delete-mismatch")) {
		void *p = ::operator new(64);
		::operator delete(p, 500);      // the size new was not given
	}
	if (!std::strcmp(c, "aligned-delete-mismatch")) {
		void *p = ::operator new(200, std::align_val_t(64));
		::operator delete(p, 200, std::align_val_t(4096));
	}
	std::fprintf(stderr, "new_delete: case '%s' was not caught\n", c);
	return 2;
}
