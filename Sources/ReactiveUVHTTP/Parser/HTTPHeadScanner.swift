/// Checks a message head byte by byte before http_parser sees it, and finds where it ends.
///
/// http_parser 2.9 is lenient where an HTTP/1.1 server must not be (it takes a bare LF as a
/// line end, folds obs-fold lines, allows some control bytes in values, and reads an
/// `HTTP/2.0` request line as HTTP/1 with a larger major number). Those leniencies are where
/// request smuggling lives: two servers that end a head at different bytes disagree on where
/// the next request starts. So every head byte passes this strict RFC 9112 grammar first:
/// lines end in CR LF and nowhere else, no NUL or other control byte outside HTAB in a
/// value, no obs-fold, field names are tokens with no space before the colon, the request
/// line is `token SP target SP HTTP/1.d`. The scanner also counts the head's bytes for our
/// limits (431, 414) exactly, which http_parser's own global limit cannot do per server.
///
/// A value type with no allocation: a few integers of state carried across reads.
struct HTTPHeadScanner {
    /// Where in the head the next byte falls.
    enum State: UInt8 {
        case start, leadingLF
        case method, target, version, startLF
        case statusLine
        case lineStart, name, value, valueLF, endLF
    }

    /// The outcome of scanning one run of bytes.
    enum Result: Equatable {
        /// Every byte was valid head; the head goes on past them.
        case needMore
        /// The head ends at this offset (just past its empty line's LF).
        case complete(Int)
        /// The head is malformed or over a limit.
        case error(HTTPParseError)
    }

    let isRequest: Bool
    let maxHeadBytes: Int
    let maxStartLineBytes: Int
    private(set) var state: State = .start
    /// Bytes of this head scanned so far, leading empty lines included.
    private(set) var headBytes = 0
    private var startLineBytes = 0
    private var tokenBytes = 0
    // "HTTP/1.1" is 8 bytes: the version is kept in an integer, not an array.
    private var versionBytes: UInt64 = 0
    private var versionCount = 0
    /// Bytes of the field name being scanned.
    private var nameBytes = 0
    /// Whether a field name of `Content-Length`'s or `Transfer-Encoding`'s length (14, 17
    /// bytes) was seen: when none was, the parser's framing check need not look for them.
    private(set) var mayHaveFramingFields = false

    init(isRequest: Bool, maxHeadBytes: Int, maxStartLineBytes: Int) {
        self.isRequest = isRequest
        self.maxHeadBytes = maxHeadBytes
        self.maxStartLineBytes = maxStartLineBytes
    }

    /// Whether any byte of a head has been seen (an EOF now cuts a message short).
    var hasStarted: Bool { headBytes > 0 }

    /// Starts over for the next message's head.
    mutating func reset() {
        state = .start
        headBytes = 0
        startLineBytes = 0
        tokenBytes = 0
        versionBytes = 0
        versionCount = 0
        nameBytes = 0
        mayHaveFramingFields = false
    }

    /// Scans `bytes` from their start.
    ///
    /// Most of a head is runs of ordinary bytes (a method, a target, a field name, a value):
    /// each state takes its run in a tight loop of its own rather than once around the whole
    /// state machine per byte, and the head limit is checked once per call, by stopping the
    /// scan at the last byte the limit allows.
    ///
    /// - Parameter bytes: the next bytes read.
    /// - Returns: whether the head ends in them (and where), needs more, or is refused.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Result {
        let cr: UInt8 = 13, lf: UInt8 = 10, sp: UInt8 = 32, tab: UInt8 = 9, del: UInt8 = 0x7F
        let n = bytes.count
        let base = headBytes
        // Bytes this call may take before the head is over its limit: byte `end` (if there
        // is one) is the first over it, and is refused below in the state it would enter.
        let end = min(n, max(0, maxHeadBytes - base))
        var i = 0
        defer { headBytes = base + i }
        while i < end {
            let b = bytes[i]
            i += 1
            switch state {
            case .start:
                // RFC 9112 §2.2: empty lines before a request line are ignored.
                if b == cr { state = .leadingLF; continue }
                state = isRequest ? .method : .statusLine
                startLineBytes = 0
                i -= 1
            case .leadingLF:
                guard b == lf else { return .error(.badRequest("CR without LF before the start line")) }
                state = .start
            case .method:
                startLineBytes += 1
                if Self.isTokenByte(b) {
                    var j = i
                    while j < end, Self.isTokenByte(bytes[j]) { j += 1 }
                    tokenBytes += j - i + 1
                    startLineBytes += j - i
                    i = j
                } else if b == sp {
                    guard tokenBytes > 0 else { return .error(.badRequest("empty method")) }
                    tokenBytes = 0
                    state = .target
                } else {
                    return .error(.badRequest("invalid byte \(b) in the method"))
                }
            case .target:
                startLineBytes += 1
                if startLineBytes > maxStartLineBytes { return .error(.uriTooLong(maxStartLineBytes)) }
                if b > sp && b != del {
                    var j = i
                    while j < end, bytes[j] > sp, bytes[j] != del { j += 1 }
                    tokenBytes += j - i + 1
                    startLineBytes += j - i
                    i = j
                    // Every byte of the run was valid, so over the limit inside it or at
                    // its end is the same answer.
                    if startLineBytes > maxStartLineBytes { return .error(.uriTooLong(maxStartLineBytes)) }
                } else if b == sp {
                    guard tokenBytes > 0 else { return .error(.badRequest("empty request target")) }
                    state = .version
                } else {
                    return .error(.badRequest("invalid byte \(b) in the request target"))
                }
            case .version:
                startLineBytes += 1
                if startLineBytes > maxStartLineBytes { return .error(.uriTooLong(maxStartLineBytes)) }
                if versionCount == 0, i + 8 <= end,
                   case let v = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: i - 1, as: UInt64.self)),
                   v == Self.http11 || v == Self.http10, bytes[i + 7] == cr {
                    // The version every client sends, whole in this read: taken in one
                    // comparison (it and its CR) instead of a byte at a time.
                    versionBytes = v
                    versionCount = 8
                    startLineBytes += 8
                    i += 8
                    if startLineBytes > maxStartLineBytes { return .error(.uriTooLong(maxStartLineBytes)) }
                    state = .startLF
                } else if b > sp && b < del {
                    keepVersionByte(b)
                    var j = i
                    while j < end {
                        let c = bytes[j]
                        guard c > sp && c < del else { break }
                        keepVersionByte(c)
                        j += 1
                    }
                    startLineBytes += j - i
                    i = j
                    if startLineBytes > maxStartLineBytes { return .error(.uriTooLong(maxStartLineBytes)) }
                } else if b == cr {
                    if let e = checkVersion() { return .error(e) }
                    state = .startLF
                } else {
                    return .error(.badRequest("invalid byte \(b) in the HTTP version"))
                }
            case .startLF:
                guard b == lf else { return .error(.badRequest("CR without LF in the start line")) }
                state = .lineStart
            case .statusLine:
                if b == cr {
                    state = .startLF
                } else if b < sp && b != tab || b == del {
                    return .error(.badRequest("control byte \(b) in the status line"))
                }
            case .lineStart:
                if Self.isTokenByte(b) {
                    state = .name
                    var j = i
                    while j < end, Self.isTokenByte(bytes[j]) { j += 1 }
                    nameBytes = j - i + 1
                    i = j
                } else if b == cr {
                    state = .endLF
                } else if b == sp || b == tab {
                    // obs-fold: RFC 9112 §5.2 lets a server refuse it; joining lines is
                    // how two parsers come to disagree.
                    return .error(.badRequest("obsolete line folding in the header section"))
                } else {
                    return .error(.badRequest("invalid byte \(b) at the start of a header field"))
                }
            case .name:
                if Self.isTokenByte(b) {
                    var j = i
                    while j < end, Self.isTokenByte(bytes[j]) { j += 1 }
                    nameBytes += j - i + 1
                    i = j
                } else if b == UInt8(ascii: ":") {
                    if nameBytes == 14 || nameBytes == 17 { mayHaveFramingFields = true }
                    state = .value
                } else {
                    // Includes space before the colon (RFC 9112 §5.1: must be refused).
                    return .error(.badRequest("invalid byte \(b) in a header field name"))
                }
            case .value:
                if b >= sp && b != del {
                    var j = i
                    while j < end, bytes[j] >= sp, bytes[j] != del { j += 1 }
                    i = j
                } else if b == cr {
                    state = .valueLF
                } else if b != tab {
                    return .error(.badRequest("control byte \(b) in a header field value"))
                }
            case .valueLF:
                guard b == lf else { return .error(.badRequest("CR without LF in a header field")) }
                state = .lineStart
            case .endLF:
                guard b == lf else { return .error(.badRequest("CR without LF at the end of the header section")) }
                return .complete(i)
            }
        }
        if end < n {
            if isRequest, state == .method || state == .target || state == .version {
                return .error(.uriTooLong(maxStartLineBytes))
            }
            return .error(.headersTooLarge(maxHeadBytes))
        }
        return .needMore
    }

    /// Keeps one byte of the version: the first 8 decide (`HTTP/1.1`, or `HTTP/12.` for a
    /// 505); the rest are only counted, and the start-line limit bounds them.
    @inline(__always)
    private mutating func keepVersionByte(_ b: UInt8) {
        if versionCount < 8 { versionBytes = versionBytes << 8 | UInt64(b) }
        versionCount += 1
    }

    /// RFC 9110's `tchar` as a bit per byte below 128 (`tokenLow` for 0–63, `tokenHigh` for
    /// 64–127): one shift and test, where a `switch` of ranges and cases is a chain of
    /// comparisons per byte of every name and method. Literals, so that reading them is not
    /// a lazy global's once-check; `HTTPHeadScannerTests` checks them byte by byte against
    /// the RFC's list.
    private static let tokenLow: UInt64 = 0x03FF_6CFA_0000_0000   // ! # $ % & ' * + - . 0-9
    private static let tokenHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE  // A-Z ^ _ ` a-z | ~

    /// Whether `b` may be part of a method or a field name (RFC 9110's `tchar`).
    @inline(__always)
    static func isTokenByte(_ b: UInt8) -> Bool {
        b < 64 ? tokenLow >> UInt64(b) & 1 != 0 : b < 128 && tokenHigh >> UInt64(b &- 64) & 1 != 0
    }

    // `HTTP/1.1` and `HTTP/1.0`, first byte highest (as `keepVersionByte` packs them).
    // Literals, so that reading them is not a lazy global's once-check per request.
    private static let http11: UInt64 = 0x4854_5450_2F31_2E31
    private static let http10: UInt64 = 0x4854_5450_2F31_2E30

    /// `HTTP/1.0` or `HTTP/1.1` (any `HTTP/1.d`); `HTTP/2.0` and later get 505.
    private func checkVersion() -> HTTPParseError? {
        // The common case without building an array: one integer comparison.
        if versionCount == 8, versionBytes == Self.http11 || versionBytes == Self.http10 { return nil }
        let kept = min(versionCount, 8)
        var bytes = [UInt8](repeating: 0, count: kept)
        var v = versionBytes
        for k in stride(from: kept - 1, through: 0, by: -1) {
            bytes[k] = UInt8(truncatingIfNeeded: v)
            v >>= 8
        }
        let prefix: [UInt8] = Array("HTTP/".utf8)
        let digit = { (b: UInt8) in b >= 48 && b <= 57 }
        guard bytes.count > 5, Array(bytes[0..<5]) == prefix, digit(bytes[5]) else {
            return .badRequest("malformed HTTP version")
        }
        if bytes[5] != UInt8(ascii: "1") || bytes.count > 6 && digit(bytes[6]) {
            return .versionNotSupported(String(decoding: bytes, as: UTF8.self) + (versionCount > 8 ? "…" : ""))
        }
        guard versionCount == 8, bytes[6] == UInt8(ascii: "."), digit(bytes[7]) else {
            return .badRequest("malformed HTTP version")
        }
        return nil
    }
}
