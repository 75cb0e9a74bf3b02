// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ReactiveUV",
    products: [
        .library(name: "ReactiveUV", targets: ["ReactiveUV"]),
        .executable(name: "logcast", targets: ["logcast"]),
    ],
    dependencies: [
        // For the logcast daemon only (the library depends on libuv alone).
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // libuv from the system (Debian's libuv1-dev, 1.44.2): the loop, timers and IO.
        .systemLibrary(
            name: "CLibUV",
            path: "Sources/CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        // Atomics, locks, conditions, thread identity and a monotonic clock, in C11.
        .target(
            name: "CSystemShims",
            path: "CSystemShims",
            publicHeadersPath: "include"
        ),
        .target(
            name: "ReactiveUV",
            dependencies: ["CLibUV", "CSystemShims"],
            path: "Sources/ReactiveUV"
        ),
        // The reactive log daemon: the README's main command.
        .executableTarget(
            name: "logcast",
            dependencies: [
                "ReactiveUV",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/logcast"
        ),
        .executableTarget(
            name: "ruv-demo",
            dependencies: ["ReactiveUV"],
            path: "Examples/ruv-demo"
        ),
        // A TCP echo server as signal pipelines (prints its bound address once).
        .executableTarget(
            name: "ruv-echo",
            dependencies: ["ReactiveUV"],
            path: "Examples/ruv-echo"
        ),
        // Prints StandardInput.lines; the IO tests pipe into it.
        .executableTarget(
            name: "ruv-stdin-lines",
            dependencies: ["ReactiveUV"],
            path: "Examples/ruv-stdin-lines"
        ),
        // `tail -F` on File.tail: the IO example, and the tail throughput benchmark's subject.
        .executableTarget(
            name: "ruv-tail",
            dependencies: ["ReactiveUV"],
            path: "Examples/ruv-tail"
        ),
        // End-to-end tests of the logcast binary (spawned; loopback clients).
        .testTarget(
            name: "LogcastTests",
            dependencies: ["logcast"],
            path: "Tests/LogcastTests"
        ),
        .testTarget(
            name: "ReactiveUVTests",
            dependencies: ["ReactiveUV", "CSystemShims", "CLibUV"],
            path: "Tests/ReactiveUVTests"
        ),
    ]
)
