# A thin wrapper around CMake: `make`, `make test`, `make bench`.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all test bench install clean check-tools

# The trace reader's libraries (zstd, lzma, libtracecmd) are optional to
# CMake but not to `make bench`, whose scorecard reads .xz traces: they
# (and cmake and the compiler) are installed before CMake looks for them,
# once per build directory (a stamp says it was done).  CMake looks again
# on every `make` (a quarter of a second), so that a library installed
# after the first configure is found rather than left NOTFOUND in the
# cache; what it still does not find, it says.
all: check-tools
	@if [ -f $(BUILD)/CMakeCache.txt ]; then out=$$(cmake -S . -B $(BUILD) 2>&1) || \
	 { echo "$$out"; exit 1; }; echo "$$out" | grep -i "not found" || true; \
	 else cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release; fi
	@cmake --build $(BUILD) -j$(JOBS)

$(BUILD)/.deps-build:
	@if scripts/install-deps build; then mkdir -p $(BUILD) && touch $@; \
	 else echo "zonealloc: continuing; what needs the missing packages says so" >&2; fi

check-tools: $(BUILD)/.deps-build
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
