import ReactiveUVHTTP
import ReactiveUVTLS

// Why this conformance lives here and not beside `StreamConnection`'s in ReactiveUVHTTP: a
// module that names `TLSConnection` links ReactiveUVTLS and so OpenSSL, and a plain HTTP
// server that never speaks TLS paid for it at start-up (libssl's and libcrypto's
// relocations alone touched ~1.7 MiB of its idle RSS). Every TLS member already has the
// meaning `HTTPTransport` asks for (`shutdown` sends close_notify, then FIN).
extension TLSConnection: HTTPTransport {}
