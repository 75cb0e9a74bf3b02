import CReactiveUVEmbed
import ReactiveUV

/// `ruv_subject_create`: a subject, or a replay subject for a capacity above 0.
@c @implementation
public func ruv_subject_create(_ replayCapacity: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return einval }
    let subject: Subject<Bytes> =
        replayCapacity == 0 ? Subject<Bytes>()
        : ReplaySubject<Bytes>(capacity: count(replayCapacity))
    out.pointee = retainedHandle(SubjectHandle(subject))
    return 0
}

/// `ruv_subject_signal`: the subject as a signal.
@c @implementation
public func ruv_subject_signal(_ subject: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(subject, as: SubjectHandle.self) else { return einval }
    return output(handle.subject, out)
}

/// `ruv_subject_send_next`: sends a copy of the bytes to the current subscribers.
@c @implementation
public func ruv_subject_send_next(_ subject: OpaquePointer?, _ bytes: UnsafeRawPointer?, _ len: Int) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let value = copyBytes(bytes, len) else { return einval }
    return withBorrowed(subject, as: SubjectHandle.self) { handle in
        if handle.hasTerminated { return RUV_ECLOSED }
        handle.subject.sendNext(value)
        return 0
    } ?? einval
}

/// `ruv_subject_send_error`: fails the subject with a negative code and a message.
@c @implementation
public func ruv_subject_send_error(_ subject: OpaquePointer?, _ code: Int32, _ message: UnsafePointer<CChar>?) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let handle = borrowed(subject, as: SubjectHandle.self), code < 0 else { return einval }
    guard handle.claimTermination() else { return RUV_ECLOSED }
    handle.subject.sendError(CError(code: code, message: string(message)))
    return 0
}

/// `ruv_subject_send_completed`: completes the subject.
@c @implementation
public func ruv_subject_send_completed(_ subject: OpaquePointer?) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let handle = borrowed(subject, as: SubjectHandle.self) else { return einval }
    guard handle.claimTermination() else { return RUV_ECLOSED }
    handle.subject.sendCompleted()
    return 0
}

/// `ruv_subject_release`: gives back C's reference; the subject is not terminated.
@c @implementation
public func ruv_subject_release(_ subject: OpaquePointer?) {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    releaseHandle(subject, as: SubjectHandle.self)
}
