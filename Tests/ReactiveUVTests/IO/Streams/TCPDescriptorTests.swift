import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// `TCP.listen(descriptor:)`: a listening socket made outside the library (as systemd's
/// socket activation makes one) served by the library, and every descriptor that is not
/// one refused with the caller's descriptor left as it was.
final class TCPDescriptorTests: XCTestCase {
    /// A TCP socket bound to 127.0.0.1 on a free port and, when `listening`, listening:
    /// its descriptor and port.
    static func boundSocket(listening: Bool) -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                precondition(bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0)
            }
        }
        if listening { precondition(Glibc.listen(fd, 16) == 0) }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// The (device, inode) a descriptor names, or nil when it names nothing.
    static func identity(_ fd: Int32) -> (UInt64, UInt64)? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    func testServesASocketMadeElsewhereIncludingAConnectionQueuedBeforeSubscribingAndOwnsIt() throws {
        let loop = try EventLoop()
        let (fd, port) = Self.boundSocket(listening: true)
        let before = try XCTUnwrap(Self.identity(fd))
        // A client the kernel queued before anyone accepted: as under socket activation,
        // where the first client's connect is what starts the service.
        let early = connectBlockingClient(port: port)
        XCTAssertGreaterThanOrEqual(early, 0, "connected into the backlog")
        writeAll(early, "early\n")
        shutdown(early, Int32(SHUT_WR))

        var listeningOn: SocketAddress?
        var descriptorAfterListening: (UInt64, UInt64)?
        let server = Recorder<Void>()
        let subscription = server.subscribe(
            TCP.listen(descriptor: fd, on: loop, onListening: { address in
                listeningOn = address
                descriptorAfterListening = Self.identity(fd)
            })
            .flattenMap { echo($0) })
        XCTAssertTrue(loop.run(until: { listeningOn != nil || server.terminated }, timeout: 30), "listening")
        XCTAssertNil(server.error)
        XCTAssertEqual(listeningOn?.host, "127.0.0.1")
        XCTAssertEqual(listeningOn?.port, port, "the socket's own address")
        // The listener took a duplicate and closed `fd`: the number no longer names the
        // socket (it may name nothing, or something another thread opened since).
        XCTAssertFalse(descriptorAfterListening.map { $0 == before } ?? false, "fd was closed once listening")

        // And a client made through the library after listening started.
        let later = Recorder<[UInt8]>()
        later.subscribe(roundTrip(TCP.connect(host: "127.0.0.1", port: port, on: loop), [Array("later\n".utf8)]))
        XCTAssertTrue(loop.run(until: { later.terminated }, timeout: 30), "the later client finished")
        XCTAssertEqual(later.values, [Array("later\n".utf8)])
        XCTAssertTrue(later.completed)
        // The queued client is accepted and echoed: read (without blocking, the loop runs
        // on this thread) until the server's shutdown ends the echo.
        var echoed: [UInt8] = []
        var ended = false
        var buffer = [UInt8](repeating: 0, count: 64)
        let deadline = csys_monotonic_ns() + 30_000_000_000
        while !ended && csys_monotonic_ns() < deadline {
            loop.runNoWait()
            let n = recv(early, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { echoed += buffer[0..<n] } else if n == 0 { ended = true } else { usleep(1000) }
        }
        XCTAssertTrue(ended, "the server ended the early client's echo")
        XCTAssertEqual(String(decoding: echoed, as: UTF8.self), "early\n")
        close(early)

        // Disposing closes the only copy of the socket left: the port is closed.
        subscription.dispose()
        XCTAssertTrue(waitForHandlesToClose(loop), "listener closed")
        let refused = connectBlockingClient(port: port)
        XCTAssertEqual(refused, -1, "nothing listens once the subscription is disposed")
        if refused >= 0 { close(refused) }
        XCTAssertNil(server.error)
        assertAllHandlesClosedAndClose(loop)
    }

    func testRefusesWhatIsNotABoundStreamSocketAndLeavesTheDescriptorAlone() throws {
        let loop = try EventLoop()
        let udp = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let unbound = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let unix = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var pipeEnds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeEnds), 0)
        // A number that names nothing (far above any descriptor this process opens).
        let closed: Int32 = 1_000_000
        let cases: [(fd: Int32, code: Int32, what: String)] = [
            (udp, UV_EINVAL.rawValue, "a datagram socket"),
            (unbound, UV_EINVAL.rawValue, "an unbound stream socket"),
            (unix, UV_EAFNOSUPPORT.rawValue, "a Unix stream socket"),
            (pipeEnds[0], UV_ENOTSOCK.rawValue, "a pipe"),
            (closed, UV_EBADF.rawValue, "a closed descriptor"),
        ]
        for (fd, code, what) in cases {
            let before = Self.identity(fd)
            let recorder = Recorder<TCPConnection>()
            recorder.subscribe(TCP.listen(descriptor: fd, on: loop, onListening: { _ in XCTFail("\(what) listened") }))
            XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 30), "\(what): an answer")
            let error = recorder.error as? UVError
            XCTAssertEqual(error?.code, code, "\(what): \(String(describing: recorder.error))")
            XCTAssertEqual(error?.target, "fd \(fd)", "\(what): the error names the descriptor")
            XCTAssertTrue(recorder.values.isEmpty)
            let after = Self.identity(fd)
            XCTAssertEqual(after.map { "\($0)" }, before.map { "\($0)" }, "\(what): the descriptor is still the caller's, unchanged")
        }
        // The unbound socket was not listened on (listen(2) would have bound it).
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(unbound, $0, &length) }
        }
        XCTAssertEqual(address.sin_port, 0, "the unbound socket is still unbound")
        for fd in [udp, unbound, unix, pipeEnds[0], pipeEnds[1]] { XCTAssertEqual(close(fd), 0, "fd \(fd) was still open") }
        assertAllHandlesClosedAndClose(loop)
    }
}
