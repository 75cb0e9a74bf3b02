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
    }

    /// Scans `bytes` from their start.
    ///
    /// - Parameter bytes: the next bytes read.
    /// - Returns: whether the head ends in them (and where), needs more, or is refused.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Result {
        let cr: UInt8 = 13, lf: UInt8 = 10, sp: UInt8 = 32, tab: UInt8 = 9
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            i += 1
            headBytes += 1
            if headBytes > maxHeadBytes {
                if isRequest, state == .method || state == .target || state == .version {
                    return .error(.uriTooLong(maxStartLineBytes))
                }
                return .error(.headersTooLarge(maxHeadBytes))
            }
            switch state {
            case .start:
                // RFC 9112 §2.2: empty lines before a request line are ignored.
                if b == cr { state = .leadingLF; continue }
                state = isRequest ? .method : .statusLine
                startLineBytes = 0
                i -= 1
                headBytes -= 1
            case .leadingLF:
                guard b == lf else { return .error(.badRequest("CR without LF before the start line")) }
                state = .start
            case .method:
                startLineBytes += 1
                if b == sp {
                    guard tokenBytes > 0 else { return .error(.badRequest("empty method")) }
                    tokenBytes = 0
                    state = .target
                } else if HTTPHeaders.isTokenByte(b) {
                    tokenBytes += 1
                } else {
                    return .error(.badRequest("invalid byte \(b) in the method"))
                }
            case .target:
                startLineBytes += 1
                if startLineBytes > maxStartLineBytes { return .error(.uriTooLong(maxStartLineBytes)) }
                if b == sp {
                    guard tokenBytes > 0 else { return .error(.badRequest("empty request target")) }
                    state = .version
                } else if b > sp && b != 0x7F {
                    tokenBytes += 1
                } else {
                    return .error(.badRequest("invalid byte \(b) in the request target"))
                }
            case .version:
                startLineBytes += 1
                if startLineBytes > maxStartLineBytes { return .error(.uriTooLong(maxStartLineBytes)) }
                if b == cr {
                    if let e = checkVersion() { return .error(e) }
                    state = .startLF
                } else if b <= sp || b >= 0x7F {
                    return .error(.badRequest("invalid byte \(b) in the HTTP version"))
                } else {
                    // The first 8 bytes decide (`HTTP/1.1`, or `HTTP/12.` for a 505); the
                    // rest is only counted, and the start-line limit bounds it.
                    if versionCount < 8 { versionBytes = versionBytes << 8 | UInt64(b) }
                    versionCount += 1
                }
            case .startLF:
                guard b == lf else { return .error(.badRequest("CR without LF in the start line")) }
                state = .lineStart
            case .statusLine:
                if b == cr {
                    state = .startLF
                } else if b < sp && b != tab || b == 0x7F {
                    return .error(.badRequest("control byte \(b) in the status line"))
                }
            case .lineStart:
                if b == cr {
                    state = .endLF
                } else if b == sp || b == tab {
                    // obs-fold: RFC 9112 §5.2 lets a server refuse it; joining lines is
                    // how two parsers come to disagree.
                    return .error(.badRequest("obsolete line folding in the header section"))
                } else if HTTPHeaders.isTokenByte(b) {
                    state = .name
                } else {
                    return .error(.badRequest("invalid byte \(b) at the start of a header field"))
                }
            case .name:
                if b == UInt8(ascii: ":") {
                    state = .value
                } else if !HTTPHeaders.isTokenByte(b) {
                    // Includes space before the colon (RFC 9112 §5.1: must be refused).
                    return .error(.badRequest("invalid byte \(b) in a header field name"))
                }
            case .value:
                // Most of a head is field values: run through the ordinary bytes here
                // rather than once around the whole loop per byte.
                if b >= sp && b != 0x7F {
                    var j = i
                    while j < n, bytes[j] >= sp, bytes[j] != 0x7F { j += 1 }
                    headBytes += j - i
                    i = j
                    if headBytes > maxHeadBytes { return .error(.headersTooLarge(maxHeadBytes)) }
                    continue
                }
                if b == cr {
                    state = .valueLF
                } else if b < sp && b != tab || b == 0x7F {
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
        return .needMore
    }

    private static let http11 = pack("HTTP/1.1")
    private static let http10 = pack("HTTP/1.0")
    private static func pack(_ s: String) -> UInt64 { s.utf8.reduce(0) { $0 << 8 | UInt64($1) } }

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
