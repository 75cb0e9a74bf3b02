#!/usr/bin/env bash
# The fuzz lane (`make fuzz`, run by .ci/run after `make test`): builds the libFuzzer
# targets of Fuzz/ with -sanitize=fuzzer,address and runs each for a bounded time; any
# crash, sanitizer report, timeout or out-of-memory fails the lane, and its input is kept.
#
# Time budget: FUZZ_SECONDS (default 300, i.e. about 5 minutes in CI) is shared equally
# by the targets, plus the build (a cold instrumented build of ReactiveUV takes several
# minutes on a 2-core machine; Fuzz/.build is its own scratch path, kept between runs).
#
#   scripts/fuzz.sh                       every target, FUZZ_SECONDS in all
#   FUZZ_SECONDS=3600 scripts/fuzz.sh syslog   one target for an hour
#
# Targets (NAME  EXECUTABLE  what it reads):
#   client-protocol  FuzzClientProtocol  logcast's client lines and commands (ClientLines,
#                                        ClientCommand)
#   syslog           FuzzSyslog          RFC 6587 framing, RFC 5424 and RFC 3164 parsing
#   checkpoint       FuzzCheckpoint      the library's tail checkpoint file (TailCheckpointStore)
#   http-request     FuzzHTTPRequest     ReactiveUVHTTP's request parser (head, framing, limits)
#   http-response    FuzzHTTPResponse    ReactiveUVHTTP's response parser, as the client reads answers
#   websocket-frames FuzzWebSocketFrames ReactiveUVHTTP's WebSocket frame reader
#
# Layout of each target NAME:
#   Fuzz/Sources/<EXECUTABLE>/   an executable target in Fuzz/Package.swift with one
#                                @_cdecl("LLVMFuzzerTestOneInput") function, built with
#                                -parse-as-library (libFuzzer's main drives it)
#   Fuzz/corpus/NAME/            the seed corpus, in the repository (read, never written)
#   Fuzz/regressions/NAME/       inputs that once crashed: run once each before fuzzing,
#                                so a fixed crash stays fixed (a crash found is a test)
#   Fuzz/crashes/NAME-*          what this run found (not in git; CI keeps it as an artifact)
#   Fuzz/.work/NAME/             inputs libFuzzer found interesting (not in git)
#
# Adding a target (the HTTP request and WebSocket frame parsers, whose corpora are
# Fuzz/corpus/http-request/ and Fuzz/corpus/websocket-frames/):
#   1. In Fuzz/Package.swift, an .executableTarget named e.g. FuzzHTTPRequest, path
#      "Sources/FuzzHTTPRequest", swiftSettings: fuzzTarget, depending on the product that
#      holds the parser (.product(name: "ReactiveUVHTTP", package: rootIdentity)).
#   2. Fuzz/Sources/FuzzHTTPRequest/FuzzHTTPRequest.swift: a public function marked
#      @_cdecl("LLVMFuzzerTestOneInput") taking (UnsafePointer<UInt8>, Int) -> CInt that
#      feeds the bytes to the parser (in chunks, as a socket would) and returns 0.
#   3. One line in TARGETS below: "http-request:FuzzHTTPRequest".
# The budget is then shared by one more target; nothing else changes.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(
    "client-protocol:FuzzClientProtocol"
    "syslog:FuzzSyslog"
    "checkpoint:FuzzCheckpoint"
    "http-request:FuzzHTTPRequest"
    "http-response:FuzzHTTPResponse"
    "websocket-frames:FuzzWebSocketFrames"
)

SWIFT=${SWIFT:-swift}
TOTAL=${FUZZ_SECONDS:-300}
# Targets named on the command line, or all of them.
selected=("$@")
if [ ${#selected[@]} -eq 0 ]; then
    for entry in "${TARGETS[@]}"; do selected+=("${entry%%:*}"); done
fi
executable_of() {
    for entry in "${TARGETS[@]}"; do
        if [ "${entry%%:*}" = "$1" ]; then echo "${entry#*:}"; return 0; fi
    done
    echo "fuzz: no target '$1' (targets: ${TARGETS[*]%%:*})" >&2
    return 1
}
for name in "${selected[@]}"; do executable_of "$name" >/dev/null; done

echo "fuzz: building ${#selected[@]} target(s) with -sanitize=fuzzer,address" >&2
# --sanitize=fuzzer makes SwiftPM link libFuzzer's main (and not rename an executable's
# main); -Xswiftc -sanitize=fuzzer,address instruments every module for coverage, the
# library's included, not just the fuzz targets.
$SWIFT build --package-path Fuzz --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address 2>&1 \
    | grep -v "Cannot export local symbol" >&2
bin=$($SWIFT build --package-path Fuzz --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address --show-bin-path)

per=$(( TOTAL / ${#selected[@]} ))
[ "$per" -ge 1 ] || per=1
mkdir -p Fuzz/crashes
# Swift's own crash report would run inside the sanitizer's handler (and be reported by
# it); libFuzzer's report and the saved input say all that is needed.
export SWIFT_BACKTRACE=enable=no
# The Swift runtime keeps caches it never frees; leaks are the sanitizer lane's business.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

failed=()
for name in "${selected[@]}"; do
    exe="$bin/$(executable_of "$name")"
    seeds="Fuzz/corpus/$name"
    work="Fuzz/.work/$name"
    mkdir -p "$work"
    [ -d "$seeds" ] || { echo "fuzz: $name has no seed corpus at $seeds" >&2; failed+=("$name"); continue; }
    if [ -d "Fuzz/regressions/$name" ] && [ -n "$(ls -A "Fuzz/regressions/$name")" ]; then
        echo "fuzz: $name: the inputs that once crashed" >&2
        if ! "$exe" -runs=1 "Fuzz/regressions/$name"/* >"Fuzz/crashes/$name.regressions.log" 2>&1; then
            echo "fuzz: $name: a regression input crashes again (Fuzz/crashes/$name.regressions.log)" >&2
            tail -n 30 "Fuzz/crashes/$name.regressions.log" >&2
            failed+=("$name")
            continue
        fi
    fi
    echo "fuzz: $name for ${per}s" >&2
    # New inputs go to the first corpus directory (the work one), never into the seeds.
    if ! "$exe" "$work" "$seeds" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -artifact_prefix="Fuzz/crashes/$name-" -print_final_stats=1 >"Fuzz/crashes/$name.log" 2>&1; then
        echo "fuzz: $name FAILED; the input is saved:" >&2
        ls -1 Fuzz/crashes/"$name"-* >&2 2>/dev/null || true
        tail -n 40 "Fuzz/crashes/$name.log" >&2
        failed+=("$name")
    else
        grep -E "^stat::number_of_executed_units|^stat::new_units_added" "Fuzz/crashes/$name.log" \
            | sed "s/^/fuzz: $name: /" >&2 || true
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (inputs in Fuzz/crashes/; once fixed, add each to Fuzz/regressions/NAME/)" >&2
    exit 1
fi
echo "fuzz: ${#selected[@]} target(s) ran ${per}s each without a crash" >&2
