// ruv-tail: `tail -F` on ReactiveUV.
//
//     ruv-tail [-n N | -n +K] FILE
//
// Prints every line of `File.tailChunks(FILE)` — `File.tail` with whole lines delivered as
// byte chunks rather than one String each — to standard output until SIGINT or SIGTERM
// (watched with `UnixSignal.signal`), then exits 0. `-n N` starts with the last N lines
// (default 10), `-n +K` from line K, as in GNU tail; `-f`/`-F` are accepted and ignored
// (following by name, with retries, is the only mode).
//
// Output is written a chunk at a time: a chunk holds whole lines, as many as one read found
// (up to 32 KiB when catching up on a file in the page cache, 256 KiB when reading from
// storage), and goes out with one write(2). Small chunks (a few appended lines) are batched
// and written together when the loop has finished the callback that produced them.
import Glibc
import ReactiveUV

/// The command line, parsed by hand (GNU tail's spellings of -n).
struct Options {
    var start: TailStart = .lastLines(10)
    var path = ""
}

func usage(_ message: String) -> Never {
    let text = "ruv-tail: \(message)\nusage: ruv-tail [-n N | -n +K] FILE\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

/// `N` → the last N lines; `+K` → from line K (GNU tail's `-n` argument).
func parseCount(_ text: String) -> TailStart {
    if text.hasPrefix("+") {
        guard let k = Int(text.dropFirst()), k >= 0 else { usage("invalid number of lines: '\(text)'") }
        return k <= 1 ? .beginning : .line(k)
    }
    let digits = text.hasPrefix("-") ? String(text.dropFirst()) : text
    guard let n = Int(digits), n >= 0 else { usage("invalid number of lines: '\(text)'") }
    return n == 0 ? .end : .lastLines(n)
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var paths: [String] = []
    var index = 0
    var onlyPaths = false
    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        if onlyPaths || argument == "-" || !argument.hasPrefix("-") {
            paths.append(argument)
        } else if argument == "--" {
            onlyPaths = true
        } else if argument == "-n" || argument == "--lines" {
            guard index < arguments.count else { usage("option requires an argument -- 'n'") }
            options.start = parseCount(arguments[index])
            index += 1
        } else if argument.hasPrefix("--lines=") {
            options.start = parseCount(String(argument.dropFirst("--lines=".count)))
        } else if argument.hasPrefix("-n") {
            options.start = parseCount(String(argument.dropFirst(2)))
        } else if argument == "-f" || argument == "-F" || argument == "--follow" || argument == "--follow=name" {
            continue
        } else {
            usage("unknown option '\(argument)'")
        }
    }
    guard paths.count == 1 else { usage(paths.isEmpty ? "no file given" : "exactly one file, please") }
    options.path = paths[0]
    return options
}

/// Collects lines and writes them to standard output in batches.
///
/// The bytes live in one fixed buffer reached through a pointer: the per-line work is a
/// `memcpy`, with none of the runtime's exclusivity checks a growing array in a class
/// property would cost on every line (the hot path of the throughput benchmark).
///
/// Thread-safety: used only on the main loop's thread (every signal here runs there);
/// `@unchecked Sendable` only so the flush can be handed to `EventLoop.execute`.
final class BatchWriter: @unchecked Sendable {
    /// Past this many bytes, write at once rather than wait for the batch's end.
    static let capacity = 1 << 20
    /// A chunk at least this big is written directly when nothing is batched: a read-sized
    /// chunk (32 KiB or more) gains nothing from a copy into the batch; a few lines do.
    static let directWrite = 1 << 12

    private struct State {
        var count = 0
        var flushScheduled = false
    }

    private let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: BatchWriter.capacity)
    private let state = UnsafeMutablePointer<State>.allocate(capacity: 1)

    init() { state.initialize(to: State()) }

    /// Adds whole lines (each already ending with its line break).
    func add(_ lines: [UInt8]) {
        // A chunk of whole lines from a read goes straight out when nothing is batched:
        // copying it into the batch first would only add a memcpy per read.
        if state.pointee.count == 0 && lines.count >= BatchWriter.directWrite {
            lines.withUnsafeBufferPointer { writeAll($0) }
            return
        }
        lines.withUnsafeBufferPointer { append($0) }
        if state.pointee.count == BatchWriter.capacity { writeOut() }
        if !state.pointee.flushScheduled {
            // Runs after the current loop callback, i.e. once per read batch.
            state.pointee.flushScheduled = true
            EventLoop.main.execute { self.flush() }
        }
    }

    private func append(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard var source = utf8.baseAddress else { return }
        var remaining = utf8.count
        while remaining > 0 {
            var count = state.pointee.count
            if count == BatchWriter.capacity {
                writeOut()
                count = 0
            }
            let n = min(remaining, BatchWriter.capacity - count)
            memcpy(bytes + count, source, n)
            state.pointee.count = count + n
            source += n
            remaining -= n
        }
    }

    func flush() {
        state.pointee.flushScheduled = false
        writeOut()
    }

    private func writeOut() {
        writeAll(UnsafeBufferPointer(start: bytes, count: state.pointee.count))
        state.pointee.count = 0
    }

    /// Writes all of `buffer` to standard output, waiting when it is non-blocking and full.
    private func writeAll(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let base = buffer.baseAddress else { return }
        var done = 0
        let total = buffer.count
        while done < total {
            let n = write(1, base + done, total - done)
            if n >= 0 {
                done += n
            } else if errno == EAGAIN {
                // A non-blocking stdout inherited from the shell: wait until writable.
                var poller = pollfd(fd: 1, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, -1)
            } else if errno != EINTR {
                exit(1)  // stdout is gone (EPIPE with SIGPIPE ignored, EIO, ...)
            }
        }
    }
}

let options = parse(Array(CommandLine.arguments.dropFirst()))
let output = BatchWriter()

let lines = File.tailChunks(options.path, from: options.start).subscribe(
    next: { output.add($0) },
    error: { error in
        output.flush()
        let text = "ruv-tail: \(error)\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
        exit(1)
    })

let stop = UnixSignal.signal(SIGINT).merge(UnixSignal.signal(SIGTERM)).take(1).subscribeNext { _ in
    output.flush()
    lines.dispose()
    exit(0)
}

EventLoop.main.run()
