/// What the frame reader hands to the connection: whole messages and control frames.
enum WebSocketInbound {
    case message(WebSocketMessage)
    case ping([UInt8])
    case pong([UInt8])
    /// The peer's close frame: its code (`nil` when the frame had none) and reason.
    case close(code: UInt16?, reason: String)
}

/// A protocol violation found in the peer's bytes: the code to close with and why.
struct WebSocketViolation: Error, Equatable {
    let code: UInt16
    let reason: String

    /// 1007 for a text message's bytes that are not UTF-8 (whole-frame and general path).
    static let invalidText = WebSocketViolation(code: 1007, reason: "invalid UTF-8 in a text message")
    /// 1007 for a text message that ends inside a UTF-8 sequence (both paths).
    static let unfinishedText = WebSocketViolation(code: 1007, reason: "text ends inside a UTF-8 sequence")
}

/// Turns the peer's bytes into messages and control frames, enforcing RFC 6455's rules
/// (loop thread only; one per connection).
///
/// Bytes are kept only until their frame is complete, and a frame's length is checked
/// against the message limit as soon as its header is read, before its payload is
/// buffered: the buffer holds at most one frame of at most `maxMessageSize` plus one read
/// chunk. Payloads are unmasked (``WebSocketFrameCodec/mask(_:key:)``) as they are copied
/// out of the read bytes, never in them: into the message, a control frame's array, or
/// (a text that comes whole in one uncompressed frame) its string (see `wholeText(_:key:)`). Text is
/// validated as each frame (or each inflated chunk) arrives, so invalid UTF-8 fails fast,
/// across fragments too. Compressed messages (RSV1, RFC 7692) are inflated frame by frame
/// against the same limit, measured on the inflated size.
///
/// The checks, each with its close code (RFC 6455 §5.1–5.5, §7.4.1, §8.1):
/// - 1002: a frame masked the wrong way for our role; RSV2/RSV3 set, or RSV1 without
///   permessage-deflate or on a continuation or control frame; an unknown opcode; a
///   control frame that is fragmented or longer than 125 bytes; a continuation with no
///   message started, or a new message while one is in progress; a 64-bit length with its
///   top bit set; a close frame with a 1-byte payload or a code that may not be sent;
/// - 1007: text (or a close reason) that is not UTF-8; compressed data that does not inflate;
/// - 1009: a message larger than `maxMessageSize`.
final class WebSocketFrameReader {
    let role: WebSocketRole
    let maxMessageSize: Int
    /// The decompressor, when permessage-deflate was negotiated (made on first use).
    private let deflate: WebSocketDeflateParameters?
    // Every `var` here is the connection's loop thread's only (docs/ENGINE.md, rule 2):
    // `@exclusivity(unchecked)` drops the run-time exclusivity check per access, ~600 of a
    // message's ~5,900 instructions under callgrind (ws-instructions-per-message.sh).
    @exclusivity(unchecked) private var inflater: WebSocketInflater?

    /// Bytes received and not yet consumed: the start of an incomplete frame (empty
    /// whenever the last read ended on a frame boundary, which an echo's reads do).
    @exclusivity(unchecked) private var buffer: [UInt8] = []
    /// Whether `feed` is parsing (its `deliver` may be running).
    @exclusivity(unchecked) private var parsing = false
    /// Bytes fed while `parsing` (by a `deliver` that made the transport deliver at once):
    /// they come after the bytes being parsed, so they wait here until those are done.
    @exclusivity(unchecked) private var held: [UInt8] = []

    /// The message being assembled (between its first and its final frame).
    @exclusivity(unchecked) private var messageOpcode: WebSocketOpcode?
    @exclusivity(unchecked) private var messageCompressed = false
    @exclusivity(unchecked) private var message: [UInt8] = []
    @exclusivity(unchecked) private var utf8 = UTF8Validator()
    /// Set after a close frame or a violation: later bytes are ignored.
    @exclusivity(unchecked) private(set) var stopped = false

    init(role: WebSocketRole, maxMessageSize: Int, deflate: WebSocketDeflateParameters?) {
        self.role = role
        self.maxMessageSize = maxMessageSize
        self.deflate = deflate
    }

    /// Bytes buffered (for the memory bound's tests).
    var bufferedBytes: Int { buffer.count + held.count + message.count }

    /// How far one parse of a run of bytes got.
    struct Progress {
        /// Where the bytes not consumed begin (an incomplete frame, or what follows a
        /// `deliver` that returned `false`).
        var end: Int
        /// The incomplete frame's whole length when its header is in (0 otherwise): the
        /// capacity to reserve for it.
        var needed: Int
        /// Whether parsing stopped for want of bytes (not because `deliver` said stop).
        var wantsMore: Bool
    }

    /// Consumes `bytes`, calling `deliver` for each complete message or control frame in
    /// order; `deliver` returns `false` to stop (the rest is kept for the next call).
    /// Throws at the first violation, after which the reader ignores everything.
    ///
    /// Frames are parsed where the bytes are: in the read chunk itself when nothing was
    /// buffered (only an incomplete frame's start is copied, into `buffer`), else in
    /// `buffer` with the chunk appended. Parsing the chunk borrowed, rather than adopting
    /// it as `buffer` and dropping it after, saves a retain and a release per read (and the
    /// payloads are unmasked as they are copied out, never in the chunk, which the stream
    /// may still hold).
    ///
    /// Inlined into its callers (the connection's `receive` and the fuzz entry): called,
    /// its closure-specialized form took `deliver`'s context (the connection) owned, a
    /// retain and a release per read (callgrind, ws-instructions-per-message.sh).
    @inline(__always)
    func feed(_ bytes: [UInt8], _ deliver: (WebSocketInbound) -> Bool) throws(WebSocketViolation) {
        guard !stopped, !bytes.isEmpty else { return }
        if parsing {
            held.append(contentsOf: bytes)
            return
        }
        parsing = true
        defer { parsing = false }
        do {
            var progress: Progress
            if buffer.isEmpty {
                progress = try parse(bytes, deliver)
                if progress.end < bytes.count && !stopped {
                    buffer.reserveCapacity(Swift.max(progress.needed, bytes.count - progress.end))
                    buffer.append(contentsOf: bytes[progress.end...])
                }
            } else {
                buffer.append(contentsOf: bytes)
                progress = try parseBuffer(deliver)
            }
            // Bytes fed while `deliver` ran come after those (unless delivery stopped).
            while progress.wantsMore && !held.isEmpty && !stopped {
                buffer.append(contentsOf: held)
                held = []
                progress = try parseBuffer(deliver)
            }
            // Delivery stopped with bytes held: they wait after the rest, for the next call.
            if !held.isEmpty {
                if !stopped { buffer.append(contentsOf: held) }
                held = []
            }
        } catch {
            stopped = true
            buffer = []
            held = []
            message = []
            throw error
        }
    }

    /// Parses `buffer`, then drops what was consumed and reserves room for the frame begun.
    @inline(__always)
    private func parseBuffer(_ deliver: (WebSocketInbound) -> Bool) throws(WebSocketViolation) -> Progress {
        let progress = try parse(buffer, deliver)
        if progress.end == buffer.count || stopped {
            buffer = []
        } else {
            if progress.end > 0 { buffer.removeSubrange(0..<progress.end) }
            buffer.reserveCapacity(progress.needed)
        }
        return progress
    }

    /// Handles every complete frame of `data`.
    ///
    /// `data` is an array read by subscript, not a pointer from `withUnsafeBytes`: through
    /// that closure `nextFrame` was no longer inlined, and its closure-specialized copy
    /// took `deliver`'s context owned again (~220 instructions and a retain more per
    /// message under callgrind).
    @inline(__always)
    private func parse(_ data: [UInt8], _ deliver: (WebSocketInbound) -> Bool) throws(WebSocketViolation) -> Progress {
        var progress = Progress(end: 0, needed: 0, wantsMore: true)
        while progress.wantsMore, try nextFrame(data, &progress, deliver) {}
        return progress
    }

    /// Parses and handles the frame at `progress.end` if it is complete, moving
    /// `progress.end` past it; `false` when more bytes are needed (`needed` set, when the
    /// header is in) or delivery stopped (`wantsMore` cleared).
    ///
    /// Inlined into `feed` (its one caller): called, its closure-specialized form took
    /// `deliver`'s context owned, a retain and a release per call, two calls per message
    /// (callgrind, ws-instructions-per-message.sh).
    @inline(__always)
    private func nextFrame(
        _ data: [UInt8], _ progress: inout Progress, _ deliver: (WebSocketInbound) -> Bool
    ) throws(WebSocketViolation) -> Bool {
        let offset = progress.end
        let available = data.count - offset
        guard !stopped else {
            progress.wantsMore = false
            return false
        }
        guard available >= 2 else { return false }
        let b0 = data[offset]
        let b1 = data[offset + 1]
        let fin = b0 & 0x80 != 0
        let rsv1 = b0 & 0x40 != 0
        guard let opcode = WebSocketOpcode(rawValue: b0 & 0x0F) else {
            throw WebSocketViolation(code: 1002, reason: "unknown opcode \(b0 & 0x0F)")
        }
        guard b0 & 0x30 == 0 else { throw WebSocketViolation(code: 1002, reason: "reserved bits set") }
        if rsv1 && (deflate == nil || opcode.isControl || opcode == .continuation) {
            throw WebSocketViolation(code: 1002, reason: deflate == nil ? "RSV1 set without an extension" : "RSV1 set on a \(opcode) frame")
        }
        let masked = b1 & 0x80 != 0
        if masked != (role == .server) {
            throw WebSocketViolation(code: 1002, reason: role == .server ? "unmasked client frame" : "masked server frame")
        }
        let length7 = Int(b1 & 0x7F)
        if opcode.isControl {
            guard fin else { throw WebSocketViolation(code: 1002, reason: "fragmented control frame") }
            guard length7 <= WebSocketFrameCodec.maxControlPayload else {
                throw WebSocketViolation(code: 1002, reason: "control frame longer than 125 bytes")
            }
        } else if opcode == .continuation {
            guard messageOpcode != nil else { throw WebSocketViolation(code: 1002, reason: "continuation without a message") }
        } else {
            guard messageOpcode == nil else { throw WebSocketViolation(code: 1002, reason: "new message inside a fragmented one") }
        }
        let headerLength = 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + (masked ? 4 : 0)
        guard available >= headerLength else { return false }
        var length: Int
        var position = offset + 2
        if length7 == 126 {
            length = Int(data[position]) << 8 | Int(data[position + 1])
            position += 2
        } else if length7 == 127 {
            guard data[position] & 0x80 == 0 else { throw WebSocketViolation(code: 1002, reason: "64-bit length with the top bit set") }
            var wide: UInt64 = 0
            for i in 0..<8 { wide = wide << 8 | UInt64(data[position + i]) }
            position += 8
            // Anything past the limit is refused below; clamp so Int never overflows.
            length = wide > UInt64(Int32.max) ? Int(Int32.max) : Int(wide)
        } else {
            length = length7
        }
        // The size check comes before the payload is buffered (memory stays bounded).
        if !opcode.isControl {
            let compressed = opcode == .continuation ? messageCompressed : rsv1
            // Compressed payloads are bounded on their inflated size as they inflate; the
            // compressed frame itself may not exceed the limit either (deflate never needs
            // more than the limit plus its small overhead for data within it).
            let bound = compressed ? maxMessageSize + maxMessageSize / 64 + 64 : maxMessageSize - message.count
            if length > bound {
                throw WebSocketViolation(code: 1009, reason: "message larger than \(maxMessageSize) bytes")
            }
        }
        guard available >= headerLength + length else {
            // The caller reserves this much so the rest of the frame is appended without
            // repeated growth.
            progress.needed = headerLength + length
            return false
        }
        let start = offset + headerLength
        let end = start + length
        let key = masked ? data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: UInt32.self) } : nil
        let payload = start..<end
        progress.end = end
        let more: Bool
        switch opcode {
        case .ping:
            more = deliver(.ping(Self.unmasked(data[payload], key: key)))
        case .pong:
            more = deliver(.pong(Self.unmasked(data[payload], key: key)))
        case .close:
            stopped = true
            more = deliver(try closeFrame(Self.unmasked(data[payload], key: key)))
        case .text where fin && !rsv1:
            more = deliver(.message(.text(try wholeText(data, payload, key: key))))
        case .text, .binary, .continuation:
            if opcode != .continuation {
                messageOpcode = opcode
                messageCompressed = rsv1
                utf8 = UTF8Validator()
            }
            try appendPayload(data[payload], key: key, fin: fin)
            guard fin, let kind = messageOpcode else { return true }
            if kind == .text && !utf8.isComplete { throw WebSocketViolation.unfinishedText }
            let bytes = message
            message = []
            messageOpcode = nil
            more = deliver(.message(kind == .text ? .text(String(decoding: bytes, as: UTF8.self)) : .binary(bytes)))
        }
        if !more { progress.wantsMore = false }
        return more
    }

    /// A control frame's payload as a new array, unmasked.
    private static func unmasked(_ payload: ArraySlice<UInt8>, key: UInt32?) -> [UInt8] {
        var bytes = [UInt8](payload)
        if let key { bytes.withUnsafeMutableBytes { WebSocketFrameCodec.mask($0, key: key) } }
        return bytes
    }

    /// Adds a data frame's payload to the message: copied and unmasked, or inflated; text
    /// validated.
    private func appendPayload(_ payload: ArraySlice<UInt8>, key: UInt32?, fin: Bool) throws(WebSocketViolation) {
        let validateFrom = message.count
        if messageCompressed {
            if inflater == nil, let deflate {
                inflater = WebSocketInflater(deflate)
                if inflater == nil { throw WebSocketViolation(code: 1011, reason: "zlib could not start") }
            }
            guard let inflater else { return }
            // Inflate the frame (unmasked first, in a copy), then (on the final frame) the
            // flush tail RFC 7692 removed.
            var failure: WebSocketInflater.Failure?
            if let key {
                var plain = [UInt8](payload)
                plain.withUnsafeMutableBytes { WebSocketFrameCodec.mask($0, key: key) }
                failure = plain.withUnsafeBytes { inflater.inflate($0, into: &message, limit: maxMessageSize) }
            } else {
                failure = payload.withUnsafeBytes { inflater.inflate($0, into: &message, limit: maxMessageSize) }
            }
            if failure == nil && fin {
                failure = deflateTail.withUnsafeBytes { bytes -> WebSocketInflater.Failure? in
                    inflater.inflate(bytes, into: &message, limit: maxMessageSize)
                }
                inflater.endMessage()
            }
            switch failure {
            case .tooBig?: throw WebSocketViolation(code: 1009, reason: "message larger than \(maxMessageSize) bytes once inflated")
            case .corrupt?: throw WebSocketViolation(code: 1007, reason: "compressed data does not inflate")
            case nil: break
            }
        } else {
            if message.isEmpty && fin {
                message = [UInt8](payload)
            } else {
                message.append(contentsOf: payload)
            }
            // The frame's payload starts at key byte 0, wherever it lands in the message.
            if let key {
                message.withUnsafeMutableBytes { WebSocketFrameCodec.mask(UnsafeMutableRawBufferPointer(rebasing: $0[validateFrom...]), key: key) }
            }
        }
        if messageOpcode == .text {
            let valid = message.withUnsafeBytes { utf8.validate(UnsafeRawBufferPointer(rebasing: $0[validateFrom...])) }
            if !valid { throw WebSocketViolation.invalidText }
        }
    }

    /// A text message that came whole in one uncompressed frame, unmasked (with `key`,
    /// when masked) as it is copied from the read bytes to the stack, validated there unless
    /// it is all ASCII (the same checks and close codes as the general path), then made a
    /// string.
    ///
    /// Why not through `message` as other data frames go: that copies the payload into an
    /// array only to copy it again into the `String` and free the array. Under callgrind
    /// (Benchmarks/http/ws-instructions-per-message.sh) that cost ~560 instructions of a
    /// 64-byte echo. And why through the stack and `String(decoding:as:)` rather than
    /// straight into the string's storage with `init(unsafeUninitializedCapacity:)`: that
    /// initializer's closure call, storage set-up and count update cost ~35 instructions
    /// more than the copy (callgrind, `UVStream.didRead` inclusive per message).
    private func wholeText(_ data: [UInt8], _ range: Range<Int>, key: UInt32?) throws(WebSocketViolation) -> String {
        var failure: WebSocketViolation?
        let text = data.withUnsafeBytes { bytes in
            let payload = UnsafeRawBufferPointer(rebasing: bytes[range])
            return withUnsafeTemporaryAllocation(byteCount: Swift.max(1, payload.count), alignment: 8) { scratch -> String in
                let plain = UnsafeRawBufferPointer(rebasing: scratch[0..<payload.count])
                // Copied, unmasked and checked for ASCII in one pass; only a text with
                // other bytes goes through the validator.
                if !WebSocketFrameCodec.copyUnmasking(payload, to: scratch.baseAddress!, key: key) {
                    var validator = UTF8Validator()
                    if !validator.validate(plain) {
                        failure = .invalidText
                        return ""
                    }
                    if !validator.isComplete {
                        failure = .unfinishedText
                        return ""
                    }
                }
                // Valid, so nothing is repaired.
                return String(decoding: plain.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
            }
        }
        if let failure { throw failure }
        return text
    }

    /// A close frame's code and reason (from its unmasked payload), checked (RFC 6455
    /// §5.5.1, §7.4).
    private func closeFrame(_ payload: [UInt8]) throws(WebSocketViolation) -> WebSocketInbound {
        if payload.isEmpty { return .close(code: nil, reason: "") }
        guard payload.count >= 2 else { throw WebSocketViolation(code: 1002, reason: "close frame with a 1-byte payload") }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard WebSocketFrameCodec.isValidCloseCode(code) else { throw WebSocketViolation(code: 1002, reason: "close code \(code) may not be sent") }
        let reasonBytes = payload[2...]
        var validator = UTF8Validator()
        guard reasonBytes.withUnsafeBytes({ validator.validate($0) }), validator.isComplete else {
            throw WebSocketViolation(code: 1007, reason: "close reason is not UTF-8")
        }
        return .close(code: code, reason: String(decoding: reasonBytes, as: UTF8.self))
    }
}

/// Feeds arbitrary bytes to the frame reader, for fuzzing (libFuzzer's
/// `LLVMFuzzerTestOneInput` calls this): it must return, never crash, hang or grow without
/// bound, whatever the bytes.
///
/// The first byte chooses the setting: bit 0 the role (client when set), bit 1
/// permessage-deflate, bits 2–7 how the rest is cut into reads (1 to 64 bytes a read, so
/// frames split anywhere are exercised). The limit is 64 KiB so zip bombs and long lengths
/// hit it quickly.
///
/// - Parameter data: the fuzzer's input.
/// - Returns: how many messages and control frames were delivered before the bytes ran
///   out or a violation stopped the reader (the violation's code, or 0).
@discardableResult
package func webSocketFuzzFrames(_ data: UnsafeRawBufferPointer) -> (delivered: Int, closeCode: UInt16) {
    guard let setting = data.first else { return (0, 0) }
    let reader = WebSocketFrameReader(
        role: setting & 1 == 0 ? .server : .client, maxMessageSize: 64 * 1024,
        deflate: setting & 2 != 0 ? WebSocketDeflateParameters() : nil)
    let step = Int(setting >> 2) + 1
    var delivered = 0
    var index = 1
    do {
        while index < data.count {
            let end = min(data.count, index + step)
            try reader.feed(Array(data[index..<end])) { _ in
                delivered += 1
                return true
            }
            index = end
        }
    } catch {
        return (delivered, error.code)
    }
    return (delivered, 0)
}
