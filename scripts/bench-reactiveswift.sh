#!/bin/sh
# ruv-bench's operator rows against ReactiveSwift 7.2.1, built from a local copy of its
# repository (ReactiveSwift is not in the local package mirror, and it never enters a
# package of ours). Nothing of ReactiveSwift is committed: the rows
# (Benchmarks/ReactiveSwiftRows/main.swift) are built in a throw-away package under
# $RS_BENCH_DIR (default /tmp/ruv-rs-bench) beside an exported copy of the tag, whose
# Package.swift is replaced by one without its test dependencies (Quick, Nimble).
#
#     scripts/bench-reactiveswift.sh [--cmo] REPO [ROWS]
#
# REPO: a ReactiveSwift git checkout or bare git directory that has the tag 7.2.1.
# --cmo: build ReactiveSwift and the rows with -cross-module-optimization (as
# `make bench-cmo` builds ReactiveUV and OpenCombine).
# ROWS: comma-separated row names (default: all of them).
set -eu
SWIFT=${SWIFT:-swift}
CMO=""
SCRATCH=.build
if [ "${1:-}" = "--cmo" ]; then
    CMO="-Xswiftc -cross-module-optimization"
    SCRATCH=.build-cmo
    shift
fi
REPO=${1:?usage: scripts/bench-reactiveswift.sh [--cmo] REPO [ROWS]}
ROWS=${2:-}
HERE=$(cd "$(dirname "$0")/.." && pwd)
WORK=${RS_BENCH_DIR:-/tmp/ruv-rs-bench}

if [ -d "$REPO/.git" ]; then GITDIR="$REPO/.git"; else GITDIR="$REPO"; fi
rm -rf "$WORK/ReactiveSwift"
mkdir -p "$WORK/ReactiveSwift" "$WORK/bench/Sources/rs-bench"
git --git-dir="$GITDIR" archive 7.2.1 Sources | tar -x -C "$WORK/ReactiveSwift"
cat > "$WORK/ReactiveSwift/Package.swift" <<'SWIFT'
// swift-tools-version:5.2
import PackageDescription
let package = Package(
    name: "ReactiveSwift",
    products: [.library(name: "ReactiveSwift", targets: ["ReactiveSwift"])],
    targets: [.target(name: "ReactiveSwift", path: "Sources")],
    swiftLanguageVersions: [.v5]
)
SWIFT
cat > "$WORK/bench/Package.swift" <<'SWIFT'
// swift-tools-version:5.9
import PackageDescription
let package = Package(
    name: "rs-bench",
    dependencies: [.package(path: "../ReactiveSwift")],
    targets: [.executableTarget(name: "rs-bench", dependencies: ["ReactiveSwift"], path: "Sources/rs-bench")],
    swiftLanguageVersions: [.v5]
)
SWIFT
cp "$HERE/Benchmarks/ReactiveSwiftRows/main.swift" "$WORK/bench/Sources/rs-bench/main.swift"
# shellcheck disable=SC2086
"$SWIFT" build -c release --package-path "$WORK/bench" --scratch-path "$WORK/bench/$SCRATCH" $CMO >&2
"$WORK/bench/$SCRATCH/release/rs-bench" $ROWS
