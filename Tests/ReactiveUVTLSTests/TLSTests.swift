import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVTLS

/// TLS over real loopback sockets with certificates made by `openssl` at test time: echo
/// in order, rejected certificates (expired, another name, an untrusted CA), peers that
/// speak plain text on either side, a silent server, bad key material.
final class TLSTests: XCTestCase {
    nonisolated(unsafe) static var certificates: TestCertificates!

    override class func setUp() {
        super.setUp()
        certificates = try? TestCertificates()
    }

    override class func tearDown() {
        certificates?.remove()
        super.tearDown()
    }

    var certs: TestCertificates { TLSTests.certificates }

    override func setUpWithError() throws {
        try XCTSkipIf(TLSTests.certificates == nil, "the openssl command could not make certificates")
    }

    /// An echo server over TLS on `loop`; returns its port (0 if it did not start) and its
    /// subscription; handshake failures are collected in `failures`.
    func startEchoServer(
        on loop: EventLoop, certificate: String? = nil, failures: SharedFailures = SharedFailures()
    ) -> (port: Int, subscription: Disposable, errors: Recorder<Void>) {
        var port = 0
        let errors = Recorder<Void>()
        let subscription = errors.subscribe(
            TLS.listen(
                host: "127.0.0.1", port: 0, certificate: certificate ?? certs.server, key: certs.serverKey,
                on: loop, onListening: { port = $0.port }, onHandshakeError: { failures.list.append($0) })
            .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) })
        _ = loop.run(until: { port != 0 || errors.terminated }, timeout: 60)
        return (port, subscription, errors)
    }

    func testEchoOverTLSVerifiedAgainstAPrivateCAInOrder() throws {
        let loop = try EventLoop()
        let (port, server, serverErrors) = startEchoServer(on: loop)
        XCTAssertNotEqual(port, 0, "listening: \(String(describing: serverErrors.error))")

        let lines = (0..<500).map { "line \($0) " + String(repeating: "x", count: $0 % 97) }
        var info: (String, String?) = ("", nil)
        let result = Recorder<[String]>()
        result.subscribe(
            TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost", trust: .certificateAuthorities(path: certs.ca), on: loop)
                .flattenMap { c -> Signal<[String]> in
                    info = (c.protocolVersion, c.peerSubject)
                    let sent = c.write(lines.map { $0 + "\n" }.joined()).then { c.shutdown() }.ignoreValues()
                    return Signal<[String]>.merge([sent.map { _ in [String]() }, c.lines.collect()])
                }
                .take(1))
        XCTAssertTrue(loop.run(until: { result.terminated }, timeout: 60))
        XCTAssertNil(result.error, "\(String(describing: result.error))")
        XCTAssertEqual(result.values.first ?? [], lines, "every line back, in order")
        XCTAssertTrue(info.0.hasPrefix("TLSv1."), info.0)
        XCTAssertEqual(info.1?.contains("localhost"), true, "\(String(describing: info.1))")
        server.dispose()
        XCTAssertNil(serverErrors.error)
        assertLoopCleanAndClose(loop)
    }

    func testMegabytesThroughSendAreEchoedIntactWithTheIPAddressAsServerName() throws {
        let loop = try EventLoop()
        let (port, server, _) = startEchoServer(on: loop)
        XCTAssertNotEqual(port, 0)
        // 4 MiB in 64 KiB chunks, each byte a function of its position.
        let chunks = (0..<64).map { c in (0..<65536).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ c) } }
        let expected = chunks.flatMap { $0 }
        var received: [UInt8] = []
        let result = Recorder<Void>()
        result.subscribe(
            TLS.connect(host: "127.0.0.1", port: port, trust: .certificateAuthorities(path: certs.ca), on: loop)
                .flattenMap { c -> Signal<Void> in
                    let sent = c.send(Signal.fromArray(chunks)).then { c.shutdown() }
                    let read = c.reads.map { received += $0 }.ignoreValues()
                    return Signal<Void>.merge([sent, read]).ignoreValues().concat(Signal.return(()))
                }
                .take(1))
        XCTAssertTrue(loop.run(until: { result.terminated }, timeout: 120))
        XCTAssertNil(result.error, "\(String(describing: result.error))")
        XCTAssertEqual(received.count, expected.count)
        XCTAssertTrue(received == expected, "bytes intact and in order")
        server.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testBytesThatArriveBeforeAnyoneReadsAreKeptAndShutdownEndsThePeersReads() throws {
        let loop = try EventLoop()
        var port = 0
        var accepted: TLSConnection?
        let server = TLS.listen(port: 0, certificate: certs.server, key: certs.serverKey, on: loop, onListening: { port = $0.port })
            .subscribeNext { accepted = $0 }
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 60))
        // The client writes at once and shuts down; nobody on the server reads yet.
        var lateWrite: (any Error)?
        let client = Recorder<Void>()
        let clientSubscription = client.subscribe(TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost", trust: .certificateAuthorities(path: certs.ca), on: loop)
            .flattenMap { c in
                c.write("early one\nearly two\n").then { c.shutdown() }
                    .then { c.write("too late").catch { lateWrite = $0; return .empty() } }
                    .concat(Signal.return(()))
            }
            .take(1))
        XCTAssertTrue(loop.run(until: { client.terminated && accepted != nil }, timeout: 60))
        XCTAssertNil(client.error, "\(client.events)")
        XCTAssertEqual((lateWrite as? UVError)?.name, "EPIPE", "a write after shutdown: \(String(describing: lateWrite))")
        let connection = try XCTUnwrap(accepted)
        XCTAssertTrue(connection.protocolVersion.hasPrefix("TLSv1."))

        // A later subscription gets every byte (kept in the memory BIO since the handshake),
        // then completes at the peer's close_notify, all during `subscribe`; a reader after
        // that completes at once without a value.
        let lines = Recorder<String>()
        lines.subscribe(connection.lines)
        let second = Recorder<[UInt8]>()
        second.subscribe(connection.reads)
        XCTAssertTrue(loop.run(until: { lines.terminated && second.terminated }, timeout: 60))
        XCTAssertEqual(lines.events, [.next("early one"), .next("early two"), .completed])
        XCTAssertTrue(second.completed && second.values.isEmpty, "\(second.events)")
        clientSubscription.dispose()
        server.dispose()
        assertLoopCleanAndClose(loop)
    }

    /// A header line, then the rest, from one TLS record holding every line: the lines
    /// after the header go to the next `lines` subscription (they were lost with the
    /// first, as on plain TCP).
    func testAHeaderLineThenTheRestGetsEveryLineOverTLS() throws {
        let loop = try EventLoop()
        var port = 0
        let received = Recorder<String>()
        let server = TLS.listen(port: 0, certificate: certs.server, key: certs.serverKey, on: loop, onListening: { port = $0.port })
            .subscribeNext { c in received.subscribe(c.lines.take(1).concat(c.lines)) }
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 60))
        let client = Recorder<Void>()
        let clientSubscription = client.subscribe(
            TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost", trust: .certificateAuthorities(path: certs.ca), on: loop)
                .flattenMap { c in c.write("HEADER\nbody1\nbody2\nbody3\n").then { c.shutdown() }.concat(Signal.return(())) }
                .take(1))
        XCTAssertTrue(loop.run(until: { received.terminated }, timeout: 60), "\(received.events)")
        XCTAssertEqual(received.events, [.next("HEADER"), .next("body1"), .next("body2"), .next("body3"), .completed])
        clientSubscription.dispose()
        server.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testOneReaderAtATimeAndAReaderAfterADisposedOneGetsTheRest() throws {
        let loop = try EventLoop()
        var port = 0
        var accepted: TLSConnection?
        let server = TLS.listen(port: 0, certificate: certs.server, key: certs.serverKey, on: loop, onListening: { port = $0.port })
            .subscribeNext { accepted = $0 }
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 60))
        var clientConnection: TLSConnection?
        let client = TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost", trust: .certificateAuthorities(path: certs.ca), on: loop)
            .subscribeNext { clientConnection = $0 }
        XCTAssertTrue(loop.run(until: { clientConnection != nil && accepted != nil }, timeout: 60))
        let connection = try XCTUnwrap(accepted)

        let first = Recorder<[UInt8]>()
        let firstSubscription = first.subscribe(connection.reads)
        let second = Recorder<[UInt8]>()
        second.subscribe(connection.reads)
        XCTAssertEqual((second.error as? UVError)?.code, -16, "EBUSY while another reads: \(second.events)")
        firstSubscription.dispose()
        XCTAssertEqual(first.count, 0)

        let third = Recorder<String>()
        third.subscribe(connection.lines)
        _ = clientConnection!.write("after the first reader left\n").subscribe()
        XCTAssertTrue(loop.run(until: { third.count == 1 }, timeout: 60))
        XCTAssertEqual(third.values, ["after the first reader left"])
        client.dispose()
        XCTAssertTrue(loop.run(until: { third.terminated }, timeout: 60), "the peer's close ends the reads")
        server.dispose()
        assertLoopCleanAndClose(loop)
    }

    /// Connects a client trusting `ca` to a server presenting `certificate`; returns the
    /// client's error and the server's handshake failures.
    func rejected(certificate: String, serverName: String = "localhost", ca: String? = nil) throws -> (TLSError, [TLSError]) {
        let loop = try EventLoop()
        let failures = SharedFailures()
        let (port, server, _) = startEchoServer(on: loop, certificate: certificate, failures: failures)
        XCTAssertNotEqual(port, 0)
        let client = Recorder<TLSConnection>()
        client.subscribe(TLS.connect(
            host: "127.0.0.1", port: port, serverName: serverName, trust: .certificateAuthorities(path: ca ?? certs.ca), on: loop))
        // The server hears of it too (our alert): the positive marker that both sides are done.
        XCTAssertTrue(loop.run(until: { client.terminated && !failures.list.isEmpty }, timeout: 60))
        XCTAssertEqual(client.count, 1, "no connection, one error: \(client.events)")
        server.dispose()
        assertLoopCleanAndClose(loop)
        return (try XCTUnwrap(client.error as? TLSError, "\(String(describing: client.error))"), failures.list)
    }

    func testAnExpiredCertificateIsRejectedSayingItHasExpired() throws {
        let (error, serverSide) = try rejected(certificate: certs.expired)
        XCTAssertEqual(error.kind, .certificateRejected)
        XCTAssertEqual(error.reason, "certificate has expired")
        XCTAssertEqual(error.verifyCode, 10, "X509_V_ERR_CERT_HAS_EXPIRED")
        XCTAssertEqual(error.operation, "TLS connect")
        XCTAssertTrue(error.target?.hasPrefix("127.0.0.1:") ?? false)
        XCTAssertEqual(serverSide.first?.kind, .handshakeFailed, "\(serverSide)")
        XCTAssertTrue(serverSide.first?.reason.contains("certificate expired") ?? false, "\(serverSide)")
    }

    func testACertificateForAnotherNameIsRejectedAsAMismatch() throws {
        let (error, _) = try rejected(certificate: certs.otherName)
        XCTAssertEqual(error.kind, .certificateRejected)
        XCTAssertEqual(error.reason, "hostname mismatch", error.description)
    }

    func testAServerNameTheCertificateDoesNotCarryIsRejected() throws {
        let (error, _) = try rejected(certificate: certs.server, serverName: "other.example")
        XCTAssertEqual(error.kind, .certificateRejected)
        XCTAssertEqual(error.reason, "hostname mismatch")
    }

    func testACertificateFromAnUntrustedAuthorityIsRejected() throws {
        let (error, _) = try rejected(certificate: certs.untrusted)
        XCTAssertEqual(error.kind, .certificateRejected)
        XCTAssertEqual(error.reason, "unable to get local issuer certificate", error.description)
    }

    func testAPlainTextClientIsReportedAndClosedAndTheServerGoesOn() throws {
        let loop = try EventLoop()
        let failures = SharedFailures()
        let (port, server, serverErrors) = startEchoServer(on: loop, failures: failures)
        XCTAssertNotEqual(port, 0)
        let plain = Recorder<[[UInt8]]>()
        plain.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop)
            .flattenMap { c in c.write("GET / HTTP/1.0\r\n\r\n").then { c.reads.collect() } }
            .take(1))
        XCTAssertTrue(loop.run(until: { plain.terminated && !failures.list.isEmpty }, timeout: 60))
        let error = try XCTUnwrap(failures.list.first)
        XCTAssertEqual(error.kind, .peerNotTLS)
        XCTAssertTrue(error.reason.hasSuffix("\"GET / HTTP/1.0\\r\\n\""), error.description)
        XCTAssertEqual(error.operation, "TLS accept")
        XCTAssertEqual(plain.values.first?.flatMap { $0 } ?? [0], [], "the plain client got nothing but the close")

        // The server still serves TLS clients.
        let echoed = Recorder<String>()
        echoed.subscribe(TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost", trust: .certificateAuthorities(path: certs.ca), on: loop)
            .flattenMap { c in c.write("still here\n").then { c.lines.take(1) } }.take(1))
        XCTAssertTrue(loop.run(until: { echoed.terminated }, timeout: 60))
        XCTAssertEqual(echoed.events, [.next("still here"), .completed])
        XCTAssertFalse(serverErrors.terminated)
        server.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAPlainTextServerIsAClearClientError() throws {
        let loop = try EventLoop()
        var port = 0
        // A server greeting in plain text (SMTP-like), as soon as a client connects.
        let server = TCP.listen(host: "127.0.0.1", port: 0, on: loop, onListening: { port = $0.port })
            .flattenMap { c in c.write("220 plain.example ESMTP ready\r\n").then { c.reads.ignoreValues() }.catchTo(.empty()) }
            .subscribe()
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 60))
        let client = Recorder<TLSConnection>()
        client.subscribe(TLS.connect(host: "127.0.0.1", port: port, trust: .insecureAcceptAnything, on: loop))
        XCTAssertTrue(loop.run(until: { client.terminated }, timeout: 60))
        let error = try XCTUnwrap(client.error as? TLSError, "\(client.events)")
        XCTAssertEqual(error.kind, .peerNotTLS)
        XCTAssertTrue(error.reason.contains("220 plain.exampl"), error.description)
        server.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testASilentServerEndsInAHandshakeTimeout() throws {
        let loop = try EventLoop()
        var port = 0
        let server = TCP.listen(host: "127.0.0.1", port: 0, on: loop, onListening: { port = $0.port })
            .flattenMap { c in c.reads.ignoreValues().catchTo(.empty()) }  // reads, never answers
            .subscribe()
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 60))
        let client = Recorder<TLSConnection>()
        client.subscribe(TLS.connect(host: "127.0.0.1", port: port, trust: .insecureAcceptAnything, handshakeTimeout: 0.3, on: loop))
        XCTAssertTrue(loop.run(until: { client.terminated }, timeout: 60))
        let error = try XCTUnwrap(client.error as? TLSError, "\(client.events)")
        XCTAssertEqual(error.kind, .handshakeTimedOut)
        server.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAKeyThatIsNotTheCertificatesFailsListeningAtOnce() throws {
        let loop = try EventLoop()
        let recorder = Recorder<TLSConnection>()
        recorder.subscribe(TLS.listen(port: 0, certificate: certs.server, key: certs.strayKey, on: loop))
        XCTAssertEqual(recorder.count, 1)
        let error = try XCTUnwrap(recorder.error as? TLSError)
        XCTAssertEqual(error.kind, .configuration)
        XCTAssertEqual(error.target, certs.strayKey)
        XCTAssertTrue(error.reason.contains("key values mismatch"), error.description)
        assertLoopCleanAndClose(loop)
    }

    func testMissingFilesAreConfigurationErrorsNamingThem() throws {
        let loop = try EventLoop()
        let missing = certs.directory + "/missing.pem"
        let server = Recorder<TLSConnection>()
        server.subscribe(TLS.listen(port: 0, certificate: missing, key: certs.serverKey, on: loop))
        let client = Recorder<TLSConnection>()
        client.subscribe(TLS.connect(host: "127.0.0.1", port: 1, trust: .certificateAuthorities(path: missing), on: loop))
        for recorder in [server, client] {
            let error = try XCTUnwrap(recorder.error as? TLSError)
            XCTAssertEqual(error.kind, .configuration)
            XCTAssertEqual(error.target, missing)
        }
        assertLoopCleanAndClose(loop)
    }
}

/// Handshake failures a server reported (loop thread = test thread).
final class SharedFailures: @unchecked Sendable {
    var list: [TLSError] = []
}

extension Recorder {
    var count: Int { events.count }
}
