/// Incremental UTF-8 validation (RFC 3629, the table of well-formed sequences in Unicode
/// §3.9): text messages are checked frame by frame as they arrive, so an invalid byte in
/// the first fragment fails the connection (1007) before the rest is read or buffered.
///
/// Why a state machine rather than `String(validating:)`: a sequence may be split across
/// fragments (and across inflated chunks), so validation must carry state between calls.
/// ASCII, the common case, is skipped eight bytes at a time.
struct UTF8Validator {
    /// Continuation bytes still expected for the sequence in progress.
    private var needed = 0
    /// The range the next continuation byte must fall in (narrowed after E0, ED, F0, F4 so
    /// overlong forms, surrogates and code points above U+10FFFF are refused).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// Whether the bytes seen so far end on a character boundary.
    var isComplete: Bool { needed == 0 }

    /// Feeds `bytes`; `false` at the first byte that cannot be part of valid UTF-8.
    mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var i = 0
        while i < count {
            if needed == 0 {
                // Eight ASCII bytes at a time while no sequence is open.
                while i + 8 <= count && bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    i += 8
                }
                if i == count { break }
                let byte = bytes[i]
                i += 1
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: needed = 1; lower = 0x80; upper = 0xBF
                case 0xE0: needed = 2; lower = 0xA0; upper = 0xBF
                case 0xE1...0xEC, 0xEE...0xEF: needed = 2; lower = 0x80; upper = 0xBF
                case 0xED: needed = 2; lower = 0x80; upper = 0x9F
                case 0xF0: needed = 3; lower = 0x90; upper = 0xBF
                case 0xF1...0xF3: needed = 3; lower = 0x80; upper = 0xBF
                case 0xF4: needed = 3; lower = 0x80; upper = 0x8F
                default: return false
                }
            } else {
                let byte = bytes[i]
                i += 1
                guard byte >= lower && byte <= upper else { return false }
                needed -= 1
                lower = 0x80
                upper = 0xBF
            }
        }
        return true
    }

    /// Feeds an array (see ``validate(_:)-(UnsafeRawBufferPointer)``).
    mutating func validate(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { validate($0) } }
}
