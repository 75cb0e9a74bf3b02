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
/// chunk. Payloads are unmasked in place (``WebSocketFrameCodec/mask(_:key:)``), except a
/// text that comes whole in one uncompressed frame, unmasked as it is copied into its
/// string (see `wholeText(_:key:)`). Text is
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

    /// Bytes received and not yet consumed, from `offset` on.
    @exclusivity(unchecked) private var buffer: [UInt8] = []
    @exclusivity(unchecked) private var offset = 0

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
    var bufferedBytes: Int { buffer.count - offset + message.count }

    /// Consumes `bytes`, calling `deliver` for each complete message or control frame in
    /// order; `deliver` returns `false` to stop (the rest is dropped). Throws at the first
    /// violation, after which the reader ignores everything.
    ///
    /// Inlined into its callers (the connection's `receive` and the fuzz entry): called,
    /// its closure-specialized form took `deliver`'s context (the connection) owned, a
    /// retain and a release per read (callgrind, ws-instructions-per-message.sh).
    @inline(__always)
    func feed(_ bytes: [UInt8], _ deliver: (WebSocketInbound) -> Bool) throws(WebSocketViolation) {
        guard !stopped, !bytes.isEmpty else { return }
        if offset == buffer.count {
            buffer = bytes
            offset = 0
        } else {
            if offset > 0 {
                buffer.removeSubrange(0..<offset)
                offset = 0
            }
            buffer.append(contentsOf: bytes)
        }
        do {
            while try nextFrame(deliver) {}
        } catch {
            stopped = true
            buffer = []
            offset = 0
            message = []
            throw error
        }
        if offset == buffer.count {
            buffer = []
            offset = 0
        }
    }

    /// Parses and handles one frame if it is complete; `false` when more bytes are needed
    /// or delivery stopped.
    ///
    /// Inlined into `feed` (its one caller): called, its closure-specialized form took
    /// `deliver`'s context owned, a retain and a release per call, two calls per message
    /// (callgrind, ws-instructions-per-message.sh).
    @inline(__always)
    private func nextFrame(_ deliver: (WebSocketInbound) -> Bool) throws(WebSocketViolation) -> Bool {
        let available = buffer.count - offset
        guard !stopped, available >= 2 else { return false }
        let b0 = buffer[offset]
        let b1 = buffer[offset + 1]
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
            length = Int(buffer[position]) << 8 | Int(buffer[position + 1])
            position += 2
        } else if length7 == 127 {
            guard buffer[position] & 0x80 == 0 else { throw WebSocketViolation(code: 1002, reason: "64-bit length with the top bit set") }
            var wide: UInt64 = 0
            for i in 0..<8 { wide = wide << 8 | UInt64(buffer[position + i]) }
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
            // Reserve now so the rest of the frame is appended without repeated growth.
            buffer.reserveCapacity(offset + headerLength + length)
            return false
        }
        let start = offset + headerLength
        let end = start + length
        let key = masked ? buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: UInt32.self) } : nil
        let isWholeText = opcode == .text && fin && !rsv1
        if let key, !isWholeText {
            buffer.withUnsafeMutableBytes { WebSocketFrameCodec.mask(UnsafeMutableRawBufferPointer(rebasing: $0[start..<end]), key: key) }
        }
        offset = end
        switch opcode {
        case .ping:
            return deliver(.ping(Array(buffer[start..<end])))
        case .pong:
            return deliver(.pong(Array(buffer[start..<end])))
        case .close:
            stopped = true
            return deliver(try closeFrame(start..<end))
        case .text where isWholeText:
            return deliver(.message(.text(try wholeText(start..<end, key: key))))
        case .text, .binary, .continuation:
            if opcode != .continuation {
                messageOpcode = opcode
                messageCompressed = rsv1
                utf8 = UTF8Validator()
            }
            try appendPayload(start..<end, fin: fin)
            guard fin, let kind = messageOpcode else { return true }
            if kind == .text && !utf8.isComplete { throw WebSocketViolation.unfinishedText }
            let payload = message
            message = []
            messageOpcode = nil
            return deliver(.message(kind == .text ? .text(String(decoding: payload, as: UTF8.self)) : .binary(payload)))
        }
    }

    /// Adds a data frame's payload to the message: copied, or inflated; text validated.
    private func appendPayload(_ range: Range<Int>, fin: Bool) throws(WebSocketViolation) {
        let validateFrom = message.count
        if messageCompressed {
            if inflater == nil, let deflate {
                inflater = WebSocketInflater(deflate)
                if inflater == nil { throw WebSocketViolation(code: 1011, reason: "zlib could not start") }
            }
            guard let inflater else { return }
            // Inflate the frame, then (on the final frame) the flush tail RFC 7692 removed.
            var failure = buffer.withUnsafeBytes { bytes -> WebSocketInflater.Failure? in
                inflater.inflate(UnsafeRawBufferPointer(rebasing: bytes[range]), into: &message, limit: maxMessageSize)
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
        } else if message.isEmpty && fin {
            message = Array(buffer[range])
        } else {
            message.append(contentsOf: buffer[range])
        }
        if messageOpcode == .text {
            let valid = message.withUnsafeBytes { utf8.validate(UnsafeRawBufferPointer(rebasing: $0[validateFrom...])) }
            if !valid { throw WebSocketViolation.invalidText }
        }
    }

    /// A text message that came whole in one uncompressed frame, unmasked (with `key`,
    /// when masked) as it is copied from the read buffer into the string's own storage,
    /// then validated there (the same checks and close codes as the general path).
    ///
    /// Why not through `message` as other data frames go: that copies the payload into an
    /// array only to copy it again into the `String` and free the array; and unmasking in
    /// place writes to the read buffer, which the stream still holds, so the whole read
    /// chunk was copied first (copy on write). Under callgrind
    /// (Benchmarks/http/ws-instructions-per-message.sh) the first cost ~560 and the second
    /// ~280 instructions of a 64-byte echo.
    private func wholeText(_ range: Range<Int>, key: UInt32?) throws(WebSocketViolation) -> String {
        var failure: WebSocketViolation?
        let text = buffer.withUnsafeBytes { bytes in
            let payload = UnsafeRawBufferPointer(rebasing: bytes[range])
            return String(unsafeUninitializedCapacity: payload.count) { utf8 in
                let out = UnsafeMutableRawBufferPointer(utf8)
                if payload.count > 0 { out.copyMemory(from: payload) }
                if let key { WebSocketFrameCodec.mask(out, key: key) }
                var validator = UTF8Validator()
                if !validator.validate(UnsafeRawBufferPointer(out)) {
                    failure = .invalidText
                    return 0
                }
                if !validator.isComplete {
                    failure = .unfinishedText
                    return 0
                }
                return payload.count
            }
        }
        if let failure { throw failure }
        return text
    }

    /// A close frame's code and reason, checked (RFC 6455 §5.5.1, §7.4).
    private func closeFrame(_ range: Range<Int>) throws(WebSocketViolation) -> WebSocketInbound {
        if range.isEmpty { return .close(code: nil, reason: "") }
        guard range.count >= 2 else { throw WebSocketViolation(code: 1002, reason: "close frame with a 1-byte payload") }
        let code = UInt16(buffer[range.lowerBound]) << 8 | UInt16(buffer[range.lowerBound + 1])
        guard WebSocketFrameCodec.isValidCloseCode(code) else { throw WebSocketViolation(code: 1002, reason: "close code \(code) may not be sent") }
        let reasonBytes = Array(buffer[(range.lowerBound + 2)..<range.upperBound])
        var validator = UTF8Validator()
        guard validator.validate(reasonBytes), validator.isComplete else {
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
