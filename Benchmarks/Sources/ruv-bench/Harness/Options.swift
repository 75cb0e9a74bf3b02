/// Command-line options, parsed from `CommandLine.arguments` by hand (no dependency).
struct Options {
    /// Row names to run; empty means all.
    var rows: [String] = []
    /// Columns to run; empty means all (`--columns reactiveuv` to profile one implementation).
    var columns: [Column] = []
    /// Timed runs per implementation; the median is reported.
    var runs = 5
    /// Multiplies every row's size (for a quick smoke run or a profile: `--scale 0.1`).
    var scale = 1.0
    /// Prints every run's time, not only the median.
    var verbose = false
    /// The `ruv-echo` binary for the echo rows; `nil`: `<repo>/.build/release/ruv-echo`,
    /// built there if missing.
    var ruvEcho: String?
    /// Pins the echo rows' servers to the first CPU and this process (the load generator)
    /// to the last, as issue 29's CPU comparison asks (`--pin`).
    var pin = false

    static let usage = """
        usage: ruv-bench [--rows name,...] [--runs N] [--scale X] [--columns c,...] [--verbose] [--ruv-echo PATH] [--pin] [--list]

          --rows name,...  run only these rows (see --list); default: all
          --runs N         timed runs per implementation, after one warm-up run; default 5
          --scale X        multiply every row's size by X (e.g. 0.1 for a quick run); default 1
          --columns c,...  run only these columns: reactiveuv, opencombine, baseline (for a
                           profiler); default: all
          --verbose        print every run's time on standard error
          --ruv-echo PATH  the ruv-echo binary for the echo rows (a release build); default:
                           .build/release/ruv-echo of the main package, built if missing
          --pin            pin the echo servers to the first CPU and the load generator
                           (this process) to the last
          --list           list the rows and exit
        """

    enum ParseResult {
        case run(Options)
        case exit(message: String, status: Int32)
    }

    static func parse(_ arguments: [String]) -> ParseResult {
        var options = Options()
        var i = 0
        func value(_ flag: String) -> String? {
            i += 1
            return i < arguments.count ? arguments[i] : nil
        }
        while i < arguments.count {
            let argument = arguments[i]
            switch argument {
            case "--rows":
                guard let v = value(argument) else { return .exit(message: "--rows needs a value\n" + usage, status: 2) }
                options.rows = v.split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
            case "--runs":
                guard let v = value(argument), let n = Int(v), n >= 1 else {
                    return .exit(message: "--runs needs a positive integer\n" + usage, status: 2)
                }
                options.runs = n
            case "--scale":
                guard let v = value(argument), let x = Double(v), x > 0 else {
                    return .exit(message: "--scale needs a positive number\n" + usage, status: 2)
                }
                options.scale = x
            case "--columns":
                guard let v = value(argument) else { return .exit(message: "--columns needs a value\n" + usage, status: 2) }
                for name in v.split(separator: ",") {
                    guard let column = Column.allCases.first(where: { $0.flagName == name }) else {
                        return .exit(message: "unknown column: \(name) (known: reactiveuv, opencombine, baseline)", status: 2)
                    }
                    options.columns.append(column)
                }
            case "--ruv-echo":
                guard let v = value(argument) else { return .exit(message: "--ruv-echo needs a path\n" + usage, status: 2) }
                options.ruvEcho = v
            case "--pin":
                options.pin = true
            case "--verbose", "-v":
                options.verbose = true
            case "--list":
                let lines = Row.all.map { "\($0.name)\t\($0.title)" }
                return .exit(message: lines.joined(separator: "\n"), status: 0)
            case "--help", "-h":
                return .exit(message: usage, status: 0)
            default:
                return .exit(message: "unknown argument: \(argument)\n" + usage, status: 2)
            }
            i += 1
        }
        let known = Set(Row.all.map(\.name))
        if let unknown = options.rows.first(where: { !known.contains($0) }) {
            return .exit(message: "unknown row: \(unknown) (known: \(Row.all.map(\.name).joined(separator: ", ")))", status: 2)
        }
        return .run(options)
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}
