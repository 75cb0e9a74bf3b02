import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// DNS.name(for:) against /etc/hosts (the test machine has no network): 127.0.0.1 is
/// `localhost`, a TEST-NET address has no name (numeric answer, or EAI_NONAME when a name
/// is required), a non-numeric host is refused, disposal cancels.
final class DNSReverseTests: XCTestCase {
    func testLoopbackIsNamedLocalhostFromTheHostsFile() throws {
        let loop = try EventLoop()
        let recorder = EventRecorder<String>(loop: loop)
        _ = recorder.subscribe(DNS.name(for: SocketAddress(numericHost: "127.0.0.1", port: 7070)!, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events, [.next("localhost"), .completed])
        XCTAssertTrue(recorder.allOnLoopThread)
        assertLoopCleanAndClose(loop)
    }

    func testAnAddressWithoutANameAnswersNumericallyOrFailsWhenANameIsRequired() throws {
        let loop = try EventLoop()
        let numeric = EventRecorder<String>()
        let required = EventRecorder<String>()
        _ = numeric.subscribe(DNS.name(forHost: "192.0.2.1", on: loop))
        _ = required.subscribe(DNS.name(forHost: "192.0.2.1", requireName: true, on: loop))
        XCTAssertTrue(loop.run(until: { numeric.terminated && required.terminated }, timeout: 60))
        XCTAssertEqual(numeric.events, [.next("192.0.2.1"), .completed])
        XCTAssertEqual(required.count, 1)
        let error = try XCTUnwrap(required.error as? UVError)
        // EAI_NONAME without a resolver; EAI_AGAIN if one was configured but did not answer.
        XCTAssertTrue(error.name.hasPrefix("EAI_"), error.description)
        XCTAssertEqual(error.operation, "getnameinfo")
        XCTAssertEqual(error.target, "192.0.2.1")
        assertLoopCleanAndClose(loop)
    }

    func testIPv6LoopbackHasAName() throws {
        let loop = try EventLoop()
        let recorder = EventRecorder<String>()
        _ = recorder.subscribe(DNS.name(forHost: "[::1]", on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.count, 2, "\(recorder.events)")
        XCTAssertEqual(recorder.events.last, .completed)
        // /etc/hosts decides: `localhost`, `ip6-localhost`, or the numeric form when ::1 is
        // not listed; never empty.
        let name = try XCTUnwrap(recorder.values.first)
        XCTAssertFalse(name.isEmpty)
        assertLoopCleanAndClose(loop)
    }

    func testANameInsteadOfANumericAddressIsRefusedWithEINVAL() throws {
        let recorder = EventRecorder<String>()
        _ = recorder.subscribe(DNS.name(forHost: "localhost"))
        XCTAssertEqual(recorder.count, 1)
        let error = try XCTUnwrap(recorder.error as? UVError)
        XCTAssertEqual(error, UVError(code: UV_EINVAL.rawValue))
        XCTAssertEqual(error.target, "localhost")
    }

    func testDisposingBeforeTheAnswerSendsNothingAndLeavesNoRequest() throws {
        let loop = try EventLoop()
        let recorders = (0..<20).map { _ in EventRecorder<String>() }
        let subscriptions = recorders.map { $0.subscribe(DNS.name(forHost: "127.0.0.1", on: loop)) }
        subscriptions.forEach { $0.dispose() }
        // A positive marker after the cancelled ones: a request made later answers.
        let marker = EventRecorder<String>()
        _ = marker.subscribe(DNS.name(forHost: "127.0.0.1", on: loop))
        XCTAssertTrue(loop.run(until: { marker.terminated }, timeout: 60))
        XCTAssertEqual(marker.events, [.next("localhost"), .completed])
        assertLoopCleanAndClose(loop)
        XCTAssertTrue(recorders.allSatisfy { $0.count == 0 })
    }
}
