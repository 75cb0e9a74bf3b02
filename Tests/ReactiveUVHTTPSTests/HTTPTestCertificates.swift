import Glibc

/// A private test CA and a server certificate it signed (for `localhost` and `127.0.0.1`),
/// made with the `openssl` command in a fresh temporary directory: what the TLS tests give
/// our servers and what their clients (curl `--cacert`, Python's `ssl`, ours) trust.
struct HTTPTestCertificates {
    let directory: String
    /// The CA's certificate: the only thing the clients trust.
    var ca: String { directory + "/ca.pem" }
    /// The server's certificate, signed by the CA.
    var server: String { directory + "/server.pem" }
    /// The server's private key.
    var serverKey: String { directory + "/server.key" }

    /// Makes the CA and the server certificate; `nil` when `openssl` fails.
    init?() {
        directory = wsTemporaryDirectory()
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        let status = wsRunShell("""
            set -e
            cd '\(directory)'
            openssl req -x509 \(ec) -keyout ca.key -out ca.pem -subj /CN=ReactiveUV-HTTP-Test-CA -days 2
            openssl req \(ec) -keyout server.key -out server.csr -subj /CN=localhost
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
            """ + " >/dev/null 2>&1")
        if status != 0 {
            wsRunShell("rm -rf '\(directory)'")
            return nil
        }
    }

    func remove() { wsRunShell("rm -rf '\(directory)'") }
}
