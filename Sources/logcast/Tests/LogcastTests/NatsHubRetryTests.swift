import ReactiveUVNATS
import Testing

@testable import logcast

/// Which failures of a hub replay's consumer are tried again (``NatsHub/isTransient(_:)``)
/// and which end the replay with `ERR SINCE`.
@Suite struct NatsHubRetryTests {
    /// A clustered server answers a consumer's stream-info request with JetStream 10008
    /// ("JetStream system temporarily unavailable") while the cluster's meta group has no
    /// leader: a fault's election. That ended a `SINCE` replay for good before (issue 33's
    /// hub that stopped serving after a fault); a single loopback server never answers it,
    /// so the classification is what is checked here.
    @Test func theClustersTemporarilyUnavailableIsTriedAgain() {
        let unavailable = NATSError(status: .generic, operation: "consume (stream info)", target: "LOGS", serverCode: 10008,
                                    detail: "JetStream system temporarily unavailable")
        #expect(NatsHub.isTransient(unavailable))
        #expect(NatsHub.isTransient(NATSError(status: .timeout, operation: "consume", target: "LOGS")))
        #expect(NatsHub.isTransient(NATSError(status: .noResponders, operation: "consume", target: "LOGS")))
    }

    /// What a later try cannot change still ends the replay: no such stream, a bad request.
    @Test func aMissingStreamStillEndsTheReplay() {
        #expect(!NatsHub.isTransient(NATSError(status: .notFound, operation: "consume (stream info)", target: "LOGS", serverCode: 10059)))
        #expect(!NatsHub.isTransient(NATSError(status: .invalidArgument, operation: "consume", target: "LOGS")))
    }
}
