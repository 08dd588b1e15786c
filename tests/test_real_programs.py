#!/usr/bin/env python3
"""Real programs from Debian on zonealloc's malloc: each workload runs once
with the C library's malloc and once under LD_PRELOAD=libzonealloc-malloc.so,
and must print the same output and exit with the same status.  A program
that is not installed is skipped with a message (.ci/run installs them all).

usage: test_real_programs.py <libzonealloc-malloc.so>
"""
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

LIB = sys.argv[1]

PYTHON_SCRIPT = r'''
import json, re, threading, collections, hashlib
words = ["w%d" % (i * 7919 % 100003) for i in range(600000)]
counts = collections.Counter(words)
d = {w: len(w) * i for i, w in enumerate(words)}
text = " ".join(words[:50000])
found = re.findall(r"w(\d\d)7\b", text)
doc = json.dumps({"counts": dict(counts.most_common(50)), "found": found[:100],
                  "d": sorted(d.items())[:1000]}, sort_keys=True)
back = json.loads(doc)
results = [0] * 4
def work(k):
    acc = []
    for i in range(250000):
        acc.append(("%d-%s" % (i, k)) * (i % 5))
        if len(acc) > 500:
            acc = acc[250:]
    results[k] = sum(len(s) for s in acc)
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print(len(counts), len(d), len(found), hashlib.sha256(doc.encode()).hexdigest(), back["found"][:5], results)
'''

SQL = r'''
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER, blob BLOB);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
INSERT INTO t SELECT i, 'name-' || (i * 7919 % 100003), i * 31 % 1000, zeroblob(i % 200) FROM c;
CREATE INDEX t_v ON t(v);
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(v), max(name) FROM t;
SELECT v, count(*) FROM t WHERE v BETWEEN 10 AND 20 GROUP BY v ORDER BY v;
SELECT name FROM t WHERE name LIKE 'name-9999%' ORDER BY name LIMIT 5;
DELETE FROM t WHERE v % 3 = 0;
UPDATE t SET name = upper(name) WHERE id % 1000 = 0;
SELECT count(*), sum(length(blob)) FROM t;
SELECT group_concat(name, ',') FROM (SELECT name FROM t ORDER BY id DESC LIMIT 10);
'''

PERL_SCRIPT = r'''
my %h; my @a;
for my $i (1..200000) { my $k = sprintf("k%06d", ($i * 7919) % 200003); $h{$k} .= "x" x ($i % 7); push @a, $k if $i % 3 == 0; }
my @s = sort { $h{$a} cmp $h{$b} or $a cmp $b } keys %h;
my $joined = join(",", @s[0..99]);
my @m = ($joined =~ /k(\d\d)1/g);
my %c; $c{length $h{$_}}++ for keys %h;
print scalar(keys %h), " ", scalar(@a), " ", scalar(@m), " ", join(" ", map { "$_=$c{$_}" } sort keys %c), "\n";
'''


def run(argv, preload, cwd=None, stdin=None, env_extra=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("ZA_CONFIG", None)
    env.update(env_extra or {})
    if preload:
        env["LD_PRELOAD"] = LIB
    t0 = time.monotonic()
    r = subprocess.run(argv, cwd=cwd, input=stdin, env=env, capture_output=True, timeout=300)
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def digest(b):
    return hashlib.sha256(b).hexdigest()[:16]


def make_text_file(path, mib):
    rnd = random.Random(7)
    with open(path, "w") as f:
        while f.tell() < mib << 20:
            f.write(" ".join(str(rnd.randrange(10 ** 9)) for _ in range(8)) + "\n")


def git_workload(preload, tmp):
    repo = os.path.join(tmp, "repo-%d" % preload)
    os.makedirs(repo)
    for d in range(20):
        os.makedirs(os.path.join(repo, "dir%02d" % d))
        for f in range(40):
            with open(os.path.join(repo, "dir%02d" % d, "file%03d.txt" % f), "w") as fh:
                fh.write(("line %d %d\n" % (d, f)) * (d * f % 50 + 1))
    env = {"GIT_AUTHOR_NAME": "z", "GIT_AUTHOR_EMAIL": "z@z", "GIT_COMMITTER_NAME": "z",
           "GIT_COMMITTER_EMAIL": "z@z", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1",
           "HOME": tmp}
    out, status = b"", 0
    steps = [["git", "init", "-q", "-b", "main"], ["git", "add", "."],
             ["git", "commit", "-q", "-m", "first"]]
    for step in steps:
        rc, o, e, _ = run(step, preload, cwd=repo, env_extra=env)
        status |= rc
    for k in range(5):
        with open(os.path.join(repo, "dir01", "file001.txt"), "a") as fh:
            fh.write("change %d\n" % k)
        rc, o, e, _ = run(["git", "commit", "-q", "-am", "change %d" % k], preload, cwd=repo, env_extra=env)
        status |= rc
    # gc packs with one thread: with several, delta choices (and pack sizes)
    # vary from run to run whatever the allocator.  The objects do not.
    for step in (["git", "log", "--format=%H %s"], ["git", "fsck", "--full"],
                 ["git", "-c", "pack.threads=1", "gc", "-q"],
                 ["git", "cat-file", "--batch-all-objects", "--batch-check"],
                 ["git", "diff", "HEAD~3", "--stat"]):
        rc, o, e, _ = run(step, preload, cwd=repo, env_extra=env)
        status |= rc
        out += o
    return status, out


def main():
    tmp = tempfile.mkdtemp(prefix="za-real-")
    failures, skipped, ran = [], [], []
    try:
        big, small = os.path.join(tmp, "big.txt"), os.path.join(tmp, "small.txt")
        make_text_file(big, 24)
        make_text_file(small, 3)
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
        workloads = [
            ("python3", [python, "-c", PYTHON_SCRIPT], None),
            ("sqlite3", ["sqlite3", ":memory:"], SQL.encode()),
            ("perl", ["perl", "-e", PERL_SCRIPT], None),
            ("sort", ["sort", "-S", "64M", big], None),
            ("sort -n --parallel=2", ["sort", "-n", "--parallel=2", "-S", "32M", big], None),
            ("xz -T2", ["sh", "-c", "xz -T2 -2 --block-size=1MiB -c \"$0\" > \"$0.xz\" && "
                        "sha256sum < \"$0.xz\" && xz -d -T2 -c \"$0.xz\" | sha256sum", small], None),
            ("pigz -p 2", ["sh", "-c", "pigz -p 2 -c \"$0\" | sha256sum", big], None),
        ]
        for name, argv, stdin in workloads:
            if not argv[0] or not shutil.which(argv[0]) or (name.startswith("pigz") and not shutil.which("pigz")):
                skipped.append(name)
                continue
            a = run(argv, False, stdin=stdin)
            b = run(argv, True, stdin=stdin)
            ran.append(f"{name} ({a[3]:.1f}s glibc, {b[3]:.1f}s zonealloc)")
            if a[0] != 0:
                failures.append(f"{name}: fails with glibc too (exit {a[0]}): {a[2].decode(errors='replace')[-300:]}")
            elif a[0] != b[0] or a[1] != b[1]:
                failures.append(f"{name}: glibc exit {a[0]} out {digest(a[1])}, zonealloc exit {b[0]} "
                                f"out {digest(b[1])}; stderr: {b[2].decode(errors='replace')[-400:]}")
        if shutil.which("git"):
            a, b = git_workload(False, tmp), git_workload(True, tmp)
            ran.append("git")
            if a[0] != 0:
                failures.append("git: fails with glibc too")
            elif a != b:
                failures.append(f"git: glibc {a[0]} {digest(a[1])}, zonealloc {b[0]} {digest(b[1])}")
        else:
            skipped.append("git")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for s in skipped:
        print(f"SKIP: {s} is not installed (scripts/install-deps test installs it)")
    for r in ran:
        print("ran:", r)
    for f in failures:
        print("FAIL:", f)
    print(f"test_real_programs: {len(ran) - len(failures)} of {len(ran)} matched glibc")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
