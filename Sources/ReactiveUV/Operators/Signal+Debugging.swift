import Glibc

/// Where `logAll()`, `logNext()`, `logError()` and `logCompleted()` write: standard error
/// by default. Replace ``sink`` to route the lines elsewhere (swift-log, a test buffer).
public enum SignalLog {
    /// Guards `sink`.
    static let lock = UnsafeLock()
    nonisolated(unsafe) static var _sink: @Sendable (String) -> Void = { line in
        let text = line + "\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }

    /// Receives every log line.
    public static var sink: @Sendable (String) -> Void {
        get { lock.withLock { _sink } }
        set { lock.withLock { _sink = newValue } }
    }

    static func log(_ line: String) { sink(line) }
}

extension Signal {
    /// A description for log lines: the signal's name, or its type.
    var logDescription: String { name.isEmpty ? "<\(type(of: self))>" : name }

    /// Logs every event to ``SignalLog/sink``: RAC's `-logAll`.
    ///
    /// **RAC:** `-logAll`. **Thread:** events and log lines on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func logAll() -> Signal<Value> { logNext().logError().logCompleted() }

    /// Logs each value: RAC's `-logNext`.
    ///
    /// **RAC:** `-logNext`. **Thread:** events and log lines on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func logNext() -> Signal<Value> {
        let d = logDescription
        return doNext { SignalLog.log("\(d) next: \($0)") }.named(name)
    }

    /// Logs the error: RAC's `-logError`.
    ///
    /// **RAC:** `-logError`. **Thread:** events and log lines on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func logError() -> Signal<Value> {
        let d = logDescription
        return doError { SignalLog.log("\(d) error: \($0)") }.named(name)
    }

    /// Logs completion: RAC's `-logCompleted`.
    ///
    /// **RAC:** `-logCompleted`. **Thread:** events and log lines on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func logCompleted() -> Signal<Value> {
        let d = logDescription
        return doCompleted { SignalLog.log("\(d) completed") }.named(name)
    }

    /// Logs every event and the subscription's start and end, with `identifier`
    /// (ReactiveSwift's `logEvents(identifier:)`).
    ///
    /// **RAC:** none (RAC's `-logAll` with an identifier). **Thread:** events and log lines
    /// on the source's thread. **Disposal:** disposes the source. **Terminates:** when the
    /// source terminates; errors pass through at once.
    public func logEvents(identifier: String) -> Signal<Value> {
        on(
            subscribed: { SignalLog.log("[\(identifier)] subscribed") },
            next: { SignalLog.log("[\(identifier)] next: \($0)") },
            error: { SignalLog.log("[\(identifier)] error: \($0)") },
            completed: { SignalLog.log("[\(identifier)] completed") },
            disposed: { SignalLog.log("[\(identifier)] disposed") })
    }
}
