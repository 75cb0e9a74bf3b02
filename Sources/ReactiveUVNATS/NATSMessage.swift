import CNATS
import Glibc

/// A message received from NATS or from a JetStream consumer (a copy: cnats's message is
/// released before the value reaches the loop).
public struct NATSMessage: Sendable {
    /// The subject it was published to.
    public let subject: String
    /// The reply subject, when the publisher asked for an answer.
    public let reply: String?
    /// The message's bytes.
    public let payload: [UInt8]
    /// The `Nats-Msg-Id` header (JetStream's de-duplication id), when present.
    public let messageID: String?
    /// The message's headers (the first value of each).
    public let headers: [String: String]
    /// For a JetStream message: its sequence number in the stream.
    public let streamSequence: UInt64?
    /// For a JetStream message: when the stream stored it, in nanoseconds since the epoch.
    public let timestamp: Int64?

    /// A message with the given fields (tests and callers that build their own).
    public init(subject: String, reply: String? = nil, payload: [UInt8], messageID: String? = nil,
                headers: [String: String] = [:], streamSequence: UInt64? = nil, timestamp: Int64? = nil) {
        self.subject = subject
        self.headers = headers
        self.reply = reply
        self.payload = payload
        self.messageID = messageID
        self.streamSequence = streamSequence
        self.timestamp = timestamp
    }

    /// Copies a cnats message (any thread); `jetStream` parses the stream metadata.
    init(copying msg: OpaquePointer, jetStream: Bool) {
        subject = String(cString: natsMsg_GetSubject(msg))
        let replyText = natsMsg_GetReply(msg).map { String(cString: $0) }
        let length = Int(natsMsg_GetDataLength(msg))
        if length > 0, let data = natsMsg_GetData(msg) {
            payload = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                Array(UnsafeBufferPointer(start: $0, count: length))
            }
        } else {
            payload = []
        }
        var headers: [String: String] = [:]
        var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
        var count: Int32 = 0
        if natsMsgHeader_Keys(msg, &keys, &count) == NATS_OK, let keys {
            for i in 0..<Int(count) {
                guard let key = keys[i] else { continue }
                var value: UnsafePointer<CChar>?
                if natsMsgHeader_Get(msg, key, &value) == NATS_OK, let value {
                    headers[String(cString: key)] = String(cString: value)
                }
            }
            free(keys)
        }
        self.headers = headers
        messageID = headers["Nats-Msg-Id"]
        var sequence: UInt64?
        var time: Int64?
        if jetStream {
            var meta: UnsafeMutablePointer<jsMsgMetaData>?
            if natsMsg_GetMetaData(&meta, msg) == NATS_OK, let meta {
                sequence = meta.pointee.Sequence.Stream
                time = meta.pointee.Timestamp
                jsMsgMetaData_Destroy(meta)
            }
            reply = nil  // a JetStream reply subject is the consumer's ack subject, not an answer address
        } else {
            reply = replyText
        }
        streamSequence = sequence
        timestamp = time
    }
}
