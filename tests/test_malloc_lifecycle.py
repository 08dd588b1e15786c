#!/usr/bin/env python3
"""A process's life on the drop-in malloc: each case of the `lifecycle`
program runs under LD_PRELOAD=libzonealloc-malloc.so, in the default and
the debug mode, and must end as it would on the C library's malloc -- with
the same exit status or signal and the same output.  A process whose main
thread called pthread_exit ends when its last thread does; a child forked
from a thread other than main ends when its thread returns; the program's
SIGSEGV handlers run as sigaction defines them, installed before or after
the malloc's own.  A case that does not end within HANG seconds fails.

usage: test_malloc_lifecycle.py <lifecycle binary> <libzonealloc-malloc.so> [case ...]
"""
import os
import re
import signal
import subprocess
import sys
import time

PROGRAM, LIB = sys.argv[1], sys.argv[2]
ONLY = sys.argv[3:]
HANG = 30

SEGV, TERM = -signal.SIGSEGV, -signal.SIGTERM
# case -> (exit status or -signal, the whole output as a regular expression)
CASES = {
    "main-exits": (0, r"thread done\n"),
    "main-exits-quiet-thread": (0, r"thread done\n"),
    "main-exits-then-sigterm": (TERM, r"ready\n"),
    "main-exits-atexit": (0, r"thread done\natexit ran\n"),
    "exit-while-allocating": (0, r"exiting\n"),
    "fork-from-thread": (0, r"child exited 0\n"),
    "fork-from-thread-_exit": (0, r"child exited 7\n"),
    "fork-from-thread-exec": (0, r"child exited 0\n"),
    "handler-resethand-before": (SEGV, r"handler\n"),
    "handler-resethand-after": (SEGV, r"handler\n"),
    "handler-recover-before": (0, r"recovered 3\n"),
    "handler-recover-after": (0, r"recovered 3\n"),
    "handler-nodefer-before": (0, r"segv blocked 0 usr1 blocked 1\n"),
    "handler-nodefer-after": (0, r"segv blocked 0 usr1 blocked 1\n"),
    "handler-ignored-before": (SEGV, r""),
    "handler-ignored-after": (SEGV, r""),
    "handler-ignored-raise-before": (0, r"survived\n"),
    "handler-default-raise-after": (SEGV, r""),
}


def run(case, debug):
    # Purge rounds ten minutes apart: the worker never ends on its own
    # within HANG, so only its look at the program's threads ends a process
    # whose main called pthread_exit.
    env = dict(os.environ, LD_PRELOAD=LIB, ZA_CONFIG="purge_delay_ms=1200000")
    if debug:
        env["ZA_CONFIG"] += ",debug=1"
    proc = subprocess.Popen([PROGRAM, case], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    if case == "main-exits-then-sigterm":
        # Signalled once its thread is ready, with only that thread and
        # the malloc's left: the program's default action must apply.
        ready = proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        out, err = communicate(proc)
        return proc.returncode, ready + out, err
    out, err = communicate(proc)
    return proc.returncode, out, err


def communicate(proc):
    """The output once the case's processes end; after HANG seconds, its
    whole process group is killed (a forked child too)."""
    try:
        return proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return out, err + f"\n(hung: killed after {HANG} s)"


def main():
    failures, runs = [], 0
    unknown = [c for c in ONLY if c not in CASES]
    if unknown:
        print(f"unknown cases {unknown}; the cases are {list(CASES)}")
        return 2
    for case, (status, output) in CASES.items():
        if ONLY and case not in ONLY:
            continue
        for debug in (False, True):
            runs += 1
            start = time.monotonic()
            code, out, err = run(case, debug)
            took = time.monotonic() - start
            mode = "debug" if debug else "default"
            if code != status or not re.fullmatch(output, out):
                failures.append(f"{case} ({mode}): exit {code}, expected {status}; "
                                f"output {out!r}, expected /{output}/; stderr {err.strip()!r}")
            else:
                print(f"ok {case} ({mode}) in {took:.2f} s")
    for f in failures:
        print("FAIL:", f)
    print(f"test_malloc_lifecycle: {runs - len(failures)} of {runs} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
