import CLibUV
import CSystemShims
import Glibc

/// Child processes as signals (`uv_spawn`).
public enum Subprocess {
    /// Runs a program when subscribed and reports its output and its end as
    /// ``SubprocessEvent``s: `(stdout | stderr)* exit completed`.
    ///
    /// `arguments[0]` is the program, looked up in `PATH` like `execvp`; the rest are its
    /// arguments, passed as they are (no shell). Its standard output and error are pipes
    /// read as they fill; its standard input is `input`'s chunks, written with the same
    /// backpressure as a connection's ``StreamConnection/send(_:)`` and closed (end of
    /// file for the child) when `input` completes, or `/dev/null` when `input` is `nil`. A
    /// child that stops reading its input early (`EPIPE`) is not an error. Reads that can
    /// wait (``File/read(_:chunkSize:on:)``, a connection's or pipe's `reads`) wait while
    /// the child is behind, so an input of any size goes through; an input that cannot
    /// (`Signal.fromArray`, a subject) may run up to 4 MiB ahead of the child, and past that
    /// the run fails with ``WriteQueueFullError`` and the child is ended.
    ///
    /// The `exit` event comes once the process has exited **and** both output pipes have
    /// ended (a background grandchild holding them open delays it). A non-zero status is a
    /// value, not an error: the signal fails only when the program cannot be started
    /// (`ENOENT`, `EACCES`: ``UVError`` with operation `spawn` and the program as target)
    /// or reading its output fails.
    ///
    /// Disposing (from any thread) closes the pipes at once and ends the child: `SIGTERM`,
    /// then `SIGKILL` if it is still running after `killGracePeriod` seconds. The process
    /// handle stays open until the child has been reaped, so no zombie is left; nothing is
    /// delivered after the dispose. Events arrive on the loop's thread.
    ///
    /// ```swift
    /// Subprocess.run(["/bin/sh", "-c", "echo hi; exit 3"])
    ///     .subscribeNext { print($0) }   // stdout("hi\n"), exit(status 3)
    /// ```
    ///
    /// - Parameters:
    ///   - arguments: the program and its arguments; must not be empty or contain NUL bytes.
    ///   - environment: the child's whole environment, or `nil` to inherit ours.
    ///   - currentDirectory: the child's working directory, or `nil` for ours.
    ///   - input: the bytes for the child's standard input, or `nil` for `/dev/null`.
    ///   - killGracePeriod: seconds between `SIGTERM` and `SIGKILL` after a dispose.
    ///   - requestedLoop: the loop to run on; `nil` for the subscribing thread's loop when it is a loop
    ///     thread, else ``EventLoop/main``.
    /// - Returns: a cold signal: each subscription runs the program once.
    public static func run(
        _ arguments: [String], environment: [String: String]? = nil, currentDirectory: String? = nil,
        input: Signal<[UInt8]>? = nil, killGracePeriod: Double = 2, on requestedLoop: EventLoop? = nil
    ) -> Signal<SubprocessEvent> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "spawn", target: arguments.first) {
                let run = SubprocessRun(
                    loop: loop, target: arguments.first ?? "", killGracePeriod: killGracePeriod,
                    observer: observer, lifetime: lifetime)
                run.start(arguments: arguments, environment: environment, currentDirectory: currentDirectory, input: input)
            }
        }
    }
}

/// One running child: its process handle, its pipes, and what is left before `exit` can be
/// sent. Loop thread only.
///
/// The process handle is a ``UVHandle`` that keeps this object alive until its close
/// callback, which runs only after the child was reaped (the exit callback) or at loop
/// shutdown (after `SIGKILL` and `waitpid`).
final class SubprocessRun: @unchecked Sendable {
    // Thread-safety: loop thread only; the disposal hops there.
    let loop: EventLoop
    /// The program, for errors.
    let target: String
    let killGracePeriod: Double
    let observer: Sink<SubprocessEvent>
    let lifetime: CompoundDisposable

    var process: UVHandle<uv_process_t>?
    var pid: Int32 = 0
    var stdinPipe: UVStream?
    var outputPipes: [UVStream] = []
    /// Output pipes that have not reached end of file.
    var openOutputs = 0
    var exit: SubprocessExit?
    /// Set once `exit` was sent, or the subscription failed or was disposed.
    var finished = false
    var killTimer: Disposable?

    init(
        loop: EventLoop, target: String, killGracePeriod: Double,
        observer: @escaping Sink<SubprocessEvent>, lifetime: CompoundDisposable
    ) {
        self.loop = loop
        self.target = target
        self.killGracePeriod = killGracePeriod
        self.observer = observer
        self.lifetime = lifetime
    }

    func start(arguments: [String], environment: [String: String]?, currentDirectory: String?, input: Signal<[UInt8]>?) {
        guard !arguments.isEmpty, !arguments.contains(where: { $0.utf8.contains(0) }),
            !(currentDirectory?.utf8.contains(0) ?? false)
        else {
            fail(UVError(code: UV_EINVAL.rawValue, operation: "spawn (empty command or NUL byte)", target: target))
            return
        }
        let environmentList = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        if let environmentList, environmentList.contains(where: { $0.utf8.contains(0) }) {
            fail(UVError(code: UV_EINVAL.rawValue, operation: "spawn (NUL byte in environment)", target: target))
            return
        }

        // The pipes: uv_pipe_init cannot fail.
        func makePipe(_ name: String) -> UVStream? {
            try? UVStream(loop: loop, type: UV_NAMED_PIPE, target: "\(target) \(name)", operation: "spawn") {
                uv_pipe_init(loop.uvLoop, uvCast($0), 0)
            }
        }
        guard let stdoutPipe = makePipe("stdout"), let stderrPipe = makePipe("stderr") else {
            fail(UVError(code: UV_ENOMEM.rawValue, operation: "spawn", target: target))
            return
        }
        outputPipes = [stdoutPipe, stderrPipe]
        if input != nil { stdinPipe = makePipe("stdin") }

        var stdio = [uv_stdio_container_t](repeating: uv_stdio_container_t(), count: 3)
        if let stdinPipe {
            stdio[0].flags = uv_stdio_flags(rawValue: UV_CREATE_PIPE.rawValue | UV_READABLE_PIPE.rawValue)
            stdio[0].data.stream = stdinPipe.uvStream
        } else {
            stdio[0].flags = UV_IGNORE  // libuv opens /dev/null for 0–2
        }
        for (index, pipe) in outputPipes.enumerated() {
            stdio[index + 1].flags = uv_stdio_flags(rawValue: UV_CREATE_PIPE.rawValue | UV_WRITABLE_PIPE.rawValue)
            stdio[index + 1].data.stream = pipe.uvStream
        }

        // Only needed while uv_spawn runs: it forks and execs before returning.
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var cEnvironment: [UnsafeMutablePointer<CChar>?]? = environmentList.map { $0.map { strdup($0) } + [nil] }
        let cDirectory = currentDirectory.map { strdup($0) }
        defer {
            cArguments.forEach { free($0) }
            cEnvironment?.forEach { free($0) }
            cDirectory.map { free($0) }
        }
        func spawn(_ process: UnsafeMutablePointer<uv_process_t>) -> Int32 {
            cArguments.withUnsafeMutableBufferPointer { argv in
            stdio.withUnsafeMutableBufferPointer { stdioBuffer in
                var options = uv_process_options_t()
                options.exit_cb = { process, status, signal in
                    guard let process else { return }
                    UVHandleCore.owner(of: process, as: SubprocessRun.self).exited(status: status, signal: signal)
                }
                options.file = UnsafePointer(argv[0])
                options.args = argv.baseAddress
                options.cwd = cDirectory.map { UnsafePointer($0) } ?? nil
                options.stdio_count = 3
                options.stdio = stdioBuffer.baseAddress
                if cEnvironment != nil {
                    return cEnvironment!.withUnsafeMutableBufferPointer { envp in
                        options.env = envp.baseAddress
                        return uv_spawn(loop.uvLoop, process, &options)
                    }
                }
                return uv_spawn(loop.uvLoop, process, &options)
            }
            }
        }
        let process: UVHandle<uv_process_t>
        do {
            // Even a failed spawn leaves an initialized handle that must be closed.
            process = try UVHandle(
                loop: loop, type: UV_PROCESS, operation: "spawn", target: target, initializedOnFailure: true, initialize: spawn)
        } catch {
            fail(error)
            return
        }
        loop.noteWatcherStarted()  // the child's pipes
        self.process = process
        process.owner = self
        process.onLoopShutdown = { [unowned self] in shutDownForLoopClose() }
        pid = process.pointer.pointee.pid
        lifetime.add(Disposable { [self] in loop.perform { self.cancel() } })

        openOutputs = outputPipes.count
        for (index, pipe) in outputPipes.enumerated() {
            let isStdout = index == 0
            let part = lifetime.child()
            pipe.readSignal().attach({ [self] event in
                guard !finished else { return }
                switch event {
                case .next(let bytes): observer(.next(isStdout ? .stdout(bytes) : .stderr(bytes)))
                case .completed:
                    openOutputs -= 1
                    pipe.close()
                    finishIfDone()
                case .error(let error): fail(error)
                }
            }, part)
        }
        if let input, let stdinPipe { feed(input, to: stdinPipe) }
    }

    /// Writes `input` to the child's stdin and closes it when `input` completes.
    private func feed(_ input: Signal<[UInt8]>, to pipe: UVStream) {
        pipe.sendSignal(input).attach({ [self] event in
            switch event {
            case .next: break
            case .completed: pipe.close()
            case .error(let error):
                pipe.close()
                // The child closed its input or exited first: its business, not a failure.
                if let error = error as? UVError, error == .brokenPipe || error == .connectionReset { return }
                if let error = error as? UVError, error == .cancelled { return }
                fail(error)
            }
        }, lifetime.child())
    }

    private func exited(status: Int64, signal: Int32) {
        exit = SubprocessExit(status: Int(status), signal: signal == 0 ? nil : signal)
        killTimer?.dispose()
        killTimer = nil
        closeProcess()
        finishIfDone()
    }

    private func finishIfDone() {
        guard !finished, let exit, openOutputs == 0 else { return }
        finished = true
        if !lifetime.isDisposed {
            observer(.next(.exit(exit)))
            if !lifetime.isDisposed { observer(.completed) }
        }
        lifetime.dispose()
    }

    private func fail(_ error: any Error) {
        guard !finished else { return }
        finished = true
        if !lifetime.isDisposed { observer(.error(error)) }
        lifetime.dispose()
        cancel()
    }

    /// The subscription ended early: close the pipes, end the child (loop thread).
    private func cancel() {
        finished = true
        for pipe in outputPipes { pipe.close() }
        stdinPipe?.close()
        guard let process, exit == nil, !process.isClosing, pid != 0 else { return }
        killChild(process, SIGTERM)
        // Between 0 and a day: a negative, NaN or infinite period must not trap.
        let seconds = killGracePeriod.isNaN ? 0 : min(max(0, killGracePeriod), 86_400)
        let grace = UInt64(seconds * 1e9)
        killTimer = loop.scheduleTimer(at: csys_monotonic_ns() + grace, repeatEvery: nil) { [self] in
            killTimer = nil
            if let process = self.process, exit == nil, !process.isClosing {
                killChild(process, SIGKILL)
            }
        }
    }

    /// Sends `signum` to the child. `ESRCH` (it exited and its exit callback is on its way)
    /// is expected; anything else is a failure of the run.
    private func killChild(_ process: UVHandle<uv_process_t>, _ signum: Int32) {
        do {
            try process.check(uv_process_kill(process.pointer, signum), "kill (signal \(signum))")
        } catch UVError.noSuchProcess {
        } catch {
            fail(error)
        }
    }

    private func closeProcess() {
        process?.close { [self] in process = nil }
    }

    /// The loop is closing. Kill a child still running and reap it here, since libuv stops
    /// watching it once its handle is closed.
    private func shutDownForLoopClose() {
        finished = true
        killTimer?.dispose()
        if exit == nil && pid > 0 {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            // Reaped or not, the loop is going: a failure (`ECHILD`) leaves nothing to do.
            _ = try? systemCall("waitpid", on: "pid \(pid)") { waitpid(pid, &status, 0) }
        }
        closeProcess()
    }
}
