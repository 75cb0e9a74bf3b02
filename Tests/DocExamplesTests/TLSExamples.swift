import ReactiveUV
import ReactiveUVTLS

// ReactiveUVTLS.md's example, compiled (so a renamed API breaks the build, not the reader).
// Running it needs a certificate; ReactiveUVTLSTests make theirs with the openssl command and
// run the same calls on loopback.

/// ReactiveUVTLS.md: a TLS echo server, and a client that verifies it against a CA file.
func tlsExample(certificate: String, key: String, ca: String, print: @escaping (String) -> Void) -> [Disposable] {
    let server = TLS.listen(port: 4433, certificate: certificate, key: key,
                            onHandshakeError: { print("refused: \($0)") })
        .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }
        .subscribe()

    let client = TLS.connect(host: "127.0.0.1", port: 4433, serverName: "localhost",
                             trust: .certificateAuthorities(path: ca))
        .flattenMap { c in c.write("hello\n").then { c.lines.take(1) } }
        .subscribeNext { print($0) }
    return [server, client]
}
