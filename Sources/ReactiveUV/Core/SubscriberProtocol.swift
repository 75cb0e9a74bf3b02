/// Anything that receives a signal's events: RAC's `<RACSubscriber>` protocol.
///
/// Subjects conform, so a subject can be subscribed to signals. The first terminal event
/// a subscriber receives from any of its subscriptions ends all of them (RAC's rule C6).
public protocol SubscriberProtocol<Value>: AnyObject {
    /// The type of the values received.
    associatedtype Value
    /// Receives a value.
    func sendNext(_ value: Value)
    /// Receives an error; terminal.
    func sendError(_ error: any Error)
    /// Receives completion; terminal.
    func sendCompleted()
    /// Receives the disposable of one subscription, so a terminal event can dispose it.
    func didSubscribe(with disposable: Disposable)
}

extension SubscriberProtocol {
    /// Sends an event (dispatches to `sendNext`, `sendError` or `sendCompleted`).
    @inlinable
    public func send(_ event: Event<Value>) {
        switch event {
        case .next(let v): sendNext(v)
        case .error(let e): sendError(e)
        case .completed: sendCompleted()
        }
    }
}
