import Foundation
import XCTest

/// A program started in the background, whose output a test watches while it runs (the
/// examples are long-running: a tail, a server). Output goes to files; every wait is bounded;
/// `deinit` kills a program still running.
final class RunningProgram {
    let process = Process()
    let directory: URL
    let outURL: URL
    let errURL: URL
    private let outHandle: FileHandle
    private let errHandle: FileHandle

    init(_ executable: String, _ arguments: [String]) throws {
        directory = try CToolchain.temporaryDirectory("prog")
        outURL = directory.appendingPathComponent("stdout")
        errURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        outHandle = try FileHandle(forWritingTo: outURL)
        errHandle = try FileHandle(forWritingTo: errURL)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? outHandle.close()
        try? errHandle.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// What the program printed so far.
    var stdout: String { CToolchain.readText(outURL.path) }
    var stderr: String { CToolchain.readText(errURL.path) }

    /// Complete lines printed so far.
    var lines: [String] {
        let text = stdout
        var parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        parts.removeLast()  // the unfinished tail (empty after a final newline)
        return parts
    }

    /// Waits until a printed line satisfies `predicate`; returns it, or nil after `timeout`
    /// (times `CToolchain.timeScale`).
    func waitForLine(timeout: Double = 10, where predicate: (String) -> Bool) -> String? {
        let deadline = Date().addingTimeInterval(timeout * CToolchain.timeScale)
        while Date() < deadline {
            if let line = lines.first(where: predicate) { return line }
            if !process.isRunning { return lines.first(where: predicate) }
            usleep(10_000)
        }
        return nil
    }

    /// Sends a signal.
    func signal(_ signum: Int32) { kill(process.processIdentifier, signum) }

    /// Waits until the program watches something with inotify (a `wd:` line in the fdinfo
    /// of one of its descriptors, /proc/PID/fdinfo): a file tail has been set up, so a file
    /// created now is one it sees appear. Returns false after `timeout` (times
    /// `CToolchain.timeScale`) or if the program ended.
    func waitForInotifyWatch(timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout * CToolchain.timeScale)
        let fdinfo = "/proc/\(process.processIdentifier)/fdinfo"
        while Date() < deadline && process.isRunning {
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: fdinfo)) ?? [] {
                if CToolchain.readText(fdinfo + "/" + fd).contains("inotify wd:") { return true }
            }
            usleep(10_000)
        }
        return false
    }

    /// Waits for the program to exit; returns its status, or nil after `timeout` (times
    /// `CToolchain.timeScale`).
    func waitForExit(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout * CToolchain.timeScale)
        while process.isRunning {
            if Date() > deadline { return nil }
            usleep(10_000)
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
