// ruv-stdin-lines: prints each line of standard input as `line: <text>`, then `end`.
//
//     printf 'x\ny\n' | ruv-stdin-lines [--max N]
//
// A small example of `StandardInput.lines`, also used by the tests to read standard input
// through a real pipe, terminal or file. A line longer than `--max` bytes (default 1 MiB)
// prints the error on stderr and exits with status 1.

import Glibc
import ReactiveUV

/// Writes `text` to standard error, unbuffered.
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

var maxLength = LineBuffer.defaultMaxLength
if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--max", let n = Int(CommandLine.arguments[2]) {
    maxLength = n
}

var status: Int32 = 0
StandardInput.lines(maxLength: maxLength).subscribe(
    next: { line in print("line: \(line)") },
    error: { error in
        printError("ruv-stdin-lines: \(error)\n")
        status = 1
        EventLoop.main.stop()
    },
    completed: {
        print("end")
        EventLoop.main.stop()
    })
EventLoop.main.run()
fflush(nil)
exit(status)
