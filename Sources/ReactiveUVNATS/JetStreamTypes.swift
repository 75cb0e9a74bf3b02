import CNATS

/// The configuration of a JetStream stream (the subset a log pipeline needs).
public struct JetStreamConfig: Sendable, Equatable {
    /// Where a stream keeps its messages.
    public enum Storage: Sendable, Equatable {
        /// On disk in the servers' store directories (survives restarts).
        case file
        /// In memory only.
        case memory
    }

    /// The stream's name (no spaces, dots or wildcards).
    public var name: String
    /// The subjects it stores (wildcards allowed), e.g. `["logs.>"]`.
    public var subjects: [String]
    /// How many servers keep a copy (1, 3 or 5; more than 1 needs a cluster).
    public var replicas: Int = 1
    /// File or memory storage.
    public var storage: Storage = .file
    /// Messages older than this many seconds are removed; `nil` keeps them.
    public var maxAge: Double?
    /// The stream keeps at most this many bytes (oldest removed first); `nil` for no limit.
    public var maxBytes: Int64?
    /// The window, in seconds, in which a repeated `Nats-Msg-Id` is recognised as a
    /// duplicate (the server's default is two minutes).
    public var duplicateWindow: Double = 120

    /// A stream named `name` storing `subjects`.
    public init(name: String, subjects: [String], replicas: Int = 1, storage: Storage = .file,
                maxAge: Double? = nil, maxBytes: Int64? = nil, duplicateWindow: Double = 120) {
        self.name = name
        self.subjects = subjects
        self.replicas = replicas
        self.storage = storage
        self.maxAge = maxAge
        self.maxBytes = maxBytes
        self.duplicateWindow = duplicateWindow
    }
}

/// A stream's state as the server reported it.
public struct JetStreamInfo: Sendable {
    /// The stream's name.
    public let name: String
    /// The subjects it stores.
    public let subjects: [String]
    /// Messages stored.
    public let messages: UInt64
    /// Bytes stored.
    public let bytes: UInt64
    /// The first and last sequence numbers stored (0 when empty).
    public let firstSequence: UInt64
    /// The last sequence number stored.
    public let lastSequence: UInt64
    /// Consumers the stream has (ordered consumers included, while they exist).
    public let consumers: Int
    /// The cluster node leading the stream (`nil` without a cluster).
    public let leader: String?
    /// The other nodes holding replicas.
    public let replicaNames: [String]
    /// The other nodes holding replicas, with how far each is behind the leader (in the
    /// order of ``replicaNames``).
    public let replicas: [JetStreamReplica]

    init(_ si: UnsafeMutablePointer<jsStreamInfo>) {
        let config = si.pointee.Config
        name = config.map { String(cString: $0.pointee.Name) } ?? ""
        var subjects: [String] = []
        if let config, let list = config.pointee.Subjects {
            for i in 0..<Int(config.pointee.SubjectsLen) { if let s = list[i] { subjects.append(String(cString: s)) } }
        }
        self.subjects = subjects
        messages = si.pointee.State.Msgs
        bytes = si.pointee.State.Bytes
        firstSequence = si.pointee.State.FirstSeq
        lastSequence = si.pointee.State.LastSeq
        consumers = Int(si.pointee.State.Consumers)
        if let cluster = si.pointee.Cluster {
            leader = cluster.pointee.Leader.map { String(cString: $0) }
            var peers: [JetStreamReplica] = []
            if let replicas = cluster.pointee.Replicas {
                for i in 0..<Int(cluster.pointee.ReplicasLen) {
                    if let peer = replicas[i], let n = peer.pointee.Name {
                        peers.append(JetStreamReplica(name: String(cString: n), current: peer.pointee.Current,
                                                      offline: peer.pointee.Offline, lag: peer.pointee.Lag))
                    }
                }
            }
            replicas = peers
            replicaNames = peers.map(\.name)
        } else {
            leader = nil
            replicas = []
            replicaNames = []
        }
    }
}

/// A node holding a replica of a stream, as the stream's leader sees it.
public struct JetStreamReplica: Sendable, Equatable {
    /// The node's server name.
    public let name: String
    /// Whether it has everything the leader has (a replica that is catching up, or that
    /// the leader has not heard from lately, is not).
    public let current: Bool
    /// Whether the leader considers it gone.
    public let offline: Bool
    /// How many log entries it is behind the leader.
    public let lag: UInt64
}

/// The server's acknowledgement of a JetStream publish.
public struct JetStreamAck: Sendable, Equatable {
    /// The stream that stored the message.
    public let stream: String
    /// Its sequence number there.
    public let sequence: UInt64
    /// Whether the stream already had a message with this id (inside its duplicate
    /// window): nothing new was stored, and `sequence` is the first copy's.
    public let duplicate: Bool
}

/// Where a stream consumer starts.
public enum JetStreamStart: Sendable, Equatable {
    /// From the first message stored.
    case all
    /// From messages stored after the consumer was made.
    case new
    /// From this sequence number on.
    case sequence(UInt64)
    /// From the first message stored at or after this time (nanoseconds since the epoch).
    case time(Int64)
}

/// An ordered consumer made again because it had gone silent while its stream held more
/// (``JetStream/consumerRestarts``).
///
/// Nothing was lost or repeated: the new consumer starts at ``restartedFrom``, the first
/// sequence the subscription had not delivered, and replaces the silent one on the loop.
public struct JetStreamConsumerRestart: Sendable, Equatable {
    /// The stream consumed.
    public let stream: String
    /// The consumer's filter subject, `nil` for the whole stream.
    public let subject: String?
    /// Seconds nothing had arrived when the stream was found holding more.
    public let silentFor: Double
    /// The stream's last sequence when it was checked.
    public let streamLastSequence: UInt64
    /// The sequence the new consumer starts at (the last delivered + 1).
    public let restartedFrom: UInt64

    /// A restart record (the library makes these; public for callers' own tests).
    ///
    /// - Parameters:
    ///   - stream: the stream consumed.
    ///   - subject: the filter subject, or `nil`.
    ///   - silentFor: seconds of silence.
    ///   - streamLastSequence: the stream's last sequence when checked.
    ///   - restartedFrom: where the new consumer starts.
    public init(stream: String, subject: String?, silentFor: Double, streamLastSequence: UInt64, restartedFrom: UInt64) {
        self.stream = stream
        self.subject = subject
        self.silentFor = silentFor
        self.streamLastSequence = streamLastSequence
        self.restartedFrom = restartedFrom
    }
}
