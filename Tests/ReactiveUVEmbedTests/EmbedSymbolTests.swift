import Foundation
import XCTest

/// libreactiveuv.so exports the C API and nothing else of ours: `nm -D --defined-only`
/// lists exactly the `ruv_*` functions the header declares (no Swift `$s…` symbols, no
/// CSystemShims `csys_*`, no internal `ruv__*`).
final class EmbedSymbolTests: XCTestCase {
    /// The names of the functions reactiveuv.h declares.
    static func declaredFunctions(in header: String) -> Set<String> {
        var names = Set<String>()
        // A prototype: a return type, then `ruv_name(` at the start of a declaration line.
        for line in header.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("*") || text.hasPrefix("/") || text.hasPrefix("#") || text.hasPrefix("typedef") { continue }
            guard let open = text.firstIndex(of: "(") else { continue }
            let head = text[..<open]
            guard let name = head.split(whereSeparator: { $0 == " " || $0 == "*" }).last, name.hasPrefix("ruv_") else {
                continue
            }
            names.insert(String(name))
        }
        return names
    }

    func testOnlyTheCAPIIsExported() throws {
        try CToolchain.requireLibrary()
        let nm = try CToolchain.run("/usr/bin/nm", ["-D", "--defined-only", CToolchain.library])
        XCTAssertEqual(nm.status, 0, nm.stderr)
        let exported = Set(nm.lines.compactMap { $0.split(separator: " ").last.map(String.init) })
        let foreign = exported.filter { !$0.hasPrefix("ruv_") || $0.hasPrefix("ruv__") }
        XCTAssertEqual(foreign, [], "symbols other than the C API are exported:\n\(foreign.sorted().joined(separator: "\n"))")

        let header = try String(contentsOfFile: CToolchain.header, encoding: .utf8)
        let declared = EmbedSymbolTests.declaredFunctions(in: header)
        XCTAssertEqual(exported.subtracting(declared), [], "exported but not declared in reactiveuv.h")
        XCTAssertEqual(declared.subtracting(exported), [], "declared in reactiveuv.h but not exported")
    }

    /// The library needs no symbol of the program's, and loads on its own (its RUNPATH
    /// finds the Swift runtime).
    func testLibraryLoadsWithoutSwiftOnThePath() throws {
        try CToolchain.requireLibrary()
        let ldd = try CToolchain.run("/usr/bin/ldd", [CToolchain.library], environment: ["LD_LIBRARY_PATH": ""])
        XCTAssertEqual(ldd.status, 0)
        XCTAssertFalse(ldd.stdout.contains("not found"), ldd.stdout)
    }
}
