#!/usr/bin/env python3
"""The kernel's own per-CPU list figures in a kmem trace, as the README
quotes them: events by type, lost-event markers, the span of time, and per
1000 mm_page_alloc events the pcp drains (mm_page_pcpu_drain) and
zone-locked refills (mm_page_alloc_zone_locked percpu_refill=1), for all
orders and for orders 0..3 (an order's figures per 1000 of its allocations).

Usage: tracestats.py TRACE...   (plain, .gz, .xz, or .zst with zstd installed)"""
import collections
import gzip
import lzma
import re
import subprocess
import sys

EVENT = re.compile(r"\[(\d+)\] \S* *(\d+\.\d+):\s+(?:\d+\s+)?(?:\w+:)?(\w+): (.*)")
ORDER = re.compile(r"\border=(\d+)")


def lines(path):
    if path.endswith(".zst"):
        p = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE, text=True)
        yield from p.stdout
        if p.wait():
            sys.exit(f"{path}: zstd failed")
        return
    opener = gzip.open if path.endswith(".gz") else lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        yield from f


def stats(path):
    by_type, alloc, drain, refill = (collections.Counter() for _ in range(4))
    lost = markers = 0
    first = last = None
    header = {}
    for line in lines(path):
        if line.startswith("# "):
            key, _, value = line[2:].rstrip("\n").partition(" ")
            if key in ("sysctl", "uname", "command", "recorded") and key not in header:
                header[key] = value
            continue
        if "[LOST" in line and line.startswith("CPU:"):
            markers += 1
            lost += int(re.search(r"\[LOST (\d*)", line).group(1) or 0)
            continue
        m = EVENT.search(line)
        if not m:
            continue
        _, ts, name, fields = m.groups()
        ts = float(ts)
        first = ts if first is None else first
        last = ts
        by_type[name] += 1
        order = ORDER.search(fields)
        k = int(order.group(1)) if order else -1
        if name == "mm_page_alloc":
            alloc[k] += 1
        elif name == "mm_page_pcpu_drain":
            drain[k] += 1
        elif name == "mm_page_alloc_zone_locked" and "percpu_refill=1" in fields:
            refill[k] += 1
    return by_type, alloc, drain, refill, lost, markers, first, last, header


def per1000(n, d):
    return f"{1000 * n / d:7.1f}" if d else "    n/a"


def report(path):
    by_type, alloc, drain, refill, lost, markers, first, last, header = stats(path)
    print(f"{path}: {sum(by_type.values())} events over {(last or 0) - (first or 0):.2f} s, "
          f"{markers} LOST markers ({lost} events)")
    for key in ("command", "uname", "recorded"):
        if key in header:
            print(f"  {key}: {header[key]}")
    print("  " + ", ".join(f"{n} {name}" for name, n in by_type.most_common()))
    print("  per 1000 mm_page_alloc   allocs   drains  refills")
    print(f"  all orders            {sum(alloc.values()):8d}  {per1000(sum(drain.values()), sum(alloc.values()))}"
          f"  {per1000(sum(refill.values()), sum(alloc.values()))}")
    for k in range(4):
        print(f"  order {k}               {alloc[k]:8d}  {per1000(drain[k], alloc[k])}"
              f"  {per1000(refill[k], alloc[k])}")


for p in sys.argv[1:]:
    report(p)
