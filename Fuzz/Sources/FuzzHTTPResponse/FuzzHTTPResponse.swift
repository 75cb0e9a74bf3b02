@_spi(Fuzzing) import ReactiveUVHTTP

// Fuzz target: ReactiveUVHTTP's response parser as the client uses it (http_parser in
// response mode, framing by length, chunks or close, limits). The client reads answers
// from servers nobody here controls (logcast's alert webhooks among them): every input
// must end in responses, an upgrade or a clear error; a trap, a hang or memory past the
// limits is a find.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = fuzzHTTPResponses(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
