// RFC 6587 framing of a TCP syslog stream, in a file of its own with no imports: the
// fuzz target (Fuzz/Sources/FuzzSyslog) compiles it as it is.

/// Splits a TCP syslog stream into messages (RFC 6587), across reads.
final class SyslogFramer {
    let maxMessage: Int
    private var buffer: [UInt8] = []
    /// Skipping the rest of an oversized LF-terminated frame.
    private var discarding = false
    /// An octet count was unusable: the stream cannot be framed any more.
    private(set) var broken = false

    init(maxMessage: Int) { self.maxMessage = maxMessage }

    func append(_ chunk: [UInt8], message: (ArraySlice<UInt8>) -> Void, malformed: (String) -> Void) {
        guard !broken else { return }
        buffer += chunk
        var start = 0
        while start < buffer.count {
            let first = buffer[start]
            if discarding {
                guard let lf = buffer[start...].firstIndex(of: 10) else { start = buffer.count; break }
                discarding = false
                start = lf + 1
                continue
            }
            if (49...57).contains(first) {
                // Octet counting: digits, a space, then exactly that many bytes.
                guard let space = buffer[start...].firstIndex(of: 32) else {
                    if buffer.count - start > 10 { fail("an octet count without its space", malformed); return }
                    break
                }
                guard space - start <= 10, let length = Int(String(decoding: buffer[start..<space], as: UTF8.self)) else {
                    fail("an unreadable octet count", malformed)
                    return
                }
                guard length <= maxMessage else {
                    fail("a frame of \(length) bytes (limit \(maxMessage))", malformed)
                    return
                }
                let end = space + 1 + length
                guard end <= buffer.count else { break }
                message(buffer[(space + 1)..<end])
                start = end
            } else if first == 10 || first == 13 || first == 0 || first == 32 {
                start += 1  // blank lines between frames
            } else {
                guard let lf = buffer[start...].firstIndex(of: 10) else {
                    if buffer.count - start > maxMessage {
                        malformed("a line of more than \(maxMessage) bytes")
                        discarding = true
                        start = buffer.count
                    }
                    break
                }
                message(buffer[start..<lf])
                start = lf + 1
            }
        }
        buffer.removeFirst(min(start, buffer.count))
    }

    /// The stream ended: a last LF-less frame is a message too.
    func finish(_ message: (ArraySlice<UInt8>) -> Void) {
        if !broken && !discarding && !buffer.isEmpty && buffer.first.map({ !(48...57).contains($0) }) == true {
            message(buffer[...])
        }
        buffer = []
    }

    private func fail(_ reason: String, _ malformed: (String) -> Void) {
        malformed(reason + "; the stream cannot be framed, the sender is disconnected")
        broken = true
        buffer = []
    }
}
