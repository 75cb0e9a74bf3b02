import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

// The send queue's policies driven by a real EAGAIN. Loopback UDP never pushes back (the
// kernel frees a datagram's memory as soon as loopback takes it), so these tests send over
// an AF_UNIX SOCK_DGRAM socketpair instead: its datagrams stay charged to the sender's
// SO_SNDBUF until the peer reads them, so while the peer does not read, sendmsg fails with
// EAGAIN and libuv keeps the rest in the socket's send queue, where the policy acts. One
// end is handed to `UDP.open(descriptor:)`; the test plays the other end with plain
// system calls, on the same loop (`Descriptor.readiness`). Every check is on sequence
// numbers and counts; every wait is for a positive marker.

/// The test's end of a datagram socketpair: numbered datagrams out and in.
final class DatagramPeer {
    /// The descriptor, non-blocking.
    let fd: Int32
    /// Sequence numbers received, in arrival order.
    var received: [Int] = []
    /// Datagrams whose bytes were not the numbered payload they claimed.
    var corrupt = 0
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    init(fd: Int32) {
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Datagram `n`: its number (4 bytes, big-endian), then bytes derived from it.
    static func payload(_ n: Int, size: Int) -> [UInt8] {
        let number = UInt32(n)
        return [UInt8(number >> 24), UInt8(truncatingIfNeeded: number >> 16), UInt8(truncatingIfNeeded: number >> 8), UInt8(truncatingIfNeeded: number)]
            + (4..<max(size, 4)).map { UInt8(truncatingIfNeeded: n &* 31 &+ $0) }
    }

    static func number(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= 4 else { return nil }
        let b = Array(bytes.prefix(4))
        return Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
    }

    /// Reads every datagram waiting, until EAGAIN.
    func drain(size: Int) {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                if errno != EAGAIN && errno != EINTR { XCTFail("peer recv: errno \(errno)") }
                if errno == EINTR { continue }
                return
            }
            let bytes = buffer[0..<n]
            guard let number = DatagramPeer.number(bytes), Array(bytes) == DatagramPeer.payload(number, size: size) else {
                corrupt += 1
                continue
            }
            received.append(number)
        }
    }

    /// Sends datagram `n`; false when the socket pushes back (EAGAIN).
    func trySend(_ n: Int, size: Int) -> Bool {
        let bytes = DatagramPeer.payload(n, size: size)
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if sent == bytes.count { return true }
        if sent < 0 && errno == EAGAIN { return false }
        XCTFail("peer send: \(sent), errno \(errno)")
        return false
    }
}

/// Whether `got` is exactly `expected` in order; else what differs, briefly (a failure
/// never prints thousands of numbers).
func sameSequence(_ got: [Int], _ expected: Range<Int>) -> (Bool, String) {
    if got.elementsEqual(expected) { return (true, "") }
    let seen = Set(got)
    let missing = expected.filter { !seen.contains($0) }
    let duplicates = got.count - seen.count
    let firstDisorder = zip(got, got.dropFirst()).first { $0.0 >= $0.1 }
    return (
        false,
        "\(got.count) received of \(expected.count); missing \(missing.count): \(missing.prefix(10)); "
            + "duplicates \(duplicates); first out of order \(firstDisorder.map { "\($0.0) then \($0.1)" } ?? "none")"
    )
}

final class UDPBackpressureTests: XCTestCase {
    /// Datagram size in these tests.
    let size = 512

    /// A connected AF_UNIX datagram pair: (ours, for `UDP.open(descriptor:)`, the peer's).
    /// Small send buffers keep the numbers small; the kernel doubles what is asked.
    func datagramPair(sendBuffer: Int32 = 16_384) throws -> (Int32, DatagramPeer) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw XCTSkip("socketpair(AF_UNIX, SOCK_DGRAM): errno \(errno)")
        }
        var bufferSize = sendBuffer
        for fd in fds {
            XCTAssertEqual(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size)), 0)
        }
        return (fds[0], DatagramPeer(fd: fds[1]))
    }

    /// Opens `fd` as a UDP socket on `loop`, running the loop until it is open.
    func open(descriptor fd: Int32, options: UDPOptions = UDPOptions(), on loop: EventLoop)
        -> (UDPSocket?, Disposable, EventRecorder<UDPSocket>)
    {
        let recorder = EventRecorder<UDPSocket>()
        let subscription = recorder.subscribe(UDP.open(descriptor: fd, options: options, on: loop))
        _ = loop.run(until: { recorder.count > 0 }, timeout: 60)
        return (recorder.values.first, subscription, recorder)
    }

    /// Bytes waiting in libuv's send queue (loop thread).
    func queuedBytes(_ socket: UDPSocket) -> Int { uv_udp_get_send_queue_size(socket.handle.pointer) }

    func testAConnectedUnixDatagramSocketSendsWithoutAnAddressAndHearsItsPeer() throws {
        let loop = try EventLoop()
        let (fd, peer) = try datagramPair()
        defer { close(peer.fd) }
        let (opened, subscription, events) = open(descriptor: fd, on: loop)
        let socket = try XCTUnwrap(opened, "\(events.events)")
        XCTAssertEqual(socket.localAddress.family, .unix)
        XCTAssertEqual(socket.localAddress.description, "unix:(unnamed)")
        XCTAssertEqual(socket.peerAddress?.description, "unix:(unnamed)")

        // Out: connected sends, no destination.
        let sends = EventRecorder<Void>()
        _ = sends.subscribe(socket.send(DatagramPeer.payload(0, size: size)).concat(socket.send(DatagramPeer.payload(1, size: size))))
        XCTAssertTrue(loop.run(until: { sends.terminated }, timeout: 60))
        XCTAssertTrue(completedOnly(sends), "\(sends.events)")
        peer.drain(size: size)
        XCTAssertEqual(peer.received, [0, 1])

        // In: from the peer; a reply goes back to it (the peer's address means "connected").
        let incoming = EventRecorder<Datagram>()
        let receiving = incoming.subscribe(socket.datagrams.take(2))
        XCTAssertTrue(peer.trySend(2, size: size) && peer.trySend(3, size: size))
        XCTAssertTrue(loop.run(until: { incoming.terminated }, timeout: 60))
        XCTAssertEqual(incoming.values.compactMap { DatagramPeer.number($0.payload[...]) }, [2, 3])
        XCTAssertEqual(incoming.values.map(\.sender), [socket.peerAddress!, socket.peerAddress!])
        let reply = EventRecorder<Void>()
        _ = reply.subscribe(incoming.values[0].reply(DatagramPeer.payload(4, size: size)))
        XCTAssertTrue(loop.run(until: { reply.terminated }, timeout: 60))
        XCTAssertTrue(completedOnly(reply), "\(reply.events)")
        peer.drain(size: size)
        XCTAssertEqual(peer.received, [0, 1, 4])
        XCTAssertEqual(peer.corrupt, 0)

        // Another destination on a connected socket is refused by the kernel's rule.
        let elsewhere = EventRecorder<Void>()
        _ = elsewhere.subscribe(socket.send([1], to: SocketAddress(numericHost: "127.0.0.1", port: 9)!))
        XCTAssertTrue(loop.run(until: { elsewhere.terminated }, timeout: 60))
        XCTAssertEqual((elsewhere.error as? UVError)?.name, "EISCONN", "\(elsewhere.events)")

        receiving.dispose()
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertTrue(socket.isClosed)
    }

    func testDescriptorsThatCannotBeOpenedAreClearErrorsAndStayTheCallers() throws {
        let loop = try EventLoop()
        // A stream socket: EINVAL, and the descriptor is still open afterwards.
        let stream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(stream, 0)
        let (_, _, streamEvents) = open(descriptor: stream, on: loop)
        let streamError = try XCTUnwrap(streamEvents.error as? UVError, "\(streamEvents.events)")
        XCTAssertEqual(streamError.name, "EINVAL")
        XCTAssertEqual(streamError.operation, "open descriptor (not a datagram socket)")
        XCTAssertEqual(streamError.target, "fd \(stream)")
        XCTAssertNotEqual(fcntl(stream, F_GETFD), -1, "a failed open leaves the descriptor open")
        close(stream)

        // A pipe: not a socket at all.
        var pipeFDs: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        let (_, _, pipeEvents) = open(descriptor: pipeFDs[0], on: loop)
        XCTAssertEqual((pipeEvents.error as? UVError)?.name, "ENOTSOCK", "\(pipeEvents.events)")
        close(pipeFDs[0])
        close(pipeFDs[1])

        // An option that only binding can apply.
        let (fd, peer) = try datagramPair()
        let (_, _, optionEvents) = open(descriptor: fd, options: UDPOptions(reuseAddress: true), on: loop)
        XCTAssertEqual((optionEvents.error as? UVError)?.name, "EINVAL", "\(optionEvents.events)")
        // An option the socket cannot take (multicast on a Unix socket) fails after libuv
        // took its duplicate; the caller's descriptor is still untouched.
        let (_, _, multicastEvents) = open(descriptor: fd, options: UDPOptions(multicastTTL: 4), on: loop)
        XCTAssertNotNil(multicastEvents.error as? UVError, "\(multicastEvents.events)")
        XCTAssertNotEqual(fcntl(fd, F_GETFD), -1)

        // An unconnected datagram socket has no peer: a send without destination says so.
        let (socketOpened, subscription, _) = open(descriptor: fd, on: loop)
        XCTAssertNotNil(socketOpened)
        let unconnected = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let (udpOpened, udpSubscription, udpEvents) = open(descriptor: unconnected, on: loop)
        let udp = try XCTUnwrap(udpOpened, "\(udpEvents.events)")
        XCTAssertNil(udp.peerAddress)
        XCTAssertEqual(udp.localAddress.family, .ipv4)
        let nowhere = EventRecorder<Void>()
        _ = nowhere.subscribe(udp.send([1, 2, 3]))
        XCTAssertTrue(loop.run(until: { nowhere.terminated }, timeout: 60))
        XCTAssertEqual((nowhere.error as? UVError)?.name, "EDESTADDRREQ", "\(nowhere.events)")

        // A descriptor that is not open.
        let (_, _, closedEvents) = open(descriptor: 1_000_000, on: loop)
        XCTAssertEqual((closedEvents.error as? UVError)?.name, "EBADF", "\(closedEvents.events)")

        udpSubscription.dispose()
        subscription.dispose()
        close(peer.fd)
        assertLoopCleanAndClose(loop)
    }

    /// pauseSource: an echo whose peer sends without reading. The echo's send queue fills,
    /// the echo stops receiving, the peer's own sends get EAGAIN: the whole chain stalls.
    /// Once the peer reads, every datagram comes back exactly once, in order.
    func testPauseStallsTheChainOnARealEAGAINAndLosesNothing() throws {
        let loop = try EventLoop()
        let (fd, peer) = try datagramPair()
        // Not a multiple of the datagram size, so the pause falls inside a receive batch
        // (recvmmsg, 8 datagrams): stopping receiving there must not lose the rest.
        let mark = 3000
        let (opened, subscription, events) = open(
            descriptor: fd, options: UDPOptions(highWaterMark: mark, backpressure: .pauseSource), on: loop)
        let socket = try XCTUnwrap(opened, "\(events.events)")
        let echo = EventRecorder<Void>()
        let echoing = echo.subscribe(socket.send(socket.datagrams.map { (bytes: $0.payload, to: $0.sender) }))

        // The peer sends 0..<count as fast as its socket lets it, and does not read. It
        // ends with datagram `count`: once that is back, everything before it is (the
        // echo keeps order), lost or not.
        let count = 3000
        var next = 0
        var pushedBack = 0
        var writer: Disposable?
        writer = Descriptor.readiness(peer.fd, events: .writable, on: loop).subscribe(
            next: { _ in
                while next <= count {
                    if peer.trySend(next, size: self.size) { next += 1 } else { pushedBack += 1; break }
                }
                if next > count { writer?.dispose() }
            }, error: { XCTFail("peer writer: \($0)") })

        // Stalled: the echo paused its receiving, and the peer's sends meet EAGAIN.
        XCTAssertTrue(
            loop.run(until: { socket.isReceivingPausedBySends && pushedBack > 0 }, timeout: 120),
            "paused \(socket.isReceivingPausedBySends), peer pushed back \(pushedBack) times, sent \(next)")
        XCTAssertLessThan(next, count, "the peer was held back before sending everything")
        XCTAssertGreaterThanOrEqual(queuedBytes(socket), mark, "the echo's own sends met EAGAIN and queued up to the mark")
        XCTAssertEqual(peer.received, [], "the peer has read nothing yet")
        XCTAssertFalse(echo.terminated)

        // The peer reads (through a second descriptor for the same socket, as one
        // descriptor can be watched only once per loop).
        let readFD = dup(peer.fd)
        let reader = Descriptor.readiness(readFD, events: .readable, on: loop).subscribe(
            next: { _ in peer.drain(size: self.size) }, error: { XCTFail("peer reader: \($0)") })
        XCTAssertTrue(loop.run(until: { peer.received.last == count }, timeout: 300), "echoed \(peer.received.count) of \(count + 1)")
        let (inOrder, difference) = sameSequence(peer.received, 0..<(count + 1))
        XCTAssertTrue(inOrder, "every datagram back exactly once, in order: \(difference)")
        XCTAssertEqual(peer.corrupt, 0)
        XCTAssertEqual(socket.receivedDatagrams, count + 1)
        XCTAssertEqual(socket.droppedSends, 0)
        XCTAssertEqual(socket.failedSends, 0)
        XCTAssertGreaterThan(pushedBack, 0)
        XCTAssertFalse(socket.isReceivingPausedBySends, "receiving resumed once the queue drained")
        XCTAssertEqual(queuedBytes(socket), 0)
        XCTAssertFalse(echo.terminated, "\(echo.events)")

        reader.dispose()
        writer?.dispose()
        echoing.dispose()
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        close(readFD)
        close(peer.fd)
    }

    /// dropAndCount: sends past the mark are refused and counted; what the peer receives
    /// is exactly the rest, in order.
    func testDropCountsExactlyWhatThePeerNeverReceives() throws {
        let loop = try EventLoop()
        let (fd, peer) = try datagramPair()
        let mark = 4096
        let (opened, subscription, events) = open(
            descriptor: fd, options: UDPOptions(highWaterMark: mark, backpressure: .dropAndCount), on: loop)
        let socket = try XCTUnwrap(opened, "\(events.events)")
        let to = try XCTUnwrap(socket.peerAddress)

        // 2,000 datagrams offered at once while the peer does not read.
        let count = 2000
        let sent = EventRecorder<Void>()
        _ = sent.subscribe(socket.send(Signal.fromArray((0..<count).map { (bytes: DatagramPeer.payload($0, size: size), to: to) })))
        let dropped = socket.droppedSends
        XCTAssertGreaterThan(dropped, 0)
        XCTAssertLessThan(dropped, count)
        XCTAssertEqual(socket.droppedBytes, dropped * size)
        XCTAssertGreaterThanOrEqual(queuedBytes(socket), mark, "the kernel said EAGAIN and the queue filled to the mark")
        XCTAssertFalse(sent.terminated, "the queued datagrams wait for the peer")

        // The peer reads; the send completes once the queue has gone out.
        let readFD = dup(peer.fd)
        let reader = Descriptor.readiness(readFD, events: .readable, on: loop).subscribe(
            next: { _ in peer.drain(size: self.size) }, error: { XCTFail("peer reader: \($0)") })
        XCTAssertTrue(loop.run(until: { sent.terminated }, timeout: 120))
        XCTAssertTrue(completedOnly(sent), "\(sent.events)")
        // A last datagram marks the end: once it is in, everything before it is.
        _ = socket.send(DatagramPeer.payload(count, size: size)).subscribe(error: { XCTFail("marker: \($0)") })
        XCTAssertTrue(loop.run(until: { peer.received.last == count }, timeout: 120), "received \(peer.received.count)")
        let received = Array(peer.received.dropLast())
        XCTAssertEqual(received.count, count - dropped, "dropped = sent - received, exactly")
        let (inOrder, difference) = sameSequence(received, 0..<received.count)
        XCTAssertTrue(inOrder, "in order; the drops are the ones after the queue filled: \(difference)")
        XCTAssertEqual(socket.droppedSends, dropped, "nothing dropped once the peer read")
        XCTAssertEqual(peer.corrupt, 0)

        reader.dispose()
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        close(readFD)
        close(peer.fd)
    }

    /// disconnect, and pauseSource with a source that cannot pause (past four times the
    /// mark): the send fails with WriteQueueFullError, the socket closes, the open signal
    /// completes; the peer has exactly the datagrams the kernel took before the queue.
    func testOverflowClosesTheSocketWithWriteQueueFullError() throws {
        for (policy, limit) in [(BackpressurePolicy.disconnect, 4096), (.pauseSource, 4 * 4096)] {
            let loop = try EventLoop()
            let (fd, peer) = try datagramPair()
            let (opened, subscription, events) = open(
                descriptor: fd, options: UDPOptions(highWaterMark: 4096, backpressure: policy), on: loop)
            let socket = try XCTUnwrap(opened, "\(events.events)")
            let to = try XCTUnwrap(socket.peerAddress)

            let count = 2000
            let sent = EventRecorder<Void>()
            _ = sent.subscribe(socket.send(Signal.fromArray((0..<count).map { (bytes: DatagramPeer.payload($0, size: size), to: to) })))
            XCTAssertTrue(loop.run(until: { sent.terminated && events.terminated }, timeout: 60), "\(policy): \(sent.events) \(events.events)")
            let error = try XCTUnwrap(sent.error as? WriteQueueFullError, "\(policy): \(sent.events)")
            XCTAssertEqual(error.policy, policy)
            XCTAssertEqual(error.limit, limit)
            XCTAssertGreaterThanOrEqual(error.queuedBytes, limit)
            XCTAssertEqual(error.target, "unix:(unnamed)")
            XCTAssertEqual(
                error.description,
                "write queue full: \(error.queuedBytes) bytes queued, limit \(limit) (policy \(policy)) on unix:(unnamed); connection closed")
            XCTAssertTrue(socket.isClosed)
            XCTAssertNil(events.error, "the open signal completes when the socket closes by itself: \(events.events)")

            // The kernel holds what went out before EAGAIN; the queued ones were cancelled.
            peer.drain(size: size)
            XCTAssertGreaterThan(peer.received.count, 0, "\(policy)")
            let (inOrder, difference) = sameSequence(peer.received, 0..<peer.received.count)
            XCTAssertTrue(inOrder, "\(policy): the datagrams before the queue, in order: \(difference)")
            XCTAssertLessThan(peer.received.count + error.queuedBytes / size, count, "\(policy)")
            XCTAssertEqual(peer.corrupt, 0)

            let late = EventRecorder<Void>()
            _ = late.subscribe(socket.send([1]))
            XCTAssertTrue(loop.run(until: { late.terminated }, timeout: 60))
            XCTAssertEqual((late.error as? UVError)?.name, "EBADF", "\(late.events)")
            subscription.dispose()
            assertLoopCleanAndClose(loop)
            close(peer.fd)
        }
    }
}
