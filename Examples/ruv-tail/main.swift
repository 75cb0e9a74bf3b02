// ruv-tail: `tail -F` on ReactiveUV.
//
//     ruv-tail [-n N | -n +K] [--state DIR] [--poll] [--max-line-bytes N] [--skip-long-lines] FILE
//
// Prints every line of `File.follow(FILE)` — every file that lives at the path, followed by
// identity through rotations, truncation and absence — to standard output until SIGINT or
// SIGTERM (watched with `UnixSignal.signal`), then exits 0. `-n N` starts with the last N
// lines (default 10; an unfinished last line counts and is printed, as GNU tail does),
// `-n +K` from line K; `-f`/`-F` are accepted and ignored (following by name, with retries,
// is the only mode). What happens to the file is said on standard error, as `tail -F`
// does: missing, appeared, replaced, truncated, bytes lost, polling.
//
// `--state DIR` keeps durable positions in DIR (a `TailCheckpointStore`): a line is
// acknowledged once it has been written to standard output, and positions are saved
// every 0.05 s (`--save-interval`) and at exit; a ruv-tail started again with the same DIR — even after
// SIGKILL, even if the file was rotated meanwhile — goes on after the last saved line.
// `--poll` follows with `uv_fs_poll` instead of inotify (also `RUV_TAIL_POLL=1`).
// A line longer than `--max-line-bytes` (default 1 MiB) stops ruv-tail with exit 1 after the
// lines before it; `--skip-long-lines` leaves such a line out instead (its bytes are named
// on standard error, as any loss is) and goes on — `TailLongLines.skip`, for a log that must
// keep flowing past one runaway line.
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
    var stateDirectory: String?
    var poll = false
    var saveInterval = 0.05
    var maxLineBytes = LineBuffer.defaultMaxLength
    var skipLongLines = false
}

let synopsis = """
    usage: ruv-tail [-n N | -n +K] [--state DIR [--save-interval S]] [--poll]
                    [--max-line-bytes N] [--skip-long-lines] FILE

    """

let help = synopsis + """

    Print the last lines of FILE, then every line appended to it, following the file
    through rotation (rename or delete-and-create), truncation and absence, like
    `tail -F`. Every file that lives at the path is read to its end, however fast it
    rotates; what happens is said on standard error.

      -n, --lines=N     start with the last N lines (default 10); -n +K starts at line K
      -f, -F, --follow  accepted and ignored: following by name is the only mode
      --state DIR       remember in DIR how far each file was printed (saved every
                        --save-interval seconds and at exit); started again with DIR, go
                        on after the last line saved, also through a rotation meanwhile
      --save-interval S seconds between saves of the state (default 0.05)
      --poll            poll the file's status instead of using inotify
      --max-line-bytes N
                        the longest line accepted, in bytes (default 1048576); a longer
                        one stops ruv-tail (exit 1) after the lines before it
      --skip-long-lines leave out a line longer than the limit (its bytes are named on
                        standard error) and go on
      -h, --help        print this help and exit

    Exits 0 on SIGINT or SIGTERM, 1 when the file cannot be followed (no permission,
    a directory, a read error, a line too long), 2 for a bad command line.

    """

func usage(_ message: String) -> Never {
    let text = "ruv-tail: \(message)\n" + synopsis
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

/// The argument of `--max-line-bytes`: a positive number of bytes.
func parseLineLimit(_ text: String) -> Int {
    guard let n = Int(text), n > 0 else { usage("invalid line limit: '\(text)' (a positive number of bytes)") }
    return n
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
        } else if argument == "-h" || argument == "--help" {
            _ = help.withCString { write(1, $0, strlen($0)) }
            exit(0)
        } else if argument == "--state" {
            guard index < arguments.count else { usage("option '--state' requires an argument") }
            options.stateDirectory = arguments[index]
            index += 1
        } else if argument.hasPrefix("--state=") {
            options.stateDirectory = String(argument.dropFirst("--state=".count))
        } else if argument == "--save-interval" {
            guard index < arguments.count, let seconds = Double(arguments[index]), seconds > 0 else {
                usage("option '--save-interval' requires a positive number of seconds")
            }
            options.saveInterval = seconds
            index += 1
        } else if argument == "--poll" {
            options.poll = true
        } else if argument == "--max-line-bytes" {
            guard index < arguments.count else { usage("option '--max-line-bytes' requires an argument") }
            options.maxLineBytes = parseLineLimit(arguments[index])
            index += 1
        } else if argument.hasPrefix("--max-line-bytes=") {
            options.maxLineBytes = parseLineLimit(String(argument.dropFirst("--max-line-bytes=".count)))
        } else if argument == "--skip-long-lines" {
            options.skipLongLines = true
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
    /// Where positions go once their lines are written (with `--state`).
    private let store: TailCheckpointStore?
    /// The end offsets of chunks batched but not yet written, per file.
    private var unwritten: [FileIdentity: Int64] = [:]

    init(store: TailCheckpointStore?) {
        self.store = store
        state.initialize(to: State())
    }

    /// Adds a chunk of lines; its position is acknowledged once it is written.
    func add(_ chunk: TailChunk) {
        add(chunk.bytes)
        guard let store else { return }
        if state.pointee.count == 0 {
            store.acknowledge(chunk.identity, through: chunk.endOffset)  // written already
        } else {
            unwritten[chunk.identity] = chunk.endOffset
        }
    }

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
        if let store, !unwritten.isEmpty {
            for (identity, offset) in unwritten { store.acknowledge(identity, through: offset) }
            unwritten.removeAll(keepingCapacity: true)
        }
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

func say(_ text: String) {
    let line = "ruv-tail: \(text)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

let store: TailCheckpointStore? = options.stateDirectory.map { directory in
    do {
        return try TailCheckpointStore(directory: directory)
    } catch {
        say("\(error)")
        exit(1)
    }
}
let output = BatchWriter(store: store)

func saveState(_ store: TailCheckpointStore?) {
    do {
        try store?.save()
    } catch {
        say("cannot save the state: \(error)")
    }
}

var tailOptions = TailOptions()
tailOptions.usePolling = options.poll
tailOptions.maxLineLength = options.maxLineBytes
tailOptions.longLines = options.skipLongLines ? .skip : .fail
tailOptions.sendsUnfinishedLastLineAtStart = true
let lines = File.follow(
    options.path, from: options.start, checkpoints: store, options: tailOptions,
    notices: { notice in
        // Lines before the notice go out first, so the two streams read in order.
        output.flush()
        say(notice.description)
    }
).subscribe(
    next: { output.add($0) },
    error: { error in
        output.flush()
        saveState(store)
        say("\(error)")
        exit(1)
    })

let saving = store == nil ? nil : Signal<SchedulerTime>.interval(options.saveInterval, on: Scheduler.main).subscribeNext { _ in
    output.flush()
    saveState(store)
}

let stop = UnixSignal.signal(SIGINT).merge(UnixSignal.signal(SIGTERM)).take(1).subscribeNext { _ in
    output.flush()
    lines.dispose()
    saveState(store)
    exit(0)
}

EventLoop.main.run()
