#!/usr/bin/env python3
"""The edge's window compared (LOGCAST_NATS_WINDOW), without building the Benchmarks package.

    swift build -c release --package-path Sources/logcast
    python3 Benchmarks/Sources/logcast-nats-bench/window-compare.py [LINES] [--windows 1,8] [--rounds 3]

The same rows as `logcast-nats-bench --windows` (file -> JetStream through `logcast FILE
--publish`, a 1-node R1 stream and a 3-node R3 stream on loopback, a file of LINES lines of
~87 bytes written beforehand), for machines where that package's dependencies (OpenCombine,
swift-nio) cannot be fetched. The clock runs from the edge's start until the stream's bytes
(read from the servers' monitoring endpoint, /jsz, every 20 ms) reached their final value
(a 3-node cluster's first election is over before the clock starts);
"final" is: unchanged for 2 s after the edge saved the file's last offset. Windows are
interleaved round by round (on a shared machine only ratios of interleaved runs mean
anything); each row's median and its ratio to the first window's are printed at the end.
Every process is stopped by its pid; its temporary directory is removed.
"""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LOGCAST = os.path.join(ROOT, "Sources/logcast/.build/release/logcast")
NATS = next((p for p in ["/usr/sbin/nats-server", "/usr/bin/nats-server"] if os.access(p, os.X_OK)), "nats-server")


def option(name, default):
    if name in sys.argv:
        i = sys.argv.index(name)
        if i + 1 < len(sys.argv):
            return sys.argv[i + 1]
    return default


args = [a for a in sys.argv[1:]]
lines = int(args[0]) if args and args[0].isdigit() else 1_000_000
windows = [int(w) for w in option("--windows", "1,8").split(",") if w.isdigit() and 1 <= int(w) <= 64]
rounds = max(1, min(int(option("--rounds", "3")), 20))
if not os.access(LOGCAST, os.X_OK):
    sys.exit(f"build logcast first: swift build -c release --package-path Sources/logcast ({LOGCAST} missing)")
if not windows:
    sys.exit("--windows takes numbers in 1...64, e.g. --windows 1,8")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(path, text, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if text in open(path, errors="replace").read():
                return True
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    return False


def stream_bytes(monitor_ports):
    best = 0
    for port in monitor_ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/jsz?accounts=true&streams=true", timeout=2) as r:
                data = json.load(r)
        except Exception:
            continue
        for account in data.get("account_details") or []:
            for stream in account.get("stream_detail") or []:
                if stream.get("name") == "LOGS":
                    best = max(best, stream.get("state", {}).get("bytes", 0))
    return best


def meta_leader_known(monitor_ports):
    """Whether every server names the cluster's meta leader (JetStream answers only then)."""
    for port in monitor_ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/jsz", timeout=2) as r:
                data = json.load(r)
        except Exception:
            return False
        if not (data.get("meta_cluster") or {}).get("leader"):
            return False
    return True


def saved_offset(state_dir):
    # The edge's positions file: any number equal to the file size is enough here.
    text = ""
    for name in os.listdir(state_dir) if os.path.isdir(state_dir) else []:
        try:
            text += open(os.path.join(state_dir, name), errors="replace").read()
        except (IsADirectoryError, FileNotFoundError):
            pass
    return text


def run_row(window, replicas, data):
    d = tempfile.mkdtemp(prefix="logcast-window-")
    procs = []
    try:
        path = os.path.join(d, "app.log")
        with open(path, "wb") as f:
            f.write(data)
        ports = [free_port() for _ in range(replicas)]
        routes = [free_port() for _ in range(replicas)]
        monitors = [free_port() for _ in range(replicas)]
        for i in range(replicas):
            conf = f"server_name: n{i+1}\nlisten: 127.0.0.1:{ports[i]}\nhttp: 127.0.0.1:{monitors[i]}\n"
            conf += f'jetstream {{ store_dir: "{d}/n{i+1}" }}\n'
            if replicas > 1:
                others = ", ".join(f"nats-route://127.0.0.1:{r}" for j, r in enumerate(routes) if j != i)
                conf += f"cluster {{ name: bench, listen: 127.0.0.1:{routes[i]}, routes: [{others}] }}\n"
            open(f"{d}/n{i+1}.conf", "w").write(conf)
            log = open(f"{d}/n{i+1}.log", "w")
            procs.append(subprocess.Popen([NATS, "-c", f"{d}/n{i+1}.conf"], stdout=log, stderr=log))
        for i in range(replicas):
            if not wait_for(f"{d}/n{i+1}.log", "Server is ready"):
                raise RuntimeError(f"nats-server n{i+1} did not start")
        # The clock measures ingest, not the cluster's first election (seconds on a loaded machine).
        if replicas > 1:
            deadline = time.time() + 120
            while not meta_leader_known(monitors):
                if time.time() > deadline:
                    raise RuntimeError("no meta leader")
                time.sleep(0.1)
        env = dict(os.environ, LOGCAST_NATS_WINDOW=str(window))
        edge_log = open(f"{d}/edge.log", "w")
        urls = ",".join(f"nats://127.0.0.1:{p}" for p in ports)
        start = time.time()
        procs.append(subprocess.Popen([LOGCAST, path, "--publish", urls, "--stream", "LOGS", "--subject", "logs.bench",
                                       "--stream-replicas", str(replicas), "--state-dir", f"{d}/state",
                                       "--listen", "127.0.0.1:0"], stdout=edge_log, stderr=edge_log, env=env))
        size = str(len(data))
        samples = []
        stable_since = None
        while True:
            now = time.time()
            if now - start > 600:
                raise RuntimeError("timed out")
            b = stream_bytes(monitors)
            if not samples or b != samples[-1][1]:
                samples.append((now, b))
                stable_since = now
            if b > 0 and size in saved_offset(f"{d}/state") and now - stable_since > 2:
                break
            time.sleep(0.02)
        final = samples[-1][1]
        reached = next(t for t, b in samples if b == final)
        return lines / (reached - start)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        shutil.rmtree(d, ignore_errors=True)


data = b"".join(b"L%d %s\n" % (n, b"x" * 80) for n in range(lines))
print(f"window-compare: {lines} lines of ~87 bytes per row, windows {windows}, {rounds} rounds")
rates = {}
for r in range(1, rounds + 1):
    for w in windows:
        for replicas in (1, 3):
            rate = run_row(w, replicas, data)
            rates.setdefault((replicas, w), []).append(rate)
            print(f"round {r}, window {w:2d}, R{replicas}: {rate:9.0f} lines/s", flush=True)
for replicas in (1, 3):
    base = sorted(rates[(replicas, windows[0])])[len(rates[(replicas, windows[0])]) // 2]
    for w in windows:
        values = sorted(rates[(replicas, w)])
        m = values[len(values) // 2]
        print(f"R{replicas}, window {w:2d}: median {m:9.0f} lines/s, {m / base:.2f}x window {windows[0]} "
              f"(runs: {', '.join(f'{v:.0f}' for v in rates[(replicas, w)])})")
