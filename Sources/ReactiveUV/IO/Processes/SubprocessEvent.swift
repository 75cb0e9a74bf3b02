/// What a running ``Subprocess`` reports: output chunks as they come, then how it ended.
///
/// The grammar of ``Subprocess/run(_:environment:currentDirectory:input:killGracePeriod:on:)``
/// is `(stdout | stderr)* exit completed`: chunks of both streams interleaved in the order
/// they were read, then exactly one `exit`, sent once the process has exited **and** both
/// of its output streams have ended, then completion.
public enum SubprocessEvent: Sendable, Equatable, CustomStringConvertible {
    /// A chunk of the child's standard output (fd 1), as read: not a line.
    case stdout([UInt8])
    /// A chunk of the child's standard error (fd 2), as read.
    case stderr([UInt8])
    /// The child ended: its exit status, or the signal that killed it.
    case exit(SubprocessExit)

    /// `stdout("a\n")`, `stderr("err\n")`, `exit(status 3)`.
    public var description: String {
        switch self {
        case .stdout(let bytes): return "stdout(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .stderr(let bytes): return "stderr(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .exit(let exit): return "exit(\(exit))"
        }
    }
}

/// How a child process ended.
public struct SubprocessExit: Sendable, Equatable, CustomStringConvertible {
    /// The exit status (`exit(3)` gives 3); 0 when a signal ended the process.
    public let status: Int
    /// The signal that ended the process (`SIGTERM` is 15), or `nil` when it exited.
    public let signal: Int32?

    /// Creates a description of an ending.
    ///
    /// - Parameters:
    ///   - status: the exit status.
    ///   - signal: the terminating signal, or `nil`.
    public init(status: Int, signal: Int32? = nil) {
        self.status = status
        self.signal = signal
    }

    /// Whether the process exited with status 0 and no signal.
    public var succeeded: Bool { status == 0 && signal == nil }

    /// `status 3` or `signal 15`.
    public var description: String {
        if let signal { return "signal \(signal)" }
        return "status \(status)"
    }
}

extension Signal where Value == SubprocessEvent {
    /// The child's standard output chunks only; completes when the process has ended
    /// (whatever its status); errors pass through. Events arrive on the process's loop.
    ///
    /// - Returns: a signal of chunks; subscribing runs the process (the signal is cold).
    public func stdout() -> Signal<[UInt8]> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            source.attach({ event in
                switch event {
                case .next(.stdout(let bytes)): observer(.next(bytes))
                case .next: break
                case .error(let error): observer(.error(error))
                case .completed: observer(.completed)
                }
            }, lifetime)
        }
    }

    /// The child's standard error chunks only (see ``stdout()``).
    ///
    /// - Returns: a signal of chunks; subscribing runs the process.
    public func stderr() -> Signal<[UInt8]> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            source.attach({ event in
                switch event {
                case .next(.stderr(let bytes)): observer(.next(bytes))
                case .next: break
                case .error(let error): observer(.error(error))
                case .completed: observer(.completed)
                }
            }, lifetime)
        }
    }

    /// The child's ending only: one value, then completion.
    ///
    /// - Returns: a signal of one ``SubprocessExit``; subscribing runs the process.
    public func exitStatus() -> Signal<SubprocessExit> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            source.attach({ event in
                switch event {
                case .next(.exit(let exit)): observer(.next(exit))
                case .next: break
                case .error(let error): observer(.error(error))
                case .completed: observer(.completed)
                }
            }, lifetime)
        }
    }
}
