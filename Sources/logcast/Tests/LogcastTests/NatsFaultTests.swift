import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// The edge and a 3-replica stream on separate hosts (network namespaces, ``NetnsCluster``)
/// under real faults, one at a time, while a writer appends numbered lines: after each
/// fault heals, every line written before the heal must be stored (the time it took is
/// printed); at the end every line is in the stream once and each file's lines are in
/// file order by stream sequence. A fault starts only once the stream's replicas have
/// caught up from the one before (``awaitReplicas``), and what the stream holds is read
/// from its leader (``StreamOrderReader/readFromLeader(_:timeout:)``).
///
/// The faults, one at a time, with the issue's durations: the stream leader cut off from
/// every host for 10 s; the edge cut off from every server for 10 s; the edge's link 200 ms
/// slower and losing 5% of packets each way for 20 s; the leader SIGSTOPped for 8 s; the
/// leader SIGKILLed and restarted after 5 s; the follower the edge is connected to
/// SIGKILLed (the stall is timed from the kill); every server SIGKILLed and restarted in
/// turn, 2 s down each; the edge SIGKILLed, its file renamed while it is down, restarted.
/// The writer runs at 5,000 lines/s (``linesPerSecond``: why not the issue's 20,000 by
/// default). Links: 1 ms between hosts (``NetnsCluster/delayMethod``, printed: netem, or
/// where the kernel has none, as on the test machine, `netdelay` through NFQUEUE). What
/// the test measures includes the reader's own recovery (it is a client of the cluster,
/// and a cut-off leader may be its server).
final class NatsFaultTests: XCTestCase {
    var net: NetnsCluster?
    var edge: LogcastProcess?
    /// Every edge process started (a killed one's log is printed with the others').
    var edges: [LogcastProcess] = []
    var reader: StreamOrderReader?
    var leaderProbe: LeaderProbe?
    var writer: SteadyLineWriter?
    var hub: LogcastProcess?
    var hubClient: HubSinceClient?
    var directory = ""
    var servers: [String: NamespacedProcess] = [:]
    let serverNames = ["n1", "n2", "n3"]
    /// The writer's rate: 5,000 lines/s, or `LOGCAST_FAULT_RATE` (the issue's 20,000, say).
    /// Why not 20,000 by default: the edge here is a debug build, and on the 2-core machine
    /// loaded by a release build beside it, it fell behind a 20,000 lines/s writer for good
    /// (3.5 M of ~4.4 M lines stored after 4 minutes, in 18 KB batches: each replicated round
    /// trip took ~10 ms of its starved CPU), before the first fault.
    static let linesPerSecond = ProcessInfo.processInfo.environment["LOGCAST_FAULT_RATE"].flatMap { Int($0) }.map { max(100, $0) } ?? 5_000

    override func setUpWithError() throws {
        guard let (nats, version) = faultTestNatsServer() else { throw XCTSkip("nats-server is not installed") }
        print("NatsFaultTests: \(version) (\(nats))\(version.contains("v2.9.") ? ": 2.9 can lose an acknowledged message under these faults (docs/design/nats-durability.md §7); scripts/ensure-deps.sh installs a current one" : "")")
        if let why = NetnsCluster.unavailableReason() { throw XCTSkip("namespaced fault tests skipped: \(why)") }
        directory = temporaryDirectory()
        let net = try NetnsCluster(hosts: serverNames + ["edge"])
        self.net = net
        for name in serverNames {
            let address = net.address(name)
            let routes = serverNames.filter { $0 != name }.map { "nats-route://\(net.address($0)):6222" }.joined(separator: ", ")
            let config = """
            server_name: \(name)
            listen: \(address):4222
            jetstream { store_dir: "\(directory)/\(name)-store" }
            cluster { name: lcnf, listen: \(address):6222, routes: [\(routes)] }

            """
            let path = directory + "/\(name).conf"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            // -D: a server's debug log is where it says it skipped a replicated message its
            // copy already went past (printed at the end).
            servers[name] = try net.start(name, [nats, "-c", path, "-D"], log: directory + "/\(name).log")
        }
        for (name, server) in servers {
            XCTAssertTrue(server.waitForLog("Server is ready", timeout: 30), "\(name) not ready: \(server.logText.suffix(1000))")
        }
        // The links' delay, seen from outside: a connect to a server crosses its link both
        // ways (0.5 ms each), so it cannot take less than 1 ms if the delay is there.
        let connect = net.connectTime(to: "n1", port: 4222)
        print("NatsFaultTests: a TCP connect to n1 takes \(connect.map { String(format: "%.2f ms", $0 * 1000) } ?? "(none connected)") (\(net.delayMethod))")
        if !net.delayMethod.hasPrefix("none") {
            XCTAssertGreaterThanOrEqual(connect ?? 0, 0.001, "the links' delay is not there: \(net.delayMethod)")
        }
    }

    override func tearDown() {
        writer?.stop()
        writer = nil
        hubClient?.stop()
        hubClient = nil
        hub?.stop()
        hub = nil
        leaderProbe?.stop()
        leaderProbe = nil
        reader?.close()
        reader = nil
        for e in edges { e.stop() }
        edges = []
        edge = nil
        servers = [:]
        net?.tearDown()
        net = nil
        if !directory.isEmpty { try? FileManager.default.removeItem(atPath: directory) }
        super.tearDown()
    }

    var urls: [String] { serverNames.map { "nats://\(net!.address($0)):4222" } }

    /// The edge as users run it: default batch size and window (one batch per file in
    /// flight). Why not small batches to have more of them: with one 16 KiB batch
    /// (180 lines) per replicated round trip, the edge fell behind the 5,000 lines/s writer
    /// for good on the loaded 2-core machine (batches are at most what one round trip lets
    /// pile up, and a round trip there is slow).
    func startEdge(_ log: String) throws -> LogcastProcess {
        let edge = try LogcastProcess([
            log, "--publish", urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.edge",
            "--state-dir", directory + "/state", "--listen", "127.0.0.1:0",
            "--stream-replicas", "3",
        ], wrapper: [NetnsCluster.ip, "netns", "exec", NetnsCluster.prefix + "edge"])
        edges.append(edge)
        _ = try edge.waitUntilListening()
        return edge
    }

    /// Runs the main loop (the reader reads meanwhile) for `seconds`.
    func pass(_ seconds: Double) { _ = EventLoop.main.run(until: { false }, timeout: seconds) }

    /// The stream leader's process.
    func leader() throws -> (String, NamespacedProcess) {
        let reader = try XCTUnwrap(reader)
        var name: String?
        let deadline = Date().addingTimeInterval(60)
        while name == nil && Date() < deadline {
            name = reader.leader()
            if name == nil { pass(0.5) }
        }
        let found = try XCTUnwrap(name, "no stream leader")
        return (found, try XCTUnwrap(servers[found], "leader \(found) is not one of ours"))
    }

    /// For a wait that failed, which side stopped: the reader's last stream sequence beside
    /// the stream's own (its info, answered by the leader). Issue 33's fault run stuck
    /// after the leader's SIGKILL with nothing to tell a reader that stopped reading from
    /// an edge that stopped storing.
    func whoStopped(_ reader: StreamOrderReader) -> String {
        guard let info = reader.streamInfo() else {
            return "the reader read up to #\(reader.lastSequence); the stream's info did not answer"
        }
        let verdict = if info.lastSequence > reader.lastSequence {
            "the stream holds messages the reader has not read: the READER stopped"
        } else if info.lastSequence == reader.lastSequence {
            "the reader read everything the stream holds: the EDGE stopped storing"
        } else {
            "the stream as its leader has it ends BELOW what the reader read: the replicas disagree (the reader's consumer is on another history)"
        }
        return "the reader read up to #\(reader.lastSequence); the stream's info (leader \(info.leader ?? "none")): last #\(info.lastSequence), \(info.messages) messages: \(verdict)"
    }

    func testFaultsOneAtATimeLoseRepeatAndReorderNoLine() throws {
        let net = try XCTUnwrap(net)
        let log = directory + "/app.log"
        appendText(log, "")
        edge = try startEdge(log)
        let reader = try StreamOrderReader(urls: urls, stream: "LOGS", timeout: 180)
        self.reader = reader
        let leaderProbe = LeaderProbe(urls: urls, stream: "LOGS")
        self.leaderProbe = leaderProbe
        // The hub: logcast --from in the test's namespace, and a client of it sending SINCE 1.
        // Checked by default: the two ways found for a hub to stop serving after a fault
        // with nothing in its log (as in one run of 2026-11-27) are handled — a consumer
        // silent after a fault, made again by the library's stall watch (merged after that
        // run; it remade the hub's consumer in a run here, and the hub logs it), and a
        // replay ended by the cluster's "temporarily unavailable" (NatsHub.isTransient).
        // docs/design/nats-durability.md §4 has the runs. LOGCAST_NATS_HUB_FAULTS=0 leaves
        // the hub out, to judge the edge and the stream alone (one consumer of the whole
        // stream fewer on a loaded machine).
        if ProcessInfo.processInfo.environment["LOGCAST_NATS_HUB_FAULTS"] != "0" {
            let hub = try LogcastProcess(["--from", urls.joined(separator: ","), "--stream", "LOGS", "--listen", "127.0.0.1:0"])
            self.hub = hub
            hubClient = try HubSinceClient(port: try hub.waitUntilListening())
            print("NatsFaultTests: a hub's SINCE 1 client is checked (LOGCAST_NATS_HUB_FAULTS=0 leaves it out)")
        } else {
            print("NatsFaultTests: the hub client is not checked (LOGCAST_NATS_HUB_FAULTS=0)")
        }
        let writer = SteadyLineWriter(path: log, rate: NatsFaultTests.linesPerSecond)
        self.writer = writer
        writer.start()
        print("NatsFaultTests: link delay: \(net.delayMethod)")

        /// Per fault: seconds from the heal until the stream stored the last line written
        /// before it (the stored time of the first message holding it,
        /// ``StreamOrderReader/storedTime(ofLine:through:)``), until the leader probe
        /// saw it there (``StreamOrderReader/lastStoredLine()``, on the test's busy loop),
        /// and until the reader's consumer had delivered every line before it.
        /// Also when the stream's leader first answered after the heal (``LeaderProbe``, on a
        /// loop of its own), and who it was: the cluster's own part of the recovery (an election, a leader's return),
        /// which the edge cannot shorten; what comes after it is the edge's and the
        /// replication's part (issue 33: a stall no longer than the election plus a second).
        var recoveries: [(name: String, stored: Double?, seen: Double?, read: Double, leaderAnswered: Double?, leader: String?)] = []
        // What the edges said, then the verdict, printed last whatever happens: the last
        // lines of a failing run are what CI's summary quotes, and after a failed wait the
        // test stops (every later wait would only run out its time: CI's failing run of
        // 2026-11-28 spent 50 minutes so).
        var verdict = "NatsFaultTests: stopped before its end"
        defer {
            for (i, edge) in edges.enumerated() {
                let said = edge.errors.split(separator: "\n").filter { $0.contains("nats:") }
                print("NatsFaultTests: edge \(i + 1) said \(said.count) NATS lines; the last 40:")
                for line in said.suffix(40) { print("  \(line.prefix(300))") }
            }
            if let hub = self.hub {
                // The hub's replay retries, ends and stall restarts: what a hub that stopped
                // serving said (or that it said nothing).
                let said = hub.errors.split(separator: "\n").filter { $0.contains("nats:") }
                print("NatsFaultTests: the hub said \(said.count) NATS lines; the last 20:")
                for line in said.suffix(20) { print("  \(line.prefix(300))") }
            }
            for line in edges.flatMap({ $0.errors.split(separator: "\n") }) where line.contains("the stream's sequence went back") {
                print("NatsFaultTests: \(line.prefix(600))")
            }
            for why in reader.leaderReads { print("NatsFaultTests: the reader read the stream from its leader: \(why)") }
            // Where a server did not store a replicated message because its copy already
            // went past that sequence (2.9.10's debug log): a restarted server replaying
            // what it stored says so too, and a copy that parted from the leader's does.
            for name in serverNames {
                let skipped = (servers[name]?.logText ?? "").split(separator: "\n").filter { $0.contains("skipping message with sequence") }
                if !skipped.isEmpty {
                    print("NatsFaultTests: \(name) skipped \(skipped.count) replicated messages, first: \(skipped.prefix(3).map { $0.suffix(80) })")
                }
            }
            print(verdict)
        }
        /// Records why the test stops (the verdict printed last), fails it with `detail`
        /// added, and stops it.
        func stop(_ why: String, detail: String = "") throws -> Never {
            verdict = "NatsFaultTests: FAILED \(why)"
            XCTFail(verdict + detail)
            throw HarnessError.timedOut(verdict)
        }
        /// Waits on the reader for every number below `expecting` (or, with `level`, for the
        /// stream to be within `level` lines of the writer, however far it has gone); on
        /// failure records why (the reader's and the stream's state, the edge's last
        /// words) and stops the test.
        func awaitStream(_ what: String, _ expecting: Int, level: Int? = nil, stall: Double, timeout: Double) throws {
            let done = { level.map { reader.contiguous + $0 >= writer.count } ?? (reader.contiguous >= expecting) }
            if reader.wait(stall: stall, timeout: timeout, expecting: expecting, until: done) { return }
            let missing = reader.missingInStream.map {
                "line \($0) is missing from the stream read again from its leader (later lines kept arriving)"
            } ?? "no line missing found"
            try stop("\(what): the stream holds every line below \(reader.contiguous) of \(expecting); \(missing); \(whoStopped(reader))",
                     detail: "; edge: \(edge?.errors.suffix(2000) ?? "")")
        }
        /// Waits until the stream's leader lists both other servers as replicas, current
        /// and at most a second of writes behind: a fault is over only once its replicas
        /// have caught up, as an operator waits before restarting the next server. (Without
        /// it, a leader SIGKILLed while the server stopped just before was still catching
        /// up left 2.9.10's stream without lines it had acknowledged, in a run here.)
        func awaitReplicas(_ what: String) throws {
            let deadline = Date().addingTimeInterval(180)
            let since = Date()
            var last: JetStreamInfo?
            while Date() < deadline {
                if let info = reader.streamInfo() {
                    last = info
                    if info.replicas.count == serverNames.count - 1,
                       info.replicas.allSatisfy({ $0.current && !$0.offline && $0.lag <= 200 }) {
                        let waited = Date().timeIntervalSince(since)
                        if waited > 5 { print("NatsFaultTests: \(what): the replicas caught up after \(Int(waited)) s") }
                        return
                    }
                }
                pass(1)
            }
            try stop("\(what): the replicas never all caught up in 180 s: leader \(last?.leader ?? "none"), replicas \(last?.replicas.map { "\($0.name) current \($0.current) offline \($0.offline) lag \($0.lag)" } ?? [])")
        }
        /// Waits until the stream is level with the writer (within a second of lines) and
        /// its replicas have caught up, runs `fault`, then `heal`, and times until every
        /// line written before the heal is stored.
        func fault(_ name: String, _ fault: () throws -> Void, heal: () throws -> Void) throws {
            try awaitReplicas("before '\(name)'")
            try awaitStream("before '\(name)'", writer.count - NatsFaultTests.linesPerSecond, level: NatsFaultTests.linesPerSecond, stall: 60, timeout: 240)
            try fault()
            try heal()
            let healed = Date(), written = writer.count
            // Stored: polled on the leader while the reader's consumer goes on delivering
            // (the loop runs during each poll); bounded, and a run that never sees it stored
            // says so (nil) and is judged by the reader's wait below.
            var stored: Double?
            var seen: Double?
            while Date().timeIntervalSince(healed) < 180 {
                let last = reader.lastStoredLine()
                if let last, last >= written - 1 {
                    seen = Date().timeIntervalSince(healed)
                    // When it was stored, by the message's own time (the probe's poll only
                    // says when the test saw it).
                    stored = reader.storedTime(ofLine: written - 1, through: reader.probeLastSequence)
                        .map { $0 - healed.timeIntervalSince1970 }
                    break
                }
                pass(0.1)
            }
            try awaitStream("after '\(name)'", written, stall: 90, timeout: 180)
            // The probe's own connection may be reconnecting (its server was the one cut
            // off): its first answer after the heal, waited for (30 s at most).
            _ = EventLoop.main.run(until: { leaderProbe.firstAnswer(after: healed) != nil }, timeout: 30)
            let answered = leaderProbe.firstAnswer(after: healed)
            let (leaderAnswered, leaderName) = (answered?.seconds, answered?.leader)
            recoveries.append((name, stored, seen, Date().timeIntervalSince(healed), leaderAnswered, leaderName))
        }

        try fault("stream leader cut off from every host for 10 s", {
            let (name, _) = try leader()
            try net.isolate(name)
            pass(10)
            try net.heal(name)
        }, heal: {})
        try fault("edge cut off from every server for 10 s", {
            try net.cut("edge", from: serverNames)
            pass(10)
        }, heal: { try net.heal("edge") })
        // The issue's "a link with 200 ms delay and 5% loss for 20 s": the edge's own link
        // (every server is behind it), both ways. TCP through it carries a few tens of
        // KB/s, so the edge falls behind the writer and must catch up after.
        var slowLink = ""
        var throughSlowLink = ""
        var storedThroughSlowLink = 0
        try fault("the edge's link 200 ms slower and losing 5% of packets each way for 20 s", {
            let how = try net.degrade("edge", delayMicroseconds: 200_000, lossPercent: 5)
            print("NatsFaultTests: the edge's link degraded by \(how)")
            let (storedBefore, writtenBefore) = (reader.lastStoredLine() ?? 0, writer.count)
            pass(20)
            // What got through the slow link (the rest is the backlog timed after the heal).
            let (storedAfter, writtenAfter) = (reader.lastStoredLine() ?? 0, writer.count)
            storedThroughSlowLink = storedAfter - storedBefore
            throughSlowLink = "\(storedThroughSlowLink) lines stored while \(writtenAfter - writtenBefore) were written"
        }, heal: { slowLink = try net.restore("edge") })
        print("NatsFaultTests: the slow link's count: \(slowLink); through it: \(throughSlowLink)")
        // Printed, not asserted: how much gets through depends on the batch in flight when
        // the link slowed (runs here: 47-80% of the lines, and 2% in a CI rehearsal on a loaded
        // machine; before 2026-11-29 nothing at all, as each 1 s timeout queued another copy of
        // the batch behind the first and the pings behind those copies made cnats reconnect
        // every ~4 s). What the test holds the edge to is the count and order below.
        if storedThroughSlowLink == 0 { print("NatsFaultTests: nothing was stored through the slow link") }
        if !net.delayMethod.hasPrefix("tc netem") {
            // That it really held and dropped packets: netdelay's own count.
            let counts = slowLink.split(separator: " ")
            let held = counts.firstIndex(of: "packets,").flatMap { Int(counts[$0 - 1]) } ?? 0
            let dropped = counts.last.flatMap { Int($0) } ?? 0
            XCTAssertGreaterThan(held, 100, "the slow link held no traffic: \(slowLink)")
            XCTAssertGreaterThan(dropped, 0, "the slow link dropped nothing: \(slowLink)")
        }
        try fault("stream leader SIGSTOPped for 8 s", {
            let (_, server) = try leader()
            server.signal(SIGSTOP)
            pass(8)
            server.signal(SIGCONT)
        }, heal: {})
        try fault("stream leader SIGKILLed, restarted after 5 s", {
            let (name, server) = try leader()
            server.kill9()
            pass(5)
            try server.restart()
            XCTAssertTrue(server.waitForLog("Server is ready", timeout: 30), "\(name) did not restart")
        }, heal: {})
        // The issue's "a follower's death stalls nothing for more than 1 s" (its own finding:
        // killing the follower the edge was connected to stalled the stream 5.3 s): the server
        // the edge is connected to, not the stream's leader, SIGKILLed. Nothing is healed, so
        // the time printed for it runs from the kill: the stall. If the edge sits on the
        // leader, it is first moved: cut off from the leader until its connection is to
        // another server, then healed (and the fault waits until the stream is level again).
        if let (leaderName, _) = try? leader(), net.peers(of: "edge", port: 4222).contains(leaderName) {
            try net.cut("edge", from: [leaderName])
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                let peers = net.peers(of: "edge", port: 4222)
                if !peers.isEmpty && !peers.contains(leaderName) { break }
                pass(0.2)
            }
            try net.heal("edge")
            print("NatsFaultTests: the edge moved off the leader \(leaderName) to \(net.peers(of: "edge", port: 4222))")
        }
        var killedFollower: NamespacedProcess?
        var lastBeforeKill: UInt64 = 0
        var killed = Date()
        try fault("the follower the edge is connected to SIGKILLed (timed from the kill)", {
            let (leaderName, _) = try leader()
            let peers = net.peers(of: "edge", port: 4222)
            guard let peer = peers.first, peers.count == 1, peer != leaderName, let server = servers[peer] else {
                try stop("the edge's server should be one follower: the edge is connected to \(peers), the leader is \(leaderName)")
            }
            lastBeforeKill = reader.streamInfo()?.lastSequence ?? 0
            server.kill9()
            killed = Date()
            killedFollower = server
            print("NatsFaultTests: SIGKILLed \(peer), the edge's server, a follower (the leader is \(leaderName))")
        }, heal: {})
        // The stall itself: the longest pause in storing from just before the kill until 5 s
        // after it (the line above times only the lines written before the kill, which may
        // have been stored before it).
        pass(max(0, 6 - Date().timeIntervalSince(killed)))
        if let (gap, endedBy) = reader.longestStoreGap(from: lastBeforeKill, over: 5) {
            print("NatsFaultTests: the follower's death: the longest pause in storing from the kill to 5 s after it was " + String(format: "%.3f s", gap) + " (ended by #\(endedBy); issue 33: at most 1 s)")
        } else {
            XCTFail("the stream's messages after the follower's kill could not be read from #\(lastBeforeKill)")
        }
        if let killedFollower {
            try killedFollower.restart()
            XCTAssertTrue(killedFollower.waitForLog("Server is ready", timeout: 30), "the killed follower did not restart")
        }
        // The issue's "every server restarted in turn": each SIGKILLed (a crash), down 2 s,
        // restarted, and the stream taking lines again before the next one goes. (All three
        // at once was tried and is not among the faults: with Debian's 2.9.10 the stream
        // stored nothing for 16 s after it and, in one run, kept a batch sent after one
        // the crash lost (175 lines out of file order); docs/design/nats-durability.md
        // says what such a crash does and does not keep.)
        try fault("every server SIGKILLed and restarted in turn, 2 s down each", {
            for name in serverNames {
                let server = try XCTUnwrap(servers[name])
                server.kill9()
                pass(2)
                try server.restart()
                XCTAssertTrue(server.waitForLog("Server is ready", timeout: 30), "\(name) did not restart")
                try awaitStream("after restarting \(name)", writer.count, stall: 90, timeout: 180)
                try awaitReplicas("after restarting \(name)")
            }
        }, heal: {})
        try fault("edge SIGKILLed, its file renamed while it is down, restarted", {
            let edge = try XCTUnwrap(self.edge)
            edge.signal(SIGKILL)
            XCTAssertNotNil(edge.waitForExit(timeout: 30))
            // The writer reopens its path for every write: its next lines go to a new app.log.
            XCTAssertEqual(rename(log, log + ".1"), 0)
            pass(1)
            self.edge = try startEdge(log)
        }, heal: {})

        writer.stop()
        let total = writer.count
        appendText(log, "END\n")
        try awaitStream("at the end", total, stall: 90, timeout: 300)
        XCTAssertTrue(reader.wait(stall: 90, timeout: 120) { reader.sawEnd },
                      "no END: \(whoStopped(reader)); consumer errors: \(reader.consumerErrors)")
        // The count is of the stream as its leader holds it, read message by message from
        // the leader (a consumer reads the copy of the server it sits on, and a 2.9.10
        // server's copy can hold other messages at a few sequences: see readFromLeader).
        XCTAssertTrue(reader.readFromLeader("the final count"), "the leader did not answer for every message: \(whoStopped(reader))")
        try awaitStream("reading the whole stream again at the end", total, stall: 90, timeout: 300)
        XCTAssertTrue(reader.wait(stall: 90, timeout: 120) { reader.sawEnd }, "no END in the final read: \(whoStopped(reader))")
        if let hubClient, let hub {
            XCTAssertTrue(EventLoop.main.run(until: { hubClient.contiguous >= total }, timeout: 120),
                          "the hub client got \(hubClient.contiguous) of \(total); it was told \(hubClient.errorReplies); hub: \(hub.errors.suffix(1500))")
            let served = hubClient.check(total)
            // How often its replay waited, was let go, was retried or was made again after a
            // silence: whether the paths a fault can break were taken at all in this run.
            let stats = (try? LineClient(port: hub.port))?.command("STATS", reply: "STATS").last ?? ""
            let counters = ["replay_waits", "replay_restarts", "replay_retries", "consumer_restarts"]
                .map { "\($0)=\(NatsExactlyOnceTests.field($0, in: stats))" }.joined(separator: " ")
            print("NatsFaultTests: the hub's SINCE 1 client got \(hubClient.contiguous) of \(total) lines in a row, missing \(served.missing.count), twice \(served.duplicated.count); hub \(counters)\(hubClient.errorReplies.isEmpty ? "" : "; told \(hubClient.errorReplies)")")
            XCTAssertEqual(served.missing.count, 0, "the hub client lost \(served.missing.count), first \(served.missing.prefix(5))")
            XCTAssertEqual(served.duplicated.count, 0, "the hub client got \(served.duplicated.count) twice, first \(served.duplicated.prefix(5))")
        }
        let (missing, duplicated) = reader.check(total)
        XCTAssertEqual(missing.count, 0, "lost \(missing.count), first \(missing.prefix(5))")
        XCTAssertEqual(duplicated.count, 0, "duplicated \(duplicated.count), first \(duplicated.prefix(5))")
        XCTAssertEqual(reader.inversions.count, 0, "out of file order: first \(reader.inversions.prefix(3))")
        XCTAssertFalse(edges.contains { $0.errors.contains("(out of order)") }, "the edge saw a batch stored out of order")
        // A rewound stream (NatsEdge+Order.swift) is not a reorder; what it did to the lines
        // is what the reader counted above (its words are printed at the end, with the rest).
        XCTAssertEqual(recoveries.count, 8)
        print("NatsFaultTests: the stream reader's consumer was made again after a silent stall \(reader.stallRestarts) times")
        for (name, stored, seen, read, leaderAnswered, leader) in recoveries {
            let seenText = seen.map { String(format: "seen stored by the leader probe %.2f s after it", $0) } ?? "never seen stored by the leader probe within 180 s"
            let storedText = (stored.map { String(format: "stored in the stream (the first message holding it, by its stored time) %.2f s after it, ", $0) } ?? "(no stored time read), ")
                + seenText
            let leaderText = leaderAnswered.map { answered in
                "the stream's leader (\(leader ?? "?")) first answered the probe " + String(format: "%.2f s after it", answered)
                    + (stored.map { String(format: ", so %.2f s of the wait came after the cluster answered", $0 - answered) } ?? "")
            } ?? "no leader answered the probe"
            print("NatsFaultTests: \(name): every line written before the heal \(storedText); \(leaderText); read by the test's consumer \(String(format: "%.2f", read)) s after it")
        }
        verdict = "NatsFaultTests: \(total) lines, 0 lost, 0 duplicated, 0 out of order expected; lost \(missing.count), duplicated \(duplicated.count), out of order \(reader.inversions.count); the stream read from its leader \(reader.leaderReads.count) times"
    }
}

/// Appends `L<n>` lines (``NumberedLineWriter``'s format, numbered from 0) at ~`rate`
/// lines/s from a thread of its own until stopped; the path is opened for every write,
/// so a rename starts a new file, as a logging program that reopens would.
final class SteadyLineWriter: @unchecked Sendable {
    // Thread-safety: `lock` guards `written` and `stopped`.
    private let lock = NSLock()
    private var written = 0
    private var stopped = false
    private let path: String
    private let rate: Int
    private let done = DispatchSemaphore(value: 0)
    private var running = false

    init(path: String, rate: Int) {
        self.path = path
        self.rate = rate
    }

    /// Lines written so far (numbers 0..<count).
    var count: Int { lock.lock(); defer { lock.unlock() }; return written }

    func start() {
        running = true
        let (path, rate) = (path, rate)
        Thread { [self] in
            let perTick = max(1, rate / 200)
            var next = Date()
            while true {
                lock.lock()
                let from = written, stop = stopped
                lock.unlock()
                if stop { break }
                var text = ""
                for n in from..<(from + perTick) { text += NumberedLineWriter.line(n) }
                appendText(path, text)
                lock.lock(); written = from + perTick; lock.unlock()
                next = next.addingTimeInterval(0.005)
                let wait = next.timeIntervalSinceNow
                if wait > 0 { usleep(UInt32(wait * 1e6)) }
            }
            done.signal()
        }.start()
    }

    /// Stops the writer and waits until its last line is written.
    func stop() {
        guard running else { return }
        running = false
        lock.lock(); stopped = true; lock.unlock()
        _ = done.wait(timeout: .now() + 30)
    }
}

/// A client of a logcast hub (`--from`) that sent `SINCE 1` and reads every line it is
/// served, on a thread of its own (the main loop stays free for the stream reader), counting
/// the numbered lines: the issue's "hub client reading through each fault".
final class HubSinceClient: @unchecked Sendable {
    // Thread-safety: `lock` guards `counts`, `contiguousCount`, `errors` and `stopped`.
    private let lock = NSLock()
    private var counts: [Int: Int] = [:]
    /// `ERR` replies other than "not connected" (the hub ending the replay), at most 10.
    private var errors: [String] = []
    private var contiguousCount = 0
    private let client: LineClient
    private let done = DispatchSemaphore(value: 0)
    private var stopped = false

    /// Connects to the hub on loopback `port` and sends `SINCE 1` (again, after a pause,
    /// while the hub answers that it is not connected to NATS yet).
    init(port: Int) throws {
        client = try LineClient(port: port)
        client.send("SINCE 1\n")
        Thread { [self] in
            var refusals = 0
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                lock.lock(); let stop = stopped; lock.unlock()
                if stop { break }
                var poller = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 200) <= 0 { continue }
                let n = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress!, $0.count, 0) }
                if n <= 0 { break }
                pending.append(contentsOf: buffer[0..<n])
                var start = 0
                var numbers: [Int] = []
                while let nl = pending[start...].firstIndex(of: 10) {
                    let line = pending[start..<nl]
                    start = nl + 1
                    if line.starts(with: Array("ERR SINCE: not connected".utf8)) && refusals < 120 {
                        refusals += 1
                        usleep(500_000)
                        client.send("SINCE 1\n")
                        continue
                    }
                    if line.starts(with: Array("ERR".utf8)) {
                        lock.lock()
                        if errors.count < 10 { errors.append(String(decoding: line, as: UTF8.self)) }
                        lock.unlock()
                        continue
                    }
                    // "<path>: L<n> xxx…"
                    if let colon = line.firstIndex(of: 58), colon + 2 < line.endIndex, line[colon + 2] == UInt8(ascii: "L") {
                        var value = 0, digits = 0
                        for byte in line[(colon + 3)...] {
                            guard byte >= 48 && byte <= 57 else { break }
                            value = value * 10 + Int(byte - 48)
                            digits += 1
                        }
                        if digits > 0 { numbers.append(value) }
                    }
                }
                pending.removeFirst(start)
                lock.lock()
                for n in numbers { counts[n, default: 0] += 1 }
                while counts[contiguousCount] != nil { contiguousCount += 1 }
                lock.unlock()
            }
            done.signal()
        }.start()
    }

    /// The hub's `ERR` replies other than "not connected" (an ended replay says why).
    var errorReplies: [String] { lock.lock(); defer { lock.unlock() }; return errors }

    /// The least number not yet served (every number below it was).
    var contiguous: Int { lock.lock(); defer { lock.unlock() }; return contiguousCount }

    /// Numbers below `total` never served, and numbers served more than once.
    func check(_ total: Int) -> (missing: [Int], duplicated: [Int]) {
        lock.lock(); defer { lock.unlock() }
        return ((0..<total).filter { counts[$0] == nil }, counts.filter { $0.value > 1 }.map(\.key).sorted())
    }

    /// Stops reading and waits for the thread.
    func stop() {
        lock.lock(); stopped = true; lock.unlock()
        _ = done.wait(timeout: .now() + 10)
    }
}
