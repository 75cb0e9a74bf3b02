#!/usr/bin/env bash
# Instructions per WebSocket echo of a WebSocket server, counted by valgrind (callgrind): the
# WebSocket row's figure that does not move with the machine's load.
#
#     Benchmarks/http/ws-instructions-per-message.sh [SERVER_BINARY]
#
# SERVER_BINARY (default: the release ruv-ws-echo) takes `--port P` and echoes at `/ws`. The
# server runs under callgrind twice: once echoing a warm-up of 4 x 200 masked 64-byte text
# messages (4 connections, one message in flight on each, as ws-load.c sends them), once the
# warm-up plus 4 x 2,000 more; the difference of the two totals over 8,000 is the cost of
# one echoed message, start-up, handshakes and warm-up excluded. User-space instructions
# only: the kernel's share (the reads and writes) is not in it.
#
# Set KEEP=DIR to keep the second callgrind file as DIR/callgrind-ws.out.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
SERVER=${1:-}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
. Benchmarks/callgrind-total.sh
if [ -z "$SERVER" ]; then
    swift build -c release --product ruv-ws-echo >/dev/null
    SERVER="$(swift build -c release --show-bin-path)/ruv-ws-echo"
fi

cat > "$OUT/load.py" <<'PY'
import os, socket, struct, sys
port, conns, per = (int(a) for a in sys.argv[1:4])
payload = b"x" * 64
key = b"\x01\x02\x03\x04"
masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
frame = bytes([0x81, 0x80 | len(payload)]) + key + masked
reply = bytes([0x81, len(payload)]) + payload
socks = []
for _ in range(conns):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(120)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("the server closed during the handshake")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        sys.exit("handshake refused: " + head.split(b"\r\n")[0].decode())
    socks.append(s)
total = 0
for _ in range(per):
    for s in socks:
        s.sendall(frame)
    for s in socks:
        data = b""
        while len(data) < len(reply):
            chunk = s.recv(4096)
            if not chunk:
                sys.exit("the server closed a connection")
            data += chunk
        if data != reply:
            sys.exit("a bad echo")
        total += 1
print(total)
PY

# total_instructions MESSAGES_PER_CONNECTION
total_instructions() { callgrind_total callgrind-ws.out 4 "$1"; }

echo "server: $SERVER"
base=$(total_instructions 200)
full=$(total_instructions 2200)
echo "$(( (full - base) / 8000 )) instructions per echoed message"
