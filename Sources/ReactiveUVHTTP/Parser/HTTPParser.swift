import CHTTPParser

/// The one type that speaks to http_parser (Node's, 2.9, from Debian's libhttp-parser-dev):
/// swap the parser here and nowhere else.
///
/// ```
///  bytes ──▶ HTTPHeadScanner (strict head grammar, 431/414/505/400)
///        ──▶ http_parser_execute ──callbacks──▶ onHead / onBody / onEnd
///                 │ paused in on_message_complete, so one call never runs past a message
///                 ▼
///        (consumed, outcome)  — the caller resumes at `consumed` for the next message
/// ```
///
/// The parser works straight on the caller's read buffer: the target and the field names
/// and values are copied out once, as bytes, into one ``HTTPRawHead`` per head (strings are
/// made from it only when the application asks); body bytes are handed to `onBody` as a
/// view of that buffer. Framing defences that http_parser lacks or leaves lenient are ours:
/// `Content-Length` together with `Transfer-Encoding`, differing lengths, a request whose
/// last transfer coding is not `chunked`, bodies and trailers over the limits.
///
/// Not thread-safe: one parser per connection, used on its loop's thread.
final class HTTPParser {
    /// Requests (a server) or responses (a client).
    enum Kind { case request, response }

    /// The limits a message is held to.
    struct Limits: Sendable {
        /// The most bytes of a head (start line, fields, empty line); also bounds trailers.
        var maxHeadBytes = 64 * 1024
        /// The most bytes of a request line.
        var maxStartLineBytes = 8 * 1024
        /// The most bytes of a body (after removing chunked framing).
        var maxBodyBytes = 1 << 20
    }

    /// What one call of ``parse(_:)`` ended on.
    enum Outcome: Equatable {
        /// Every byte was taken; the message goes on past them.
        case needMore
        /// A message ended at `consumed`; bytes after it are the next message's.
        case messageEnd
        /// A message asking to switch protocols ended at `consumed`; bytes after it are not HTTP.
        case upgrade
        /// The bytes are refused; nothing more will be parsed.
        case error(HTTPParseError)
    }

    let kind: Kind
    let limits: Limits
    /// Called once per message when its head is complete.
    ///
    /// `consuming`: the head is made for this call and handed on whole (a server's request
    /// keeps its fields), so it is moved through rather than copied and destroyed (a
    /// retain and a release of each of its references, per request).
    var onHead: (consuming HTTPMessageHead) -> Void = { _ in }
    /// Called with each run of body bytes (a view of the buffer being parsed: copy to keep).
    var onBody: (UnsafeRawBufferPointer) -> Void = { _ in }
    /// Called when a message ends, with its trailer fields (empty unless chunked with trailers).
    var onEnd: (HTTPHeaders) -> Void = { _ in }
    /// Set by a client before a response to `HEAD` (or a 1xx/204/304 it expects): the
    /// response has no body whatever its headers say.
    var skipBody = false

    private let parser: UnsafeMutablePointer<http_parser>
    /// ``sharedSettings``, read once here so that a parse reads a stored `let`, not a lazy global.
    private let settings: UnsafePointer<http_parser_settings>
    // The state below is touched only by `parse`/`finish` and the callbacks they run, on
    // one connection's loop thread (docs/ENGINE.md, rule 2: confined to one thread): the
    // run-time exclusivity checks, a thread-local lookup per access and about a tenth of
    // a request's instructions, buy nothing here, so they are off.
    @exclusivity(unchecked) private var scanner: HTTPHeadScanner
    @exclusivity(unchecked) private var inHead = true
    @exclusivity(unchecked) private var pendingHead: [UInt8] = []
    @exclusivity(unchecked) private var failure: HTTPParseError?
    /// Whether the message whose head was handed over asks to switch protocols.
    @exclusivity(unchecked) private var upgrading = false
    /// The head's text (start line, then each field's name and value) or a trailer
    /// field's name or value, collected from http_parser's callbacks: raw heap bytes rather than a `[UInt8]`, because emptying an array while
    /// keeping its capacity (`removeAll(keepingCapacity:)`) and appending to it each went
    /// through `replaceSubrange`'s and `append`'s generic paths, ~80 instructions a call,
    /// seven calls a request. Freed in `deinit`; grows by doubling, bounded by the head
    /// limits the scanner and the trailer check enforce.
    @exclusivity(unchecked) private var text: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private var textCount = 0
    @exclusivity(unchecked) private var textCapacity = 256
    /// How many offsets (4 a field: name start, name length, value start, value length,
    /// see ``HTTPRawHead``) say where each head field lies in `text`. The head's text is
    /// kept whole in `text` until the head is complete, then copied into one
    /// ``HTTPRawHead``. The offsets live in the same allocation, at its end: field `i`'s
    /// four `UInt32`s at `textCapacity - 16 × (i + 1)`, the text growing up to meet them: an allocation of their own cost every idle keep-alive connection
    /// ~270 bytes more (issue 29's bound is 4 KiB a connection).
    @exclusivity(unchecked) private var spanCount = 0
    /// The start line's text is `text[0..<startLineCount]`; the field being collected
    /// starts at `itemStart`, its value at `nameEnd`.
    @exclusivity(unchecked) private var startLineCount = 0
    @exclusivity(unchecked) private var itemStart = 0
    @exclusivity(unchecked) private var nameEnd = 0
    /// A trailer field's name (trailers are rare: made into strings as they come).
    @exclusivity(unchecked) private var fieldName = ""
    @exclusivity(unchecked) private var readingValue = false
    @exclusivity(unchecked) private var headersDone = false
    @exclusivity(unchecked) private var startLineTaken = false
    @exclusivity(unchecked) private var trailers = HTTPHeaders()
    @exclusivity(unchecked) private var trailerBytes = 0
    @exclusivity(unchecked) private var bodyBytes = 0
    @exclusivity(unchecked) private var ended = false

    init(_ kind: Kind, limits: Limits = Limits()) {
        self.kind = kind
        self.limits = limits
        // Aligned for the `UInt32` offsets at its end; `textCapacity` stays a multiple of 4.
        text = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 4).bindMemory(to: UInt8.self, capacity: 256)
        scanner = HTTPHeadScanner(isRequest: kind == .request, maxHeadBytes: limits.maxHeadBytes, maxStartLineBytes: limits.maxStartLineBytes)
        // Heap storage that C points at, never a stored property's address.
        parser = .allocate(capacity: 1)
        settings = Self.sharedSettings
        http_parser_init(parser, kind == .request ? HTTP_REQUEST : HTTP_RESPONSE)
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        parser.deallocate()
        UnsafeMutableRawPointer(text).deallocate()
    }

    /// Adds `bytes` to the text being collected.
    @inline(__always)
    private func collect(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if textCount + bytes.count + 4 * spanCount > textCapacity { growText(to: textCount + bytes.count + 4 * spanCount) }
        (text + textCount).initialize(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        textCount += bytes.count
    }

    @inline(never)
    private func growText(to needed: Int) {
        let capacity = max(textCapacity * 2, (needed + 3) & ~3)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 4)
        grown.copyMemory(from: text, byteCount: textCount)
        // The offsets keep their distance from the end.
        let spanBytes = 4 * spanCount
        (grown + capacity - spanBytes).copyMemory(from: UnsafeRawPointer(text) + textCapacity - spanBytes, byteCount: spanBytes)
        UnsafeMutableRawPointer(text).deallocate()
        text = grown.bindMemory(to: UInt8.self, capacity: capacity)
        textCapacity = capacity
    }

    /// The text collected so far, as a string (invalid UTF-8 repaired); empties it.
    @inline(__always)
    private func takeText() -> String {
        let string = String(decoding: UnsafeBufferPointer(start: text, count: textCount), as: UTF8.self)
        textCount = 0
        return string
    }

    /// Whether bytes of a message have arrived and it has not ended (EOF now cuts it short).
    var isMidMessage: Bool { inHead ? scanner.hasStarted : !ended }

    /// Parses `bytes` up to the end of at most one message.
    ///
    /// - Parameter bytes: bytes read; may hold part of a message, or several.
    /// - Returns: how many bytes were taken and why parsing stopped there. After
    ///   ``Outcome/messageEnd`` call again with the rest; after ``Outcome/upgrade`` or
    ///   ``Outcome/error(_:)`` the rest is not this parser's.
    func parse(_ bytes: UnsafeRawBufferPointer) -> (consumed: Int, outcome: Outcome) {
        if let failure { return (0, .error(failure)) }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return (0, .needMore) }
        if inHead {
            if !scanner.hasStarted { beginMessage() }
            switch scanner.scan(bytes) {
            case .error(let e):
                return (0, fail(e))
            case .needMore:
                // http_parser sees no byte of a head before the whole head passed the
                // scanner, so how the head was split into reads never changes which error
                // wins. Only a head split across reads is copied (bounded by the limit).
                pendingHead.append(contentsOf: bytes)
                return (bytes.count, .needMore)
            case .complete:
                inHead = false
                if !pendingHead.isEmpty {
                    let held = pendingHead
                    pendingHead.removeAll(keepingCapacity: false)
                    let n = held.withUnsafeBytes { http_parser_execute(parser, settings, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
                    if case .error(let e) = outcome(afterParsing: n, of: held.count) { return (0, .error(e)) }
                }
            }
        }
        let n = http_parser_execute(parser, settings, base.assumingMemoryBound(to: CChar.self), bytes.count)
        return (n, outcome(afterParsing: n, of: bytes.count))
    }

    /// Tells the parser the peer ended its side (EOF).
    ///
    /// - Returns: ``Outcome/messageEnd`` when that ends a response read until EOF,
    ///   ``Outcome/needMore`` when no message was under way, an error when one was cut short.
    func finish() -> Outcome {
        if let failure { return .error(failure) }
        if inHead {
            return scanner.hasStarted ? fail(.badRequest("connection closed inside a message head")) : .needMore
        }
        if ended { return .needMore }
        _ = http_parser_execute(parser, settings, nil, 0)
        let result = outcome(afterParsing: 0, of: 0)
        if case .needMore = result { return fail(.badRequest("connection closed inside a message body")) }
        return result
    }

    private func beginMessage() {
        upgrading = false
        textCount = 0
        spanCount = 0
        startLineCount = 0
        itemStart = 0
        nameEnd = 0
        // Emptied only when set: assigning a string releases the old one, a call per message.
        if !fieldName.isEmpty { fieldName = "" }
        readingValue = false
        headersDone = false
        startLineTaken = false
        // Trailers were moved out by `messageComplete`; a message cut short may leave some.
        if trailers.count != 0 { trailers = HTTPHeaders() }
        trailerBytes = 0
        bodyBytes = 0
        ended = false
    }

    private func outcome(afterParsing n: Int, of count: Int) -> Outcome {
        let errno = http_errno(parser.pointee.http_errno)
        if errno == HPE_PAUSED {
            http_parser_pause(parser, 0)
            return messageEnded()
        }
        if errno != HPE_OK {
            if let failure { return .error(failure) }
            return fail(Self.error(for: errno))
        }
        if ended { return messageEnded() }
        return .needMore
    }

    private func messageEnded() -> Outcome {
        let upgraded = upgrading
        inHead = true
        scanner.reset()
        return upgraded ? .upgrade : .messageEnd
    }

    @discardableResult
    private func fail(_ e: HTTPParseError) -> Outcome {
        failure = e
        return .error(e)
    }

    private static func error(for errno: http_errno) -> HTTPParseError {
        let name = String(cString: http_errno_name(errno))
        switch errno {
        case HPE_HEADER_OVERFLOW: return HTTPParseError(status: 431, reason: "header section too large (\(name))")
        case HPE_UNEXPECTED_CONTENT_LENGTH: return .badRequest("conflicting message framing (\(name))")
        case HPE_INVALID_CHUNK_SIZE: return .badRequest("invalid chunk size (\(name))")
        default: return .badRequest("malformed message (\(name))")
        }
    }

    // MARK: - Callbacks (C function pointers; the parser object rides in `data`)

    /// Runs `body` on the parser whose http_parser `p` is, without retaining it.
    ///
    /// Sound: http_parser calls back only from inside `http_parser_execute`, which only
    /// ``parse(_:)`` and ``finish()`` call, on `self`, so the parser is alive (its caller
    /// holds it) for every callback. `takeUnretainedValue()` retained and released it around
    /// each callback, five a request.
    @inline(__always)
    private static func with(_ p: UnsafeMutablePointer<http_parser>?, _ body: (HTTPParser) -> Int32) -> Int32 {
        Unmanaged<HTTPParser>.fromOpaque(p.unsafelyUnwrapped.pointee.data)._withUnsafeGuaranteedRef(body)
    }

    private static func chars(_ at: UnsafePointer<CChar>?, _ length: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: at, count: length)
    }

    /// The callbacks, in heap storage made once and never freed or written again.
    ///
    /// A `static var` passed as `settings` was an inout access to a global: the runtime
    /// checked its exclusivity on every `http_parser_execute` (a thread-local access set,
    /// about a hundred instructions a request). A pointer read from a `let` is not checked.
    nonisolated(unsafe) private static let sharedSettings: UnsafePointer<http_parser_settings> = {
        var s = http_parser_settings()
        s.on_url = { p, at, length in with(p) { $0.appendText(chars(at, length)) } }
        s.on_status = { p, at, length in with(p) { $0.appendText(chars(at, length)) } }
        s.on_header_field = { p, at, length in with(p) { $0.field(chars(at, length)) } }
        s.on_header_value = { p, at, length in with(p) { $0.value(chars(at, length)) } }
        s.on_headers_complete = { p in with(p) { $0.headersComplete() } }
        s.on_body = { p, at, length in with(p) { $0.body(chars(at, length)) } }
        s.on_message_complete = { p in with(p) { $0.messageComplete() } }
        let storage = UnsafeMutablePointer<http_parser_settings>.allocate(capacity: 1)
        storage.initialize(to: s)
        return UnsafePointer(storage)
    }()

    private func appendText(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        collect(bytes)
        return 0
    }

    private func field(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        if readingValue { storeField() }
        if !startLineTaken { takeStartLineText() }
        if headersDone {
            trailerBytes += bytes.count
            if trailerBytes > limits.maxHeadBytes { return refuse(.headersTooLarge(limits.maxHeadBytes)) }
        }
        collect(bytes)
        return 0
    }

    private func value(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        if !readingValue {
            if headersDone { fieldName = takeText() } else { nameEnd = textCount }
            readingValue = true
        }
        if headersDone {
            trailerBytes += bytes.count
            if trailerBytes > limits.maxHeadBytes { return refuse(.headersTooLarge(limits.maxHeadBytes)) }
            // Trailers never passed the scanner: hold them to the same rule here.
            if bytes.contains(where: { $0 < 32 && $0 != 9 || $0 == 0x7F }) {
                return refuse(.badRequest("control byte in a trailer field"))
            }
        }
        collect(bytes)
        return 0
    }

    private func storeField() {
        readingValue = false
        if headersDone {
            trailers.addUnchecked(fieldName, takeText())
            fieldName = ""
            return
        }
        let count = textCount, start = itemStart, end = nameEnd
        let spanBytes = 4 * spanCount + 16
        if count + spanBytes > textCapacity { growText(to: count + spanBytes) }
        // The field's four offsets in order, just below the fields before it.
        let field = UnsafeMutableRawPointer(text) + textCapacity - spanBytes
        field.storeBytes(of: UInt32(truncatingIfNeeded: start), toByteOffset: 0, as: UInt32.self)
        field.storeBytes(of: UInt32(truncatingIfNeeded: end - start), toByteOffset: 4, as: UInt32.self)
        field.storeBytes(of: UInt32(truncatingIfNeeded: end), toByteOffset: 8, as: UInt32.self)
        field.storeBytes(of: UInt32(truncatingIfNeeded: count - end), toByteOffset: 12, as: UInt32.self)
        spanCount += 4
        itemStart = textCount
    }


    /// The start line's text stays at the front of `text`; the fields follow it.
    private func takeStartLineText() {
        startLineTaken = true
        startLineCount = textCount
        itemStart = textCount
    }

    /// Records why the message is refused and stops http_parser. -1, not 1: from
    /// on_headers_complete, 1 means "no body follows" and 2 "upgrade", not an error; -1 is
    /// an error from every callback.
    private func refuse(_ e: HTTPParseError) -> Int32 {
        failure = e
        return -1
    }

    private func headersComplete() -> Int32 {
        if readingValue { storeField() } else if !startLineTaken { takeStartLineText() }
        headersDone = true
        // The head's text in one object; `text` is free again for the trailers.
        let raw = HTTPRawHead.make(spansEnd: UnsafeRawPointer(text) + textCapacity, fieldCount: spanCount / 4, bytes: text, byteCount: textCount, startLine: 0..<startLineCount)
        textCount = 0
        spanCount = 0
        let p = parser.pointee
        let upgrade = p.upgrade != 0 || kind == .request && UInt32(p.method) == HTTP_CONNECT.rawValue
        var contentLength: Int?
        if let e = checkFraming(raw, contentLength: &contentLength) { return refuse(e) }
        // After the check, as `raw`'s last use: moved into the headers, not retained.
        let headers = HTTPHeaders(raw: consume raw)
        upgrading = upgrade
        // Made whole here and moved into `onHead` (a `let` whose last use that is): a head
        // stored in the parser and swapped out was assigned field by field (a release of
        // each old value) and reset per message, and a copy was a retain of each of its
        // strings and of its fields (~260 instructions a request under callgrind).
        // (`var` and changed field by field, it was copied into the call: `consume` of it
        // is refused by this compiler.)
        let head = HTTPMessageHead(
            method: kind == .request ? Self.methodName(UInt32(p.method)) : "",
            status: kind == .request ? 0 : Int(p.status_code),
            version: HTTPVersion(major: Int(p.http_major), minor: Int(p.http_minor)),
            headers: headers,
            keepAlive: http_should_keep_alive(parser) != 0,
            chunked: p.flags & UInt32(F_CHUNKED.rawValue) != 0,
            contentLength: contentLength,
            upgrade: upgrade)
        onHead(consume head)
        if kind == .response && skipBody { return 1 }
        return 0
    }

    /// http_parser's method names, made once: a request's method is one of these, and a
    /// `String(cString:)` per request cost more than the rest of the start line.
    private static let methodNames: [String] = (0..<64).map { code in
        String(cString: http_method_str(http_method(UInt32(code))))
    }

    private static func methodName(_ code: UInt32) -> String {
        // The common methods as literals: taking one from `methodNames` cost the global's
        // once-check and a retain and release of the array and of the string, per request.
        switch code {
        case HTTP_GET.rawValue: return "GET"
        case HTTP_HEAD.rawValue: return "HEAD"
        case HTTP_POST.rawValue: return "POST"
        case HTTP_PUT.rawValue: return "PUT"
        case HTTP_DELETE.rawValue: return "DELETE"
        default: return Int(code) < methodNames.count ? methodNames[Int(code)] : String(cString: http_method_str(http_method(code)))
        }
    }

    /// The framing rules RFC 9112 §6 sets and http_parser does not enforce all of.
    ///
    /// `raw` is the head's (`head.raw`), passed rather than read back from `head`: the
    /// optional's load was a retain and a release a request.
    private func checkFraming(_ raw: HTTPRawHead, contentLength: inout Int?) -> HTTPParseError? {
        // Most requests carry neither field: the scanner saw no name of their lengths, or
        // one walk over the names decides it, without making the arrays of values below.
        guard scanner.mayHaveFramingFields, raw.contains("Content-Length", or: "Transfer-Encoding") else { return nil }
        let headers = HTTPHeaders(raw: raw)
        let lengths = headers.values("Content-Length")
        let codings = headers.values("Transfer-Encoding")
        if !codings.isEmpty {
            if !lengths.isEmpty { return .badRequest("both Content-Length and Transfer-Encoding") }
            let last = codings.last!.split(separator: ",").last.map { $0.trimmingSpaces } ?? ""
            if kind == .request && !HTTPHeaders.sameName(last, "chunked") {
                return .badRequest("request Transfer-Encoding does not end in chunked")
            }
        }
        if let first = lengths.first {
            var parsed: Int?
            for value in lengths {
                for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let t = part.trimmingSpaces
                    guard !t.isEmpty, t.utf8.count <= 18, t.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(t) else {
                        return .badRequest("invalid Content-Length \(first)")
                    }
                    if let parsed, parsed != n { return .badRequest("differing Content-Length values") }
                    parsed = n
                }
            }
            contentLength = parsed
            if let n = parsed, n > limits.maxBodyBytes, !(kind == .response && skipBody) {
                return .bodyTooLarge(limits.maxBodyBytes)
            }
        }
        return nil
    }

    private func body(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        bodyBytes += bytes.count
        if bodyBytes > limits.maxBodyBytes { return refuse(.bodyTooLarge(limits.maxBodyBytes)) }
        onBody(bytes)
        return 0
    }

    private func messageComplete() -> Int32 {
        if readingValue { storeField() }
        ended = true
        // Moved out, not passed from the property: a stored property handed to a call is
        // retained around it (the callee could change it), and the next message starts
        // with none anyway.
        var ending = HTTPHeaders()
        swap(&ending, &trailers)
        onEnd(ending)
        // Stop here so the caller learns where this message ended (pipelining, upgrade).
        http_parser_pause(parser, 1)
        return 0
    }
}
