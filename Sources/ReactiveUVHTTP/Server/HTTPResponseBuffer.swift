import Glibc

/// The memory a batch of responses is written into before it goes to the transport: the
/// heads written in place (``HTTPResponseHead/encode(status:headers:framing:keepAlive:date:into:)-(_,_,_,_,_,HTTPResponseBuffer)``)
/// and the bodies copied behind them.
///
/// One per server (``HTTPServerState/responseBuffer``), reused for every batch of every
/// connection on the server's loop thread: an array made, grown and freed per response
/// cost ~550 instructions of a request (callgrind, ruv-http-hello). Reusing it is sound
/// because a write copies what the kernel does not take at once before it returns
/// (`StreamConnection.writeOnLoop`), and nothing between writing a batch into it and
/// handing the batch to the transport calls out of the server. Not per connection: the
/// memory would then stay with every idle keep-alive connection.
struct HTTPResponseBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>?
    /// The bytes written so far.
    private(set) var count = 0
    private(set) var capacity = 0

    /// Past this size the memory is let go of after its batch (``trim()``): a large body
    /// written once does not keep its size allocated for the server's lifetime.
    static let keptCapacity = 64 * 1024

    /// Where the next byte goes; valid after ``reserve(_:)``.
    var end: UnsafeMutablePointer<UInt8> { base.unsafelyUnwrapped + count }

    /// The bytes written, for the transport.
    var bytesWritten: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// A copy of the bytes written.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Makes room for `more` bytes after those written.
    @inline(__always)
    mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(count + more) }
    }

    private mutating func grow(_ needed: Int) {
        let size = max(needed, 2 * capacity, 512)
        guard let grown = realloc(base, size) else { fatalError("HTTPResponseBuffer: out of memory (\(size) bytes)") }
        base = grown.assumingMemoryBound(to: UInt8.self)
        capacity = size
    }

    /// Counts `n` bytes written at ``end`` as written.
    @inline(__always)
    mutating func advance(_ n: Int) { count += n }

    /// Copies `bytes` after those written.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        UnsafeMutableRawPointer(end).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// Copies `bytes` after those written. `inout`: the caller passes a class's stored
    /// array in place (``HTTPRequest/responseBody``), which passed as a value was copied
    /// out first (a retain and a release).
    mutating func append(_ bytes: inout [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Forgets the bytes written, keeping the memory.
    mutating func removeAll() { count = 0 }

    /// Forgets the bytes written and lets go of the memory when it grew past ``keptCapacity``.
    mutating func trim() {
        count = 0
        if capacity > Self.keptCapacity { free() }
    }

    /// Lets go of the memory.
    mutating func free() {
        Glibc.free(base)
        base = nil
        count = 0
        capacity = 0
    }
}
