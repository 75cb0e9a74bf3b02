import ArgumentParser

/// `--glob-max-files`: how many files one FILE pattern may follow (``GlobFollower``).
struct GlobOptions: ParsableArguments {
    @Option(name: .customLong("glob-max-files"), help: ArgumentHelp("The most files one FILE pattern follows at once (1...1048576); matching files beyond it are named in a warning and followed as others go away.", valueName: "count"))
    var maxFiles: Int = 1024

    func validate() throws {
        guard (1...(1 << 20)).contains(maxFiles) else {
            throw ValidationError("--glob-max-files must be in 1...1048576 (files), got \(maxFiles)")
        }
    }

    /// Splits the FILE arguments into files named as they are and patterns (``GlobPattern/isPattern(_:)``).
    ///
    /// - Parameter arguments: the FILE arguments.
    /// - Returns: the plain paths and the parsed patterns.
    /// - Throws: a `ValidationError` naming a pattern that cannot be followed.
    static func split(_ arguments: [String]) throws -> (files: [String], patterns: [GlobPattern]) {
        var files: [String] = []
        var patterns: [GlobPattern] = []
        for argument in arguments {
            guard GlobPattern.isPattern(argument) else {
                files.append(argument)
                continue
            }
            switch GlobPattern.parse(argument) {
            case .success(let pattern): patterns.append(pattern)
            case .failure(let error): throw ValidationError(error.description)
            }
        }
        return (files, patterns)
    }
}
