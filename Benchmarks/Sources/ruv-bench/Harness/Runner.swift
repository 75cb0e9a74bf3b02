/// The columns of the table, in order.
enum Column: CaseIterable {
    case reactiveUV, openCombine, baseline

    var header: String {
        switch self {
        case .reactiveUV: return "ReactiveUV"
        case .openCombine: return "OpenCombine"
        case .baseline: return "closure baseline"
        }
    }

    /// The name used with `--columns`.
    var flagName: String {
        switch self {
        case .reactiveUV: return "reactiveuv"
        case .openCombine: return "opencombine"
        case .baseline: return "baseline"
        }
    }

    func workload(of row: Row) -> Workload? {
        switch self {
        case .reactiveUV: return row.reactiveUV
        case .openCombine: return row.openCombine
        case .baseline: return row.baseline
        }
    }
}

/// What one row measured: ns per event for each column (the median of the runs), or `nil`
/// for a column the row does not have.
struct RowResult {
    let row: Row
    let n: Int
    var medians: [Column: Double] = [:]
    var samples: [Column: [Double]] = [:]
    /// Set when an implementation's checksum differs from ReactiveUV's (the workloads then
    /// do not do the same work and the comparison means nothing).
    var checksumMismatch: [Column] = []
    /// Heap allocations per event, when a malloc counter is preloaded (see Allocations.swift).
    var allocations: [Column: Double] = [:]
    /// The server's CPU time per event of each timed run, for rows with a `serverCPU` probe.
    var serverCPUSamples: [Column: [Double]] = [:]

    func ratio(_ a: Column, _ b: Column) -> Double? {
        guard let x = medians[a], let y = medians[b], y > 0 else { return nil }
        return x / y
    }
}

/// Runs the rows: per row, one warm-up run of each implementation (which also checks that
/// they agree on the checksum), then `runs` timed runs, interleaved between the
/// implementations (ReactiveUV, OpenCombine, baseline, ReactiveUV, ...) so that a slow
/// stretch of a shared machine hits every column alike.
struct Runner {
    let options: Options

    func run(_ row: Row) -> RowResult {
        let n = row.size(scaledBy: options.scale)
        var result = RowResult(row: row, n: n)
        let events = Double(row.events(forSize: n))
        let columns = Column.allCases.filter {
            $0.workload(of: row) != nil && (options.columns.isEmpty || options.columns.contains($0))
        }

        // Warm-up: caches, the allocator's free lists, lazy metadata and witness tables.
        var expected: Int?
        for column in columns {
            let checksum = column.workload(of: row)!(opaque(n))
            blackHole(checksum)
            if let e = expected, e != checksum {
                result.checksumMismatch.append(column)
                printError("warning: \(row.name): \(column.header) checksum \(checksum) != \(columns[0].header)'s \(e)")
            }
            if expected == nil { expected = checksum }
        }

        // With a malloc counter preloaded: one more untimed run per column, counted.
        if let counter = mallocCounter {
            for column in columns {
                let work = column.workload(of: row)!
                let before = counter()
                blackHole(work(opaque(n)))
                result.allocations[column] = Double(counter() - before) / events
            }
        }

        for run in 0..<options.runs {
            for column in columns {
                let work = column.workload(of: row)!
                let cpuBefore = row.serverCPU?(column)
                let start = monotonicNanoseconds()
                let checksum = work(opaque(n))
                let end = monotonicNanoseconds()
                if let before = cpuBefore, let after = row.serverCPU?(column) {
                    result.serverCPUSamples[column, default: []].append(Double(after - before) / events)
                }
                blackHole(checksum)
                let perEvent = Double(end - start) / events
                result.samples[column, default: []].append(perEvent)
                if options.verbose {
                    printError("  \(row.name) run \(run + 1) \(column.header): \(format(perEvent, decimals: 2)) ns/\(row.unit)")
                }
            }
        }
        for column in columns {
            result.medians[column] = median(result.samples[column]!)
        }
        return result
    }
}

/// The median (the mean of the two middle values for an even count).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
