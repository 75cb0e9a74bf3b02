import CLibUV
import CReactiveUVEmbed
import ReactiveUV

// Error codes at the C boundary: libuv's codes pass through unchanged; ReactiveUV's own
// failures get codes in the reserved range RUV_ERRNO_MIN...RUV_ERRNO_MAX (reactiveuv.h).
// Every Swift error becomes one (code, message) pair in `cError(_:)`, the one place that
// mapping is made.

/// An error that came from C (`ruv_subject_send_error`, `ruv_signal_error`, a map
/// callback's negative result), or one the C API raises itself: a negative code and a message.
public struct CError: Error, CustomStringConvertible, Sendable {
    /// The negative code: libuv's, one of `RUV_E*`, or the C program's own.
    public let code: Int32
    /// What went wrong, for people.
    public let message: String

    /// Creates an error; a `nil` message becomes the code's `ruv_strerror` text.
    ///
    /// - Parameters:
    ///   - code: a negative code.
    ///   - message: the message, or `nil`.
    public init(code: Int32, message: String? = nil) {
        self.code = code
        self.message = message ?? String(cString: errorMessage(code))
    }

    /// The message.
    public var description: String { message }
}

/// The C code and message of any error a signal can send.
///
/// - Parameter error: the Swift error.
/// - Returns: a negative code (libuv's, ours, or the C program's) and the message.
func cError(_ error: any Error) -> (code: Int32, message: String) {
    switch error {
    case let e as CError:
        return (e.code, e.message)
    case let e as UVError:
        return (e.code, e.description)
    case let e as SignalError:
        switch e {
        case .timedOut: return (RUV_ETIMEOUT, e.description)
        case .invalidArgument, .invalidScheduler: return (RUV_EARGUMENT, e.description)
        case .noMatchingCase: return (RUV_EUNKNOWN, e.description)
        }
    case let e as LineError:
        return (RUV_ELINETOOLONG, e.description)
    default:
        return (RUV_EUNKNOWN, String(describing: error))
    }
}

/// Our codes, their names and their messages (static strings: C keeps the pointers).
private let ownErrors: [(code: Int32, name: StaticString, message: StaticString)] = [
    (RUV_EWRONGTHREAD, "EWRONGTHREAD", "called on a thread other than the runtime's loop thread"),
    (RUV_ECLOSED, "ECLOSED", "the runtime is closed or the subject has terminated"),
    (RUV_ETIMEOUT, "ETIMEOUT", "the signal timed out"),
    (RUV_EARGUMENT, "EARGUMENT", "invalid operator argument"),
    (RUV_ELINETOOLONG, "ELINETOOLONG", "line longer than the limit"),
    (RUV_EHOSTLOOP, "EHOSTLOOP", "the runtime runs on a host's loop; the host runs it"),
    (RUV_EUNKNOWN, "EUNKNOWN", "unknown error"),
]

/// Whether libuv has a name for `code` (so `uv_err_name`/`uv_strerror` return static
/// strings rather than leaking a formatted one, as they do for unknown codes).
private func libuvKnows(_ code: Int32) -> Bool {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
        let name = String(cString: uv_err_name_r(code, buffer.baseAddress, buffer.count))
        return !name.hasPrefix("Unknown")
    }
}

private func errorName(_ code: Int32) -> UnsafePointer<CChar> {
    if let own = ownErrors.first(where: { $0.code == code }) {
        return UnsafeRawPointer(own.name.utf8Start).assumingMemoryBound(to: CChar.self)
    }
    if code < 0 && libuvKnows(code) { return uv_err_name(code) }
    return UnsafeRawPointer(("UNKNOWN" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}

private func errorMessage(_ code: Int32) -> UnsafePointer<CChar> {
    if let own = ownErrors.first(where: { $0.code == code }) {
        return UnsafeRawPointer(own.message.utf8Start).assumingMemoryBound(to: CChar.self)
    }
    if code < 0 && libuvKnows(code) { return uv_strerror(code) }
    return UnsafeRawPointer(("unknown error" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}

/// `ruv_err_name`: the symbolic name of a libuv or ReactiveUV code (a static string).
@c @implementation
public func ruv_err_name(_ code: Int32) -> UnsafePointer<CChar>! {
    errorName(code)
}

/// `ruv_strerror`: the message of a libuv or ReactiveUV code (a static string).
@c @implementation
public func ruv_strerror(_ code: Int32) -> UnsafePointer<CChar>! {
    errorMessage(code)
}

/// `ruv_version`: the library's version as `RUV_VERSION_HEX` computes it.
@c @implementation
public func ruv_version() -> UInt32 {
    UInt32((RUV_VERSION_MAJOR << 16) | (RUV_VERSION_MINOR << 8) | RUV_VERSION_PATCH)
}

/// `ruv_version_string`: "major.minor.patch" (a static string).
@c @implementation
public func ruv_version_string() -> UnsafePointer<CChar>! {
    UnsafeRawPointer(("0.1.0" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}
