import CLibUV
import CReactiveUVEmbed
import ReactiveUV

// Files and unix signals: each constructor wraps the library's IO signal on the runtime's
// loop, with its values turned into byte strings.

/// The runtime and path arguments every file constructor checks.
private func fileSignal(
    _ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
    _ make: (String, EventLoop) -> Signal<Bytes>
) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self), let path = string(path), out != nil else { return einval }
    return output(make(path, rt.loop), out)
}

/// `ruv_file_tail`: `tail -F` of a file, line by line.
@c @implementation
public func ruv_file_tail(
    _ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ startLines: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    fileSignal(runtime, path, out) { path, loop in
        let start: TailStart = startLines == 0 ? .end : .lastLines(count(startLines))
        return File.tail(path, from: start, on: loop).map { Bytes($0.utf8) }
    }
}

/// `ruv_file_tail_ex`: `ruv_file_tail` with a line limit and flags (skip long lines, poll).
@c @implementation
public func ruv_file_tail_ex(
    _ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ startLines: Int, _ maxLineBytes: Int, _ flags: UInt32,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    let known = UInt32(RUV_TAIL_SKIP_LONG_LINES | RUV_TAIL_POLL)
    guard flags & ~known == 0, maxLineBytes >= 0 else { return einval }  // a size_t past Int.max: no
    return fileSignal(runtime, path, out) { path, loop in
        let start: TailStart = startLines == 0 ? .end : .lastLines(count(startLines))
        var options = TailOptions()
        if maxLineBytes > 0 { options.maxLineLength = maxLineBytes }
        options.longLines = flags & UInt32(RUV_TAIL_SKIP_LONG_LINES) != 0 ? .skip : .fail
        options.usePolling = flags & UInt32(RUV_TAIL_POLL) != 0
        return File.tail(path, from: start, options: options, notices: nil, on: loop).map { Bytes($0.utf8) }
    }
}

/// `ruv_file_lines`: a file's lines, once.
@c @implementation
public func ruv_file_lines(_ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    fileSignal(runtime, path, out) { path, loop in File.lines(path, on: loop).map { Bytes($0.utf8) } }
}

/// `ruv_file_read`: a file's bytes, in chunks, once.
@c @implementation
public func ruv_file_read(_ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    fileSignal(runtime, path, out) { path, loop in File.read(path, on: loop) }
}

/// `ruv_unix_signal_watch`: the signal number, as a C `int` in the machine's byte order,
/// at each arrival (a C callback reads it with one `memcpy`, no parsing).
@c @implementation
public func ruv_unix_signal_watch(_ runtime: OpaquePointer?, _ signum: Int32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self), out != nil else { return einval }
    return output(UnixSignal.signal(signum, on: rt.loop).map { number in withUnsafeBytes(of: number) { Bytes($0) } }, out)
}
