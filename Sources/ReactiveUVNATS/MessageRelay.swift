import CNATS
import CSystemShims
import Glibc
import ReactiveUV

/// Hands one subscription's messages from cnats's delivery thread to the loop.
final class MessageRelay: @unchecked Sendable {
    // Thread-safety: `queued`, `stopped`, `received` and `waitingForRoom` are atomics
    // shared with cnats's delivery thread; `sub`, `subscriber`, `consumer`, `pending` and
    // `early` are touched only on the loop's thread.
    let loop: EventLoop
    /// `nil` once the relay is parked (``park(_:)``): nothing is delivered any more.
    var subscriber: Subscriber<NATSMessage>?
    let jetStream: Bool
    let bufferLimit: Int64
    /// Holds deliveries back while closed (``ConsumerGate``), or `nil`.
    let gate: ConsumerGate?
    let queued = NATSCounter()
    let stopped = NATSCounter()
    /// Messages cnats handed to the callback (also those below the floor): what the stall
    /// watch of an ``OrderedConsumer`` counts as the consumer being alive.
    let received = NATSCounter()
    /// 1 while cnats's thread waits in ``deliver(_:)`` for room or for the gate: the
    /// reader holds the consumer back, which is not silence.
    let waitingForRoom = NATSCounter()
    var sub: OpaquePointer?
    /// For a relay of an ``OrderedConsumer``: the consumer its messages and its end go to
    /// (instead of `subscriber`); `nil` once retired. Loop thread.
    var consumer: OrderedConsumer?
    /// An ``OrderedConsumer``'s relay not yet promoted (its consumer is being made): its
    /// messages wait in `early`, still counted in `queued`. Loop thread.
    var pending = true
    var early: [NATSMessage] = []
    /// For a JetStream consumer: the lowest stream sequence still to deliver. Read and
    /// written only by cnats's message callback (one at a time per subscription), and
    /// before the subscription exists.
    ///
    /// Why: cnats 3.4 restarts an ordered consumer that missed heartbeats or saw a gap
    /// from "the last sequence received + 1", which is 1 when it has received nothing
    /// yet, whatever the consumer's own start was (`jsSub_resetOrderedConsumer(sub,
    /// jsi->sseq+1)` in its js.c). Such a restart would send the stream from its first
    /// message again; messages below the floor are dropped instead, so a consumer's
    /// sequences only ever rise.
    var floor: UInt64 = 0

    init(loop: EventLoop, subscriber: Subscriber<NATSMessage>?, jetStream: Bool, bufferLimit: Int,
         gate: ConsumerGate? = nil) {
        self.loop = loop
        self.subscriber = subscriber
        self.jetStream = jetStream
        self.bufferLimit = Int64(max(1, bufferLimit))
        self.gate = gate
    }

    /// cnats's subscription is made (loop thread): the relay's retained reference is now
    /// released by cnats's completion callback, after its last message callback.
    func attach(_ sub: OpaquePointer, closure: UnsafeMutableRawPointer) {
        self.sub = sub
        let status = natsSubscription_SetOnCompleteCB(sub, { closure in
            // The last message callback has returned: the subscription ended (unsubscribed,
            // or the connection closed). Complete on the loop, after the messages queued there.
            let relay = Unmanaged<MessageRelay>.fromOpaque(closure!).takeRetainedValue()
            relay.loop.execute { relay.ended() }
        }, closure)
        if status != NATS_OK {
            // No completion callback will come, and a message callback may be running:
            // unsubscribe and keep the relay for the process's life instead of freeing it.
            unsubscribe()
            park(closure)
            return
        }
        if stopped.value != 0 { unsubscribe() }
    }

    /// Retires a relay whose retained reference cnats's callbacks may still use (loop
    /// thread): it delivers nothing more and drops its subscriber; the object itself is kept
    /// for the process's life (a few words).
    ///
    /// Why: when `js_Subscribe` fails (the consumer's creation timed out, say) cnats has
    /// already subscribed to the delivery subject, and the server may have made the
    /// consumer anyway: a message can be in the callback while cnats destroys the
    /// subscription, and nothing tells when that callback has returned.
    func park(_ closure: UnsafeMutableRawPointer) {
        stopped.store(1)
        subscriber = nil
        csys_mutex_lock(MessageRelay.parkedLock)
        MessageRelay.parked.append(Unmanaged<MessageRelay>.fromOpaque(closure))
        csys_mutex_unlock(MessageRelay.parkedLock)
    }

    nonisolated(unsafe) private static var parked: [Unmanaged<MessageRelay>] = []
    nonisolated(unsafe) private static let parkedLock = csys_mutex_create(false)

    /// Disposal (any thread): no more deliveries; unsubscribe on the loop.
    func stop() {
        if stopped.add(1) != 1 { return }
        loop.natsPerform { [self] in unsubscribe() }
    }

    private func unsubscribe() {
        guard let sub else { return }
        self.sub = nil
        natsSubscription_Unsubscribe(sub)
        natsSubscription_Destroy(sub)
    }

    /// cnats's message callback (a cnats thread).
    static let onMessage: natsMsgHandler = { _, _, msg, closure in
        guard let msg else { return }
        let relay = Unmanaged<MessageRelay>.fromOpaque(closure!).takeUnretainedValue()
        relay.received.add(1)
        let message = NATSMessage(copying: msg, jetStream: relay.jetStream)
        natsMsg_Destroy(msg)
        if let sequence = message.streamSequence {
            guard sequence >= relay.floor else { return }  // a restart from before our start
            relay.floor = sequence + 1
        }
        relay.deliver(message)
    }

    /// Bounded hand-over: waits (on cnats's thread) while the loop has `bufferLimit`
    /// messages of this subscription still to deliver, or while the gate is closed. cnats
    /// sends a flow-control reply only after its callback returned for the message before
    /// it, so waiting here is what makes the server stop sending.
    private func deliver(_ message: NATSMessage) {
        while stopped.value == 0 {
            if let gate, gate.isClosed {
                waitingForRoom.store(1)
                usleep(1000)  // a closed gate waits for a reader: no hurry to look again
            } else if queued.value >= bufferLimit {
                waitingForRoom.store(1)
                usleep(200)
            } else {
                break
            }
        }
        waitingForRoom.store(0)
        if stopped.value != 0 { return }
        queued.add(1)
        loop.execute { [self] in
            if let consumer {
                consumer.take(message, from: self)  // it settles `queued`
            } else {
                queued.add(-1)
                if stopped.value == 0 { subscriber?.sendNext(message) }
            }
        }
    }

    /// The subscription ended in cnats (loop thread): completes unless disposed (an
    /// ``OrderedConsumer`` decides for its relays).
    func ended() {
        unsubscribe()  // frees cnats's subscription object (unsubscribing a closed one is harmless)
        if let consumer {
            consumer.ended(self)
        } else {
            subscriber?.sendCompleted()
        }
    }
}
