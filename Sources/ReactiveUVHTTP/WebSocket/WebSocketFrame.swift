// The RFC 6455 frame (§5.2): opcodes, the header's encoding and masking.
//
//      0                   1                   2                   3
//      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//     +-+-+-+-+-------+-+-------------+-------------------------------+
//     |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
//     |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
//     |N|V|V|V|       |S|             |   (if payload len==126/127)   |
//     | |1|2|3|       |K|             |                               |
//     +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
//     |     Extended payload length continued, if payload len == 127  |
//     + - - - - - - - - - - - - - - - +-------------------------------+
//     |                               |Masking-key, if MASK set to 1  |
//     +-------------------------------+-------------------------------+
//
// Frames are built in one buffer (header, then payload masked in place) so a message,
// all its fragments included, goes to the socket as one write.

/// A frame's opcode (RFC 6455 §5.2, §11.8).
enum WebSocketOpcode: UInt8 {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Control frames (close, ping, pong) may come between fragments and must be short.
    var isControl: Bool { rawValue & 0x8 != 0 }
}

/// Which end of the connection we are: it decides who masks (RFC 6455 §5.1).
public enum WebSocketRole: Sendable, Equatable {
    /// The accepting end: sends unmasked frames and requires masked ones.
    case server
    /// The connecting end: masks every frame it sends and refuses masked ones.
    case client
}

/// Frame encoding and masking.
enum WebSocketFrameCodec {
    /// The largest payload a control frame may carry (RFC 6455 §5.5).
    static let maxControlPayload = 125

    /// The header length for a payload of `count` bytes.
    static func headerLength(payload count: Int, masked: Bool) -> Int {
        (count < 126 ? 2 : count <= 0xFFFF ? 4 : 10) + (masked ? 4 : 0)
    }

    /// Appends one frame to `out`: the header, then `payload`, masked with a fresh random
    /// key when `masked` (client frames).
    static func appendFrame(
        to out: inout [UInt8], opcode: WebSocketOpcode, fin: Bool, rsv1: Bool = false,
        payload: UnsafeRawBufferPointer, masked: Bool
    ) {
        let count = payload.count
        out.append((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue)
        let maskBit: UInt8 = masked ? 0x80 : 0
        if count < 126 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(count >> 8))
            out.append(UInt8(truncatingIfNeeded: count))
        } else {
            out.append(maskBit | 127)
            let length = UInt64(count)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: length >> UInt64(shift))) }
        }
        let start = out.count
        if masked {
            // RFC 6455 §10.3: the key must be unpredictable, so it comes from the system's
            // generator (getrandom), not from a seeded one.
            var generator = SystemRandomNumberGenerator()
            let key = UInt32.random(in: .min ... .max, using: &generator)
            withUnsafeBytes(of: key) { out.append(contentsOf: $0) }
            out.append(contentsOf: payload)
            out.withUnsafeMutableBytes { buffer in
                mask(UnsafeMutableRawBufferPointer(rebasing: buffer[(start + 4)...]), key: key)
            }
        } else {
            out.append(contentsOf: payload)
        }
    }

    /// One frame as a new array.
    static func frame(opcode: WebSocketOpcode, fin: Bool = true, rsv1: Bool = false, payload: [UInt8], masked: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(headerLength(payload: payload.count, masked: masked) + payload.count)
        payload.withUnsafeBytes { appendFrame(to: &out, opcode: opcode, fin: fin, rsv1: rsv1, payload: $0, masked: masked) }
        return out
    }

    /// XORs `bytes` in place with the 4-byte `key` (in memory order), starting at key
    /// byte 0: eight bytes at a time, then the tail byte by byte.
    static func mask(_ bytes: UnsafeMutableRawBufferPointer, key: UInt32) {
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return }
        let wide = UInt64(key) | UInt64(key) << 32
        var i = 0
        while i + 8 <= count {
            let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            base.storeBytes(of: word ^ wide, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        // The tail starts at a multiple of 8, so key byte 0 again.
        withUnsafeBytes(of: key) { keyBytes in
            var k = 0
            while i < count {
                bytes[i] ^= keyBytes[k & 3]
                i += 1
                k += 1
            }
        }
    }

    /// The payload of a close frame: the code, big-endian, then the reason in UTF-8,
    /// truncated on a character boundary so the frame stays within 125 bytes.
    static func closePayload(code: UInt16?, reason: String) -> [UInt8] {
        guard let code else { return [] }
        var payload: [UInt8] = [UInt8(code >> 8), UInt8(truncatingIfNeeded: code)]
        var room = maxControlPayload - 2
        for scalar in reason.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            if bytes.count > room { break }
            payload += bytes
            room -= bytes.count
        }
        return payload
    }

    /// Whether `code` may be sent in a close frame (RFC 6455 §7.4: 1004–1006 and 1015 are
    /// reserved for reports, 1016–2999 unassigned, 3000–4999 for libraries and applications).
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }
}
