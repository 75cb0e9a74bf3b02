/// Errors the signal operators themselves produce: RAC's `RACSignalErrorDomain`.
public enum SignalError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `timeout(_:on:)` (or an asynchronous wait) ran out of time: `RACSignalErrorTimedOut`.
    case timedOut
    /// `Signal.switch(_:cases:default:)` got a key with no case and no default:
    /// `RACSignalErrorNoMatchingCase`. `key` is the key's description.
    case noMatchingCase(key: String)
    /// A time operator was given a scheduler that cannot keep time (the immediate one).
    case invalidScheduler(String)
    /// An operator was given an argument it cannot use (a negative count, say).
    case invalidArgument(String)

    /// A readable message (RAC's for `noMatchingCase`: "No matching signal found for value …").
    public var description: String {
        switch self {
        case .timedOut: return "The signal timed out"
        case .noMatchingCase(let key): return "No matching signal found for value \(key)"
        case .invalidScheduler(let what): return "Invalid scheduler: \(what)"
        case .invalidArgument(let what): return "Invalid argument: \(what)"
        }
    }
}
