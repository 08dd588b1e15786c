#!/usr/bin/env python3
"""A loopback UDP stream, as netperf's UDP_STREAM runs it (seed 000's
case): a sender on CPU 0 sends SIZE-byte datagrams to a receiver on the
last CPU for SECONDS, then both report what got through.
Usage: udp_stream.py [SIZE] [SECONDS]   (defaults 16384 2)"""
import os
import socket
import sys
import time

size = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0

rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind(("127.0.0.1", 0))
rx.settimeout(0.5)
addr = rx.getsockname()
last_cpu = max(os.sched_getaffinity(0))

pid = os.fork()
if pid == 0:
    os.sched_setaffinity(0, {last_cpu})
    got = 0
    try:
        while True:
            got += len(rx.recv(65536))
    except socket.timeout:
        pass
    print(f"udp_stream: received {got / 1e6:.1f} MB", file=sys.stderr)
    os._exit(0)

os.sched_setaffinity(0, {0})
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
data = b"x" * size
sent = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(64):
        try:
            sent += tx.sendto(data, addr)
        except OSError:         # ENOBUFS: the receiver is behind, as netperf sees it
            pass
print(f"udp_stream: sent {sent / 1e6:.1f} MB of {size}-byte datagrams in {seconds} s",
      file=sys.stderr)
os.waitpid(pid, 0)
