#!/usr/bin/env python3
"""The libraries export their API and nothing else.

    check_symbols.py [--nm NM] --static libzonealloc.a --shared libzonealloc.so
                     [--malloc libzonealloc-malloc.so]

Lists the global defined symbols of each library (`nm -g --defined-only` for
the archive, `nm -D --defined-only` for the shared objects) and fails, naming
them, on any that is neither public API -- a `za_` name; for the drop-in
malloc also the C library's and C++'s allocation functions it provides, listed
below -- nor carries the internal prefix `za__`.  Internal symbols are hidden
(-fvisibility=hidden) and, in the static library, made local (CMakeLists.txt:
one prelinked object, objcopy --localize-hidden), so a program may use any
other name.  Also: the static and the shared library export the same `za_`
API, and the drop-in malloc the same plus exactly the names below.
"""
import argparse
import os
import shutil
import subprocess
import sys

PUBLIC_PREFIX = "za_"
INTERNAL_PREFIX = "za__"  # reserved for a global that must not be API; none today

# What libzonealloc-malloc.so provides beyond the za_ API (src/malloc/malloc.c,
# ZA_MALLOC_OVERRIDE): the C library's names ...
MALLOC_FAMILY = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "memalign",
    "aligned_alloc", "posix_memalign", "valloc", "pvalloc",
    "malloc_usable_size", "free_sized", "free_aligned_sized", "malloc_trim",
    "mallinfo2", "mallinfo",
}
# ... and C++'s operators new and delete (Itanium ABI, LP64 mangling).
CXX_OPERATORS = {
    "_Znwm", "_Znam",
    "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv",
    "_ZdlPvm", "_ZdaPvm",
    "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
}
MALLOC_EXTRA = MALLOC_FAMILY | CXX_OPERATORS


def symbols(nm, path, dynamic):
    """The global defined symbols of path: {name: nm type letter}."""
    cmd = [nm, "-D" if dynamic else "-g", "--defined-only", path]
    try:
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True).stdout
    except subprocess.CalledProcessError as e:
        sys.exit("check_symbols: %s failed: %s" % (" ".join(cmd), e.stderr.strip()))
    result = {}
    for line in out.splitlines():
        fields = line.split()
        # "value type name"; archive member headers ("zonealloc.o:") and
        # blank lines are skipped.
        if len(fields) != 3:
            continue
        name = fields[2].split("@")[0]  # a version suffix, if any
        result[name] = fields[1]
    return result


def allowed(name, extra):
    return name.startswith(PUBLIC_PREFIX) or name in extra


def check(nm, path, dynamic, extra, failures):
    syms = symbols(nm, path, dynamic)
    if not syms:
        failures.append("%s: no global symbols at all (is it the library?)" % path)
    bad = sorted(n for n in syms if not allowed(n, extra))
    if bad:
        failures.append("%s exports %d symbols that are neither API (za_%s) nor internal (%s):\n  %s"
                        % (path, len(bad), ", the malloc family" if extra else "",
                           INTERNAL_PREFIX, "\n  ".join("%s %s" % (syms[n], n) for n in bad)))
    api = {n for n in syms if n.startswith(PUBLIC_PREFIX) and not n.startswith(INTERNAL_PREFIX)}
    internal = {n for n in syms if n.startswith(INTERNAL_PREFIX)}
    print("%s: %d global symbols: %d za_ API, %d %s internal, %d malloc family/C++, %d other"
          % (os.path.basename(path), len(syms), len(api), len(internal), INTERNAL_PREFIX,
             len([n for n in syms if n in extra]), len(bad)))
    return syms, api


def compare(what, a_name, a, b_name, b, failures):
    only_a, only_b = sorted(a - b), sorted(b - a)
    if only_a or only_b:
        failures.append("%s differ:\n  only in %s: %s\n  only in %s: %s"
                        % (what, a_name, " ".join(only_a) or "-",
                           b_name, " ".join(only_b) or "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--static", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--malloc")
    args = ap.parse_args()

    nm = shutil.which(args.nm)
    if not nm:
        sys.exit("check_symbols: '%s' not found: nm is part of binutils "
                 "(Debian: apt-get install binutils)" % args.nm)

    failures = []
    _, static_api = check(nm, args.static, False, set(), failures)
    _, shared_api = check(nm, args.shared, True, set(), failures)
    compare("the za_ API of the static and the shared library",
            args.static, static_api, args.shared, shared_api, failures)
    if args.malloc:
        msyms, malloc_api = check(nm, args.malloc, True, MALLOC_EXTRA, failures)
        compare("the za_ API of the shared library and the drop-in malloc",
                args.shared, shared_api, args.malloc, malloc_api, failures)
        missing = sorted(MALLOC_EXTRA - set(msyms))
        if missing:
            failures.append("%s does not provide: %s" % (args.malloc, " ".join(missing)))
    else:
        print("(no drop-in malloc in this build: not checked)")

    if failures:
        for f in failures:
            print("FAIL: " + f, file=sys.stderr)
        return 1
    print("ok: every exported symbol is API; the static and shared API are the same (%d za_ names)"
          % len(static_api))
    return 0


if __name__ == "__main__":
    sys.exit(main())
