import CNATS

/// An error reported by cnats or by a NATS/JetStream server, naming what was being done.
///
/// It carries cnats's status (`natsStatus`, with its text from `natsStatus_GetText`, e.g.
/// `No server available for connection`), the operation (`connect`, `add stream`,
/// `publish`, ...), the target (a server list, a stream, a subject), and when the server
/// answered with an error of its own, JetStream's error code and text (e.g. 10058
/// `stream name already in use with a different configuration`). Match a status with
/// `catch let error as NATSError where error.status == .noServer`.
public struct NATSError: Error, CustomStringConvertible, Sendable, Equatable {
    /// cnats's status code (`natsStatus`), e.g. `NATS_NO_SERVER`.
    public let status: Status
    /// What was being done: `connect`, `subscribe`, `add stream`, `publish`, ...
    public let operation: String
    /// What it was done to: the servers, the stream, the subject; `nil` when nothing applies.
    public let target: String?
    /// JetStream's error code when the server answered with one (`jsErrCode`), else 0.
    public let serverCode: Int
    /// The server's or the client's detailed text when there is one (cnats's last error).
    public let detail: String?

    /// A cnats status: the raw `natsStatus` value with its name.
    public struct Status: Sendable, Hashable, CustomStringConvertible {
        /// The raw `natsStatus` value.
        public let rawValue: UInt32

        /// Wraps a raw status.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// cnats's text for the status (`natsStatus_GetText`).
        public var description: String {
            String(cString: natsStatus_GetText(natsStatus(rawValue: rawValue)))
        }

        /// `NATS_NO_SERVER`: no server could be reached.
        public static let noServer = Status(rawValue: NATS_NO_SERVER.rawValue)
        /// `NATS_TIMEOUT`: an answer did not come in time.
        public static let timeout = Status(rawValue: NATS_TIMEOUT.rawValue)
        /// `NATS_NO_RESPONDERS`: nobody answers on the subject (no stream leader yet).
        public static let noResponders = Status(rawValue: NATS_NO_RESPONDERS.rawValue)
        /// `NATS_CONNECTION_CLOSED`: the connection is closed.
        public static let connectionClosed = Status(rawValue: NATS_CONNECTION_CLOSED.rawValue)
        /// `NATS_INVALID_ARG`: an argument (a URL, a name) was refused by the client.
        public static let invalidArgument = Status(rawValue: NATS_INVALID_ARG.rawValue)
        /// `NATS_ERR`: a generic error; JetStream's errors come with it and a server code.
        public static let generic = Status(rawValue: NATS_ERR.rawValue)
        /// `NATS_NOT_FOUND`: the stream or consumer does not exist.
        public static let notFound = Status(rawValue: NATS_NOT_FOUND.rawValue)
        /// `NATS_SSL_ERROR`: the TLS handshake or verification failed.
        public static let tlsError = Status(rawValue: NATS_SSL_ERROR.rawValue)
        /// `NATS_MAX_PAYLOAD`: the message is larger than the server accepts
        /// (``NATSConnection/maxPayload``).
        public static let maxPayload = Status(rawValue: NATS_MAX_PAYLOAD.rawValue)
    }

    /// Makes an error.
    ///
    /// - Parameters:
    ///   - status: cnats's status.
    ///   - operation: what was being done.
    ///   - target: what it was done to.
    ///   - serverCode: JetStream's error code, 0 for none.
    ///   - detail: a detailed text, if any.
    public init(status: Status, operation: String, target: String? = nil, serverCode: Int = 0, detail: String? = nil) {
        self.status = status
        self.operation = operation
        self.target = target
        self.serverCode = serverCode
        self.detail = detail
    }

    /// Wraps a raw `natsStatus`, picking up cnats's thread-local last error text.
    init(_ status: natsStatus, _ operation: String, _ target: String? = nil, serverCode: jsErrCode = jsErrCode(rawValue: 0)) {
        var detail: String?
        if let text = nats_GetLastError(nil), text.pointee != 0 {
            let message = String(cString: text)
            if message != String(cString: natsStatus_GetText(status)) { detail = message }
        }
        self.init(status: Status(rawValue: status.rawValue), operation: operation, target: target,
                  serverCode: Int(serverCode.rawValue), detail: detail)
    }

    /// `"<status text> during <operation> on <target> (server error <code>: <detail>)"`.
    public var description: String {
        var text = "\(status) during \(operation)"
        if let target { text += " on \(target)" }
        switch (serverCode, detail) {
        case (0, nil): break
        case (0, let detail?): text += " (\(detail))"
        case (let code, nil): text += " (JetStream error \(code))"
        case (let code, let detail?): text += " (JetStream error \(code): \(detail))"
        }
        return text
    }

    /// Errors are equal when their statuses and server codes are (the texts may differ).
    public static func == (lhs: NATSError, rhs: NATSError) -> Bool {
        lhs.status == rhs.status && lhs.serverCode == rhs.serverCode
    }

    /// Throws a ``NATSError`` unless `status` is `NATS_OK`.
    static func check(_ status: natsStatus, _ operation: String, _ target: String? = nil, serverCode: jsErrCode = jsErrCode(rawValue: 0)) throws {
        if status != NATS_OK { throw NATSError(status, operation, target, serverCode: serverCode) }
    }
}
