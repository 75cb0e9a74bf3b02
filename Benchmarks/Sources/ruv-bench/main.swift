// ruv-bench: ReactiveUV against OpenCombine and hand-written closures.
//
//     swift run -c release --package-path Benchmarks ruv-bench [--rows a,b] [--runs N]
//
// Prints, per row, ns per event (the median of N timed runs after one warm-up run) as a
// Markdown table on standard output; progress goes to standard error.

import CNetBench

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The C echo server runs in a child process of its own, like ruv-echo: this executable
// re-run as `ruv-bench --serve-c-echo` (see Rows/Echo.swift).
if CommandLine.arguments.dropFirst().first == "--serve-c-echo" {
    exit(cnb_echo_server_run("127.0.0.1", 0) == 0 ? 0 : 1)
}

let options: Options
switch Options.parse(Array(CommandLine.arguments.dropFirst())) {
case .run(let o):
    options = o
case .exit(let message, let status):
    if status == 0 { print(message) } else { printError(message) }
    exit(status)
}

#if DEBUG
printError("warning: this is a debug build; the numbers mean nothing. Use: swift run -c release ...")
#endif

let selected = options.rows.isEmpty ? Row.all : Row.all.filter { options.rows.contains($0.name) }
if selected.contains(where: { $0.name.hasPrefix("echo") }) {
    EchoServer.ruvEchoPath = options.ruvEcho ?? locateRuvEcho()
    if options.pin {
        let last = Int32(onlineCoreCount() - 1)
        guard last > 0, cnb_pin_to_cpu(0, last) == 0 else {
            printError("ruv-bench: --pin needs two CPUs or more and the right to pin (errno \(errno))")
            exit(1)
        }
        EchoServer.pinnedCPU = 0
    }
}
let runner = Runner(options: options)
var results: [RowResult] = []
for row in selected {
    printError("running \(row.name) (n = \(row.size(scaledBy: options.scale)), \(options.runs) runs)...")
    results.append(runner.run(row))
}

print("cores: \(onlineCoreCount())" + (cpuModelName().map { " (\($0))" } ?? ""))
print("ns per event, median of \(options.runs) run\(options.runs == 1 ? "" : "s") after one warm-up run"
    + (options.scale == 1 ? "" : ", sizes scaled by \(options.scale)"))
print("")
printTable(results)
printRates(results)
printServerCPU(results)
printAllocations(results)
EchoServer.stopAll()
