import CLibUV
import CReactiveUVEmbed
import ReactiveUV

// A descriptor another C library owns, watched for readiness (uv_poll_t): the way such a
// library's socket joins the runtime's loop from C.

/// `ruv_descriptor_poll`: the ready events of `fd`, as decimal ASCII digits of the
/// RUV_POLL_* mask, each time the loop sees the descriptor ready.
@c @implementation
public func ruv_descriptor_poll(_ runtime: OpaquePointer?, _ fd: Int32, _ events: Int32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self), out != nil else { return einval }
    let known = PollEvents([.readable, .writable, .disconnect, .prioritized]).rawValue
    guard fd >= 0, events != 0, events & ~known == 0 else { return RUV_EARGUMENT }
    return output(Descriptor.readiness(fd, events: PollEvents(rawValue: events), on: rt.loop).map { Bytes(String($0.rawValue).utf8) }, out)
}
