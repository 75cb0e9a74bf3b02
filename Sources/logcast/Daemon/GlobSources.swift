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
    func startGlobs() {
        for glob in globs {
            liveSources += 1
            glob.start()
            running += Disposable { [glob] in glob.stop() }
        }
    }
}
