#!/usr/bin/env python3
"""zabench top on a process running on the drop-in malloc (LD_PRELOAD),
which publishes its system by default:

 1. the list (no PID) names the process;
 2. a line per interval when stdout is no terminal (--count);
 3. --json: one snapshot, its counters and reports;
 4. --once --report buddyinfo: the report in the kernel's format; --report
    rss: where the malloc's RSS is;
 5. the full-screen view under a pseudo-terminal: views switched, q quits;
 6. ZA_CONFIG=publish=0: no segment;
 7. the process gone: its segment removed at exit, top says so;
 8. bad arguments: a usage message, exit status 2.

 9. the USDT probes in the library's notes (when built with sys/sdt.h).

usage: test_top.py <zabench> <libzonealloc-malloc.so> <python3 for the child> <sdt: 0|1>
"""
import json
import os
import pty
import select
import subprocess
import sys
import time

ZABENCH, LIB = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PYTHON = sys.argv[3] if len(sys.argv) > 3 else sys.executable
# The interpreter itself, not a wrapper that execs it (pyenv's shims are
# shell scripts): a program that execs leaves its first segment behind,
# and the job's segment must be the job's.
PYTHON = subprocess.run([PYTHON, "-c", "import sys; print(sys.executable)"], capture_output=True,
                        text=True, check=True).stdout.strip() or PYTHON
SDT = len(sys.argv) > 4 and sys.argv[4] not in ("0", "", "FALSE", "OFF")
PROBES = ("refill", "drain", "slab_new", "slab_discard", "large_alloc", "purge", "reclaim",
          "kswapd_wake", "alloc_fail")
# Allocates and frees (large frees start the purge worker, whose rounds
# publish) until its stdin closes.
JOB = r"""
import sys, select
keep = []
while not select.select([sys.stdin], [], [], 0.05)[0]:
    x = [bytearray(300) for i in range(3000)]
    keep = [bytearray(1 << 20) for i in range(4)]
    del x
"""
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def start_job(**env_vars):
    env = {k: v for k, v in os.environ.items() if k not in ("ZA_CONFIG", "ZA_STATS")}
    env.update(LD_PRELOAD=LIB, **env_vars)
    return subprocess.Popen([PYTHON, "-c", JOB], stdin=subprocess.PIPE, env=env)


def said(p):
    """What a run of zabench top printed, for a check's message if it fails."""
    if p.returncode == 0 and "Traceback" not in p.stderr:
        return ""
    return " (rc %d; stdout %r; stderr %r)" % (p.returncode, p.stdout[-400:], p.stderr[-400:])


def segment(pid):
    return "/dev/shm/zonealloc.%d.0" % pid


def top(*args, timeout=30):
    return subprocess.run([ZABENCH, "top", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def wait_for(cond, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def screen(pid):
    """The full-screen view under a pty: overview, s, b, then q."""
    child, fd = pty.fork()
    if child == 0:
        os.environ["TERM"] = "xterm"
        os.execv(ZABENCH, [ZABENCH, "top", str(pid), "--interval", "0.2"])
    out = b""

    def pump(seconds):
        nonlocal out
        end = time.time() + seconds
        while time.time() < end:
            if select.select([fd], [], [], 0.05)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    return
    pump(1.0)
    for key in (b"s", b"b", b"q"):
        os.write(fd, key)
        pump(0.8)
    _, status = os.waitpid(child, 0)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1, out.decode("utf-8", "replace")


def probes():
    """Each probe is a stapsdt note of provider zonealloc in the library."""
    if not SDT:
        print("skip the probes: built without sys/sdt.h")
        return
    notes = subprocess.run(["readelf", "-n", LIB], capture_output=True, text=True).stdout
    names = set()
    provider = None
    for line in notes.splitlines():
        words = line.split()
        if words[:1] == ["Provider:"]:
            provider = words[1]
        elif words[:1] == ["Name:"] and provider == "zonealloc":
            names.add(words[1])
    check(set(PROBES) <= names, "the USDT probes in the library: %s" % " ".join(sorted(names)))


def main():
    job = start_job()
    pid = job.pid
    try:
        check(wait_for(lambda: os.path.exists(segment(pid))), "the malloc publishes by default")
        listing = top()
        check(listing.returncode == 0 and any(line.split()[:1] == [str(pid)]
                                              for line in listing.stdout.splitlines()),
              "the list names the process" + said(listing))
        lines = top(pid, "--count", 3, "--interval", 0.3)
        rows = lines.stdout.splitlines()
        check(lines.returncode == 0 and len(rows) == 4 and rows[0].split()[:3] ==
              ["time", "pgalloc/s", "pgfree/s"], "a line per interval, with a header" + said(lines))
        snap = top(pid, "--json")
        data = json.loads(snap.stdout) if snap.returncode == 0 else {}
        stats = data.get("stats", {})
        check(data.get("pid") == pid and stats.get("pgalloc", 0) > 0 and
              stats.get("nr_allocated_pages", 0) > 0, "--json: the counters, pages allocated")
        check("buddyinfo" in data.get("reports", {}) and "slabinfo" in data.get("reports", {}),
              "--json: the reports, rendered once watched")
        report = top(pid, "--once", "--report", "buddyinfo")
        check(report.returncode == 0 and report.stdout.startswith("Node 0, zone"),
              "--once --report buddyinfo: the kernel's format")
        where = top(pid, "--once", "--report", "rss")
        check(where.returncode == 0 and "where the RSS of " in where.stdout and
              "small objects in the slabs: " in where.stdout and "rss" in data.get("reports", {}),
              "--once --report rss: where the malloc's RSS is" + said(where))
        status, text = screen(pid)
        check(status == 0 and "overview" in text and "slabs" in text and "buddyinfo" in text,
              "the full-screen view: views switched by key, q quits")
    finally:
        job.stdin.close()
        job.wait(timeout=30)
    check(job.returncode == 0, "the job exits normally")
    check(not os.path.exists(segment(pid)), "its segment is removed at exit")
    gone = top(pid, "--json")
    check(gone.returncode == 1 and "zonealloc.%d.0" % pid in gone.stderr, "top of a process gone says so")

    quiet = start_job(ZA_CONFIG="publish=0")
    time.sleep(0.5)
    check(not os.path.exists(segment(quiet.pid)), "ZA_CONFIG=publish=0: no segment")
    quiet.stdin.close()
    quiet.wait(timeout=30)

    for args in (["abc"], ["1", "2"], ["1", "--interval", "0"], ["1", "--report", "buddyinfo"]):
        bad = top(*args)
        check(bad.returncode == 2 and "usage: zabench top" in bad.stderr,
              "bad arguments %s: usage" % args)
    probes()
    if failures:
        print("%d failed" % len(failures))
        sys.exit(1)


main()
