#!/bin/sh
# Records the fidelity corpus (corpus.txt) in full into DIR, each workload
# under the recorder corpus.txt names, and cuts the shipped excerpts.
# Needs root and an otherwise idle machine: the traces are of every process.
#   bench/traces/corpus.sh path/to/zabench [DIR] [NAME...]   (DIR: /tmp/za-corpus)
set -eu
zb=$(realpath "$1")
dir=${2:-/tmp/za-corpus}
shift $(($# < 2 ? $# : 2))
here=$(cd "$(dirname "$0")" && pwd)
work="$here/workloads.sh"
mkdir -p "$dir"
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T

PAGE_EVENTS="mm_page_alloc mm_page_free mm_page_free_batched mm_page_alloc_zone_locked mm_page_pcpu_drain mm_page_alloc_extfrag"
SLAB_EVENTS="kmalloc kfree kmem_cache_alloc kmem_cache_free"

need() {        # program debian-package
	command -v "$1" >/dev/null ||
		{ echo "corpus.sh: $1 is not installed (apt-get install $2)" >&2; exit 1; }
}

events() {      # slab?
	if [ "$1" = slab ]; then echo "$PAGE_EVENTS $SLAB_EVENTS"; else echo "$PAGE_EVENTS"; fi
}

# What a user of standard tools saves beside a trace.
save_state() {  # out
	cat /proc/zoneinfo > "$1.zoneinfo"
	sysctl -a 2>/dev/null | grep '^vm\.' > "$1.sysctl"
}

rec_zabench() { # out slab workload
	out=$1 slab=$2 wl=$3
	"$zb" record --pipe $([ "$slab" = slab ] && echo --slab) -o "$out.zst" -- "$work" "$wl" "$dir/scratch"
}

# trace-cmd: `trace-cmd record` needs to write kernel.ftrace_enabled, which
# some machines (this project's VMs) refuse, so the events are enabled in a
# tracefs instance by hand and trace-cmd extracts its buffer after the run
# (large enough for the whole workload; when full, newer events are dropped).
rec_tracecmd() {
	out=$1 slab=$2 wl=$3
	need trace-cmd trace-cmd
	save_state "$out"
	inst=$T/instances/zacorpus
	echo > $T/trace         # trace-cmd extracts the top buffer too: empty it
	mkdir -p $inst
	echo > $inst/trace      # a run that failed before extracting left its events
	echo 262144 > $inst/buffer_size_kb
	echo 0 > $inst/options/overwrite
	for e in $(events "$slab"); do echo 1 > $inst/events/kmem/$e/enable; done
	"$work" "$wl" "$dir/scratch"
	for e in $(events "$slab"); do echo 0 > $inst/events/kmem/$e/enable; done
	trace-cmd extract -B zacorpus -o "$out.dat" >/dev/null 2>&1
	rmdir $inst 2>/dev/null || true     # trace-cmd may have removed it
	trace-cmd report -i "$out.dat" 2>/dev/null | zstd -q -f -o "$out.zst"
	rm -f "$out.dat"
}

rec_perf() {
	out=$1 slab=$2 wl=$3
	need perf linux-perf
	save_state "$out"
	list=""
	for e in $(events "$slab"); do list="$list${list:+,}kmem:$e"; done
	perf record -q -a -m 4096 -e "$list" -o "$out.data" -- "$work" "$wl" "$dir/scratch" >/dev/null 2>"$out.perf.log"
	perf script -i "$out.data" 2>>"$out.perf.log" | zstd -q -f -o "$out.zst"
	rm -f "$out.data"
}

# A few lines of shell, as anyone would write them: zoneinfo as comments
# at the top, then trace_pipe.
rec_tracefs() {
	out=$1 slab=$2 wl=$3
	echo 16384 > $T/buffer_size_kb
	echo > $T/trace
	for e in $(events "$slab"); do echo 1 > $T/events/kmem/$e/enable; done
	( sed 's/^/# /' /proc/zoneinfo; exec cat $T/trace_pipe ) | zstd -q -f -o "$out.zst" &
	"$work" "$wl" "$dir/scratch"
	sleep 0.5
	for e in $(events "$slab"); do echo 0 > $T/events/kmem/$e/enable; done
	pkill -f "^cat $T/trace_pipe" || true
	wait
}

# The sysctl a corpus line sets for its recording, put back after.
with_sysctl() { # key=value|- command...
	kv=$1
	shift
	if [ "$kv" = - ]; then "$@"; return; fi
	key=${kv%%=*} val=${kv#*=}
	f=/proc/sys/$(echo "$key" | tr . /)
	old=$(cat "$f")
	case $val in x4) val=$((old * 4)) ;; esac
	echo "$val" > "$f"
	"$@" || { echo "$old" > "$f"; return 1; }
	echo "$old" > "$f"
}

# The build workload builds the last commit, not the work tree.
rm -rf "$dir/src"
git -C "$here" clone -q "$(git -C "$here" rev-parse --show-toplevel)" "$dir/src"
export ZA_BUILD_SRC="$dir/src"

grep -v -e '^#' -e '^predict' -e '^repeat' "$here/corpus.txt" | while read -r name recorder events wl sysctl split cut; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ]; then
		case " $* " in *" $name "*) ;; *) continue ;; esac
	fi
	echo "== $name ($wl by $recorder, $sysctl)" >&2
	with_sysctl "$sysctl" rec_$recorder "$dir/$name" "$events" "$wl"
	# xz -9e: the shipped corpus a quarter smaller than zstd -19 makes it
	python3 "$here/excerpt.py" $cut "$dir/$name.zst" | xz -9e -T1 > "$here/$name.trace.xz"
	rm -f "$here/$name.trace.zst"
	for side in zoneinfo sysctl; do
		[ -f "$dir/$name.$side" ] && cp "$dir/$name.$side" "$here/$name.$side"
	done
	python3 "$here/tracestats.py" "$here/$name.trace.xz" >&2 || true
done
