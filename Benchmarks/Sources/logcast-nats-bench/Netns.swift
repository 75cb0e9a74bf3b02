// `logcast-nats-bench --netns`: the hosts, made of Linux network namespaces.
import Foundation
import Glibc

/// Four hosts made of network namespaces for the `--netns` rows: `lcnb-n1`, `lcnb-n2`,
/// `lcnb-n3` (the servers) and `lcnb-edge` (logcast), each joined by a veth pair
/// (`lcnb-<host>` on the bridge, `eth0` inside, 10.231.79.1–4/24) to the bridge `lcnb-br`
/// (10.231.79.254/24 in the bench's own namespace, from where the bench's probe and order
/// check read the stream). Built like the fault tests' `NetnsCluster`
/// (Sources/logcast/Tests/LogcastTests/NetnsCluster.swift), with another prefix and
/// subnet (theirs: `lcnf-`, 10.231.77.0/24) so that a bench and a test never remove each
/// other's namespaces.
///
/// Delay: this machine's kernel has no `netem` qdisc, so `netdelay`
/// (Sources/logcast/Tests/netdelay/netdelay.c, compiled here with `cc -O2`) holds every
/// packet in and out of each host for 500 us through iptables' NFQUEUE target (queue 0 in
/// each namespace, `mangle` table, loopback excluded): 1 ms one way between two hosts,
/// 2 ms a round trip; 0.5 ms one way between the bench's namespace (no delay of its own)
/// and a host. ``checkDelay(to:port:)`` measures it before each row's clock starts.
///
/// Everything it makes is named with the `lcnb-` prefix: ``removeLeftovers()`` removes what
/// a crashed or interrupted earlier run left, ``tearDown()`` removes processes,
/// namespaces, links and the bridge at the end (also after a failed row, and from the
/// SIGINT/SIGTERM handler through ``removeLeftovers()``).
final class BenchNetns {
    static let prefix = "lcnb-"
    static let bridge = "lcnb-br"
    static let subnet = "10.231.79"
    /// The hosts, in address order (.1, .2, …).
    static let hostNames = ["n1", "n2", "n3", "edge"]
    /// Each host's own delay each way, in microseconds: 500 (1 ms one way between two
    /// hosts); `--link-delay-us N` sets another, 0 for no `netdelay` at all (a control: what
    /// the namespaces, veths and bridge cost without the delay).
    let delayMicroseconds: Int
    static let ip = ([String])(["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]).first { access($0, X_OK) == 0 } ?? "ip"
    static let iptables = ([String])(["/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables"]).first { access($0, X_OK) == 0 } ?? "iptables"

    /// Where `netdelay` and its logs live (removed by ``tearDown()``).
    let workDirectory: String
    /// One `netdelay` per host.
    private var delays: [Process] = []

    /// Why the namespaces cannot be made here (not root, no `ip` or `iptables`, `ip netns
    /// add` refused), or nil when they can: a probe namespace is made and removed.
    static func unavailableReason() -> String? {
        if getuid() != 0 { return "network namespaces need root (ip netns add); run the bench as root" }
        if access(ip, X_OK) != 0 { return "no ip(8) (iproute2) installed" }
        if access(iptables, X_OK) != 0 { return "no iptables installed (the delay's NFQUEUE rules need it)" }
        let probe = prefix + "probe"
        _ = run([ip, "netns", "del", probe])
        let (status, output) = run([ip, "netns", "add", probe])
        if status != 0 { return "ip netns add failed: \(output.trimmingCharacters(in: .whitespacesAndNewlines))" }
        _ = run([ip, "netns", "del", probe])
        return nil
    }

    /// Removes every `lcnb-` namespace (after SIGKILLing the processes in it) and every
    /// `lcnb-` link (veth ends, the bridge) that is left.
    static func removeLeftovers() {
        let (_, list) = run([ip, "netns", "list"])
        for line in list.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix(prefix) else { continue }
            let (_, pids) = run([ip, "netns", "pids", name])
            for pid in pids.split(separator: "\n").compactMap({ Int32(String($0).trimmingCharacters(in: .whitespaces)) }) {
                kill(pid, SIGCONT)
                kill(pid, SIGKILL)
            }
            _ = run([ip, "netns", "del", name])
        }
        let (_, links) = run([ip, "-o", "link", "show"])
        for line in links.split(separator: "\n") {
            let fields = line.split(separator: ":")
            guard fields.count > 1 else { continue }
            let name = String(fields[1]).trimmingCharacters(in: .whitespaces).split(separator: "@").first.map(String.init) ?? ""
            if name.hasPrefix(prefix) { _ = run([ip, "link", "del", name]) }
        }
    }

    /// Makes the bridge, the four hosts and their delay; on any failure removes what it
    /// made and throws.
    init(delayMicroseconds: Int = 500) throws {
        self.delayMicroseconds = delayMicroseconds
        BenchNetns.removeLeftovers()
        workDirectory = makeDirectory()
        registryLock.lock()
        netnsMade = true
        registryLock.unlock()
        do {
            try build()
        } catch {
            tearDown()
            throw error
        }
    }

    private func build() throws {
        let ip = BenchNetns.ip
        try check([ip, "link", "add", BenchNetns.bridge, "type", "bridge"])
        try check([ip, "addr", "add", "\(BenchNetns.subnet).254/24", "dev", BenchNetns.bridge])
        try check([ip, "link", "set", BenchNetns.bridge, "up"])
        for host in BenchNetns.hostNames {
            let ns = namespace(host)
            let outside = BenchNetns.prefix + host
            let inside = BenchNetns.prefix + host + "-i"
            try check([ip, "netns", "add", ns])
            try check([ip, "link", "add", outside, "type", "veth", "peer", "name", inside])
            try check([ip, "link", "set", inside, "netns", ns])
            try check([ip, "link", "set", outside, "master", BenchNetns.bridge])
            try check([ip, "link", "set", outside, "up"])
            try check([ip, "-n", ns, "link", "set", inside, "name", "eth0"])
            try check([ip, "-n", ns, "addr", "add", "\(address(host))/24", "dev", "eth0"])
            try check([ip, "-n", ns, "link", "set", "eth0", "up"])
            try check([ip, "-n", ns, "link", "set", "lo", "up"])
        }
        if delayMicroseconds == 0 { return }
        let source = root + "/Sources/logcast/Tests/netdelay/netdelay.c"
        let program = workDirectory + "/netdelay"
        let compiler = ([String])(["/usr/bin/cc", "/usr/bin/gcc", "/usr/bin/clang"]).first { access($0, X_OK) == 0 } ?? "cc"
        try check([compiler, "-O2", "-Wall", "-o", program, source])
        for (i, host) in BenchNetns.hostNames.enumerated() {
            let log = workDirectory + "/netdelay-\(host).log"
            // Seed: the host's number (no loss is asked for, so it draws nothing anyway).
            let p = try launch(BenchNetns.ip, ["netns", "exec", namespace(host), program, "0", "\(delayMicroseconds)", "0", "\(i + 1)"],
                               log: log)
            delays.append(p)
            guard waitForText(log, "bound", timeout: 10) else {
                throw NSError(domain: "netdelay in \(host) did not bind queue 0: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")", code: 6)
            }
            // After netdelay is bound (--queue-bypass lets packets through unheld while no
            // program is bound, so the order only matters for what is delayed from when).
            try check([ip, "netns", "exec", namespace(host), BenchNetns.iptables, "-t", "mangle", "-A", "OUTPUT", "!", "-o", "lo",
                       "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"])
            try check([ip, "netns", "exec", namespace(host), BenchNetns.iptables, "-t", "mangle", "-A", "INPUT", "!", "-i", "lo",
                       "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"])
        }
    }

    /// The namespace of `host`.
    func namespace(_ host: String) -> String { BenchNetns.prefix + host }

    /// The bridge address of `host`.
    func address(_ host: String) -> String {
        "\(BenchNetns.subnet).\((BenchNetns.hostNames.firstIndex(of: host) ?? 253) + 1)"
    }

    /// Measures the TCP connect time to `address:port` (a server listening in its host)
    /// from the bench's namespace (one host's delay: ~1 ms expected) and from the edge's
    /// (two hosts' delays: ~2 ms, the round trip of a 1 ms link), prints both, and throws
    /// when either is under 80% of what the delay must add: the rows would then not be
    /// what they claim to be.
    func checkDelay(to address: String, port: Int) throws {
        let fromRoot = medianConnectMilliseconds(host: address, port: port, count: 20)
        let (status, output) = BenchNetns.run([BenchNetns.ip, "netns", "exec", namespace("edge"), selfPath(),
                                               "--connect-time", address, "\(port)", "20"])
        let fromEdge = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        print(String(format: "  links: TCP connect to %@:%d from the bench's namespace %.2f ms, from the edge's host %.2f ms (median of 20; %d us each way in each host)",
                     address, port, fromRoot, fromEdge, delayMicroseconds))
        let oneHost = 2 * Double(delayMicroseconds) / 1000
        guard status == 0, fromRoot >= 0.8 * oneHost, fromEdge >= 0.8 * 2 * oneHost else {
            throw NSError(domain: "the links' delay is not there (bench → \(address) \(fromRoot) ms, edge → \(address) \(fromEdge) ms; \(output))", code: 7)
        }
    }

    /// The CPU time (user + system, seconds) the hosts' `netdelay`s have used so far, from
    /// /proc/PID/stat: they run on the same two cores as the servers and the edge, so a
    /// row's rate is read beside what the emulated links themselves cost.
    func delayCPUSeconds() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return delays.reduce(0) { total, p in
            guard let stat = try? String(contentsOfFile: "/proc/\(p.processIdentifier)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return total }
            // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / ticks
        }
    }

    /// Stops every `netdelay` and every process left in the namespaces, removes the
    /// namespaces, links, bridge and the work directory.
    func tearDown() {
        for p in delays { stop(p) }
        delays = []
        BenchNetns.removeLeftovers()
        _ = BenchNetns.run([BenchNetns.ip, "link", "del", BenchNetns.bridge])
        removeDirectory(workDirectory)
        registryLock.lock()
        netnsMade = false
        registryLock.unlock()
    }

    private func check(_ arguments: [String]) throws {
        let (status, output) = BenchNetns.run(arguments)
        if status != 0 { throw NSError(domain: "\(arguments.joined(separator: " ")): \(output)", code: 8) }
    }

    /// Runs a command to its end; its status, and its output and errors together.
    @discardableResult
    static func run(_ arguments: [String]) -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: arguments[0])
        p.arguments = Array(arguments.dropFirst())
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return (-1, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// This program's own path (run again inside the edge's namespace for `--connect-time`).
func selfPath() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    return n > 0 ? String(cString: buffer) : CommandLine.arguments[0]
}

/// The median time of `count` blocking TCP connects to `host:port`, in milliseconds (-1
/// when one fails). Each connection is closed at once.
func medianConnectMilliseconds(host: String, port: Int, count: Int) -> Double {
    var times: [Double] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port)).bigEndian
        a.sin_addr.s_addr = inet_addr(host)
        var t0 = timespec(), t1 = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t0)
        let ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        clock_gettime(CLOCK_MONOTONIC, &t1)
        close(fd)
        guard ok == 0 else { return -1 }
        times.append(Double(t1.tv_sec - t0.tv_sec) * 1000 + Double(t1.tv_nsec - t0.tv_nsec) / 1_000_000)
        usleep(2_000)
    }
    times.sort()
    return times[times.count / 2]
}
