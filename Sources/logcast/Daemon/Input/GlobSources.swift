import ReactiveUV

/// The FILE patterns of a server (``GlobFollower``), started with its files.
extension LogcastServer {
    /// Makes one follower per pattern; they start with the files (``startGlobs()``).
    ///
    /// - Parameters:
    ///   - patterns: the FILE patterns.
    ///   - maxFiles: `--glob-max-files`.
    func addGlobs(_ patterns: [GlobPattern], maxFiles: Int) {
        let registry = GlobRegistry()
        let named = Set(config.files)
        for pattern in patterns {
            globs.append(GlobFollower(
                pattern: pattern, maxFiles: maxFiles, named: named, registry: registry, logger: logger
            ) { [weak self] path, start, notices, ended in
                self?.startFile(path, from: start, onNotice: notices, ended: ended) ?? Disposable {}
            })
        }
    }

    /// Starts every pattern's scans. A pattern is a source that never ends (it waits for
    /// files as a missing FILE does), so it counts once among the live sources.
    ///
    /// With kept positions (`--state-dir`) the store resumes the files it knows; a file it
    /// does not know, found when logcast restarts (the store holds positions), appeared
    /// while logcast was down: it is read from its start, as a file that appears while
    /// logcast runs is. On a first start (nothing kept) files start at their end.
    func startGlobs() {
        if let store = positions?.store {
            let known = Set(store.checkpoints.map { GlobFileKey(device: $0.identity.device, inode: $0.identity.inode) })
            for glob in globs where !known.isEmpty {
                glob.firstStart = { known.contains($0) ? .end : .beginning }
            }
        }
        for glob in globs {
            liveSources += 1
            glob.start()
            running += Disposable { [glob] in glob.stop() }
        }
    }
}
