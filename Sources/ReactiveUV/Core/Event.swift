/// One event of a signal: RAC's `RACEvent`. The grammar is `next* (error | completed)?`.
public enum Event<Value> {
    /// A value.
    case next(Value)
    /// The signal failed; nothing follows.
    case error(any Error)
    /// The signal finished; nothing follows.
    case completed

    /// Whether this is `error` or `completed` (RAC's `finished`).
    @inlinable
    public var isTerminating: Bool {
        if case .next = self { return false }
        return true
    }

    /// The value of a `next` event.
    @inlinable
    public var value: Value? {
        if case .next(let v) = self { return v }
        return nil
    }

    /// The error of an `error` event.
    @inlinable
    public var error: (any Error)? {
        if case .error(let e) = self { return e }
        return nil
    }

    /// Maps the value of a `next` event, keeping terminal events.
    @inlinable
    public func map<U>(_ transform: (Value) throws -> U) rethrows -> Event<U> {
        switch self {
        case .next(let v): return .next(try transform(v))
        case .error(let e): return .error(e)
        case .completed: return .completed
        }
    }
}

extension Event: @unchecked Sendable where Value: Sendable {}

extension Event: CustomStringConvertible {
    /// `next(value)`, `error(error)` or `completed`.
    public var description: String {
        switch self {
        case .next(let v): return "next(\(v))"
        case .error(let e): return "error(\(e))"
        case .completed: return "completed"
        }
    }
}

extension Event: Equatable where Value: Equatable {
    /// Values compare by `==`; errors compare by their description and type (Swift errors
    /// are not `Equatable`); `completed` equals `completed`.
    public static func == (lhs: Event, rhs: Event) -> Bool {
        switch (lhs, rhs) {
        case (.next(let a), .next(let b)): return a == b
        case (.completed, .completed): return true
        case (.error(let a), .error(let b)):
            return type(of: a) == type(of: b) && String(describing: a) == String(describing: b)
        default: return false
        }
    }
}
