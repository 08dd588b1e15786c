#!/usr/bin/env python3
"""The malloc says no only when the limit it runs under does.  Each case of
the `limits` program (and a few Python programs) runs with the C library's
malloc and under LD_PRELOAD=libzonealloc-malloc.so:

 1. fragmentation: after 200 MiB of small objects freed, blocks of up to
    16 MiB must still reach 200 MiB;
 2. a shifting size mix and a random soak must never see NULL;
 3. under an address-space limit (RLIMIT_AS 1 and 4 GiB) zonealloc must get
    at least 95% of what glibc gets, and a single large block where glibc
    gets it;
 4. in a memory cgroup of 300 MiB, allocating and freeing 200 MiB again and
    again must not be OOM-killed (skipped when no cgroup can be made).

A table of glibc's and zonealloc's figures is printed for every case.

usage: test_malloc_limits.py <limits binary> <libzonealloc-malloc.so>
"""
import os
import re
import resource
import signal
import subprocess
import sys
import time

LIMITS, LIB = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
MiB, GiB = 1 << 20, 1 << 30

# vmstat counters that show the arena's growth and mobility grouping.
GROWTH_COUNTERS = ("section_add", "zone_grow_pages", "nr_sections", "pgfallback",
                   "pageblock_claim", "nr_pageblocks_unmovable", "nr_pageblocks_movable")

PY_FILL = """
a = []
try:
    while True:
        a.append(bytearray(1 << 20))
except MemoryError:
    n = len(a)
    del a
    print("got", n)
"""

PY_ONE = """
try:
    b = bytearray(300 << 20)
    print("ok")
except MemoryError:
    print("null")
"""

failures = []
table = []              # (case, glibc, zonealloc, verdict)
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
    return bool(ok)


def run(argv, za, config=None, stats=False, limit=None, procs=None, timeout=120):
    """(exit status or "timeout", stdout, stderr) of one child."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ZA_CONFIG", "ZA_STATS"):
        env.pop(k, None)
    if za:
        env["LD_PRELOAD"] = LIB
    if config:
        env["ZA_CONFIG"] = config
    if stats:
        env["ZA_STATS"] = "1"

    def setup():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
        if procs:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

    try:
        r = subprocess.run(argv, env=env, capture_output=True, text=True,
                           timeout=timeout, preexec_fn=setup)
    except subprocess.TimeoutExpired:
        return "timeout", "", ""
    except (OSError, subprocess.SubprocessError) as e:    # the setup failed
        return "error", "", str(e)
    return r.returncode, r.stdout.strip(), r.stderr


def status(rc, out, err):
    """One short word or line for the table and the failure messages."""
    if rc in ("timeout", "error"):
        return f"{rc} {err}".strip()
    if isinstance(rc, int) and rc < 0:
        return f"killed by {signal.Signals(-rc).name}"
    if out:
        return out
    last = err.strip().splitlines()[-1:] or [""]
    return f"exit {rc} {last[0]}"


def both(argv, **kw):
    return run(argv, False, **kw), run(argv, True, **kw)


def fragmentation():
    print("== fragmentation: 200 MiB of LO..HI-byte objects freed, then BIG-byte blocks up to 200 MiB")
    cases = [
        (16, 1023, 4 * MiB, 2),
        (1024, 66560, 4 * MiB, 2),
        (16, 1023, 16 * MiB, 2),
        (16, 4096, 1 * MiB, 2),
        (16, 256, 2 * MiB, 2),
        (8192, 262144, 4 * MiB, 2),
        (16, 1023, 4 * MiB, 0),     # before the purge: the free blocks are still resident
    ]
    for lo, hi, big, sleep in cases:
        case = f"frag {lo} {hi} {big // MiB}M sleep {sleep}"
        g, z = both([LIMITS, "frag", str(lo), str(hi), str(big), str(sleep)], timeout=60)
        ok = check(g[0] == 0 and g[1] == "ok 200", f"{case} (glibc): {status(*g)}")
        ok &= check(z[0] == 0 and z[1] == "ok 200", f"{case} (zonealloc): {status(*z)}, glibc {status(*g)}")
        table.append((case, status(*g), status(*z), "ok" if ok else "FAIL"))

    # What the arena did: it grew by sections for the large blocks, and
    # kept slabs (unmovable) and large blocks (movable) in pageblocks of
    # their own.
    rc, out, err = run([LIMITS, "frag", "16", "1023", str(4 * MiB)], True, stats=True, timeout=60)
    print(f"  ZA_STATS=1 frag 16 1023 4M: {status(rc, out, err)}")
    for line in err.splitlines():
        if line.startswith("  peak RSS") or line.startswith("  arena"):
            print("   ", line.strip())
    seen = {m.group(1): int(m.group(2)) for m in (re.match(r"(\w+) (-?\d+)$", l)
                                                  for l in err.splitlines())
            if m and m.group(1) in GROWTH_COUNTERS}
    print("    vmstat:", ", ".join(f"{k} {v}" for k, v in seen.items()))
    check(seen.get("section_add", 0) >= 2 and seen.get("zone_grow_pages", 0) > 0,
          f"frag with ZA_STATS=1: the arena did not grow ({seen})")
    check(seen.get("nr_pageblocks_unmovable", 0) > 0 and seen.get("nr_pageblocks_movable", 0) > 0,
          f"frag with ZA_STATS=1: no pageblocks of both types ({seen})")


def never_null():
    print("== a shifting size mix and a random soak: never NULL")
    for case, argv, timeout in (("shift", [LIMITS, "shift"], 120),
                                ("soak 20M ops", [LIMITS, "soak", "20000000"], 180)):
        g, z = both(argv, timeout=timeout)
        ok = check(g[0] == 0 and g[1].startswith("ok"), f"{case} (glibc): {status(*g)}")
        ok &= check(z[0] == 0 and z[1].startswith("ok"), f"{case} (zonealloc): {status(*z)}")
        table.append((case, status(*g), status(*z), "ok" if ok else "FAIL"))


def address_space():
    print("== address-space limits: zonealloc gets at least 95% of what glibc gets")
    py = sys.executable
    for limit in (1 * GiB, 4 * GiB):
        cases = [
            ("fill 100 B", [LIMITS, "fill", "100"]),
            ("fill 1000 B", [LIMITS, "fill", "1000"]),
            ("fill 100 KB", [LIMITS, "fill", "100000"]),
            ("fill 1 MiB", [LIMITS, "fill", str(MiB)]),
            ("fill 1 MiB + 64", [LIMITS, "fill", str(MiB + 64)]),
            ("one 300 MiB", [LIMITS, "one", str(300 * MiB)]),
            ("fill 300 MiB", [LIMITS, "fill", str(300 * MiB)]),
            ("python bytearray(1 MiB) until MemoryError", [py, "-c", PY_FILL]),
            ("python bytearray(300 MiB)", [py, "-c", PY_ONE]),
        ]
        for name, argv in cases:
            case = f"RLIMIT_AS {limit // GiB} GiB: {name}"
            g, z = both(argv, limit=limit, timeout=120)
            if argv[1] == "one" or argv[-1] == PY_ONE:
                if not check(g[1] in ("ok", "null"), f"{case} (glibc): {status(*g)}"):
                    ok = False
                elif g[1] == "ok":
                    ok = check(z[1] == "ok", f"{case}: glibc ok, zonealloc {status(*z)}")
                else:
                    ok = True
            else:
                mg = re.fullmatch(r"got (\d+)", g[1])
                mz = re.fullmatch(r"got (\d+)", z[1])
                ok = check(g[0] == 0 and mg and int(mg.group(1)) > 0, f"{case} (glibc): {status(*g)}")
                if ok:
                    want = int(mg.group(1)) * 95 // 100
                    ok = check(z[0] == 0 and mz and int(mz.group(1)) >= want,
                               f"{case}: zonealloc {status(*z)} MiB, glibc {g[1]} (95% is {want})")
            table.append((case, status(*g), status(*z), "ok" if ok else "FAIL"))
    # Freed memory comes back, debug mode's quarantine included.
    argv = [LIMITS, "big-churn", str(600 * MiB), "3"]
    for config in (None, "debug=1"):
        case = f"RLIMIT_AS 1 GiB: big-churn 600 MiB x3{', ' + config if config else ''}"
        g, z = run(argv, False, limit=GiB), run(argv, True, config=config, limit=GiB)
        ok = check(g[1] == "ok 3", f"{case} (glibc): {status(*g)}")
        ok &= check(z[1] == "ok 3", f"{case}: zonealloc {status(*z)}")
        table.append((case, status(*g), status(*z), "ok" if ok else "FAIL"))


def cgroup_dirs():
    """Memory cgroup hierarchies as (version, directory of our cgroup, mount)."""
    mounts = []
    with open("/proc/mounts") as f:
        for line in f:
            _, where, fstype, opts = line.split()[:4]
            if fstype == "cgroup2" and os.path.exists(os.path.join(where, "cgroup.controllers")):
                with open(os.path.join(where, "cgroup.controllers")) as c:
                    if "memory" in c.read().split():
                        mounts.append((2, where))
            elif fstype == "cgroup" and "memory" in opts.split(","):
                mounts.append((1, where))
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrls == "":
                own[2] = path
            elif "memory" in ctrls.split(","):
                own[1] = path
    for version, where in sorted(mounts, key=lambda m: -m[0]):
        mine = os.path.join(where, own.get(version, "/").lstrip("/"))
        yield version, mine, where


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


def make_cgroup(limit):
    """(version, directory) of a new memory cgroup limited to `limit`, or
    (None, why not)."""
    why = "no memory cgroup hierarchy is mounted"
    for version, mine, root in cgroup_dirs():
        for parent in dict.fromkeys((mine, root)):
            d = os.path.join(parent, f"za-limits-{os.getpid()}")
            try:
                if version == 2:
                    ctl = os.path.join(parent, "cgroup.subtree_control")
                    with open(ctl) as f:
                        if "memory" not in f.read().split():
                            write(ctl, "+memory")
                os.mkdir(d)
            except OSError as e:
                why = f"cannot create {d}: {e.strerror}"
                continue
            try:
                if version == 2:
                    write(os.path.join(d, "memory.max"), str(limit))
                    if os.path.exists(os.path.join(d, "memory.swap.max")):
                        write(os.path.join(d, "memory.swap.max"), "0")
                else:
                    write(os.path.join(d, "memory.limit_in_bytes"), str(limit))
                    if os.path.exists(os.path.join(d, "memory.memsw.limit_in_bytes")):
                        write(os.path.join(d, "memory.memsw.limit_in_bytes"), str(limit))
                return version, d
            except OSError as e:
                why = f"cannot limit {d}: {e.strerror}"
                remove_cgroup(d)
    return None, why


def remove_cgroup(d):
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    print(f"  warning: could not remove {d}")


def peak_usage(version, d):
    name = "memory.peak" if version == 2 else "memory.max_usage_in_bytes"
    try:
        with open(os.path.join(d, name)) as f:
            return f", peak {int(f.read()) // MiB} MiB"
    except (OSError, ValueError):
        return ""


def memory_cgroup():
    print("== a memory cgroup of 300 MiB: 200 MiB allocated and freed 3 times")
    results = {}
    for mode, za, config in (("glibc", False, None), ("default", True, None), ("debug=1", True, "debug=1")):
        version, d = make_cgroup(300 * MiB)
        if version is None:
            print(f"SKIP: memory cgroup: {d}")
            return
        try:
            r = run([LIMITS, "cgroup-churn", "3"], za, config=config,
                    procs=os.path.join(d, "cgroup.procs"), timeout=60)
            results[mode] = (r, status(*r) + peak_usage(version, d))
        finally:
            remove_cgroup(d)
    for mode in results:
        (rc, out, err), text = results[mode]
        oom = " (OOM-killed)" if rc == -signal.SIGKILL else ""
        ok = check(rc == 0 and out.startswith("ok"), f"cgroup-churn 3 ({mode}): {text}{oom}")
        if mode != "glibc":
            table.append((f"cgroup 300 MiB: cgroup-churn 3, {mode}", results["glibc"][1], text,
                          "ok" if ok else "FAIL"))


def main():
    fragmentation()
    never_null()
    address_space()
    memory_cgroup()

    w = max(len(c) for c, *_ in table)
    wg = max(len(g) for _, g, *_ in table)
    wz = max(len(z) for _, _, z, _ in table)
    print()
    print(f"{'case':<{w}} | {'glibc':<{wg}} | {'zonealloc':<{wz}} |")
    print(f"{'-' * w}-|-{'-' * wg}-|-{'-' * wz}-|-----")
    for case, g, z, verdict in table:
        print(f"{case:<{w}} | {g:<{wg}} | {z:<{wz}} | {verdict}")
    print()
    for f in failures:
        print("FAIL:", f)
    print(f"test_malloc_limits: {checks - len(failures)} of {checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
