// The Python programs the WebSocket tests run, passed to `python3 -c`: clients and a
// server from the `websockets` library (PyPI), and raw-socket peers that send hand-made
// frames and report, one tagged line each, what came back.

/// A `websockets` client: `PORT MODE COMPRESSION` (`deflate` or `none`).
let pythonWebSocketClient = #"""
import sys
from websockets.sync.client import connect
from websockets.exceptions import ConnectionClosed
port, mode, comp = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with connect(f"ws://127.0.0.1:{port}/ws", compression="deflate" if comp == "deflate" else None,
             max_size=None, open_timeout=30, close_timeout=30) as ws:
    print("EXT", ws.response.headers.get("Sec-WebSocket-Extensions", "none"))
    if mode == "echo":
        ws.send("hello ✓"); print("TEXT", ws.recv())
        data = bytes(range(256)) * 4
        ws.send(data); r = ws.recv(); print("BINARY", type(r).__name__, len(r), r == data)
        ws.send(["frag-", "ment", "ed ✓"]); print("FRAGMENTED", ws.recv())
        ws.send([b"\x01\x02", b"\x03"]); print("FRAGMENTED-BINARY", list(ws.recv()))
        big = "x" * 70000 + "é" * 10
        ws.send(big); print("BIG", ws.recv() == big)
        mid = bytes(300)
        ws.send(mid); print("MID", ws.recv() == mid)
        print("PONG", ws.ping(b"abc").wait(30))
        ws.close(4001, "bye")
        print("CLOSE", ws.protocol.close_rcvd.code, ws.protocol.close_rcvd.reason)
    elif mode == "fragments":
        ws.send("send me 250 bytes")
        frags = list(ws.recv_streaming())
        print("FRAGMENTS", len(frags), sum(len(f) for f in frags), all(f == b"\x07" * len(f) for f in frags))
        ws.close()
        print("CLOSE", ws.protocol.close_rcvd.code, ws.protocol.close_rcvd.reason)
    elif mode == "server-closes":
        ws.send("close me")
        try:
            ws.recv()
            print("UNEXPECTED message")
        except ConnectionClosed as e:
            print("CLOSED", e.rcvd.code, e.rcvd.reason)
"""#

/// A `websockets` echo server: `COMPRESSION`; prints `PORT n`, then `SERVER-SAW code reason`
/// for each connection's close.
let pythonWebSocketServer = #"""
import sys
from websockets.sync.server import serve
from websockets.exceptions import ConnectionClosed
comp = sys.argv[1]
def handler(ws):
    try:
        for message in ws:
            ws.send(message)
    except ConnectionClosed:
        pass  # codes other than 1000 and 1001 end the loop with this
    r = ws.protocol.close_rcvd
    print("SERVER-SAW", r.code if r else "none", r.reason if r else "", flush=True)
with serve(handler, "127.0.0.1", 0, compression="deflate" if comp == "deflate" else None, max_size=None) as server:
    print("PORT", server.socket.getsockname()[1], flush=True)
    server.serve_forever()
"""#

/// A raw client: `PORT MODE [HEX-FRAMES [EXTENSIONS]]`. Handshakes by hand (mode
/// `version8` asks for version 8), prints the status line and headers; mode `frames`
/// sends the frames, reads to EOF and prints each server frame (`CLOSE code reason`,
/// `FRAME opcode length`), then `EOF`; mode `silent` prints `READY` and never reads again.
let pythonRawClient = #"""
import sys, socket, base64, os, struct, time
port, mode = int(sys.argv[1]), sys.argv[2]
payload = bytes.fromhex(sys.argv[3]) if len(sys.argv) > 3 else b""
ext = sys.argv[4] if len(sys.argv) > 4 else ""
s = socket.create_connection(("127.0.0.1", port), timeout=30)
key = base64.b64encode(os.urandom(16)).decode()
version = "8" if mode == "version8" else "13"
req = f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: {version}\r\n"
if ext:
    req += f"Sec-WebSocket-Extensions: {ext}\r\n"
s.sendall((req + "\r\n").encode())
data = b""
while b"\r\n\r\n" not in data:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
head, _, rest = data.partition(b"\r\n\r\n")
lines = head.decode().split("\r\n")
print("STATUS", lines[0])
for line in lines[1:]:
    name, _, value = line.partition(":")
    print("HEADER", name.strip().lower(), value.strip())
sys.stdout.flush()
if mode == "silent":
    print("READY", flush=True)
    time.sleep(120)
    sys.exit(0)
if mode == "frames":
    s.sendall(payload)
    data = rest
    while True:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            print("RESET-OR-TIMEOUT")
            break
        if not chunk:
            break
        data += chunk
    i = 0
    while i + 2 <= len(data):
        op, n = data[i] & 15, data[i + 1] & 127
        i += 2
        if n == 126:
            n = struct.unpack(">H", data[i:i + 2])[0]; i += 2
        elif n == 127:
            n = struct.unpack(">Q", data[i:i + 8])[0]; i += 8
        body = data[i:i + n]; i += n
        if op == 8:
            print("CLOSE", struct.unpack(">H", body[:2])[0] if len(body) >= 2 else "none", body[2:].decode(errors="replace"))
        else:
            print("FRAME", op, len(body))
    print("EOF")
"""#

/// A raw server for one client: `HEX-FRAMES`; prints `PORT n`, answers the handshake
/// and sends the frames in the same write as the `101`, then prints each client frame
/// (unmasked: `CLOSE code`, `FRAME opcode text`) until EOF, then `EOF`.
let pythonRawServer = #"""
import sys, socket, base64, hashlib, struct
frames = bytes.fromhex(sys.argv[1])
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(1)
print("PORT", ls.getsockname()[1], flush=True)
c, _ = ls.accept()
c.settimeout(30)
head = b""
while b"\r\n\r\n" not in head:
    head += c.recv(4096)
key = [l.split(":", 1)[1].strip() for l in head.decode().split("\r\n") if l.lower().startswith("sec-websocket-key:")][0]
accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
c.sendall(f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n".encode() + frames)
data = b""
while True:
    try:
        chunk = c.recv(65536)
    except Exception:
        break
    if not chunk:
        break
    data += chunk
i = 0
while i + 2 <= len(data):
    op, n = data[i] & 15, data[i + 1] & 127
    masked = data[i + 1] & 128
    i += 2
    if n == 126:
        n = struct.unpack(">H", data[i:i + 2])[0]; i += 2
    elif n == 127:
        n = struct.unpack(">Q", data[i:i + 8])[0]; i += 8
    mask = data[i:i + 4] if masked else b"\0\0\0\0"
    i += 4 if masked else 0
    body = bytes(b ^ mask[j % 4] for j, b in enumerate(data[i:i + n])); i += n
    if op == 8:
        print("CLOSE", struct.unpack(">H", body[:2])[0] if len(body) >= 2 else "none", flush=True)
    else:
        print("FRAME", op, body.decode(errors="replace"), "masked" if masked else "unmasked", flush=True)
print("EOF", flush=True)
"""#

/// Runs the `ruv-ws-echo` example (`BINARY`): reads the address it prints, echoes text,
/// binary and a fragmented message with and without compression through it, then sends
/// SIGTERM and prints the exit status.
let pythonEchoExampleCheck = #"""
import sys, subprocess, signal, re
from websockets.sync.client import connect
p = subprocess.Popen([sys.argv[1], "--port", "0"], stdout=subprocess.PIPE, text=True)
line = p.stdout.readline().strip()
print("LISTENING", line)
port = int(re.search(r":(\d+)$", line).group(1))
for comp in ("deflate", None):
    with connect(f"ws://127.0.0.1:{port}/ws", compression=comp, open_timeout=30) as ws:
        ws.send("héllo"); t = ws.recv()
        ws.send(b"\x00\x01\x02"); b = ws.recv()
        ws.send(["a", "b", "c"]); f = ws.recv()
        print("ECHO", comp or "none", repr(t), repr(b), repr(f), ws.response.headers.get("Sec-WebSocket-Extensions", "none"))
p.send_signal(signal.SIGTERM)
print("EXIT", p.wait(timeout=30))
"""#

/// Headless Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium from
/// PyPI): `PORT`. Opens the page our test server serves at `/`, waits for its WebSocket to
/// close, and prints what the page logged (`LOG …`).
let pythonBrowser = #"""
import sys, time
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
port = int(sys.argv[1])
opts = Options()
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
    opts.add_argument(a)
opts.binary_location = "/usr/bin/chromium"
driver = webdriver.Chrome(options=opts, service=Service("/usr/bin/chromedriver"))
try:
    driver.get(f"http://127.0.0.1:{port}/")
    deadline = time.time() + 60
    while driver.title != "done" and time.time() < deadline:
        time.sleep(0.05)
    for line in driver.execute_script("return log"):
        print("LOG", line, flush=True)
finally:
    driver.quit()
"""#

/// The page the browser test loads: a WebSocket to `/ws` that sends text and binary,
/// logs the echoes, then closes with 4005.
let browserPage = #"""
<html><head><title>running</title></head><body><script>
var log = [];
var ws = new WebSocket("ws://" + location.host + "/ws");
ws.binaryType = "arraybuffer";
ws.onopen = function() {
  log.push("open " + ws.extensions);
  ws.send("héllo ✓ " + "x".repeat(1000));
  ws.send(new Uint8Array([1, 2, 3]).buffer);
};
ws.onmessage = function(e) {
  if (typeof e.data === "string") log.push("text " + e.data.length + " " + e.data.slice(0, 7));
  else log.push("binary " + Array.from(new Uint8Array(e.data)).join(","));
  if (log.length == 3) ws.close(4005, "browser done");
};
ws.onclose = function(e) { log.push("close " + e.code + " " + e.reason + " " + e.wasClean); document.title = "done"; };
</script></body></html>
"""#

/// A `websockets` asyncio client: `PORT`. Sends 400 messages of 64 KiB from one task while
/// nothing is read for 2 s (the echo backs up until our server must pause reading), then
/// reads everything back. (The sync client cannot: it holds one lock while it sends and
/// while it reads, so a full-duplex flood deadlocks it.)
let pythonFloodClient = #"""
import sys, asyncio
from websockets.asyncio.client import connect
async def main(port):
    async with connect(f"ws://127.0.0.1:{port}/ws", compression=None, max_size=None) as ws:
        count, size = 400, 65536
        if len(sys.argv) > 2 and sys.argv[2] == "text":
            # Whole single-frame text messages, each its own (its number, then non-ASCII).
            messages = [(f"{i:05d}" + "é€😀"[i % 3] * (size // 4))[:size // 4] for i in range(count)]
        else:
            messages = [bytes([i % 251]) * size for i in range(count)]
        async def send():
            for m in messages:
                await ws.send(m)
        sender = asyncio.create_task(send())
        await asyncio.sleep(2)
        echoed = [await asyncio.wait_for(ws.recv(), 30) for _ in range(count)]
        await sender
        print("ECHOED", len(echoed), echoed == messages, flush=True)
        await ws.close()
        print("CLOSE", ws.protocol.close_rcvd.code, ws.protocol.close_rcvd.reason, flush=True)
asyncio.run(main(int(sys.argv[1])))
"""#
