import Glibc
import ReactiveUV

// Fuzz target: the library's checkpoint file reader, through its public door — the input
// is written as `tail-checkpoints` in a state directory and `TailCheckpointStore(directory:)`
// opens it, as a restarted `ruv-tail` or logcast edge does with whatever is on disk. It must
// either refuse the file with an error or load positions that can be asked about.

/// One state directory for the whole run (made once; the file in it is rewritten per input).
let stateDirectory: String = {
    var template = Array("/tmp/ruv-fuzz-checkpoint-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCheckpoint(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let path = stateDirectory + "/tail-checkpoints"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0, "cannot write \(path)")
    var written = 0
    while written < size {
        let n = write(fd, data + written, size - written)
        precondition(n > 0, "cannot write \(path)")
        written += n
    }
    close(fd)
    guard let store = try? TailCheckpointStore(directory: stateDirectory) else { return 0 }
    for checkpoint in store.checkpoints {
        _ = store.offset(for: checkpoint.identity)
        _ = store.truncations(for: checkpoint.identity)
        _ = store.copyOrigin(of: checkpoint.identity)
        // A position is a byte offset into a file: a negative one is a corrupt file that
        // should have been refused, not a place a tail can resume from.
        precondition(checkpoint.offset >= 0, "a negative offset loaded: \(checkpoint.offset)")
        precondition(checkpoint.finalOffset.map { $0 >= 0 } ?? true, "a negative final offset loaded")
    }
    return 0
}
