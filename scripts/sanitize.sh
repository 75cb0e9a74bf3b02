#!/usr/bin/env bash
# The sanitizer lane (`make sanitize`, run by .ci/run after `make test`): builds the library,
# its tests and logcast with --sanitize=thread and with --sanitize=address, each in a
# scratch path of its own, runs the tests, and fails on any report.
#
#   scripts/sanitize.sh                 both lanes, side by side
#   scripts/sanitize.sh thread          one lane (thread | address)
#   scripts/sanitize.sh address 'Subject|TestScheduler'    one lane, a swift test --filter
#
# A report fails the run twice over: halt_on_error/exitcode make the reporting process exit
# non-zero, and every sanitized process (the test runner, the logcast daemon, the C programs
# the embedding tests build) writes its reports to files under <scratch>/sanitizer-reports,
# which this script prints and counts at the end of each step. A child process whose exit
# status a test ignores still cannot hide a report.
#
# Suppressions live in scripts/sanitize/{tsan,lsan}.supp; each entry must say why the report
# is a false positive.
#
# The two lanes run at the same time (SANITIZE_SERIAL=1: one after the other). Most of a
# lane's time is tests that wait (for processes, servers, timers), not CPU: side by side the
# two took 44 min in all where one after the other took 58 (this 2-core VM, loaded by other
# builds; 53 min one after the other on CI's), and 34 min in a lightly loaded rehearsal; CI
# has 90 min for everything. Each lane's
# output goes to the terminal with its name in front of
# every line (`[tsan] `, `[asan] `) and whole to <scratch>/sanitizer-logs/; the summary at
# the end names every failed test with its assertion, so the end of the log says what failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SWIFT=${SWIFT:-swift}
NICE=${NICE:-}                       # e.g. NICE="nice -n 10" on a shared machine
LOGCAST=Sources/logcast

lanes=("${1:-thread address}")
read -r -a lanes <<<"${lanes[0]}"
filter=${2:-}

# What runs under which sanitizer (and why), measured on a loaded 2-core VM (see docs/sanitizers.md):
# both lanes run every test of both packages; the embedding leak test scales its counts
# down under a sanitizer (Tests/ReactiveUVEmbedTests/EmbedLeakTests.swift says why).

say() { printf '\n[sanitize] %s\n' "$*"; }

# Prints every report file of a step (demangled when swift can) and sets `reports_found`.
print_reports() {
    local dir=$1 f
    reports_found=0
    for f in "$dir"/*; do
        [ -e "$f" ] || continue
        reports_found=$((reports_found + 1))
        printf '\n[sanitize] ===== %s report from %s =====\n' "$lane" "${f##*/}"
        "$SWIFT" demangle --simplified <"$f" 2>/dev/null || cat "$f"
    done
}

# The test that was running when a test process died (XCTest prints "started" lines). A leak
# report comes at the process's exit, after the last test: its allocation stacks name the tests.
last_started() {
    grep -E "Test Case '.*' started|Test .* started" "$1" | tail -1 | sed -E "s/^.*Test (Case )?'?([^' ]+)'? started.*/\2/"
}

# The tests that failed (XCTest "error:" lines, Swift Testing "✘" lines), at most 20.
failed_tests() {
    grep -E "^/.*: error: |✘ Test " "$1" | sed -E 's/^.*: error: ([^ :]+) : .*$/\1/; s/^.*✘ Test ([^ ]+).*$/\1/' | sort -u | head -20 | tr '\n' ' '
}

# The failures themselves (assertion and message, 600 characters each): the first two of
# each test, ten in all.
failure_lines() {
    grep -E "^/.*: error: |✘ " "$1" \
        | awk '{ name = $0; sub(/^.*: error: /, "", name); sub(/ : .*$/, "", name); if (seen[name]++ < 2) print }' \
        | head -10 | cut -c1-600 | sed 's/^/      /'
}

# run_step LANE LABEL LOG COMMAND...: runs a build or test step, teeing to LOG.
run_step() {
    local lane=$1 label=$2 log=$3
    shift 3
    local start=$SECONDS status
    say "$lane: $label"
    "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    say "$lane: $label: exit $status after $((SECONDS - start)) s"
    return "$status"
}

# run_lane LANE: one sanitizer's builds and tests; its failures go to <scratch>/sanitizer-failures.
run_lane() {
    local lane=$1 short lane_start scratch logcast_scratch reports logs status
    local -a failures=() flags filter_args
    case $lane in
        thread) short=tsan ;;
        address) short=asan ;;
    esac
    lane_start=$SECONDS
    scratch=$root/.build-$short
    logcast_scratch=$root/$LOGCAST/.build-$short
    reports=$scratch/sanitizer-reports
    logs=$scratch/sanitizer-logs
    mkdir -p "$scratch" "$logs"
    rm -rf "$reports"
    mkdir -p "$reports"
    rm -f "$scratch/sanitizer-failures" "$scratch/sanitizer-finished"

    # Options common to every sanitized process this lane starts. log_exe_name names each
    # report file after its program (xctest runner, logcast, a C test program).
    case $lane in
        thread)
            export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=$reports/tsan:log_exe_name=1:suppressions=$root/scripts/sanitize/tsan.supp"
            ;;
        address)
            export ASAN_OPTIONS="halt_on_error=1:exitcode=23:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:log_path=$reports/asan:log_exe_name=1"
            export LSAN_OPTIONS="exitcode=23:suppressions=$root/scripts/sanitize/lsan.supp:print_suppressions=0"
            ;;
    esac

    flags=(--sanitize="$lane")
    filter_args=()
    [ -n "$filter" ] && filter_args=(--filter "$filter")
    # Skipped in both lanes (`make test` runs them all), to keep CI's sanitizer lane within
    # its budget:
    # - the namespaced NATS fault tests and the window-of-8 test: minutes of real faults on
    #   3-server clusters; the edge code they drive runs sanitized in NatsExactlyOnceTests;
    # - the tests driving headless Chromium (HTTPBrowserTests, the web view's Chromium
    #   tests): most of their time is the browser, which is not ours; the same server code
    #   runs sanitized under Python's websockets and http.client in the neighbouring tests.
    filter_args+=(--skip "${SANITIZE_SKIP:-NatsFaultTests|NatsWindowTests|HTTPBrowserTests|Chromium}")

    # 1. The library, its examples and its tests.
    if run_step "$lane" "build ReactiveUV (scratch .build-$short)" "$logs/build-root.log" \
        $NICE "$SWIFT" build --build-tests "${flags[@]}" --scratch-path "$scratch"; then
        run_step "$lane" "test ReactiveUV" "$logs/test-root.log" \
            $NICE "$SWIFT" test --skip-build "${flags[@]}" --scratch-path "$scratch" "${filter_args[@]}"
        status=$?
        print_reports "$reports"
        if [ "$status" -ne 0 ] || [ "$reports_found" -ne 0 ]; then
            failures+=("$lane: ReactiveUV tests: exit $status, $reports_found report file(s) (printed above); failed: $(failed_tests "$logs/test-root.log"); last test started: $(last_started "$logs/test-root.log")
$(failure_lines "$logs/test-root.log")")
        fi
        rm -f "$reports"/*
    else
        failures+=("$lane: ReactiveUV build failed (see $logs/build-root.log)")
    fi

    # 2. logcast (its tests spawn the logcast binary, built with the same sanitizer).
    if run_step "$lane" "build logcast (scratch $LOGCAST/.build-$short)" "$logs/build-logcast.log" \
        $NICE "$SWIFT" build --package-path "$LOGCAST" --build-tests "${flags[@]}" --scratch-path "$logcast_scratch"; then
        run_step "$lane" "test logcast" "$logs/test-logcast.log" \
            $NICE "$SWIFT" test --package-path "$LOGCAST" --skip-build "${flags[@]}" --scratch-path "$logcast_scratch" "${filter_args[@]}"
        status=$?
        print_reports "$reports"
        if [ "$status" -ne 0 ] || [ "$reports_found" -ne 0 ]; then
            failures+=("$lane: logcast tests: exit $status, $reports_found report file(s) (printed above); failed: $(failed_tests "$logs/test-logcast.log"); last test started: $(last_started "$logs/test-logcast.log")
$(failure_lines "$logs/test-logcast.log")")
        fi
    else
        failures+=("$lane: logcast build failed (see $logs/build-logcast.log)")
    fi
    say "$lane: lane took $((SECONDS - lane_start)) s"
    if [ ${#failures[@]} -ne 0 ]; then printf '  %s\n' "${failures[@]}" >"$scratch/sanitizer-failures"; fi
    # The summary counts a lane clean only with this mark (a lane that died said nothing).
    touch "$scratch/sanitizer-finished"
}

short_name() { case $1 in thread) echo tsan ;; address) echo asan ;; esac; }
for lane in "${lanes[@]}"; do
    case $lane in
        thread | address) ;;
        *) echo "sanitize: unknown sanitizer '$lane' (thread | address)" >&2; exit 2 ;;
    esac
done

if [ "${SANITIZE_SERIAL:-0}" = 1 ] || [ ${#lanes[@]} -eq 1 ]; then
    for lane in "${lanes[@]}"; do run_lane "$lane"; done
else
    pids=()
    for lane in "${lanes[@]}"; do
        # Each lane's lines, named; sed -u keeps them whole and in time.
        ( run_lane "$lane" 2>&1 | sed -u "s/^/[$(short_name "$lane")] /" ) &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
fi

say "total $SECONDS s"
failed=0
for lane in "${lanes[@]}"; do
    scratch=$root/.build-$(short_name "$lane")
    if [ ! -e "$scratch/sanitizer-finished" ]; then
        mkdir -p "$scratch"
        printf '  %s\n' "$lane: the lane ended before its summary (see its lines above)" >"$scratch/sanitizer-failures"
    fi
    [ -s "$scratch/sanitizer-failures" ] || continue
    [ $failed -eq 1 ] || say "FAILED:"
    failed=1
    cat "$scratch/sanitizer-failures"
done
[ $failed -eq 0 ] || exit 1
say "clean: no sanitizer report (${lanes[*]})"
