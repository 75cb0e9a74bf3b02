/// A WebSocket message: text or binary, however many frames it came in.
public enum WebSocketMessage: Sendable, Equatable, CustomStringConvertible {
    /// A text message (opcode 1), valid UTF-8 by construction.
    case text(String)
    /// A binary message (opcode 2).
    case binary([UInt8])

    /// `text("hi")`, `binary(3 bytes)`.
    public var description: String {
        switch self {
        case .text(let text): return "text(\(text.debugDescription))"
        case .binary(let bytes): return "binary(\(bytes.count) bytes)"
        }
    }
}

/// How a WebSocket connection ended: the close code and reason (RFC 6455 §7.1.5, §7.1.6).
///
/// When the peer closed, these are the code and reason of its close frame (1005 when its
/// frame had no code). When we failed the connection for a protocol violation, the code we
/// sent (1002, 1007, 1009, …). When the transport ended without a close frame, or the peer
/// stopped answering pings, 1006.
public struct WebSocketClose: Sendable, Equatable, CustomStringConvertible {
    /// The close code.
    public let code: UInt16
    /// The reason, possibly empty.
    public let reason: String
    /// Whether the peer sent the first close frame.
    public let initiatedByPeer: Bool

    /// A close with `code`, `reason` and who started it.
    ///
    /// - Parameters:
    ///   - code: the close code.
    ///   - reason: the reason.
    ///   - initiatedByPeer: whether the peer's close frame came first.
    public init(code: UInt16, reason: String, initiatedByPeer: Bool) {
        self.code = code
        self.reason = reason
        self.initiatedByPeer = initiatedByPeer
    }

    /// `1000 "bye" (by peer)`.
    public var description: String { "\(code) \(reason.debugDescription)\(initiatedByPeer ? " (by peer)" : "")" }

    /// 1000: the purpose was fulfilled.
    public static let normalClosure: UInt16 = 1000
    /// 1001: a server going down or a page navigated away.
    public static let goingAway: UInt16 = 1001
    /// 1002: the peer broke the protocol.
    public static let protocolError: UInt16 = 1002
    /// 1003: a message type the endpoint cannot accept.
    public static let unsupportedData: UInt16 = 1003
    /// 1005: reported (never sent) when the close frame had no code.
    public static let noStatusReceived: UInt16 = 1005
    /// 1006: reported (never sent) when the connection ended without a close frame.
    public static let abnormalClosure: UInt16 = 1006
    /// 1007: a text message that is not valid UTF-8.
    public static let invalidPayload: UInt16 = 1007
    /// 1008: a message that violates the endpoint's policy.
    public static let policyViolation: UInt16 = 1008
    /// 1009: a message larger than the endpoint accepts.
    public static let messageTooBig: UInt16 = 1009
    /// 1011: the server met an unexpected condition.
    public static let internalError: UInt16 = 1011
}

/// What can go wrong with a WebSocket: the handshake, the peer's frames, the peer's silence.
public enum WebSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The opening handshake failed: the server did not answer `101` with the right
    /// `Sec-WebSocket-Accept`, or the head was malformed, too large or cut short.
    case handshakeFailed(String)
    /// The peer broke the protocol and we failed the connection with `code` (1002 protocol
    /// error, 1007 invalid UTF-8, 1009 too big; RFC 6455 §7.4.1).
    case protocolViolation(code: UInt16, reason: String)
    /// No pong came within the ping timeout: the peer is gone (the connection is closed, 1006).
    case peerTimedOut
    /// The transport ended without a close frame (1006).
    case abnormalClosure
    /// A message was sent after the close handshake started.
    case closed

    /// A sentence naming what failed.
    public var description: String {
        switch self {
        case .handshakeFailed(let why): return "WebSocket handshake failed: \(why)"
        case .protocolViolation(let code, let reason): return "WebSocket protocol violation (\(code)): \(reason)"
        case .peerTimedOut: return "WebSocket peer did not answer a ping in time"
        case .abnormalClosure: return "WebSocket connection ended without a close frame (1006)"
        case .closed: return "WebSocket connection is closing; nothing more can be sent"
        }
    }
}
