# A thin wrapper around CMake: `make`, `make test`, `make bench`.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all test bench install clean check-tools

# The trace reader's libraries (zstd, lzma, libtracecmd) are optional to
# CMake but not to `make bench`, whose scorecard reads .zst traces: they are
# installed before CMake looks for them, and CMake looks again on every
# `make` (a quarter of a second), so that a library installed after the
# first configure is found rather than left NOTFOUND in the cache.
all: check-tools
	@scripts/install-deps build || echo "zonealloc: continuing; what needs the missing libraries says so" >&2
	@if [ -f $(BUILD)/CMakeCache.txt ]; then cmake -S . -B $(BUILD) >/dev/null; \
	 else cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release; fi
	@cmake --build $(BUILD) -j$(JOBS)

check-tools:
	@command -v cmake >/dev/null || { echo "zonealloc: cmake is missing (Debian: apt-get install cmake)"; exit 1; }
	@command -v cc >/dev/null || command -v gcc >/dev/null || { echo "zonealloc: no C compiler (Debian: apt-get install gcc)"; exit 1; }

# What the tests run (real programs, a C++ compiler) is installed before the
# build is configured: CMake looks for g++ then.
test:
	@scripts/install-deps test || echo "zonealloc: continuing; tests of missing programs are skipped with a message" >&2
	@$(MAKE) --no-print-directory all
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

bench:
	@scripts/bench-setup
	@$(MAKE) --no-print-directory all
	@$(BUILD)/zabench report --quick

install: all
	@cmake --install $(BUILD)

clean:
	@rm -rf $(BUILD) build-asan build-tsan build-debugvm
