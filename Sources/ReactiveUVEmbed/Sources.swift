import CReactiveUVEmbed
import ReactiveUV

// Signals that do not come from IO: constants, and the runtime's timers.

/// The tick value of the timer sources: the loop's monotonic nanoseconds, in decimal.
func tickValue(_ time: SchedulerTime) -> Bytes {
    Bytes(String(time.nanoseconds).utf8)
}

/// Whether `seconds` can be given to a time operator (not negative, not NaN).
@inline(__always)
func isDuration(_ seconds: Double) -> Bool { seconds >= 0 }

/// `ruv_signal_return`: one value, then completion, per subscription.
@c @implementation
public func ruv_signal_return(_ bytes: UnsafeRawPointer?, _ len: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let value = copyBytes(bytes, len) else { return einval }
    return output(.return(value), out)
}

/// `ruv_signal_empty`: completes at once.
@c @implementation
public func ruv_signal_empty(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    output(.empty(), out)
}

/// `ruv_signal_never`: never sends anything.
@c @implementation
public func ruv_signal_never(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    output(.never(), out)
}

/// `ruv_signal_error`: fails at once with the code and message.
@c @implementation
public func ruv_signal_error(_ code: Int32, _ message: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard code < 0 else { return einval }
    return output(.error(CError(code: code, message: string(message))), out)
}

/// `ruv_signal_interval`: ticks every `seconds` on the runtime's loop.
@c @implementation
public func ruv_signal_interval(_ runtime: OpaquePointer?, _ seconds: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self), out != nil else { return einval }
    guard seconds > 0, seconds.isFinite else { return RUV_EARGUMENT }
    return output(Signal<SchedulerTime>.interval(seconds, on: rt.scheduler).map(tickValue), out)
}

/// `ruv_signal_timer`: one tick `seconds` after subscription, then completion.
@c @implementation
public func ruv_signal_timer(_ runtime: OpaquePointer?, _ seconds: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self), out != nil else { return einval }
    guard isDuration(seconds) else { return RUV_EARGUMENT }
    let scheduler = rt.scheduler
    let timer = Signal<Bytes>.create { subscriber in
        scheduler.afterDelay(seconds) {
            subscriber.sendNext(tickValue(scheduler.now))
            subscriber.sendCompleted()
        }
    }
    return output(timer, out)
}

/// `ruv_signal_release`: gives back C's reference; subscriptions go on.
@c @implementation
public func ruv_signal_release(_ signal: OpaquePointer?) {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    releaseHandle(signal, as: SignalHandle.self)
}
