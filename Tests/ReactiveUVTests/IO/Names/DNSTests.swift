import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// DNS.resolve against /etc/hosts (the test machine has no network): localhost resolves,
/// an `.invalid` name fails with an EAI code, disposal cancels.
final class DNSTests: XCTestCase {
    func testLocalhostResolvesToALoopbackAddressWithThePort() throws {
        let loop = try EventLoop()
        let recorder = EventRecorder<DNS.Address>(loop: loop)
        _ = recorder.subscribe(DNS.resolve("localhost", port: 8080, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events.last, .completed)
        let addresses = recorder.values
        XCTAssertTrue(addresses.contains { $0.host == "127.0.0.1" || $0.host == "::1" }, "\(addresses)")
        XCTAssertTrue(addresses.allSatisfy { $0.port == 8080 })
        XCTAssertEqual(Set(addresses).count, addresses.count, "no duplicates")
        XCTAssertTrue(recorder.allOnLoopThread)
        if let v4 = addresses.first(where: { $0.family == .ipv4 }) { XCTAssertEqual(v4.description, "\(v4.host):8080") }
        assertLoopCleanAndClose(loop)
    }

    func testNumericHostsResolveToThemselves() throws {
        let loop = try EventLoop()
        let v4 = EventRecorder<DNS.Address>()
        _ = v4.subscribe(DNS.resolve("127.0.0.1", on: loop))
        let v6 = EventRecorder<DNS.Address>()
        _ = v6.subscribe(DNS.resolve("::1", port: 443, on: loop))
        XCTAssertTrue(loop.run(until: { v4.terminated && v6.terminated }, timeout: 60))
        XCTAssertEqual(v4.events, [.next(DNS.Address(family: .ipv4, host: "127.0.0.1", port: 0)), .completed])
        XCTAssertEqual(v6.events, [.next(DNS.Address(family: .ipv6, host: "::1", port: 443)), .completed])
        XCTAssertEqual(v6.values.first?.description, "[::1]:443")
        assertLoopCleanAndClose(loop)
    }

    func testAnInvalidNameFailsWithAnEAICodeNamingTheHost() throws {
        let loop = try EventLoop()
        let recorder = EventRecorder<DNS.Address>()
        _ = recorder.subscribe(DNS.resolve("no-such-host.invalid", on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.count, 1)
        let error = try XCTUnwrap(recorder.error as? UVError)
        // EAI_NONAME where nothing is reachable but /etc/hosts; EAI_AGAIN if a resolver
        // was configured but did not answer.
        XCTAssertTrue(error.name.hasPrefix("EAI_"), error.description)
        XCTAssertEqual(error.operation, "getaddrinfo")
        XCTAssertEqual(error.target, "no-such-host.invalid")
        assertLoopCleanAndClose(loop)
    }

    func testDisposingBeforeTheAnswerSendsNothing() throws {
        let loop = try EventLoop()
        let recorders = (0..<20).map { _ in EventRecorder<DNS.Address>() }
        // Many at once, so some still wait for a pool thread and are really cancelled;
        // the others finish on the pool and their answers are dropped.
        let subscriptions = recorders.map { $0.subscribe(DNS.resolve("localhost", on: loop)) }
        subscriptions.forEach { $0.dispose() }
        assertLoopCleanAndClose(loop)
        XCTAssertTrue(recorders.allSatisfy { $0.count == 0 })
    }

    func testResolveOnTheMainLoop() throws {
        let before = mainLoopIOResources()
        let recorder = EventRecorder<DNS.Address>(loop: .main)
        _ = recorder.subscribe(DNS.resolve("localhost"))
        XCTAssertTrue(runMainLoop(timeout: 60) { recorder.terminated })
        XCTAssertEqual(recorder.events.last, .completed)
        XCTAssertTrue(recorder.allOnLoopThread)
        XCTAssertTrue(runMainLoop(timeout: 60) { mainLoopIOResources() == before })
    }
}
