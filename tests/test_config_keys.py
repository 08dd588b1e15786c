#!/usr/bin/env python3
"""One source of truth for the configuration keys: the table in src/config.c
(keys[]) with its defaults (za_config_defaults).  README.md's
"Configuration keys" table and the key=value lines of include/zonealloc.h
document them by hand; this test holds both to the library, so that
neither can drift from it:

 - the documented keys are exactly the library's: none missing, none extra
   (in any order);
 - each documented default is the library's default.

The library's side comes from the `config_keys` helper: the table's defaults
("auto" where the value is computed when a system is created) and the
effective configuration of a system created with them (za_mm_config_string,
auto resolved).  The two must list the same keys, and agree on every key
whose default is not "auto".

How a documented default is compared:
 - sizes compare as byte counts (1G == 1024M), also inside a value such as
   DMA32:256M+Normal;
 - "auto" is documented where, and only where, the library's default is
   auto; the value it resolves to depends on the machine (cpus, nr_cpus) or
   on other keys (min_free_kbytes, section_size) and is not documented;
 - an empty default (slub_debug) is "(none)" in README, nothing after the
   "=" in the header;
 - a README row may name several keys, "`a`, `b`", with defaults "`0`, `3`";
 - the header documents a key's default at its first key=value mention in
   its banner comments (the "/* ----" blocks): the block of za_mm_create
   first, then those of object caches, quicklists and reclaim.  Later
   mentions (debug=1, deferred_init=1 in the malloc block) are examples,
   not defaults.  Every key=value in a banner must name a key (but the
   prose's "key=value").

usage: test_config_keys.py <config_keys binary> <README.md> <zonealloc.h>
"""
import os
import re
import subprocess
import sys

HELPER, README, HEADER = sys.argv[1:4]
SIZE = re.compile(r"\b(\d+)([KMGT])\b")
HEADER_PAIR = re.compile(r"(?<![\w-])([a-z][a-z0-9_]*)=([^\s,()]*)")


def parse_config(text):
    """key=value,... -> ordered dict (zones use '+' and ':', never ',')."""
    pairs = [kv.split("=", 1) for kv in text.split(",")]
    return {k: v for k, v in pairs}


def library():
    env = {k: v for k, v in os.environ.items() if k != "ZA_CONFIG"}
    p = subprocess.run([HELPER], capture_output=True, text=True, env=env, timeout=60)
    if p.returncode:
        sys.exit(f"{HELPER}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    return parse_config(lines["defaults"]), parse_config(lines["effective"])


def norm(value):
    """A documented or printed value in one comparable form."""
    v = value.strip().strip("`").strip()
    if v == "(none)":
        v = ""
    return SIZE.sub(lambda m: str(int(m[1]) << 10 * ("KMGT".index(m[2]) + 1)), v)


def readme_table(path):
    """{key: (default, line)} from the table under '## Configuration keys'."""
    with open(path) as f:
        lines = f.read().splitlines()
    try:
        start = lines.index("## Configuration keys")
    except ValueError:
        sys.exit(f"{path}: no '## Configuration keys' section")
    rows, errors = {}, []
    for n, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("#"):
            break
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| key "):
            continue
        cells = line.strip().strip("|").split("|", 2)
        keys = [k.strip().strip("`") for k in cells[0].split(",")]
        defaults = cells[1].split(",") if len(keys) > 1 else [cells[1]]
        if len(defaults) != len(keys):
            errors.append(f"README.md:{n}: {len(keys)} keys but {len(defaults)} defaults")
            continue
        for k, d in zip(keys, defaults):
            if k in rows:
                errors.append(f"README.md:{n}: `{k}` is already in the table (line {rows[k][1]})")
            rows[k] = (d.strip(), n)
    if not rows:
        errors.append(f"{path}: the Configuration keys table has no rows")
    return rows, errors


def header_keys(path, known):
    """{key: (default, line)}: first key=value mention in a banner comment."""
    with open(path) as f:
        lines = f.read().splitlines()
    found, errors, in_banner = {}, [], False
    for n, line in enumerate(lines, 1):
        if re.match(r"/\* -{10,}", line):
            in_banner = True
            continue
        if in_banner and re.match(r" \* -{10,} \*/", line):
            in_banner = False
            continue
        if not in_banner:
            continue
        for m in HEADER_PAIR.finditer(line):
            key, value = m[1], m[2]
            if key == "key":            # the prose's "key=value pairs"
                continue
            if key not in known:
                errors.append(f"zonealloc.h:{n}: '{key}=' names no configuration key")
            elif key not in found:
                found[key] = (value, n)
    return found, errors


def compare(where, documented, defaults):
    """Errors for missing, extra and disagreeing keys of one document."""
    errors = []
    for key in defaults:
        if key not in documented:
            errors.append(f"{where}: key `{key}` (default {defaults[key] or '(none)'}) "
                          "is not documented")
    for key, (doc, line) in documented.items():
        if key not in defaults:
            errors.append(f"{where}:{line}: `{key}` is not a configuration key of the library")
            continue
        lib = defaults[key]
        if norm(doc) != norm(lib):
            errors.append(f"{where}:{line}: `{key}` documented default {doc.strip() or '(empty)'}"
                          f", the library's is {lib or '(none)'}")
    return errors


def main():
    defaults, effective = library()
    errors = []
    if list(defaults) != list(effective):
        errors.append(f"the table's keys {list(defaults)} and za_mm_config_string's "
                      f"{list(effective)} differ")
    for key, value in defaults.items():
        if value != "auto" and effective.get(key) != value:
            errors.append(f"`{key}`: default {value!r}, but a default system reports "
                          f"{effective.get(key)!r}")

    readme, errs = readme_table(README)
    errors += errs + compare("README.md", readme, defaults)
    header, errs = header_keys(HEADER, defaults)
    errors += errs + compare("zonealloc.h", header, defaults)

    resolved = ", ".join(f"{k}=auto ({effective[k]} here)" for k, v in defaults.items()
                         if v == "auto" and k in effective)
    print(f"{len(defaults)} keys; README.md documents {len(readme)}, zonealloc.h {len(header)}; "
          f"resolved at creation: {resolved}")
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print("the README table and the header agree with the library")


if __name__ == "__main__":
    main()
