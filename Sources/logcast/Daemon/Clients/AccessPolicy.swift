import Glibc

/// Which sources each client identity may read, from `--access-file`.
///
/// ```
/// # IDENTITY: GLOB, GLOB, ...        ('#' starts a comment line)
/// cert:CN = alice: /var/log/app/*.log, syslog *
/// uid:1000: /var/log/app/web.log
/// token: *
/// anonymous: /var/log/public.log
/// ```
/// An identity is `token` (`AUTH` with `--auth-token-file`), `cert:<subject>` (a verified
/// TLS client certificate, subject as OpenSSL prints it on one line), `uid:<n>` (a Unix
/// socket peer) or `anonymous` (nothing asked for). A glob (`fnmatch(3)`, `*` matching `/`
/// too) is matched against a line's source: the FILE as given on the command line, the
/// file a forwarding logcast named, or `syslog <sender>`. An identity missing from the
/// file is refused at connect: fail closed.
struct AccessPolicy {
    /// The globs of each identity.
    let rules: [String: [String]]

    /// Parses the file at `path`.
    ///
    /// - Parameter path: the access file.
    /// - Returns: the policy.
    /// - Throws: ``AccessFileError`` naming the line that is wrong.
    static func load(_ path: String) throws -> AccessPolicy {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw AccessFileError("\(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw AccessFileError("\(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += buffer[0..<n]
            // A policy is a few lines; a huge file is a mistake, not something to hold.
            if bytes.count > 1 << 20 { throw AccessFileError("\(path): larger than 1 MiB") }
        }
        return try parse(String(decoding: bytes, as: UTF8.self), name: path)
    }

    /// Parses the text of an access file (`name` for errors).
    static func parse(_ text: String, name: String) throws -> AccessPolicy {
        var rules: [String: [String]] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmed(" \t\r")
            if line.isEmpty || line.hasPrefix("#") { continue }
            // The first ": " ends the identity (a subject holds "=" and ",", never ": ").
            let scalars = Array(line.unicodeScalars)
            guard let colon = scalars.indices.first(where: { $0 + 1 < scalars.count && scalars[$0] == ":" && scalars[$0 + 1] == " " })
            else {
                throw AccessFileError("\(name):\(number + 1): expected 'IDENTITY: GLOB, GLOB...'")
            }
            var head = String.UnicodeScalarView()
            head.append(contentsOf: scalars[..<colon])
            var tail = String.UnicodeScalarView()
            tail.append(contentsOf: scalars[(colon + 2)...])
            let identity = String(head).trimmed(" \t")
            let globs = String(tail).split(separator: ",").map { String($0).trimmed(" \t") }
                .filter { !$0.isEmpty }
            guard !identity.isEmpty, !globs.isEmpty else {
                throw AccessFileError("\(name):\(number + 1): expected 'IDENTITY: GLOB, GLOB...'")
            }
            guard identity == "token" || identity == "anonymous" || identity.hasPrefix("cert:") || identity.hasPrefix("uid:") else {
                throw AccessFileError("\(name):\(number + 1): unknown identity '\(identity)' (token, anonymous, cert:<subject>, uid:<n>)")
            }
            rules[identity, default: []] += globs
        }
        return AccessPolicy(rules: rules)
    }

    /// What `identity` may read, or `nil` when it is not in the file (refused).
    func access(for identity: String) -> SourceAccess? {
        rules[identity].map { SourceAccess(globs: $0) }
    }
}

/// Why `--access-file` cannot be used.
struct AccessFileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension StringProtocol {
    /// The text without leading and trailing characters of `set`.
    func trimmed(_ set: String) -> String {
        let scalars = Array(unicodeScalars)
        var start = 0
        var end = scalars.count
        while start < end && set.unicodeScalars.contains(scalars[start]) { start += 1 }
        while end > start && set.unicodeScalars.contains(scalars[end - 1]) { end -= 1 }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[start..<end])
        return String(result)
    }
}

/// The sources one client may read: its globs, and the answers already worked out (a
/// source is matched once, not once per line).
final class SourceAccess {
    // Main loop only.
    let globs: [String]
    private var known: [[UInt8]: Bool] = [:]
    /// The last source asked about and its answer: consecutive lines mostly share one.
    private var lastSource: [UInt8] = []
    private var lastAnswer = false

    init(globs: [String]) { self.globs = globs }

    /// Whether a line whose source is `source` (the bytes before `: `) may be read.
    func allows(_ source: UnsafeBufferPointer<UInt8>) -> Bool {
        if source.elementsEqual(lastSource) { return lastAnswer }
        let key = Array(source)
        let answer: Bool
        if let cached = known[key] {
            answer = cached
        } else {
            let text = String(decoding: key, as: UTF8.self)
            answer = !key.contains(0) && globs.contains { fnmatch($0, text, 0) == 0 }
            // Sources are files and syslog senders; bounded all the same.
            if known.count >= 4096 { known.removeAll() }
            known[key] = answer
        }
        lastSource = key
        lastAnswer = answer
        return answer
    }
}
