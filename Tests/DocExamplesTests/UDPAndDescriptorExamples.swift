import Glibc
import XCTest

import ReactiveUV

// UDPAndDescriptors.md's examples: a UDP echo server, and a descriptor another library
// owns watched for readiness.

/// UDPAndDescriptors.md, "UDP": each datagram goes back to its sender from the bound port.
func udpEchoServer(port: Int, onBound: @escaping (UDPSocket) -> Void) -> Disposable {
    UDP.bind(host: "127.0.0.1", port: port, onBound: onBound)
        .flattenMap { d in d.reply(d.payload) }
        .subscribe()
}

/// UDPAndDescriptors.md, "UDP": a socket of your own sends one datagram and waits for the
/// answer. The socket is open while subscribed, so `take(1)` after the answer ends it all.
func udpAsk(_ question: String, server: SocketAddress) -> Signal<String> {
    UDP.open(host: "127.0.0.1", port: 0)
        .flattenMap { socket in
            socket.send(Array(question.utf8), to: server)
                .then { socket.datagrams }
        }
        .map { String(decoding: $0.payload, as: UTF8.self) }
        .take(1)                       // the answer; then the socket closes
}

/// UDPAndDescriptors.md, "Descriptors another library owns": tells when `fd` is readable;
/// the descriptor stays its owner's (never read or closed here).
func whenReadable(_ fd: Int32, print: @escaping (String) -> Void) -> Disposable {
    Descriptor.readiness(fd, events: .readable)
        .take(1)
        .subscribe(next: { events in print("ready: \(events.contains(.readable) ? "readable" : "other")") })
}

final class UDPAndDescriptorExampleTests: XCTestCase {
    func testTheUDPEchoServerAnswersADatagramFromItsBoundPort() {
        let before = MainLoopHoldings.now
        var bound: SocketAddress?
        let server = udpEchoServer(port: 0, onBound: { bound = $0.localAddress })
        XCTAssertTrue(runMainLoop { bound != nil })
        var answers: [String] = []
        var completed = false
        var failure: Error?
        let client = udpAsk("ping", server: bound!)
            .subscribe(next: { answers.append($0) }, error: { failure = $0 }, completed: { completed = true })
        XCTAssertTrue(runMainLoop { completed || failure != nil }, "answers so far: \(answers)")
        XCTAssertNil(failure)
        XCTAssertEqual(answers, ["ping"])
        client.dispose()
        server.dispose()
        assertMainLoopHandlesClosed(since: before)
    }

    func testAPipeIsToldReadableOnceWrittenAndStaysItsOwners() {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let before = MainLoopHoldings.now
        let printed = Printed()
        let watch = whenReadable(fds[0], print: printed.print)
        XCTAssertEqual(write(fds[1], "x", 1), 1)
        XCTAssertTrue(runMainLoop { !printed.lines.isEmpty })
        XCTAssertEqual(printed.lines, ["ready: readable"])
        watch.dispose()
        assertMainLoopHandlesClosed(since: before)
        // The byte is still there: the watch never read it.
        var byte: UInt8 = 0
        XCTAssertEqual(read(fds[0], &byte, 1), 1)
        XCTAssertEqual(byte, UInt8(ascii: "x"))
    }
}

/// UDPAndDescriptors.md, "UDP": a multicast listener (compiled, not run: multicast on a
/// test machine's interfaces is not something a test may count on).
func multicastListener() -> Disposable {
    UDP.open(host: "0.0.0.0", port: 5000, options: UDPOptions(reuseAddress: true, multicastGroups: ["239.1.2.3"]))
        .flattenMap { socket in socket.datagrams }
        .subscribeNext { d in print(d.sender, d.payload.count) }
}
