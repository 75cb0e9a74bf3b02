import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// Descriptor.readiness over a socketpair whose IO the test does itself (as a C library
/// would): readable when the peer wrote, writable at once, disconnect when the peer
/// closes; and the errors for descriptors epoll cannot watch.
final class DescriptorPollTests: XCTestCase {
    func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        return (fds[0], fds[1])
    }

    func testReadableEachTimeThePeerWritesWhileTheOwnerReads() throws {
        let loop = try EventLoop()
        let (ours, theirs) = socketPair()
        defer { close(ours); close(theirs) }
        var read: [String] = []
        var events: [PollEvents] = []
        let subscription = Descriptor.readiness(ours, events: .readable, on: loop).subscribeNext { ready in
            events.append(ready)
            // The owner does its own IO when told: drain what is there.
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = recv(ours, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { read.append(String(decoding: buffer[0..<n], as: UTF8.self)) }
        }
        for word in ["one", "two", "three"] {
            XCTAssertEqual(send(theirs, word, word.utf8.count, 0), word.utf8.count)
            XCTAssertTrue(loop.run(until: { read.last == word }, timeout: 60), "\(read)")
        }
        XCTAssertEqual(read, ["one", "two", "three"])
        XCTAssertTrue(events.allSatisfy { $0 == .readable }, "\(events)")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testWritableAtOnceAndDisconnectWhenThePeerCloses() throws {
        let loop = try EventLoop()
        let (ours, theirs) = socketPair()
        defer { close(ours) }
        let writable = EventRecorder<PollEvents>()
        let w = writable.subscribe(Descriptor.readiness(ours, events: .writable, on: loop).take(1))
        XCTAssertTrue(loop.run(until: { writable.terminated }, timeout: 60))
        XCTAssertEqual(writable.events, [.next(.writable), .completed])
        w.dispose()
        XCTAssertTrue(waitForHandlesToClose(loop, timeout: 60), "the poll handle closed after take(1)")

        let hangUp = EventRecorder<PollEvents>()
        let h = hangUp.subscribe(Descriptor.readiness(ours, events: [.readable, .disconnect], on: loop).take(1))
        close(theirs)
        XCTAssertTrue(loop.run(until: { hangUp.terminated }, timeout: 60))
        XCTAssertTrue(hangUp.values.first?.contains(.disconnect) ?? false, "\(hangUp.events)")
        h.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testDescriptorsThatCannotBeWatchedFailClearly() throws {
        let loop = try EventLoop()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        writeFile(directory.file("plain"), "regular file")
        let file = open(directory.file("plain"), O_RDONLY)
        defer { close(file) }
        let (ours, theirs) = socketPair()
        defer { close(ours); close(theirs) }

        let regular = EventRecorder<PollEvents>()
        _ = regular.subscribe(Descriptor.readiness(file, on: loop))
        let closedFD = EventRecorder<PollEvents>()
        _ = closedFD.subscribe(Descriptor.readiness(9_999, on: loop))
        let nothing = EventRecorder<PollEvents>()
        _ = nothing.subscribe(Descriptor.readiness(ours, events: [], on: loop))
        let first = EventRecorder<PollEvents>()
        let firstSubscription = first.subscribe(Descriptor.readiness(ours, on: loop))
        let twice = EventRecorder<PollEvents>()
        _ = twice.subscribe(Descriptor.readiness(ours, on: loop))
        XCTAssertTrue(loop.run(until: { regular.terminated && closedFD.terminated && twice.terminated }, timeout: 60))

        XCTAssertEqual((regular.error as? UVError)?.name, "EPERM", "\(regular.events)")
        XCTAssertEqual((regular.error as? UVError)?.target, "fd \(file)")
        XCTAssertEqual((closedFD.error as? UVError)?.name, "EBADF", "\(closedFD.events)")
        XCTAssertEqual((nothing.error as? UVError)?.name, "EINVAL")
        XCTAssertEqual((twice.error as? UVError)?.name, "EEXIST", "\(twice.events)")
        XCTAssertEqual(first.count, 0, "the first watch goes on")
        firstSubscription.dispose()
        assertLoopCleanAndClose(loop)
    }
}
