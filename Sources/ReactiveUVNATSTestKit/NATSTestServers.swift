import Foundation
import Glibc

// Real nats-server processes for tests: loopback only, free ports found by binding port 0
// first (nats-server cannot take port 0 for cluster routes), store directories in a fresh
// temporary directory, every process stopped by its pid in `stopAll()` (a test's tearDown).
// The root package's ReactiveUVNATS tests and logcast's tests both start their servers here.

/// Why test servers could not be had.
public enum NATSTestServerError: Error, CustomStringConvertible {
    /// No `nats-server` binary on the PATH or in /usr/sbin, /usr/bin, /usr/local/bin
    /// (`scripts/ensure-deps.sh` installs Debian's).
    case notInstalled
    /// The server did not log "Server is ready" within 30 s; the end of its log.
    case notReady(name: String, log: String)

    /// What went wrong, with the server's log when it has one.
    public var description: String {
        switch self {
        case .notInstalled: return "nats-server is not installed (scripts/ensure-deps.sh installs it)"
        case .notReady(let name, let log): return "nats-server \(name) did not become ready: \(log)"
        }
    }
}

/// The nats-server binary (Debian installs it in /usr/sbin, often not on a user's PATH).
public func natsServerPath() -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/usr/local/bin"] {
        let candidate = dir + "/nats-server"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picked it for a bind to port 0).
public func freeLoopbackPort() -> Int {
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
public final class NATSServerProcess {
    /// Its server name (`n1`, `n2`, …), also in its config and log file names.
    public let name: String
    /// Its client port on 127.0.0.1.
    public let port: Int
    /// Its cluster (route) port, for a server of a cluster.
    public let clusterPort: Int?
    /// Its config file.
    public let configPath: String
    /// Its log file (every start appends to it).
    public let logPath: String
    /// The process of its last start.
    public private(set) var process: Process?
    /// How many times this server was started (log lines are counted from the last start).
    private var logOffset = 0

    /// Writes the server's config file (the process starts with ``start(waitReady:)``).
    ///
    /// - Parameters:
    ///   - name: the server's name.
    ///   - directory: where its config, log and JetStream store go.
    ///   - port: its client port.
    ///   - clusterPort: its route port, for a cluster; `nil` for a lone server.
    ///   - routes: the other servers' route ports.
    ///   - extraConfig: more nats-server configuration, appended as is.
    public init(name: String, directory: String, port: Int, clusterPort: Int?, routes: [Int], extraConfig: String = "") throws {
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

    /// Its client URL.
    public var url: String { "nats://127.0.0.1:\(port)" }
    /// The pid of its last start, if started.
    public var pid: Int32? { process.map { $0.processIdentifier } }
    /// Whether the process of its last start is still running.
    public var isRunning: Bool { process?.isRunning ?? false }

    /// Starts the server; `waitReady` waits (30 s at most) for its "Server is ready" log line.
    ///
    /// - Throws: ``NATSTestServerError`` when nats-server is not installed or did not
    ///   become ready.
    public func start(waitReady: Bool = true) throws {
        guard let binary = natsServerPath() else { throw NATSTestServerError.notInstalled }
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
        if waitReady { try waitUntilReady() }
    }

    /// Waits (30 s at most) for the "Server is ready" log line of the last start.
    ///
    /// - Throws: ``NATSTestServerError/notReady(name:log:)`` when it did not come.
    public func waitUntilReady() throws {
        if !waitForLog("Server is ready", timeout: 30) {
            throw NATSTestServerError.notReady(name: name, log: logTail())
        }
    }

    /// Whether the log since the last start contains `text`, polling up to `timeout` seconds.
    public func waitForLog(_ text: String, timeout: Double) -> Bool {
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
    public func logSinceStart() -> String {
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

    /// The last 2,000 characters of ``logSinceStart()``.
    public func logTail() -> String { String(logSinceStart().suffix(2000)) }

    /// Sends `signal` to the process and waits for it to exit.
    public func stop(_ signal: Int32 = SIGTERM) {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }
}

/// A set of servers made for one test: one server, or a cluster of routes between them.
public final class NATSTestServers {
    /// The temporary directory holding every server's config, log and store.
    public let directory: String
    /// The servers, `n1` first.
    public private(set) var servers: [NATSServerProcess] = []

    /// `count` servers; more than one form a cluster (each routes to the others).
    ///
    /// - Parameters:
    ///   - count: how many servers.
    ///   - extraConfig: more nats-server configuration for each (appended as is).
    public init(count: Int, extraConfig: String = "") throws {
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

    /// Starts every server and waits (30 s at most each) until each is ready.
    ///
    /// - Throws: ``NATSTestServerError`` when nats-server is not installed or a server did
    ///   not become ready.
    public func startAll() throws {
        for server in servers { try server.start(waitReady: false) }
        for server in servers { try server.waitUntilReady() }
    }

    /// Every server's client URL.
    public var urls: [String] { servers.map(\.url) }

    /// The server called `name` (`n1`, …), if any.
    public func server(named name: String) -> NATSServerProcess? { servers.first { $0.name == name } }

    /// Stops every process still running (SIGKILL: tests keep no state worth a clean
    /// shutdown) and removes the directory.
    public func stopAll() {
        for server in servers { server.stop(SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
