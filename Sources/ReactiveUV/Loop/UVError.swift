import CLibUV

/// An error libuv reported: its code, what we were doing, and to what.
///
/// libuv reports failures as negative integers (`UV_EADDRINUSE`, `UV_ENOENT`, ...). A
/// `UVError` keeps that code together with the context a reader of a log needs: the
/// ``operation`` ("listen", "uv_timer_start") and its ``target`` (a path or an address).
///
/// Match a particular failure the way swift-system matches `Errno`:
///
/// ```swift
/// do { try server.start() }
/// catch UVError.addressInUse { print("port taken") }
/// catch let error as UVError { print(error) }   // EACCES (permission denied) during open on /etc/shadow
/// ```
///
/// Two `UVError`s are equal when their codes are equal; the operation and target are
/// context for humans and take no part in equality or pattern matching.
public struct UVError: Error, CustomStringConvertible, Equatable, Hashable, Sendable {
    /// The libuv error code, a negative number such as `UV_EADDRINUSE`.
    public let code: Int32
    /// What was being done when libuv failed, such as `"listen"` or `"uv_timer_start"`.
    /// Empty for the static constants used as patterns.
    public let operation: String
    /// The path, address or other object of the operation, when there is one.
    public let target: String?

    /// Creates an error from a libuv code and its context.
    ///
    /// - Parameters:
    ///   - code: a negative libuv error code (a positive `errno` value is negated, so
    ///     `UVError(code: ENOENT)` and `UVError(code: UV_ENOENT)` mean the same).
    ///   - operation: what was being done.
    ///   - target: the path or address it was done to, if any.
    public init(code: Int32, operation: String = "", target: String? = nil) {
        // libuv's codes on Unix are negated errno values; accept either sign so callers
        // holding a raw errno (from a system call we made ourselves) need not convert.
        self.code = code > 0 ? -code : code
        self.operation = operation
        self.target = target
    }

    /// libuv's symbolic name for the code, such as `"EADDRINUSE"` (`uv_err_name`).
    public var name: String {
        // The `_r` variant writes into our buffer: plain `uv_err_name` leaks a heap string
        // for codes libuv does not know.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            String(cString: uv_err_name_r(code, buffer.baseAddress, buffer.count))
        }
    }

    /// libuv's human-readable message for the code, such as `"address already in use"`
    /// (`uv_strerror`).
    public var message: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            String(cString: uv_strerror_r(code, buffer.baseAddress, buffer.count))
        }
    }

    /// `EADDRINUSE (address already in use) during listen on 127.0.0.1:7070`.
    public var description: String {
        var text = "\(name) (\(message))"
        if !operation.isEmpty { text += " during \(operation)" }
        if let target { text += " on \(target)" }
        return text
    }

    /// Equal when the codes are equal (the context is ignored).
    public static func == (lhs: UVError, rhs: UVError) -> Bool { lhs.code == rhs.code }

    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Lets `catch UVError.addressInUse` and `case UVError.noSuchFile` match any error
    /// that is a `UVError` with the same code.
    ///
    /// - Parameters:
    ///   - pattern: the error to match, usually one of the static constants.
    ///   - value: the error thrown.
    /// - Returns: whether `value` is a `UVError` with `pattern`'s code.
    public static func ~= (pattern: UVError, value: any Error) -> Bool {
        guard let error = value as? UVError else { return false }
        return error.code == pattern.code
    }

    // MARK: - Common codes

    /// `EADDRINUSE`: the address is already in use (another listener holds the port).
    public static let addressInUse = UVError(code: UV_EADDRINUSE.rawValue)
    /// `ECONNREFUSED`: nobody listens at the address.
    public static let connectionRefused = UVError(code: UV_ECONNREFUSED.rawValue)
    /// `ENOENT`: no such file or directory.
    public static let noSuchFile = UVError(code: UV_ENOENT.rawValue)
    /// `EACCES`: permission denied.
    public static let permissionDenied = UVError(code: UV_EACCES.rawValue)
    /// `ECONNRESET`: the peer reset the connection.
    public static let connectionReset = UVError(code: UV_ECONNRESET.rawValue)
    /// `EPIPE`: writing to a connection or pipe whose reader has gone.
    public static let brokenPipe = UVError(code: UV_EPIPE.rawValue)
    /// `ECANCELED`: the operation was cancelled (for example by closing its handle).
    public static let cancelled = UVError(code: UV_ECANCELED.rawValue)
    /// `EOF`: end of file or stream. Streams turn it into completion, not an error.
    public static let endOfFile = UVError(code: UV_EOF.rawValue)
    /// `ETIMEDOUT`: the operation timed out.
    public static let timedOut = UVError(code: UV_ETIMEDOUT.rawValue)
    /// `EINVAL`: an invalid argument.
    public static let invalidArgument = UVError(code: UV_EINVAL.rawValue)
    /// `EBUSY`: the resource is busy (for example closing a loop that still has handles).
    public static let busy = UVError(code: UV_EBUSY.rawValue)
    /// `ESRCH`: no such process (signalling a child that has already exited).
    public static let noSuchProcess = UVError(code: UV_ESRCH.rawValue)
}

/// The one place libuv return codes become Swift errors.
///
/// Every libuv call that can fail passes its result through here, so each error carries
/// what was being done and to what, built the same way everywhere.
///
/// - Parameters:
///   - rc: libuv's return value; negative means failure.
///   - operation: what was being done (the libuv function, or a user-level verb).
///   - target: the path or address, if any.
/// - Returns: `rc` when it is not an error (some calls return a count).
/// - Throws: ``UVError`` when `rc` is negative.
@discardableResult
func uvCheck(_ rc: Int32, _ operation: String, _ target: String? = nil) throws -> Int32 {
    if rc < 0 { throw UVError(code: rc, operation: operation, target: target) }
    return rc
}
