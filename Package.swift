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
        // NATS and JetStream as signals over cnats (Debian libnats-dev); the core library
        // above stays libuv-only.
        .library(name: "ReactiveUVNATS", targets: ["ReactiveUVNATS"]),
        // Real nats-server processes on loopback for tests (ours, logcast's, a user's).
        .library(name: "ReactiveUVNATSTestKit", targets: ["ReactiveUVNATSTestKit"]),
        // TLS over ReactiveUV's TCP with OpenSSL (Debian libssl-dev): a product of its own,
        // so the core library stays libuv-only.
        .library(name: "ReactiveUVTLS", targets: ["ReactiveUVTLS"]),
        // HTTP/1.1 server and client, server-sent events and WebSocket as signals, over TCP
        // and Unix sockets; the wire parser is Node's http_parser (Debian
        // libhttp-parser-dev) and permessage-deflate is zlib: a product of its own, so the
        // core library stays libuv-only. It does not link OpenSSL.
        .library(name: "ReactiveUVHTTP", targets: ["ReactiveUVHTTP"]),
        // HTTPS, https:// in the client and wss:, over ReactiveUVTLS: a product of its own,
        // so that a plain HTTP program does not load OpenSSL (its relocations alone touch
        // ~1.7 MiB at start-up).
        .library(name: "ReactiveUVHTTPS", targets: ["ReactiveUVHTTPS"]),
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
        // OpenSSL from the system (Debian's libssl-dev, 3.x): libssl and libcrypto.
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // TLS.listen / TLS.connect: OpenSSL through memory BIOs over TCP connections.
        .target(
            name: "ReactiveUVTLS",
            dependencies: ["ReactiveUV", "COpenSSL"],
            path: "Sources/ReactiveUVTLS"
        ),
        // Node's http_parser 2.9 from the system (Debian's libhttp-parser-dev; no pkg-config file).
        .systemLibrary(
            name: "CHTTPParser",
            path: "Sources/CHTTPParser",
            providers: [.apt(["libhttp-parser-dev"])]
        ),
        // zlib from the system (Debian's zlib1g-dev): WebSocket's permessage-deflate.
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .target(
            name: "ReactiveUVHTTP",
            dependencies: ["ReactiveUV", "CHTTPParser", "CZlib", "CSystemShims"],
            path: "Sources/ReactiveUVHTTP"
        ),
        // HTTP.listen(certificate:key:), WebSocket.connectTLS, the client's TLSHTTPConnector:
        // ReactiveUVHTTP over ReactiveUVTLS.
        .target(
            name: "ReactiveUVHTTPS",
            dependencies: ["ReactiveUVHTTP", "ReactiveUVTLS", "ReactiveUV"],
            path: "Sources/ReactiveUVHTTPS"
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
        // cnats from the system (Debian's libnats-dev, 3.4.1): the NATS and JetStream client.
        .systemLibrary(
            name: "CNATS",
            path: "Sources/CNATS",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        // Our libuv adapter for cnats (in place of cnats's nats/adapters/libuv.h: adapter.c says why).
        .target(
            name: "CNATSLibuv",
            dependencies: ["CNATS", "CLibUV"],
            path: "Sources/CNATSLibuv",
            publicHeadersPath: "include"
        ),
        .target(
            name: "ReactiveUVNATS",
            dependencies: ["ReactiveUV", "CNATS", "CNATSLibuv", "CLibUV", "CSystemShims"],
            path: "Sources/ReactiveUVNATS"
        ),
        .target(
            name: "ReactiveUVNATSTestKit",
            path: "Sources/ReactiveUVNATSTestKit"
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
        // A WebSocket echo server at /ws (prints its bound address once); the WebSocket
        // echo benchmark's subject.
        .executableTarget(
            name: "ruv-ws-echo",
            dependencies: ["ReactiveUV", "ReactiveUVHTTP"],
            path: "Examples/ruv-ws-echo"
        ),
        // A UDP echo server (prints its bound address once); the UDP echo benchmark's subject.
        .executableTarget(
            name: "ruv-udp-echo",
            dependencies: ["ReactiveUV"],
            path: "Examples/ruv-udp-echo"
        ),
        // The HTTP server example (GET /, POST /echo, GET /stream?n=K; prints its bound
        // address once): the HTTP tests drive it with curl, the HTTP benchmark with wrk.
        .executableTarget(
            name: "ruv-http-hello",
            dependencies: ["ReactiveUVHTTP", "ReactiveUV"],
            path: "Examples/ruv-http-hello"
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
        // NATS against real nats-server processes on loopback (one server, a 3-node cluster).
        .testTarget(
            name: "ReactiveUVNATSTests",
            dependencies: ["ReactiveUVNATS", "ReactiveUVNATSTestKit", "ReactiveUV", "CLibUV"],
            path: "Tests/ReactiveUVNATSTests"
        ),
        // TLS against certificates the tests make with the openssl command.
        .testTarget(
            name: "ReactiveUVTLSTests",
            dependencies: ["ReactiveUVTLS", "ReactiveUV", "CLibUV"],
            path: "Tests/ReactiveUVTLSTests"
        ),
        // HTTP, server-sent events and WebSocket against real clients (curl, Python's
        // http.client and websockets) and raw sockets on loopback; without TLS, so these
        // tests also show that ReactiveUVHTTP needs no OpenSSL.
        .testTarget(
            name: "ReactiveUVHTTPTests",
            dependencies: ["ReactiveUVHTTP", "ReactiveUV", "CLibUV"],
            path: "Tests/ReactiveUVHTTPTests"
        ),
        // HTTPS, https:// and wss: against curl, Python's http.client and websockets, with
        // certificates made by the openssl command. Support/ holds symbolic links to
        // ReactiveUVHTTPTests' support files (test servers, child processes, the
        // handles-closed check), one copy for both targets.
        .testTarget(
            name: "ReactiveUVHTTPSTests",
            dependencies: ["ReactiveUVHTTPS", "ReactiveUVHTTP", "ReactiveUVTLS", "ReactiveUV", "CLibUV"],
            path: "Tests/ReactiveUVHTTPSTests"
        ),
        // The documentation's Swift examples (README, DocC articles) as functions whose
        // bodies are the documents' code, compiled with the tests so a renamed API breaks the
        // build, not the reader; the quick ones run on loopback and real temp files.
        .testTarget(
            name: "DocExamplesTests",
            dependencies: [
                "ReactiveUV", "ReactiveUVTestKit", "ReactiveUVTLS", "ReactiveUVNATS",
                "ReactiveUVNATSTestKit", "CLibUV",
            ],
            path: "Tests/DocExamplesTests"
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
