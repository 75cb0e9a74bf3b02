/// Prometheus's text exposition format 0.0.4, written: each metric family's `# HELP` and
/// `# TYPE` lines once, before its samples, and label values escaped as the format asks
/// (backslash, double quote and line feed), so a file path holding any of them cannot break
/// the scrape or forge a sample.
struct MetricsText {
    /// The `Content-Type` of the format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private(set) var text = ""
    private var declared: Set<String> = []

    /// Adds one sample, declaring its family first if it is new.
    ///
    /// - Parameters:
    ///   - name: the metric's name (a counter's ends in `_total`).
    ///   - type: `counter` or `gauge`.
    ///   - help: the family's `# HELP` text (one line).
    ///   - labels: label names and values, in order.
    ///   - value: the sample's value.
    mutating func add(_ name: String, _ type: String, _ help: String, labels: [(String, String)] = [], _ value: Double) {
        if declared.insert(name).inserted {
            text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(type)\n"
        }
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.format(value) + "\n"
    }

    /// A label value as the format writes it: `\` → `\\`, `"` → `\"`, line feed → `\n`.
    static func escapeLabel(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// HELP text escapes backslash and line feed (not quotes).
    static func escapeHelp(_ value: String) -> String {
        var out = ""
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// Integral values without a fraction (counters read as the integers they are).
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
