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

    /// The frames of one message (or one control frame) as one array: `payload` split into
    /// pieces of at most `fragmentSize` bytes (one frame when `nil`), each piece's header
    /// then its bytes, masked with a fresh random key per frame when `masked` (client
    /// frames). RSV1 goes on the first frame only, FIN (when `fin`) on the last.
    ///
    /// Why the frames are written through a pointer and the array is made two ways: this
    /// runs once per message sent. Growing an array with `reserveCapacity` and `append`
    /// (a capacity and uniqueness check per header byte, a generic append for the payload)
    /// cost ~550 instructions for a 64-byte echo under callgrind
    /// (Benchmarks/http/ws-instructions-per-message.sh); `init(unsafeUninitializedCapacity:)`
    /// is not specialized outside the standard library and looks the storage type up at
    /// run time (~530 on its own). A small message is therefore written on the stack and
    /// copied into an array made by the specialized copying initializer (~180 with its
    /// allocation); a large one is written in place, where the lookup is small beside its
    /// bytes.
    static func frames(
        opcode: WebSocketOpcode, fin: Bool = true, rsv1: Bool = false, payload: UnsafeRawBufferPointer,
        fragmentSize: Int? = nil, masked: Bool
    ) -> [UInt8] {
        let count = payload.count
        let size = Swift.max(1, fragmentSize ?? count)
        let pieces = count <= size ? 1 : (count + size - 1) / size
        let last = count - (pieces - 1) * size
        let total = count + (pieces - 1) * headerLength(payload: size, masked: masked) + headerLength(payload: last, masked: masked)
        // Small frames (a short server message's among them) are written on the stack by
        // `withFrames` and copied into the array from there.
        if total <= smallFrames {
            return withFrames(opcode: opcode, fin: fin, rsv1: rsv1, payload: payload, fragmentSize: fragmentSize, masked: masked) {
                [UInt8]($0)
            }
        }
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            writeFrames(
                at: UnsafeMutableRawPointer(buffer.baseAddress!), opcode: opcode, fin: fin, rsv1: rsv1, payload: payload,
                size: size, masked: masked)
            initialized = total
        }
    }

    /// ``frames(opcode:fin:rsv1:payload:fragmentSize:masked:)`` lent to `body` rather than
    /// returned: frames up to ``smallFrames`` bytes are written on the stack, so a small
    /// message's send (an echo's) makes and frees no array; larger ones are the array.
    static func withFrames<R>(
        opcode: WebSocketOpcode, fin: Bool = true, rsv1: Bool = false, payload: UnsafeRawBufferPointer,
        fragmentSize: Int? = nil, masked: Bool, _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        let count = payload.count
        let size = Swift.max(1, fragmentSize ?? count)
        // A server's short unfragmented message (every echo of a small one): its 2-byte
        // header and payload written straight, without the general path's sizing and
        // per-piece loop (~100 of its ~160 instructions for a 64-byte echo under callgrind).
        if !masked && count < 126 && count <= size {
            return withUnsafeTemporaryAllocation(byteCount: 2 + count, alignment: 8) { scratch in
                let out = scratch.baseAddress!
                out.storeBytes(of: (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue, as: UInt8.self)
                out.storeBytes(of: UInt8(truncatingIfNeeded: count), toByteOffset: 1, as: UInt8.self)
                if count > 0 { (out + 2).copyMemory(from: payload.baseAddress!, byteCount: count) }
                return body(UnsafeRawBufferPointer(scratch))
            }
        }
        let pieces = count <= size ? 1 : (count + size - 1) / size
        let last = count - (pieces - 1) * size
        let total = count + (pieces - 1) * headerLength(payload: size, masked: masked) + headerLength(payload: last, masked: masked)
        if total <= smallFrames {
            return withUnsafeTemporaryAllocation(byteCount: total, alignment: 8) { scratch in
                writeFrames(at: scratch.baseAddress!, opcode: opcode, fin: fin, rsv1: rsv1, payload: payload, size: size, masked: masked)
                return body(UnsafeRawBufferPointer(scratch))
            }
        }
        // Over `smallFrames`: `frames` writes them in place in the array.
        return frames(opcode: opcode, fin: fin, rsv1: rsv1, payload: payload, fragmentSize: fragmentSize, masked: masked)
            .withUnsafeBytes(body)
    }

    /// The largest frames (headers included) ``frames(opcode:fin:rsv1:payload:fragmentSize:masked:)``
    /// writes on the stack: within what `withUnsafeTemporaryAllocation` keeps off the heap.
    static let smallFrames = 1024

    /// Writes `payload` as frames of at most `size` payload bytes at `out`, which has room
    /// for all of them.
    private static func writeFrames(
        at out: UnsafeMutableRawPointer, opcode: WebSocketOpcode, fin: Bool, rsv1: Bool, payload: UnsafeRawBufferPointer,
        size: Int, masked: Bool
    ) {
        let count = payload.count
        var at = 0
        var start = 0
        repeat {
            let end = Swift.min(count, start + size)
            at += writeFrame(
                at: out + at, opcode: start == 0 ? opcode : .continuation, fin: fin && end == count,
                rsv1: rsv1 && start == 0, payload: UnsafeRawBufferPointer(rebasing: payload[start..<end]), masked: masked)
            start = end
        } while start < count
    }

    /// Writes one frame (header, then `payload`, masked when `masked`) at `out`; returns
    /// its length (``headerLength(payload:masked:)`` plus the payload's).
    private static func writeFrame(
        at out: UnsafeMutableRawPointer, opcode: WebSocketOpcode, fin: Bool, rsv1: Bool,
        payload: UnsafeRawBufferPointer, masked: Bool
    ) -> Int {
        let count = payload.count
        out.storeBytes(of: (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue, as: UInt8.self)
        let maskBit: UInt8 = masked ? 0x80 : 0
        var at: Int
        if count < 126 {
            out.storeBytes(of: maskBit | UInt8(count), toByteOffset: 1, as: UInt8.self)
            at = 2
        } else if count <= 0xFFFF {
            out.storeBytes(of: maskBit | 126, toByteOffset: 1, as: UInt8.self)
            out.storeBytes(of: UInt16(count).bigEndian, toByteOffset: 2, as: UInt16.self)
            at = 4
        } else {
            out.storeBytes(of: maskBit | 127, toByteOffset: 1, as: UInt8.self)
            out.storeBytes(of: UInt64(count).bigEndian, toByteOffset: 2, as: UInt64.self)
            at = 10
        }
        var key: UInt32 = 0
        if masked {
            // RFC 6455 §10.3: the key must be unpredictable, so it comes from the system's
            // generator (getrandom), not from a seeded one.
            var generator = SystemRandomNumberGenerator()
            key = UInt32.random(in: .min ... .max, using: &generator)
            out.storeBytes(of: key, toByteOffset: at, as: UInt32.self)
            at += 4
        }
        if count > 0, let source = payload.baseAddress {
            (out + at).copyMemory(from: source, byteCount: count)
            if masked { mask(UnsafeMutableRawBufferPointer(start: out + at, count: count), key: key) }
        }
        return at + count
    }

    /// One frame as a new array.
    static func frame(opcode: WebSocketOpcode, fin: Bool = true, rsv1: Bool = false, payload: [UInt8], masked: Bool) -> [UInt8] {
        payload.withUnsafeBytes { frames(opcode: opcode, fin: fin, rsv1: rsv1, payload: $0, masked: masked) }
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

    /// Copies `source` to `destination` (room for `source.count` bytes), XORed with the
    /// 4-byte `key` (in memory order, from key byte 0) when there is one, and tells
    /// whether every byte copied is ASCII: one pass, eight bytes at a time.
    ///
    /// Why one pass: a whole-frame text was copied into its string (`memcpy`), unmasked
    /// there (``mask(_:key:)``), then read again by the UTF-8 validator; for a 64-byte
    /// text that was ~200 instructions under callgrind (Benchmarks/http/ws-instructions-per-message.sh).
    /// An all-ASCII text (the common case) is valid and complete UTF-8, so the validator
    /// only runs when this says `false`.
    static func copyUnmasking(_ source: UnsafeRawBufferPointer, to destination: UnsafeMutableRawPointer, key: UInt32?) -> Bool {
        let count = source.count
        guard count > 0, let base = source.baseAddress else { return true }
        let key = key ?? 0
        let wide = UInt64(key) | UInt64(key) << 32
        var bits: UInt64 = 0
        var i = 0
        // `count & ~7` and `&+=`: no overflow check per step (`i + 8 <= count` was half
        // the loop's instructions).
        let words = count & ~7
        while i < words {
            let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ wide
            destination.storeBytes(of: word, toByteOffset: i, as: UInt64.self)
            bits |= word
            i &+= 8
        }
        // The tail starts at a multiple of 8, so at key byte 0: the key's bytes in memory
        // order, lowest first.
        var tailKey = UInt64(littleEndian: wide)
        while i < count {
            let byte = base.load(fromByteOffset: i, as: UInt8.self) ^ UInt8(truncatingIfNeeded: tailKey)
            destination.storeBytes(of: byte, toByteOffset: i, as: UInt8.self)
            bits |= UInt64(byte)
            tailKey >>= 8
            i += 1
        }
        return bits & 0x8080_8080_8080_8080 == 0
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
