import Foundation
@testable import ReactiveUVHTTP
import Testing

/// The seed corpus of `Fuzz/corpus/http-request/` and mutations of it through
/// ``parseHTTPRequests(_:readSize:maxHeadBytes:maxStartLineBytes:maxBodyBytes:)``, the fuzz
/// target's entry point: no input crashes it, every input ends in requests, an upgrade or a
/// clear error, and how the bytes are split into reads never changes the outcome.
///
/// (Foundation here only lists and reads the corpus directory; the library has none.)
@Suite struct HTTPParserCorpusTests {
    static let corpusDirectory: String = {
        var path = #filePath
        for _ in 0..<4 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/Fuzz/corpus/http-request"
    }()

    static func corpus() throws -> [(name: String, bytes: [UInt8])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: corpusDirectory).filter { $0.hasSuffix(".http") }.sorted()
        return try names.map { name in
            (name, [UInt8](try Data(contentsOf: URL(fileURLWithPath: corpusDirectory + "/" + name))))
        }
    }

    /// What must not depend on how the bytes were read.
    private func summary(_ r: HTTPRequestParseReport) -> String {
        "\(r.requests.map { "\($0.method) \($0.target) \($0.body.count) \($0.trailers.fields.count)" }) \(r.error?.status ?? 0) \(r.upgraded)"
    }

    @Test func seedsEndAsTheirNamesSay() throws {
        let seeds = try Self.corpus()
        #expect(seeds.count >= 20)
        for (name, bytes) in seeds {
            let r = parseHTTPRequests(bytes)
            if name.hasPrefix("valid-") {
                #expect(r.error == nil, "\(name): \(String(describing: r.error))")
                #expect(!r.requests.isEmpty, "\(name)")
            } else if name.hasPrefix("smuggle-") {
                #expect(r.error?.status == 400, "\(name): \(String(describing: r.error))")
                #expect(r.requests.isEmpty, "\(name): a smuggling attempt yields no request")
            } else {
                #expect(r.error != nil, "\(name)")
            }
            for size in [1, 2, 3, 7, 64] {
                #expect(summary(parseHTTPRequests(bytes, readSize: size)) == summary(r), "\(name) in reads of \(size)")
            }
        }
    }

    @Test func seedsParseToWhatTheyHold() throws {
        let seeds = Dictionary(uniqueKeysWithValues: try Self.corpus().map { ($0.name, $0.bytes) })
        func seed(_ name: String) throws -> [UInt8] { try #require(seeds[name + ".http"]) }
        let pipelined = parseHTTPRequests(try seed("valid-pipelined-three"))
        #expect(pipelined.requests.map(\.target) == ["/a", "/b", "/c"])
        let chunkedReport = parseHTTPRequests(try seed("valid-chunked-ext-trailers"))
        let chunked = try #require(chunkedReport.requests.first)
        #expect(String(decoding: chunked.body, as: UTF8.self) == "hello world")
        #expect(chunked.trailers["checksum"] == "abc")
        #expect(parseHTTPRequests(try seed("valid-upgrade-websocket")).upgraded)
        #expect(parseHTTPRequests(try seed("bad-http2-preface")).error?.status == 505)
    }

    /// SplitMix64: a fixed seed makes every run try the same inputs, so a failure repeats.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
    }

    @Test func mutatedAndRandomInputsEndClearly() throws {
        let seeds = try Self.corpus().map(\.bytes)
        var random = Random(state: 0x5EED_0F_4775)
        let interesting: [UInt8] = Array("\r\n:; \t0123456789abcdefABCDEF,-\u{0}\u{7f}".utf8) + [0x80, 0xff]
        var outcomes: [Int: Int] = [:]
        for round in 0..<6000 {
            var bytes: [UInt8]
            if round % 10 == 0 {
                bytes = (0..<random.below(300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            } else {
                bytes = seeds[random.below(seeds.count)]
                for _ in 0..<(1 + random.below(4)) {
                    let at = random.below(bytes.count + 1)
                    switch random.below(5) {
                    case 0 where at < bytes.count: bytes[at] ^= UInt8(1 << random.below(8))
                    case 1: bytes.insert(interesting[random.below(interesting.count)], at: at)
                    case 2 where at < bytes.count: bytes.remove(at: at)
                    case 3 where at < bytes.count: bytes[at] = interesting[random.below(interesting.count)]
                    default:
                        let other = seeds[random.below(seeds.count)]
                        bytes.insert(contentsOf: other[0..<random.below(other.count)], at: at)
                    }
                }
            }
            let whole = parseHTTPRequests(bytes, maxHeadBytes: 512, maxStartLineBytes: 128, maxBodyBytes: 64)
            let onlyEmptyLines = bytes.allSatisfy { $0 == 13 || $0 == 10 }
            #expect(whole.error != nil || whole.upgraded || !whole.requests.isEmpty || onlyEmptyLines, "round \(round): \(bytes)")
            if let e = whole.error { #expect([400, 413, 414, 431, 505].contains(e.status), "round \(round): \(e)") }
            #expect(whole.requests.allSatisfy { $0.body.count <= 64 })
            let split = parseHTTPRequests(bytes, readSize: 1 + random.below(9), maxHeadBytes: 512, maxStartLineBytes: 128, maxBodyBytes: 64)
            #expect(summary(split) == summary(whole), "round \(round): \(bytes)")
            outcomes[whole.error?.status ?? (whole.upgraded ? 101 : 200), default: 0] += 1
        }
        // The mutations reach both sides: accepted requests and several kinds of refusal.
        #expect((outcomes[200] ?? 0) > 100)
        #expect((outcomes[400] ?? 0) > 100)
        print("HTTP parser mutation outcomes by status: \(outcomes.sorted { $0.key < $1.key })")
    }
}
