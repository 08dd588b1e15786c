#!/usr/bin/env python3
"""ZA_STATS under the drop-in malloc (LD_PRELOAD), on `stats_fork` (a parent
and a forked child, each allocating) and on `ls` (which closes stderr in an
atexit handler that runs before the malloc's):

 1. ZA_STATS=1: one summary per process on stderr, and counters only
    non-zero ones, none of kswapd (the malloc has none), no nr_alloc_batch;
 2. ZA_STATS=2: everything -- more counter lines, zero ones among them,
    slabinfo;
 3. ZA_STATS_FILE=dir/stats.%p: one file per process, named by its pid,
    each with that process's summary, and nothing on stderr;
 4. ZA_STATS=yes: one line naming the variable, then taken as 1;
 5. a ZA_STATS_FILE that cannot be opened: one line with the path and the
    reason, then the statistics on stderr;
 6. where the RSS is: a program that exits holding 80000 blocks of 100
    bytes and one of 4 MiB has them in its breakdown -- the small ones
    in use, the large one's pages resident in large blocks -- and what is
    left outside the malloc is a few MiB.

usage: test_malloc_stats.py <stats_fork binary> <libzonealloc-malloc.so>
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FORK, LIB = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
HEADER = re.compile(r"^zonealloc: malloc statistics \(pid (\d+)\)$", re.M)
COUNTER = re.compile(r"^([a-z_0-9]+) (-?\d+)$", re.M)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(argv, **env_vars):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ZA_STATS", "ZA_STATS_FILE", "ZA_CONFIG")}
    env.update(LD_PRELOAD=LIB, **env_vars)
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=60)
    return p.returncode, p.stderr.decode(errors="replace")


def counters(text):
    return [(m.group(1), int(m.group(2))) for m in COUNTER.finditer(text)]


# 1. The summary and the counters not zero, per process.
rc, err = run([FORK], ZA_STATS="1")
pids = HEADER.findall(err)
check(rc == 0 and len(set(pids)) == 2, f"ZA_STATS=1: a summary from parent and child ({pids})")
check(err.count("  peak RSS ") == 2, "ZA_STATS=1: the peak RSS line in each summary")
level1 = counters(err)
check(level1 and all(v != 0 for _, v in level1),
      f"ZA_STATS=1: counters, none zero ({[c for c in level1 if c[1] == 0]})")
check(not any("kswapd" in n or n == "nr_alloc_batch" for n, _ in level1),
      "ZA_STATS=1: no kswapd counter, no nr_alloc_batch")
check("slabinfo - version" not in err, "ZA_STATS=1: no slabinfo")
rc, err = run(["ls", "/"], ZA_STATS="1")
check(rc == 0 and len(HEADER.findall(err)) == 1,
      "ZA_STATS=1: ls, which closes stderr before exit, still prints its summary")

# 2. Everything.
rc, err = run([FORK], ZA_STATS="2")
level2 = counters(err)
check(rc == 0 and len(HEADER.findall(err)) == 2, "ZA_STATS=2: a report from parent and child")
check(len(level2) > len(level1) and any(v == 0 for _, v in level2),
      f"ZA_STATS=2: more counter lines ({len(level2)} vs {len(level1)}), zero ones among them")
check("slabinfo - version" in err and any(n == "nr_alloc_batch" for n, _ in level2),
      "ZA_STATS=2: slabinfo and every counter")

# 3. A file per process.
tmp = tempfile.mkdtemp(prefix="za-stats-")
try:
    rc, err = run([FORK], ZA_STATS="1", ZA_STATS_FILE=os.path.join(tmp, "stats.%p"))
    files = sorted(os.listdir(tmp))
    check(rc == 0 and err == "", f"ZA_STATS_FILE: nothing on stderr ({err[:200]!r})")
    check(len(files) == 2 and all(re.fullmatch(r"stats\.\d+", f) for f in files),
          f"ZA_STATS_FILE: two files stats.<pid> ({files})")
    for f in files:
        with open(os.path.join(tmp, f)) as fh:
            text = fh.read()
        check(HEADER.findall(text) == [f.split(".")[1]],
              f"ZA_STATS_FILE: {f} holds the summary of that pid only")
finally:
    shutil.rmtree(tmp)

# 4. A value that is not a level.
rc, err = run([FORK], ZA_STATS="yes")
lines = err.splitlines()
check(rc == 0 and lines and "ZA_STATS=yes" in lines[0] and len(HEADER.findall(err)) == 2
      and "slabinfo - version" not in err, f"ZA_STATS=yes: one line naming it, then level 1 ({lines[:1]})")

# 5. A file that cannot be opened.
rc, err = run([FORK], ZA_STATS="1", ZA_STATS_FILE="/nonexistent/za/stats.%p")
notes = [l for l in err.splitlines() if "ZA_STATS_FILE" in l]
check(rc == 0 and len(notes) == 2 and all("/nonexistent/za/stats." in l and
                                          "No such file or directory" in l for l in notes)
      and len(HEADER.findall(err)) == 2,
      f"unopenable ZA_STATS_FILE: a line with path and reason, then stderr ({notes})")

# 6. The RSS breakdown.
rc, err = run([FORK, "live"], ZA_STATS="1")
where = re.search(r"where the RSS of ([\d.]+) MiB is: ([\d.]+) MiB in the arena \(slabs ([\d.]+), "
                  r"large blocks ([\d.]+), per-CPU lists ([\d.]+), free not yet purged ([\d.]+), "
                  r"page descriptors ([\d.]+)\), ([\d.]+) MiB directly mapped \([\d.]+ freed, kept for "
                  r"reuse\), (-?[\d.]+) MiB outside "
                  r"the malloc\n  small objects in the slabs: ([\d.]+) MiB in use or in the threads' "
                  r"caches, ([\d.]+) MiB in the barns, ([\d.]+) MiB free in their slabs", err, re.S)
check(rc == 0 and where, f"ZA_STATS=1: where the RSS is ({err[:600]!r})")
if where:
    now, arena, slabs, large, pcp, free, meta, mapped, outside, used, barns, slack = \
        map(float, where.groups())
    live = 80000 * 112 / 2**20      # 100 bytes: the 112-byte class
    check(live <= used <= live + 1, f"breakdown: {used} MiB of small objects in use, {live:.2f} held")
    check(4 <= large + mapped <= 4.5, f"breakdown: the 4 MiB block resident ({large} + {mapped})")
    # what is left is the program's image, stack and libraries: a few MiB,
    # never less than nothing (the arena's pages found resident are)
    check(0 <= outside <= 8, f"breakdown: {outside} MiB outside the malloc, of {now}")
    check(used + barns + slack <= slabs + 0.1, f"breakdown: objects within the slabs' pages "
          f"({used} + {barns} + {slack} <= {slabs})")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
