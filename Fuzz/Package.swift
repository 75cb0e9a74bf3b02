// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for the parsers that read bytes from outside (see scripts/fuzz.sh,
// which builds and runs them). A package of its own, as Benchmarks/ is: the instrumented
// build (-sanitize=fuzzer,address on every module) never touches the normal one, and
// neither main package knows it exists.
//
// Each target is an executable with one `@_cdecl("LLVMFuzzerTestOneInput")` function and
// no main: it is compiled with -parse-as-library, and libFuzzer's own `main` drives it.
// logcast's parsers live in its executable target, which nothing can import, so their
// files are symbolic links into Sources/logcast/Daemon/ (each chosen to need nothing
// beyond ReactiveUV): the fuzzed code is the shipped code.

/// The repository root: the ReactiveUV package.
let rootPath = String(#filePath.dropLast("Fuzz/Package.swift".count))
/// SwiftPM names a path dependency after its directory.
let rootIdentity = rootPath.split(separator: "/").last.map { $0.lowercased() } ?? "reactiveuv"

/// The flags every fuzz target needs: no top-level code (libFuzzer's main is used).
let fuzzTarget: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]

let package = Package(
    name: "ReactiveUVFuzz",
    dependencies: [.package(path: rootPath)],
    targets: [
        // logcast's client protocol: input split into lines (ClientLines.swift), then parsed
        // as commands (ClientCommand.swift).
        .executableTarget(
            name: "FuzzClientProtocol",
            dependencies: [.product(name: "ReactiveUV", package: rootIdentity)],
            path: "Sources/FuzzClientProtocol",
            swiftSettings: fuzzTarget),
        // Syslog: RFC 6587 framing (octet counting or LF) and RFC 5424 / RFC 3164 parsing.
        .executableTarget(
            name: "FuzzSyslog",
            path: "Sources/FuzzSyslog",
            swiftSettings: fuzzTarget),
        // The library's checkpoint file reader (TailCheckpointStore).
        .executableTarget(
            name: "FuzzCheckpoint",
            dependencies: [.product(name: "ReactiveUV", package: rootIdentity)],
            path: "Sources/FuzzCheckpoint",
            swiftSettings: fuzzTarget),
        // ReactiveUVHTTP's request parser (head scanner, http_parser, framing, limits).
        .executableTarget(
            name: "FuzzHTTPRequest",
            dependencies: [.product(name: "ReactiveUVHTTP", package: rootIdentity)],
            path: "Sources/FuzzHTTPRequest",
            swiftSettings: fuzzTarget),
        // ReactiveUVHTTP's response parser, as the client uses it (length, chunks, close, limits).
        .executableTarget(
            name: "FuzzHTTPResponse",
            dependencies: [.product(name: "ReactiveUVHTTP", package: rootIdentity)],
            path: "Sources/FuzzHTTPResponse",
            swiftSettings: fuzzTarget),
        // ReactiveUVHTTP's WebSocket frame reader (both roles, permessage-deflate).
        .executableTarget(
            name: "FuzzWebSocketFrames",
            dependencies: [.product(name: "ReactiveUVHTTP", package: rootIdentity)],
            path: "Sources/FuzzWebSocketFrames",
            swiftSettings: fuzzTarget),
    ]
)
