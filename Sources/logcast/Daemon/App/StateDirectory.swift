import ArgumentParser
import Glibc
import ReactiveUV

/// Opens the positions kept in `--state-dir`, turning a failure into the daemon's own
/// start-up error (`logcast: error: --state-dir …`, exit 1).
///
/// Why not let the store's error through: ArgumentParser prints an error thrown from
/// `run()` as `Error: …`, without the option the user has to fix, and the store's message
/// quotes the first line of a state file that is not ours — raw bytes of whatever file
/// is there, escape sequences included, straight to the terminal (issue 30, item 6).
enum StateDirectory {
    /// The store in `directory`, or a said error and `ExitCode.failure`.
    ///
    /// - Parameter directory: the `--state-dir` value (or its default).
    /// - Returns: the opened store.
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    static func open(_ directory: String) throws -> TailCheckpointStore {
        do {
            return try TailCheckpointStore(directory: directory)
        } catch {
            Output.err("logcast: error: --state-dir \(printable(directory)): cannot use the positions kept there: \(printable(String(describing: error)))\n")
            throw ExitCode.failure
        }
    }

    /// `text` safe for a terminal: control characters, DEL and non-ASCII scalars escaped
    /// (`\u{1B}`), at most 300 characters (a corrupt file's "first line" may be megabytes).
    ///
    /// - Parameter text: anything that may hold bytes read from a file.
    /// - Returns: printable ASCII.
    static func printable(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if result.count >= 300 {
                result += "…"
                break
            }
            if scalar.value >= 0x20 && scalar.value < 0x7F {
                result.unicodeScalars.append(scalar)
            } else {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return result
    }
}

/// Plain mode's kept positions (`--state-dir` without `--publish`): what each file has
/// been read up to, so a restarted logcast resumes where it stopped, as rsyslog's imfile
/// does, instead of at the files' ends.
///
/// A position is acknowledged once its lines are in the fan-out (logcast's clients are
/// live: lines nobody is connected for are not held), saved every second and at exit.
/// After SIGKILL at most the last second's lines are read again; none is lost.
///
/// Lines written while logcast was down are read when the followers start, and the
/// followers start when the first client connects: so that client, not nobody, gets them.
final class PlainPositions {
    // Main loop only (the store has its own lock).
    let store: TailCheckpointStore
    private var saving: Disposable?
    private let onError: (String) -> Void

    init(store: TailCheckpointStore, onError: @escaping (String) -> Void) {
        self.store = store
        self.onError = onError
    }

    /// Saves now and every second from now on.
    func start() {
        save()
        saving = Signal.interval(1, on: Scheduler.main).subscribeNext { [weak self] _ in self?.save() }
    }

    /// Saves what is acknowledged; a failure is logged and retried at the next save.
    func save() {
        do { try store.save() } catch { onError("cannot save positions in \(store.directory): \(error)") }
    }

    /// Stops the timer after a last save.
    func stop() {
        saving?.dispose()
        saving = nil
        save()
    }
}
