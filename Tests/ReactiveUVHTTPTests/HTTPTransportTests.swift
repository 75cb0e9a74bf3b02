import ReactiveUV
import ReactiveUVHTTP
import Testing

/// The transports HTTP runs over all conform to one protocol.
@Suite struct HTTPTransportTests {
    @Test func streamConnectionsAreTransports() {
        #expect((TCPConnection.self as Any.Type) is any HTTPTransport.Type)
        #expect((UnixSocketConnection.self as Any.Type) is any HTTPTransport.Type)
    }
}
