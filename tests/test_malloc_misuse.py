#!/usr/bin/env python3
"""Misuse is caught, not followed: each case of the `misuse` program runs
under LD_PRELOAD=libzonealloc-malloc.so and must end in abort() with one
line naming the address and the kind of misuse.  The default mode catches
what costs only the lookup free does anyway; debug=1 catches the rest.
`clean` exercises everything legal and must pass in both modes.

usage: test_malloc_misuse.py <misuse binary> <libzonealloc-malloc.so> [<new_delete binary>]
"""
import os
import re
import signal
import subprocess
import sys

MISUSE, LIB = sys.argv[1], sys.argv[2]
CXX = sys.argv[3] if len(sys.argv) > 3 else None

# case -> the diagnostic's distinctive words (a regular expression)
DEFAULT_CASES = {
    "free-foreign": r"free\(0x[0-9a-f]+\): not allocated by zonealloc",
    "free-interior": r"free\(0x[0-9a-f]+\): inside an object \(the 64-byte block at 0x",
    "realloc-foreign": r"realloc\(0x[0-9a-f]+\): not allocated by zonealloc",
    "usable-size-foreign": r"malloc_usable_size\(0x[0-9a-f]+\): not allocated",
    "double-free-small": r"double free of 0x[0-9a-f]+ \(malloc-64\)",
    "double-free-large": r"double free of 0x[0-9a-f]+",
    "double-free-huge": r"free\(0x[0-9a-f]+\): not allocated by zonealloc",
    "free-past-last-object": r"free\(0x[0-9a-f]+\): not allocated by malloc \(past a slab's last object\)",
    "usable-size-freed": r"malloc_usable_size\(0x[0-9a-f]+\): the pointer was freed",
    "realloc-freed": r"realloc\(0x[0-9a-f]+\): the pointer was freed",
    "free-sized-mismatch": r"free_sized\(0x[0-9a-f]+, size 300\): the size or alignment does not match the allocation \(malloc-112\)",
    "free-sized-mismatch-large": r"free_sized\(0x[0-9a-f]+, size 40000\): the size or alignment does not match the allocation \(102400-byte block for 100000 bytes\)",
    "malloc0-read": r"read or write through a malloc\(0\) pointer \(0x",
    "malloc0-write": r"read or write through a malloc\(0\) pointer \(0x",
    "free-sized-near-block": r"free_sized\(0x[0-9a-f]+, size 19000\): the size or alignment does not match the allocation \(32768-byte block for 20000 bytes\)",
    "free-sized-near-mapping": r"free_sized\(0x[0-9a-f]+, size 104857500\): the size or alignment does not match the allocation \(104857600-byte block for 104857600 bytes\)",
    "free-aligned-mismatch": r"free_aligned_sized\(0x[0-9a-f]+, size 100, align 4096\): the size or alignment does not match the allocation \(malloc-128\)",
    "free-aligned-mismatch-block": r"free_aligned_sized\(0x[0-9a-f]+, size 20000, align 4096\): the size or alignment does not match the allocation \(65536-byte block for 20000 bytes aligned to 65536\)",
    "free-aligned-mismatch-mapping": r"free_aligned_sized\(0x[0-9a-f]+, size 104857600, align 4096\): the size or alignment does not match the allocation \(104857600-byte block for 104857600 bytes aligned to 2097152\)",
    "malloc0-double-free": r"double free of 0x[0-9a-f]+ \(a malloc\(0\) block\)",
    "malloc0-free-offset": r"free\(0x[0-9a-f]+\): not allocated by malloc \(inside the malloc\(0\) region\)",
    "malloc0-realloc-freed": r"realloc\(0x[0-9a-f]+\): the pointer was freed \(a malloc\(0\) block\)",
    "malloc0-usable-size-freed": r"malloc_usable_size\(0x[0-9a-f]+\): the pointer was freed \(a malloc\(0\) block\)",
    "malloc0-free-sized-mismatch": r"free_sized\(0x[0-9a-f]+, size 8\): the size or alignment does not match the allocation \(a malloc\(0\) block\)",
}

CXX_CASES = {
    "sized-delete-mismatch": r"free_sized\(0x[0-9a-f]+, size 500\): the size or alignment does not match the allocation \(malloc-64\)",
    "aligned-delete-mismatch": r"free_aligned_sized\(0x[0-9a-f]+, size 200, align 4096\): the size or alignment does not match",
}

DEBUG_CASES = {
    "overflow-small": r"heap overflow: the 10-byte block at 0x[0-9a-f]+ was written past its end \(byte 10",
    "overflow-large": r"heap overflow: the 100000-byte block at 0x[0-9a-f]+ was written past its end \(byte 100000",
    "write-after-free-small": r"write after free: object 0x[0-9a-f]+ modified",
    "write-after-free-small-exit": r"write after free: object 0x[0-9a-f]+ modified at byte 5",
    "write-after-free-small-next": r"write after free: object 0x[0-9a-f]+ modified at byte 5",
    "free-aligned-mismatch-small": r"free_aligned_sized\(0x[0-9a-f]+, align 32\): the allocation was aligned to 64",
    "write-after-free-large": r"use after free: 0x[0-9a-f]+ is inside the freed 100000-byte block",
    "read-after-free-large": r"use after free: 0x[0-9a-f]+ is inside the freed 100000-byte block",
    "realloc-freed": r"realloc\(0x[0-9a-f]+\): the pointer was freed",
    "realloc-freed-large": r"realloc\(0x[0-9a-f]+\): the pointer was freed",
    "usable-size-freed": r"malloc_usable_size\(0x[0-9a-f]+\): the pointer was freed",
}


RUNS = 0


def run(case, debug, program=MISUSE, config=None):
    global RUNS
    RUNS += 1
    env = dict(os.environ, LD_PRELOAD=LIB)
    env.pop("ZA_CONFIG", None)
    if debug or config:
        env["ZA_CONFIG"] = config or "debug=1"
    return subprocess.run([program, case], env=env, capture_output=True, text=True, timeout=60)


def main():
    failures = []

    def expect_abort(case, pattern, debug, program=MISUSE):
        r = run(case, debug, program)
        mode = "debug" if debug else "default"
        lines = [l for l in r.stderr.splitlines() if l.startswith("zonealloc: ")]
        if r.returncode != -signal.SIGABRT:
            failures.append(f"{case} ({mode}): exit {r.returncode}, expected SIGABRT; stderr: {r.stderr.strip()}")
        elif not lines or not re.search(pattern, lines[-1]):
            failures.append(f"{case} ({mode}): diagnostic {lines!r} does not match /{pattern}/")

    for debug in (False, True):
        r = run("clean", debug)
        if r.returncode != 0 or "zonealloc" in r.stderr:
            failures.append(f"clean ({'debug' if debug else 'default'}): exit {r.returncode}, stderr {r.stderr.strip()!r}")
    # slub_debug asks for checked caches: the malloc runs in debug mode then.
    r = run("clean", False, config="slub_debug=FZP")
    if r.returncode != 0 or "zonealloc" in r.stderr:
        failures.append(f"clean (slub_debug=FZP): exit {r.returncode}, stderr {r.stderr.strip()!r}")
    for case, pattern in DEFAULT_CASES.items():
        expect_abort(case, pattern, debug=False)
    # Debug mode catches everything the default mode does, and more (but
    # lays objects out differently: no slack after a slab's last object).
    for case, pattern in DEFAULT_CASES.items():
        if case not in DEBUG_CASES and case != "free-past-last-object":
            expect_abort(case, r"0x[0-9a-f]+", debug=True)
    for case, pattern in DEBUG_CASES.items():
        expect_abort(case, pattern, debug=True)
    if CXX:
        for debug in (False, True):
            r = run("clean", debug, CXX)
            # Debug mode's usable size is the request: past it is an overflow.
            usable = "usable 100" if debug else "usable 112"
            if r.returncode != 0 or usable not in r.stdout or "threw 1" not in r.stdout:
                failures.append(f"C++ clean ({'debug' if debug else 'default'}): exit {r.returncode}, "
                                f"out {r.stdout.strip()!r}, stderr {r.stderr.strip()!r}")
        for case, pattern in CXX_CASES.items():
            expect_abort(case, pattern, debug=False, program=CXX)
    else:
        print("SKIP: the C++ operators (no C++ compiler was found)")

    for f in failures:
        print("FAIL:", f)
    print(f"test_malloc_misuse: {RUNS - len(failures)} of {RUNS} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
