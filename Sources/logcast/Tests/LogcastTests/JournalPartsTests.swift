import Foundation
import Glibc
import Testing

@testable import logcast

/// The journal source's pure parts, without a journal: which FILE arguments are matches and
/// how they combine, the served line's shape, and the cursor file (Swift Testing: no loop).
@Suite struct JournalPartsTests {
    @Test func matchesAreWordsShapedAsJournaldFieldsOrAPlus() {
        for word in ["_SYSTEMD_UNIT=nginx.service", "PRIORITY=3", "MESSAGE=", "A=b=c", "+", "_PID=1", "CODE_FILE=/x=y"] {
            #expect(JournalMatch.isMatch(word), "\(word)")
        }
        for word in ["/var/log/app.log", "app.log", "priority=3", "=3", "1ABC=x", "_systemd_unit=a", "A B=c", "++",
                     "./PRIORITY=3", String(repeating: "A", count: 65) + "=x", ""] {
            #expect(!JournalMatch.isMatch(word), "\(word)")
        }
    }

    @Test func filesAreWhatIsNotAMatchOnlyWithTheJournal() throws {
        let arguments = ["/var/log/a.log", "_SYSTEMD_UNIT=a.service", "+", "PRIORITY=3", "b.log"]
        var options = try JournalOptions.parse(["--journal"])
        #expect(options.files(arguments) == ["/var/log/a.log", "b.log"])
        #expect(try options.matches(arguments) == [.field("_SYSTEMD_UNIT=a.service"), .or, .field("PRIORITY=3")])
        options = try JournalOptions.parse([])
        #expect(options.files(arguments) == arguments, "without --journal every argument is a FILE")
        #expect(try options.matches(arguments).isEmpty)
        #expect(try JournalOptions.parse(["--journal-directory", "/tmp"]).isActive)
    }

    @Test func aPlusMustStandBetweenTwoMatches() {
        for words in [["+", "A=1"], ["A=1", "+"], ["A=1", "+", "+", "B=2"], ["+"]] {
            #expect(throws: (any Error).self, "\(words)") { try JournalMatch.parse(words) }
        }
        #expect(throws: Never.self) { try JournalMatch.parse(["A=1", "+", "B=2", "C=3", "+", "A=2"]) }
    }

    func line(_ unit: String, _ message: [UInt8]) -> [UInt8] { JournalLine.make(unit: Array(unit.utf8), message: message) }

    @Test func aLineIsUnitColonMessageWithLineFeedsFolded() {
        #expect(line("a.service", Array("hello".utf8)) == Array("a.service: hello".utf8))
        #expect(line("", Array("x".utf8)) == Array("journal: x".utf8), "no unit field: 'journal'")
        #expect(line("a", []) == Array("a: ".utf8), "no MESSAGE")
        #expect(line("a", Array("one\ntwo\n\nfour\n\n\n".utf8)) == Array("a: one\n\ttwo\n\t\n\tfour".utf8))
        #expect(line("a", Array("\n\n".utf8)) == Array("a: ".utf8))
        #expect(line("bad\nunit\r", [0, 0xFF, 10, 0x1B]) == Array("bad unit : ".utf8) + [0, 0xFF, 10, 9, 0x1B])
        // Every line feed of the result is followed by a TAB: no MESSAGE can start a record.
        let folded = line("u", (0..<2000).map { _ in UInt8.random(in: 0...255) } + [10])
        for (i, byte) in folded.enumerated() where byte == 10 {
            #expect(i + 1 < folded.count && folded[i + 1] == 9)
        }
    }

    func temporaryDirectory() -> String {
        var template = Array("/tmp/logcast-journal-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    @Test func theCursorFileIsReplacedWholeAndBadOnesAreSaidSo() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cursor = JournalCursor(directory: dir)
        #expect(cursor.load() == .none)
        let text = "s=74dbd261bba346c1840d8d6f5450db8e;i=6;b=0123456789abcdef0123456789abcdef;m=6;t=6614ef458669d;x=9e6089b5531560d6"
        try cursor.save(text)
        #expect(cursor.load() == .cursor(text))
        #expect(access(cursor.path + ".tmp", F_OK) != 0, "the temporary file was renamed")
        try cursor.save("s=1;i=2")
        #expect(cursor.load() == .cursor("s=1;i=2"))
        for (bytes, why) in [([UInt8]("".utf8), "not a journal cursor"), (Array("\n".utf8), "not a journal cursor"),
                             (Array("s=1; i=2".utf8), "not a journal cursor"), ([0x1B, 0xFF, 0], "not a journal cursor"),
                             ([UInt8](repeating: 0x41, count: 5000), "longer than a cursor")] {
            #expect(FileManager.default.createFile(atPath: cursor.path, contents: Data(bytes)))
            #expect(cursor.load() == .corrupt(why), "\(bytes.prefix(10))")
        }
        try FileManager.default.removeItem(atPath: cursor.path)
        #expect(mkdir(cursor.path, 0o700) == 0)
        if case .corrupt = cursor.load() {} else { Issue.record("a directory at the path is not a cursor") }
        #expect(throws: (any Error).self) { try cursor.save("s=1") }
    }
}
