@_spi(Fuzzing) import ReactiveUVHTTP

// Fuzz target: ReactiveUVHTTP's request parser (our strict head scanner in front of
// http_parser, framing, chunked bodies, trailers, limits), fed as a socket would feed it.
// Every input must end in requests, an upgrade or a clear error: a trap, a hang or memory
// past the limits is a find.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = fuzzHTTPRequests(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
