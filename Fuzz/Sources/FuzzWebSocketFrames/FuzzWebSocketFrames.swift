@_spi(Fuzzing) import ReactiveUVHTTP

// Fuzz target: the WebSocket frame reader in both roles, with and without
// permessage-deflate (the first byte chooses; see webSocketFuzzFrames). Every input must end
// in delivered messages or an RFC 6455 close code: a trap, a hang or memory past the
// message limit (a zip bomb) is a find.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocketFrameReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let result = fuzzWebSocketFrames(UnsafeRawBufferPointer(start: data, count: size))
    // A reader that stopped did so with a code RFC 6455 lets an endpoint send.
    precondition(result.closeCode == 0 || [1002, 1007, 1009].contains(result.closeCode), "unexpected close code \(result.closeCode)")
    return 0
}
