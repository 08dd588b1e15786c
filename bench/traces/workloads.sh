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
forkexec)       # a shell loop that runs a subshell of two programs 2000 times
	i=0
	while [ $i -lt 2000 ]; do
		sh -c 'date; uname -a' >/dev/null
		i=$((i + 1))
	done ;;
perl)           # an interpreter job: Perl hashes of arrays and strings churned
	perl -e '
	srand(3); my @live;
	for my $round (1 .. 25) {
		my %h; $h{rand()} = [ (rand()) x int(rand(48) + 1) ] for 1 .. 30000;
		push @live, \%h; splice(@live, int(rand(@live)), 1) if @live > 4;
		my $s = join(" ", sort keys %h); substr($s, 0, 1 << 20);
	}' ;;
ruby)           # an interpreter job: Ruby arrays, hashes and strings churned
	ruby -e '
	r = Random.new(4); live = []
	20.times do
	  h = {}; 30000.times { h[r.rand.to_s] = Array.new(r.rand(1..48)) { r.rand } }
	  live << h; live.delete_at(r.rand(live.size)) if live.size > 4
	  h.keys.sort.join(" ")[0, 1 << 20]
	end' ;;
sort)           # a sort of 8 million shuffled numbers: anonymous memory and pipes
	seq 8000000 | shuf --random-source=/dev/zero | sort -n >/dev/null ;;
pgbench)        # a database server: PostgreSQL under pgbench, 4 clients for 10 s
	pg=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
	rm -rf "$dir/pg"; mkdir -p "$dir/pg"; chown postgres "$dir/pg"
	su postgres -s /bin/sh -c "$pg/initdb -D $dir/pg/data >/dev/null 2>&1 &&
		$pg/pg_ctl -D $dir/pg/data -o '-p 5499 -k $dir/pg' -w start >/dev/null &&
		pgbench -h $dir/pg -p 5499 -i -s 10 postgres >/dev/null 2>&1 &&
		pgbench -h $dir/pg -p 5499 -c 4 -j 2 -T 10 postgres >/dev/null 2>&1;
		$pg/pg_ctl -D $dir/pg/data -w stop >/dev/null"
	rm -rf "$dir/pg" ;;
redis)          # a key-value server on loopback: redis-benchmark's SET, GET, LPUSH
	redis-server --port 6499 --save '' --appendonly no --daemonize yes \
		--pidfile "$dir/redis.pid" --logfile /dev/null
	sleep 0.3
	redis-benchmark -p 6499 -q -n 150000 -c 16 -d 512 -t set,get,lpush >/dev/null
	redis-cli -p 6499 shutdown nosave >/dev/null 2>&1 || true ;;
clang-build)    # this project's Release build with clang instead of gcc, 2 jobs
	src=${ZA_BUILD_SRC:-$src}
	rm -rf "$dir/cb"
	CC=clang cmake -S "$src" -B "$dir/cb" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$dir/cb" -j2 >/dev/null
	rm -rf "$dir/cb" ;;
cptree)         # a directory tree copied and removed: page cache writes, dentries, inodes
	rm -rf "$dir/cp"
	cp -a /usr/share/doc "$dir/cp"
	sync
	rm -rf "$dir/cp" ;;
untar)          # an archive of /usr/include written, extracted and removed
	rm -rf "$dir/u" "$dir/u.tar"; mkdir -p "$dir/u"
	tar -cf "$dir/u.tar" -C /usr include
	tar -xf "$dir/u.tar" -C "$dir/u"
	rm -rf "$dir/u" "$dir/u.tar" ;;
gitlog)         # a history read: git log -p of this repository's every commit, five times
	for i in 1 2 3 4 5; do git -C "${ZA_BUILD_SRC:-$src}" log -p --all >/dev/null; done ;;
zstd19)         # a compressor at its strongest level: 48 MiB of /usr/lib through zstd -19
	tar -cf - -C /usr lib 2>/dev/null | head -c 50331648 > "$dir/z.tar"
	zstd -q -19 -T1 -c "$dir/z.tar" > /dev/null
	rm -f "$dir/z.tar" ;;
pyjson)         # an interpreter job: Python building, dumping and parsing JSON documents
	python3 - <<'PY'
import json, random
r = random.Random(5)
docs = []
for round in range(12):
    doc = [{"id": i, "name": str(r.random()), "tags": [r.randrange(100) for _ in range(r.randrange(1, 20))]}
           for i in range(30000)]
    text = json.dumps(doc)
    docs.append(json.loads(text))
    if len(docs) > 3:
        docs.pop(0)
PY
	;;
ccone)          # a compiler: one translation unit of this project built five times at -O2
	src=${ZA_BUILD_SRC:-$src}
	for i in 1 2 3 4 5; do
		gcc -O2 -std=c11 -D_GNU_SOURCE -I"$src/include" -I"$src/src" -c "$src/src/slub.c" -o "$dir/slub.o"
	done
	rm -f "$dir/slub.o" ;;
du)             # a file-tree walk from cold caches by du: dentries and inodes
	sync
	echo 2 > /proc/sys/vm/drop_caches
	du -s /usr >/dev/null ;;
xargs)          # a parallel fork-heavy job: 4000 short programs, two at a time
	seq 4000 | xargs -P 2 -n 1 true ;;
node)           # a JavaScript job: V8 building, sorting and dropping objects and strings
	node -e '
	let live = [];
	for (let round = 0; round < 20; round++) {
	  const m = new Map();
	  for (let i = 0; i < 60000; i++) m.set(String(Math.random()), new Array(1 + (i % 40)).fill(i));
	  live.push(m); if (live.length > 4) live.splice(round % live.length, 1);
	  [...m.keys()].sort().join(" ").slice(0, 1 << 20);
	}' ;;
http)           # a file server on loopback: 256 MiB fetched three times by curl
	rm -rf "$dir/www"; mkdir -p "$dir/www"
	head -c 268435456 /dev/urandom > "$dir/www/blob"
	python3 -m http.server 8499 --bind 127.0.0.1 --directory "$dir/www" >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	for i in 1 2 3; do curl -s -o /dev/null http://127.0.0.1:8499/blob; done
	kill $srv; wait $srv 2>/dev/null || true
	rm -rf "$dir/www" ;;
sha256)         # a checksum of /usr/lib's larger files from cold caches: readahead
	sync
	echo 3 > /proc/sys/vm/drop_caches
	find /usr/lib -xdev -type f -size +64k -print0 | head -z -n 800 | xargs -0 sha256sum >/dev/null ;;
bzip2)          # a block-sorting compressor: 24 MiB of /usr/share through bzip2 -9
	tar -cf - -C /usr share 2>/dev/null | head -c 25165824 | bzip2 -9 > /dev/null ;;
awk)            # a text aggregation: 3 million lines summed into a million keys by awk
	seq 3000000 | mawk '{ s[$1 % 1000000] += $1 } END { for (k in s) n++; print n }' >/dev/null ;;
*)
	echo "workloads.sh: no workload '$name'" >&2
	exit 2 ;;
esac
