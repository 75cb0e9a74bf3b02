/// The doors the libFuzzer targets in `Fuzz/` (a package of their own, so `package` access
/// does not reach them) go through: System Programming Interface, not API. A target imports
/// them with `@_spi(Fuzzing) import ReactiveUVHTTP`; nothing else should.

/// Feeds a fuzzer's input through the server's request parser, all of it as what a client
/// sent (so the seed corpus of raw requests is used as it is). The way the bytes are cut
/// into reads comes from the last byte (1 to 253 bytes a read), and one input in three is
/// parsed under small limits, so the 413, 414 and 431 paths are reached quickly.
///
/// - Parameter data: the fuzzer's input.
/// - Returns: how many requests were parsed completely (whatever the bytes, it returns).
@_spi(Fuzzing) public func fuzzHTTPRequests(_ data: UnsafeRawBufferPointer) -> Int {
    guard let last = data.last else { return 0 }
    let small = data.count % 3 == 0
    let maxBody = small ? 1024 : 1 << 20
    let report = parseHTTPRequests(
        Array(data), readSize: Int(last & 0x3F) * 4 + 1,
        maxHeadBytes: small ? 512 : 64 * 1024, maxStartLineBytes: small ? 128 : 8 * 1024,
        maxBodyBytes: maxBody)
    // Every parsed body respects the limit it was parsed under.
    precondition(report.requests.allSatisfy { $0.body.count <= maxBody }, "a body past its limit was accepted")
    return report.requests.count
}

/// Feeds a fuzzer's input to the WebSocket frame reader (see `webSocketFuzzFrames`: the
/// first byte chooses the role, permessage-deflate and the read size).
///
/// - Parameter data: the fuzzer's input.
/// - Returns: the messages and control frames delivered, and the close code that stopped
///   the reader (0 when none did).
@_spi(Fuzzing) public func fuzzWebSocketFrames(_ data: UnsafeRawBufferPointer) -> (delivered: Int, closeCode: UInt16) {
    webSocketFuzzFrames(data)
}

/// Feeds a fuzzer's input through the client's response parser, all of it as what a server
/// sent (the seed corpus holds raw responses). The read size comes from the last byte, and
/// one input in three is parsed under small limits, so the limit paths are reached quickly.
///
/// - Parameter data: the fuzzer's input.
/// - Returns: how many responses were parsed completely (whatever the bytes, it returns).
@_spi(Fuzzing) public func fuzzHTTPResponses(_ data: UnsafeRawBufferPointer) -> Int {
    guard let last = data.last else { return 0 }
    let small = data.count % 3 == 0
    let maxBody = small ? 1024 : 1 << 20
    let report = parseHTTPResponses(Array(data), readSize: Int(last & 0x3F) * 4 + 1,
                                    maxHeadBytes: small ? 512 : 64 * 1024, maxBodyBytes: maxBody)
    // Every parsed body respects the limit it was parsed under.
    precondition(report.responses.allSatisfy { $0.bodyBytes <= maxBody }, "a body past its limit was accepted")
    return report.responses.count
}
