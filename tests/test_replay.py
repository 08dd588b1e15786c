#!/usr/bin/env python3
"""zabench replay on hand-made traces whose outcome is known exactly: a
refill, a drain, a fallback, frees of pages allocated before the trace,
events of one CPU touching only that CPU's lists, the kernel's own figures
counted from its events, determinism, --sweep and --predict, bad input;
and the shipped traces replay with no unexpected problem.
Usage: test_replay.py path/to/zabench path/to/bench/traces [CASE...]"""
import json
import os
import subprocess
import sys
import tempfile

ZABENCH, TRACES = sys.argv[1], sys.argv[2]
ONCE = ["--iterations", "1"]
COLD = ["--warmup", "0", "--start", "empty"]  # count from the first event, lists empty

# A 1 GiB machine of 8 CPUs with one zone, Normal: batch 63 (the kernel's
# zone_batchsize for 262144 pages), the seeds' per-CPU lists unless a test
# says otherwise.
HEADER = """# nr_cpus 8
# uname 6.18.0-test
# zoneinfo Node 0, zone   Normal
# zoneinfo   pages free     262144
# zoneinfo         min      1000
# zoneinfo         low      1250
# zoneinfo         high     1500
# zoneinfo         spanned  262144
# zoneinfo         present  262144
# zoneinfo         managed  262144
# zoneinfo   pagesets
# zoneinfo     cpu: 0
# zoneinfo               count:    0
# zoneinfo               high:     693
# zoneinfo               batch:    63
# zoneinfo   start_pfn:           0
"""
SEEDS = "kernel=4.9,pcp_high_order=1"


class Trace:
    """Event lines in ftrace's layout, one microsecond apart."""

    def __init__(self):
        self.lines = []

    def add(self, cpu, event, fields, at=None, comm="test-1"):
        t = at if at is not None else 100 + len(self.lines) * 1e-6
        self.lines.append(f"{comm:>18}     [{cpu:03d}] ..... {t:.6f}: {event}: {fields}")

    def alloc(self, cpu, pfn, order=0, mt=1, gfp="GFP_HIGHUSER_MOVABLE"):
        self.add(cpu, "mm_page_alloc", f"page=000000000000dead pfn=0x{pfn:x} order={order} "
                 f"migratetype={mt} gfp_flags={gfp}")

    def free(self, cpu, pfn, order=0):
        self.add(cpu, "mm_page_free", f"page=000000000000dead pfn=0x{pfn:x} order={order}")

    def refill(self, cpu, first_pfn, pages, mt=1):
        """A refill of order-0 pages first_pfn.. onto the CPU's list."""
        for pfn in range(first_pfn, first_pfn + pages):
            self.add(cpu, "mm_page_alloc_zone_locked", f"page=000000000000dead pfn=0x{pfn:x} "
                     f"order=0 migratetype={mt} percpu_refill=1")

    def drain(self, cpu, pfn, mt=1):
        self.add(cpu, "mm_page_pcpu_drain", f"page=000000000000dead pfn=0x{pfn:x} order=0 "
                 f"migratetype={mt}")

    def cache_alloc(self, cpu, ptr, name, size):
        self.add(cpu, "kmem_cache_alloc", f"call_site=f+0x1/0x2 ptr={ptr:016x} name={name} "
                 f"bytes_req={size} bytes_alloc={size} gfp_flags=GFP_KERNEL node=-1")

    def cache_free(self, cpu, ptr, name):
        self.add(cpu, "kmem_cache_free", f"call_site=f+0x1/0x2 ptr={ptr:016x} name={name}")

    def write(self, path, header=HEADER):
        with open(path, "w") as f:
            f.write(header + "\n".join(self.lines) + "\n")
        return path


def zabench(command, args, expect):
    p = subprocess.run([ZABENCH, command] + args, capture_output=True, text=True, timeout=600)
    if p.returncode != expect:
        sys.exit(f"zabench {command} {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p


def replay(args, expect=0):
    return zabench("replay", args, expect)


def replay_json(path, config=SEEDS, extra=()):
    doc = json.loads(replay([path, "--json", "--config", config] + ONCE + COLD + list(extra)).stdout)
    assert doc["experiment"] == "replay", doc
    return doc


def rows(fidelity, side, cpu=None, order=None):
    """{metric: value} of one side for one CPU (None: all) and order (None: all)."""
    return {r["metric"]: r[side] for r in fidelity["rows"]
            if r["cpu"] == cpu and r["order"] == order}


def test_refill_on_the_cpu_that_allocated(tmp):
    t = Trace()
    t.alloc(5, 0x1000)
    doc = replay_json(t.write(os.path.join(tmp, "refill.txt")))
    v = doc["variants"][0]
    fid = v["fidelity"]
    assert fid["page_allocs"] == 1, fid
    # one miss refills a batch of 63 pages on CPU 5, and nowhere else
    assert rows(fid, "zonealloc")["pcp_refill_pages"] == 63000, rows(fid, "zonealloc")
    assert rows(fid, "zonealloc", cpu=5)["pcp_refill_pages"] == 63000
    for cpu in range(8):
        if cpu != 5:
            assert not any(rows(fid, "zonealloc", cpu=cpu).values()), (cpu, fid)
    assert v["replay"]["alloc_failed"] == 0 and v["replay"]["early_frees"] == 0, v["replay"]
    # the fresh model's pageblocks are movable, as at boot: a movable
    # allocation takes no fallback
    assert rows(fid, "zonealloc")["pageblock_steals"] == 0


def test_start_state(tmp):
    """By default the lists start as the kernel's must have been: an
    allocation no refill served came off a list that held its page, so the
    model's list holds one too and nothing is refilled; one the kernel
    refilled for (a batch of zone-locked events first) starts empty and
    refills as the kernel did."""
    served = Trace()
    served.alloc(5, 0x1000)
    path = served.write(os.path.join(tmp, "served.txt"))
    doc = json.loads(replay([path, "--json", "--config", SEEDS] + ONCE).stdout)
    fid = doc["variants"][0]["fidelity"]
    assert rows(fid, "zonealloc") == rows(fid, "kernel"), fid
    assert rows(fid, "zonealloc")["pcp_refill_pages"] == 0, fid
    refilled = Trace()
    for i in range(63):
        refilled.add(5, "mm_page_alloc_zone_locked", f"page=000000000000dead pfn=0x{0x1000 + i:x} "
                     "order=0 migratetype=1 percpu_refill=1")
    refilled.alloc(5, 0x1000)
    path = refilled.write(os.path.join(tmp, "refilled.txt"))
    doc = json.loads(replay([path, "--json", "--config", SEEDS] + ONCE).stdout)
    fid = doc["variants"][0]["fidelity"]
    assert rows(fid, "kernel")["pcp_refill_pages"] == 63000, fid
    assert rows(fid, "zonealloc", cpu=5)["pcp_refill_pages"] == 63000, fid
    out = replay([path, "--config", SEEDS] + ONCE).stdout
    assert "the lists start with what the kernel's must have held" in out, out
    assert "mirror of the recorded machine:" in out, out


def test_start_high_decays(tmp):
    """A trace from its recording's start (not an excerpt) on 6.18: CPU 0's
    list held 3000 pages at high 3000 (zoneinfo), more than high_min, and
    the kernel's vmstat worker trimmed it each second: high an eighth
    down, the pages above it drained (374 at 101 s, with 2999 left after
    the first allocation; 327 at 102 s).  The model's list starts at that
    count and that high, so its ticks drain the same pages."""
    header = """# nr_cpus 1
# uname 6.18.0-test
# zoneinfo Node 0, zone   Normal
# zoneinfo   pages free     262144
# zoneinfo         min      1000
# zoneinfo         low      1250
# zoneinfo         high     1500
# zoneinfo         spanned  262144
# zoneinfo         present  262144
# zoneinfo         managed  262144
# zoneinfo   pagesets
# zoneinfo     cpu: 0
# zoneinfo               count:    3000
# zoneinfo               high:     3000
# zoneinfo               batch:    63
# zoneinfo               high_min: 1250
# zoneinfo               high_max: 32768
# zoneinfo   start_pfn:           0
"""
    t = Trace()
    pfn = 0x10000
    for at, drained in ((100.0, 0), (101.5, 374), (102.5, 327)):
        for i in range(drained):
            t.add(0, "mm_page_pcpu_drain", f"page=000000000000dead pfn=0x{pfn:x} order=0 migratetype=0",
                  at=at - 0.5 + i * 1e-6, comm="kworker/0:1-1")
            pfn += 1
        t.add(0, "mm_page_alloc", f"page=000000000000dead pfn=0x{0x1000 + int(at):x} order=0 "
              "migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE", at=at)
    path = t.write(os.path.join(tmp, "decay.txt"), header=header)
    doc = json.loads(replay([path, "--json", "--warmup", "0"] + ONCE).stdout)
    fid = doc["variants"][0]["fidelity"]
    assert rows(fid, "kernel")["pcp_drain_pages"] == round(701000 / 3), fid
    assert rows(fid, "zonealloc") == rows(fid, "kernel"), fid


def test_zone_lock_rows(tmp):
    """A kernel with the zone-lock events proposed in 2026: its holds on the
    bulk paths (one refill, which waited) beside the model's, the model's
    events asked for only then.  One allocation on CPU 5, lists empty: one
    refill each side, one hold each; the kernel's waited, a replay's (one
    thread) cannot.  Without those events the rows are not shown."""
    t = Trace()
    t.add(5, "mm_zone_lock_contended", "node_id=0 name=Normal count=63 caller=rmqueue_bulk+0x3c")
    t.add(5, "mm_zone_locked", "node_id=0 name=Normal count=63 contended=1 "
          "caller=rmqueue_bulk+0x3c wait_ns=1520")
    for i in range(63):
        t.add(5, "mm_page_alloc_zone_locked", f"page=000000000000dead pfn=0x{0x1000 + i:x} "
              "order=0 migratetype=1 percpu_refill=1")
    t.add(5, "mm_zone_lock_unlock", "node_id=0 name=Normal count=63 caller=rmqueue_bulk+0x3c")
    t.alloc(5, 0x1000)
    fid = replay_json(t.write(os.path.join(tmp, "locks.txt")))["variants"][0]["fidelity"]
    kernel, model = rows(fid, "kernel"), rows(fid, "zonealloc")
    assert kernel["zone_lock_bulk_holds"] == 1000 and kernel["zone_lock_bulk_contended"] == 1000, fid
    assert model["zone_lock_bulk_holds"] == 1000 and model["zone_lock_bulk_contended"] == 0, fid
    assert [r["order"] for r in fid["rows"] if r["metric"] == "zone_lock_bulk_holds"] == [None] * 9
    plain = Trace()
    plain.alloc(5, 0x1000)
    fid = replay_json(plain.write(os.path.join(tmp, "nolocks.txt")))["variants"][0]["fidelity"]
    assert not any(r["metric"].startswith("zone_lock_bulk") for r in fid["rows"]), fid


def test_drain_after_frees_of_early_pages(tmp):
    """One allocation (a refill: 62 pages left on CPU 0), then 693 frees of
    pages allocated before the trace: their stand-ins come from the buddy
    lists, so each free adds a page to CPU 0's list; at high = 11 * 63 =
    693 pages it drains one batch of 63."""
    t = Trace()
    t.alloc(0, 0x1000)
    for i in range(693):
        t.free(0, 0x20000 + i)
    doc = replay_json(t.write(os.path.join(tmp, "drain.txt")))
    v = doc["variants"][0]
    assert v["replay"]["early_frees"] == 693, v["replay"]
    model = rows(v["fidelity"], "zonealloc")
    assert model["pcp_refill_pages"] == 63000, model     # stand-ins are not refills
    assert model["pcp_drain_pages"] == 63000, model
    assert rows(v["fidelity"], "zonealloc", cpu=0, order=0)["pcp_drain_pages"] == 63000


def test_unmovable_allocation_claims_a_pageblock(tmp):
    t = Trace()
    t.alloc(2, 0x1000, mt=0, gfp="GFP_KERNEL")
    model = rows(replay_json(t.write(os.path.join(tmp, "claim.txt")))["variants"][0]["fidelity"],
                 "zonealloc", cpu=2)
    # a whole max-order block of the movable lists becomes unmovable
    assert model["pageblock_steals"] == 1000 and model["extfrag_fallbacks"] == 0, model


def test_kernel_column_from_the_trace(tmp):
    t = Trace()
    for i in range(4):
        t.alloc(1, 0x3000 + i)
    for i in range(8):
        t.add(1, "mm_page_alloc_zone_locked",
              f"page=00000000dead pfn=0x{0x5000 + 2 * i:x} order=1 migratetype=1 percpu_refill=1")
    t.add(1, "mm_page_alloc_zone_locked", "page=00000000dead pfn=0x6000 order=4 migratetype=0 "
          "percpu_refill=0")
    for i in range(3):
        t.add(0, "mm_page_pcpu_drain", f"page=00000000dead pfn=0x{0x7000 + i:x} order=0 migratetype=1")
    t.add(1, "mm_page_alloc_extfrag", "page=00000000dead pfn=0x8000 alloc_order=0 fallback_order=3 "
          "pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=1 "
          "change_ownership=0")
    fid = replay_json(t.write(os.path.join(tmp, "kernel.txt")))["variants"][0]["fidelity"]
    kernel = rows(fid, "kernel")
    # per 1000 of the 4 allocations: 16 pages refilled, 1 zone-locked, 3 drained, 1 fallback
    assert kernel == {"pcp_refill_pages": 4000, "zone_locked_allocs": 250, "pcp_drain_pages": 750,
                      "extfrag_fallbacks": 250, "pageblock_steals": 0}, kernel
    assert rows(fid, "kernel", cpu=1, order=1)["pcp_refill_pages"] == 4000
    assert rows(fid, "kernel", cpu=0)["pcp_drain_pages"] == 750


def test_bulk_takes(tmp):
    """The kernel's alloc_pages_bulk traces no allocation: CPU 0 is refilled
    with 63 pages and hands out one; kworker on CPU 1 frees 16 others of
    them, which no traced allocation took -- a bulk allocation did, right
    after their refill.  So CPU 0's list held 62 - 16 = 46, and the 46
    allocations after empty it: the next one refills, 126 pages in all.
    A replay that kept the 16 on the list would refill once."""
    t = Trace()
    t.refill(0, 0x1000, 63)
    t.alloc(0, 0x1000)
    for i in range(1, 17):
        t.free(1, 0x1000 + i)
    for i in range(17, 63):
        t.alloc(0, 0x1000 + i)
    t.refill(0, 0x2000, 63)
    t.alloc(0, 0x2000)
    path = t.write(os.path.join(tmp, "bulk.txt"))
    doc = json.loads(replay([path, "--json", "--config", SEEDS, "--warmup", "0"] + ONCE).stdout)
    v = doc["variants"][0]
    assert v["replay"]["bulk_takes"] == 16 and v["replay"]["early_frees"] == 0, v["replay"]
    per_1000 = 126 * 1000 // 48     # 126 pages over 48 allocations
    assert rows(v["fidelity"], "kernel")["pcp_refill_pages"] == per_1000, v["fidelity"]
    assert rows(v["fidelity"], "zonealloc")["pcp_refill_pages"] == per_1000, v["fidelity"]
    out = replay([path, "--config", SEEDS, "--warmup", "0"] + ONCE).stdout
    assert "16 pages taken off a CPU's list by allocations the kernel does not trace" in out, out


def test_model_trace(tmp):
    """--model-trace writes the model's events as the kernel prints them,
    stamped with the time and line of the trace's event being played: one
    allocation on CPU 5 refills 63 pages, 63 mm_page_alloc_zone_locked
    lines at that event's time and line, which the trace reader reads back
    whole.  With --ab, one file per variant."""
    t = Trace()
    t.alloc(5, 0x1000)
    path = t.write(os.path.join(tmp, "one.txt"))
    out = os.path.join(tmp, "model.txt")
    replay([path, "--config", SEEDS, "--model-trace", out] + ONCE + COLD)
    with open(out) as f:
        lines = f.read().splitlines()
    assert len(lines) == 63, lines
    line_no = len(HEADER.splitlines()) + 1
    assert all("[005]" in l and " 100.000000: mm_page_alloc_zone_locked: " in l and
               "percpu_refill=1" in l and l.endswith(f"line={line_no}") for l in lines), lines[0]
    p = replay([out, "--json", "--config", SEEDS] + ONCE + COLD)
    assert json.loads(p.stdout)["variants"][0]["replay"]["events"] == 63, p.stdout[-400:]
    assert "malformed" not in p.stdout + p.stderr, p.stderr
    two = os.path.join(tmp, "ab")
    replay([path, "--config", SEEDS, "--ab", "pcp_high_order", "--model-trace", two] + ONCE + COLD)
    assert os.path.exists(two + ".before") and os.path.exists(two + ".after"), os.listdir(tmp)
    replay([path, "--model-trace", os.path.join(tmp, "no", "such", "dir")] + ONCE, expect=2)


def test_excerpt_whole_bursts(tmp):
    """bench/traces/excerpt.py cuts at the limit it is given, but never
    inside a drain or a refill: a cut after the third of five drain events
    of CPU 1 takes the other two (not the CPU 0 event among them: CPU 0's
    events end at the limit), and stops before CPU 1's next event; a
    refill keeps the allocation it was for."""
    def excerpt(trace, name, events):
        path = trace.write(os.path.join(tmp, name))
        cut = subprocess.run([sys.executable, os.path.join(TRACES, "excerpt.py"), "--events",
                              str(events), path], capture_output=True, text=True, check=True).stdout
        return [line for line in cut.splitlines() if not line.startswith("#")]

    t = Trace()
    t.alloc(0, 0x1000)
    t.free(1, 0x2000)
    for pfn in range(0x3000, 0x3003):
        t.drain(1, pfn)
    t.alloc(0, 0x1001)
    for pfn in range(0x3003, 0x3005):
        t.drain(1, pfn)
    t.free(1, 0x2001)
    t.free(1, 0x2002)
    body = excerpt(t, "whole.txt", 5)
    assert len(body) == 7 and body[-1].endswith("pfn=0x3004 order=0 migratetype=1"), body
    assert not any("pfn=0x1001 " in line for line in body), body
    assert sum("mm_page_pcpu_drain" in line for line in body) == 5, body
    t = Trace()
    t.refill(0, 0x1000, 4)
    t.alloc(0, 0x1000)
    t.alloc(0, 0x1001)
    body = excerpt(t, "refill.txt", 2)
    assert len(body) == 5 and "mm_page_alloc:" in body[-1] and "0x1000 " in body[-1], body
    # two CPUs' drains interleaved at the limit, and a refill under the
    # zone-lock events of 2026: each whole
    t = Trace()
    t.add(1, "mm_zone_locked", "node_id=0 name=Normal count=2 contended=0 caller=rmqueue_bulk+0x3c")
    t.refill(1, 0x5000, 2)
    t.drain(0, 0x3000)
    t.add(1, "mm_zone_lock_unlock", "node_id=0 name=Normal count=2 caller=rmqueue_bulk+0x3c")
    t.drain(0, 0x3001)
    t.alloc(1, 0x5000)
    t.drain(0, 0x3002)
    t.alloc(0, 0x1000)
    body = excerpt(t, "two.txt", 4)
    assert len(body) == 8 and "pfn=0x3002 " in body[-1] and "pfn=0x5000 " in body[-2], body
    body = excerpt(t, "two.txt", 3)         # CPU 0's drain began past the limit: none of it
    assert len(body) == 5 and "mm_page_alloc: pfn=0x5000 " in body[-1], body


def test_side_files_found(tmp):
    """A trace recorded with perf or trace-cmd has /proc/zoneinfo and
    `sysctl vm` saved beside it (NAME.zoneinfo, NAME.sysctl): a replay of
    NAME.txt finds them without being told, says so, and mirrors them."""
    t = Trace()
    t.alloc(1, 0x1000)
    path = t.write(os.path.join(tmp, "beside.txt"), header="")
    with open(os.path.join(tmp, "beside.zoneinfo"), "w") as f:
        f.write("\n".join(l[len("# zoneinfo "):] for l in HEADER.splitlines()
                          if l.startswith("# zoneinfo ")) + "\n")
    with open(os.path.join(tmp, "beside.sysctl"), "w") as f:
        f.write("vm.min_free_kbytes = 4000\nvm.percpu_pagelist_high_fraction = 0\n")
    out = replay([path] + ONCE).stdout
    assert f"read beside the trace: {tmp}/beside.zoneinfo {tmp}/beside.sysctl" in out, out
    assert "derived from the sysctl: vm.min_free_kbytes=4000" in out, out
    assert "memory=1048576K" in out, out


def test_no_zoneinfo_start_state(tmp):
    """A trace without zoneinfo (perf's, with nothing saved beside it):
    what CPU 1's lists served without a refill, the model's lists start
    with too -- all of it, not what the default high keeps."""
    t = Trace()
    for i in range(6000):
        t.alloc(1, 0x200000 + i)
    path = t.write(os.path.join(tmp, "unzoned.txt"), header="")
    doc = json.loads(replay([path, "--json", "--warmup", "0", "--zoneinfo", "none"] + ONCE).stdout)
    f = doc["variants"][0]["fidelity"]
    kernel, model = rows(f, "kernel"), rows(f, "zonealloc")
    assert kernel["pcp_refill_pages"] == 0 and model["pcp_refill_pages"] == 0, (kernel, model)
    assert model["pcp_drain_pages"] == 0, model


def local_zones():
    """This machine's populated zones, [(start_pfn, spanned, managed)], from /proc/zoneinfo."""
    zones = []
    with open("/proc/zoneinfo") as f:
        for line in f:
            w = line.split()
            if line.startswith("Node "):
                zones.append({})
            elif zones and len(w) == 2 and w[0] in ("spanned", "managed", "start_pfn:"):
                zones[-1][w[0].rstrip(":")] = int(w[1])
    return [(z["start_pfn"], z["spanned"], z["managed"]) for z in zones if z.get("managed")]


def test_local_zoneinfo(tmp):
    """A trace with no zoneinfo and none beside it (perf's, a script's):
    if its pfns lie in this machine's zones (and it names no other number
    of CPUs) it replays on this machine's zoneinfo, and says so (the
    scorecard too); else, or with --zoneinfo none, on the defaults."""
    zones = local_zones()
    start, spanned, _ = max(zones, key=lambda z: z[2])
    managed = sum(z[2] for z in zones)
    end = max(z[0] + z[1] for z in zones)
    here, far = Trace(), Trace()
    for i in range(64):
        here.alloc(0, start + spanned // 2 + i)
        far.alloc(0, end + i)
    local = "assumed: this machine's zoneinfo"
    defaults = "assumed: the memory and zones of --config or the defaults (no zoneinfo"
    out = replay([here.write(os.path.join(tmp, "here.txt"), header="")] + ONCE).stdout
    assert local in out and f"memory={managed * 4}K" in out, out
    out = replay([os.path.join(tmp, "here.txt"), "--zoneinfo", "none"] + ONCE).stdout
    assert defaults in out and local not in out, out
    out = replay([far.write(os.path.join(tmp, "far.txt"), header="")] + ONCE).stdout
    assert defaults in out and local not in out, out
    cpus = max(int(l.split()[1]) for l in open("/proc/zoneinfo") if l.strip().startswith("cpu:")) + 1
    other = here.write(os.path.join(tmp, "other.txt"), header=f"# nr_cpus {cpus + 1}\n")
    out = replay([other] + ONCE).stdout
    assert defaults in out and local not in out, out
    beyond = Trace()                # no CPU count, but an event of a CPU this machine lacks
    beyond.alloc(cpus, start + spanned // 2)
    out = replay([beyond.write(os.path.join(tmp, "beyond.txt"), header="")] + ONCE).stdout
    assert defaults in out and local not in out, out
    here.write(os.path.join(tmp, "here.trace.zst"), header="")
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("# split held: not\nhere tracefs page shell - held\n")
    out = zabench("scorecard", ["--corpus", corpus], 0).stdout
    assert "tracefs*" in out and "* replayed on this machine's /proc/zoneinfo" in out, out
    doc = json.loads(zabench("scorecard", ["--corpus", corpus, "--json"], 0).stdout)
    assert all(r["zoneinfo_here"] for r in doc["rows"]), doc
    # A prediction whose second trace lends keys from this machine's
    # zoneinfo is marked; one whose traces both carry theirs is not.
    mine = Trace()
    for i in range(64):
        mine.alloc(0, 0x1000 + i)
    mine.write(os.path.join(tmp, "mine.trace.zst"))
    with open(corpus, "w") as f:
        f.write("# split held: not\nmine zabench page shell - held\n"
                "predict mine here percpu_pagelist_high_fraction held\n"
                "predict mine mine percpu_pagelist_high_fraction held\n")
    doc = json.loads(zabench("scorecard", ["--corpus", corpus, "--json"], 0).stdout)
    marks = {r["trace"]: r["zoneinfo_here"] for r in doc["rows"]}
    assert marks == {"mine": False, "mine>here": True, "mine>mine": False}, doc


def test_trace_file_header(tmp):
    """A dump of tracefs's "trace" file: its header's #P:N gives the CPUs,
    and a buffer that holds fewer events than were written (the ring
    overwrote some) is named as lost events."""
    t = Trace()
    t.alloc(2, 0x1000)
    t.free(2, 0x1000)
    head = ("# tracer: nop\n#\n# entries-in-buffer/entries-written: {}/{}   #P:3\n#\n"
            "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n#              | |  \n")
    whole = t.write(os.path.join(tmp, "whole.txt"), header=head.format(2, 2))
    out = replay([whole] + ONCE).stdout
    assert "nr_cpus=3" in out and "lost-events" not in out, out
    cut = t.write(os.path.join(tmp, "overwritten.txt"), header=head.format(2, 9))
    out = replay([cut] + ONCE).stdout
    assert "1 lost-events marker (first: line 3)" in out, out


def test_report_variants(tmp):
    """perf script -F without time: refused at the first such line, naming
    what is needed; a header with no event after it: refused; trace-cmd
    report --ts-diff's "(+N)": read; without cpu (perf record without -a):
    replayed as CPU 0, and said."""
    ev = "kmem:mm_page_alloc: pfn=0x1000 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE"
    untimed = os.path.join(tmp, "untimed.txt")
    with open(untimed, "w") as f:
        f.write(f"[001]   {ev}\n" * 3)
    err = replay([untimed] + ONCE, expect=2).stderr
    assert "untimed.txt:1: a page event with no timestamp" in err and "time,cpu" in err, err
    headonly = os.path.join(tmp, "headonly.txt")
    with open(headonly, "w") as f:
        f.write("# nr_cpus 2\n# uname 6.18.0\n")
    err = replay([headonly] + ONCE, expect=2).stderr
    assert "headonly.txt: no kmem event in its 2 lines" in err, err
    tsdiff = os.path.join(tmp, "tsdiff.txt")          # trace-cmd report --ts-diff
    with open(tsdiff, "w") as f:
        f.write("cpus=2\n" + "".join(f"  bash-1 [001] 100.00000{i}: (+{i}) mm_page_alloc: pfn=0x{0x1000 + i:x} "
                                     "order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n" for i in range(4)))
    doc = json.loads(replay([tsdiff, "--json"] + ONCE).stdout)
    assert doc["variants"][0]["replay"]["events"] == 4, doc["variants"][0]["replay"]
    nocpu = os.path.join(tmp, "nocpu.txt")
    with open(nocpu, "w") as f:
        f.write(f"    100.000001:   {ev}\n    100.000002:   {ev.replace('0x1000', '0x1001')}\n")
    out = replay([nocpu] + ONCE).stdout
    assert "assumed: CPU 0 for the events that name no CPU" in out, out


def mutate(rng, lines):
    """A few of the mistakes files in the wild carry: a number swapped for
    an extreme one, a byte flipped, lines repeated, lost or cut short, a
    line thousands of times too long."""
    nasty = ["0", "-1", "99", "4294967296", "18446744073709551615", "0xffffffffffffffff",
             "999999999999999999999", "", "nan", "\x00", "\xff"]
    lines = list(lines)
    for _ in range(rng.randint(1, 12)):
        i, kind = rng.randrange(len(lines)), rng.randrange(6)
        line = lines[i]
        if kind == 0 and any(c.isdigit() for c in line):
            j = rng.choice([k for k, c in enumerate(line) if c.isdigit()])
            e = j
            while e < len(line) and line[e] in "0123456789abcdefx":
                e += 1
            lines[i] = line[:j] + rng.choice(nasty) + line[e:]
        elif kind == 1 and line:
            j = rng.randrange(len(line))
            lines[i] = line[:j] + chr(rng.randrange(1, 256)) + line[j + 1:]
        elif kind == 2:
            j = rng.randrange(len(lines))
            lines[i:i] = lines[j:j + rng.randint(1, 50)]
        elif kind == 3:
            del lines[i:i + rng.randint(1, 30)]
        elif kind == 4:
            lines[i] = line[:rng.randrange(len(line) + 1)]
        else:
            lines[i] = line * rng.randint(2, 3000)
        lines = lines or [""]
    return lines


def test_mutated_traces(tmp):
    """Shipped traces of each recorder, mutated at random (a fixed seed):
    each replays or is refused with a message, never a crash (under the
    sanitizers, never a report)."""
    import lzma
    import random
    seeds = []
    for name in ("build", "interp", "fork-tc", "grep", "git-slab"):
        with lzma.open(os.path.join(TRACES, f"{name}.trace.xz"), "rt", errors="replace") as f:
            seeds.append([next(f).rstrip("\n") for _ in range(1500)])
    rng = random.Random(36)
    path = os.path.join(tmp, "mutated.txt")
    for case in range(400):
        with open(path, "w", errors="surrogateescape") as f:
            f.write("\n".join(mutate(rng, rng.choice(seeds))) + "\n")
        args = [ZABENCH, "replay", path] + ONCE + (["--events", "page,slab"] if case % 4 == 0 else [])
        p = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=120)
        assert p.returncode in (0, 2) and "Sanitizer" not in p.stderr and \
            "runtime error" not in p.stderr, (case, p.returncode, p.stderr[-2000:])
        assert p.returncode == 0 or p.stderr.startswith("zabench replay: "), (case, p.stderr[-500:])


def test_deterministic():
    path = os.path.join(TRACES, "udp16k.trace.xz")
    docs = [json.loads(replay([path, "--json", "--iterations", "2"]).stdout) for _ in range(2)]
    for a, b in zip(docs[0]["variants"], docs[1]["variants"]):
        assert a["counters"] == b["counters"], "two replays differ in their counters"
        assert a["fidelity"] == b["fidelity"], "two replays differ in their fidelity"


def test_shipped_traces_replay_clean():
    for name in sorted(os.listdir(TRACES)):
        if ".trace." not in name:
            continue
        args = ["--events", "page,slab"] if "slab" in name else []
        side = os.path.join(TRACES, name.split(".trace.")[0] + ".zoneinfo")
        if os.path.exists(side):
            args += ["--zoneinfo", side]
        doc = json.loads(replay([os.path.join(TRACES, name), "--json"] + ONCE + args).stdout)
        r = doc["variants"][0]["replay"]
        # what the kernel does not trace: its own failures, some slab frees,
        # the frees of some page tables (each seen by hand in the fork and
        # build traces: allocated again with no free since, no lost events)
        unexpected = {k: n for k, n in r.items()
                      if k not in ("events", "early_frees", "bulk_takes", "warmup_allocs", "kernel_failed",
                                   "unknown_object", "live_object", "untraced_free") and n}
        assert not unexpected, (name, r)
        assert doc["variants"][0]["fidelity"]["page_allocs"] > 1000, name


def test_ab_sweep_and_predict(tmp):
    build = os.path.join(TRACES, "build.trace.xz")
    hfmax = os.path.join(TRACES, "build-hfmax.trace.xz")
    doc = json.loads(replay([build, "--json", "--ab", "percpu_pagelist_high_fraction=0:1048576",
                             "--predict", hfmax] + ONCE).stdout)
    before, after = doc["variants"]
    assert "predicted" not in before and after["predicted"]["trace"] == hfmax
    drains = [rows(v["fidelity"], "zonealloc")["pcp_drain_pages"] for v in (before, after)]
    assert drains[1] > 2 * drains[0], drains  # high pinned at 4 batches drains more
    # the second kernel's figures sit beside the "after" model's, same rows
    target = rows(after["predicted"]["fidelity"], "kernel")
    assert target["pcp_drain_pages"] > 2 * rows(before["fidelity"], "kernel")["pcp_drain_pages"]
    assert rows(after["predicted"]["fidelity"], "zonealloc")["pcp_drain_pages"] == drains[1]
    out = replay([build, "--sweep", "percpu_pagelist_high_fraction=0,8,64"] + ONCE).stdout
    assert "Sweep of percpu_pagelist_high_fraction" in out, out
    table = out[out.index("Sweep of percpu_pagelist_high_fraction"):]
    sweep_rows = [line.split() for line in table.splitlines() if line.startswith("pcp_drain_pages ")]
    assert len(sweep_rows) == 1 and sweep_rows[0][1] == "default" and len(sweep_rows[0]) == 5, table
    sweep = json.loads(replay([build, "--json", "--sweep", "percpu_pagelist_high_fraction=0,8"]
                              + ONCE).stdout)["sweep"]
    assert sweep["key"] == "percpu_pagelist_high_fraction" and sweep["values"] == ["0", "8"]
    assert [r["experiment"] for r in sweep["runs"]] == ["replay", "replay"]


def test_kernel_ab_sheaves(tmp):
    """--ab kernel=6.18:7.0 on a slab trace: 6.18 gives sheaves only to the
    caches that ask (vm_area_struct), 7.0 to every cache, with no CPU slab
    under them: exact counts of 100 allocations and frees per cache."""
    t = Trace()
    for i in range(100):
        t.cache_alloc(0, 0x1000 + i, "vm_area_struct", 200)
        t.cache_alloc(0, 0x9000 + i, "dentry", 192)
    for i in range(100):
        t.cache_free(0, 0x1000 + i, "vm_area_struct")
        t.cache_free(0, 0x9000 + i, "dentry")
    path = t.write(os.path.join(tmp, "slab.trace"))
    doc = json.loads(replay([path, "--json", "--events", "page,slab", "--ab", "kernel=6.18:7.0"]
                            + ONCE + COLD).stdout)
    v618, v70 = (v["counters"] for v in doc["variants"])
    # 6.18: vm_area_struct's 100 from its sheaves, dentry's 100 from its CPU slab
    assert v618["slab_alloc_cpu_sheaf"] == 100 and v618["slab_free_cpu_sheaf"] == 100, v618
    assert v618["slab_alloc_fastpath"] >= 100, v618
    # 7.0: both caches' 200 from sheaves, counted as the fast path; no CPU slab
    assert v70["slab_alloc_fastpath"] == 200 and v70["slab_free_fastpath"] == 200, v70
    assert v70["slab_alloc_cpu_sheaf"] == 0 and v70["slab_sheaf_refill"] > 0, v70


def test_bad_input(tmp):
    not_trace = os.path.join(tmp, "prose.txt")
    with open(not_trace, "w") as f:
        f.write("this is not a trace\n" * 2000)
    err = replay([not_trace] + ONCE, expect=2).stderr
    assert "prose.txt" in err, err
    whole = open(os.path.join(TRACES, "udp16k.trace.xz"), "rb").read()
    cut = os.path.join(tmp, "cut.trace.xz")
    with open(cut, "wb") as f:
        f.write(whole[:len(whole) // 2])
    err = replay([cut] + ONCE, expect=2).stderr
    assert "line" in err and "truncated" in err, err
    replay([os.path.join(tmp, "missing.txt")] + ONCE, expect=2)
    replay(ONCE, expect=2)                                    # no trace
    t = Trace()
    t.alloc(9, 0x1000)                                        # CPU 9 of 8
    t.alloc(1, 0x1001)
    doc = replay_json(t.write(os.path.join(tmp, "cpu.txt")))
    assert doc["variants"][0]["fidelity"]["page_allocs"] == 1
    p = replay([os.path.join(tmp, "cpu.txt"), "--config", SEEDS] + ONCE + COLD)
    assert "1 CPU beyond nr_cpus (first: line 17)" in p.stdout, p.stdout
    # a pfn of all ones is the pfn map's empty mark: refused, not followed
    t = Trace()
    t.alloc(0, 0x1000)
    t.free(0, 0xffffffffffffffff)
    t.free(0, 0x1000)
    v = replay_json(t.write(os.path.join(tmp, "ones.txt")))["variants"][0]
    assert v["replay"]["early_frees"] == 1 and v["replay"]["alloc_failed"] == 0, v["replay"]
    replay([os.path.join(tmp, "cpu.txt"), "--zone-policy", "nearest"] + ONCE, expect=2)
    replay([os.path.join(tmp, "cpu.txt"), "--events", "pages"] + ONCE, expect=2)
    replay([os.path.join(tmp, "cpu.txt"), "--start", "warm"] + ONCE, expect=2)
    # a pfn allocated again with no free between: lost, or, if it was a
    # page table or mmu_gather's table batch, a free the kernel does not trace
    t = Trace()
    t.alloc(0, 0x1000, mt=0, gfp="GFP_KERNEL_ACCOUNT|__GFP_ZERO|__GFP_COMP")
    t.alloc(0, 0x1000)
    t.alloc(0, 0x3000, mt=0, gfp="GFP_NOWAIT")
    t.alloc(0, 0x3000)
    t.alloc(0, 0x2000)
    t.alloc(0, 0x2000)
    v = replay_json(t.write(os.path.join(tmp, "again.txt")))["variants"][0]
    assert v["replay"]["untraced_free"] == 2 and v["replay"]["live_pfn"] == 1, v["replay"]
    # files recorded beside a trace that are not what they are given as
    bad = os.path.join(tmp, "bad.zoneinfo")
    with open(bad, "w") as f:
        f.write("Node 0, zone   Normal\n  managed  100\nvm.swappiness = 60\n")
    err = replay([os.path.join(tmp, "cpu.txt"), "--zoneinfo", bad] + ONCE, expect=2).stderr
    assert "bad.zoneinfo:3: not a line of /proc/zoneinfo" in err, err
    err = replay([os.path.join(tmp, "cpu.txt"), "--sysctl", not_trace] + ONCE, expect=2).stderr
    assert "prose.txt:1: not a line of `sysctl -a`" in err, err


def test_scorecard(tmp):
    """The scorecard of a corpus: each trace's rows and each prediction's,
    the summary by split, and the kernel against itself (a repeat: here
    the second run refilled 63 pages per 100 allocations, the first
    none); a corpus line that is none is refused with its number, a trace
    that cannot be replayed is named and counted failed."""
    for name, refills in (("mine", 0), ("again", 63)):
        t = Trace()
        for i in range(100):
            t.alloc(i % 2, 0x1000 + i)
            for j in range(refills if i == 50 else 0):
                t.add(0, "mm_page_alloc_zone_locked", f"page=000000000000dead pfn=0x{0x9000 + j:x} "
                      "order=0 migratetype=1 percpu_refill=1")
        for i in range(100):
            t.free(i % 2, 0x1000 + i)
        t.write(os.path.join(tmp, f"{name}.trace.zst"))       # any name: read by its content
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("# a corpus\n# split tuned: looked at\n# split held: not\n"
                "mine zabench page fork - tuned --events 200\n"
                "predict mine mine percpu_pagelist_high_fraction held\n"
                "repeat mine again\n")
    out = zabench("scorecard", ["--corpus", corpus], 0).stdout
    assert "mine>mine" in out and out.count("pcp_refill_pages") == 3, out
    assert "tuned  3 of 3 rows within 25% (+5), 3 within 10% (+2)" in out, out
    assert "held   3 of 3 rows within 25% (+5), 3 within 10% (+2)" in out, out
    assert "all    6 of 6 rows" in out, out
    assert "The kernel against itself" in out and "mine~again" in out, out
    assert "repeat 2 of 3 rows within 25% (+5)" in out, out
    doc = json.loads(zabench("scorecard", ["--corpus", corpus, "--json"], 0).stdout)
    assert doc["kind"] == "scorecard" and len(doc["rows"]) == 6, doc
    assert {r["split"] for r in doc["rows"]} == {"tuned", "held"}, doc
    refill = [r for r in doc["repeats"] if r["metric"] == "pcp_refill_pages"]
    assert len(doc["repeats"]) == 3 and refill[0]["kernel"] == 0, doc
    assert abs(refill[0]["zonealloc"] - 63000 / 90) < 0.01, doc   # after 10 warm-up allocations
    with open(corpus, "w") as f:
        f.write("# split tuned: looked at\nmine zabench page fork - maybe\n")
    err = zabench("scorecard", ["--corpus", corpus], 2).stderr
    assert "corpus.txt:2: not" in err and "declared" in err, err
    with open(corpus, "w") as f:
        f.write("repeat mine\n")
    err = zabench("scorecard", ["--corpus", corpus], 2).stderr
    assert "corpus.txt:1: not" in err and "repeat FIRST SECOND" in err, err
    with open(corpus, "w") as f:
        f.write("# split no meaning\n")
    err = zabench("scorecard", ["--corpus", corpus], 2).stderr
    assert "corpus.txt:1: not \"# split WORD: what it means\"" in err, err
    with open(corpus, "w") as f:
        f.write("# split held: not looked at\nghost zabench page fork - held\n")
    p = zabench("scorecard", ["--corpus", corpus], 1)
    assert "ghost.trace.xz" in p.stderr and "failed" in p.stdout, (p.stdout, p.stderr)
    zabench("scorecard", ["--corpus", os.path.join(tmp, "none.txt")], 2)


CASES = [test_refill_on_the_cpu_that_allocated, test_start_state, test_start_high_decays,
         test_zone_lock_rows,
         test_scorecard, test_drain_after_frees_of_early_pages,
         test_unmovable_allocation_claims_a_pageblock, test_kernel_column_from_the_trace,
         test_deterministic, test_shipped_traces_replay_clean, test_ab_sweep_and_predict,
         test_kernel_ab_sheaves, test_bulk_takes, test_model_trace, test_excerpt_whole_bursts,
         test_side_files_found, test_no_zoneinfo_start_state, test_local_zoneinfo,
         test_trace_file_header, test_report_variants,
         test_mutated_traces,
         test_bad_input]
wanted = sys.argv[3:]
unknown = set(wanted) - {c.__name__[len("test_"):] for c in CASES}
if unknown:
    sys.exit(f"test_replay: no case {', '.join(sorted(unknown))}")
with tempfile.TemporaryDirectory() as tmp:
    for case in CASES:
        if not wanted or case.__name__[len("test_"):] in wanted:
            case(*([tmp] if case.__code__.co_argcount else []))
            print(f"test_replay: {case.__name__[len('test_'):]} ok")
print("test_replay: ok")
