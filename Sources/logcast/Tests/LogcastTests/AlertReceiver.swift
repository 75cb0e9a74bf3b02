import Foundation
import Glibc
import XCTest

/// A webhook receiver nobody here wrote: Python's `http.server` (standard library), in a
/// script the test starts. It records every POST as a JSON line (its Idempotency-Key, the
/// mode it was in, whether the key was already taken, the parsed body) and answers as its
/// control file says:
///
/// - `ok`: takes the batch (its key is remembered: a later POST with it is a duplicate), 200.
/// - `fail`: 503, the batch not taken.
/// - `reject`: 400, the batch not taken.
/// - `stall`: takes the batch, then never answers: it holds the connection until the client
///   hangs up (recorded as a `hangup` line), as a receiver whose answer was lost.
final class AlertReceiver: @unchecked Sendable {
    static let script = #"""
        import http.server, json, select, socket, sys, threading, time

        control, records, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
        lock = threading.Lock()
        taken = set()

        def mode():
            try:
                with open(control) as f:
                    return f.read().strip() or "ok"
            except FileNotFoundError:
                return "ok"

        def record(entry):
            with open(records, "a") as f:
                f.write(json.dumps(entry) + "\n")

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                key = self.headers.get("Idempotency-Key", "")
                m = mode()
                with lock:
                    duplicate = key in taken
                    if m in ("ok", "stall"):
                        taken.add(key)
                    record({"kind": "post", "key": key, "mode": m, "duplicate": duplicate,
                            "type": self.headers.get("Content-Type"), "body": json.loads(body)})
                if m == "stall":
                    # Never answer; wait (bounded) for the client to hang up.
                    deadline = time.time() + 120
                    while time.time() < deadline:
                        readable, _, _ = select.select([self.connection], [], [], 0.05)
                        if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                            break
                    with lock:
                        record({"kind": "hangup", "key": key})
                    self.close_connection = True
                    return
                status = {"ok": 200, "fail": 503, "reject": 400}.get(m, 500)
                reply = b'{"ok":true}' if status == 200 else b'{"error":"as told"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        print("listening", server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// One recorded POST.
    struct Post {
        let key: String
        let mode: String
        let duplicate: Bool
        let contentType: String?
        let alert: String
        /// Each event's `file`, `line` and `time`.
        let events: [[String: String]]
    }

    let process = Process()
    let controlPath: String
    let recordsPath: String
    let outPath: String
    private(set) var port = 0

    /// Starts the receiver in `mode`, its files in `dir`, on `port` (0: any free one), and
    /// waits for its port. Records append to what an earlier receiver in `dir` recorded.
    init(dir: String, mode: String = "ok", port: Int = 0) throws {
        controlPath = dir + "/receiver.mode"
        recordsPath = dir + "/receiver.jsonl"
        outPath = dir + "/receiver.out"
        let scriptPath = dir + "/receiver.py"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        if !FileManager.default.fileExists(atPath: recordsPath) { _ = FileManager.default.createFile(atPath: recordsPath, contents: nil) }
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        set(mode)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [scriptPath, controlPath, recordsPath, String(port)]
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: dir + "/receiver.err")
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let out = readFileText(outPath)
            if let line = out.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }), let p = Int(line.dropFirst(10)) {
                self.port = p
                return
            }
            if !process.isRunning { throw HarnessError.exited("the receiver exited") }
            usleep(10_000)
        }
        throw HarnessError.timedOut("the receiver did not start")
    }

    var url: String { "http://127.0.0.1:\(port)/hook" }

    /// Switches how the next POSTs are answered (written whole, then renamed: the receiver
    /// never reads half a word).
    func set(_ mode: String) {
        let temporary = controlPath + ".new"
        try? mode.write(toFile: temporary, atomically: false, encoding: .utf8)
        rename(temporary, controlPath)
    }

    /// Every line recorded so far (a line being written is left for the next read).
    private func entries() -> [[String: Any]] {
        let text = readFileText(recordsPath)
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// Every POST received, in the order received.
    var posts: [Post] {
        entries().filter { $0["kind"] as? String == "post" }.map { entry in
            let body = entry["body"] as? [String: Any] ?? [:]
            let events = (body["events"] as? [[String: Any]] ?? []).map { $0.compactMapValues { $0 as? String } }
            return Post(key: entry["key"] as? String ?? "", mode: entry["mode"] as? String ?? "",
                        duplicate: entry["duplicate"] as? Bool ?? false, contentType: entry["type"] as? String,
                        alert: body["alert"] as? String ?? "", events: events)
        }
    }

    /// Keys of stalled POSTs whose client hung up.
    var hangups: [String] { entries().filter { $0["kind"] as? String == "hangup" }.compactMap { $0["key"] as? String } }

    /// The events the receiver took, deduplicated by key: each taken POST's events, once.
    var takenEvents: [[String: String]] {
        posts.filter { ($0.mode == "ok" || $0.mode == "stall") && !$0.duplicate }.flatMap { $0.events }
    }

    /// Waits (bounded) until `condition` holds for the receiver; whether it did.
    func wait(timeout: Double = 60, until condition: (AlertReceiver) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(self) { return true }
            usleep(20_000)
        }
        return condition(self)
    }


    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
