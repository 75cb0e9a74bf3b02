import Glibc

/// The standard `process_*` metrics of Prometheus's client libraries, read from /proc for
/// this process: resident memory, open descriptors, start time and CPU seconds.
enum ProcessMetrics {
    /// Adds the process metrics that could be read (one missing from /proc is left out
    /// rather than reported as 0).
    static func add(to out: inout MetricsText) {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        if let stat = readFile("/proc/self/stat"), let paren = stat.lastIndex(of: ")") {
            // Fields after the command's closing parenthesis, from field 3 (state) on: the
            // command may hold spaces and parentheses, so it is skipped whole.
            let fields = stat[stat.index(after: paren)...].split(separator: " ")
            func field(_ n: Int) -> Double? { n - 3 < fields.count ? Double(fields[n - 3]) : nil }
            if let utime = field(14), let stime = field(15), ticks > 0 {
                out.add("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", (utime + stime) / ticks)
            }
            if let start = field(22), ticks > 0, let boot = bootTime() {
                out.add("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", boot + start / ticks)
            }
            if let rss = field(24) {
                out.add("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss * page)
            }
            if let vsize = field(23) {
                out.add("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", vsize)
            }
        }
        if let fds = countEntries("/proc/self/fd") {
            out.add("process_open_fds", "gauge", "Number of open file descriptors.", Double(fds))
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max {
            out.add("process_max_fds", "gauge", "Maximum number of open file descriptors.", Double(limit.rlim_cur))
        }
    }

    /// The boot time (`btime` of /proc/stat), seconds since the epoch.
    static func bootTime() -> Double? {
        guard let text = readFile("/proc/stat") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).drop(while: { $0 == " " }))
        }
        return nil
    }

    /// A small /proc file's text (at most 64 KiB), or nil.
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: 65536)
        var used = 0
        while used < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + used, $0.count - used) }
            if n <= 0 { break }
            used += n
        }
        return String(decoding: bytes[..<used], as: UTF8.self)
    }

    /// The entries of a directory, but `.` and `..` (the one opendir holds included: it is
    /// open while counting, as Prometheus's Go client counts it too).
    static func countEntries(_ path: String) -> Int? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var n = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { n += 1 }
        }
        return n
    }
}
