#!/usr/bin/env bash
# Instructions per request of an HTTP server, counted by valgrind (callgrind): a figure that
# does not move with the machine's load, for comparing two builds of one server while
# other work runs (the requests/s rows need a quiet machine; this does not).
#
#     Benchmarks/http/instructions-per-request.sh [SERVER_BINARY] [--port-as-argument]
#     Benchmarks/http/instructions-per-request.sh c-floor      (the C floor, built here)
#
# SERVER_BINARY (default: the release ruv-http-hello) takes `--port P`, or the port as its
# only argument with --port-as-argument (as c-floor.c does). The server runs
# under callgrind twice per depth: once answering a warm-up of 4 x 200 requests, once
# answering the warm-up plus 4 x 2,000 more; the difference of the two totals over 8,000 is
# the cost of one request, start-up and warm-up excluded. Depth 1 sends one request at a
# time on each of 4 keep-alive connections; depth 16 pipelines 16 per write. User-space
# instructions only: the kernel's share (the reads and writes) is not in it.
#
# Set KEEP=DIR to keep each depth's second callgrind file as DIR/callgrind-depthN.out (for
# callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
SERVER=${1:-}
PORT_FLAG=(--port)
[ "${2:-}" = "--port-as-argument" ] && PORT_FLAG=()
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
. Benchmarks/callgrind-total.sh
if [ "$SERVER" = "c-floor" ]; then
    cc -O2 -Wall -Wextra Benchmarks/http/c-floor.c -luv -lhttp_parser -o "$OUT/c-floor"
    SERVER=$OUT/c-floor
    PORT_FLAG=()
elif [ -z "$SERVER" ]; then
    swift build -c release --product ruv-http-hello >/dev/null
    SERVER="$(swift build -c release --show-bin-path)/ruv-http-hello"
fi

cat > "$OUT/load.py" <<'PY'
import socket, sys
port, conns, per, depth = (int(a) for a in sys.argv[1:5])
request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(conns)]
for s in socks:
    s.settimeout(120)
total = 0
for _ in range(per // depth):
    for s in socks:
        s.sendall(request * depth)
    for s in socks:
        data = b""
        while data.count(b"HTTP/1.1 200") < depth:
            chunk = s.recv(65536)
            if not chunk:
                sys.exit("the server closed a connection")
            data += chunk
        total += depth
print(total)
PY

# total_instructions DEPTH REQUESTS_PER_CONNECTION
total_instructions() { callgrind_total "callgrind-depth$1.out" "${PORT_FLAG[@]}" -- 4 "$2" "$1"; }

echo "server: $SERVER"
for depth in 1 16; do
    base=$(total_instructions "$depth" 208)
    full=$(total_instructions "$depth" 2208)
    echo "depth $depth: $(( (full - base) / 8000 )) instructions per request"
done
