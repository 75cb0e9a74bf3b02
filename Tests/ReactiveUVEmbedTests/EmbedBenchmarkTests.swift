import CSystemShims
import Foundation
import ReactiveUV
import XCTest

/// The C-callback overhead benchmark (not a test): the same pipeline subscribed from C
/// through libreactiveuv.so and subscribed in Swift. Skipped unless `RUV_EMBED_BENCH=1`;
/// run it in release:
///
///     RUV_EMBED_BENCH=1 swift test -c release --scratch-path .build-embed --filter EmbedBenchmark
final class EmbedBenchmarkTests: XCTestCase {
    let values = 1_000_000
    let runs = 7

    func testCallbackOverheadAgainstSwift() throws {
        guard ProcessInfo.processInfo.environment["RUV_EMBED_BENCH"] == "1" else {
            throw XCTSkip("benchmark: set RUV_EMBED_BENCH=1 (and build with -c release)")
        }
        try CToolchain.requireLibrary()
        let scratch = try CToolchain.temporaryDirectory("bench")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let program = try CToolchain.buildProgram(
            [CToolchain.packageRoot.appendingPathComponent("Benchmarks/embed-c/bench-callbacks.c").path],
            named: "bench-callbacks", in: scratch, extraFlags: ["-O2"])
        let c = try CToolchain.run(program, [String(values), String(runs)], timeout: 300)
        XCTAssertEqual(c.status, 0, c.stderr)

        // The same pipeline in Swift: subject -> filter -> map (a new value) -> subscriber.
        var subjectOnly: [Double] = []
        var pipeline: [Double] = []
        let sum = Checksum()
        var value: [UInt8] = Array("abcdefghijklmnop".utf8)
        for _ in 0..<runs {
            let subject = Subject<[UInt8]>()
            var d = subject.subscribeNext { v in sum.value &+= v.count &+ Int(v[0]) }
            var t0 = cpuNanoseconds()
            for i in 0..<values {
                value[15] = UInt8(truncatingIfNeeded: i)
                subject.sendNext(value)
            }
            subjectOnly.append(Double(cpuNanoseconds() - t0) / Double(values))
            d.dispose()

            d = subject.filter { $0.count > 0 && $0[0] != 120 }
                .map { v -> [UInt8] in
                    var out = v
                    out[0] &= ~0x20
                    return out
                }
                .subscribeNext { v in sum.value &+= v.count &+ Int(v[0]) }
            t0 = cpuNanoseconds()
            for i in 0..<values {
                value[15] = UInt8(truncatingIfNeeded: i)
                subject.sendNext(value)
            }
            pipeline.append(Double(cpuNanoseconds() - t0) / Double(values))
            d.dispose()
        }
        func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
        print("embed benchmark (\(values) values, median of \(runs) runs):")
        print(c.stdout, terminator: "")
        print(String(format: "swift-subject %.1f ns/value", median(subjectOnly)))
        print(String(format: "swift-pipeline %.1f ns/value", median(pipeline)))
        print("swift checksum \(sum.value)")
    }
}

/// The benchmark's checksum (keeps the work from being optimized away), without dynamic
/// exclusivity checks, like the C side's global.
final class Checksum {
    @exclusivity(unchecked) var value = 0
}

/// CPU time of the process in nanoseconds: the machine is shared, and wall time would count
/// other programs' turns on the processor as ours (the C side measures the same way).
func cpuNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
