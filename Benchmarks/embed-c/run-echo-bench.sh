#!/usr/bin/env bash
# The echo benchmark: poll-host's echo server (ReactiveUV signals, driven from a foreign
# poll() loop through the C API) against uv-echo (plain C on libuv), under the same load
# from echo-load. Release builds; run from anywhere:
#
#     Benchmarks/embed-c/run-echo-bench.sh [CONNECTIONS MESSAGES SIZE RUNS]
#
# Prints each server's median round trips per second over RUNS runs, and the server's CPU
# time per round trip (user + system, from /proc; the load generator runs on the same
# two cores, so throughput alone mixes in its share).
set -euo pipefail
cd "$(dirname "$0")/../.."
CONNECTIONS=${1:-50}
MESSAGES=${2:-2000}
SIZE=${3:-64}
RUNS=${4:-5}
SCRATCH=${SCRATCH:-.build-embed}

swift build -c release --scratch-path "$SCRATCH" --product reactiveuv >/dev/null
LIB=$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)
INC=Sources/CReactiveUVEmbed/include
OUT=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$OUT"' EXIT

cc -std=c11 -O2 -Wall -Wextra -I"$INC" Examples/embed-c/poll-host.c -L"$LIB" -lreactiveuv -Wl,-rpath,"$LIB" -o "$OUT/poll-host"
cc -std=c11 -O2 -Wall -Wextra Benchmarks/embed-c/uv-echo.c -luv -o "$OUT/uv-echo"
cc -std=c11 -O2 -Wall -Wextra Benchmarks/embed-c/echo-load.c -luv -o "$OUT/echo-load"

# Starts a server, reads its port, runs the load RUNS times, prints the median.
bench() {
    local name=$1; shift
    "$@" > "$OUT/$name.out" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do grep -qs "listening on" "$OUT/$name.out" && break; sleep 0.05; done
    local port
    port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$OUT/$name.out" | head -1)
    local rates=()
    local cpu0
    cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    for _ in $(seq "$RUNS"); do
        local line
        line=$("$OUT/echo-load" 127.0.0.1 "$port" "$CONNECTIONS" "$MESSAGES" "$SIZE" 120)
        rates+=("$(echo "$line" | sed -n 's/.*: \([0-9]*\) round trips\/s.*/\1/p')")
    done
    local cpu1
    cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill "$pid"; wait "$pid" 2>/dev/null || true
    local median ticks us
    median=$(printf '%s\n' "${rates[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    ticks=$(getconf CLK_TCK)
    us=$(awk -v c=$((cpu1 - cpu0)) -v t="$ticks" -v n=$((RUNS * CONNECTIONS * MESSAGES)) 'BEGIN { printf "%.2f", c / t * 1e6 / n }')
    printf '%-16s %8s round trips/s   server CPU %s us/round trip   (runs: %s)\n' "$name" "$median" "$us" "${rates[*]}"
}

echo "echo benchmark: $CONNECTIONS connections x $MESSAGES round trips of $SIZE bytes, median of $RUNS runs"
bench uv-echo "$OUT/uv-echo" 0
bench uv-echo-tuned "$OUT/uv-echo" 0 -t
bench poll-host "$OUT/poll-host" -p 0 -t 1000
