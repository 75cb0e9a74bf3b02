/// Runs a signal-returning action on demand and tracks its executions: RAC's `RACCommand`.
///
/// ```swift
/// let cmd = Command<Int, Int>(enabled: enabledSignal) { input in Signal.return(input * 2) }
/// cmd.execute(1).subscribeNext { print($0) }
/// ```
///
/// The contract is RAC's (catalogue §9):
/// - ``enabled`` is the latest value of the enabled signal (`true` before its first value)
///   AND (``allowsConcurrentExecution`` OR no execution is running). It sends its current
///   value synchronously on subscription, later changes on the main thread, without repeats.
/// - ``execute(_:)`` checks `enabled` synchronously: when disabled it returns a signal failing
///   with ``CommandError/notEnabled(command:)`` and the block is not called. Otherwise it calls
///   the block once, shares the result through an unlimited replay subject, announces it on
///   ``executionSignals`` and subscribes to it on ``Scheduler/main`` (asynchronously). The
///   returned signal carries the execution's values and its error.
/// - ``executionSignals`` carries only executions started after you subscribed, with their
///   errors caught (they just complete), on the main thread.
/// - ``executing`` is `true` while any execution has not terminated; current value on
///   subscription, changes on the main thread, no repeats.
/// - ``errors`` is hot: each execution's error as a *value*, on the main thread.
public final class Command<Input, Output>: AnyCommand, @unchecked Sendable {
    let block: (Input) -> Signal<Output>
    /// Every execution's shared signal, as it starts.
    let addedExecutionSignals = Subject<Signal<Output>>()
    /// RAC's `allowsConcurrentExecutionSubject`: the setting as a signal.
    let allowsConcurrentSubject: BehaviorSubject<Bool>
    /// Completes when the command is deallocated, ending `enabled`.
    let deallocated = Subject<Void>()
    /// RAC's `immediateEnabled`: updated synchronously, connected once at init.
    let immediateEnabled: Signal<Bool>

    /// Executions started after subscription, errors caught, on the main thread.
    public let executionSignals: Signal<Signal<Output>>
    /// Whether any execution is running; current value, then changes on the main thread.
    public let executing: Signal<Bool>
    /// Whether the command can execute now; current value, then changes on the main thread.
    public let enabled: Signal<Bool>
    /// Each execution's error as a value, on the main thread (hot).
    public let errors: Signal<any Error>

    /// Whether `execute` may start while another execution runs (default `false`).
    public var allowsConcurrentExecution: Bool {
        get { allowsConcurrentSubject.value }
        set { allowsConcurrentSubject.sendNext(newValue) }
    }

    /// Creates a command.
    ///
    /// - Parameters:
    ///   - enabledSignal: whether the command may execute (before its first value: `true`);
    ///     `nil` means always.
    ///   - block: maps an input to the signal of one execution.
    public init(enabled enabledSignal: Signal<Bool>? = nil, _ block: @escaping (Input) -> Signal<Output>) {
        self.block = block
        let allows = BehaviorSubject(value: false)
        allowsConcurrentSubject = allows
        let added = addedExecutionSignals

        let immediateExecuting: Signal<Bool> = added
            .flattenMap { signal -> Signal<Int>? in
                signal.catchTo(.empty()).then { Signal.return(-1) }.startWith(1)
            }
            .scan(start: 0, reduce: +)
            .map { $0 > 0 }
            .startWith(false)

        let moreExecutionsAllowed = Signal.if(
            allows, then: Signal.return(true), else: immediateExecuting.not())
        let enabledSource = (enabledSignal ?? Signal.return(true)).startWith(true).takeUntil(deallocated)
        let immediateEnabled = Signal.combineLatest([enabledSource, moreExecutionsAllowed]).and().replayLast()
        self.immediateEnabled = immediateEnabled

        executing = immediateExecuting.deliverOn(Scheduler.main).startWith(false).distinctUntilChanged().replayLast()
        enabled = immediateEnabled.take(1)
            .concat(immediateEnabled.skip(1).deliverOn(Scheduler.main))
            .distinctUntilChanged()
            .replayLast()
        executionSignals = added.map { $0.catchTo(.empty()) }.deliverOn(Scheduler.main)

        let errorsConnection = added
            .flattenMap { signal -> Signal<any Error>? in
                signal.ignoreValues().map { _ -> any Error in SignalError.timedOut }.catch { Signal.return($0) }
            }
            .deliverOn(Scheduler.main)
            .publish()
        errors = errorsConnection.signal
        // Connected for the command's whole life and never disposed by it: when the command
        // is released, `addedExecutionSignals` completes, and that completion reaches
        // `errors` on the main thread once the running executions have ended (RAC's
        // `errorsConnection` is never disposed either). Disposing it in `deinit` would cut
        // that completion off, leaving `errors` the one signal of four that never completes.
        errorsConnection.connect()
    }

    deinit {
        deallocated.sendCompleted()
        // `enabled` combines this setting too; it must end for `enabled` to complete.
        allowsConcurrentSubject.sendCompleted()
        addedExecutionSignals.sendCompleted()
    }

    /// Whether the command is enabled right now (RAC's `[immediateEnabled first]`).
    public var isEnabled: Bool { (try? immediateEnabled.first()) ?? false }

    /// Starts an execution if the command is enabled: RAC's `-execute:`.
    ///
    /// - Parameter input: passed to the command's block.
    /// - Returns: the execution's shared (hot, replayed) signal, including its error; or a
    ///   signal failing with ``CommandError/notEnabled(command:)`` when disabled.
    @discardableResult
    public func execute(_ input: Input) -> Signal<Output> {
        guard isEnabled else { return .error(CommandError.notEnabled(command: self)) }
        let connection = block(input).subscribeOn(Scheduler.main).multicast(ReplaySubject())
        addedExecutionSignals.sendNext(connection.signal)
        connection.connect()
        return connection.signal
    }
}
