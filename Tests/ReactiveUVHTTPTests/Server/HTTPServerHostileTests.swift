import CSystemShims
import Foundation
import XCTest

import ReactiveUV
@testable import ReactiveUVHTTP

/// Malformed and hostile clients on raw sockets: the exact status, then the close; timeouts;
/// header injection; upgrade; a reset mid-response.
final class HTTPServerHostileTests: XCTestCase {
    func testMalformedAndSmugglingRequestsGetTheirStatusThenTheClose() throws {
        var options = HTTPServerOptions()
        options.maxBodyBytes = 1000
        let server = try HTTPTestServer(options: options, handler: HTTPTestApp.handle)
        let cases: [(String, String, Int)] = [
            ("CL and TE", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n", 400),
            ("two lengths", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", 400),
            ("coding not ending in chunked", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400),
            ("space before a colon", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\nabc", 400),
            ("LF in the target", "GET /a\nb HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("chunk size overflow", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\nx\r\n", 400),
            ("bad chunk size", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400),
            ("bare LF", "GET / HTTP/1.1\nHost: x\n\n", 400),
            ("NUL in a value", "GET / HTTP/1.1\r\nHost: a\u{0}b\r\n\r\n", 400),
            ("CR in a value", "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),
            ("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400),
            ("garbage", "\u{16}\u{3}\u{1}\u{2}\u{0}\r\n\r\n", 400),
            ("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
            ("HTTP/3.0", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505),
            ("long URL", "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\n\r\n", 414),
            ("big header section", "GET / HTTP/1.1\r\n" + String(repeating: "X-Pad: " + String(repeating: "p", count: 1000) + "\r\n", count: 70) + "\r\n", 431),
            ("declared body too large", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413),
            ("chunked body too large", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + String(repeating: "z", count: 1024) + "\r\n", 413),
        ]
        for (name, request, status) in cases {
            let client = try RawClient(port: server.port)
            client.send(request)
            let reply = client.readToEnd()
            XCTAssertTrue(reply.text.hasPrefix("HTTP/1.1 \(status) "), "\(name): \(reply.text.prefix(200))")
            XCTAssertTrue(reply.text.contains("Connection: close\r\n"), "\(name)")
            XCTAssertTrue(reply.ended, "\(name): the connection must close")
            XCTAssertEqual(reply.text.occurrences(of: "HTTP/1.1 "), 1, "\(name): one answer, nothing smuggled")
        }
        // Only the requests whose heads were sound and whose bodies went wrong later reached
        // the application (chunk size overflow, bad chunk size, chunked body too large);
        // refused heads never.
        XCTAssertEqual(server.requests.value, ["POST /echo", "POST /echo", "POST /echo"], "refused heads never reach the application")
        server.stop()
    }

    func testAnErrorAfterPipelinedRequestsComesAfterTheirAnswers() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /stream?n=1 HTTP/1.1\r\n\r\nGET / HTTP/1.1\nHost: x\n\nGET / HTTP/1.1\r\n\r\n")
        let reply = client.readToEnd()
        XCTAssertTrue(reply.ended)
        let statuses = reply.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
        XCTAssertEqual(statuses, ["200", "200", "400"], reply.text)
        server.stop()
    }

    func testAnswersFromOtherThreadsInReverseOrderGoOutInRequestOrder() throws {
        let background = Scheduler.background()
        let server = try HTTPTestServer { request in
            // The first request is answered last, each from a background thread.
            let n = Int(request.path.dropFirst()) ?? 0
            _ = background.afterDelay(Double(3 - n) * 0.1) {
                request.respond(text: "answer \(n);")
            }
        }
        let client = try RawClient(port: server.port)
        client.send("GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\nGET /3 HTTP/1.1\r\nConnection: close\r\n\r\n")
        let reply = client.readToEnd()
        XCTAssertTrue(reply.ended)
        let bodies = reply.text.components(separatedBy: "\r\n\r\n").dropFirst().map { $0.prefix(9) }
        XCTAssertEqual(bodies, ["answer 1;", "answer 2;", "answer 3;"], reply.text)
        server.stop()
    }

    func testAHeaderValueWithCRLFIsRefusedNeverWritten() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let client = try RawClient(port: server.port)
        client.send("GET /inject HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let reply = client.readToEnd()
        XCTAssertTrue(reply.text.hasPrefix("HTTP/1.1 500 "), reply.text)
        XCTAssertFalse(reply.text.contains("Set-Cookie"), reply.text)
        XCTAssertFalse(reply.text.contains("never"), reply.text)
        server.stop()
    }

    func testSlowHeadsAndIdleConnectionsAreClosed() throws {
        var options = HTTPServerOptions()
        options.headTimeout = 0.5
        options.idleTimeout = 0.5
        let server = try HTTPTestServer(options: options, handler: HTTPTestApp.handle)
        // Slowloris: a head that never ends gets no answer, and the connection closes.
        let slow = try RawClient(port: server.port)
        slow.send("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n")
        let cut = slow.readToEnd()
        XCTAssertTrue(cut.ended)
        XCTAssertEqual(cut.text, "")
        // Idle keep-alive: answered, then closed once idle.
        let idle = try RawClient(port: server.port)
        idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let answered = idle.readToEnd()
        XCTAssertTrue(answered.ended)
        XCTAssertTrue(answered.text.hasSuffix("Hello, World!"), answered.text)
        XCTAssertTrue(answered.text.contains("Connection: keep-alive"), answered.text)
        XCTAssertTrue(waitFor { server.sync { server.loopConnections() } == 0 })
        server.stop()
    }

    func testUpgradeHandsOverTheConnectionAndTheBytesReadPastTheHead() throws {
        let server = try HTTPTestServer { request in
            guard request.headers.hasToken("Connection", "upgrade") else { return HTTPTestApp.handle(request) }
            _ = request.upgrade(headers: ["Upgrade": "echo", "Connection": "Upgrade"]).subscribeNext { upgrade in
                // The new protocol: echo, starting with the bytes that came with the head.
                _ = upgrade.transport.write(Array("leftover=".utf8) + upgrade.leftover + [10]).subscribe()
                _ = upgrade.transport.send(upgrade.transport.reads).subscribe()
            }
        }
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly")
        let head = client.read(until: "leftover=early\n")
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK"), head.debugDescription)
        XCTAssertTrue(head.contains("Hello, World!HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nleftover=early\n"), head)
        client.send("ping")
        XCTAssertEqual(client.read(until: "ping"), "ping")
        server.stop()
    }

    func testARefusedUpgradeIsAnsweredThenTheConnectionCloses() throws {
        let server = try HTTPTestServer { request in
            request.respond(status: 426, headers: ["Sec-WebSocket-Version": "13"], body: Array("upgrade refused".utf8))
        }
        let client = try RawClient(port: server.port)
        client.send("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 8\r\n\r\n\u{81}\u{80}GET / HTTP/1.1\r\n\r\n")
        let reply = client.readToEnd()
        XCTAssertTrue(reply.ended)
        XCTAssertTrue(reply.text.hasPrefix("HTTP/1.1 426 Upgrade Required\r\n"), reply.text)
        XCTAssertTrue(reply.text.contains("Sec-WebSocket-Version: 13\r\n"), reply.text)
        XCTAssertTrue(reply.text.contains("Connection: close\r\n"), reply.text)
        XCTAssertEqual(reply.text.occurrences(of: "HTTP/1.1 "), 1, "bytes after a refused upgrade are never read as HTTP")
        XCTAssertEqual(server.requests.value, ["GET /ws"])
        server.stop()
    }

    func testAClientResettingMidResponseDoesNotDisturbAnother() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let streaming = try RawClient(port: server.port)
        streaming.send("GET /forever HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(streaming.read(until: "xxxxxxxx").contains("Transfer-Encoding: chunked"))
        let other = try RawClient(port: server.port)
        other.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = other.read(until: "Hello, World!")
        XCTAssertTrue(first.hasSuffix("Hello, World!"), first.debugDescription)
        streaming.reset()
        XCTAssertTrue(waitFor { server.sync { server.loopConnections() } == 1 }, "the reset connection is closed")
        other.send("GET /stream?n=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let after = other.readToEnd()
        XCTAssertTrue(after.text.hasSuffix("\r\n\r\n8\r\nchunk 0\n\r\n8\r\nchunk 1\n\r\n0\r\n\r\n"), after.text)
        server.stop()
    }
}

extension HTTPTestServer {
    /// Accepted TCP connections still open on the server's loop: TCP handles but the
    /// listener's (call on the loop's thread, through `sync`).
    func loopConnections() -> Int { httpTCPHandleCount(loop) - 1 }
}
