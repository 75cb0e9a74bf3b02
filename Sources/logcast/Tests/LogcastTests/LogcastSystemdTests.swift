import Foundation
import Glibc
import XCTest

/// logcast under systemd (issue 31, section 3): `Type=notify` readiness, status, watchdog
/// and stop through a `NOTIFY_SOCKET` the test binds, and socket activation through
/// systemd's own `systemd-socket-activate`. The real daemon, real sockets, real clients.
final class LogcastSystemdTests: LogcastProcessTestCase {
    var notify: NotifySocket?

    override func tearDown() {
        super.tearDown()  // the processes first: they may be sending
        notify?.stop()
        notify = nil
    }

    /// `env` with the systemd variables the test runner may itself have cleared, then `set`.
    func environment(_ set: [String]) -> [String] {
        ["/usr/bin/env", "-u", "NOTIFY_SOCKET", "-u", "WATCHDOG_USEC", "-u", "WATCHDOG_PID",
         "-u", "LISTEN_FDS", "-u", "LISTEN_PID", "-u", "LISTEN_FDNAMES"] + set
    }

    /// systemd's socket activator, or nil (the test is skipped, saying why).
    func socketActivator() throws -> String {
        for path in ["/usr/bin/systemd-socket-activate", "/bin/systemd-socket-activate"] where access(path, X_OK) == 0 {
            return path
        }
        throw XCTSkip("systemd-socket-activate is not installed (Debian package systemd; scripts/ensure-deps.sh installs it)")
    }

    /// A port nothing listens on now (bound to 0 and released): systemd-socket-activate
    /// takes no port 0, so the test picks one; a collision is retried by the caller.
    func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = bind(fd, $0, length); _ = getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Starts `systemd-socket-activate LISTEN… [--datagram] --fdname=NAMES logcast arguments`
    /// and waits until the activator listens on every port (it execs logcast at the first
    /// connection or datagram). Retries with other ports if one was taken meanwhile.
    func activate(names: [String], datagram: Bool = false, env: [String] = [], _ arguments: [String]) throws -> (LogcastProcess, [Int]) {
        let activator = try socketActivator()
        for _ in 0..<3 {
            let ports = names.map { _ in freePort() }
            // The activator passes on only TERM, PATH, USER, HOME and what -E names.
            let wrapper = environment([]) + [activator] + (datagram ? ["--datagram"] : []) + env.flatMap { ["-E", $0] }
                + ports.flatMap { ["-l", "127.0.0.1:\($0)"] } + ["--fdname=" + names.joined(separator: ":")]
            let p = try LogcastProcess(arguments, wrapper: wrapper)
            processes.append(p)
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline && p.process.isRunning
                && !ports.allSatisfy({ p.errors.contains("Listening on 127.0.0.1:\($0) as") }) { usleep(10_000) }
            if ports.allSatisfy({ p.errors.contains("Listening on 127.0.0.1:\($0) as") }) { return (p, ports) }
            p.stop()
        }
        throw HarnessError.timedOut("systemd-socket-activate did not listen")
    }

    /// `GET path` over a plain socket with `Connection: close` (bounded): the status and
    /// the body's lines. (Not curl through Foundation's Process here: its exit went
    /// unnoticed after a socket-activated child, and the test hung in waitUntilExit.)
    func get(_ port: Int, _ path: String) throws -> (status: Int, body: String) {
        let client = try LineClient(port: port)
        client.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let lines = client.readLines(timeout: 60) { _ in false }.map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 }
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? -1
        let body = lines.firstIndex(of: "").map { lines[($0 + 1)...].joined(separator: "\n") } ?? ""
        return (status, body)
    }

    /// The `STATUS=` values in the messages so far.
    func statuses(_ notify: NotifySocket) -> [String] {
        notify.messages.flatMap { NotifySocket.lines($0.text) }.filter { $0.hasPrefix("STATUS=") }.map { String($0.dropFirst(7)) }
    }

    /// The port of "`label` HOST:PORT" in logcast's output, if printed.
    func printedPort(_ p: LogcastProcess, after label: String) -> Int? {
        guard let range = p.output.range(of: label + #" [^ ]+:(\d+);"#, options: .regularExpression) else { return nil }
        return Int(p.output[range].split(separator: ":").last!.dropLast())
    }

    /// CSystemd.h copies five prototypes from libsystemd's sd-daemon.h (it says why): a C
    /// compiler given both headers refuses any that drifted (conflicting types).
    func testTheCopiedPrototypesAreLibsystemdsOwn() throws {
        let header = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../CSystemd/CSystemd.h").standardized.path
        guard access("/usr/include/systemd/sd-daemon.h", R_OK) == 0 else {
            throw XCTSkip("libsystemd-dev is not installed (scripts/ensure-deps.sh installs it)")
        }
        let source = dir + "/check.c"
        try "#include <systemd/sd-daemon.h>\n#include \"\(header)\"\nint main(void) { return sd_notify(0, \"\") + SD_LISTEN_FDS_START; }\n"
            .write(toFile: source, atomically: true, encoding: .utf8)
        let compiler = access("/usr/bin/cc", X_OK) == 0 ? "/usr/bin/cc" : "/usr/bin/clang"
        let command = "\(compiler) -fsyntax-only -Wall -Werror \(source) > \(dir)/cc.out 2>&1"
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        defer { argv.forEach { free($0) } }
        XCTAssertEqual(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ), 0)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        let output = readFileText(dir + "/cc.out")  // not String(contentsOfFile:): LeakSanitizer (LogcastHarness)
        XCTAssertEqual(status, 0, "CSystemd.h and sd-daemon.h disagree: \(output)")
    }

    func testReadyOnlyOnceEveryListenerAnswersThenStatusUpdatesAndStoppingAtSIGTERM() throws {
        let notify = try NotifySocket(directory: dir)
        self.notify = notify
        let log = dir + "/app.log"
        appendLines(log, ["before"])
        let missing = dir + "/later.log"
        let p = try LogcastProcess(
            [log, missing, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
            wrapper: environment(["NOTIFY_SOCKET=" + notify.path]))
        processes.append(p)

        XCTAssertTrue(notify.wait { $0.contains { NotifySocket.lines($0).contains("READY=1") } }, "READY=1: \(p.errors)")
        // By READY=1 both listeners had printed their ports and answer at once.
        let port = try XCTUnwrap(printedPort(p, after: "listening on"), "listening before READY=1: \(p.output)")
        let httpPort = try XCTUnwrap(printedPort(p, after: "http on"), "http listening before READY=1: \(p.output)")
        let client = try LineClient(port: port)
        XCTAssertTrue(client.command("STATS", reply: "STATS").last?.contains("clients=1") ?? false, "the client port answers")
        let ready = try get(httpPort, "/readyz")
        XCTAssertEqual(ready.status, 200, "the http port answers, ready: \(ready.body)")

        let first = notify.messages[0].text
        XCTAssertTrue(NotifySocket.lines(first).contains("READY=1"), "nothing before READY=1 (no watchdog asked for): \(notify.messages)")
        let status = try XCTUnwrap(NotifySocket.lines(first).first { $0.hasPrefix("STATUS=") }, "READY=1 comes with a status")
        XCTAssertTrue(status.contains("listening on 127.0.0.1:\(port)"), status)
        XCTAssertTrue(status.contains("2 files followed"), status)
        XCTAssertTrue(status.contains("0 clients"), status)

        // The client connected: the status line says so (within a second or so).
        XCTAssertTrue(notify.wait { _ in self.statuses(notify).contains { $0.contains("1 client") } }, "status update: \(statuses(notify))")
        // A file appearing is no news until the line changes; the line is one line.
        appendLines(missing, ["now here"])
        XCTAssertEqual(client.readLines(timeout: 60) { $0.contains { $0.hasSuffix("now here") } }.last, "\(missing): now here")

        p.signal(SIGTERM)
        XCTAssertTrue(notify.wait { $0.contains { NotifySocket.lines($0).contains("STOPPING=1") } }, "STOPPING=1 at SIGTERM")
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
        let all = notify.messages.map(\.text)
        XCTAssertEqual(notify.count("READY=1"), 1, "READY=1 once: \(all)")
        XCTAssertEqual(notify.count("WATCHDOG=1"), 0, "no WATCHDOG_USEC, no pings: \(all)")
        let readyAt = all.firstIndex { NotifySocket.lines($0).contains("READY=1") }!
        let stoppingAt = all.firstIndex { NotifySocket.lines($0).contains("STOPPING=1") }!
        XCTAssertLessThan(readyAt, stoppingAt)
        XCTAssertEqual(stoppingAt, all.count - 1, "nothing after STOPPING=1: \(all)")
        XCTAssertTrue(NotifySocket.lines(all[stoppingAt]).contains { $0.hasPrefix("STATUS=stopping: draining") }, all[stoppingAt])
        // At most one status a second: never more status messages than seconds it ran, plus two.
        let seconds = notify.messages.last!.at.timeIntervalSince(notify.messages.first!.at)
        XCTAssertLessThanOrEqual(Double(statuses(notify).count), seconds + 2, "statuses: \(statuses(notify))")
    }

    func testWatchdogPingsRepeatAtHalfTheTimeoutAndNeverWhileTheProcessIsStopped() throws {
        let notify = try NotifySocket(directory: dir)
        self.notify = notify
        let log = dir + "/app.log"
        appendLines(log, ["before"])
        // WatchdogSec=0.6s: a ping every 0.3 s.
        let launched = Date()
        let p = try LogcastProcess(
            [log, "--listen", "127.0.0.1:0"],
            wrapper: environment(["NOTIFY_SOCKET=" + notify.path, "WATCHDOG_USEC=600000"]))
        processes.append(p)
        XCTAssertTrue(notify.wait { _ in notify.count("WATCHDOG=1") >= 10 }, "ten pings: \(notify.messages.map(\.text)) \(p.errors)")
        // Ten pings a timer of 0.3 s apart cannot come sooner than 3 s after launch; a
        // generous bound (timers may fire late, never early) that a ping per event-loop
        // turn, or at the full timeout's pace reversed, would break.
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(launched), 2.7, "pings no faster than every WATCHDOG_USEC/2")
        XCTAssertEqual(notify.count("READY=1"), 1)

        // Stopped, the loop cannot ping: systemd would restart it after WatchdogSec.
        p.signal(SIGSTOP)
        XCTAssertTrue(waitForState(p, "T"), "stopped")
        // Every ping sent before the stop is counted once our own marker, sent after it,
        // has been read (datagrams arrive in order).
        XCTAssertTrue(notify.mark("MARK=stopped"), "the reader took the marker")
        let beforeStop = notify.count("WATCHDOG=1")
        // What is checked here is an absence: a window of more than six intervals in which
        // a running loop would have pinged (a stopped one cannot, so it cannot flake), then
        // a second marker so a ping sent meanwhile would be counted.
        usleep(2_000_000)
        XCTAssertTrue(waitForState(p, "T", timeout: 1), "still stopped")
        XCTAssertTrue(notify.mark("MARK=still-stopped"), "the reader took the second marker")
        XCTAssertEqual(notify.count("WATCHDOG=1"), beforeStop, "no ping while stopped")
        // The positive marker: once continued, it pings again.
        p.signal(SIGCONT)
        XCTAssertTrue(notify.wait { _ in notify.count("WATCHDOG=1") >= beforeStop + 2 }, "pings resume after SIGCONT")

        p.signal(SIGTERM)
        XCTAssertTrue(notify.wait { $0.contains { NotifySocket.lines($0).contains("STOPPING=1") } }, "STOPPING=1")
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }

    /// Waits until the process's state (`/proc/PID/stat`, third field) is `state`.
    func waitForState(_ p: LogcastProcess, _ state: String, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            let stat = (try? String(contentsOfFile: "/proc/\(p.process.processIdentifier)/stat", encoding: .utf8)) ?? ""
            // "pid (comm) S ...": the state follows the last ')'.
            if let close = stat.lastIndex(of: ")"), stat[stat.index(after: close)...].split(separator: " ").first.map(String.init) == state {
                return true
            }
            usleep(10_000)
        } while Date() < deadline
        return false
    }

    func testSocketActivatedListenServesClientsOnThePassedSocketAndIsReady() throws {
        let notify = try NotifySocket(directory: dir)
        self.notify = notify
        let log = dir + "/app.log"
        appendLines(log, ["before"])
        // --listen names a port the test holds: binding it would fail, so a client that is
        // served was served on the passed socket.
        let held = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(held) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = bind(held, $0, length); _ = getsockname(held, $0, &length) }
        }
        let heldPort = Int(UInt16(bigEndian: address.sin_port))
        let (p, ports) = try activate(
            names: ["listen"], env: ["NOTIFY_SOCKET=" + notify.path], [log, "--listen", "127.0.0.1:\(heldPort)"])

        // The first connection is what starts logcast; it is served once logcast runs.
        let client = try LineClient(port: ports[0])
        let stats = client.command("STATS", reply: "STATS")
        XCTAssertTrue(stats.last?.contains("clients=1") ?? false, "served through the passed socket: \(stats) \(p.errors)")
        XCTAssertTrue(p.output.contains("listening on 127.0.0.1:\(ports[0]);"), p.output)
        XCTAssertTrue(notify.wait { $0.contains { NotifySocket.lines($0).contains("READY=1") } }, "READY=1")
        XCTAssertTrue(statuses(notify).first?.contains("listening on 127.0.0.1:\(ports[0])") ?? false, "\(statuses(notify))")
        appendLines(log, ["after activation"])
        XCTAssertEqual(client.readLines { $0.contains { $0.hasSuffix("after activation") } }.last, "\(log): after activation")
        // A second client, on the same passed socket.
        let second = try LineClient(port: ports[0])
        XCTAssertTrue(second.command("STATS", reply: "STATS").last?.contains("clients=2") ?? false)

        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
        XCTAssertTrue(notify.wait { $0.contains { NotifySocket.lines($0).contains("STOPPING=1") } })
    }

    func testSocketActivatedHTTPServesWithoutTheHTTPOptionNextToAPassedListenSocket() throws {
        let log = dir + "/app.log"
        appendLines(log, ["before"])
        let (p, ports) = try activate(names: ["listen", "http"], [log])
        // curl's connection to the http socket starts logcast.
        let ready = try get(ports[1], "/readyz")
        XCTAssertEqual(ready.status, 200, "\(ready.body) \(p.errors)")
        XCTAssertTrue(ready.body.contains(#""status":"ready""#), ready.body)
        XCTAssertTrue(p.output.contains("http on 127.0.0.1:\(ports[1]);"), p.output)
        let client = try LineClient(port: ports[0])
        XCTAssertTrue(client.command("STATS", reply: "STATS").last?.contains("clients=1") ?? false)
        let metrics = try get(ports[1], "/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.body.contains("logcast_clients 1"), metrics.body)
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }

    func testSocketActivatedSyslogUDPReadsTheDatagramThatStartedIt() throws {
        let (p, ports) = try activate(names: ["syslog-udp"], datagram: true, ["--listen", "127.0.0.1:0"])
        // The datagram that starts logcast waits in the passed socket and is read from it.
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = in_port_t(UInt16(ports[0]).bigEndian)
        to.sin_addr.s_addr = inet_addr("127.0.0.1")
        let message = Array("<13>1 2026-11-28T01:00:00Z host app - - - hello from activation".utf8)
        let sent = withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(sender, message, message.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        XCTAssertEqual(sent, message.count)
        let port = try p.waitUntilListening()
        XCTAssertFalse(p.output.contains("demo"), "a syslog socket is a source: no demo log: \(p.output)")
        let client = try LineClient(port: port)
        var stats: [String] = []
        let deadline = Date().addingTimeInterval(60)
        repeat {
            stats = client.command("STATS", reply: "STATS")
            if stats.last?.contains("syslog_messages=1") ?? false { break }
            usleep(50_000)
        } while Date() < deadline
        XCTAssertTrue(stats.last?.contains("syslog_messages=1") ?? false, "\(stats) \(p.errors)")
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }

    func testSocketActivationRefusesASocketOfTheWrongKindOrNameWithAClearError() throws {
        // A UDP socket named listen: started by a datagram, refused with exit 1.
        let (udp, udpPorts) = try activate(names: ["listen"], datagram: true, ["--listen", "127.0.0.1:0"])
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = in_port_t(UInt16(udpPorts[0]).bigEndian)
        to.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender, "x", 1, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(udp.waitForExit(timeout: 60), 1, udp.errors)
        XCTAssertTrue(udp.errors.contains("logcast: error: socket activation: fd 3 ('listen', for --listen) is not a listening TCP socket"), udp.errors)

        // Two sockets, one with a name that is no option.
        let (named, namedPorts) = try activate(names: ["listen", "metrics"], [])
        let client = try LineClient(port: namedPorts[0])
        XCTAssertEqual(named.waitForExit(timeout: 60), 1, named.errors)
        XCTAssertTrue(named.errors.contains("logcast: error: socket activation: fd 4 is named 'metrics'; name each socket with FileDescriptorName= listen, http, syslog-udp, syslog-tcp"), named.errors)
        _ = client
    }
}
