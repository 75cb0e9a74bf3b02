import Glibc

/// Writes straight to a file descriptor (Swift 6 forbids touching C's `stdout`/`stderr`
/// globals; the descriptors need no shared state). `print` is not used for the lines tests
/// wait for, so they are never stuck in a buffer.
enum Output {
    static func out(_ text: String) { write(fd: 1, text) }
    static func err(_ text: String) { write(fd: 2, text) }

    static func write(fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n > 0 { done += n } else if n < 0 && errno == EINTR { continue } else { return }
        }
        bytes.removeAll()
    }
}
