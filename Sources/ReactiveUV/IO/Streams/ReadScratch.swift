import Glibc

// Why a per-thread object: libuv calls `alloc_cb`, `read(2)` and `read_cb` one after the
// other for a stream, and `didRead` copies the bytes out of the buffer before it sends them,
// so one read buffer per loop thread serves every stream on it (one per connection kept a
// 64 KiB block resident for every idle connection).
//
// Why a spare chunk: each read is sent as a `[UInt8]` of its own, and allocating that
// array and freeing it after the subscriber returned was the largest single cost of an
// echoed message (~330 of ruv-echo's instructions per message under callgrind: malloc,
// the array header, the release into `_ContiguousArrayStorage`'s deinit and free). Most
// subscribers do not keep the chunk (a `send` writes it and forgets it, HTTP parses it), so
// the array a read was sent in is kept as the thread's spare and the next read's bytes go
// into it. Its copy-on-write does the rest: a subscriber that kept the chunk keeps its bytes
// (the refill sees a shared buffer and gets a new one, as before), and the kept array is
// never written again. The price: until the next read on the thread, the scratch shares
// the last chunk with its subscriber, so a subscriber that appends to the chunk it was sent
// (rather than to an array of its own) copies it first, as it would any shared array.

/// The loop thread's read memory: the buffer libuv reads into, and the spare array the
/// next read's chunk is built in. Thread-confined (one per thread, reached through a
/// pthread key), so its fields skip the dynamic exclusivity check.
final class ReadScratch {
    /// The buffer every `alloc_cb` on this thread hands libuv (``UVStream/readBufferSize``).
    let buffer: UnsafeMutableRawPointer
    /// The array the last chunk was sent in, kept to be refilled by the next read.
    @exclusivity(unchecked) var spare: [UInt8] = []

    private init() {
        buffer = UnsafeMutableRawPointer.allocate(byteCount: UVStream.readBufferSize, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// The calling thread's scratch, made on first use and freed when the thread ends.
    static var current: ReadScratch {
        @inline(__always) get {
            if let p = pthread_getspecific(key) { return Unmanaged<ReadScratch>.fromOpaque(p).takeUnretainedValue() }
            return makeCurrent()
        }
    }

    @inline(never)
    private static func makeCurrent() -> ReadScratch {
        let scratch = ReadScratch()
        pthread_setspecific(key, Unmanaged.passRetained(scratch).toOpaque())
        return scratch
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { p in
            if let p { Unmanaged<ReadScratch>.fromOpaque(p).release() }
        }
        return key
    }()

    /// A chunk holding the `count` bytes at `bytes`: the spare refilled when its capacity
    /// fits, otherwise a new array. The spare is taken (a nested read, from a loop run
    /// inside a subscriber, finds none and allocates).
    ///
    /// A reused array's capacity is at most twice its count (or 256 bytes), so a subscriber
    /// that keeps chunks never holds much more memory than their bytes: a 64 KiB spare is
    /// not refilled with a 64-byte read.
    @inline(__always)
    func chunk(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> [UInt8] {
        var chunk: [UInt8] = []
        swap(&chunk, &spare)
        // Uniquely held (the common case): no allocation. Shared with a subscriber that
        // kept it: copy-on-write makes a new buffer, and theirs stays as it was.
        if chunk.count == count {
            // A read as long as the last (repeated messages, full 64 KiB reads): the bytes
            // are overwritten in place, the cheapest refill by far (resizing an array goes
            // through `replaceSubrange` and `append`'s generic paths, ~180 instructions).
            chunk.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: bytes, count: count) }
            return chunk
        }
        let capacity = chunk.capacity
        if count <= capacity && capacity <= max(2 * count, 256) {
            chunk.removeAll(keepingCapacity: true)
            chunk.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
            return chunk
        }
        return [UInt8](UnsafeBufferPointer(start: bytes, count: count))
    }

    /// Keeps `chunk` (sent, its subscriber returned) to be refilled by the next read.
    @inline(__always)
    func recycle(_ chunk: consuming [UInt8]) {
        spare = chunk
    }
}
