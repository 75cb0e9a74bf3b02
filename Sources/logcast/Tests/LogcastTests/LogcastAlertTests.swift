import Foundation
import Glibc
import XCTest

/// `--alert NAME=REGEX,URL` (issue 31, section 2): the real daemon posting to a real
/// receiver (Python's `http.server`, ``AlertReceiver``) that fails, stalls, refuses and
/// recovers; the counters read from `/metrics` with curl.
final class LogcastAlertTests: LogcastProcessTestCase {
    var receiver: AlertReceiver?

    override func tearDown() {
        receiver?.stop()
        receiver = nil
        super.tearDown()
    }

    /// Starts a receiver in `mode`.
    func startReceiver(_ mode: String, port: Int = 0) throws -> AlertReceiver {
        let r = try AlertReceiver(dir: dir, mode: mode, port: port)
        receiver?.stop()
        receiver = r
        return r
    }

    /// Starts logcast on `file` with `options` and `--http`; its HTTP port. Waits until the
    /// tail follows (a client sees a `sync-` line it appended), so every later line is read.
    func startLogcast(_ file: String, _ options: [String]) throws -> (LogcastProcess, Int) {
        appendLines(file, ["start"])
        let p = try start([file, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--http", "127.0.0.1:0"] + options)
        let client = try LineClient(port: p.port)
        _ = client.command("GREP ^sync-", reply: "OK GREP")
        var seen = false
        for k in 0..<300 where !seen {
            appendLines(file, ["sync-\(k)"])
            seen = !client.readLines(timeout: 0.2) { $0.contains { $0.hasPrefix(file + ": sync-") } }.isEmpty
        }
        XCTAssertTrue(seen, "the tail of \(file) never started")
        client.send("QUIT\n")
        return (p, try p.httpPort())
    }


    /// Waits (bounded) until a scrape satisfies `condition`; the last scrape.
    func waitForMetrics(_ port: Int, timeout: Double = 60, until condition: ([String: Double]) -> Bool) throws -> [String: Double] {
        let deadline = Date().addingTimeInterval(timeout)
        var last = try scrapeMetrics(port)
        while !condition(last) && Date() < deadline {
            usleep(50_000)
            last = try scrapeMetrics(port)
        }
        return last
    }

    /// `count` numbered lines, every third one matching `ALERT`; all of them, and the
    /// matching ones.
    func numberedLines(_ count: Int, from first: Int = 0) -> (all: [String], matching: [String]) {
        let all = (first..<(first + count)).map { i in i % 3 == 0 ? "line-\(i) ALERT disk full" : "line-\(i) quiet" }
        return (all, all.filter { $0.contains("ALERT") })
    }

    func testReceiverFailingThenRecoveringGetsEveryMatchExactlyOnceInOrder() throws {
        let receiver = try startReceiver("fail")
        let log = dir + "/app.log"
        let (p, http) = try startLogcast(log, ["--alert", "disk=ALERT,\(receiver.url)", "--alert-batch", "4", "--alert-delay", "50"])
        // A client's GREP goes on working beside the alerts (both scan the same blocks).
        let client = try LineClient(port: p.port)
        _ = client.command("GREP quiet$", reply: "OK GREP")
        let (all, matching) = numberedLines(60)
        appendLines(log, Array(all[0..<30]))
        // A positive marker that retries happen: three 503s for the first batch.
        XCTAssertTrue(receiver.wait { $0.posts.filter { $0.mode == "fail" }.count >= 3 }, "no retries: \(receiver.posts.count) posts")
        appendLines(log, Array(all[30...]))
        receiver.set("ok")
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= matching.count }, "taken: \(receiver.takenEvents.count) of \(matching.count)")

        let quiet = all.filter { !$0.contains("ALERT") }
        let got = client.readLines { $0.count >= quiet.count }
        XCTAssertEqual(got, quiet.map { log + ": " + $0 }, "the client's filter")

        let posts = receiver.posts
        XCTAssertEqual(receiver.takenEvents.map { $0["line"] ?? "" }, matching, "every match once, in order")
        XCTAssertEqual(receiver.takenEvents.map { $0["file"] ?? "" }, Array(repeating: log, count: matching.count))
        XCTAssertFalse(posts.contains { $0.duplicate }, "a batch the receiver acknowledged was sent again")
        for post in posts {
            XCTAssertEqual(post.alert, "disk")
            XCTAssertEqual(post.contentType, "application/json")
            XCTAssertLessThanOrEqual(post.events.count, 4, "a batch holds at most --alert-batch events")
            for event in post.events {
                XCTAssertNotNil(event["time"]?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression),
                                "not RFC 3339: \(event)")
            }
        }
        // Every failed batch was retried with the same key until it was taken.
        let failedKeys = Set(posts.filter { $0.mode == "fail" }.map { $0.key })
        let takenKeys = Set(posts.filter { $0.mode == "ok" }.map { $0.key })
        XCTAssertTrue(failedKeys.isSubset(of: takenKeys), "a failed batch was never retried")
        let retriedEvents = posts.filter { $0.mode == "fail" }.reduce(0) { $0 + $1.events.count }

        let m = try waitForMetrics(http) { ($0[#"logcast_alert_events_sent_total{alert="disk"}"#] ?? 0) >= Double(matching.count) }
        XCTAssertEqual(m[#"logcast_alert_events_sent_total{alert="disk"}"#], Double(matching.count))
        XCTAssertEqual(m[#"logcast_alert_events_retried_total{alert="disk"}"#], Double(retriedEvents), "one retry per failed attempt's events")
        XCTAssertEqual(m[#"logcast_alert_queue_events{alert="disk"}"#], 0)
        for reason in ["rate", "queue", "rejected", "expired"] {
            XCTAssertEqual(m[#"logcast_alert_events_dropped_total{alert="disk",reason="\#(reason)"}"#], 0, reason)
        }
        XCTAssertEqual(m["logcast_alerts_sent_total"], Double(matching.count), "STATS's alerts_sent")
    }

    func testReceiverDownThenStartedGetsEveryMatchOnceInOrder() throws {
        // A free port: a receiver's, stopped. Connections to it are refused until the
        // second receiver listens there.
        let first = try startReceiver("ok")
        let port = first.port
        first.stop()
        let log = dir + "/app.log"
        let (p, http) = try startLogcast(log, ["--alert", "disk=ALERT,http://127.0.0.1:\(port)/hook", "--alert-batch", "3",
                                               "--alert-delay", "50"])
        let (all, matching) = numberedLines(30)
        appendLines(log, all)
        let retried = #"logcast_alert_events_retried_total{alert="disk"}"#
        XCTAssertGreaterThan(try waitForMetrics(http) { ($0[retried] ?? 0) >= 3 }[retried] ?? 0, 0, "no retries")
        XCTAssertTrue(p.errors.contains("retrying with back-off"), p.errors)
        XCTAssertTrue(first.posts.isEmpty, "something listened on the port")
        let receiver = try startReceiver("ok", port: port)
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= matching.count }, "taken: \(receiver.takenEvents.count) of \(matching.count)")
        XCTAssertEqual(receiver.takenEvents.map { $0["line"] ?? "" }, matching, "every match once, in order")
        XCTAssertFalse(receiver.posts.contains { $0.duplicate })
        let m = try waitForMetrics(http) { ($0[#"logcast_alert_events_sent_total{alert="disk"}"#] ?? 0) >= Double(matching.count) }
        XCTAssertEqual(m[#"logcast_alert_events_sent_total{alert="disk"}"#], Double(matching.count))
    }

    func testStalledAnswerIsRetriedWithTheSameKeyAndDeduplicated() throws {
        let receiver = try startReceiver("stall")
        let log = dir + "/app.log"
        let (_, http) = try startLogcast(log, ["--alert", "disk=ALERT,\(receiver.url)", "--alert-batch", "5", "--alert-delay", "50",
                                               "--alert-timeout", "1"])
        let (all, matching) = numberedLines(45)
        appendLines(log, all)
        XCTAssertTrue(receiver.wait { $0.posts.contains { $0.mode == "stall" } }, "no POST arrived")
        receiver.set("ok")
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= matching.count }, "taken: \(receiver.takenEvents.count) of \(matching.count)")
        let stalledKey = receiver.posts.first { $0.mode == "stall" }!.key
        // logcast hung up on the stalled POST (its --alert-timeout), then sent it again.
        XCTAssertTrue(receiver.wait { $0.hangups.contains(stalledKey) }, "logcast never gave up on the stalled answer")

        // Once logcast counted every event acknowledged nothing is in flight and the retry
        // counter is final; the receiver then holds every POST it counts.
        let sent = #"logcast_alert_events_sent_total{alert="disk"}"#
        let m = try waitForMetrics(http) { ($0[sent] ?? 0) >= Double(matching.count) }
        XCTAssertEqual(m[sent], Double(matching.count))
        let retried = Int(m[#"logcast_alert_events_retried_total{alert="disk"}"#] ?? -1)
        XCTAssertTrue(receiver.wait { $0.posts.flatMap { $0.events }.count >= matching.count + retried })

        let posts = receiver.posts
        let sameKey = posts.filter { $0.key == stalledKey }
        XCTAssertGreaterThanOrEqual(sameKey.count, 2, "the stalled batch was not retried")
        // Every batch sent more than once (the stalled one; on a loaded machine another
        // answer may come after the 1 s timeout too) went again under its own key, unchanged.
        var resent = 0
        for (key, tries) in Dictionary(grouping: posts, by: { $0.key }) {
            XCTAssertFalse(tries[0].duplicate, "\(key) taken before its first POST")
            XCTAssertTrue(tries.dropFirst().allSatisfy { $0.duplicate }, "a retry of \(key) carried another key")
            XCTAssertTrue(tries.allSatisfy { $0.events == tries[0].events }, "a retry changed batch \(key)")
            resent += (tries.count - 1) * tries[0].events.count
        }
        XCTAssertEqual(resent, retried, "/metrics counts each event sent again")
        // Raw POSTs hold the resent events twice or more; deduplicated, once each.
        let rawEvents = posts.flatMap { $0.events }
        XCTAssertEqual(rawEvents.count, matching.count + resent)
        XCTAssertGreaterThan(rawEvents.count, matching.count, "the raw POSTs count the stalled batch twice")
        XCTAssertEqual(receiver.takenEvents.map { $0["line"] ?? "" }, matching, "every match once, in order, after deduplication")
    }

    func testRateLimitDropsAndCountsTheExcess() throws {
        let receiver = try startReceiver("ok")
        let log = dir + "/app.log"
        let (p, http) = try startLogcast(log, ["--alert", "burst=ALERT,\(receiver.url)", "--alert-rate", "5", "--alert-delay", "50"])
        let lines = (0..<200).map { "line-\($0) ALERT" }
        appendLines(log, lines)
        let sent = #"logcast_alert_events_sent_total{alert="burst"}"#, rate = #"logcast_alert_events_dropped_total{alert="burst",reason="rate"}"#
        let m = try waitForMetrics(http) { ($0[sent] ?? 0) + ($0[rate] ?? 0) >= 200 }
        XCTAssertEqual((m[sent] ?? 0) + (m[rate] ?? 0), 200, "every match is sent or dropped for the rate")
        // One write of 200 lines at 5 a second: a burst of 5, plus 5 a second for however
        // long the loaded machine took to read them (generously bounded).
        XCTAssertGreaterThanOrEqual(m[sent] ?? 0, 5)
        XCTAssertGreaterThanOrEqual(m[rate] ?? 0, 150)
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= Int(m[sent] ?? 0) })
        let taken = receiver.takenEvents.map { $0["line"] ?? "" }
        XCTAssertEqual(taken.count, Int(m[sent] ?? 0), "the receiver got what /metrics says was sent")
        // The bucket's first five pass; later ones only as it refills, in order.
        XCTAssertEqual(Array(taken.prefix(5)), Array(lines.prefix(5)), "the first lines of the burst pass")
        let positions = taken.map { lines.firstIndex(of: $0) ?? -1 }
        XCTAssertFalse(positions.contains(-1), "an event that was not written")
        XCTAssertEqual(positions, positions.sorted(), "in order")
        XCTAssertEqual(Set(positions).count, positions.count, "each at most once")
        XCTAssertEqual(m["logcast_alerts_dropped_total"], m[rate], "STATS's alerts_dropped")
        let stats = try LineClient(port: p.port).command("STATS", reply: "STATS").last ?? ""
        XCTAssertTrue(stats.contains(" alerts_sent=\(Int(m[sent] ?? 0)) alerts_dropped=\(Int(m[rate] ?? 0))"), stats)
    }

    func testA4xxIsNotRetriedButDroppedAndCounted() throws {
        let receiver = try startReceiver("reject")
        let log = dir + "/app.log"
        let (p, http) = try startLogcast(log, ["--alert", "disk=ALERT,\(receiver.url)", "--alert-delay", "50"])
        appendLines(log, ["one ALERT", "two ALERT", "three ALERT"])
        let rejected = #"logcast_alert_events_dropped_total{alert="disk",reason="rejected"}"#
        let m = try waitForMetrics(http) { ($0[rejected] ?? 0) >= 3 }
        XCTAssertEqual(m[rejected], 3)
        // The positive marker after which the refused batch must not have come again.
        receiver.set("ok")
        appendLines(log, ["four ALERT"])
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= 1 })
        let posts = receiver.posts
        XCTAssertEqual(posts.filter { $0.mode == "reject" }.count, 1, "a 400 was retried")
        XCTAssertEqual(receiver.takenEvents.map { $0["line"] ?? "" }, ["four ALERT"])
        XCTAssertTrue(p.errors.contains("answered 400"), "the refusal is logged: \(p.errors)")
        XCTAssertEqual(try scrapeMetrics(http)[#"logcast_alert_events_retried_total{alert="disk"}"#], 0)
    }

    func testAFullQueueDropsTheOldestAndCountsThem() throws {
        let receiver = try startReceiver("fail")
        let log = dir + "/app.log"
        let (_, http) = try startLogcast(log, ["--alert", "disk=ALERT,\(receiver.url)", "--alert-batch", "2", "--alert-delay", "50",
                                               "--alert-queue", "5"])
        let lines = (0..<20).map { "line-\($0) ALERT" }
        appendLines(log, lines)
        let queue = #"logcast_alert_events_dropped_total{alert="disk",reason="queue"}"#
        let depth = #"logcast_alert_queue_events{alert="disk"}"#
        // While the first batch fails, the others wait: five of them, the newest.
        var m = try waitForMetrics(http) { ($0[depth] ?? 0) == 5 && ($0[queue] ?? 0) >= 13 }
        XCTAssertEqual(m[depth], 5, "the queue is bounded")
        receiver.set("ok")
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= 20 - Int(m[queue] ?? 0) })
        let taken = receiver.takenEvents.map { $0["line"] ?? "" }
        let sent = #"logcast_alert_events_sent_total{alert="disk"}"#
        // The last batch is counted once its answer is read, after the receiver recorded it.
        m = try waitForMetrics(http) { ($0[sent] ?? 0) >= Double(taken.count) }
        XCTAssertEqual(m[depth], 0)
        // The batch in flight (one or two lines, as the lines were read) and the five newest.
        let first = taken.count - 5
        XCTAssertTrue((1...2).contains(first), "taken: \(taken)")
        XCTAssertEqual(taken, Array(lines.prefix(first)) + Array(lines.suffix(5)))
        XCTAssertEqual(m[queue], Double(20 - taken.count), "the oldest waiting were dropped and counted")
        XCTAssertEqual(m[sent], Double(taken.count))
    }

    func testABatchFailingPastTheRetryWindowIsDroppedAndCounted() throws {
        let receiver = try startReceiver("fail")
        let log = dir + "/app.log"
        let (p, http) = try startLogcast(log, ["--alert", "disk=ALERT,\(receiver.url)", "--alert-delay", "50", "--alert-retry-for", "2"])
        appendLines(log, ["one ALERT", "two ALERT"])
        let expired = #"logcast_alert_events_dropped_total{alert="disk",reason="expired"}"#
        let m = try waitForMetrics(http) { ($0[expired] ?? 0) >= 2 }
        XCTAssertEqual(m[expired], 2)
        let tries = receiver.posts.count
        XCTAssertGreaterThanOrEqual(tries, 2, "retried within the window")
        // Back-off 0.25 s, 0.5 s, 1 s, 2 s: within two seconds, at most four attempts (fewer
        // when the answers are slow).
        XCTAssertLessThanOrEqual(tries, 4, "retried past the window or without back-off")
        receiver.set("ok")
        appendLines(log, ["three ALERT"])
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= 1 })
        XCTAssertEqual(receiver.takenEvents.map { $0["line"] ?? "" }, ["three ALERT"], "the next batch is sent, the expired one is not")
        XCTAssertTrue(p.errors.contains("2 events dropped"), p.errors)
    }

    func testSIGTERMWithAnAnswerStalledExitsPromptly() throws {
        let receiver = try startReceiver("stall")
        let log = dir + "/app.log"
        let (p, _) = try startLogcast(log, ["--alert", "disk=ALERT,\(receiver.url)", "--alert-delay", "10"])
        appendLines(log, ["one ALERT"])
        XCTAssertTrue(receiver.wait { !$0.posts.isEmpty }, "no POST arrived")
        p.signal(SIGTERM)
        // The stalled POST would hold the loop for --alert-timeout (10 s) if it were not
        // disposed of; the drain's own bound is under a second.
        XCTAssertEqual(p.waitForExit(timeout: 8), 0, "logcast did not exit 0 promptly: \(p.errors)")
        XCTAssertTrue(receiver.wait { $0.hangups.count == 1 }, "the stalled connection was not closed")
    }

    func testALongLineIsCutAt16KiB() throws {
        let receiver = try startReceiver("ok")
        let log = dir + "/app.log"
        _ = try startLogcast(log, ["--alert", "long=ALERT,\(receiver.url)", "--alert-delay", "10"])
        let long = "ALERT " + String(repeating: "0123456789", count: 4000)
        appendLines(log, [long, "short ALERT"])
        XCTAssertTrue(receiver.wait { $0.takenEvents.count >= 2 })
        XCTAssertEqual(receiver.takenEvents.map { $0["line"] ?? "" }, [String(long.prefix(16 * 1024)), "short ALERT"])
    }

    func testBadAlertsAreClearStartUpErrors() throws {
        let log = dir + "/app.log"
        appendLines(log, ["x"])
        let cases: [([String], String)] = [
            (["--alert", "bad=(unclosed,http://127.0.0.1:9/h"], "--alert bad: invalid regex"),
            (["--alert", #"back=(a)\1,http://127.0.0.1:9/h"#], "--alert back: unsupported pattern"),
            (["--alert", "ftp=x,ftp://127.0.0.1/h"], "is not an http:// or https:// URL"),
            (["--alert", "port=x,http://127.0.0.1:/h"], "is not an http:// or https:// URL"),
            (["--alert", "port=x,http://127.0.0.1:70000/h"], "is not an http:// or https:// URL"),
            (["--alert", "nourl"], "--alert must be NAME=REGEX,URL"),
            (["--alert", "sp ace=x,http://127.0.0.1:9/h"], "must be 1 to 64 letters"),
            (["--alert", "a=x,http://127.0.0.1:9/h", "--alert", "a=y,http://127.0.0.1:9/h"], "the name 'a' is given twice"),
            (["--alert", "a=x,http://127.0.0.1:9/h", "--alert-rate", "0"], "--alert-rate must be in"),
        ]
        for (options, message) in cases {
            let (status, _, err) = try runToExit([log, "--listen", "127.0.0.1:0"] + options)
            XCTAssertNotNil(status, "\(options) did not exit")
            XCTAssertNotEqual(status, 0, "\(options) started")
            XCTAssertTrue(err.contains(message), "\(options): \(err)")
        }
    }
}
