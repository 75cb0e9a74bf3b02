// Writes the topics of ``ReactiveUV/Signal``: every public member, grouped by the family file
// it is declared in (Operators/Signal+Filtering.swift → "Filtering", …), so the operator
// index in the docs can never go stale or miss an operator. Run by scripts/build-docs.sh.
//
// usage: doc-topics <Module.symbols.json> <output.md>
//
// Overloads share a DocC path; each is linked with DocC's own disambiguation suffix, the
// FNV-1 hash of its USR folded to 24 bits in base 36 (swift-docc's `stableHashString`).

import Foundation

/// Family titles by declaring file (without `.swift`), in the order the topics appear.
let families: [(title: String, files: [String])] = [
    ("Creating signals", ["Signal", "Signal+Creating", "Signal+Timer"]),
    ("Subscribing", ["Signal+Subscribe"]),
    ("Transforming values", ["Signal+Transforming"]),
    ("Filtering", ["Signal+Filtering"]),
    ("Combining signals", ["Signal+Combining", "Signal+CombiningTuples", "Signal+WithLatestFrom"]),
    ("Flattening signals of signals", ["Signal+Flattening"]),
    ("Time", ["Signal+Time"]),
    ("Handling errors", ["Signal+ErrorHandling"]),
    ("Aggregating", ["Signal+Aggregating"]),
    ("Grouping", ["Signal+Grouping"]),
    ("Booleans and tuples", ["Signal+Reducing"]),
    ("Multicasting and sharing", ["Signal+Multicasting"]),
    ("Schedulers and threads", ["Signal+Scheduling"]),
    ("Blocking and waiting", ["Signal+Blocking"]),
    ("Swift concurrency", ["Signal+SwiftConcurrency"]),
    ("Lifetimes", ["Lifetime"]),
    ("Debugging", ["Signal+Debugging"]),
]

func stableHash(_ s: String) -> String {
    var hash: UInt32 = 2_166_136_261
    for byte in s.utf8 {
        hash = hash &* 16_777_619
        hash ^= UInt32(byte)
    }
    return String((hash >> 24) ^ (hash & 0xffffff), radix: 36, uppercase: false)
}

struct Member {
    let name: String
    let usr: String
    let file: String
    let line: Int
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write("usage: doc-topics <Module.symbols.json> <output.md>\n".data(using: .utf8)!)
    exit(2)
}
let data = try Data(contentsOf: URL(fileURLWithPath: arguments[1]))
let graph = try JSONSerialization.jsonObject(with: data) as! [String: Any]
let symbols = graph["symbols"] as! [[String: Any]]

var members: [Member] = []
for symbol in symbols {
    let path = symbol["pathComponents"] as! [String]
    guard path.count == 2, path[0] == "Signal" else { continue }
    let kind = (symbol["kind"] as! [String: Any])["identifier"] as! String
    guard kind != "swift.class", kind != "swift.struct", kind != "swift.enum" else { continue }
    let usr = (symbol["identifier"] as! [String: Any])["precise"] as! String
    let location = symbol["location"] as? [String: Any]
    let uri = location?["uri"] as? String ?? ""
    let file = ((uri as NSString).lastPathComponent as NSString).deletingPathExtension
    let line = ((location?["position"] as? [String: Any])?["line"] as? Int) ?? 0
    members.append(Member(name: path[1], usr: usr, file: file, line: line))
}

var countByName: [String: Int] = [:]
for m in members { countByName[m.name, default: 0] += 1 }
func link(_ m: Member) -> String {
    countByName[m.name, default: 0] > 1 ? "``Signal/\(m.name)-\(stableHash(m.usr))``" : "``Signal/\(m.name)``"
}

var out = "# ``ReactiveUV/Signal``\n\n## Topics\n"
var listed = Set<String>()
func section(_ title: String, _ list: [Member]) {
    guard !list.isEmpty else { return }
    out += "\n### \(title)\n\n"
    for m in list {
        out += "- \(link(m))\n"
        listed.insert(m.usr)
    }
}
let order = Dictionary(uniqueKeysWithValues: families.flatMap(\.files).enumerated().map { ($1, $0) })
for family in families {
    let list = members.filter { family.files.contains($0.file) }
        .sorted { (order[$0.file]!, $0.line) < (order[$1.file]!, $1.line) }
    section(family.title, list)
}
// Members declared elsewhere (IO files extending Signal, say), under their file's name.
let others = members.filter { !listed.contains($0.usr) }
for file in Set(others.map(\.file)).sorted() {
    section("More: \(file)", others.filter { $0.file == file }.sorted { $0.line < $1.line })
}
try out.write(toFile: arguments[2], atomically: true, encoding: .utf8)
