# A thin wrapper around CMake: `make`, `make test`, `make bench`.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all test bench install clean check-tools

all: check-tools $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j$(JOBS)

$(BUILD)/CMakeCache.txt:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

check-tools:
	@command -v cmake >/dev/null || { echo "zonealloc: cmake is missing (Debian: apt-get install cmake)"; exit 1; }
	@command -v cc >/dev/null || command -v gcc >/dev/null || { echo "zonealloc: no C compiler (Debian: apt-get install gcc)"; exit 1; }

# What the tests run (real programs, a C++ compiler) is installed before the
# build is configured: CMake looks for g++ then.
test:
	@scripts/install-deps test || echo "zonealloc: continuing; tests of missing programs are skipped with a message" >&2
	@$(MAKE) --no-print-directory all
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

bench: all
	@scripts/bench-setup
	@$(BUILD)/zabench report --quick

install: all
	@cmake --install $(BUILD)

clean:
	@rm -rf $(BUILD) build-asan build-tsan build-debugvm
