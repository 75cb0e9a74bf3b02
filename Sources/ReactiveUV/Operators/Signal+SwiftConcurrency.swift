// Bridges to Swift concurrency: a signal as an AsyncSequence, an AsyncSequence as a signal,
// and async forms of the blocking operators (which suspend instead of blocking a thread).

extension Signal where Value: Sendable {
    /// The signal's values as an `AsyncThrowingStream`. Iterating subscribes; the stream
    /// ends at completion, throws the signal's error, and ending the loop early or
    /// cancelling the task disposes the subscription.
    ///
    /// **RAC:** none (Swift concurrency). **Thread:** the iterating task's (values are
    /// buffered between the source's thread and the task). **Disposal:** ending the loop
    /// early or cancelling the task disposes the subscription. **Terminates:** at
    /// completion; throws the source's error.
    public var values: AsyncThrowingStream<Value, any Error> {
        let source = self
        return AsyncThrowingStream { continuation in
            let d = source.subscribe(
                next: { continuation.yield($0) },
                error: { continuation.finish(throwing: $0) },
                completed: { continuation.finish() })
            let box = DisposableBox(d)
            continuation.onTermination = { _ in box.disposable.dispose() }
        }
    }

    /// The first value, suspending until it arrives; `nil` when the signal completes
    /// without one. Throws the signal's error.
    ///
    /// **RAC:** `-first`, suspending instead of blocking. **Thread:** the calling task's.
    /// **Disposal:** the subscription is disposed after the first value or when the task is
    /// cancelled. **Terminates:** returns at the first value or completion; throws the
    /// error.
    public func first() async throws -> Value? {
        for try await v in take(1).values { return v }
        return nil
    }

    /// The first value, or `defaultValue` when the signal completes without one.
    ///
    /// **RAC:** `-firstOrDefault:`, suspending instead of blocking. **Thread:** the calling
    /// task's. **Disposal:** the subscription is disposed after the first value or when the
    /// task is cancelled. **Terminates:** returns at the first value or completion; throws
    /// the error.
    public func firstOrDefault(_ defaultValue: Value) async throws -> Value {
        try await first() ?? defaultValue
    }

    /// Every value, once the signal completes. Throws the signal's error.
    ///
    /// **RAC:** `-toArray`, suspending instead of blocking. **Thread:** the calling task's.
    /// **Disposal:** the subscription is disposed when the task is cancelled.
    /// **Terminates:** returns at completion; throws the error.
    public func toArray() async throws -> [Value] {
        var result: [Value] = []
        for try await v in values { result.append(v) }
        return result
    }

    /// Suspends until the signal terminates; throws its error.
    ///
    /// **RAC:** `-waitUntilCompleted:`, suspending instead of blocking. **Thread:** the
    /// calling task's. **Disposal:** the subscription is disposed when the task is
    /// cancelled. **Terminates:** returns at completion; throws the error.
    public func waitUntilCompleted() async throws {
        for try await _ in ignoreValues().values {}
    }
}

extension Signal {
    /// A signal that iterates `sequence` in a new task at each subscription; disposal
    /// cancels the task.
    ///
    /// **RAC:** none (Swift concurrency). **Thread:** the iterating task's. **Disposal:**
    /// cancels the task. **Terminates:** when the sequence ends (completion) or throws (the
    /// error).
    public convenience init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Value, Value: Sendable {
        self.init(body: { observer, lifetime in
            let forward = UncheckedSendable(observer)
            let life = UncheckedSendable(lifetime)
            let task = Task {
                do {
                    for try await v in sequence {
                        if life.value.isDisposed { return }
                        forward.value(.next(v))
                    }
                    if !life.value.isDisposed { forward.value(.completed) }
                } catch {
                    if !life.value.isDisposed { forward.value(.error(error)) }
                }
            }
            lifetime.add(Disposable { task.cancel() })
        })
    }
}

/// Carries a non-Sendable value into a task where the threading contract makes it safe
/// (a subscription's sink is serialized by the subscription itself).
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Lets a `@Sendable` termination handler dispose a subscription.
final class DisposableBox: @unchecked Sendable {
    let disposable: Disposable
    init(_ disposable: Disposable) { self.disposable = disposable }
}
