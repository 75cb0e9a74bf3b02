import Foundation
import Glibc
import XCTest

/// `Examples/ruv-http-hello` as a user runs it: a process of its own, driven by curl,
/// stopped with SIGTERM.
final class HTTPHelloExampleTests: XCTestCase {
    /// The example's binary, next to this test bundle in the build directory.
    static var binary: String {
        var path = Bundle.main.bundlePath
        if !FileManager.default.fileExists(atPath: path + "/ruv-http-hello") {
            path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        }
        return path + "/ruv-http-hello"
    }

    func testHelloEchoStreamAndAnExitZeroOnSIGTERM() throws {
        // `swift build --build-tests` builds the example with the tests; missing is a failure.
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            return XCTFail("ruv-http-hello not built at \(Self.binary)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["--port", "0"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var line = Data()
        while !line.contains(10) {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line.append(byte)
        }
        let printed = String(decoding: line, as: UTF8.self)
        XCTAssertTrue(printed.hasPrefix("listening on 127.0.0.1:"), printed)
        let port = try XCTUnwrap(Int(printed.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? ""))
        let base = "http://127.0.0.1:\(port)"
        let hello = try runProgram(["curl", "-si", base + "/"])
        XCTAssertTrue(hello.out.hasPrefix("HTTP/1.1 200 OK\r\n"), hello.out)
        XCTAssertTrue(hello.out.contains("Content-Type: text/plain\r\n"), hello.out)
        XCTAssertTrue(hello.out.hasSuffix("\r\n\r\nHello, World!"), hello.out)
        let echo = try runProgram(["curl", "-si", "-H", "Content-Type: application/x-thing", "--data-binary", "echo me", base + "/echo"])
        XCTAssertTrue(echo.out.contains("Content-Type: application/x-thing\r\n"), echo.out)
        XCTAssertTrue(echo.out.hasSuffix("\r\n\r\necho me"), echo.out)
        let stream = try runProgram(["curl", "-si", base + "/stream?n=3"])
        XCTAssertTrue(stream.out.contains("Transfer-Encoding: chunked\r\n"), stream.out)
        let streamed = try runProgram(["curl", "-s", base + "/stream?n=3"])
        XCTAssertEqual(streamed.out, "chunk 0\nchunk 1\nchunk 2\n")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(try out.fileHandleForReading.readToEnd() ?? Data(), Data(), "the address is printed once, nothing else")
    }
}
