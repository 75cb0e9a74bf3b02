import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// UnixSignal.signal: each arrival is one value, several subscribers all see it, disposal
/// stops the watch. After the last watch of a signal stops, its action is the one it had
/// before (SIG_DFL when nobody set one, which terminates on SIGUSR1/SIGUSR2), so these
/// tests never raise after disposing.
final class UnixSignalTests: XCTestCase {
    /// A host that ignored a signal (or handled it itself) before watching it still does
    /// once the last watch is disposed: libuv alone would leave SIG_DFL, and a second
    /// SIGTERM during the host's cleanup would kill it.
    func testTheHostsActionComesBackWhenTheLastWatchIsDisposed() throws {
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var before = sigaction()
        XCTAssertEqual(sigaction(SIGUSR2, &ignore, &before), 0)
        defer { _ = sigaction(SIGUSR2, &before, nil) }

        let loop = try EventLoop()
        let recorder = EventRecorder<Int32>(loop: loop)
        let first = recorder.subscribe(UnixSignal.signal(SIGUSR2, on: loop))
        let second = recorder.subscribe(UnixSignal.signal(SIGUSR2, on: loop))
        raise(SIGUSR2)
        XCTAssertTrue(loop.run(until: { recorder.count >= 2 }, timeout: 60))
        first.dispose()
        // One watch left: still libuv's handler.
        var now = sigaction()
        XCTAssertEqual(sigaction(SIGUSR2, nil, &now), 0)
        XCTAssertNotEqual(unsafeBitCast(now.__sigaction_handler.sa_handler, to: Int.self), unsafeBitCast(SIG_IGN, to: Int.self))
        second.dispose()
        XCTAssertEqual(sigaction(SIGUSR2, nil, &now), 0)
        XCTAssertEqual(unsafeBitCast(now.__sigaction_handler.sa_handler, to: Int.self), unsafeBitCast(SIG_IGN, to: Int.self),
                       "the host's SIG_IGN is back, not SIG_DFL")
        // And it acts: ignored, the process goes on.
        raise(SIGUSR2)
        XCTAssertEqual(recorder.values, [SIGUSR2, SIGUSR2])
        assertLoopCleanAndClose(loop)
    }

    func testRaisingSIGUSR1TwiceSendsTwoValues() throws {
        let loop = try EventLoop()
        let recorder = EventRecorder<Int32>(loop: loop)
        let subscription = recorder.subscribe(UnixSignal.signal(SIGUSR1, on: loop))
        // Subscribed on the loop's thread: libuv's handler is installed already.
        raise(SIGUSR1)
        XCTAssertTrue(loop.run(until: { recorder.count >= 1 }, timeout: 60))
        raise(SIGUSR1)
        XCTAssertTrue(loop.run(until: { recorder.count >= 2 }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.05)
        XCTAssertEqual(recorder.events, [.next(SIGUSR1), .next(SIGUSR1)])
        XCTAssertTrue(recorder.allOnLoopThread)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testSeveralSubscribersEachSeeEveryArrival() throws {
        let loop = try EventLoop()
        let first = EventRecorder<Int32>()
        let second = EventRecorder<Int32>()
        let signal = UnixSignal.signal(SIGUSR2, on: loop)
        let a = first.subscribe(signal)
        let b = second.subscribe(signal)
        kill(getpid(), SIGUSR2)
        XCTAssertTrue(loop.run(until: { first.count >= 1 && second.count >= 1 }, timeout: 60))
        // One subscriber leaves; the other still hears the signal.
        a.dispose()
        kill(getpid(), SIGUSR2)
        XCTAssertTrue(loop.run(until: { second.count >= 2 }, timeout: 60))
        XCTAssertEqual(first.values, [SIGUSR2])
        XCTAssertEqual(second.values, [SIGUSR2, SIGUSR2])
        b.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testOnTheMainLoopAndOnABackgroundLoop() throws {
        let before = mainLoopIOResources()
        let main = EventRecorder<Int32>(loop: .main)
        let mainSubscription = main.subscribe(UnixSignal.signal(SIGUSR1))
        let background = LoopPool.shared.next()
        let other = EventRecorder<Int32>(loop: background)
        let otherSubscription = other.subscribe(UnixSignal.signal(SIGUSR1, on: background))
        // The background watch starts when its loop gets to it; the main one is active
        // already and keeps SIGUSR1 from killing us meanwhile. Raise until both heard it.
        var raised = 0
        while !(main.count > 0 && other.count > 0) && raised < 300 {
            raise(SIGUSR1)
            raised += 1
            _ = runMainLoop(timeout: 0.1) { main.count > 0 && other.count > 0 }
        }
        XCTAssertGreaterThan(main.count, 0)
        XCTAssertGreaterThan(other.count, 0)
        XCTAssertTrue(main.allOnLoopThread)
        XCTAssertTrue(other.allOnLoopThread)
        otherSubscription.dispose()
        mainSubscription.dispose()
        XCTAssertTrue(waitUntilNoIOResources(on: background))
        XCTAssertTrue(runMainLoop(timeout: 60) { mainLoopIOResources() == before })
    }

    func testAnInvalidSignalNumberFailsWithEINVAL() throws {
        let loop = try EventLoop()
        let recorder = EventRecorder<Int32>()
        _ = recorder.subscribe(UnixSignal.signal(0, on: loop))
        let huge = EventRecorder<Int32>()
        _ = huge.subscribe(UnixSignal.signal(100_000, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated && huge.terminated }, timeout: 60))
        XCTAssertEqual((recorder.error as? UVError)?.name, "EINVAL")
        XCTAssertEqual((recorder.error as? UVError)?.target, "signal 0")
        XCTAssertTrue(huge.error is UVError)
        assertLoopCleanAndClose(loop)
    }
}
