import Foundation
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// The examples of the DocC article `HTTPGuide.md`, as written there (port 0 in place of 8080,
/// ports recorded instead of printed, a 0.05 s tick instead of 1 s),
/// run against real sockets: they compile, and they do what the article says.
final class HTTPArticleExamplesTests: XCTestCase {
    func testTheServerRoutingShutdownAndClientExamples() throws {
        // The examples run as written, on the `loop` they name: here a loop thread of the
        // test's, so this thread can wait with blocking clients.
        let host = try HTTPTestServer { _ in }
        let loop = host.loop!
        // Keyed by server: listening may start in any order (name resolution is asynchronous).
        let ports = Guarded<[Int: Int]>([:])
        let drained = Guarded(false)
        let printed = Guarded<[String]>([])
        let disposables = Guarded<[Disposable]>([])
        let stop = Subject<Void>()
        host.sync {
            // --- The server (article: "The server") ---
            let hello = HTTP.listen(port: 0, on: loop, onListening: { address in ports.update { $0[0] = address.port } })
                .subscribeNext { request in
                    switch (request.method, request.path) {
                    case ("GET", "/"):
                        request.respond(headers: ["Content-Type": "text/plain"], body: Array("Hello, World!".utf8))
                    case ("POST", "/echo"):
                        request.collectedBody.subscribeNext { body in request.respond(body: body) }
                    default:
                        request.respond(status: 404, text: "not found")
                    }
                }
            // --- Routing ---
            let user = HTTPRoute("GET", "/users/:id")
            let users = HTTP.listen(port: 0, on: loop, onListening: { address in ports.update { $0[1] = address.port } })
                .route(user).subscribeNext { request, parameters in
                    request.respond(text: "user \(parameters["id"]!)")
                }
            // --- Timeouts and shutdown ---
            var options = HTTPServerOptions()
            options.shutdown = stop
            options.shutdownTimeout = 5
            let draining = HTTP.listen(port: 0, options: options, on: loop, onListening: { address in ports.update { $0[2] = address.port } })
                .subscribe(
                    next: { request in request.respond(text: "bye soon") },
                    completed: { drained.update { $0 = true } })
            // --- Server-sent events ---
            let ticks = HTTP.listen(port: 0, on: loop, onListening: { address in ports.update { $0[3] = address.port } }).subscribeNext { request in
                let start = Int(request.lastEventID ?? "0") ?? 0
                let numbers = Signal<SchedulerTime>.interval(0.05, on: request.loop.scheduler)
                    .scan(start: start) { n, _ in n + 1 }
                request.respond(events: numbers, retry: 2000, heartbeat: 15) { n in
                    ServerSentEvent(data: "tick \(n)", id: "\(n)")
                }
            }
            disposables.update { $0 = [hello, users, draining, ticks] }
        }
        XCTAssertTrue(waitFor { ports.value.count == 4 }, "\(ports.value)")
        guard ports.value.count == 4 else { return host.stop() }
        let p = (0..<4).map { ports.value[$0] ?? 0 }
        
        XCTAssertEqual(try runProgram(["curl", "-s", "http://127.0.0.1:\(p[0])/"]).out, "Hello, World!")
        XCTAssertEqual(try runProgram(["curl", "-s", "-d", "x", "http://127.0.0.1:\(p[0])/echo"]).out, "x")
        XCTAssertEqual(try runProgram(["curl", "-s", "http://127.0.0.1:\(p[1])/users/42"]).out, "user 42")
        XCTAssertEqual(try runProgram(["curl", "-s", "http://127.0.0.1:\(p[2])/"]).out, "bye soon")
        // --- The client, and the event stream read back by it ---
        host.sync {
            let client = HTTPClient(on: loop)
            let posted = client.request("POST", "http://127.0.0.1:\(p[0])/echo",
                                        headers: ["Content-Type": "application/json"],
                                        body: Array(#"{"alert":"disk full"}"#.utf8))
                .flattenMap { response in response.text }
                .subscribeNext { text in printed.update { $0.append(text) } }
            let events = client.events("http://127.0.0.1:\(p[3])/", lastEventID: "10").take(2).collect()
                .subscribeNext { events in printed.update { $0.append(events.map(\.data).joined(separator: ",")) } }
            disposables.update { $0 += [posted, events, Disposable { client.close() }] }
        }
        XCTAssertTrue(waitFor { printed.value.count == 2 }, "\(printed.value)")
        XCTAssertEqual(Set(printed.value), [#"{"alert":"disk full"}"#, "tick 11,tick 12"])
        stop.sendNext(())
        XCTAssertTrue(waitFor { drained.value })
        for d in disposables.value { d.dispose() }
        // `client.close()` runs on the loop: let it run before the loop stops, or the
        // client's pool (client -> connection -> client) outlives the loop.
        host.sync {}
        host.stop()
    }
}
