import CZlib

/// permessage-deflate as agreed in the handshake (RFC 7692 §7.1), from our side's view.
///
/// A server gets it from ``WebSocket/serverHandshake(method:headers:options:)``, a client
/// from the server's `101`; both pass it to ``WebSocketConnection``.
public struct WebSocketDeflateParameters: Sendable, Equatable {
    /// Our compressor resets after each message.
    public var localNoContextTakeover: Bool
    /// The peer's compressor resets after each message (we may reset our decompressor).
    public var peerNoContextTakeover: Bool
    /// Our compressor's window, 9–15 bits.
    public var localWindowBits: Int
    /// The peer's compressor's largest window, 8–15 bits: our decompressor's window.
    public var peerWindowBits: Int
    /// zlib's memLevel for our compressor.
    public var memoryLevel: Int
    /// zlib's level for our compressor.
    public var level: Int
    /// Messages shorter than this are sent uncompressed.
    public var minimumSize: Int

    /// Parameters as negotiated.
    ///
    /// - Parameters:
    ///   - localNoContextTakeover: our compressor resets after each message.
    ///   - peerNoContextTakeover: the peer's compressor resets after each message.
    ///   - localWindowBits: our compressor's window, 9–15.
    ///   - peerWindowBits: the peer's window, 8–15.
    ///   - memoryLevel: zlib's memLevel, 1–9.
    ///   - level: zlib's level, 0–9.
    ///   - minimumSize: the smallest message compressed.
    public init(
        localNoContextTakeover: Bool = false, peerNoContextTakeover: Bool = false, localWindowBits: Int = 15,
        peerWindowBits: Int = 15, memoryLevel: Int = 8, level: Int = 1, minimumSize: Int = 32
    ) {
        self.localNoContextTakeover = localNoContextTakeover
        self.peerNoContextTakeover = peerNoContextTakeover
        self.localWindowBits = min(15, max(9, localWindowBits))
        self.peerWindowBits = min(15, max(8, peerWindowBits))
        self.memoryLevel = min(9, max(1, memoryLevel))
        self.level = min(9, max(0, level))
        self.minimumSize = minimumSize
    }
}

/// One `permessage-deflate` offer or answer: its parameters, in order, values unquoted.
struct DeflateExtensionOffer {
    var parameters: [(name: String, value: String?)]

    /// Every `permessage-deflate` element of `Sec-WebSocket-Extensions` values, in order
    /// (other extensions are skipped; RFC 6455 §9.1's grammar, quoted values allowed).
    static func parse(_ values: [String]) -> [DeflateExtensionOffer]? {
        var offers: [DeflateExtensionOffer] = []
        for value in values {
            for element in value.split(separator: ",") {
                let parts = element.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
                guard let name = parts.first, !name.isEmpty else { return nil }
                guard name.lowercased() == "permessage-deflate" else { continue }
                var parameters: [(name: String, value: String?)] = []
                for part in parts.dropFirst() {
                    if part.isEmpty { return nil }
                    if let eq = part.firstIndex(of: "=") {
                        var value = String(part[part.index(after: eq)...].trimmingSpaces)
                        if value.count >= 2 && value.hasPrefix("\"") && value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                        parameters.append((name: part[..<eq].trimmingSpaces.lowercased(), value: value))
                    } else {
                        parameters.append((name: part.lowercased(), value: nil))
                    }
                }
                offers.append(DeflateExtensionOffer(parameters: parameters))
            }
        }
        return offers
    }

    /// A window-bits value, 8–15, with no sign or leading zero (RFC 7692 §7.1.2).
    static func windowBits(_ value: String?) -> Int? {
        guard let value, let bits = Int(value), (8...15).contains(bits), String(bits) == value else { return nil }
        return bits
    }
}

extension WebSocketDeflateParameters {
    /// The server's answer to a client's offers: the parameters and the header value, or
    /// `nil` when no offer is acceptable (the connection then runs uncompressed).
    ///
    /// Offers are taken in the client's order (RFC 7692 §5); one with an unknown or
    /// repeated parameter, or a bad value, is declined and the next one tried.
    static func negotiateServer(offers headerValues: [String], settings: WebSocketCompression) -> (WebSocketDeflateParameters, String)? {
        guard let offers = DeflateExtensionOffer.parse(headerValues) else { return nil }
        offerLoop: for offer in offers {
            var seen = Set<String>()
            var serverNoContext = settings.noContextTakeover
            var clientNoContext = settings.peerNoContextTakeover
            var serverBits = settings.windowBits
            var clientBitsOffered = false
            var clientBits = 15
            for (name, value) in offer.parameters {
                guard seen.insert(name).inserted else { continue offerLoop }
                switch name {
                case "server_no_context_takeover":
                    guard value == nil else { continue offerLoop }
                    serverNoContext = true
                case "client_no_context_takeover":
                    guard value == nil else { continue offerLoop }
                    clientNoContext = true
                case "server_max_window_bits":
                    // zlib cannot make a raw deflate stream with an 8-bit window.
                    guard let bits = DeflateExtensionOffer.windowBits(value), bits >= 9 else { continue offerLoop }
                    serverBits = min(serverBits, bits)
                case "client_max_window_bits":
                    if let value {
                        guard let bits = DeflateExtensionOffer.windowBits(value) else { continue offerLoop }
                        clientBits = bits
                    }
                    clientBitsOffered = true
                default:
                    continue offerLoop
                }
            }
            var answer = "permessage-deflate"
            if serverNoContext { answer += "; server_no_context_takeover" }
            if clientNoContext { answer += "; client_no_context_takeover" }
            if serverBits < 15 { answer += "; server_max_window_bits=\(serverBits)" }
            // We may only bound the client's window when it said it can be bounded.
            if clientBitsOffered && clientBits < 15 { answer += "; client_max_window_bits=\(clientBits)" }
            let parameters = WebSocketDeflateParameters(
                localNoContextTakeover: serverNoContext, peerNoContextTakeover: clientNoContext,
                localWindowBits: serverBits, peerWindowBits: clientBitsOffered ? clientBits : 15,
                memoryLevel: settings.memoryLevel, level: settings.level, minimumSize: settings.minimumSize)
            return (parameters, answer)
        }
        return nil
    }

    /// The offer a client sends for `settings`.
    static func clientOffer(_ settings: WebSocketCompression) -> String {
        var offer = "permessage-deflate"
        if settings.noContextTakeover { offer += "; client_no_context_takeover" }
        if settings.peerNoContextTakeover { offer += "; server_no_context_takeover" }
        offer += settings.windowBits < 15 ? "; client_max_window_bits=\(settings.windowBits)" : "; client_max_window_bits"
        return offer
    }

    /// The client's reading of the server's answer: the parameters, `nil` when the server
    /// did not accept compression, or an error for an answer we did not allow.
    static func acceptClient(answer headerValues: [String], settings: WebSocketCompression) throws -> WebSocketDeflateParameters? {
        guard let answers = DeflateExtensionOffer.parse(headerValues) else {
            throw WebSocketError.handshakeFailed("malformed Sec-WebSocket-Extensions")
        }
        if headerValues.contains(where: { !Substring($0).trimmingSpaces.isEmpty }) && answers.isEmpty {
            throw WebSocketError.handshakeFailed("the server chose an extension we did not offer: \(headerValues.joined(separator: ", "))")
        }
        guard let answer = answers.first else { return nil }
        guard answers.count == 1 else { throw WebSocketError.handshakeFailed("permessage-deflate answered more than once") }
        var parameters = WebSocketDeflateParameters(
            localNoContextTakeover: settings.noContextTakeover, peerNoContextTakeover: false,
            localWindowBits: settings.windowBits, peerWindowBits: 15,
            memoryLevel: settings.memoryLevel, level: settings.level, minimumSize: settings.minimumSize)
        var seen = Set<String>()
        for (name, value) in answer.parameters {
            guard seen.insert(name).inserted else { throw WebSocketError.handshakeFailed("repeated \(name)") }
            switch name {
            case "server_no_context_takeover" where value == nil:
                parameters.peerNoContextTakeover = true
            case "client_no_context_takeover" where value == nil:
                parameters.localNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = DeflateExtensionOffer.windowBits(value) else { throw WebSocketError.handshakeFailed("bad server_max_window_bits") }
                parameters.peerWindowBits = bits
            case "client_max_window_bits":
                guard let bits = DeflateExtensionOffer.windowBits(value), bits >= 9 else {
                    throw WebSocketError.handshakeFailed("unusable client_max_window_bits \(value ?? "")")
                }
                parameters.localWindowBits = min(parameters.localWindowBits, bits)
            default:
                throw WebSocketError.handshakeFailed("unexpected permessage-deflate parameter \(name)")
            }
        }
        return parameters
    }
}

/// The four bytes a sync flush ends with; removed from each message and restored before
/// inflating (RFC 7692 §7.2.1, §7.2.2).
let deflateTail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

/// A raw deflate compressor for outgoing messages (loop thread only).
final class WebSocketDeflater {
    private var stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let noContextTakeover: Bool

    init?(_ parameters: WebSocketDeflateParameters) {
        stream.initialize(to: z_stream())
        noContextTakeover = parameters.localNoContextTakeover
        let rc = deflateInit2_(
            stream, Int32(parameters.level), Z_DEFLATED, -Int32(parameters.localWindowBits), Int32(parameters.memoryLevel),
            Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        if rc != Z_OK {
            stream.deallocate()
            return nil
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// `message` compressed and sync-flushed, without the final `00 00 FF FF`.
    func compress(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(message.count))) + 16)
        var produced = 0
        stream.pointee.next_in = UnsafeMutablePointer(mutating: message.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(message.count)
        repeat {
            if produced == out.count { out += [UInt8](repeating: 0, count: max(64, out.count / 2)) }
            out.withUnsafeMutableBufferPointer { buffer in
                stream.pointee.next_out = buffer.baseAddress! + produced
                stream.pointee.avail_out = uInt(buffer.count - produced)
                _ = deflate(stream, Z_SYNC_FLUSH)
                produced = buffer.count - Int(stream.pointee.avail_out)
            }
        } while stream.pointee.avail_out == 0
        out.removeSubrange(produced...)
        if out.count >= 4 && Array(out.suffix(4)) == deflateTail { out.removeLast(4) }
        if noContextTakeover { deflateReset(stream) }
        return out
    }
}

/// A raw deflate decompressor for incoming messages, bounded by the message size limit
/// (loop thread only).
final class WebSocketInflater {
    private var stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let resetAfterMessage: Bool

    init?(_ parameters: WebSocketDeflateParameters) {
        stream.initialize(to: z_stream())
        resetAfterMessage = parameters.peerNoContextTakeover
        let rc = inflateInit2_(stream, -Int32(parameters.peerWindowBits), zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        if rc != Z_OK {
            stream.deallocate()
            return nil
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    enum Failure {
        /// The inflated message would pass the limit.
        case tooBig
        /// The compressed data is not valid deflate.
        case corrupt
    }

    /// Inflates `input` and appends to `out`, failing once `out` would exceed `limit`;
    /// inflating stops there, so a zip bomb costs at most `limit` bytes. Returns `nil` on
    /// success, else what went wrong.
    func inflate(_ input: UnsafeRawBufferPointer, into out: inout [UInt8], limit: Int) -> Failure? {
        guard input.count > 0 else { return nil }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        var chunk = 16 * 1024
        while true {
            let start = out.count
            // Room for one more byte than the limit allows: producing it proves "too big".
            let room = min(chunk, limit - start + 1)
            if room <= 0 { return .tooBig }
            out.append(contentsOf: repeatElement(0, count: room))
            var rc: Int32 = Z_OK
            var produced = 0
            out.withUnsafeMutableBufferPointer { buffer in
                stream.pointee.next_out = buffer.baseAddress! + start
                stream.pointee.avail_out = uInt(room)
                rc = CZlib.inflate(stream, Z_SYNC_FLUSH)
                produced = room - Int(stream.pointee.avail_out)
            }
            out.removeSubrange((start + produced)...)
            if out.count > limit { return .tooBig }
            switch rc {
            case Z_OK, Z_BUF_ERROR:
                // Done when the input is used up and the output was not full.
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return nil }
                if rc == Z_BUF_ERROR && produced == 0 { return nil }
            case Z_STREAM_END:
                // A final block (BFINAL) ends the stream; the next message starts a new one.
                inflateReset(stream)
                if stream.pointee.avail_in == 0 { return nil }
            default:
                return .corrupt
            }
            chunk = min(chunk * 2, 1 << 20)
        }
    }

    /// Ends a message: resets the window when the peer keeps no context.
    func endMessage() {
        if resetAfterMessage { inflateReset(stream) }
    }
}
