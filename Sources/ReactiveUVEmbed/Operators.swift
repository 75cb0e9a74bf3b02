import CReactiveUVEmbed
import ReactiveUV

// The operators C can apply: each borrows its source handle(s) and returns a new handle
// over the library operator of the same name. C callbacks are called through `withBytes`,
// so C always gets a valid pointer borrowed for the call.

/// The object behind `ruv_buffer_t`: a map callback's output.
///
/// One per subscription of a `ruv_signal_map` signal, reused value after value. A map
/// callback that sends into its own source re-enters the same subscription on the same
/// thread; the nested call then gets a fresh buffer (`inUse`), so neither clobbers the other.
/// Thread-safety: used only by the (serialized) deliveries of one subscription.
final class BufferHandle {
    // Unchecked exclusivity: only the serialized deliveries of one subscription touch it,
    // and the dynamic check would cost more than the append.
    @exclusivity(unchecked) var bytes: Bytes = []
    @exclusivity(unchecked) var inUse = false
}

/// `ruv_buffer_append`: appends bytes to a map callback's output.
@c @implementation
public func ruv_buffer_append(_ buffer: OpaquePointer?, _ bytes: UnsafeRawPointer?, _ len: Int) -> Int32 {
    guard buffer != nil, len == 0 || bytes != nil else { return einval }
    if len == 0 { return 0 }
    withBorrowed(buffer, as: BufferHandle.self) { handle in
        handle.bytes.append(contentsOf: UnsafeRawBufferPointer(start: bytes, count: len))
    }
    return 0
}

/// `ruv_signal_filter`: keeps values the C predicate accepts.
@c @implementation
public func ruv_signal_filter(
    _ source: OpaquePointer?, _ predicate: ruv_filter_cb?, _ ctx: UnsafeMutableRawPointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self), let predicate else { return einval }
    let context = CContext(ctx: ctx)
    return output(handle.signal.filter { value in
        withBytes(value) { bytes, count in predicate(bytes, count, context.ctx) != 0 }
    }, out)
}

/// `ruv_signal_map`: replaces each value with what the C transform appends to its buffer.
@c @implementation
public func ruv_signal_map(
    _ source: OpaquePointer?, _ transform: ruv_map_cb?, _ ctx: UnsafeMutableRawPointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self), let transform else { return einval }
    let context = CContext(ctx: ctx)
    let upstream = handle.signal
    // compactMap + dematerialize rather than tryMap: both are inlinable, so they run
    // specialized for byte strings here (an unspecialized generic stage costs more per
    // value than everything else on the path together).
    let mapped = Signal<Bytes>.defer {
        let scratch = BufferHandle()
        return upstream.compactMap { (value: Bytes) -> Event<Bytes>? in
            let buffer = scratch.inUse ? BufferHandle() : scratch
            buffer.inUse = true
            defer {
                buffer.inUse = false
                buffer.bytes = []
            }
            let bufferPointer = OpaquePointer(Unmanaged.passUnretained(buffer).toOpaque())
            let result = withBytes(value) { bytes, count in transform(bytes, count, bufferPointer, context.ctx) }
            if result < 0 { return .error(CError(code: result)) }
            return result == 0 ? .next(buffer.bytes) : nil
        }.dematerialize()
    }
    return output(mapped, out)
}

/// `ruv_signal_take`: the first `count` values, then completion.
@c @implementation
public func ruv_signal_take(_ source: OpaquePointer?, _ n: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self) else { return einval }
    return output(handle.signal.take(count(n)), out)
}

/// `ruv_signal_skip`: drops the first `count` values.
@c @implementation
public func ruv_signal_skip(_ source: OpaquePointer?, _ n: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self) else { return einval }
    return output(handle.signal.skip(count(n)), out)
}

/// `ruv_signal_distinct_until_changed`: drops a value equal to the last one sent.
@c @implementation
public func ruv_signal_distinct_until_changed(_ source: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self) else { return einval }
    return output(handle.signal.distinctUntilChanged(), out)
}

/// The checks every time operator makes: handles present, a usable duration.
private func timeOperator(
    _ source: OpaquePointer?, _ runtime: OpaquePointer?, _ seconds: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?,
    _ make: (Signal<Bytes>, Scheduler) -> Signal<Bytes>
) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self), let rt = borrowed(runtime, as: RuntimeHandle.self),
        out != nil
    else { return einval }
    guard isDuration(seconds) else { return RUV_EARGUMENT }
    return output(make(handle.signal, rt.scheduler), out)
}

/// `ruv_signal_throttle`: RAC's throttle (a debounce that flushes on completion).
@c @implementation
public func ruv_signal_throttle(
    _ source: OpaquePointer?, _ runtime: OpaquePointer?, _ seconds: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    timeOperator(source, runtime, seconds, out) { $0.throttle(seconds, on: $1) }
}

/// `ruv_signal_debounce`: a debounce that drops a held value on completion.
@c @implementation
public func ruv_signal_debounce(
    _ source: OpaquePointer?, _ runtime: OpaquePointer?, _ seconds: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    timeOperator(source, runtime, seconds, out) { $0.debounce(seconds, on: $1) }
}

/// `ruv_signal_timeout`: fails with `RUV_ETIMEOUT` unless the source terminates in time.
@c @implementation
public func ruv_signal_timeout(
    _ source: OpaquePointer?, _ runtime: OpaquePointer?, _ seconds: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    timeOperator(source, runtime, seconds, out) { $0.timeout(seconds, on: $1) }
}

/// `ruv_signal_delay`: re-sends values and completion later on the loop.
@c @implementation
public func ruv_signal_delay(
    _ source: OpaquePointer?, _ runtime: OpaquePointer?, _ seconds: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    timeOperator(source, runtime, seconds, out) { $0.delay(seconds, on: $1) }
}

/// `ruv_signal_deliver_on`: re-sends every event on the runtime's loop thread.
@c @implementation
public func ruv_signal_deliver_on(
    _ source: OpaquePointer?, _ runtime: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self), let rt = borrowed(runtime, as: RuntimeHandle.self) else {
        return einval
    }
    return output(handle.signal.deliverOn(rt.scheduler), out)
}

/// `ruv_signal_merge`: both signals' values as they arrive.
@c @implementation
public func ruv_signal_merge(_ first: OpaquePointer?, _ second: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let a = borrowed(first, as: SignalHandle.self), let b = borrowed(second, as: SignalHandle.self) else {
        return einval
    }
    return output(a.signal.merge(b.signal), out)
}

/// `ruv_signal_merge_many`: merges `count` signals.
@c @implementation
public func ruv_signal_merge_many(
    _ signals: UnsafePointer<OpaquePointer?>?, _ n: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard n >= 0, n == 0 || signals != nil else { return einval }
    var list: [Signal<Bytes>] = []
    list.reserveCapacity(n)
    for i in 0..<n {
        guard let handle = borrowed(signals![i], as: SignalHandle.self) else { return einval }
        list.append(handle.signal)
    }
    return output(Signal.merge(list), out)
}

/// `ruv_signal_concat`: `first`, then `second`.
@c @implementation
public func ruv_signal_concat(_ first: OpaquePointer?, _ second: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let a = borrowed(first, as: SignalHandle.self), let b = borrowed(second, as: SignalHandle.self) else {
        return einval
    }
    return output(a.signal.concat(b.signal), out)
}

/// The signal a `ruv_signal_cb` returns for a value (taking over its reference), or
/// `empty` for NULL.
private func innerSignal(_ transform: ruv_signal_cb, _ context: CContext, _ value: Bytes) -> Signal<Bytes> {
    guard let inner = withBytes(value, { bytes, count in transform(bytes, count, context.ctx) }) else {
        return .empty()
    }
    return takenHandle(inner, as: SignalHandle.self).signal
}

/// `ruv_signal_flatten_map`: maps values to signals and merges them.
@c @implementation
public func ruv_signal_flatten_map(
    _ source: OpaquePointer?, _ transform: ruv_signal_cb?, _ ctx: UnsafeMutableRawPointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self), let transform else { return einval }
    let context = CContext(ctx: ctx)
    return output(handle.signal.flattenMap { innerSignal(transform, context, $0) }, out)
}

/// `ruv_signal_switch_to_latest`: maps values to signals and forwards the latest one.
@c @implementation
public func ruv_signal_switch_to_latest(
    _ source: OpaquePointer?, _ transform: ruv_signal_cb?, _ ctx: UnsafeMutableRawPointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self), let transform else { return einval }
    let context = CContext(ctx: ctx)
    return output(handle.signal.map { innerSignal(transform, context, $0) }.switchToLatest(), out)
}

/// `ruv_signal_retry`: resubscribes on error, `count` times (0: forever).
@c @implementation
public func ruv_signal_retry(_ source: OpaquePointer?, _ n: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self) else { return einval }
    return output(handle.signal.retry(count(n)), out)
}

/// `ruv_signal_catch_to`: continues with `replacement` on error.
@c @implementation
public func ruv_signal_catch_to(
    _ source: OpaquePointer?, _ replacement: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let a = borrowed(source, as: SignalHandle.self), let b = borrowed(replacement, as: SignalHandle.self) else {
        return einval
    }
    return output(a.signal.catchTo(b.signal), out)
}

/// `ruv_signal_take_until`: the source until `trigger` sends or completes.
@c @implementation
public func ruv_signal_take_until(
    _ source: OpaquePointer?, _ trigger: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let a = borrowed(source, as: SignalHandle.self), let b = borrowed(trigger, as: SignalHandle.self) else {
        return einval
    }
    return output(a.signal.takeUntil(b.signal), out)
}

/// `ruv_signal_start_with`: a copy of the bytes first, then the source.
@c @implementation
public func ruv_signal_start_with(
    _ source: OpaquePointer?, _ bytes: UnsafeRawPointer?, _ len: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self), let value = copyBytes(bytes, len) else { return einval }
    return output(handle.signal.startWith(value), out)
}

/// `ruv_signal_lines`: splits byte chunks into lines (0: the 1 MiB default limit).
@c @implementation
public func ruv_signal_lines(_ source: OpaquePointer?, _ maxLength: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(source, as: SignalHandle.self) else { return einval }
    let limit = maxLength == 0 ? LineBuffer.defaultMaxLength : count(maxLength)
    return output(handle.signal.lines(maxLength: limit).map { Bytes($0.utf8) }, out)
}
