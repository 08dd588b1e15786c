#!/bin/sh
# Records the traces README.md lists, in full, into DIR, then cuts them to
# the excerpts shipped here (excerpt.py, zstd -19).  Needs root.  The
# machine should be otherwise idle: the trace is of every process.  They
# are read through trace_pipe (--pipe), as the shipped ones were, so that
# the text is the kernel's own.
#   bench/traces/record.sh path/to/zabench [DIR]     (DIR: /tmp/za-traces)
set -eu
zb=$(realpath "$1")
dir=${2:-/tmp/za-traces}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
mkdir -p "$dir"

# The project's build, from scratch (2 jobs: the machine's cores).
build() {
	rm -rf "$dir/tb"
	"$zb" record --pipe -o "$dir/$1.full.zst" -- sh -c \
		"cmake -S $src -B $dir/tb -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $dir/tb -j2 >/dev/null"
}

# vm.percpu_pagelist_high_fraction: 0 lets the kernel tune the per-CPU
# lists' high mark between high_min and high_max; the largest value pins
# it at its floor, 4 * batch.
hf=/proc/sys/vm/percpu_pagelist_high_fraction
old_hf=$(cat $hf)
trap 'echo "$old_hf" > $hf' EXIT
echo 0 > $hf
build build
echo 2147483647 > $hf
build build-hfmax
echo "$old_hf" > $hf

"$zb" record --pipe -o "$dir/udp16k.full.zst" -- python3 "$here/udp_stream.py" 16384 2

"$zb" record --pipe --slab -o "$dir/git-slab.full.zst" -- sh -c \
	"for i in 1 2 3; do rm -rf $dir/gs; git clone -q --no-local $src $dir/gs && git -C $dir/gs gc -q; done"

cut() {         # name, excerpt.py's options
	name=$1
	shift
	python3 "$here/excerpt.py" "$@" "$dir/$name.full.zst" | zstd -19 -q -f -o "$here/$name.trace.zst"
}
# From the compile steps on, the same work (mm_page_alloc events) in both.
cut build --from 3 --allocs 75000
cut build-hfmax --from 3 --allocs 75000
cut udp16k --from 0.3 --events 200000
cut git-slab --events 200000
python3 "$here/tracestats.py" "$here"/*.trace.zst
