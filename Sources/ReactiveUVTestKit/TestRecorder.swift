import Glibc
import ReactiveUV

/// An event with the virtual time it arrived at.
public struct Recorded<Value> {
    /// When the event arrived, on the recording scheduler's clock.
    public let time: SchedulerTime
    /// The event.
    public let event: Event<Value>

    /// Creates a recorded event.
    public init(time: SchedulerTime, event: Event<Value>) {
        self.time = time
        self.event = event
    }
}

extension Recorded: Equatable where Value: Equatable {}

/// Records a signal's events with their times on a `TestScheduler` (RxTest's observer).
///
/// ```swift
/// let scheduler = TestScheduler()
/// let recorder = scheduler.record(signal)
/// scheduler.advance(by: 10)
/// recorder.marble(tick: 1)   // "--a--b--|"
/// ```
///
/// Every member may be read from any thread while another thread is sending (a signal
/// under test may deliver from a background loop): the list of events is guarded by a
/// mutex, and readers get a copy.
public final class TestRecorder<Value>: @unchecked Sendable {
    /// The scheduler whose clock stamps the events.
    public let scheduler: TestScheduler
    /// The time of the subscription (frame 0 of ``marble(tick:render:)``).
    public let start: SchedulerTime
    /// Guards `recorded` and `subscription` (a heap-allocated pthread mutex: it must not move).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var recorded: [Recorded<Value>] = []
    private var subscription: Disposable?

    init(scheduler: TestScheduler) {
        self.scheduler = scheduler
        self.start = scheduler.now
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    func receive(_ event: Event<Value>) {
        let time = scheduler.now
        locked { recorded.append(Recorded(time: time, event: event)) }
    }

    func attach(_ disposable: Disposable) {
        locked { subscription = disposable }
    }

    /// Every event so far, in arrival order (a copy, safe to read while events arrive).
    public var events: [Recorded<Value>] { locked { recorded } }

    /// The values received so far.
    public var values: [Value] { events.compactMap { $0.event.value } }

    /// Whether a terminal event was received.
    public var isTerminated: Bool { events.last?.event.isTerminating ?? false }

    /// Stops recording.
    public func dispose() { locked { subscription }?.dispose() }

    /// The recorded events as a marble diagram, `tick` seconds per frame, frame 0 at the
    /// subscription.
    ///
    /// - Parameters:
    ///   - tick: virtual seconds per character.
    ///   - render: how a value is drawn (one character reads best).
    /// - Returns: the diagram, one character per frame up to the last event.
    public func marble(tick: Double = 1, render: (Value) -> String = { String(describing: $0) }) -> String {
        let tickNs = max(1, Int64((tick * 1e9).rounded()))
        let entries = events.map { r -> Marble.Entry in
            let frame = Int((Int64(r.time.nanoseconds) - Int64(start.nanoseconds)) / tickNs)
            return Marble.Entry(frame: frame, event: r.event.map(render))
        }
        return Marble.render(entries)
    }
}

extension TestScheduler {
    /// Subscribes to `signal` now and records its events with their virtual times.
    ///
    /// - Parameter signal: the signal under test.
    /// - Returns: the recorder; dispose it to stop recording.
    public func record<Value>(_ signal: Signal<Value>) -> TestRecorder<Value> {
        let recorder = TestRecorder<Value>(scheduler: self)
        // Weak: the recorder holds its subscription (a strong capture would be a cycle
        // keeping the recorder and this scheduler alive after the test).
        recorder.attach(signal.subscribeEvents { [weak recorder] in recorder?.receive($0) })
        return recorder
    }

    /// A cold signal drawn as a marble diagram: each subscription replays the diagram from
    /// its own subscription time, `tick` seconds per frame. Values are one-character strings
    /// (map them with `map` for other types); `#` fails with ``MarbleError/error``.
    public func createColdSignal(_ diagram: String, tick: Double = 1) -> Signal<String> {
        let entries = (try? Marble.parse(diagram)) ?? []
        let malformed = (try? Marble.parse(diagram)) == nil
        return Signal.create { [unowned self] subscriber in
            if malformed {
                subscriber.sendError(MarbleError.malformed(diagram))
                return nil
            }
            let all = CompoundDisposable()
            for entry in entries where entry.frame >= 0 {
                all.add(afterDelay(Double(entry.frame) * tick) { subscriber.send(entry.event) })
            }
            return all
        }
    }

    /// A hot signal drawn as a marble diagram: `^` is now; events before it already
    /// happened and are not sent; later ones are sent at their times whether or not anyone
    /// subscribed, to whoever is subscribed then.
    public func createHotSignal(_ diagram: String, tick: Double = 1) -> Signal<String> {
        let subject = Subject<String>()
        guard let entries = try? Marble.parse(diagram) else {
            subject.sendError(MarbleError.malformed(diagram))
            return subject
        }
        for entry in entries where entry.frame >= 0 {
            afterDelay(Double(entry.frame) * tick) { subject.send(entry.event) }
        }
        return subject
    }
}

/// What ``expect(_:on:tick:frames:render:)`` saw, to compare with a diagram by `==`.
public struct MarbleExpectation: CustomStringConvertible, Sendable {
    /// The recorded diagram.
    public let actual: String

    /// The recorded diagram.
    public var description: String { actual }

    /// Whether the recording matches `expected` (spaces and frames before `^` ignored).
    public static func == (lhs: MarbleExpectation, rhs: String) -> Bool {
        lhs.actual == Marble.normalize(rhs)
    }

    /// Whether the recording differs from `expected`.
    public static func != (lhs: MarbleExpectation, rhs: String) -> Bool { !(lhs == rhs) }
}

/// Subscribes to `signal` on `scheduler`, advances virtual time by `frames` frames (or runs
/// until nothing is scheduled), and returns the events as a marble diagram for a test:
///
/// ```swift
/// let s = TestScheduler()
/// let source = s.createColdSignal("-a-b-----c|")
/// #expect(expect(source.throttle(2, on: s), on: s) == "-----b----(c|)")
/// ```
///
/// - Parameters:
///   - signal: the signal under test.
///   - scheduler: the virtual-time scheduler its operators use.
///   - tick: virtual seconds per frame.
///   - frames: how far to advance; `nil` runs until the scheduler is idle.
///   - render: how a value is drawn.
public func expect<Value>(
    _ signal: Signal<Value>, on scheduler: TestScheduler, tick: Double = 1, frames: Int? = nil,
    render: (Value) -> String = { String(describing: $0) }
) -> MarbleExpectation {
    let recorder = scheduler.record(signal)
    if let frames {
        scheduler.advance(by: Double(frames) * tick)
    } else {
        scheduler.run()
    }
    recorder.dispose()
    return MarbleExpectation(actual: recorder.marble(tick: tick, render: render))
}
