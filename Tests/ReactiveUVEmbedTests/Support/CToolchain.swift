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

    /// Runs `executable` with `arguments`, waiting at most `timeout` seconds (then SIGKILL).
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
        let deadline = Date().addingTimeInterval(timeout)
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
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "",
            timedOut: timedOut)
    }

    /// The warnings every C build of ours treats as errors.
    static let strictFlags = ["-Wall", "-Wextra", "-Werror"]

    /// Compiles and links C sources against reactiveuv.h and libreactiveuv.so, as a C user
    /// would (`-I`, `-L`, `-lreactiveuv`, an rpath to the library's directory).
    ///
    /// - Returns: the path of the executable.
    static func buildProgram(
        _ sources: [String], named name: String, in directory: URL, extraFlags: [String] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> String {
        let output = directory.appendingPathComponent(name).path
        let arguments =
            ["-std=c11", "-g"] + strictFlags + extraFlags + ["-I", includeDirectory] + sources
            + ["-o", output, "-L", binDirectory, "-lreactiveuv", "-luv", "-lpthread", "-Wl,-rpath," + binDirectory]
        let result = try run("/usr/bin/cc", arguments, timeout: 60)
        XCTAssertEqual(result.status, 0, "cc \(arguments.joined(separator: " ")) failed:\n\(result.stderr)", file: file, line: line)
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
