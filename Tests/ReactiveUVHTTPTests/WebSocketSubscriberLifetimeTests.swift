import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// `WebSocketConnection.receive` sends each message to the `messages` subscriber without
/// retaining it: a subscriber cleared while its handler runs (it disposed itself) is parked
/// until the send returned. This takes that path (disposing and subscribing again inside
/// the handler, which also stops and restarts the transport's reads inside a read's
/// delivery) and checks that the next message reaches the new subscription.
final class WebSocketSubscriberLifetimeTests: XCTestCase {
    private final class Box {
        // Thread-safety: the test thread only, which also runs the loop.
        var first: Disposable?
        var second: Disposable?
        var firstValues: [WebSocketMessage] = []
        var secondValues: [WebSocketMessage] = []
        var client: WebSocketConnection?
        var retiredDuringHandler = -1
        var server: WebSocketConnection?
    }

    func testSubscriberDisposingItselfAndResubscribingInsideItsHandler() throws {
        let loop = try EventLoop()
        let box = Box()
        let server = WebSocketTestServer(on: loop) { ws in
            box.first = ws.messages.subscribe(next: { message in
                box.firstValues.append(message)
                box.first?.dispose()
                box.retiredDuringHandler = ws.retiredSubscribers.count
                box.second = ws.messages.subscribe(next: { box.secondValues.append($0) })
            })
            box.server = ws
            return .never()
        }
        XCTAssertTrue(loop.run(until: { server.port != 0 || server.listenError != nil }, timeout: 30))
        XCTAssertNil(server.listenError)
        let connecting = WebSocket.connect(host: "127.0.0.1", port: server.port, path: "/ws", on: loop)
            .subscribe(next: { box.client = $0 })
        XCTAssertTrue(loop.run(until: { box.client != nil }, timeout: 30), "connected")
        _ = box.client?.send(text: "one").subscribe()
        XCTAssertTrue(loop.run(until: { box.firstValues.count == 1 && box.second != nil }, timeout: 30))
        XCTAssertEqual(box.retiredDuringHandler, 1, "the disposed subscriber was parked during the send")
        XCTAssertEqual(box.server?.retiredSubscribers.count, 0, "and released after it")
        _ = box.client?.send(text: "two").subscribe()
        XCTAssertTrue(loop.run(until: { box.secondValues.count == 1 }, timeout: 30))
        XCTAssertEqual(box.firstValues, [.text("one")])
        XCTAssertEqual(box.secondValues, [.text("two")])
        box.client?.close()
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30), "closed")
        box.second?.dispose()
        box.client = nil
        box.server = nil
        connecting.dispose()
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    /// An echo (`send(messages)`, whose source is subscribed by the connection's own
    /// forwarder, and whose reads feed the connection) must leave nothing alive once the
    /// connection closed: no cycle through the forwarder, the frames' subscriber or the
    /// reads' subscription keeps the connection.
    func testAnEchoConnectionIsFreedOnceItClosed() throws {
        let loop = try EventLoop()
        let box = Box()
        weak var weakServer: WebSocketConnection?
        let server = WebSocketTestServer(on: loop) { ws in
            weakServer = ws
            return ws.send(ws.messages)
        }
        XCTAssertTrue(loop.run(until: { server.port != 0 || server.listenError != nil }, timeout: 30))
        XCTAssertNil(server.listenError)
        let connecting = WebSocket.connect(host: "127.0.0.1", port: server.port, path: "/ws", on: loop)
            .subscribe(next: { box.client = $0 })
        XCTAssertTrue(loop.run(until: { box.client != nil }, timeout: 30), "connected")
        box.first = box.client?.messages.subscribe(next: { box.firstValues.append($0) })
        for text in ["one", "two", "three"] { _ = box.client?.send(text: text).subscribe() }
        XCTAssertTrue(loop.run(until: { box.firstValues.count == 3 }, timeout: 30))
        XCTAssertEqual(box.firstValues, [.text("one"), .text("two"), .text("three")])
        box.client?.close()
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30), "closed")
        server.connections.removeAll()
        box.first?.dispose()
        box.first = nil
        box.client = nil
        connecting.dispose()
        XCTAssertTrue(loop.run(until: { weakServer == nil }, timeout: 30), "the echo connection was freed")
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    /// `receive` reaches the connection unretained while it hands a read's frames out: a
    /// handler that ends the reading and drops every reference of its own to the
    /// connection, with more frames of the same read still to come, must find the
    /// connection alive until the read is handled (the stream parks its reader while it
    /// delivers, and the transport's `closed` subscription holds the connection until the
    /// transport is gone), and the connection must be freed after.
    func testAHandlerDroppingTheConnectionMidReadLeavesItAliveUntilTheReadIsHandled() throws {
        let loop = try EventLoop()
        let box = Box()
        weak var weakServer: WebSocketConnection?
        var aliveAfterDropping: Bool?
        var serverReference: WebSocketTestServer?
        let server = WebSocketTestServer(on: loop) { ws in
            weakServer = ws
            box.first = ws.messages.subscribe(next: { message in
                box.firstValues.append(message)
                guard box.firstValues.count == 1 else { return }
                box.first?.dispose()
                box.first = nil
                ws.close()
                serverReference?.connections.removeAll()
                aliveAfterDropping = weakServer != nil
            })
            return .never()
        }
        serverReference = server
        XCTAssertTrue(loop.run(until: { server.port != 0 || server.listenError != nil }, timeout: 30))
        XCTAssertNil(server.listenError)
        let connecting = WebSocket.connect(host: "127.0.0.1", port: server.port, path: "/ws", on: loop)
            .subscribe(next: { box.client = $0 })
        XCTAssertTrue(loop.run(until: { box.client != nil }, timeout: 30), "connected")
        for text in ["one", "two", "three", "four"] { _ = box.client?.send(text: text).subscribe() }
        XCTAssertTrue(loop.run(until: { aliveAfterDropping != nil }, timeout: 30))
        XCTAssertEqual(aliveAfterDropping, true, "alive while its read is being handled")
        XCTAssertEqual(box.firstValues.first, .text("one"))
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30), "closed")
        box.client = nil
        connecting.dispose()
        XCTAssertTrue(loop.run(until: { weakServer == nil }, timeout: 30), "then freed")
        serverReference = nil
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }
}
