// swift-tools-version:6.0
import PackageDescription

// logcast, the reactive log daemon, is a package of its own so that a program depending
// on the ReactiveUV library never resolves or builds the daemon's dependencies
// (swift-argument-parser, swift-log, Hyperscan): SwiftPM resolves every dependency a
// package declares, even for a client that uses none of the products needing them.

/// The repository root: the ReactiveUV package this daemon is written with.
let rootPath = String(#filePath.dropLast("Sources/logcast/Package.swift".count))
/// SwiftPM names a path dependency after its directory (a clone may be called anything,
/// except "logcast": that is this package's own identity).
let rootIdentity = rootPath.split(separator: "/").last.map { $0.lowercased() } ?? "reactiveuv"

let package = Package(
    name: "logcast",
    products: [
        .executable(name: "logcast", targets: ["logcast"]),
    ],
    dependencies: [
        .package(path: rootPath),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // Hyperscan, the matching engine behind GREP (Debian libhyperscan-dev; x86-64).
        .systemLibrary(
            name: "CHyperscan",
            path: "CHyperscan",
            pkgConfig: "libhs",
            providers: [.apt(["libhyperscan-dev"])]
        ),
        // libsystemd (Debian libsystemd-dev): readiness, status, watchdog and socket
        // activation under systemd (Daemon/App/Systemd*.swift).
        .systemLibrary(
            name: "CSystemd",
            path: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // Scans many lines per call into (line, pattern) pairs (a C match callback).
        .target(
            name: "LogcastScan",
            dependencies: ["CHyperscan"],
            path: "LogcastScan"
        ),
        // The reactive log daemon: the README's main command.
        .executableTarget(
            name: "logcast",
            dependencies: [
                "CHyperscan",
                "CSystemd",
                "LogcastScan",
                .product(name: "ReactiveUV", package: rootIdentity),
                .product(name: "ReactiveUVNATS", package: rootIdentity),
                .product(name: "ReactiveUVTLS", package: rootIdentity),
                .product(name: "ReactiveUVHTTP", package: rootIdentity),
                // https:// alert webhooks (Alerts/AlertEngine.swift).
                .product(name: "ReactiveUVHTTPS", package: rootIdentity),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Daemon"
        ),
        // End-to-end tests of the logcast binary (spawned; loopback clients).
        .testTarget(
            name: "LogcastTests",
            dependencies: ["logcast", .product(name: "ReactiveUVNATS", package: rootIdentity),
                           .product(name: "ReactiveUVNATSTestKit", package: rootIdentity),
                           .product(name: "ReactiveUV", package: rootIdentity)],
            path: "Tests/LogcastTests"
        ),
    ]
)
