#!/usr/bin/env bash
# The http rows: ruv-http-hello against the servers a Swift or Node.js user would pick
# instead, all answering the same 13-byte `GET /`, interleaved in one run:
#   node     Node.js `http` (libuv + llhttp: the same loop as ours)      node-hello.js
#   nio      swift-nio NIOHTTP1, one event-loop thread                   Sources/nio-http-hello
#   h2o      h2o from Debian, one thread, the body from a file           (config written below)
#   c-floor  plain C on libuv + http_parser: the floor, not a peer       c-floor.c
# and the WebSocket echo row (64-byte messages, 64 clients) against Node's `ws` (Debian
# node-ws) when ruv-ws-echo is built.
#
#     Benchmarks/http/run-http-bench.sh [SECONDS REPETITIONS]
#     ROWS=ws Benchmarks/http/run-http-bench.sh [SECONDS REPETITIONS]   (the WebSocket row only)
#
# Every server runs pinned to CPU 0 and wrk (`-t1`) to CPU 1, so the server, not the load
# generator, decides where it can (at 64 and 256 connections h2o and the C floor saturate
# wrk's core: read the CPU column there). Each cell is the median of REPETITIONS rounds; a
# round runs every configuration against every server in turn. The CPU column is the
# server's own user + system time per request, from /proc/PID/stat around the wrk run.
# Run it on a quiet machine: nothing here is a test, and nothing asserts a time.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN=${1:-10}
REPS=${2:-3}
CONFIGS=("1" "64" "256" "64p16")
ROWS=${ROWS:-all}
OUT=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)"; exit 1; }

echo "building (release) ..." >&2
swift build -c release --product ruv-http-hello >/dev/null
RUV_BIN=$(swift build -c release --show-bin-path)
swift build -c release --package-path Benchmarks --product nio-http-hello >/dev/null
NIO_BIN=$(swift build -c release --package-path Benchmarks --show-bin-path)
cc -O2 -Wall -Wextra Benchmarks/http/c-floor.c -luv -lhttp_parser -o "$OUT/c-floor"
cc -O2 -Wall -Wextra Benchmarks/http/ws-load.c -o "$OUT/ws-load"
printf 'Hello, World!' > "$OUT/hello.txt"
# h2o started as root serves as nobody: the body's directory must be readable to it.
chmod 755 "$OUT"

# Starts a server pinned to CPU 0 and waits until it answers; sets PORT and PID.
start() {
    local name=$1 port=$2; shift 2
    taskset -c 0 "$@" > "$OUT/$name.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    PORT=$port
    for _ in $(seq 200); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
        sleep 0.05
    done
    echo "$name did not start: $(tail -3 "$OUT/$name.log")" >&2
    exit 1
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

declare -A PORTS SPIDS
base=$((20000 + RANDOM % 20000))
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
if [ "$ROWS" != ws ]; then
start ruv $((base + 1)) "$RUV_BIN/ruv-http-hello" --port $((base + 1)); PORTS[ruv]=$PORT; SPIDS[ruv]=$PID
start node $((base + 2)) node Benchmarks/http/node-hello.js $((base + 2)); PORTS[node]=$PORT; SPIDS[node]=$PID
start nio $((base + 3)) "$NIO_BIN/nio-http-hello" $((base + 3)); PORTS[nio]=$PORT; SPIDS[nio]=$PID
cat > "$OUT/h2o.conf" <<CONF
num-threads: 1
listen:
  host: 127.0.0.1
  port: $((base + 4))
hosts:
  default:
    paths:
      /:
        file.file: $OUT/hello.txt
CONF
start h2o $((base + 4)) h2o -c "$OUT/h2o.conf"; PORTS[h2o]=$PORT; SPIDS[h2o]=$PID
start c-floor $((base + 5)) "$OUT/c-floor" $((base + 5)); PORTS[c-floor]=$PORT; SPIDS[c-floor]=$PID
SERVERS=(ruv node nio h2o c-floor)

echo "idle RSS (KiB, after one request):"
for s in "${SERVERS[@]}"; do printf '  %-8s %s\n' "$s" "$(rss_kib "${SPIDS[$s]}")"; done

# Memory per idle keep-alive connection (issue 29: <= 4 KiB): IDLE_CONNECTIONS clients each
# send one request, read its answer and stay open; the server's RSS after, less before,
# divided by the count. Twice per server, the second after the first's clients closed (so
# what the first run grew and kept, a pool or a free list, is not counted again).
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-2000}
cat > "$OUT/idle.py" <<'PY'
import socket, sys, time
port, count, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def rss():
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
before = rss()
socks = []
for _ in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
    data = b""
    while not data.endswith(b"Hello, World!"):
        chunk = s.recv(4096)
        if not chunk:
            sys.exit(f"connection closed after {data!r}")
        data += chunk
    socks.append(s)
time.sleep(1)  # the last answers' writes completed on the server's side too
after = rss()
print(f"{(after - before) * 1024 / count:.0f}")
for s in socks:
    s.close()
PY
ulimit -n 65536 2>/dev/null || true
echo "RSS per idle keep-alive connection ($IDLE_CONNECTIONS connections, two runs, bytes):"
for s in "${SERVERS[@]}"; do
    first=$(python3 "$OUT/idle.py" "${PORTS[$s]}" "$IDLE_CONNECTIONS" "${SPIDS[$s]}")
    sleep 1
    second=$(python3 "$OUT/idle.py" "${PORTS[$s]}" "$IDLE_CONNECTIONS" "${SPIDS[$s]}")
    printf '  %-8s %s, %s\n' "$s" "$first" "$second"
done

# One wrk run; appends "server config rps p99_ms cpu_us" to $OUT/results.
measure() {
    local s=$1 cfg=$2 conns script=()
    conns=${cfg%p16}
    [[ $cfg == *p16 ]] && script=(-s Benchmarks/http/pipeline.lua)
    local pid=${SPIDS[$s]} c0 c1 text rps p99 reqs
    c0=$(cpu_ticks "$pid")
    text=$(taskset -c 1 wrk -t1 -c"$conns" -d"${SECONDS_PER_RUN}s" --latency "${script[@]}" "http://127.0.0.1:${PORTS[$s]}/")
    c1=$(cpu_ticks "$pid")
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$text")
    reqs=$(awk '/requests in/ {print $1}' <<<"$text")
    p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$text")
    local cpu
    cpu=$(awk -v c=$((c1 - c0)) -v t="$(getconf CLK_TCK)" -v n="$reqs" 'BEGIN { if (n > 0) printf "%.2f", c / t * 1e6 / n; else print "-" }')
    echo "$s $cfg $rps ${p99:-0} $cpu" >> "$OUT/results"
    grep -q "Non-2xx\|Socket errors" <<<"$text" && echo "  note: $s $cfg: $(grep -E 'Non-2xx|Socket errors' <<<"$text")" >&2
    return 0
}

for rep in $(seq "$REPS"); do
    echo "round $rep/$REPS ..." >&2
    for cfg in "${CONFIGS[@]}"; do
        for s in "${SERVERS[@]}"; do measure "$s" "$cfg"; done
    done
done

cell() { awk -v s="$1" -v c="$2" -v f="$3" '$1 == s && $2 == c {print $f}' "$OUT/results" | median; }

echo
echo "requests/s, median of $REPS (p99 ms; server CPU us per request); ${SECONDS_PER_RUN} s per run, wrk -t1"
printf '%-8s' server; for cfg in "${CONFIGS[@]}"; do printf ' | %-30s' "$cfg conns"; done; echo
for s in "${SERVERS[@]}"; do
    printf '%-8s' "$s"
    for cfg in "${CONFIGS[@]}"; do
        printf ' | %-30s' "$(cell "$s" "$cfg" 3) ($(cell "$s" "$cfg" 4) ms; $(cell "$s" "$cfg" 5) us)"
    done
    echo
done
echo
echo "ratios of ruv (requests/s; CPU per request against the C floor):"
for cfg in "${CONFIGS[@]}"; do
    r=$(cell ruv "$cfg" 3)
    printf '  %-6s vs node %.2fx  vs nio %.2fx  vs h2o %.2fx  vs c-floor %.2fx  CPU/req vs c-floor %.2fx\n' "$cfg" \
        "$(awk -v a="$r" -v b="$(cell node "$cfg" 3)" 'BEGIN{print a/b}')" \
        "$(awk -v a="$r" -v b="$(cell nio "$cfg" 3)" 'BEGIN{print a/b}')" \
        "$(awk -v a="$r" -v b="$(cell h2o "$cfg" 3)" 'BEGIN{print a/b}')" \
        "$(awk -v a="$r" -v b="$(cell c-floor "$cfg" 3)" 'BEGIN{print a/b}')" \
        "$(awk -v a="$(cell ruv "$cfg" 5)" -v b="$(cell c-floor "$cfg" 5)" 'BEGIN{print a/b}')"
done
fi

# The WebSocket echo row, when ruv-ws-echo exists: 64 clients, 64-byte messages.
if swift build -c release --product ruv-ws-echo >/dev/null 2>&1; then
    start_ws() {
        local name=$1 port=$2; shift 2
        taskset -c 0 "$@" > "$OUT/$name.log" 2>&1 &
        PIDS+=("$!")
        WS_PID[$name]=$!
        for _ in $(seq 200); do grep -qs "listening on" "$OUT/$name.log" && return 0; sleep 0.05; done
        echo "$name did not start" >&2; exit 1
    }
    declare -A WS_PID
    start_ws ruv-ws $((base + 6)) "$RUV_BIN/ruv-ws-echo" --port $((base + 6))
    start_ws node-ws $((base + 7)) env NODE_PATH=/usr/share/nodejs node Benchmarks/http/node-ws-echo.js $((base + 7))
    echo
    echo "WebSocket echo, 64 clients x 64-byte messages, round trips/s (median of $REPS; server CPU us per message):"
    for name in ruv-ws node-ws; do : > "$OUT/$name.rates"; : > "$OUT/$name.cpu"; done
    for rep in $(seq "$REPS"); do
        for pair in "ruv-ws:$((base + 6))" "node-ws:$((base + 7))"; do
            name=${pair%%:*}; port=${pair##*:}
            # The server's own CPU per message, as the HTTP rows' column: where both the
            # server and the load generator fill their cores, the rate is the generator's
            # too, and the CPU is what the server decides.
            c0=$(cpu_ticks "${WS_PID[$name]}")
            line=$(taskset -c 1 "$OUT/ws-load" "$port" 64 "$SECONDS_PER_RUN" 64)
            c1=$(cpu_ticks "${WS_PID[$name]}")
            awk '{print $2}' <<<"$line" >> "$OUT/$name.rates"
            msgs=$(sed -E 's/.*\(([0-9]+) messages.*/\1/' <<<"$line")
            awk -v c=$((c1 - c0)) -v t="$(getconf CLK_TCK)" -v m="$msgs" 'BEGIN{printf "%.3f\n", c / t * 1e6 / m}' >> "$OUT/$name.cpu"
        done
    done
    r=$(median < "$OUT/ruv-ws.rates"); n=$(median < "$OUT/node-ws.rates")
    rc=$(median < "$OUT/ruv-ws.cpu"); nc=$(median < "$OUT/node-ws.cpu")
    printf '  ruv-ws-echo %s (%s us)   node ws %s (%s us)   ratio %.2fx, CPU per message %.2fx less\n' \
        "$r" "$rc" "$n" "$nc" "$(awk -v a="$r" -v b="$n" 'BEGIN{print a/b}')" "$(awk -v a="$nc" -v b="$rc" 'BEGIN{print a/b}')"
fi
