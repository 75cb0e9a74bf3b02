import Foundation  // SyslogMessage.swift uses String(bytes:encoding:), as the daemon gets it

// Fuzz target: syslog as logcast receives it — a TCP stream framed by RFC 6587 (octet
// counting or one message per line, `SyslogFramer`) in arbitrary chunks, and each frame,
// like a UDP datagram, parsed as RFC 5424 or RFC 3164 (`SyslogMessage.parse`) and turned
// into the line logcast serves. Checks: PRI fields in range (the
// served line indexes name tables with them).

/// The frame limit used here: small, so oversized frames are common.
let maxMessage = 256

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSyslog(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    // A datagram: the whole input is one message.
    check(input[...])
    guard let first = input.first else { return 0 }
    let step = Int(first % 64) + 1
    let framer = SyslogFramer(maxMessage: maxMessage)
    var start = 1
    while start < input.count && !framer.broken {
        let end = min(start + step, input.count)
        framer.append(Array(input[start..<end]), message: { check($0) },
                      malformed: { reason in precondition(!reason.isEmpty) })
        start = end
    }
    framer.finish { check($0) }
    return 0
}

/// Parses one frame; a parsed message's fields must be in range.
func check(_ frame: ArraySlice<UInt8>) {
    guard let message = try? SyslogMessage.parse(frame) else { return }
    precondition((0...23).contains(message.facility) && (0...7).contains(message.severity),
                 "PRI out of range: \(message.facility).\(message.severity)")
    _ = message.line
}
