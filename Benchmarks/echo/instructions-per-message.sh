#!/usr/bin/env bash
# Instructions per echoed message of a TCP echo server, counted by valgrind (callgrind): a
# figure that does not move with the machine's load, so two builds of the stream read/write
# path can be compared while other work runs (the echo rows of ruv-bench need a quiet
# machine; this does not). The HTTP twin is Benchmarks/http/instructions-per-request.sh.
#
#     Benchmarks/echo/instructions-per-message.sh [SERVER_BINARY]
#     Benchmarks/echo/instructions-per-message.sh c-echo     (the C echo server, built here)
#     PER=connection Benchmarks/echo/instructions-per-message.sh [SERVER | c-echo]
#
# SERVER_BINARY (default: the release ruv-echo, built when missing) takes `--port P`.
# `c-echo` is Benchmarks/Sources/CNetBench/echo_server.c, the C server the echo rows measure
# ruv-echo against, compiled here with a two-line main (no need to build the Benchmarks
# package). The server runs under callgrind twice: once echoing a warm-up of 800 messages,
# once echoing the warm-up plus 8,000 more; the difference of the two totals over 8,000 is
# the cost of one message, start-up, connects and warm-up excluded. Each connection sends a
# 64-byte message and waits for all of it to come back before the next (ping-pong, as the
# echo rows do). CONNECTIONS (default 1) share the messages; with 1 every message is one
# turn of the loop, so the count repeats within a few instructions; with more, how many
# connections one epoll wake-up finds ready varies from run to run (a few % either way).
# User-space instructions only: the kernel's share (the reads, writes and epoll) is not in
# it.
#
# PER=connection counts a connection's whole life instead: connect, one 64-byte echo, close
# (the client ends its side, the server ends its own and closes), one connection after the
# other, 100 subtracted from 1,100: accepting, the per-connection signals and their
# teardown, which the 1,000-connection echo row amortizes over 200 messages each.
#
# Set KEEP=DIR to keep the second run's callgrind file as DIR/callgrind.out (for
# callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
SERVER=${1:-}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
. Benchmarks/callgrind-total.sh
if [ "$SERVER" = "c-echo" ]; then
    cat > "$OUT/main.c" <<'C'
#include <stdlib.h>
#include "CNetBench.h"
int main(int argc, char **argv) { return argc == 3 && cnb_echo_server_run("127.0.0.1", atoi(argv[2])) == 0 ? 0 : 1; }
C
    cc -O2 -Wall -Wextra -I Benchmarks/Sources/CNetBench/include "$OUT/main.c" \
        Benchmarks/Sources/CNetBench/echo_server.c -luv -o "$OUT/c-echo"
    SERVER=$OUT/c-echo
elif [ -z "$SERVER" ]; then
    swift build -c release --product ruv-echo >/dev/null
    SERVER="$(swift build -c release --show-bin-path)/ruv-echo"
fi

cat > "$OUT/load.py" <<'PY'
import socket, sys
port, conns, per = (int(a) for a in sys.argv[1:4])
message = bytes(range(64))
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(conns)]
for s in socks:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(120)
for _ in range(per):
    for s in socks:
        s.sendall(message)
    for s in socks:
        data = b""
        while len(data) < len(message):
            chunk = s.recv(65536)
            if not chunk:
                sys.exit("the server closed a connection")
            data += chunk
        if data != message:
            sys.exit("the echo differs from the message")
print(per * conns)
PY

if [ "${PER:-message}" = connection ]; then
    cat > "$OUT/connections.py" <<'PY'
import socket, sys
port, conns = int(sys.argv[1]), int(sys.argv[2])
message = bytes(range(64))
for _ in range(conns):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(120)
    s.sendall(message)
    data = b""
    while len(data) < len(message):
        data += s.recv(65536)
    if data != message:
        sys.exit("the echo differs from the message")
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()
PY
    mv "$OUT/connections.py" "$OUT/load.py"
    echo "server: $SERVER, connections one after the other"
    base=$(callgrind_total callgrind.out 100)
    full=$(callgrind_total callgrind.out 1100)
    echo "$(( (full - base) / 1000 )) instructions per connection (connect, one echo, close)"
    exit 0
fi

CONNECTIONS=${CONNECTIONS:-1}

# total_instructions MESSAGES_PER_CONNECTION
total_instructions() { callgrind_total callgrind.out "$CONNECTIONS" "$1"; }

echo "server: $SERVER, $CONNECTIONS connection(s)"
base=$(total_instructions $((800 / CONNECTIONS)))
full=$(total_instructions $((8800 / CONNECTIONS)))
echo "$(( (full - base) / 8000 )) instructions per message"
