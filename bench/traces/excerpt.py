#!/usr/bin/env python3
"""Cuts a recorded trace to a shippable excerpt: the header, a contiguous
run of whole event lines from a steady part, and the footer (the slabinfo
of the end of the recording).  The run starts at the first event FROM
seconds after the recording's first, and ends after ALLOCS mm_page_alloc
events (so that the two traces of a pair cover about the same work) or
EVENTS events, whichever comes first -- but never inside a drain or a
refill: the kernel traces those a block per event, and a cut among them
would count part of one the model does whole.  The text goes to stdout, e.g.

  excerpt.py --from 3 --allocs 60000 build.full.zst | xz -9e > build.trace.xz

Footer lines about the whole recording (events_written, lost_events,
seconds) are renamed recording_*, and the excerpt's own are added.  An
event's page= field is dropped unless it is null (a failed allocation):
it is the kernel's hashed pointer (or perf's copy of pfn=), which says
nothing pfn= does not, and as random hex it was a third of each
compressed trace.  --page-only keeps the page allocator's events alone
(mm_*: what the scorecard replays; slab events are most of a slab-heavy
recording's size).  An excerpt cut again (a shorter run, or --page-only)
still says which run of the recording it is."""
import argparse
import re
import subprocess
import sys

TIMESTAMP = re.compile(r" (\d+\.\d+):\s+(?:\d+\s+)?(?:\w+:)?(\w+):")
CPU = re.compile(r"\[(\d+)\]")
# The events a drain (free_pcppages_bulk) or a refill (rmqueue_bulk, then
# the allocation it was for) is traced as, one after another on its CPU,
# with the zone-lock events of 2026's kernels around them.
DRAIN = ("mm_page_pcpu_drain",)
REFILL = ("mm_page_alloc_zone_locked", "mm_page_alloc_extfrag")
LOCK = ("mm_zone_lock_contended", "mm_zone_locked", "mm_zone_lock_unlock")
PAGE = re.compile(r"\bpage=(?!\(null\)|\(nil\)|0+ |0x0+ )\S+ ")
EXCERPT = re.compile(r"^# excerpt \d+ of the recording's (\d+) event lines, from event line (\d+)")


def lines(path):
    if path.endswith(".zst") or path.endswith(".xz") or path.endswith(".gz"):
        tool = {"zst": "zstd", "xz": "xz", "gz": "gzip"}[path.rsplit(".", 1)[1]]
        p = subprocess.Popen([tool, "-dc", path], stdout=subprocess.PIPE, text=True)
        yield from p.stdout
        if p.wait():
            sys.exit(f"{path}: {tool} failed")
    else:
        with open(path) as f:
            yield from f


def cpu_of(line, m):
    c = CPU.search(line, 0, m.start())
    return c.group(1) if c else None


def excerpt(path, start_after, max_allocs, max_events, page_only, out):
    header, body, footer = [], [], []
    first_ts = None
    allocs = seen = skipped = run = 0
    span = [None, None]
    bursts = {}         # CPU -> "drain" or "refill": the bursts going on
    tail = None         # past the limit: the CPUs whose burst the cut waits for
    for line in lines(path):
        m = TIMESTAMP.search(line)
        # before the first event, every line is header: trace-cmd's cpus=N,
        # a script's bare /proc/zoneinfo
        if line.startswith("#") or not m and not seen:
            (footer if seen else header).append(line)
            continue
        seen += 1
        if m and first_ts is None:
            first_ts = float(m.group(1))
        if tail is None and (allocs >= max_allocs or run >= max_events):
            tail = set(bursts)
        event, cpu = (m.group(2), cpu_of(line, m)) if m else (None, None)
        kind = "drain" if event in DRAIN else "refill" if event in REFILL else None
        ends = m and not kind and event not in LOCK and cpu in bursts
        keep = tail is None or cpu in tail and (not ends or bursts[cpu] == "refill" and
                                                event == "mm_page_alloc")
        if m and kind:
            bursts[cpu] = kind
        elif ends:
            del bursts[cpu]
            if tail:
                tail.discard(cpu)
        if not keep or not m and not body or m and float(m.group(1)) - first_ts < start_after:
            skipped += tail is None
            continue
        if m:
            span[0] = span[0] if span[0] is not None else float(m.group(1))
            span[1] = float(m.group(1))
        allocs += bool(m and m.group(2) == "mm_page_alloc")
        run += 1
        if not (page_only and m and not event.startswith("mm_")):
            body.append(PAGE.sub("", line, count=1))
    # cut again: the run is of the recording, whose own footer lines are
    # already recording_*, and the excerpt's events_written is replaced
    earlier = next(filter(None, map(EXCERPT.match, header)), None)
    if earlier:
        header = [line for line in header if not EXCERPT.match(line)]
        footer = [line for line in footer if not line.startswith("# events_written ")]
        seen, skipped = int(earlier.group(1)), skipped + int(earlier.group(2)) - 1
    out.writelines(header)
    out.write(f"# excerpt {len(body)} of the recording's {seen} event lines, from event line "
              f"{skipped + 1}: {span[0]}..{span[1]} s, {allocs} mm_page_alloc"
              f"{', page events only' if page_only else ''}\n")
    out.writelines(body)
    for line in footer:
        out.write(re.sub(r"^# (events_written|lost_events|seconds) ", r"# recording_\1 ", line))
    out.write(f"# events_written {len(body)}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--from", dest="start", type=float, default=0, metavar="SECONDS")
    ap.add_argument("--allocs", type=int, default=10**12)
    ap.add_argument("--events", type=int, default=10**12)
    ap.add_argument("--page-only", action="store_true")
    a = ap.parse_args()
    excerpt(a.trace, a.start, a.allocs, a.events, a.page_only, sys.stdout)


main()
