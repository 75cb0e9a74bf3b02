// swift-tools-version:6.0
import PackageDescription

/// The package's directory, for linker flags that need an absolute path.
let packageDirectory = String(#filePath.dropLast("Package.swift".count))

let package = Package(
    name: "ReactiveUV",
    products: [
        .library(name: "ReactiveUV", targets: ["ReactiveUV"]),
        // Marble diagrams, recorders and hot/cold test signals on TestScheduler, for tests
        // only (as RxTest is to RxSwift): kept out of the library users ship.
        .library(name: "ReactiveUVTestKit", targets: ["ReactiveUVTestKit"]),
        // The C embedding API: libreactiveuv.so plus Sources/CReactiveUVEmbed/include/reactiveuv.h.
        .library(name: "reactiveuv", type: .dynamic, targets: ["ReactiveUVEmbed"]),
    ],
    // No package dependencies: the library needs libuv alone. The logcast daemon, which
    // uses swift-argument-parser and swift-log, is a package of its own (Sources/logcast).
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
        .target(
            name: "ReactiveUVTestKit",
            dependencies: ["ReactiveUV"],
            path: "Sources/ReactiveUVTestKit"
        ),
        // The C API's one public header (reactiveuv.h); its .c file only checks the header.
        .target(
            name: "CReactiveUVEmbed",
            dependencies: ["CLibUV"],
            path: "Sources/CReactiveUVEmbed",
            publicHeadersPath: "include"
        ),
        // The C API's implementation: `@c @implementation` functions checked against the header.
        // The version script makes libreactiveuv.so export `ruv_*` and nothing else of ours.
        .target(
            name: "ReactiveUVEmbed",
            dependencies: ["ReactiveUV", "CReactiveUVEmbed", "CLibUV", "CSystemShims"],
            path: "Sources/ReactiveUVEmbed",
            exclude: ["reactiveuv.map"],
            linkerSettings: [
                .unsafeFlags(["-use-ld=lld", "-Xlinker", "--version-script=\(packageDirectory)Sources/ReactiveUVEmbed/reactiveuv.map"]),
            ]
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
        // Counts the heap allocations of a subscription cycle under a preloaded malloc
        // counter (Tests/AllocationProbe/malloc_counter.c, compiled by the test that runs it):
        // AllocationCountTests. A process of its own so no test bundle defines malloc.
        .executableTarget(
            name: "ruv-alloc-probe",
            dependencies: ["ReactiveUV"],
            path: "Tests/AllocationProbe",
            exclude: ["malloc_counter.c"]
        ),
        .testTarget(
            name: "ReactiveUVTests",
            dependencies: ["ReactiveUV", "ReactiveUVTestKit", "CSystemShims", "CLibUV"],
            path: "Tests/ReactiveUVTests"
        ),
        // Builds the C examples and test programs against reactiveuv.h and libreactiveuv.so,
        // runs them, and checks the .so's symbol table.
        .testTarget(
            name: "ReactiveUVEmbedTests",
            dependencies: ["ReactiveUV", "CSystemShims"],
            path: "Tests/ReactiveUVEmbedTests",
            exclude: ["C"]
        ),
    ]
)
