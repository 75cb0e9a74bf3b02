import Foundation
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// Server-sent events from our server, read by curl (a client nobody here wrote) and
/// checked with our parser.
final class HTTPEventStreamTests: XCTestCase {
    func testCurlReadsTheEventsTheRetryAndAHeartbeatAndTheServerSeesLastEventID() throws {
        let lastIDs = Guarded<[String?]>([])
        let server = try HTTPTestServer { request in
            lastIDs.update { $0.append(request.lastEventID) }
            let start = Int(request.lastEventID ?? "0")! + 1
            // Two events, a quiet spell long enough for heartbeats, then one more, then the end.
            let events = Signal<ServerSentEvent>.create { s in
                s.sendNext(ServerSentEvent(data: "event \(start)", id: "\(start)"))
                s.sendNext(ServerSentEvent(data: "two\nlines", id: "\(start + 1)", event: "multi"))
                let later = request.loop.scheduler.afterDelay(0.6) {
                    s.sendNext(ServerSentEvent(data: "after the quiet", id: "\(start + 2)"))
                    s.sendCompleted()
                }
                return later
            }
            request.respond(events: events, retry: 1500, heartbeat: 0.1)
        }
        let url = "http://127.0.0.1:\(server.port)/events"
        let r = try runProgram(["curl", "-sN", "-i", "-H", "Last-Event-ID: 41", url])
        XCTAssertEqual(r.status, 0, r.err)
        let parts = r.out.components(separatedBy: "\r\n\r\n")
        XCTAssertTrue(parts[0].contains("Content-Type: text/event-stream"), r.out)
        XCTAssertTrue(parts[0].contains("Transfer-Encoding: chunked"), r.out)
        XCTAssertTrue(r.out.contains(": heartbeat\n\n"), "a quiet stream gets a heartbeat comment: \(r.out)")
        // curl without -i decodes the chunks: the event stream itself.
        let plain = try runProgram(["curl", "-sN", "-H", "Last-Event-ID: 41", url])
        var parser = ServerSentEventParser()
        let events = try parser.parse(Array(plain.out.utf8))
        XCTAssertEqual(events, [
            ServerSentEvent(data: "event 42", id: "42"),
            ServerSentEvent(data: "two\nlines", id: "43", event: "multi"),
            ServerSentEvent(data: "after the quiet", id: "44"),
        ])
        XCTAssertEqual(parser.reconnectionTime, 1500)
        XCTAssertEqual(lastIDs.value, ["41", "41"])
        server.stop()
    }
}
