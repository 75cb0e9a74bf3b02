// Syslog messages as rsyslog accepts them: RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID
// MSGID SD MSG`) and the older BSD format of RFC 3164 (`<PRI>Mmm dd hh:mm:ss HOST TAG: MSG`),
// parsed into the one line logcast serves for each.

/// One parsed syslog message.
struct SyslogMessage: Equatable {
    /// RFC 5424 §6.2.1 facility (0–23) and severity (0–7), from PRI.
    var facility: Int
    var severity: Int
    /// `nil` where the message said NILVALUE (`-`) or had no such field.
    var timestamp: String?
    var hostname: String?
    var appName: String?
    var procID: String?
    var msgID: String?
    /// The message text (structured data is not kept).
    var text: String
    /// Which format it came in.
    var isRFC5424: Bool

    static let facilityNames = [
        "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp",
        "ntp", "security", "console", "solaris-cron", "local0", "local1", "local2", "local3", "local4", "local5",
        "local6", "local7",
    ]
    static let severityNames = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]

    /// The line logcast serves: `user.notice myhost tester[42]: hello`.
    var line: String {
        var text = "\(Self.facilityNames[facility]).\(Self.severityNames[severity])"
        if let hostname { text += " " + hostname }
        if let appName {
            text += " " + appName
            if let procID { text += "[\(procID)]" }
            text += ":"
        }
        return text + " " + self.text
    }

    /// Why a message was refused.
    enum Malformed: Error, Equatable, CustomStringConvertible {
        case noPriority
        case priorityOutOfRange(Int)
        case truncatedHeader(String)
        case badStructuredData

        var description: String {
            switch self {
            case .noPriority: return "no <PRI> at the start"
            case .priorityOutOfRange(let n): return "PRI \(n) is out of range 0...191"
            case .truncatedHeader(let field): return "the RFC 5424 header ends before \(field)"
            case .badStructuredData: return "malformed RFC 5424 structured data"
            }
        }
    }

    /// Parses one message (without its framing; a trailing line break or NUL is ignored).
    ///
    /// - Throws: ``Malformed`` when the bytes are not syslog.
    static func parse(_ bytes: ArraySlice<UInt8>) throws -> SyslogMessage {
        var rest = bytes
        while let last = rest.last, last == 10 || last == 13 || last == 0 { rest.removeLast() }
        // <PRI>: one to three digits.
        guard rest.first == UInt8(ascii: "<") else { throw Malformed.noPriority }
        rest.removeFirst()
        var priority = 0
        var digits = 0
        while let byte = rest.first, (48...57).contains(byte), digits < 3 {
            priority = priority * 10 + Int(byte - 48)
            digits += 1
            rest.removeFirst()
        }
        guard digits > 0, rest.first == UInt8(ascii: ">") else { throw Malformed.noPriority }
        rest.removeFirst()
        guard priority <= 191 else { throw Malformed.priorityOutOfRange(priority) }
        let facility = priority / 8, severity = priority % 8

        // RFC 5424: VERSION is a digit 1-9 (up to 3 digits) followed by a space.
        if let first = rest.first, (49...57).contains(first), let space = rest.firstIndex(of: 32),
            rest.distance(from: rest.startIndex, to: space) <= 3,
            rest[rest.startIndex..<space].allSatisfy({ (48...57).contains($0) })
        {
            rest = rest[rest.index(after: space)...]
            return try parse5424(rest, facility: facility, severity: severity)
        }
        return parse3164(rest, facility: facility, severity: severity)
    }

    /// TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA [MSG].
    private static func parse5424(_ bytes: ArraySlice<UInt8>, facility: Int, severity: Int) throws -> SyslogMessage {
        var rest = bytes
        func field(_ name: String) throws -> String? {
            guard !rest.isEmpty else { throw Malformed.truncatedHeader(name) }
            let end = rest.firstIndex(of: 32) ?? rest.endIndex
            let value = String(decoding: rest[rest.startIndex..<end], as: UTF8.self)
            guard !value.isEmpty else { throw Malformed.truncatedHeader(name) }
            rest = end < rest.endIndex ? rest[rest.index(after: end)...] : rest[end...]
            return value == "-" ? nil : value
        }
        let timestamp = try field("TIMESTAMP")
        let hostname = try field("HOSTNAME")
        let appName = try field("APP-NAME")
        let procID = try field("PROCID")
        let msgID = try field("MSGID")
        // STRUCTURED-DATA: "-" or [id param="value"...]..., values may escape \] \" \\.
        guard let first = rest.first else { throw Malformed.truncatedHeader("STRUCTURED-DATA") }
        if first == UInt8(ascii: "-") {
            rest.removeFirst()
        } else if first == UInt8(ascii: "[") {
            while rest.first == UInt8(ascii: "[") {
                var inQuotes = false
                var escaped = false
                var closed = false
                rest.removeFirst()
                while let byte = rest.first {
                    rest.removeFirst()
                    if escaped { escaped = false; continue }
                    if inQuotes && byte == UInt8(ascii: "\\") { escaped = true; continue }
                    if byte == UInt8(ascii: "\"") { inQuotes.toggle(); continue }
                    if !inQuotes && byte == UInt8(ascii: "]") { closed = true; break }
                }
                guard closed else { throw Malformed.badStructuredData }
            }
        } else {
            throw Malformed.badStructuredData
        }
        if rest.first == 32 { rest.removeFirst() } else if !rest.isEmpty { throw Malformed.badStructuredData }
        // MSG may start with a UTF-8 byte order mark.
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        return SyslogMessage(
            facility: facility, severity: severity, timestamp: timestamp, hostname: hostname, appName: appName,
            procID: procID, msgID: msgID, text: clean(rest), isRFC5424: true)
    }

    /// [TIMESTAMP HOSTNAME] TAG[PID]: MSG, leniently (as rsyslog: what does not fit is text).
    private static func parse3164(_ bytes: ArraySlice<UInt8>, facility: Int, severity: Int) -> SyslogMessage {
        var rest = bytes
        var timestamp: String?
        var hostname: String?
        // "Mmm dd hh:mm:ss " (day space-padded).
        if rest.count >= 16, let text = String(bytes: rest.prefix(15), encoding: .ascii), isBSDTimestamp(text),
            rest[rest.index(rest.startIndex, offsetBy: 15)] == 32
        {
            timestamp = text
            rest = rest.dropFirst(16)
            // A hostname follows a timestamp when the next token is not a tag (no ':' or '[').
            if let space = rest.firstIndex(of: 32) {
                let token = rest[rest.startIndex..<space]
                if !token.isEmpty && !token.contains(UInt8(ascii: ":")) && !token.contains(UInt8(ascii: "[")) {
                    hostname = String(decoding: token, as: UTF8.self)
                    rest = rest[rest.index(after: space)...]
                }
            }
        }
        var appName: String?
        var procID: String?
        // TAG: up to 32 characters of [A-Za-z0-9_./-], then optional [PID], then ':'.
        var index = rest.startIndex
        while index < rest.endIndex, rest.distance(from: rest.startIndex, to: index) < 48 {
            let byte = rest[index]
            let isTagByte = (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "-")
            if !isTagByte { break }
            index = rest.index(after: index)
        }
        if index > rest.startIndex, index < rest.endIndex {
            let tag = String(decoding: rest[rest.startIndex..<index], as: UTF8.self)
            var after = rest[index...]
            var pid: String?
            if after.first == UInt8(ascii: "["), let close = after.firstIndex(of: UInt8(ascii: "]")) {
                pid = String(decoding: after[after.index(after: after.startIndex)..<close], as: UTF8.self)
                after = after[after.index(after: close)...]
            }
            if after.first == UInt8(ascii: ":") {
                appName = tag
                procID = pid
                rest = after.dropFirst()
                if rest.first == 32 { rest.removeFirst() }
            }
        }
        return SyslogMessage(
            facility: facility, severity: severity, timestamp: timestamp, hostname: hostname, appName: appName,
            procID: procID, msgID: nil, text: clean(rest), isRFC5424: false)
    }

    static func isBSDTimestamp(_ text: String) -> Bool {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let chars = Array(text)
        guard chars.count == 15, months.contains(String(chars[0..<3])), chars[3] == " ", chars[6] == " ",
            chars[9] == ":", chars[12] == ":"
        else { return false }
        return [7, 8, 10, 11, 13, 14].allSatisfy { chars[$0].isNumber } && (chars[4] == " " || chars[4].isNumber)
            && chars[5].isNumber
    }

    /// The text as one line: invalid UTF-8 replaced, line breaks and other controls turned
    /// into spaces (logcast serves one line per message).
    static func clean(_ bytes: ArraySlice<UInt8>) -> String {
        if bytes.allSatisfy({ $0 >= 32 || $0 == 9 }) { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes.map { $0 < 32 && $0 != 9 ? 32 : $0 }, as: UTF8.self)
    }
}
