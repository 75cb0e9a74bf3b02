import CLibUV
import Glibc
import Testing

@testable import ReactiveUV

/// `SocketAddress` makes an IP address's text only when asked (IPv4 written by hand, IPv6
/// through libuv) and compares addresses by their bytes: the text must be libuv's, and
/// equality and hashing must agree with comparing the texts.
struct SocketAddressTests {
    /// libuv's own text for an address (what `host` was before it became lazy).
    private func libuvText(_ address: SocketAddress) -> String {
        address.withSockaddr { sa in
            var name = [CChar](repeating: 0, count: 64)
            #expect(uv_ip_name(sa, &name, name.count) == 0)
            return name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }
    }

    @Test func ipv4TextIsLibuvsForEveryOctetWidth() throws {
        for host in ["0.0.0.0", "255.255.255.255", "127.0.0.1", "10.1.20.100", "9.99.199.200", "192.168.0.10"] {
            let address = try #require(SocketAddress(numericHost: host, port: 7070))
            #expect(address.family == .ipv4)
            #expect(address.host == host)
            #expect(address.description == "\(host):7070")
        }
        // A sweep of pseudo-random addresses, each checked against uv_ip_name.
        var state: UInt32 = 0x9E37_79B9
        for _ in 0..<2_000 {
            state = state &* 1_664_525 &+ 1_013_904_223
            let text = (0..<4).map { String((state >> UInt32(8 * $0)) & 0xFF) }.joined(separator: ".")
            let address = try #require(SocketAddress(numericHost: text, port: 1))
            #expect(address.host == libuvText(address), "\(text)")
            #expect(address.host == text)
        }
    }

    @Test func ipv6TextIsTheCanonicalForm() throws {
        let cases = [
            ("::1", "::1"), ("[::1]", "::1"), ("::", "::"),
            ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
            ("fe80::1:2:3:4", "fe80::1:2:3:4"), ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
        ]
        for (input, canonical) in cases {
            let address = try #require(SocketAddress(numericHost: input, port: 443))
            #expect(address.family == .ipv6)
            #expect(address.host == canonical)
            #expect(address.host == libuvText(address))
            #expect(address.description == "[\(canonical)]:443")
        }
    }

    @Test func equalityAndHashingFollowTheText() throws {
        let a = try #require(SocketAddress(numericHost: "127.0.0.1", port: 80))
        let b = try #require(SocketAddress(numericHost: "127.0.0.1", port: 80))
        let otherPort = try #require(SocketAddress(numericHost: "127.0.0.1", port: 81))
        let otherHost = try #require(SocketAddress(numericHost: "127.0.0.2", port: 80))
        let v6 = try #require(SocketAddress(numericHost: "2001:db8::1", port: 80))
        let v6Long = try #require(SocketAddress(numericHost: "2001:0db8:0:0:0:0:0:1", port: 80))
        let mapped = try #require(SocketAddress(numericHost: "::ffff:127.0.0.1", port: 80))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != otherPort)
        #expect(a != otherHost)
        #expect(v6 == v6Long, "two spellings of one IPv6 address")
        #expect(v6.hashValue == v6Long.hashValue)
        #expect(a != mapped, "an IPv4-mapped IPv6 address is another family")
        #expect(Set([a, b, otherPort, otherHost, v6, v6Long, mapped]).count == 5)
    }

    @Test func anAcceptedConnectionIsNamedByItsPeer() throws {
        // The text an accepted TCP connection shows (its description, errors' target) is
        // made from the kernel's address: the client's own port, on 127.0.0.1.
        let loop = try EventLoop()
        var accepted: TCPConnection?
        var port = 0
        let server = TCP.listen(host: "127.0.0.1", port: 0, on: loop, onListening: { port = $0.port })
            .subscribeNext { accepted = $0 }
        var client: TCPConnection?
        var connect: Disposable?
        if loop.run(until: { port != 0 }, timeout: 30) {
            connect = TCP.connect(host: "127.0.0.1", port: port, on: loop).subscribeNext { client = $0 }
            #expect(loop.run(until: { accepted != nil && client != nil }, timeout: 30))
            #expect(client?.localAddress != nil)
            if let local = client?.localAddress {
                #expect(accepted?.remoteAddress == local)
                #expect(accepted?.description == "127.0.0.1:\(local.port)")
                #expect(accepted?.localAddress?.description == "127.0.0.1:\(port)")
            }
        } else {
            Issue.record("the server did not start listening")
        }
        // Everything closed and the loop with it (the sanitizer lanes count what is left).
        connect?.dispose()
        server.dispose()
        accepted = nil
        client = nil
        #expect(waitForHandlesToClose(loop))
        #expect(throws: Never.self) { try loop.close() }
    }
}
