#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Nanoseconds from the monotonic clock (`CLOCK_MONOTONIC`): never jumps with the wall clock.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The number of processors online, as the kernel reports it.
func onlineCoreCount() -> Int {
    Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
}
