#!/usr/bin/env python3
"""Every allocation entry point at the edges, and debug mode's memory.

`extremes calls` and `extremes compat` check sizes 0, 1, 2^k - 1, 2^k,
2^k + 1, SIZE_MAX / 2 (+ 1), SIZE_MAX - 4096, SIZE_MAX and alignments 1 ..
2^63 against glibc 2.36's answers.  They run without LD_PRELOAD (glibc: the
expectations hold), under LD_PRELOAD=libzonealloc-malloc.so, and under
ZA_CONFIG=debug=1; each must end with "0 failed", and no run may crash.

Then memory: 200 MB allocated and freed must leave the RSS below 60 MB a
few purge delays later (both modes, large and small blocks).  Both modes
within a memory cgroup: test_malloc_limits.py.

usage: test_malloc_extremes.py <extremes binary> <libzonealloc-malloc.so>
"""
import os
import re
import subprocess
import sys

EXTREMES, LIB = sys.argv[1], os.path.abspath(sys.argv[2])
MODES = {"glibc": None, "default": "", "debug": "debug=1"}
RUNS = 0


def env_for(mode):
    env = dict(os.environ)
    env.pop("ZA_CONFIG", None)
    env.pop("LD_PRELOAD", None)
    if MODES[mode] is not None:
        env["LD_PRELOAD"] = LIB
        if MODES[mode]:
            env["ZA_CONFIG"] = MODES[mode]
    return env


def run(section, mode, preexec_fn=None):
    global RUNS
    RUNS += 1
    return subprocess.run([EXTREMES, section], env=env_for(mode), capture_output=True, text=True,
                          timeout=120, preexec_fn=preexec_fn)


def preloaded(r, mode):
    """Did the run use the allocator its mode names?"""
    want = "allocator: other" if MODES[mode] is None else "allocator: zonealloc"
    return want in r.stdout.splitlines()


def describe(r):
    out = "\n    ".join(l for l in r.stdout.splitlines() if l.startswith("FAIL"))[:3000]
    return f"exit {r.returncode}, stderr {r.stderr.strip()[:500]!r}\n    {out}"


# ------------------------------------------------------------------------
def main():
    failures = []

    # Results, in each mode.
    for mode in MODES:
        for section in ("calls", "compat"):
            r = run(section, mode)
            if r.returncode != 0 or "zonealloc:" in r.stderr or not preloaded(r, mode) or \
                    not re.search(r"^extremes: \d+ checks, 0 failed$", r.stdout, re.M):
                failures.append(f"{section} ({mode}): {describe(r)}")
            else:
                print(f"ok: {section} ({mode}): {r.stdout.splitlines()[-1]}")

    # Memory freed goes back to the OS: blocks of the page allocator, slab
    # objects (debug mode: through the purge worker its frees kick).
    for mode in ("default", "debug"):
        for section in ("rss", "rss-small"):
            r = run(section, mode)
            if r.returncode != 0 or "zonealloc:" in r.stderr or not preloaded(r, mode):
                failures.append(f"{section} ({mode}): {describe(r)}\n    {r.stdout.strip()}")
            else:
                print(f"ok: {section} ({mode}): " + "; ".join(r.stdout.splitlines()[1:]))

    for f in failures:
        print("FAIL:", f)
    print(f"test_malloc_extremes: {RUNS - len(failures)} of {RUNS} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
