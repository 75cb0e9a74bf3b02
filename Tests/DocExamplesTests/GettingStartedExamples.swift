import XCTest

import ReactiveUV

// GettingStarted.md's examples as functions (their bodies are the article's code; a port
// and an `onListening` callback are parameters so the test can listen on port 0), and
// tests that run them on loopback against a client and check what comes back.

/// GettingStarted.md, "A first signal": a cold signal, filtered and mapped, subscribed
/// synchronously on this thread.
func firstSignal(print: @escaping (Any...) -> Void) {
    let numbers = Signal<Int>.create { subscriber in
        for i in 1...5 { subscriber.sendNext(i) }
        subscriber.sendCompleted()
        return nil
    }

    let subscription = numbers
        .filter { $0 % 2 == 1 }
        .map { $0 * 10 }
        .subscribe(next: { print($0) }, error: { print("failed:", $0) }, completed: { print("done") })
    // 10, 30, 50, done — synchronously, on this thread
    subscription.dispose()   // a no-op here: a terminal event already disposed it
}

/// GettingStarted.md, "Time and the loop": three ticks of the main loop's timer, then the
/// loop is stopped and `run()` returns.
func timeAndTheLoop(print: @escaping (Any...) -> Void) {
    let ticks = Signal.interval(0.5, on: Scheduler.main)
        .take(3)
        .subscribe(next: { print("tick at", $0) }, completed: { EventLoop.main.stop() })
    EventLoop.main.run()
    ticks.dispose()
}

/// GettingStarted.md, "IO as signals": an echo server that sends back every chunk until
/// the client ends its side, then ends ours, so the connection closes.
func echoServer(port: Int, onListening: @escaping (SocketAddress) -> Void, print: @escaping (String) -> Void) -> Disposable {
    let server = TCP.listen(host: "127.0.0.1", port: port, onListening: onListening)
        .flattenMap { connection in
            connection.send(connection.reads)       // every chunk back, until the client's EOF
                .then { connection.shutdown() }     // then our end of stream: the connection closes
                .catchTo(.empty())                  // one client's failure never ends the server
        }
        .subscribe(error: { print("cannot listen: \($0)") })
    return server
}

/// GettingStarted.md, "IO as signals": the same server on lines. `send` takes bytes, so a
/// signal of `String`s is mapped to bytes first (with the line break `lines` removed).
func shoutingServer(port: Int, onListening: @escaping (SocketAddress) -> Void, print: @escaping (String) -> Void) -> Disposable {
    let server = TCP.listen(host: "127.0.0.1", port: port, onListening: onListening)
        .flattenMap { connection in
            connection.send(connection.lines.map { Array("\($0.uppercased())\n".utf8) })
                .then { connection.shutdown() }
                .catchTo(.empty())
        }
        .subscribe(error: { print("cannot listen: \($0)") })
    return server
}

/// GettingStarted.md, "Following a file": the lines of a log as `tail -F` shows them,
/// filtered.
func tailErrors(path: String, print: @escaping (String) -> Void) -> Disposable {
    let errors = File.tail(path, from: .lastLines(10))    // like tail -F: rotation and truncation followed
        .filter { $0.contains("error") }
        .subscribeNext { print($0) }
    return errors
}

/// GettingStarted.md, "Errors": a refused connection is a `UVError` you catch by name.
func connectOrExplain(port: Int, print: @escaping (String) -> Void) {
    do { _ = try TCP.connect(host: "127.0.0.1", port: port).first() }
    catch UVError.connectionRefused { print("nobody listens on \(port)") }
    catch { print("failed: \(error)") }
}

/// A client for the tests: writes `text`, ends its side, and collects every byte the
/// server sends until the server ends its side (the reads complete).
func sendAndReadToEnd(port: Int, _ text: String) -> Signal<[UInt8]> {
    TCP.connect(host: "127.0.0.1", port: port)
        .flattenMap { c in c.write(text).then { c.shutdown() }.then { c.reads } }
        .collect()
        .map { $0.flatMap { $0 } }
}

final class GettingStartedExampleTests: XCTestCase {
    /// Starts `server` on port 0 and returns the port it got.
    private func listen(
        _ server: (Int, @escaping (SocketAddress) -> Void, @escaping (String) -> Void) -> Disposable, printed: Printed
    ) -> (Int, Disposable) {
        var port = 0
        let subscription = server(0, { port = $0.port }, printed.print)
        XCTAssertTrue(runMainLoop { port != 0 || !printed.lines.isEmpty }, "listening")
        return (port, subscription)
    }

    func testTheEchoServerSendsEverythingBackAndClosesAfterTheClientsEndOfStream() {
        let before = MainLoopHoldings.now
        let printed = Printed()
        let (port, server) = listen(echoServer, printed: printed)
        XCTAssertNotEqual(port, 0, "listening: \(printed.lines)")

        var reply: [UInt8]?
        var failure: Error?
        var completed = false
        let client = sendAndReadToEnd(port: port, "hello\nworld\n")
            .subscribe(next: { reply = $0 }, error: { failure = $0 }, completed: { completed = true })
        // The reads complete only when the server ended its side after the client's EOF.
        XCTAssertTrue(runMainLoop { completed || failure != nil }, "the server ended the connection")
        XCTAssertNil(failure)
        XCTAssertEqual(reply.map { String(decoding: $0, as: UTF8.self) }, "hello\nworld\n")

        // The server's side of the connection is gone too: only the listener is left.
        XCTAssertTrue(pollMainLoop { MainLoopHoldings.now.handles == before.handles + 1 }, "only the listener left")
        client.dispose()
        server.dispose()
        XCTAssertEqual(printed.lines, [])
        assertMainLoopHandlesClosed(since: before)
    }

    func testTheLinesServerSendsAStringSignalAsBytes() {
        let before = MainLoopHoldings.now
        let printed = Printed()
        let (port, server) = listen(shoutingServer, printed: printed)
        XCTAssertNotEqual(port, 0, "listening: \(printed.lines)")

        var reply: [UInt8]?
        var completed = false
        var failure: Error?
        let client = sendAndReadToEnd(port: port, "tail\ngrep\r\nlast line without a break")
            .subscribe(next: { reply = $0 }, error: { failure = $0 }, completed: { completed = true })
        XCTAssertTrue(runMainLoop { completed || failure != nil })
        XCTAssertNil(failure)
        XCTAssertEqual(reply.map { String(decoding: $0, as: UTF8.self) }, "TAIL\nGREP\nLAST LINE WITHOUT A BREAK\n")
        client.dispose()
        server.dispose()
        assertMainLoopHandlesClosed(since: before)
    }

    func testASecondServerOnTheSamePortPrintsWhyItCannotListen() {
        let before = MainLoopHoldings.now
        let printed = Printed()
        let (port, first) = listen(echoServer, printed: printed)
        XCTAssertNotEqual(port, 0)
        let second = echoServer(port: port, onListening: { _ in }, print: printed.print)
        XCTAssertTrue(runMainLoop { !printed.lines.isEmpty })
        XCTAssertEqual(printed.lines.count, 1)
        XCTAssertTrue(printed.lines[0].hasPrefix("cannot listen: EADDRINUSE"), printed.lines[0])
        second.dispose()
        first.dispose()
        assertMainLoopHandlesClosed(since: before)
    }

    func testTheTailExamplePrintsTheErrorLinesOfARealFileAsTheyAreWritten() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        append(path, "boot ok\nerror: disk full\nrequest served\n")
        let before = MainLoopHoldings.now
        let printed = Printed()
        let tail = tailErrors(path: path, print: printed.print)
        XCTAssertTrue(runMainLoop { printed.lines.count >= 1 })
        append(path, "request served\nerror: upstream timed out\n")
        XCTAssertTrue(runMainLoop { printed.lines.count >= 2 })
        // A positive marker after an absence: a line that must come, after one that must not.
        append(path, "no problem here\nerror: third\n")
        XCTAssertTrue(runMainLoop { printed.lines.count >= 3 })
        XCTAssertEqual(printed.lines, ["error: disk full", "error: upstream timed out", "error: third"])
        tail.dispose()
        assertMainLoopHandlesClosed(since: before)
    }

    func testTheFirstSignalPrintsTheOddNumbersTimesTenThenDone() {
        let printed = Printed()
        firstSignal(print: printed.printItems)
        XCTAssertEqual(printed.lines, ["10", "30", "50", "done"])
    }

    func testTheTimeExamplePrintsThreeTicksHalfASecondApartAndReturns() {
        let before = MainLoopHoldings.now
        let printed = Printed()
        let watchdog = Watchdog(seconds: 30)
        timeAndTheLoop(print: printed.printItems)
        XCTAssertFalse(watchdog.finish(), "the example stopped the loop itself")
        XCTAssertEqual(printed.lines.count, 3, "\(printed.lines)")
        XCTAssertTrue(printed.lines.allSatisfy { $0.hasPrefix("tick at ") }, "\(printed.lines)")
        assertMainLoopHandlesClosed(since: before)
    }

    func testTheErrorsExampleCatchesARefusedConnectionByName() {
        // A port nobody listens on: listen on port 0, note the port, stop listening.
        let before = MainLoopHoldings.now
        let printed = Printed()
        let (port, server) = listen(echoServer, printed: printed)
        server.dispose()
        XCTAssertTrue(pollMainLoop { MainLoopHoldings.now.handles <= before.handles })
        connectOrExplain(port: port, print: printed.print)
        XCTAssertEqual(printed.lines, ["nobody listens on \(port)"])
        // The message the articles quote beside the example.
        do { _ = try TCP.connect(host: "127.0.0.1", port: port).first() }
        catch { XCTAssertEqual("\(error)", "ECONNREFUSED (connection refused) during connect on 127.0.0.1:\(port)") }
        assertMainLoopHandlesClosed(since: before)
    }
}
