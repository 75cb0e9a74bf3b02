import ReactiveUV

// Values pushed through subject → groupBy(8 keys) with a subscriber on each group: the
// per-value cost of routing by key (RAC's `-groupBy:`; a log daemon splitting a stream by
// host or level). Combine has no groupBy, so there is no OpenCombine column.

extension Row {
    static let groupBy = Row(
        name: "groupby",
        title: "subject→groupBy(8 keys)→a sink per group (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: GroupBy.reactiveUV,
        openCombine: nil,
        baseline: GroupBy.baseline
    )
}

enum GroupBy {
    static func reactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        var sum = 0
        var groups: [Disposable] = []
        let subscription = subject.groupBy { $0 & 7 }.subscribeNext { group in
            groups.append(group.subscribeNext { sum &+= $0 })
        }
        for i in 0..<n { subject.sendNext(i) }
        subscription.dispose()
        for group in groups { group.dispose() }
        return sum &+ groups.count
    }

    /// A dictionary lookup of the key's sink (made on first sight), then the sink.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        var sinks: [Int: (Int) -> Void] = [:]
        let route: (Int) -> Void = opaque { value in
            let key = value & 7
            if let sink = sinks[key] { return sink(value) }
            let sink: (Int) -> Void = opaque { sum &+= $0 }
            sinks[key] = sink
            sink(value)
        }
        for i in 0..<n { route(i) }
        return sum &+ sinks.count
    }
}
