import Foundation
@testable import ReactiveUVHTTP
import Testing

/// The seed corpus of `Fuzz/corpus/http-response/` through
/// ``parseHTTPResponses(_:readSize:maxHeadBytes:maxBodyBytes:)``, the response fuzz target's
/// entry point: each seed ends as its name says (`valid-`: responses and no error; `bad-`:
/// an error), parses to what it holds, and the way the bytes are cut into reads never
/// changes the outcome.
///
/// (Foundation here only lists and reads the corpus directory; the library has none.)
@Suite struct HTTPResponseCorpusTests {
    static let corpusDirectory: String = {
        var path = #filePath
        for _ in 0..<4 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/Fuzz/corpus/http-response"
    }()

    static func corpus() throws -> [String: [UInt8]] {
        let names = try FileManager.default.contentsOfDirectory(atPath: corpusDirectory).filter { $0.hasSuffix(".http") }
        return Dictionary(uniqueKeysWithValues: try names.map { name in
            (String(name.dropLast(5)), [UInt8](try Data(contentsOf: URL(fileURLWithPath: corpusDirectory + "/" + name))))
        })
    }

    private func summary(_ r: HTTPResponseParseReport) -> String {
        "\(r.responses.map { "\($0.status) \($0.bodyBytes)" }) \(r.error?.status ?? 0) \(r.upgraded)"
    }

    @Test func seedsEndAsTheirNamesSayInAnyReadSize() throws {
        let seeds = try Self.corpus()
        #expect(seeds.count >= 9)
        for (name, bytes) in seeds.sorted(by: { $0.key < $1.key }) {
            let r = parseHTTPResponses(bytes)
            if name.hasPrefix("valid-") {
                #expect(r.error == nil, "\(name): \(String(describing: r.error))")
                #expect(!r.responses.isEmpty || r.upgraded, "\(name)")
            } else {
                #expect(r.error != nil, "\(name): \(summary(r))")
            }
            for size in [1, 2, 3, 7, 64] {
                #expect(summary(parseHTTPResponses(bytes, readSize: size)) == summary(r), "\(name) in reads of \(size)")
            }
        }
    }

    @Test func seedsParseToWhatTheyHold() throws {
        let seeds = try Self.corpus()
        func parsed(_ name: String) throws -> HTTPResponseParseReport { parseHTTPResponses(try #require(seeds[name])) }
        #expect(try parsed("valid-length").responses.map { [$0.status, $0.bodyBytes] } == [[200, 5]])
        #expect(try parsed("valid-chunked-trailers").responses.map { [$0.status, $0.bodyBytes] } == [[200, 5]])
        #expect(try parsed("valid-close-delimited").responses.map { [$0.status, $0.bodyBytes] } == [[200, 28]], "a body read until the close")
        #expect(try parsed("valid-no-body-statuses").responses.map { [$0.status, $0.bodyBytes] } == [[204, 0], [304, 0]])
        #expect(try parsed("valid-retry-after-then-ok").responses.map { [$0.status, $0.bodyBytes] } == [[503, 0], [200, 3]])
        #expect(try parsed("valid-upgrade").upgraded)
        // A body past the limit is refused, not taken.
        let big = parseHTTPResponses(try #require(seeds["valid-length"]), maxBodyBytes: 4)
        #expect(big.error != nil && big.responses.isEmpty, "\(summary(big))")
    }
}
