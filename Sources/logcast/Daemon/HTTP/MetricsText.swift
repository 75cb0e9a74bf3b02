/// Prometheus's text exposition format 0.0.4, written: each metric family's `# HELP` and
/// `# TYPE` lines once, before its samples, and label values escaped as the format asks
/// (backslash, double quote and line feed), so a file path holding any of them cannot break
/// the scrape or forge a sample. A family's samples are written as one group (the format
/// asks for it: Prometheus's parsers take a family seen again as another, untyped one),
/// whatever order they were added in.
struct MetricsText {
    /// The `Content-Type` of the format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The families in the order they were first added, each its header and sample lines.
    private var families: [(name: String, lines: String)] = []
    private var index: [String: Int] = [:]

    /// The exposition.
    var text: String { families.map { $0.lines }.joined() }

    /// Adds one sample, declaring its family first if it is new.
    ///
    /// - Parameters:
    ///   - name: the metric's name (a counter's ends in `_total`).
    ///   - type: `counter` or `gauge`.
    ///   - help: the family's `# HELP` text (one line).
    ///   - labels: label names and values, in order.
    ///   - value: the sample's value.
    mutating func add(_ name: String, _ type: String, _ help: String, labels: [(String, String)] = [], _ value: Double) {
        let at: Int
        if let known = index[name] {
            at = known
        } else {
            at = families.count
            index[name] = at
            families.append((name, "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(type)\n"))
        }
        var line = name
        if !labels.isEmpty {
            line += "{" + labels.map { "\($0.0)=\"\(Self.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
        }
        families[at].lines += line + " " + Self.format(value) + "\n"
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
