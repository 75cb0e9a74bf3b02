import CNATS
import CSystemShims
import Glibc
import ReactiveUV

// One subscription of `JetStream.consume`: cnats's ordered consumer, watched, and made again
// from the first sequence not yet delivered when it has gone silent while the stream holds
// more.
//
// Why a watch of our own: cnats 3.4 recovers an ordered consumer in three cases only — a
// gap in the consumer's own delivery sequence, 10 s without any message or idle heartbeat
// (twice the 5 s heartbeat), and a reconnect. A server-side consumer that goes on sending
// idle heartbeats while it delivers nothing is healthy to cnats, and cnats reports nothing:
// the stream grows, the subscription stays silent, for good. logcast's fault test saw that
// after the leader of a 3-replica stream was cut off and healed, and the hub too
// (docs/design/nats-durability.md has what is known of the cause: the consumer, one memory
// replica on one of the stream's servers, most likely kept heartbeating on a server that
// had caught the stream up without waking it). A recreation that failed (its consumer request
// timed out during an election) is retried only by cnats's heartbeat timer, and not at all
// once heartbeats arrive again from the old consumer. Heartbeats are cnats's business, not ours
// (they never reach the message callback), so the watch asks the server instead: nothing
// received for `stallTimeout` while the stream's last sequence is at or beyond the next one
// to deliver, with at least one message a consumer from there would get, means stalled,
// whatever cnats believes.
//
//   cnats thread                         loop thread
//   MessageRelay.onMessage ─ received+1 ─► take(_:from:) ─► next = seq + 1 ─► subscriber
//                                          watchdog tick: silent ≥ stallTimeout?
//                                            └─ off the loop: stream's last ≥ next, and a pull
//                                               consumer from next counts ≥ 1 to deliver?
//                                                 └─ new relay from `next` (off the loop),
//                                                    then the old one retired: restarts+1
//
// Exactly once and in order across a remake: only the current relay delivers, and only a
// message at or above `next`; a new relay is made from `next` and promoted on the loop,
// where `next` moves, so what the old relay still had queued is dropped and sent again by
// the new one, and what the new one sends below `next` (the old relay delivered it between
// the request and the promotion) is dropped. A new relay's messages that reach the loop
// before its promotion wait in its `early` list (bounded by `bufferLimit`: cnats's thread
// waits on `queued`).
//
// Bounded: one stall check at a time, at most one per tick (a third of `stallTimeout`);
// while the servers do not answer, each check waits out the context's request timeout.
// A remake that fails keeps the old relay (it may still come back) and is tried again at
// the next tick that still finds the consumer stalled.
final class OrderedConsumer {
    // Loop thread only (the off-loop jobs touch nothing here but read their captures).
    let jetStream: JetStream
    let loop: EventLoop
    let stream: String
    let subject: String?
    let start: JetStreamStart
    let bufferLimit: Int
    let gate: ConsumerGate?
    /// Seconds of silence (with the stream holding more) after which the consumer is made
    /// again; `nil` never.
    let stallTimeout: Double?
    var subscriber: Subscriber<NATSMessage>?
    /// The relay that delivers.
    var current: MessageRelay?
    /// A relay being made (its consumer requested off the loop).
    var making: MessageRelay?
    /// The lowest stream sequence not yet delivered; `nil` until the first consumer says
    /// where it starts.
    var next: UInt64?
    var watchdog: Disposable?
    /// The current relay's `received` count at the last tick, and when it last changed
    /// (monotonic ns).
    var lastReceived: Int64 = -1
    var quietSince: UInt64 = 0
    /// A stall check or a remake is under way.
    var checking = false
    var stopped = false

    init(jetStream: JetStream, stream: String, subject: String?, start: JetStreamStart, bufferLimit: Int,
         gate: ConsumerGate?, stallTimeout: Double?, subscriber: Subscriber<NATSMessage>) {
        self.jetStream = jetStream
        self.loop = jetStream.loop
        self.stream = stream
        self.subject = subject
        self.start = start
        self.bufferLimit = bufferLimit
        self.gate = gate
        self.stallTimeout = stallTimeout.map { max(0.05, $0) }
        self.subscriber = subscriber
    }

    // MARK: - Making relays

    /// Makes the first consumer (loop thread).
    func begin() {
        make(from: start, made: {}, failed: { [self] error in finish(error: error) })
    }

    /// Makes a relay whose consumer starts at `start`, off the loop; promotes it and runs
    /// `made` when made, else hands the error to `failed` (loop thread).
    private func make(from start: JetStreamStart, made: @escaping () -> Void, failed: @escaping (NATSError) -> Void) {
        guard !stopped, subscriber?.isDisposed == false else { return }
        guard let js = jetStream.js, !jetStream.connectionGone else {
            failed(NATSError(status: .connectionClosed, operation: "consume", target: stream))
            return
        }
        let relay = MessageRelay(loop: loop, subscriber: nil, jetStream: true, bufferLimit: bufferLimit, gate: gate)
        relay.consumer = self
        making = relay
        jetStream.busy += 1
        let closure = Unmanaged.passRetained(relay).toOpaque()
        let context = NATSUnchecked((js, relay, closure, stream, subject))
        loop.runOffLoop({ () -> Result<NATSUnchecked<(OpaquePointer, UInt64)>, NATSError> in
            let (js, relay, closure, stream, subject) = context.value
            return JetStream.subscribeOrdered(js, stream: stream, subject: subject, start: start, relay: relay,
                                              closure: closure)
        }, done: { [self] result in
            jetStream.busy -= 1
            making = nil
            switch result {
            case .success(let subscription):
                relay.attach(subscription.value.0, closure: closure)
                if stopped || jetStream.connectionGone {
                    relay.consumer = nil
                    relay.stop()
                    if current == nil { finish(error: nil) }
                } else {
                    promote(relay, startingAt: subscription.value.1)
                    made()
                }
            case .failure(let error):
                // cnats may have subscribed and taken messages before it failed.
                relay.consumer = nil
                relay.park(closure)
                failed(error)
            }
            if jetStream.connectionGone && jetStream.busy == 0 { jetStream.destroyContext() }
        })
    }

    /// `relay` delivers from now on; the one before it is retired (loop thread).
    private func promote(_ relay: MessageRelay, startingAt first: UInt64) {
        if next == nil { next = max(1, first) }
        let old = current
        current = relay
        relay.pending = false
        if let old { retire(old) }
        let early = relay.early
        relay.early = []
        relay.queued.add(-Int64(early.count))
        for message in early { deliver(message) }
        lastReceived = relay.received.value
        quietSince = csys_monotonic_ns()
        startWatchdog()
    }

    /// Stops `relay` for good: nothing it still has queued is delivered, and its end does
    /// not end the subscription.
    private func retire(_ relay: MessageRelay) {
        relay.consumer = nil
        relay.pending = false
        relay.early = []
        relay.stop()
    }

    // MARK: - Deliveries (loop thread)

    /// A message `relay` handed to the loop.
    func take(_ message: NATSMessage, from relay: MessageRelay) {
        if relay.pending {
            relay.early.append(message)  // counted in `queued` until promoted
            return
        }
        relay.queued.add(-1)
        guard relay === current else { return }
        deliver(message)
    }

    private func deliver(_ message: NATSMessage) {
        guard let sequence = message.streamSequence, let next, sequence >= next else { return }
        self.next = sequence + 1
        subscriber?.sendNext(message)
    }

    /// `relay`'s cnats subscription ended (unsubscribed, or the connection closed).
    func ended(_ relay: MessageRelay) {
        guard relay === current || (current == nil && making == nil) else { return }
        finish(error: nil)
    }

    /// Completes (`error` nil) or fails the subscription and stops everything.
    private func finish(error: NATSError?) {
        guard let subscriber else { return }
        self.subscriber = nil
        stop()
        if let error { subscriber.sendError(error) } else { subscriber.sendCompleted() }
    }

    /// Disposal or the end (loop thread): no more deliveries, no more checks.
    func stop() {
        stopped = true
        watchdog?.dispose()
        watchdog = nil
        if let current { retire(current) }
        current = nil
        making?.stop()  // its consumer request still runs; `make`'s completion unsubscribes it
    }

    // MARK: - The stall watch (loop thread)

    /// Arms the next tick (one at a time: a tick re-arms itself), unless one is armed.
    private func startWatchdog() {
        guard watchdog == nil, let stallTimeout, !stopped else { return }
        watchdog = loop.scheduler.afterDelay(stallTimeout / 3) { [self] in
            watchdog = nil
            watch()
            startWatchdog()
        }
    }

    /// One tick: notes activity, and checks the stream once the relay has been silent for
    /// `stallTimeout` without being held back by its reader.
    private func watch() {
        guard let relay = current, let stallTimeout, let next, !checking, !stopped else { return }
        let now = csys_monotonic_ns()
        let received = relay.received.value
        // Held back by the reader (a closed gate, a full buffer) is not silence.
        let heldBack = relay.waitingForRoom.value != 0 || relay.queued.value > 0 || gate?.isClosed == true
        if received != lastReceived || heldBack {
            lastReceived = received
            quietSince = now
            return
        }
        let silent = Double(now - quietSince) / 1e9
        guard silent >= stallTimeout else { return }
        checking = true
        jetStream.stallChecks += 1
        let filtered = subject
        let stream = self.stream
        let check = jetStream.stallCheck(stream: stream, filter: filtered, next: next)
        _ = check.subscribe(
            next: { [self] state in
                checking = false
                guard !stopped, current === relay, relay.received.value == received else { return }
                guard state.holdsMore else {
                    quietSince = csys_monotonic_ns()  // a quiet stream: look again a whole timeout later
                    return
                }
                remake(silentFor: silent, streamLastSequence: state.lastSequence)
            },
            error: { [self] error in
                // No answer (the servers are down or electing): the next tick asks again.
                checking = false
                jetStream.noteStallCheckFailure(error as? NATSError
                    ?? NATSError(status: .generic, operation: "consume (stall check)", target: stream))
            })
    }

    /// Makes the consumer again from `next`; the current relay delivers until the new one
    /// is made (and stays when making it fails).
    private func remake(silentFor silent: Double, streamLastSequence: UInt64) {
        guard let from = next else { return }
        checking = true
        let restart = JetStreamConsumerRestart(stream: stream, subject: subject, silentFor: silent,
                                               streamLastSequence: streamLastSequence, restartedFrom: from)
        make(from: .sequence(from), made: { [self] in
            checking = false
            jetStream.consumerRestarted(restart)
        }, failed: { [self] error in
            checking = false
            jetStream.noteStallCheckFailure(error)
        })
    }
}
