import Foundation
import XCTest

/// reactiveuv.h compiles cleanly as C11 and as C++ with every warning an error, and a C
/// file that calls every function links against libreactiveuv.so (the header's prototypes
/// and the library's exports agree; the Swift side is checked against the header at build
/// time by `@c @implementation`).
final class EmbedHeaderTests: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = try CToolchain.temporaryDirectory("header")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Compiles a file that only includes the header.
    func compileHeaderOnly(compiler: String, language: String, standard: String, extra: [String] = []) throws {
        let source = scratch.appendingPathComponent("only-header.\(language == "c" ? "c" : "cc")")
        try "#include \"reactiveuv.h\"\n#include \"reactiveuv.h\" /* twice: include guard */\nint main(void) { return ruv_version() == RUV_VERSION_HEX ? 0 : 1; }\n"
            .write(to: source, atomically: true, encoding: .utf8)
        let args = ["-x", language, "-std=\(standard)", "-pedantic"] + CToolchain.strictFlags + extra
            + ["-I", CToolchain.includeDirectory, "-fsyntax-only", source.path]
        let result = try CToolchain.run(compiler, args, timeout: 60)
        XCTAssertEqual(result.status, 0, "\(compiler) \(args.joined(separator: " ")):\n\(result.stderr)")
        XCTAssertEqual(result.stderr, "", "warnings:\n\(result.stderr)")
    }

    func testHeaderCompilesAsC11() throws {
        try compileHeaderOnly(compiler: "/usr/bin/cc", language: "c", standard: "c11")
    }

    func testHeaderCompilesAsCPlusPlus() throws {
        // The system's C++ compiler, or the Swift toolchain's clang++ where g++ is not installed.
        let compiler = ["/usr/bin/c++", "/usr/bin/g++", "/opt/swift/usr/bin/clang++"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let compiler else { throw XCTSkip("no C++ compiler") }
        try compileHeaderOnly(compiler: compiler, language: "c++", standard: "c++17")
    }

    func testHeaderCompilesWithClang() throws {
        let clang = ["/opt/swift/usr/bin/clang", "/usr/bin/clang"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let clang else { throw XCTSkip("no clang") }
        try compileHeaderOnly(compiler: clang, language: "c", standard: "c11")
    }

    /// Every function declared in the header is called from C and the program links.
    func testEveryFunctionLinks() throws {
        try CToolchain.requireLibrary()
        let program = try CToolchain.buildProgram(
            [CToolchain.testSources.appendingPathComponent("call-every-function.c").path], named: "call-every-function",
            in: scratch)
        // Check the file really names every declared function.
        let header = try String(contentsOfFile: CToolchain.header, encoding: .utf8)
        let caller = try String(contentsOf: CToolchain.testSources.appendingPathComponent("call-every-function.c"), encoding: .utf8)
        let declared = EmbedSymbolTests.declaredFunctions(in: header)
        XCTAssertGreaterThan(declared.count, 50)
        for name in declared {
            XCTAssertTrue(caller.contains(name + "("), "call-every-function.c does not call \(name)")
        }
        let result = try CToolchain.run(program, [], timeout: 20)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertEqual(result.lines.last, "ok")
    }
}
