import Foundation
import XCTest

// What the embedding tests need to act like a C user: where the header and the built
// libreactiveuv.so are, a C compiler, and running the programs it builds with bounded waits.
// Foundation's Process is used here, in tests only (the library itself has no Foundation).

/// Paths and helpers shared by the embedding tests.
enum CToolchain {
    /// The package's root directory (this file is Tests/ReactiveUVEmbedTests/Support/…).
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The directory holding reactiveuv.h (`-I` for C programs).
    static var includeDirectory: String { packageRoot.appendingPathComponent("Sources/CReactiveUVEmbed/include").path }

    /// The public header.
    static var header: String { includeDirectory + "/reactiveuv.h" }

    /// The C sources of the tests.
    static var testSources: URL { packageRoot.appendingPathComponent("Tests/ReactiveUVEmbedTests/C") }

    /// The C examples.
    static var examples: URL { packageRoot.appendingPathComponent("Examples/embed-c") }

    /// The build products directory: the test executable lives there, next to the .so
    /// (`swift build --show-bin-path`).
    static let binDirectory: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // On Linux the test executable is <bin>/<Package>PackageTests.xctest; tolerate a bundle layout too.
        while dir.path != "/" && !FileManager.default.fileExists(atPath: dir.appendingPathComponent("libreactiveuv.so").path) {
            dir = dir.deletingLastPathComponent()
        }
        return dir.path
    }()

    /// The built library.
    static var library: String { binDirectory + "/libreactiveuv.so" }

    /// A fresh temporary directory, removed by the caller's teardown.
    static func temporaryDirectory(_ name: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("ruv-embed-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// The result of running a program.
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
        var timedOut: Bool
        /// stdout split into lines, without the empty last one.
        var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty } }
    }

    /// Runs `executable` with `arguments`, waiting at most `timeout` seconds (times
    /// ``timeScale``; then SIGKILL).
    /// Output goes to files, so a chatty program cannot block on a full pipe.
    static func run(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:], timeout: Double = 20,
        workingDirectory: URL? = nil
    ) throws -> Output {
        let scratch = try temporaryDirectory("run")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("stdout")
        let errURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout * timeScale)
        var timedOut = false
        while process.isRunning {
            if Date() > deadline {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(5_000)
        }
        process.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        return Output(
            status: process.terminationStatus,
            stdout: readText(outURL.path),
            stderr: readText(errURL.path),
            timedOut: timedOut)
    }

    /// A text file's contents ("" when it cannot be read), read with plain `read(2)`.
    ///
    /// Not `String(contentsOf:)`: on Linux, swift-foundation reads a file whose size is 0
    /// into a 4 KiB buffer it never frees (`readBytesFromFile`, the `fileSize == 0` branch),
    /// and a program's output file is often empty: LeakSanitizer (`make sanitize`) reports
    /// every such read.
    static func readText(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The warnings every C build of ours treats as errors.
    static let strictFlags = ["-Wall", "-Wextra", "-Werror"]

    /// A sanitizer libreactiveuv.so was built with (`swift build --sanitize=thread|address`).
    enum Sanitizer: String {
        case thread, address

        /// The clang flag that instruments a C program and links this sanitizer's runtime.
        var flag: String { "-fsanitize=" + rawValue }
    }

    /// The sanitizer this build uses, or nil for a plain build.
    ///
    /// The test executable and libreactiveuv.so come out of the same `swift build`, so they
    /// carry the same instrumentation. A sanitized Swift executable links the sanitizer's
    /// runtime statically and exports its entry points (the sanitized .so leaves them
    /// undefined and expects its executable to provide them), so they are visible here.
    static let sanitizer: Sanitizer? = {
        // A nil handle is glibc's RTLD_DEFAULT: the executable and every loaded library.
        if dlsym(nil, "__tsan_init") != nil { return .thread }
        if dlsym(nil, "__asan_init") != nil { return .address }
        return nil
    }()

    /// How much longer every bounded wait on a program may take: 5 under a sanitizer, whose
    /// instrumentation makes the library and the C program several times slower (TSan
    /// most), which on a loaded 2-core machine overran the plain bounds; 1 otherwise.
    static var timeScale: Double { sanitizer == nil ? 1 : 5 }

    /// The C compiler for programs linked against libreactiveuv.so.
    ///
    /// `cc` for a plain build. A sanitized library needs its sanitizer's runtime in the
    /// program that loads it, and that runtime must be the one the Swift toolchain built
    /// the library with (gcc's libtsan/libasan are other versions with another ABI): so
    /// the toolchain's own clang, next to the `swift` that runs the tests, builds the
    /// program with the same `-fsanitize=`, which also instruments the C side.
    static let compiler: String = {
        guard sanitizer != nil else { return "/usr/bin/cc" }
        var candidates: [String] = []
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let swift = String(dir) + "/swift"
            guard FileManager.default.isExecutableFile(atPath: swift) else { continue }
            let real = URL(fileURLWithPath: swift).resolvingSymlinksInPath()
            candidates.append(real.deletingLastPathComponent().appendingPathComponent("clang").path)
            break
        }
        candidates.append("/opt/swift/usr/bin/clang")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "clang"
    }()

    /// Compiles and links C sources against reactiveuv.h and libreactiveuv.so, as a C user
    /// would (`-I`, `-L`, `-lreactiveuv`, an rpath to the library's directory).
    ///
    /// When the library is sanitized (``sanitizer``), the program is built by the
    /// toolchain's clang with the same `-fsanitize=` (see ``compiler``), replacing any
    /// `-fsanitize=` among `extraFlags`: one process holds one sanitizer runtime.
    ///
    /// - Returns: the path of the executable.
    static func buildProgram(
        _ sources: [String], named name: String, in directory: URL, extraFlags: [String] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> String {
        let output = directory.appendingPathComponent(name).path
        var flags = extraFlags
        if let sanitizer {
            flags = flags.filter { !$0.hasPrefix("-fsanitize=") } + [sanitizer.flag, "-fno-omit-frame-pointer"]
            if sanitizer == .thread {
                // The toolchain's TSan runtime intercepts libdispatch and Blocks, so a program
                // linking it statically needs both: the Swift runtime's own copies.
                let swiftLibraries = URL(fileURLWithPath: compiler).deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("lib/swift/linux").path
                flags += ["-L", swiftLibraries, "-ldispatch", "-lBlocksRuntime", "-Wl,-rpath," + swiftLibraries]
            }
        }
        let arguments =
            ["-std=c11", "-g"] + strictFlags + flags + ["-I", includeDirectory] + sources
            + ["-o", output, "-L", binDirectory, "-lreactiveuv", "-luv", "-lpthread", "-Wl,-rpath," + binDirectory]
        let result = try run(compiler, arguments, timeout: 60)
        XCTAssertEqual(result.status, 0, "\(compiler) \(arguments.joined(separator: " ")) failed:\n\(result.stderr)", file: file, line: line)
        if result.status != 0 { throw CBuildError(message: result.stderr) }
        return output
    }

    /// Fails the test unless `libreactiveuv.so` was built (by `swift build`, which builds
    /// every product).
    static func requireLibrary(file: StaticString = #filePath, line: UInt = #line) throws {
        guard FileManager.default.fileExists(atPath: library) else {
            XCTFail("libreactiveuv.so not found next to the test executable (\(binDirectory)); run `swift build` first", file: file, line: line)
            throw CBuildError(message: "no library")
        }
    }
}

/// A C build failed (the message is the compiler's output).
struct CBuildError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
