import ReactiveUV

// Fuzz target: logcast's client protocol, as the daemon reads it — bytes in arbitrary
// chunks through `clientLines` (the line splitter that survives overlong lines), each line
// parsed by `ClientCommand.parse`. Checks, besides "no crash, no sanitizer report": no line
// is longer than the limit allows (see below) or holds a break, and every refusal has a reason.

/// The line limit used here: small, so overlong lines are common.
let maxLength = 64

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClientProtocol(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = input.first else { return 0 }
    // The first byte picks the chunk size (1...32), so line breaks fall across reads.
    let step = Int(first % 32) + 1
    let body = input.dropFirst()
    let chunks = stride(from: body.startIndex, to: body.endIndex, by: step).map {
        Array(body[$0..<min($0 + step, body.endIndex)])
    }
    let source = Signal<[UInt8]>.create { subscriber in
        for chunk in chunks { subscriber.sendNext(chunk) }
        subscriber.sendCompleted()
        return nil
    }
    _ = source.clientLines(maxLength: maxLength).subscribe(next: { item in
        guard case .line(let text) = item else { return }
        // The limit is on the bytes received; each invalid byte becomes U+FFFD (3 bytes of
        // UTF-8) in the decoded line, so the text may be up to 3 times as long, never more.
        // (The fuzzer's first find: a 64-byte line of 0xE7 bytes is 192 bytes as text.)
        precondition(text.utf8.count <= 3 * maxLength, "a line over the limit got through: \(text.utf8.count) bytes")
        precondition(!text.utf8.contains(10), "a line with a line break in it")
        switch ClientCommand.parse(text) {
        case .failure(let error):
            precondition(!error.description.isEmpty)
        case .success(.grep(let pattern)):
            precondition(pattern.utf8.count < maxLength)
        case .success:
            break
        }
    })
    return 0
}
