#!/usr/bin/env python3
"""Every allocation entry point at the edges, and debug mode's memory.

`extremes calls` and `extremes compat` check sizes 0, 1, 2^k - 1, 2^k,
2^k + 1, SIZE_MAX / 2 (+ 1), SIZE_MAX - 4096, SIZE_MAX and alignments 1 ..
2^63 against glibc 2.36's answers.  They run without LD_PRELOAD (glibc: the
expectations hold), under LD_PRELOAD=libzonealloc-malloc.so, and under
ZA_CONFIG=debug=1; each must end with "0 failed", and no run may crash.

Then memory: 200 MB allocated and freed must leave the RSS below 60 MB a
few purge delays later (both modes, large and small blocks), and in debug
mode a program that allocates and frees 200 MB three times, two seconds
apart, must survive a 300 MB memory cgroup (skipped, saying so, where no
cgroup can be made).

usage: test_malloc_extremes.py <extremes binary> <libzonealloc-malloc.so>
"""
import os
import re
import subprocess
import sys

EXTREMES, LIB = sys.argv[1], os.path.abspath(sys.argv[2])
MODES = {"glibc": None, "default": "", "debug": "debug=1"}
LIMIT = 300 << 20
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
# A memory cgroup of our own: v1 (a memory hierarchy) or v2 (unified, with
# the memory controller), made inside the cgroup this process is in, or at
# the root of the hierarchy.  Controllers are never enabled on the way:
# where memory is not already delegated, the test is skipped.
# ------------------------------------------------------------------------
def own_cgroup(hierarchy):
    """This process's path in the v1 hierarchy with that controller, or
    in v2's (hierarchy None)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if hierarchy is None and controllers == "":
                return path
            if hierarchy is not None and hierarchy in controllers.split(","):
                return path
    return None


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def make_cgroup():
    """(directory, cgroup.procs, peak file) of a new cgroup limited to
    LIMIT bytes without swap, or (None, why)."""
    name = f"za-extremes-{os.getpid()}"
    v1 = "/sys/fs/cgroup/memory"
    v2 = "/sys/fs/cgroup"
    why = "no memory cgroup hierarchy (v1 at /sys/fs/cgroup/memory, or v2 with memory)"
    candidates = []
    if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
        own = own_cgroup("memory")
        if own:
            candidates.append(("v1", os.path.join(v1, own.lstrip("/"))))
        candidates.append(("v1", v1))
    elif os.path.exists(os.path.join(v2, "cgroup.controllers")):
        with open(os.path.join(v2, "cgroup.controllers")) as f:
            if "memory" in f.read().split():
                own = own_cgroup(None)
                if own:
                    candidates.append(("v2", os.path.join(v2, own.lstrip("/"))))
                candidates.append(("v2", v2))
    for version, parent in candidates:
        if version == "v2":
            try:
                with open(os.path.join(parent, "cgroup.subtree_control")) as f:
                    if "memory" not in f.read().split():
                        why = f"memory is not delegated below {parent}"
                        continue
            except OSError as e:
                why = f"{parent}: {e}"
                continue
        path = os.path.join(parent, name)
        try:
            os.mkdir(path)
        except OSError as e:
            why = f"cannot create {path}: {e}"
            continue
        try:
            if version == "v1":
                write(os.path.join(path, "memory.limit_in_bytes"), LIMIT)
                try:
                    write(os.path.join(path, "memory.memsw.limit_in_bytes"), LIMIT)
                except OSError:
                    pass                    # no swap accounting: nothing to add
                peak = os.path.join(path, "memory.max_usage_in_bytes")
            else:
                write(os.path.join(path, "memory.max"), LIMIT)
                try:
                    write(os.path.join(path, "memory.swap.max"), 0)
                except OSError:
                    pass
                peak = os.path.join(path, "memory.peak")
            return path, os.path.join(path, "cgroup.procs"), peak
        except OSError as e:
            why = f"cannot limit {path}: {e}"
            remove_cgroup(path)
    return None, why, None


def remove_cgroup(path):
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            subprocess.run(["sleep", "0.1"])
    print(f"note: could not remove {path}")


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

    # Debug mode within a 300 MB memory cgroup: the quarantine costs no RSS.
    path, procs, peak = make_cgroup()
    if path is None:
        print(f"SKIP: churn in a 300 MB memory cgroup: {procs}")
    else:
        try:
            r = run("churn", "debug", preexec_fn=lambda: write(procs, os.getpid()))
            used = read_int(peak)
            if r.returncode == 0 and not preloaded(r, "debug"):
                failures.append(f"churn (debug): not run under zonealloc: {describe(r)}")
            elif r.returncode != 0:
                killed = " (killed: out of memory in the cgroup)" if r.returncode == -9 else ""
                failures.append(f"churn (debug) in a 300 MB cgroup{killed}: {describe(r)}\n"
                                f"    {r.stdout.strip()}")
            elif used is not None and used < (150 << 20):
                failures.append(f"churn (debug): the cgroup saw only {used >> 20} MB: "
                                "the program did not run in it")
            else:
                peak_note = f", cgroup peak {used >> 20} MB" if used is not None else ""
                print(f"ok: churn (debug) in a 300 MB cgroup{peak_note}")
        finally:
            remove_cgroup(path)

    for f in failures:
        print("FAIL:", f)
    print(f"test_malloc_extremes: {RUNS - len(failures)} of {RUNS} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
