// ruv-tail: `tail -F` on ReactiveUV.
//
//     ruv-tail [-n N | -n +K] [--state DIR] [--poll] [--rotate-wait S] [--max-line-bytes N]
//              [--skip-long-lines] FILE
//
// Prints every line of `File.follow(FILE)` — every file that lives at the path, followed by
// identity through rotations, truncation and absence — to standard output until SIGINT or
// SIGTERM (watched with `UnixSignal.signal`), then exits 0. `-n N` starts with the last N
// lines (default 10; an unfinished last line counts and is printed, as GNU tail does),
// `-n +K` from line K (an unfinished last line printed at once too); `-f`/`-F` are accepted
// and ignored (following by name, with retries, is the only mode). What happens to the file
// is said on standard error, as `tail -F` does: missing, appeared, replaced, truncated,
// bytes lost, polling, and something at the path that cannot be followed for now (a
// directory, FIFO, socket or device, a file it may not read), which is waited on.
//
// A file renamed away from the path is still read while its writer may not have reopened
// the path yet, until it has been quiet for `--rotate-wait` seconds (default 1; Fluent
// Bit's `Rotate_Wait`), `TailOptions.rotationQuietPeriod`.
//
// Standard output is watched while nothing is written: when its reader goes away (`| head`
// exited) ruv-tail ends at once, as GNU tail does (SIGPIPE, or exit 1 when SIGPIPE is
// ignored); a closed standard output (`>&-`) is an error at the start (exit 1).
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
    var rotateWait = 1.0
    var maxLineBytes = LineBuffer.defaultMaxLength
    var skipLongLines = false
}

let synopsis = """
    usage: ruv-tail [-n N | -n +K] [--state DIR [--save-interval S]] [--poll]
                    [--rotate-wait S] [--max-line-bytes N] [--skip-long-lines] FILE

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
      --rotate-wait S   read a file renamed away from the name until it has been quiet
                        for S seconds (default 1): lines its writer appends before it
                        reopens the name are not lost, and the read is bounded
      --max-line-bytes N
                        the longest line accepted, in bytes (default 1048576); a longer
                        one stops ruv-tail (exit 1) after the lines before it
      --skip-long-lines leave out a line longer than the limit (its bytes are named on
                        standard error) and go on
      -h, --help        print this help and exit

    A directory, FIFO, socket or device at the name, or a file that may not be read,
    is said on standard error and waited on, as `tail -F` does.

    Exits 0 on SIGINT or SIGTERM, 1 on a read error, a line too long or a closed
    standard output (SIGPIPE when its reader went away), 2 for a bad command line.

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
        } else if argument == "--rotate-wait" || argument.hasPrefix("--rotate-wait=") {
            let text: String
            if argument == "--rotate-wait" {
                guard index < arguments.count else { usage("option '--rotate-wait' requires an argument") }
                text = arguments[index]
                index += 1
            } else {
                text = String(argument.dropFirst("--rotate-wait=".count))
            }
            guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
                usage("invalid --rotate-wait: '\(text)' (a number of seconds, at least 0)")
            }
            options.rotateWait = seconds
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
                outputGone(errno)  // EPIPE with SIGPIPE ignored, EIO, ...
            }
        }
    }
}

func say(_ text: String) {
    let line = "ruv-tail: \(text)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

/// Standard output failed (`code`) or its reader went away: said (unless the reader is
/// gone, as GNU tail stays quiet then), and ruv-tail ends with SIGPIPE's default action,
/// or exit 1 when SIGPIPE is ignored.
func outputGone(_ code: Int32) -> Never {
    if code != EPIPE { say("standard output: \(String(cString: strerror(code)))") }
    if code == EPIPE { raise(SIGPIPE) }  // ignored (a shell's `trap '' PIPE`): exit 1, as GNU tail
    exit(1)
}

// Before anything opens a descriptor (which could become descriptor 1): a closed standard
// output is an error now, not lines written into the first file opened.
if fcntl(1, F_GETFL) < 0 && errno == EBADF { outputGone(EBADF) }

let options = parse(Array(CommandLine.arguments.dropFirst()))

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
tailOptions.rotationQuietPeriod = options.rotateWait
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

// Standard output's reader going away while nothing is written (a pipe's reading end
// closed: `ruv-tail f | head -n2` once head is done) shows as an error on the descriptor
// (EPOLLERR, reported whatever is asked); a socket's peer hanging up as a disconnect.
// Descriptors epoll cannot watch (a regular file, /dev/null: EPERM) need no watching.
let outputWatch = Descriptor.readiness(1, events: .disconnect).subscribe(
    next: { _ in
        lines.dispose()
        saveState(store)
        outputGone(EPIPE)
    },
    error: { error in
        guard let error = error as? UVError, error.name != "EPERM" else { return }
        lines.dispose()
        saveState(store)
        outputGone(error.name == "EBADF" ? EPIPE : -error.code)
    })

let stop = UnixSignal.signal(SIGINT).merge(UnixSignal.signal(SIGTERM)).take(1).subscribeNext { _ in
    output.flush()
    lines.dispose()
    saveState(store)
    exit(0)
}

EventLoop.main.run()
