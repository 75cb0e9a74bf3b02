import Glibc

// The one way this library makes a system call of its own (a `pread`, `fstat`, `open`,
// `write` outside libuv): retry while it is interrupted by a signal, and turn any other
// failure into a ``UVError`` that names the call and what it was made on, built here and
// nowhere else (swift-nio routes its calls through one `syscall(blocking:where:)` for the
// same reason). Before this, seven hand-written `repeat { … } while n < 0 && errno == EINTR`
// loops each built their error their own way, and some built none.
//
// Why `EINTR` is retried: a signal whose handler was installed without `SA_RESTART` (a
// host's, or libuv's own `uv_signal_t` on another thread of the process) makes a blocking
// call that was waiting return -1 with `EINTR` before anything happened. That is no
// failure of the call; reporting it would end a tail or lose a checkpoint for nothing.
//
// Not for `close`: on Linux the descriptor is released even when `close` reports `EINTR`,
// so retrying could close a descriptor another thread has just been given.

/// Makes a system call, retrying it while it fails with `EINTR`, and throws any other
/// failure as a ``UVError`` naming `operation` and `target`.
///
/// For calls that return a negative value (-1) and set `errno` on failure, and a count,
/// descriptor or 0 on success: `pread`, `read`, `write`, `open`, `fstat`, `fsync`,
/// `rename`, `waitpid`. `errno` is read right after the failed call, before anything else
/// can change it.
///
/// ```swift
/// let n = try systemCall("read", on: describe(descriptor: fd)) { pread(fd, buffer, count, 0) }
/// ```
///
/// - Parameters:
///   - operation: what the error says was being done (`"read"`, `"open"`, ...).
///   - target: the path or descriptor it was done to, evaluated only when the call fails
///     (so a successful call formats no string).
///   - call: the system call; called again after each `EINTR`.
/// - Returns: the call's non-negative result.
/// - Throws: a ``UVError`` with the negated `errno`, `operation` and `target`.
@inline(__always)
@discardableResult
func systemCall<Count: BinaryInteger>(
    _ operation: String, on target: @autoclosure () -> String? = nil, _ call: () -> Count
) throws(UVError) -> Count {
    while true {
        let result = call()
        if result >= 0 { return result }
        let code = errno
        if code == EINTR { continue }
        throw UVError(code: code, operation: operation, target: target())
    }
}

/// How an error names a descriptor it has no path for: `fd 7` (as in `EIO (i/o error)
/// during read on fd 7`).
///
/// - Parameter fd: the descriptor.
/// - Returns: its name for ``UVError/target``.
func describe(descriptor fd: Int32) -> String { "fd \(fd)" }

/// A `pread` through ``systemCall(_:on:_:)`` into the start of `buffer`: at most `count`
/// bytes (and no more than `buffer` holds) from `offset`, the error naming the descriptor.
///
/// The one place the file code's positioned reads cross `withUnsafeMutableBytes`, which
/// rethrows untyped errors: the error crosses it as a `Result`, so callers keep `UVError`.
///
/// - Parameters:
///   - fd: the descriptor.
///   - buffer: where the bytes go.
///   - count: how many bytes to read at most.
///   - offset: where in the file to read from.
/// - Returns: how many bytes were read (0 at the end of the file).
/// - Throws: a ``UVError`` for `read` on the descriptor.
func readAt(_ fd: Int32, into buffer: inout [UInt8], count: Int, at offset: Int64) throws(UVError) -> Int {
    try buffer.withUnsafeMutableBytes { raw in
        Result { () throws(UVError) in
            try systemCall("read", on: describe(descriptor: fd)) {
                pread(fd, raw.baseAddress, min(count, raw.count), off_t(offset))
            }
        }
    }.get()
}
