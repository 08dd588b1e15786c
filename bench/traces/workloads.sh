#!/bin/sh
# The corpus's workloads, each a real program doing a real job, run by
# corpus.sh under one recorder or another:
#   bench/traces/workloads.sh NAME SCRATCH_DIR
set -eu
name=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
mkdir -p "$dir"

case $name in
build)          # this project's Release build from scratch, 2 jobs (of ZA_BUILD_SRC,
	# a clean copy corpus.sh makes, so that edits in progress are not built)
	src=${ZA_BUILD_SRC:-$src}
	rm -rf "$dir/tb"
	cmake -S "$src" -B "$dir/tb" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$dir/tb" -j2 >/dev/null ;;
fork)           # a shell loop that forks and execs a short pipeline 3000 times
	i=0
	while [ $i -lt 3000 ]; do
		echo $i | cat >/dev/null
		i=$((i + 1))
	done ;;
sqlite)         # a database: 400k rows inserted in transactions, indexed, queried
	rm -f "$dir/db.sqlite"
	python3 - "$dir/db.sqlite" <<'PY'
import random, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("create table t (id integer primary key, k integer, v text)")
r = random.Random(1)
for chunk in range(40):
    db.executemany("insert into t (k, v) values (?, ?)",
                   ((r.randrange(10**9), "x" * r.randrange(20, 200)) for _ in range(10000)))
    db.commit()
db.execute("create index tk on t (k)")
for _ in range(20000):
    db.execute("select v from t where k > ? limit 5", (r.randrange(10**9),)).fetchall()
db.close()
PY
	;;
tar-sqlite)     # an archive job, then the database: the lists SQLite starts on are
	# what the archive job's exit left on them, in the trace too
	tar -cf - -C /usr share/doc 2>/dev/null | gzip -1 > /dev/null
	"$0" sqlite "$dir" ;;
interp)         # an interpreter job: dicts, lists and strings churned by CPython
	python3 - <<'PY'
import random
r = random.Random(2)
live = []
for round in range(30):
    d = {str(r.random()): [r.random()] * r.randrange(1, 64) for _ in range(40000)}
    live.append(d)
    if len(live) > 4:
        live.pop(r.randrange(len(live)))
    s = sorted(d)
    " ".join(s)[: 1 << 20]
PY
	;;
pagecache)      # a page-cache write and read of 768 MiB, the cache dropped between
	rm -f "$dir/big"
	dd if=/dev/zero of="$dir/big" bs=1M count=768 status=none
	sync
	echo 1 > /proc/sys/vm/drop_caches
	cat "$dir/big" >/dev/null
	rm -f "$dir/big" ;;
treewalk)       # a file-tree walk from cold caches: dentries and inodes
	sync
	echo 2 > /proc/sys/vm/drop_caches
	find /usr -xdev -type f -print0 | xargs -0 -n 500 stat -c %s >/dev/null ;;
tar)            # an archive job: /usr/share compressed to a file and listed
	tar -cf - -C /usr share/doc share/man 2>/dev/null | gzip -1 > "$dir/a.tgz"
	tar -tzf "$dir/a.tgz" >/dev/null
	rm -f "$dir/a.tgz" ;;
tcp)            # a loopback TCP stream of 64 KiB writes for 2 seconds
	python3 - <<'PY'
import socket, threading, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def sink():
    c, _ = srv.accept()
    while c.recv(1 << 16):
        pass
t = threading.Thread(target=sink); t.start()
s = socket.create_connection(srv.getsockname())
buf = b"x" * (1 << 16)
end = time.time() + 2
while time.time() < end:
    s.sendall(buf)
s.close(); t.join()
PY
	;;
xz)             # a compressor: 128 MiB of the system's libraries through xz -6
	tar -cf - -C /usr lib 2>/dev/null | head -c 134217728 > "$dir/x.tar"
	xz -T1 -6 -c "$dir/x.tar" > "$dir/x.tar.xz"
	rm -f "$dir/x.tar" "$dir/x.tar.xz" ;;
grep)           # a search through /usr/share from cold caches
	sync
	echo 3 > /proc/sys/vm/drop_caches
	grep -r -l -s zonealloc /usr/share >/dev/null || true ;;
pipeline)       # a shell pipeline that runs a short program per file name
	find /usr/bin -maxdepth 1 | head -2500 | xargs -n 1 basename | sort | uniq -c >/dev/null ;;
udp)            # seed 000's netperf UDP_STREAM: 16 KiB datagrams over loopback, 2 s
	python3 "$here/udp_stream.py" 16384 2 ;;
gitslab)        # three rounds of cloning this repository and packing the clone
	for i in 1 2 3; do
		rm -rf "$dir/gs"
		git clone -q --no-local "$src" "$dir/gs"
		git -C "$dir/gs" gc -q
	done ;;
*)
	echo "workloads.sh: no workload '$name'" >&2
	exit 2 ;;
esac
