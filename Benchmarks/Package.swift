// swift-tools-version:6.1
//
// ReactiveUV's benchmarks: a separate package, so that OpenCombine (the comparison) never
// enters the main package's dependency graph. Build and run in release only:
//
//     swift run -c release --package-path Benchmarks ruv-bench
//
// Tail throughput (`ruv-tail` against GNU `tail -F`, as processes) needs the example built
// first, from the repository root:
//
//     swift build -c release --product ruv-tail
//     swift run -c release --package-path Benchmarks ruv-tail-bench
//
// logcast throughput (1 client, 100 filtered clients, 100 clients, 10,000 idle clients and a
// burst; against `tail -F` and rsyslog in the same run) needs the daemon built first:
//
//     swift build -c release --package-path Sources/logcast
//     swift run -c release --package-path Benchmarks logcast-bench
//
// ReactiveUV's operators are `@inlinable` and specialize in the client module, so this
// executable measures what a user's program gets: a separate module compiled with -O.
import PackageDescription

let package = Package(
    name: "ReactiveUVBenchmarks",
    dependencies: [
        // By path, with an explicit name so the product reference below does not depend on
        // the name of the directory the repository was cloned into.
        .package(name: "ReactiveUV", path: ".."),
        .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
        // The http rows' Swift peer (nio-http-hello); built only when that product is.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // swift-nio's NIOHTTP1 on one event loop: the http rows' Swift peer
        // (Benchmarks/http/run-http-bench.sh runs it beside ruv-http-hello, Node, h2o and C).
        .executableTarget(
            name: "nio-http-hello",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/nio-http-hello",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The plain C libuv side of the IO rows: an echo server, the load generator that
        // drives both echo servers, and raw uv_async/uv_timer scheduling baselines.
        .target(
            name: "CNetBench",
            path: "Sources/CNetBench",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("uv")]
        ),
        .executableTarget(
            name: "ruv-bench",
            dependencies: [
                "CNetBench",
                .product(name: "ReactiveUV", package: "ReactiveUV"),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            path: "Sources/ruv-bench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Spawns `ruv-tail` and `tail -F` and counts the lines they print; plain POSIX, no
        // dependency, so the harness is never what is measured.
        .executableTarget(
            name: "ruv-tail-bench",
            path: "Sources/ruv-tail-bench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Appends to a file followed by `logcast` (built first with `swift build -c release
        // --package-path Sources/logcast`) and counts what its clients receive, against
        // `tail -F` and rsyslog; plain POSIX like ruv-tail-bench.
        .executableTarget(
            name: "logcast-bench",
            path: "Sources/logcast-bench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // logcast's NATS path (`--publish`, `--from`): file → JetStream (1 and 3 nodes) and
        // stream → hub client, with real nats-servers (build logcast in release first).
        .executableTarget(
            name: "logcast-nats-bench",
            dependencies: [
                .product(name: "ReactiveUV", package: "ReactiveUV"),
                .product(name: "ReactiveUVNATS", package: "ReactiveUV"),
            ],
            path: "Sources/logcast-nats-bench",
            // The Python twin of `--windows` (for machines that cannot fetch this package's
            // dependencies): not a source of this target.
            exclude: ["window-compare.py"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // UDP echo (ruv-udp-echo against a C libuv UDP echo server, one C load generator
        // checking every datagram and counting loss) and TLS echo against plain TCP.
        .target(
            name: "CUDPBench",
            path: "Sources/CUDPBench",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("uv")]
        ),
        .executableTarget(
            name: "udp-tls-bench",
            dependencies: [
                "CUDPBench",
                .product(name: "ReactiveUV", package: "ReactiveUV"),
                .product(name: "ReactiveUVTLS", package: "ReactiveUV"),
            ],
            path: "Sources/udp-tls-bench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
