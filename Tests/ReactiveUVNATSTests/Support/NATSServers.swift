import Foundation
import Glibc
import XCTest

// Real nats-server processes for the tests: loopback only, free ports found by binding
// port 0 first (nats-server cannot take port 0 for cluster routes), store directories in a
// fresh temporary directory, every process stopped by its pid in `stopAll()` (tearDown).

/// The nats-server binary (Debian installs it in /usr/sbin, often not on a user's PATH).
func natsServerPath() -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/usr/local/bin"] {
        let candidate = dir + "/nats-server"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picked it for a bind to port 0).
func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    precondition(fd >= 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    precondition(bound)
    return Int(UInt16(bigEndian: address.sin_port))
}

/// One nats-server process with its own config file, port and store directory.
final class NATSServerProcess {
    let name: String
    let port: Int
    let clusterPort: Int?
    let configPath: String
    let logPath: String
    private(set) var process: Process?
    /// How many times this server was started (log lines are counted from the last start).
    private var logOffset = 0

    init(name: String, directory: String, port: Int, clusterPort: Int?, routes: [Int], extraConfig: String = "") throws {
        self.name = name
        self.port = port
        self.clusterPort = clusterPort
        configPath = directory + "/\(name).conf"
        logPath = directory + "/\(name).log"
        var config = """
        server_name: \(name)
        listen: 127.0.0.1:\(port)
        jetstream { store_dir: "\(directory)/\(name)-store" }
        \(extraConfig)

        """
        if let clusterPort {
            let routeList = routes.map { "nats-route://127.0.0.1:\($0)" }.joined(separator: ", ")
            config += "cluster { name: rtest, listen: 127.0.0.1:\(clusterPort), routes: [\(routeList)] }\n"
        }
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    var url: String { "nats://127.0.0.1:\(port)" }
    var pid: Int32? { process.map { $0.processIdentifier } }
    var isRunning: Bool { process?.isRunning ?? false }

    /// Starts the server; `waitReady` waits for its "Server is ready" log line.
    func start(waitReady: Bool = true) throws {
        guard let binary = natsServerPath() else { throw XCTSkip("nats-server is not installed (scripts/ensure-deps.sh installs it)") }
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        logOffset = Int(log.offsetInFile)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["-c", configPath]
        p.standardOutput = log
        p.standardError = log
        try p.run()
        try? log.close()
        process = p
        if waitReady {
            XCTAssertTrue(waitForLog("Server is ready", timeout: 30), "\(name) did not become ready: \(logTail())")
        }
    }

    /// Whether the log since the last start contains `text`, polling up to `timeout` seconds.
    func waitForLog(_ text: String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if logSinceStart().contains(text) { return true }
            if let process, !process.isRunning { return false }
            usleep(20_000)
        }
        return false
    }

    /// The log from the last start on, read with plain POSIX calls: `waitForLog` polls this
    /// every 20 ms, and `FileManager.contents(atPath:)` (swift-foundation's
    /// `readBytesFromFile`) leaks its read buffer on Linux, which LeakSanitizer reports in
    /// `make sanitize`.
    func logSinceStart() -> String {
        let fd = open(logPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = off_t(logOffset)
        while true {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes.append(contentsOf: chunk[..<n])
            offset += off_t(n)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func logTail() -> String { String(logSinceStart().suffix(2000)) }

    /// Sends `signal` to the process and waits for it to exit.
    func stop(_ signal: Int32 = SIGTERM) {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }
}

/// A set of servers made for one test: one server, or a cluster of routes between them.
final class NATSTestServers {
    let directory: String
    private(set) var servers: [NATSServerProcess] = []

    /// `count` servers; more than one form a cluster (each routes to the others).
    init(count: Int, extraConfig: String = "") throws {
        var template = Array("/tmp/ruv-nats-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw NSError(domain: "mkdtemp", code: Int(errno))
        }
        directory = String(cString: made)
        let ports = (0..<count).map { _ in freeLoopbackPort() }
        let clusterPorts = count > 1 ? (0..<count).map { _ in freeLoopbackPort() } : []
        for i in 0..<count {
            let routes = count > 1 ? clusterPorts.enumerated().filter { $0.offset != i }.map(\.element) : []
            servers.append(try NATSServerProcess(name: "n\(i + 1)", directory: directory, port: ports[i],
                                                 clusterPort: count > 1 ? clusterPorts[i] : nil, routes: routes,
                                                 extraConfig: extraConfig))
        }
    }

    /// Starts every server and waits until each is ready.
    func startAll() throws {
        for server in servers { try server.start(waitReady: false) }
        for server in servers {
            XCTAssertTrue(server.waitForLog("Server is ready", timeout: 30), "\(server.name) not ready: \(server.logTail())")
        }
    }

    var urls: [String] { servers.map(\.url) }

    func server(named name: String) -> NATSServerProcess? { servers.first { $0.name == name } }

    /// Stops every process still running (SIGKILL: tests keep no state worth a clean
    /// shutdown) and removes the directory.
    func stopAll() {
        for server in servers { server.stop(SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
