import Foundation
import Glibc
import XCTest

/// Real journal files written by systemd's own `systemd-journal-remote` (Debian package
/// systemd-journal-remote), fed entries in the journal export format
/// (https://systemd.io/JOURNAL_EXPORT_FORMATS/) through a pipe: one process per journal
/// file, so the entries are appended while logcast follows the directory, as journald
/// appends to its files. No running journald is needed.
final class JournalRemote: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    /// The journal file written (`DIR/NAME.journal`).
    let file: String
    /// A boot id shared by every entry (the export format asks for one).
    static let bootID = "0123456789abcdef0123456789abcdef"
    /// The monotonic timestamp of the last entry. Entries take the real monotonic clock
    /// (strictly increasing): sd_journal orders the entries of one boot in several files by
    /// it, so two writers' files interleave as journald's would.
    private var monotonic: UInt64 = 0

    /// The binary, or nil when the package is not installed.
    static var binary: String? {
        ["/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote"].first { access($0, X_OK) == 0 }
    }

    /// The binary, or a skip saying what to install.
    static func required() throws -> String {
        guard let binary else {
            throw XCTSkip("systemd-journal-remote is not installed (Debian package systemd-journal-remote; scripts/ensure-deps.sh installs it)")
        }
        return binary
    }

    /// Starts `systemd-journal-remote -o DIR/NAME.journal -` reading from our pipe.
    ///
    /// - Parameters:
    ///   - directory: where the journal file is written.
    ///   - name: the file's name without `.journal`.
    init(directory: String, name: String = "remote") throws {
        file = directory + "/" + name + ".journal"
        process.executableURL = URL(fileURLWithPath: try Self.required())
        // No compression: the test's large MESSAGE stays a plain field (either works).
        process.arguments = ["--compress=no", "-o", file, "-"]
        process.standardInput = input
        let log = directory + "/" + name + ".remote-log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
    }

    /// One entry in the export format: `FIELD=value` lines (a field holding a line feed or
    /// other control bytes in the binary form: name, LF, 64-bit little-endian length, the
    /// bytes, LF), then an empty line.
    ///
    /// - Parameters:
    ///   - message: MESSAGE's bytes.
    ///   - fields: other fields (`_SYSTEMD_UNIT`, `SYSLOG_IDENTIFIER`, `_COMM`, `PRIORITY`...).
    /// - Returns: the entry's bytes.
    func entry(_ message: [UInt8], _ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        let realtime = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        monotonic = max(monotonic + 1, UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)
        out += Array("__REALTIME_TIMESTAMP=\(realtime)\n__MONOTONIC_TIMESTAMP=\(monotonic)\n_BOOT_ID=\(Self.bootID)\n".utf8)
        for (name, value) in fields { out += Array("\(name)=\(value)\n".utf8) }
        if message.contains(where: { $0 < 0x20 && $0 != 9 }) {
            out += Array("MESSAGE\n".utf8)
            var length = UInt64(message.count).littleEndian
            withUnsafeBytes(of: &length) { out += Array($0) }
            out += message
            out.append(10)
        } else {
            out += Array("MESSAGE=".utf8) + message + [10]
        }
        out.append(10)
        return out
    }

    /// An entry of `unit` (with PRIORITY) saying `message`.
    func entry(_ message: String, unit: String = "a.service", priority: Int = 6) -> [UInt8] {
        entry(Array(message.utf8), [("_SYSTEMD_UNIT", unit), ("PRIORITY", String(priority))])
    }

    /// Writes entries to the writer at once (one burst).
    func append(_ entries: [[UInt8]]) {
        input.fileHandleForWriting.write(Data(entries.joined()))
    }

    /// Ends the input and waits (bounded) for the writer to finish its file.
    func stop() {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
