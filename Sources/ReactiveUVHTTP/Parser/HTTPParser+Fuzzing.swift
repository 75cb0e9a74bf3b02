/// What feeding bytes through the request parser produced: the requests it parsed, in
/// order, and how the input ended.
package struct HTTPRequestParseReport: Sendable {
    /// One parsed request.
    package struct Request: Sendable, Equatable {
        package var method: String
        package var target: String
        package var version: HTTPVersion
        package var headers: HTTPHeaders
        package var body: [UInt8]
        package var trailers: HTTPHeaders
        package var keepAlive: Bool
    }

    /// The requests parsed completely, in order.
    package var requests: [Request] = []
    /// The error that stopped parsing, if one did (nothing after it was parsed).
    package var error: HTTPParseError?
    /// Whether parsing stopped at a request asking to switch protocols.
    package var upgraded = false

}

/// Feeds `bytes` through the server's request parser, in reads of `readSize` bytes, then
/// signals EOF, as a connection would: the entry point of the libFuzzer target, and of the
/// tests that run the seed corpus and mutated inputs.
///
/// Never traps, whatever the bytes: every input ends in complete requests, an upgrade, or an
/// ``HTTPParseError`` (a truncated message is one, at EOF). Memory stays within the limits.
///
/// - Parameters:
///   - bytes: the raw bytes a client might send.
///   - readSize: how many bytes each simulated read holds (at least 1).
///   - limits: head, request-line and body limits; small ones make limit paths reachable.
/// - Returns: the requests parsed and how parsing ended.
package func parseHTTPRequests(
    _ bytes: [UInt8], readSize: Int = 65536,
    maxHeadBytes: Int = 64 * 1024, maxStartLineBytes: Int = 8 * 1024, maxBodyBytes: Int = 1 << 20
) -> HTTPRequestParseReport {
    var report = HTTPRequestParseReport()
    let parser = HTTPParser(.request, limits: .init(maxHeadBytes: maxHeadBytes, maxStartLineBytes: maxStartLineBytes, maxBodyBytes: maxBodyBytes))
    var current: HTTPRequestParseReport.Request?
    parser.onHead = { head in
        current = .init(method: head.method, target: head.target, version: head.version, headers: head.headers, body: [], trailers: [:], keepAlive: head.keepAlive)
    }
    parser.onBody = { current?.body.append(contentsOf: $0) }
    parser.onEnd = { trailers in
        if var request = current {
            request.trailers = trailers
            report.requests.append(request)
        }
        current = nil
    }
    (report.error, report.upgraded) = feed(parser, bytes, readSize: readSize)
    return report
}

/// What feeding bytes through the client's response parser produced: each response's
/// status and body size, in order, and how the input ended.
package struct HTTPResponseParseReport: Sendable {
    /// The responses parsed completely, in order: status and body bytes.
    package var responses: [(status: Int, bodyBytes: Int)] = []
    /// The error that stopped parsing, if one did (nothing after it was parsed).
    package var error: HTTPParseError?
    /// Whether parsing stopped at a response switching protocols.
    package var upgraded = false
}

/// Feeds `bytes` through the client's response parser (what a server, or a webhook
/// receiver logcast posts to, might answer), in reads of `readSize` bytes, then signals
/// EOF (which ends a response read until close). Never traps, whatever the bytes: every
/// input ends in complete responses, an upgrade, or an ``HTTPParseError``; no body is
/// taken past `maxBodyBytes`.
///
/// - Parameters:
///   - bytes: the raw bytes a server might send.
///   - readSize: how many bytes each simulated read holds (at least 1).
///   - maxHeadBytes: the head limit.
///   - maxBodyBytes: the body limit.
/// - Returns: the responses parsed and how parsing ended.
package func parseHTTPResponses(
    _ bytes: [UInt8], readSize: Int = 65536, maxHeadBytes: Int = 64 * 1024, maxBodyBytes: Int = 1 << 20
) -> HTTPResponseParseReport {
    var report = HTTPResponseParseReport()
    let parser = HTTPParser(.response, limits: .init(maxHeadBytes: maxHeadBytes, maxStartLineBytes: maxHeadBytes, maxBodyBytes: maxBodyBytes))
    var status = 0
    var body = 0
    parser.onHead = { head in
        status = head.status
        body = 0
    }
    parser.onBody = { body += $0.count }
    parser.onEnd = { _ in report.responses.append((status, body)) }
    (report.error, report.upgraded) = feed(parser, bytes, readSize: readSize)
    return report
}

/// Feeds `bytes` to `parser` in reads of `readSize` bytes (resuming after each message a
/// read holds), then signals EOF, as a connection would: the one read loop of both parse
/// functions above.
///
/// - Returns: the error that stopped parsing, if one did, and whether it stopped at an upgrade.
private func feed(_ parser: HTTPParser, _ bytes: [UInt8], readSize: Int) -> (error: HTTPParseError?, upgraded: Bool) {
    let step = max(1, readSize)
    var start = 0
    return bytes.withUnsafeBytes { all -> (error: HTTPParseError?, upgraded: Bool) in
        while start < all.count {
            var read = UnsafeRawBufferPointer(rebasing: all[start..<min(all.count, start + step)])
            start += read.count
            // One read may hold several pipelined messages: resume after each one.
            while !read.isEmpty {
                let (consumed, outcome) = parser.parse(read)
                switch outcome {
                case .needMore: read = UnsafeRawBufferPointer(rebasing: read[read.count...])
                case .messageEnd: read = UnsafeRawBufferPointer(rebasing: read[consumed...])
                case .upgrade: return (nil, true)
                case .error(let e): return (e, false)
                }
            }
        }
        switch parser.finish() {
        case .error(let e): return (e, false)
        case .upgrade: return (nil, true)
        case .needMore, .messageEnd: return (nil, false)
        }
    }
}
