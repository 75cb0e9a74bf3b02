#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Formats `value` with a fixed number of decimals (no Foundation).
func format(_ value: Double, decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (value * scale).rounded()
    guard scaled.isFinite, abs(scaled) < 1e18 else { return "\(value)" }
    let whole = Int(scaled)
    let integer = whole / Int(scale)
    let fraction = abs(whole % Int(scale))
    guard decimals > 0 else { return "\(integer)" }
    var digits = String(fraction)
    while digits.count < decimals { digits = "0" + digits }
    return (whole < 0 && integer == 0 ? "-" : "") + "\(integer).\(digits)"
}

/// Writes a line to standard error (progress and warnings; the table goes to standard output).
func printError(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}

/// The first "model name" line of /proc/cpuinfo, if there is one.
func cpuModelName() -> String? {
    guard let file = fopen("/proc/cpuinfo", "r") else { return nil }
    defer { fclose(file) }
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, file) > 0 {
        guard let line else { break }
        let text = String(cString: line)
        if text.hasPrefix("model name"), let colon = text.firstIndex(of: ":") {
            return String(text[text.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" })
                .prefix(while: { $0 != "\n" }))
        }
    }
    return nil
}

/// Prints the results as a Markdown table.
func printTable(_ results: [RowResult]) {
    let headers = ["row", "unit"] + Column.allCases.map { "\($0.header) (ns)" }
        + ["ReactiveUV/OpenCombine", "ReactiveUV/baseline"]
    var lines: [[String]] = []
    for r in results {
        var cells = ["\(r.row.title)", r.row.unit]
        for column in Column.allCases {
            var cell = r.medians[column].map { format($0, decimals: 1) } ?? "—"
            if r.checksumMismatch.contains(column) { cell += " (checksum differs!)" }
            cells.append(cell)
        }
        cells.append(r.ratio(.reactiveUV, .openCombine).map { format($0, decimals: 2) + "x" } ?? "—")
        cells.append(r.ratio(.reactiveUV, .baseline).map { format($0, decimals: 2) + "x" } ?? "—")
        lines.append(cells)
    }
    print("| " + headers.joined(separator: " | ") + " |")
    print("|" + headers.enumerated().map { i, _ in i < 2 ? " --- |" : " ---: |" }.joined())
    for cells in lines {
        print("| " + cells.joined(separator: " | ") + " |")
    }
}

/// Prints events per second for the rows without an OpenCombine column (the IO and
/// scheduling rows, whose baseline is raw libuv), and ReactiveUV's share of the baseline's
/// rate (higher is better; 1.00x = as fast as raw libuv).
func printRates(_ results: [RowResult]) {
    // Only the IO and scheduling rows: operator rows without an OpenCombine counterpart
    // (combineLatest, throttle) have closures, not libuv, as their baseline.
    let rows = results.filter {
        $0.row.openCombine == nil && $0.medians[.reactiveUV] != nil
            && ($0.row.name.hasPrefix("echo") || $0.row.name.hasPrefix("schedule"))
    }
    guard !rows.isEmpty else { return }
    print("")
    print("| row | unit | ReactiveUV (per s) | raw libuv (per s) | ReactiveUV rate / raw libuv rate |")
    print("| --- | --- | ---: | ---: | ---: |")
    for r in rows {
        let ours = r.medians[.reactiveUV].map { 1e9 / $0 }
        let theirs = r.medians[.baseline].map { 1e9 / $0 }
        let share = (ours != nil && theirs != nil) ? format(ours! / theirs!, decimals: 2) + "x" : "—"
        print("| \(r.row.title) | \(r.row.unit) | \(ours.map { format($0, decimals: 0) } ?? "—") | \(theirs.map { format($0, decimals: 0) } ?? "—") | \(share) |")
    }
}

/// Prints, for the rows that measure a server process (the echo rows), each server's own
/// CPU time per event (user and kernel, from `/proc`; the median of the timed runs) and the
/// C server's CPU per event as a share of ours: issue 29's "efficiency" (1.00x = as little
/// CPU per message as the plain libuv C server; higher is better). Wall-clock rates can
/// hide a difference when the load generator's own core is the limit; CPU time does not.
func printServerCPU(_ results: [RowResult]) {
    let rows = results.filter { $0.serverCPUSamples[.reactiveUV] != nil && $0.serverCPUSamples[.baseline] != nil }
    guard !rows.isEmpty else { return }
    print("")
    print("Servers' own CPU time per event (median of the timed runs; user + kernel):")
    print("")
    print("| row | unit | ReactiveUV (ns CPU) | raw libuv (ns CPU) | efficiency: raw libuv CPU / ReactiveUV CPU | runs (ReactiveUV / raw libuv) |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for r in rows {
        let oursSamples = r.serverCPUSamples[.reactiveUV]!, theirsSamples = r.serverCPUSamples[.baseline]!
        let ours = median(oursSamples), theirs = median(theirsSamples)
        let efficiency = ours > 0 ? format(theirs / ours, decimals: 2) + "x" : "—"
        let runs = zip(oursSamples, theirsSamples).map { "\(format($0, decimals: 0))/\(format($1, decimals: 0))" }
            .joined(separator: ", ")
        print("| \(r.row.title) | \(r.row.unit) | \(format(ours, decimals: 0)) | \(format(theirs, decimals: 0)) | \(efficiency) | \(runs) |")
    }
}
