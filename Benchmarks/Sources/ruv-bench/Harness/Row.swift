/// One implementation of a row's workload: given the row's size `n`, does the work once and
/// returns a checksum (so results can be compared between implementations and so that the
/// optimizer cannot drop the work).
typealias Workload = @Sendable (_ n: Int) -> Int

/// One row of the results table: a workload written three times, once per column.
///
/// To add a row, write a file under `Rows/` with a `static let` (or a function) returning a
/// `Row`, and append it to ``Row/all``. Columns that make no sense for a row (an IO row has
/// no OpenCombine counterpart, say) are `nil` and print as "—".
struct Row: Sendable {
    /// The name used with `--rows` (lowercase, no spaces).
    let name: String
    /// What the table shows in its first column.
    let title: String
    /// What one measured event is ("value", "cycle", "delivered value", ...).
    let unit: String
    /// The default size `n` handed to each workload (scaled by `--scale`).
    let size: Int
    /// How many measured events one unit of `n` produces: ns per event = time / (n * this).
    let eventsPerUnit: Int
    /// The ReactiveUV implementation.
    let reactiveUV: Workload
    /// The OpenCombine implementation.
    let openCombine: Workload?
    /// Framework-free plain closures doing the same work.
    let baseline: Workload?
    /// For rows whose work happens in a server process (the echo rows): the CPU time, in
    /// nanoseconds, that the column's server has used so far, or nil when it has none. The
    /// runner reads it around every timed run, so the report can give the server's own CPU
    /// per event beside the wall-clock time (which the load generator's limits can hide).
    var serverCPU: (@Sendable (Column) -> Int64?)?

    init(
        name: String, title: String, unit: String, size: Int, eventsPerUnit: Int = 1,
        reactiveUV: @escaping Workload, openCombine: Workload?, baseline: Workload?
    ) {
        self.name = name
        self.title = title
        self.unit = unit
        self.size = size
        self.eventsPerUnit = eventsPerUnit
        self.reactiveUV = reactiveUV
        self.openCombine = openCombine
        self.baseline = baseline
    }
}

extension Row {
    /// The size `n` after `--scale` (at least 1).
    func size(scaledBy scale: Double) -> Int {
        max(1, Int((Double(size) * scale).rounded()))
    }

    /// The number of measured events for size `n`.
    func events(forSize n: Int) -> Int { n * eventsPerUnit }
}

extension Row {
    /// Every row, in table order. New rows (flatten, combineLatest, zip, throttle/debounce on
    /// a TestScheduler, IO) are appended here.
    static let all: [Row] = [
        .pipeline,
        .coldSubscribe,
        .fanOut,
        .fanOutTally,
        .switchToLatest,
        .flatten,
        .combineLatest,
        .zip,
        .throttle,
        .takeUntil,
        .propertyBind,
        .retry,
        .reduceEach,
        .publish,
        .groupBy,
        .timeout,
    ] + Row.callForms + [
        .echo1,
        .echo100,
        .echo1000,
        .scheduleLoop,
        .scheduleLoopClosure,
        .scheduleLoopTimer,
        .scheduleThread,
    ]
}
