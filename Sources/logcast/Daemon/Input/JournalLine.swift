/// One journal entry as the line logcast serves: `UNIT: MESSAGE`.
///
/// UNIT is the entry's `_SYSTEMD_UNIT`, else its `SYSLOG_IDENTIFIER`, else its `_COMM`, else
/// `journal` (what journalctl's short output shows, with the unit first since that is what
/// people match on). The fan-out adds the source's name before it: `journal: nginx.service:
/// …`.
///
/// **One entry, one event.** A MESSAGE may hold line feeds (a stack trace logged in one
/// call) or any bytes at all (journald keeps binary fields). It travels as multi-line events
/// do (MultilineAssembler.swift's wire form): trailing line feeds dropped, every inner line
/// feed followed by a TAB, so a client reads one record whose continuation lines are
/// indented, and the line framing cannot be broken (a MESSAGE line can never begin a record
/// of its own). Other bytes, invalid UTF-8 included, pass through unchanged, as a file's do.
enum JournalLine {
    /// The fields UNIT is taken from, in order of preference.
    static let unitFields = ["_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER", "_COMM"]

    /// The served line (without the final `\n`) of an entry.
    ///
    /// - Parameters:
    ///   - unit: the unit's bytes (empty: the entry has none of ``unitFields``).
    ///   - message: MESSAGE's bytes (empty when the entry has none).
    /// - Returns: `UNIT: MESSAGE` with the message's line feeds folded.
    static func make(unit: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(unit.count + message.count + 16)
        if unit.isEmpty {
            out += Array("journal".utf8)
        } else {
            // A unit name holds no line feed; if a forged entry's does, it becomes a space.
            for byte in unit { out.append(byte == 10 || byte == 13 ? 32 : byte) }
        }
        out.append(UInt8(ascii: ":"))
        out.append(UInt8(ascii: " "))
        var end = message.endIndex
        while end > message.startIndex, message[message.index(end, offsetBy: -1)] == 10 {
            end = message.index(end, offsetBy: -1)
        }
        let body = message[message.startIndex..<end]
        guard body.contains(10) else {
            // The common case, one line: copied whole.
            out.append(contentsOf: body)
            return out
        }
        for byte in body {
            out.append(byte)
            if byte == 10 { out.append(9) }
        }
        return out
    }
}
