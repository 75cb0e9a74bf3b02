import Glibc
import LogcastScan
import ReactiveUV

/// Turns clients' `GREP` patterns into the one ``FilterSet`` the fan-out scans with,
/// compiling off the main loop so that no pattern can stall it.
///
/// ```
/// GREP p ──► request(p) ──► known and compiled? answer now
///                      └──► waiting ──► batch (one in flight) ──► compile thread:
///                                         check each new pattern alone, then build
///                                         one database of every live pattern
///           install(set) ◄── main loop ◄──┘   (a watchdog gives up after `timeLimit`)
/// ```
/// A client keeps its old filter until its new one is in an installed set (the answer to
/// `request` switches it). Requests that arrive while a batch compiles wait for the next
/// batch, so any number of `GREP`s costs a bounded number of compiles. Patterns no client
/// uses any more are left out of the next set.
///
/// Compiles run on threads of their own (plain pthreads at nice 10), not on libuv's pool —
/// a compile that takes seconds must not hold up file reads, which use that pool — and not
/// on a serial background scheduler, where a batch given up by the watchdog would delay
/// every batch after it. At most ``maxAbandoned`` given-up compiles may still be running;
/// past that new batches wait for one to end.
final class FilterCompiler: @unchecked Sendable {
    // Main loop only (the compile thread sees only the batch it is given and hands its
    // result back with EventLoop.main.execute).

    typealias Completion = (Result<PatternID, FilterSet.Refusal>) -> Void

    /// The installed set; `nil` when no client filters.
    private(set) var current: FilterSet?
    /// Told when a new set is installed.
    var onInstall: (FilterSet?) -> Void = { _ in }
    /// How long one batch may compile before its patterns are refused.
    let timeLimit: Double
    /// The longest pattern accepted, in bytes.
    let maxPatternLength: Int

    private var ids: [String: PatternID] = [:]
    private var texts: [PatternID: String] = [:]
    private var users: [PatternID: Int] = [:]
    private var nextID: PatternID = 1
    private var refused: [String: FilterSet.Refusal] = [:]
    private var waiting: [(text: String, completion: Completion)] = []
    private var inFlight: Batch?
    /// The watchdog timer of `inFlight`, cancelled when it finishes: a timer left pending
    /// kept the loop alive for `timeLimit` after a GREP, so logcast took that long to exit
    /// on SIGTERM (its last `run()` waits for every timer).
    private var watchdog: Disposable?
    /// The live set no longer matches `users` (a pattern was dropped).
    private var stale = false
    private var abandoned = 0
    /// Completions are running: the next batch starts after the last of them.
    private var delivering = false
    /// Shut down (``stop()``): nothing is compiled any more.
    private var stopped = false
    static let maxAbandoned = 2
    /// How many batches were compiled (for tests through STATS).
    private(set) var compiles = 0

    init(timeLimit: Double, maxPatternLength: Int) {
        self.timeLimit = timeLimit
        self.maxPatternLength = maxPatternLength
    }

    /// One compile: the new patterns it checks and the set it builds.
    final class Batch: @unchecked Sendable {
        // Written by the compile thread before it hands the batch back, read after.
        let newPatterns: [(id: PatternID, text: String, completions: [Completion])]
        let live: [(id: PatternID, text: String)]
        var refusals: [PatternID: FilterSet.Refusal] = [:]
        var set: Result<FilterSet, FilterSet.Refusal>?
        var givenUp = false

        init(newPatterns: [(id: PatternID, text: String, completions: [Completion])], live: [(id: PatternID, text: String)]) {
            self.newPatterns = newPatterns
            self.live = live
        }

        /// Runs on the compile thread.
        func compile() {
            var accepted = live
            for pattern in newPatterns {
                if let refusal = FilterSet.check(pattern.text) {
                    refusals[pattern.id] = refusal
                } else {
                    accepted.append((pattern.id, pattern.text))
                }
            }
            if !accepted.isEmpty { set = FilterSet.compile(accepted) }
        }
    }

    /// Asks for `text` as a filter; `completion` runs on the main loop with its id (already
    /// retained for the caller: give it back with ``release(_:)``) or why it was refused.
    /// It may run before this returns.
    func request(_ text: String, completion: @escaping Completion) {
        if text.utf8.count > maxPatternLength {
            completion(.failure(.tooLarge("\(text.utf8.count) bytes (limit \(maxPatternLength))")))
            return
        }
        if let refusal = refused[text] {
            completion(.failure(refusal))
            return
        }
        if let id = ids[text], let current, current.patterns.contains(id) {
            users[id, default: 0] += 1
            completion(.success(id))
            return
        }
        waiting.append((text, completion))
        startIfIdle()
    }

    /// Stops compiling, for shutdown: the batch in flight is given up (its thread runs on,
    /// detached, and its result is dropped), its watchdog and every waiting request are
    /// forgotten, and no batch starts again. Without this the pending watchdog kept the
    /// loop, and so the exit, waiting for up to `timeLimit` after SIGTERM (issue 30).
    func stop() {
        stopped = true
        watchdog?.dispose()
        watchdog = nil
        inFlight?.givenUp = true
        inFlight = nil
        waiting = []
    }

    /// A client stopped using `id`.
    func release(_ id: PatternID) {
        guard let count = users[id] else { return }
        if count > 1 {
            users[id] = count - 1
            return
        }
        users[id] = nil
        if let text = texts.removeValue(forKey: id) { ids[text] = nil }
        stale = true
        startIfIdle()
    }

    private func startIfIdle() {
        guard !stopped, !delivering, inFlight == nil, abandoned < Self.maxAbandoned, !waiting.isEmpty || stale else { return }
        stale = false
        // New texts in request order, each once, with every completion waiting for it.
        var order: [String] = []
        var byText: [String: [Completion]] = [:]
        for (text, completion) in waiting {
            if byText[text] == nil { order.append(text) }
            byText[text, default: []].append(completion)
        }
        waiting = []
        var newPatterns: [(id: PatternID, text: String, completions: [Completion])] = []
        for text in order {
            let id: PatternID
            if let known = ids[text] { id = known } else {
                id = nextID
                nextID += 1
                ids[text] = id
                texts[id] = text
            }
            newPatterns.append((id, text, byText[text]!))
        }
        let newIDs = Set(newPatterns.map(\.id))
        let live = users.keys.filter { !newIDs.contains($0) }.compactMap { id in texts[id].map { (id, $0) } }
        if newPatterns.isEmpty && live.isEmpty {
            install(nil)
            return
        }
        let batch = Batch(newPatterns: newPatterns, live: live)
        inFlight = batch
        compiles += 1
        let started = CompileThread.start {
            batch.compile()
            EventLoop.main.execute { [weak self] in self?.finished(batch) }
        }
        guard started else {
            finished(batch, failure: .tooLarge("cannot start a compile thread"))
            return
        }
        watchdog = Scheduler.main.afterDelay(timeLimit) { [weak self] in self?.giveUp(batch) }
    }

    /// The watchdog: the batch took too long. Its new patterns are refused (and remembered
    /// as refused when it held just one); its thread runs on, and its result is dropped.
    private func giveUp(_ batch: Batch) {
        guard inFlight === batch else { return }
        batch.givenUp = true
        inFlight = nil
        watchdog = nil
        abandoned += 1
        let seconds = timeLimit == timeLimit.rounded() ? "\(Int(timeLimit))" : "\(timeLimit)"
        let others = batch.newPatterns.count - 1
        let why = FilterSet.Refusal.tooLarge(
            "compiling took longer than \(seconds)s" + (others > 0 ? " (compiled together with \(others) other new pattern(s))" : ""))
        if others == 0, let only = batch.newPatterns.first { remember(only.text, why) }
        for pattern in batch.newPatterns {
            forget(pattern.id)
            for completion in pattern.completions { completion(.failure(why)) }
        }
        stale = true
        startIfIdle()
    }

    private func finished(_ batch: Batch, failure: FilterSet.Refusal? = nil) {
        if batch.givenUp {
            abandoned -= 1
            startIfIdle()
            return
        }
        guard inFlight === batch else { return }
        inFlight = nil
        watchdog?.dispose()
        watchdog = nil
        var refusals = batch.refusals
        switch batch.set {
        case .success(let set)?:
            install(set)
        case .failure(let refusal)?:
            // Every pattern passed alone but not together (the combined database is too
            // large): refuse the new ones and keep the installed set.
            for pattern in batch.newPatterns where refusals[pattern.id] == nil { refusals[pattern.id] = refusal }
        case nil:
            if let failure {
                for pattern in batch.newPatterns { refusals[pattern.id] = failure }
            } else if batch.live.isEmpty {
                install(nil)
            }
        }
        // Every accepted pattern is held before any completion runs: a completion releases
        // the client's previous pattern, and the batch that release starts must still see
        // every pattern of this one as live.
        for pattern in batch.newPatterns {
            if let refusal = refusals[pattern.id] {
                remember(pattern.text, refusal)
                forget(pattern.id)
            } else {
                users[pattern.id, default: 0] += pattern.completions.count
            }
        }
        delivering = true
        for pattern in batch.newPatterns {
            let result: Result<PatternID, FilterSet.Refusal> = refusals[pattern.id].map { .failure($0) } ?? .success(pattern.id)
            for completion in pattern.completions { completion(result) }
        }
        delivering = false
        startIfIdle()
    }

    private func install(_ set: FilterSet?) {
        current = set
        onInstall(set)
    }

    /// Drops a pattern's id if no client holds it.
    private func forget(_ id: PatternID) {
        guard users[id] == nil, let text = texts.removeValue(forKey: id) else { return }
        ids[text] = nil
    }

    private func remember(_ text: String, _ refusal: FilterSet.Refusal) {
        if refused.count >= 1024 { refused.removeAll() }
        refused[text] = refusal
    }
}

/// A detached pthread running one closure at nice 10 (the compile must not compete with the
/// loop for the processor).
enum CompileThread {
    final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `body` on a new thread; false when no thread could be made.
    static func start(_ body: @escaping () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { context in
            _ = lcs_thread_set_nice(10)
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            body.run()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}
