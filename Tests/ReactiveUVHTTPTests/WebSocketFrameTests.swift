import Glibc
import Testing

import ReactiveUV
@testable import ReactiveUVHTTP

/// The frame codec, UTF-8 validation, SHA-1/base64, permessage-deflate negotiation and the
/// frame reader's close codes, without sockets.
@Suite struct WebSocketFrameTests {
    /// A client frame as a client would send it (masked).
    static func clientFrame(_ opcode: UInt8, _ payload: [UInt8], _ fin: Bool = true, _ rsv: UInt8 = 0) -> [UInt8] {
        var frame = WebSocketFrameCodec.frame(opcode: WebSocketOpcode(rawValue: opcode & 0xF) ?? .binary, fin: fin, payload: payload, masked: true)
        frame[0] = (fin ? 0x80 : 0) | rsv | (opcode & 0xF)
        return frame
    }

    /// Feeds `bytes` to a reader and records what comes out, or the violation's code.
    static func read(_ bytes: [UInt8], role: WebSocketRole = .server, max: Int = 1 << 20, deflate: WebSocketDeflateParameters? = nil, step: Int? = nil)
        -> (out: [String], code: UInt16?)
    {
        let reader = WebSocketFrameReader(role: role, maxMessageSize: max, deflate: deflate)
        var out: [String] = []
        let step = step ?? Swift.max(1, bytes.count)
        var index = 0
        do {
            while index < bytes.count {
                let end = min(bytes.count, index + step)
                try reader.feed(Array(bytes[index..<end])) { inbound in
                    switch inbound {
                    case .message(let m): out.append("\(m)")
                    case .ping(let p): out.append("ping \(p)")
                    case .pong(let p): out.append("pong \(p)")
                    case .close(let code, let reason): out.append("close \(code.map(String.init) ?? "-") \(reason)")
                    }
                    return true
                }
                index = end
            }
        } catch {
            return (out, error.code)
        }
        return (out, nil)
    }

    @Test func sha1AndBase64MatchTheirPublishedVectors() {
        #expect(hexString(SHA1.digest(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hexString(SHA1.digest([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hexString(SHA1.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fooba".utf8)) == "Zm9vYmE=")
        #expect(Base64.encode(Array("foob".utf8)) == "Zm9vYg==")
        #expect(Base64.decode("Zm9vYg==") == Array("foob".utf8))
        #expect(Base64.decode("Zm9vYg=") == nil)
        #expect(Base64.decode("Zm=vYg==") == nil)
        // RFC 6455 §1.3's example.
        #expect(WebSocket.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func lengthsOfSevenSixteenAndSixtyFourBitsRoundTripInBothRoles() {
        for count in [0, 1, 125, 126, 127, 65535, 65536, 70001] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            for role in [WebSocketRole.server, .client] {
                let frame = WebSocketFrameCodec.frame(opcode: .binary, payload: payload, masked: role == .server)
                let expectedHeader = (count < 126 ? 2 : count <= 65535 ? 4 : 10) + (role == .server ? 4 : 0)
                #expect(frame.count == expectedHeader + count)
                #expect(frame[1] & 0x80 == (role == .server ? 0x80 : 0), "clients mask, servers do not")
                let result = Self.read(frame, role: role, step: 1000)
                #expect(result.code == nil)
                #expect(result.out == ["binary(\(count) bytes)"])
            }
        }
    }

    @Test func framesAreWrittenByteForByteAndSplitAtTheFragmentSize() {
        let hello = Array("hello".utf8)
        let split = hello.withUnsafeBytes { WebSocketFrameCodec.frames(opcode: .text, rsv1: true, payload: $0, fragmentSize: 2, masked: false) }
        // RSV1 on the first frame only, continuations after it, FIN on the last.
        #expect(split == [0x41, 2] + Array("he".utf8) + [0x00, 2] + Array("ll".utf8) + [0x80, 1] + Array("o".utf8))
        let exact = hello.withUnsafeBytes { WebSocketFrameCodec.frames(opcode: .text, payload: $0, fragmentSize: 5, masked: false) }
        #expect(exact == [0x81, 5] + hello, "a payload of exactly the fragment size is one frame")
        #expect(WebSocketFrameCodec.frame(opcode: .pong, payload: [], masked: false) == [0x8A, 0])
        let medium = [UInt8](repeating: 7, count: 300)
        #expect(Array(WebSocketFrameCodec.frame(opcode: .binary, payload: medium, masked: false).prefix(4)) == [0x82, 126, 0x01, 0x2C])
        let large = [UInt8](repeating: 7, count: 70001)
        #expect(Array(WebSocketFrameCodec.frame(opcode: .binary, payload: large, masked: false).prefix(10)) == [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x71])
        // Either side of the size written on the stack: the same bytes.
        for count in [WebSocketFrameCodec.smallFrames - 4, WebSocketFrameCodec.smallFrames - 3] {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 3) }
            #expect(WebSocketFrameCodec.frame(opcode: .binary, payload: bytes, masked: false) == [0x82, 126, UInt8(count >> 8), UInt8(count & 0xFF)] + bytes)
        }
        // Masked fragments (a client's) come back whole through a server's reader, each
        // frame with a key of its own.
        let payload = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        for size in [1, 7, 126, 999, 1000] {
            let frames = payload.withUnsafeBytes { WebSocketFrameCodec.frames(opcode: .binary, payload: $0, fragmentSize: size, masked: true) }
            let pieces = (1000 + size - 1) / size
            let last = 1000 - (pieces - 1) * size
            #expect(frames.count == 1000 + (pieces - 1) * WebSocketFrameCodec.headerLength(payload: size, masked: true) + WebSocketFrameCodec.headerLength(payload: last, masked: true))
            var received: [UInt8]?
            let reader = WebSocketFrameReader(role: .server, maxMessageSize: 1 << 20, deflate: nil)
            #expect(throws: Never.self) {
                try reader.feed(frames) { inbound in
                    if case .message(.binary(let bytes)) = inbound { received = bytes }
                    return true
                }
            }
            #expect(received == payload, "fragment size \(size)")
        }
    }

    @Test func wholeTextFramesAreDecodedInPlaceAmongOtherFrames() {
        // Single-frame texts (decoded straight from the read buffer) next to a fragmented
        // text, a binary and an empty text, several in one read or cut anywhere: each
        // message must be exactly its own bytes.
        let bytes = Self.clientFrame(0x1, Array("first €".utf8))
            + Self.clientFrame(0x1, [])
            + Self.clientFrame(0x1, Array("frag".utf8), false) + Self.clientFrame(0x0, Array("ment".utf8))
            + Self.clientFrame(0x2, [1, 2, 3])
            + Self.clientFrame(0x1, Array("😀 last".utf8))
        for step in [1, 2, 5, 13, bytes.count] {
            let result = Self.read(bytes, step: step)
            #expect(result.code == nil)
            #expect(result.out == ["text(\"first €\")", "text(\"\")", "text(\"fragment\")", "binary(3 bytes)", "text(\"😀 last\")"], "read \(step) bytes at a time")
        }
    }

    @Test func readBytesAreParsedWithoutBeingChangedAndRefeedingFromDeliverKeepsTheOrder() throws {
        // The reader parses a read chunk where it is (borrowed) and unmasks payloads as it
        // copies them out: the chunk, which the stream may still hold, must come back
        // untouched. Bytes fed from inside `deliver` (a transport delivering at once) must
        // come after the rest of the chunk being parsed, and a `deliver` that says stop
        // keeps the rest for the next feed.
        let first = Self.clientFrame(0x1, Array("one".utf8)) + Self.clientFrame(0x2, [9, 8, 7])
            + Self.clientFrame(0x9, [5]) + Self.clientFrame(0x1, Array("two-".utf8), false)
        let second = Self.clientFrame(0x0, Array("three".utf8)) + Self.clientFrame(0x1, Array("four".utf8))
        let copy = first
        let reader = WebSocketFrameReader(role: .server, maxMessageSize: 1 << 20, deflate: nil)
        var out: [String] = []
        var refed = false
        func deliver(_ inbound: WebSocketInbound) -> Bool {
            switch inbound {
            case .message(let m): out.append("\(m)")
            case .ping(let p): out.append("ping \(p)")
            default: out.append("other")
            }
            if !refed {
                refed = true
                try? reader.feed(second, deliver)
            }
            return true
        }
        try reader.feed(first, deliver)
        #expect(first == copy)
        #expect(out == ["text(\"one\")", "binary(3 bytes)", "ping [5]", "text(\"two-three\")", "text(\"four\")"])
        #expect(reader.bufferedBytes == 0)

        // Stop after the first message: the second is kept, then delivered by the next feed.
        var stopped: [String] = []
        let both = Self.clientFrame(0x1, Array("a".utf8)) + Self.clientFrame(0x1, Array("b".utf8))
        let other = WebSocketFrameReader(role: .server, maxMessageSize: 1 << 20, deflate: nil)
        try other.feed(both) { inbound in
            if case .message(let m) = inbound { stopped.append("\(m)") }
            return false
        }
        #expect(stopped == ["text(\"a\")"])
        try other.feed(Self.clientFrame(0x1, Array("c".utf8))) { inbound in
            if case .message(let m) = inbound { stopped.append("\(m)") }
            return true
        }
        #expect(stopped == ["text(\"a\")", "text(\"b\")", "text(\"c\")"])

        // Bytes fed from inside a `deliver` that then says stop: kept, in order, after the
        // rest of the chunk, for the next feed.
        var order: [String] = []
        let third = WebSocketFrameReader(role: .server, maxMessageSize: 1 << 20, deflate: nil)
        var refedThird = false
        func stopAfterRefeeding(_ inbound: WebSocketInbound) -> Bool {
            if case .message(let m) = inbound { order.append("\(m)") }
            if !refedThird {
                refedThird = true
                try? third.feed(Self.clientFrame(0x1, Array("held".utf8)), stopAfterRefeeding)
                return false
            }
            return true
        }
        try third.feed(both, stopAfterRefeeding)
        #expect(order == ["text(\"a\")"])
        try third.feed(Self.clientFrame(0x1, Array("next".utf8))) { inbound in
            if case .message(let m) = inbound { order.append("\(m)") }
            return true
        }
        #expect(order == ["text(\"a\")", "text(\"b\")", "text(\"held\")", "text(\"next\")"])
        #expect(third.bufferedBytes == 0)
    }

    @Test func maskingAWordAtATimeEqualsTheBytewiseDefinition() {
        let key: UInt32 = 0xA1B2_C3D4
        let keyBytes = withUnsafeBytes(of: key) { Array($0) }
        for count in 0..<40 {
            let original = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 31 + 5) }
            var masked = original
            masked.withUnsafeMutableBytes { WebSocketFrameCodec.mask($0, key: key) }
            #expect(masked == original.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] })
        }
    }

    @Test func shortServerFramesAreHeaderThenPayloadWhateverTheFlags() {
        // The short unmasked single frame is written by its own path: each flag, every
        // length up to the 7-bit limit and past it, and a fragment size at, under and over
        // the length (under it, the general path splits).
        for count in [0, 1, 7, 8, 64, 124, 125, 126, 200] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
            for (fin, rsv1) in [(true, false), (false, false), (true, true), (false, true)] {
                for fragmentSize in [nil, count, count + 1, Swift.max(1, count - 1)] as [Int?] {
                    let frames = payload.withUnsafeBytes {
                        WebSocketFrameCodec.frames(opcode: .text, fin: fin, rsv1: rsv1, payload: $0, fragmentSize: fragmentSize, masked: false)
                    }
                    if count > Swift.max(1, fragmentSize ?? count) { continue }
                    let b0: UInt8 = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | 0x1
                    let header: [UInt8] = count < 126 ? [b0, UInt8(count)] : [b0, 126, UInt8(count >> 8), UInt8(count & 0xFF)]
                    #expect(frames == header + payload, "\(count) bytes, fin \(fin), rsv1 \(rsv1), fragments of \(fragmentSize.map(String.init) ?? "-")")
                }
            }
        }
    }

    @Test func textsAreEncodedFromTheirBytesSmallLargeAndNonASCII() throws {
        // `encode` reads a text's bytes through its UTF8Span: a small string (stored inline,
        // up to 15 bytes), a large one, non-ASCII, empty, and a substring's copy.
        let loop = try EventLoop()
        defer { try? loop.close() }
        let ws = WebSocketConnection(upgrade: HTTPUpgrade(transport: IdleTransport(loop: loop), leftover: []), role: .server)
        let long = String(repeating: "wörld ", count: 30)
        for text in ["", "hi", "fifteen bytes!!", "sixteen bytes!!!", "é😀", long, String(long.dropFirst(3))] {
            let payload = Array(text.utf8)
            let expected = payload.withUnsafeBytes { WebSocketFrameCodec.frames(opcode: .text, payload: $0, masked: false) }
            #expect(ws.encode(.text(text)) == expected, "\(text.debugDescription)")
        }
    }

    @Test func copyUnmaskingEqualsMaskingACopyAndFindsEveryNonASCIIByte() {
        // Every length around the 8-byte steps, masked and not, with a byte >= 0x80 (after
        // unmasking) in each position in turn, and none.
        let key: UInt32 = 0x5A3C_9F01
        let keyBytes = withUnsafeBytes(of: key) { Array($0) }
        for count in 0..<40 {
            for high in [-1] + Array(0..<count) {
                let plain = (0..<count).map { $0 == high ? UInt8(0xC3) : UInt8(truncatingIfNeeded: 0x20 + $0 * 7 % 90) }
                for masked in [false, true] {
                    let source = masked ? plain.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] } : plain
                    var out = [UInt8](repeating: 0, count: count + 1)
                    let ascii = source.withUnsafeBytes { src in
                        out.withUnsafeMutableBytes { WebSocketFrameCodec.copyUnmasking(src, to: $0.baseAddress!, key: masked ? key : nil) }
                    }
                    #expect(Array(out.prefix(count)) == plain, "\(count) bytes, masked \(masked)")
                    #expect(out[count] == 0, "nothing written past the end")
                    #expect(ascii == (high < 0), "\(count) bytes, non-ASCII at \(high)")
                }
            }
        }
    }

    @Test func fragmentsAndControlFramesBetweenThemArriveInOrder() {
        let bytes = Self.clientFrame(0x1, Array("héllo ".utf8), false)
            + Self.clientFrame(0x9, [1, 2])
            + Self.clientFrame(0x0, Array("wörld".utf8), true)
            + Self.clientFrame(0xA, [])
            + Self.clientFrame(0x8, [0x03, 0xE8] + Array("bye".utf8))
        for step in [1, 3, 7, bytes.count] {
            let result = Self.read(bytes, step: step)
            #expect(result.code == nil)
            #expect(result.out == ["ping [1, 2]", "text(\"héllo wörld\")", "pong []", "close 1000 bye"], "read \(step) bytes at a time")
        }
    }

    @Test func everyViolationGetsItsCloseCode() {
        let cases: [(String, [UInt8], WebSocketRole, UInt16)] = [
            ("unmasked client frame", WebSocketFrameCodec.frame(opcode: .text, payload: [0x61], masked: false), .server, 1002),
            ("masked server frame", WebSocketFrameCodec.frame(opcode: .text, payload: [0x61], masked: true), .client, 1002),
            ("ping over 125 bytes", Self.clientFrame(0x9, [UInt8](repeating: 0, count: 126)), .server, 1002),
            ("fragmented ping", Self.clientFrame(0x9, [1], false), .server, 1002),
            ("RSV1 without an extension", Self.clientFrame(0x1, [0x61], true, 0x40), .server, 1002),
            ("RSV2", Self.clientFrame(0x2, [0x61], true, 0x20), .server, 1002),
            ("RSV3", Self.clientFrame(0x2, [0x61], true, 0x10), .server, 1002),
            ("opcode 3", Self.clientFrame(0x3, []), .server, 1002),
            ("opcode 0xB", Self.clientFrame(0xB, []), .server, 1002),
            ("continuation first", Self.clientFrame(0x0, [0x61]), .server, 1002),
            ("text inside a fragmented text", Self.clientFrame(0x1, [0x61], false) + Self.clientFrame(0x1, [0x62]), .server, 1002),
            ("close with one byte", Self.clientFrame(0x8, [0x03]), .server, 1002),
            ("close code 1005", Self.clientFrame(0x8, [0x03, 0xED]), .server, 1002),
            ("close code 999", Self.clientFrame(0x8, [0x03, 0xE7]), .server, 1002),
            ("invalid UTF-8", Self.clientFrame(0x1, [0x61, 0xFF]), .server, 1007),
            ("overlong UTF-8", Self.clientFrame(0x1, [0xC0, 0xAF]), .server, 1007),
            ("surrogate in UTF-8", Self.clientFrame(0x1, [0xED, 0xA0, 0x80]), .server, 1007),
            ("text ending mid-character", Self.clientFrame(0x1, [0xE2, 0x82]), .server, 1007),
            ("UTF-8 broken across fragments", Self.clientFrame(0x1, [0xE2], false) + Self.clientFrame(0x0, [0x28, 0xA1]), .server, 1007),
            ("close reason not UTF-8", Self.clientFrame(0x8, [0x03, 0xE8, 0xFF]), .server, 1007),
            ("too big", Self.clientFrame(0x2, [UInt8](repeating: 1, count: 1025)), .server, 1009),
            ("too big across fragments", Self.clientFrame(0x2, [UInt8](repeating: 1, count: 600), false) + Self.clientFrame(0x0, [UInt8](repeating: 1, count: 600)), .server, 1009),
        ]
        for (name, bytes, role, code) in cases {
            #expect(Self.read(bytes, role: role, max: 1024).code == code, "\(name)")
        }
    }

    @Test func invalidUTF8InAFirstFragmentFailsBeforeTheMessageEnds() {
        // Only the first fragment is fed: the failure cannot wait for the final frame.
        let result = Self.read(Self.clientFrame(0x1, [0x61, 0xF5], false))
        #expect(result.code == 1007)
    }

    @Test func aHeaderAnnouncingTooMuchIsRefusedBeforeItsPayloadArrives() {
        // Only the header of a 2^40-byte frame: refused with 1009 at once, nothing buffered.
        var header: [UInt8] = [0x82, 0x80 | 127, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4]
        #expect(Self.read(header).code == 1009)
        header[2] = 0x80
        #expect(Self.read(header).code == 1002, "the 64-bit length's top bit must be clear")
    }

    @Test func utf8ValidatorAcceptsEveryValidScalarSplitAnywhere() {
        let text = "aé€😀\u{10FFFF}\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000} plain ascii tail"
        let bytes = Array(text.utf8)
        for split in 0...bytes.count {
            var validator = UTF8Validator()
            let first = validator.validate(Array(bytes[..<split]))
            let second = validator.validate(Array(bytes[split...]))
            #expect(first && second && validator.isComplete, "split at \(split)")
        }
        var validator = UTF8Validator()
        let aboveMax = validator.validate([0xF4, 0x90, 0x80, 0x80])
        #expect(!aboveMax, "above U+10FFFF")
    }

    @Test func deflateRoundTripsWithAndWithoutContextTakeover() throws {
        for noContext in [false, true] {
            let parameters = WebSocketDeflateParameters(localNoContextTakeover: noContext, peerNoContextTakeover: noContext)
            let deflater = try #require(WebSocketDeflater(parameters))
            let reader = WebSocketFrameReader(role: .client, maxMessageSize: 1 << 20, deflate: parameters)
            var received: [WebSocketMessage] = []
            for message in ["hello hello hello hello", String(repeating: "abc", count: 5000), "hello hello hello hello"] {
                let compressed = Array(message.utf8).withUnsafeBytes { deflater.compress($0) }
                #expect(compressed.count < message.utf8.count)
                var frame = WebSocketFrameCodec.frame(opcode: .text, payload: compressed, masked: false)
                frame[0] |= 0x40
                try reader.feed(frame) { inbound in
                    if case .message(let m) = inbound { received.append(m) }
                    return true
                }
            }
            #expect(received == [.text("hello hello hello hello"), .text(String(repeating: "abc", count: 5000)), .text("hello hello hello hello")])
        }
    }

    @Test func aZipBombIsRefusedWith1009WhileInflating() throws {
        let parameters = WebSocketDeflateParameters()
        let deflater = try #require(WebSocketDeflater(parameters))
        let bomb = [UInt8](repeating: 0, count: 8 << 20).withUnsafeBytes { deflater.compress($0) }
        #expect(bomb.count < 64 * 1024)
        var frame = WebSocketFrameCodec.frame(opcode: .binary, payload: bomb, masked: true)
        frame[0] |= 0x40
        #expect(Self.read(frame, max: 1 << 20, deflate: parameters).code == 1009)
        #expect(Self.read(frame, max: 9 << 20, deflate: parameters).out == ["binary(8388608 bytes)"])
    }

    @Test func serverNegotiatesTheOffersBrowsersAndPythonSend() {
        let settings = WebSocketCompression()
        // Chrome, Python websockets: client_max_window_bits without a value.
        let chrome = WebSocketDeflateParameters.negotiateServer(offers: ["permessage-deflate; client_max_window_bits"], settings: settings)
        #expect(chrome?.1 == "permessage-deflate")
        #expect(chrome?.0.peerWindowBits == 15)
        // Firefox: the bare offer.
        #expect(WebSocketDeflateParameters.negotiateServer(offers: ["permessage-deflate"], settings: settings)?.1 == "permessage-deflate")
        // Python websockets with every parameter.
        let python = WebSocketDeflateParameters.negotiateServer(
            offers: ["permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=12"],
            settings: settings)
        #expect(python?.1 == "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=12")
        #expect(python?.0 == WebSocketDeflateParameters(localNoContextTakeover: true, peerNoContextTakeover: true, localWindowBits: 10, peerWindowBits: 12))
        // Declined offers fall through to the next acceptable one.
        let fallback = WebSocketDeflateParameters.negotiateServer(
            offers: ["permessage-deflate; server_max_window_bits=8, permessage-deflate; x-unknown, permessage-deflate; client_max_window_bits=\"9\""],
            settings: settings)
        #expect(fallback?.1 == "permessage-deflate; client_max_window_bits=9")
        #expect(WebSocketDeflateParameters.negotiateServer(offers: ["x-webkit-deflate-frame"], settings: settings) == nil)
        #expect(WebSocketDeflateParameters.negotiateServer(offers: ["permessage-deflate; server_max_window_bits=16"], settings: settings) == nil)
        #expect(WebSocketDeflateParameters.negotiateServer(offers: ["permessage-deflate; server_no_context_takeover; server_no_context_takeover"], settings: settings) == nil)
    }

    @Test func serverHandshakeAcceptsRefusesAndChoosesTheSubprotocol() {
        let request: HTTPHeaders = [
            "Host": "x", "Upgrade": "websocket", "Connection": "keep-alive, Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13", "Sec-WebSocket-Protocol": "chat.v2, chat.v1", "Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits",
        ]
        let options = WebSocketOptions(subprotocols: ["chat.v1", "chat.v2"])
        guard case .accept(let headers, let compression, let subprotocol) = WebSocket.serverHandshake(method: "GET", headers: request, options: options) else {
            Issue.record("refused")
            return
        }
        #expect(headers["Sec-WebSocket-Accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(headers["Sec-WebSocket-Extensions"] == "permessage-deflate")
        #expect(compression != nil)
        #expect(subprotocol == "chat.v2", "the client's first choice that we speak")

        var oldVersion = request
        oldVersion.set("Sec-WebSocket-Version", "8")
        guard case .refuse(let status, let refusal, _) = WebSocket.serverHandshake(method: "GET", headers: oldVersion) else {
            Issue.record("version 8 accepted")
            return
        }
        #expect(status == 426)
        #expect(refusal["Sec-WebSocket-Version"] == "13")
        var badKey = request
        badKey.set("Sec-WebSocket-Key", "c2hvcnQ=")
        if case .refuse(let status, _, _) = WebSocket.serverHandshake(method: "GET", headers: badKey) { #expect(status == 400) } else { Issue.record("short key accepted") }
        if case .refuse(let status, _, _) = WebSocket.serverHandshake(method: "POST", headers: request) { #expect(status == 405) } else { Issue.record("POST accepted") }
        var noUpgrade = request
        noUpgrade.remove("Upgrade")
        if case .refuse(let status, let h, _) = WebSocket.serverHandshake(method: "GET", headers: noUpgrade) {
            #expect(status == 426)
            #expect(h["Upgrade"] == "websocket")
        } else { Issue.record("no Upgrade accepted") }
        var uncompressed = WebSocketOptions()
        uncompressed.compression = nil
        if case .accept(let h, let c, _) = WebSocket.serverHandshake(method: "GET", headers: request, options: uncompressed) {
            #expect(c == nil)
            #expect(!h.contains("Sec-WebSocket-Extensions"))
        } else { Issue.record("refused") }
    }

    @Test func clientChecksTheServersAnswer() throws {
        let client = WebSocketClientHandshake(options: WebSocketOptions(subprotocols: ["chat"]))
        let request = String(decoding: try client.request(host: "example.com:8080", path: "/ws?x=1", headers: ["Origin": "http://example.com"]), as: UTF8.self)
        #expect(request.hasPrefix("GET /ws?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n"))
        #expect(request.contains("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"))
        #expect(request.hasSuffix("Origin: http://example.com\r\n\r\n"))
        let accept = WebSocket.acceptValue(forKey: client.key)
        func answer(accept: String, extensions: String = "permessage-deflate") -> [UInt8] {
            Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\nSec-WebSocket-Extensions: \(extensions); client_max_window_bits=12\r\nSec-WebSocket-Protocol: chat\r\n".utf8)
        }
        let agreed = try client.check(head: answer(accept: accept))
        #expect(agreed.compression?.localWindowBits == 12)
        #expect(agreed.subprotocol == "chat")
        #expect(throws: WebSocketError.self) { try client.check(head: answer(accept: "AAAA")) }
        #expect(throws: WebSocketError.self) { try client.check(head: Array("HTTP/1.1 200 OK\r\n".utf8)) }
        #expect(throws: WebSocketError.self) { try client.check(head: answer(accept: accept, extensions: "x-other")) }
        #expect(throws: WebSocketError.self) { try client.request(host: "h", path: "/a b", headers: [:]) }
        #expect(throws: WebSocketError.self) { try client.request(host: "h", path: "/", headers: ["X": "a\r\nInjected: 1"]) }
    }

    @Test func theFuzzEntryPointSurvivesTheCorpusAndRandomBytes() throws {
        // The seed corpus, found from this file's path: Fuzz/corpus/websocket-frames.
        let root = String(#filePath.prefix(upTo: #filePath.range(of: "/Tests/")!.lowerBound))
        let directory = root + "/Fuzz/corpus/websocket-frames"
        let dir = try #require(opendir(directory), "corpus at \(directory)")
        defer { closedir(dir) }
        var seeds = 0
        var codes = Set<UInt16>()
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(".") { continue }
            guard let file = fopen(directory + "/" + name, "rb") else { continue }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                if n <= 0 { break }
                bytes += chunk[..<n]
            }
            fclose(file)
            let result = bytes.withUnsafeBytes { webSocketFuzzFrames($0) }
            codes.insert(result.closeCode)
            seeds += 1
        }
        #expect(seeds >= 10)
        #expect(codes.isSuperset(of: [0, 1002, 1007, 1009]), "the corpus reaches every outcome: \(codes.sorted())")
        // Random bytes, and random mutations of a valid stream (seeded: reproducible).
        var generator = SeededGenerator(seed: 0x5EED)
        let valid = [UInt8(0)] + Self.clientFrame(0x1, Array("hello".utf8), false) + Self.clientFrame(0x9, [7]) + Self.clientFrame(0x0, Array(" world".utf8))
        for round in 0..<3000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 1...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            let result = bytes.withUnsafeBytes { webSocketFuzzFrames($0) }
            #expect([0, 1002, 1007, 1009].contains(result.closeCode), "round \(round): \(result)")
        }
    }
}

/// SplitMix64: reproducible random bytes for the fuzz test.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A transport that never reads, writes nothing and never closes: for what a connection
/// computes without one (`encode`).
private final class IdleTransport: HTTPTransport, @unchecked Sendable {
    // Thread-safety: immutable.
    let loop: EventLoop
    init(loop: EventLoop) { self.loop = loop }
    var reads: Signal<[UInt8]> { .never() }
    func write(_ bytes: [UInt8]) -> Signal<Void> { .empty() }
    func send(_ source: Signal<[UInt8]>) -> Signal<Void> { .empty() }
    func close() {}
    func shutdown() -> Signal<Void> { .empty() }
    var closed: Signal<Void> { .never() }
    var description: String { "idle" }
}
