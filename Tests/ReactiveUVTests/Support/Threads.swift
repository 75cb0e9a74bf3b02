import Glibc

/// Runs `body(i)` on `count` new pthreads at once and waits for all of them.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let joins = (0..<count).map { i in startThread { body(i) } }
    for join in joins { join() }
}

/// Starts `body` on a new pthread and returns a function that joins it.
func startThread(_ body: @escaping @Sendable () -> Void) -> () -> Void {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body))
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<AnyObject>.fromOpaque(raw!).takeRetainedValue() as! Box
        box.body()
        return nil
    }, box.toOpaque())
    precondition(rc == 0, "pthread_create failed")
    return { pthread_join(thread, nil) }
}

/// A mutable box shared across threads in tests; the test's own protocol makes it safe.
final class SharedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
