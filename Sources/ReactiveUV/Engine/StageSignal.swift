// The one signal behind every per-event operator (``SignalStage``): both ways a stage runs,
// in one place, and the two sinks they use.

/// The signal of a ``SignalStage``: one object holding the source and the stage, which
/// runs the stage on the **fused path** where the optimizer sees the chain and on the
/// **closure path** where it does not. This is the one place that decides.
///
/// Why one object and not an ``AnonymousSignal``: that is the signal plus its closure's
/// context (which holds the source and the stage), two allocations for the most common
/// operators of a cold chain. Here the subscription code (`run`) is a closure that captures
/// nothing and is handed the source and the stage, so forming it in a caller's module
/// (where ``init(_:_:)`` is inlined and specialized) allocates nothing, and the signal
/// never escapes into a call: where the optimizer sees a whole subscription it can keep the
/// signal on the stack.
///
/// Why `run` is a stored closure: both `attach` overrides are also vtable entries, served
/// by the library's unspecialized copy when the signal's class is not visible where it is
/// subscribed; there `run`, formed specialized where the signal was made, keeps the
/// per-event path specialized.
@usableFromInline
final class StageSignal<Stage: SignalStage>: Signal<Stage.Output>, @unchecked Sendable {
    @usableFromInline let upstream: Signal<Stage.Input>
    @usableFromInline let stage: Stage
    @usableFromInline
    let run: (Signal<Stage.Input>, Stage, @escaping Sink<Stage.Output>, CompoundDisposable) -> Void

    @inlinable
    init(_ upstream: Signal<Stage.Input>, _ stage: Stage) {
        self.upstream = upstream
        self.stage = stage
        // The closure path: the observer closure wrapped in a struct sink, so the stage's
        // one `receive` serves both paths. One closure context per subscription (this
        // stage, its state and the observer), as any closure stage has.
        run = { upstream, stage, observer, lifetime in
            let sink = StageSink(stage, stage.makeState(), ClosureSink(observer))
            upstream.attach({ sink.receive($0) }, lifetime)
        }
        super.init()
    }

    @inlinable
    override func attach(_ observer: @escaping Sink<Stage.Output>, _ lifetime: CompoundDisposable) {
        run(upstream, stage, observer, lifetime)
    }

    /// The fused path: the sink below goes up wrapped in a ``StageSink``, a struct, so this
    /// stage forms no closure. Only in specialized code (`_isConcrete`): this override is
    /// also the vtable entry the library's unspecialized copy serves, where a struct sink
    /// would take every value through generic code, so there it takes the closure path with
    /// the specialized closure `closing` makes.
    @inlinable
    override func attach<S: EventSink>(
        sink: S, closing: (S) -> Sink<Stage.Output>, _ lifetime: CompoundDisposable
    ) where S.Value == Stage.Output {
        // `_isConcrete` folds to true only where `S` is a concrete type (specialized code)
        // and to false in the library's generic copy. Pinned both ways: `FusedPathChoiceTests`
        // (unspecialized: `closing` is asked once) and `AllocationCountTests` (specialized,
        // release-built probe: one allocation per cold cycle; the paths' events agree).
        guard _isConcrete(S.self) else { return run(upstream, stage, closing(sink), lifetime) }
        upstream.attach(
            sink: StageSink(stage, stage.makeState(), sink), closing: { $0.observer() }, lifetime)
    }
}

/// A stage with one subscription's state, in front of the sink below it: what a
/// ``StageSignal`` hands upstream on either path.
@usableFromInline
struct StageSink<Stage: SignalStage, Downstream: EventSink>: EventSink where Downstream.Value == Stage.Output {
    @usableFromInline let stage: Stage
    @usableFromInline let state: Stage.State
    @usableFromInline let downstream: Downstream

    @inlinable
    init(_ stage: Stage, _ state: Stage.State, _ downstream: Downstream) {
        self.stage = stage
        self.state = state
        self.downstream = downstream
    }

    @inlinable @inline(__always)
    func receive(_ event: Event<Stage.Input>) {
        stage.receive(event, state, to: downstream)
    }

    /// This sink as an observer closure, for an upstream that takes closures (a subject).
    ///
    /// Why a local function forced inline rather than `{ sink.receive($0) }`: the closure's
    /// body was emitted as a function of its own, called by the closure's forwarder, which
    /// first copied the whole sink (every stage's closures and state, 80 bytes for
    /// map → filter → scan) out of the context onto the stack; `@inline(__always)` has the
    /// forwarder run the chain itself, reading the sink in place (the pipeline row: 14
    /// instructions and a call per value fewer, 241.6 → 227.6 under callgrind).
    /// (Called from a closure literal, not passed as `StageSink.observer`: an unapplied
    /// static method captures the generic metatypes, which Swift 6 warns are not `Sendable`.)
    @inlinable
    func observer() -> Sink<Stage.Input> {
        @inline(__always) func receive(_ event: Event<Stage.Input>) { self.receive(event) }
        return receive
    }
}

/// The closure path's last sink: the observer closure of ``Signal/attach(_:_:)``.
@usableFromInline
struct ClosureSink<Value>: EventSink {
    @usableFromInline let observer: Sink<Value>

    @inlinable
    init(_ observer: @escaping Sink<Value>) { self.observer = observer }

    @inlinable @inline(__always)
    func receive(_ event: Event<Value>) { observer(event) }
}
