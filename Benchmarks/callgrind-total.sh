# Sourced by the instruction-count scripts (Benchmarks/echo/instructions-per-message.sh,
# Benchmarks/http/instructions-per-request.sh, Benchmarks/http/ws-instructions-per-message.sh):
# one server run under callgrind, driven by the script's own load program, and its total.
#
#     callgrind_total KEEP_NAME [SERVER_ARGS... --] LOAD_ARGS...
#
# Starts "$SERVER" SERVER_ARGS... PORT (default SERVER_ARGS: --port) under callgrind on a
# random loopback port, waits until it accepts, runs `python3 "$OUT/load.py" PORT LOAD_ARGS...`,
# stops the server with SIGINT (so callgrind writes its file) and prints the program's total
# instructions. With KEEP=DIR set, the callgrind file is kept as DIR/KEEP_NAME. Needs $SERVER
# and $OUT (a scratch folder the script removes) set by the caller.
callgrind_total() {
    local keep_name=$1 port=$((20000 + RANDOM % 20000)) pid
    shift
    local server_args=(--port)
    local arg i=0
    for arg in "$@"; do
        i=$((i + 1))
        if [ "$arg" = "--" ]; then
            server_args=("${@:1:i-1}")
            shift "$i"
            break
        fi
    done
    valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.out" "$SERVER" "${server_args[@]}" "$port" \
        >"$OUT/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()" 2>/dev/null && break
        sleep 0.2
    done
    python3 "$OUT/load.py" "$port" "$@" >/dev/null
    kill -INT "$pid"
    wait "$pid" 2>/dev/null || true
    [ -n "${KEEP:-}" ] && cp "$OUT/cg.out" "$KEEP/$keep_name"
    callgrind_annotate "$OUT/cg.out" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
