import Glibc

// `logcast-bench costs`' web view clients: real headless Chromium pages (Debian's
// `chromium` and `chromium-driver`, driven by Selenium from PyPI, as LogcastWebViewTests
// drive them), kept open across runs by one Python helper so that starting Chromium is
// never inside a measured run.

/// The helper, run as `python3 -u -c <script> <pages>`: one Chromium per page (a page per
/// browser, as three people watching would have), driven by line commands on standard input.
///
/// - `open PORT`: every page loads `http://127.0.0.1:PORT/` and waits for its status to say
///   `live` (the WebSocket is open); answers `READY`.
/// - `wait TEXT TIMEOUT`: waits until every page's last line starts with `TEXT ` (the run's
///   last data line; the page keeps its last 2,000 lines); answers `DONE <seconds per page>
///   <lines shown per page> <dropped per page> <skipped per page>` (seconds from the command,
///   the page's own count of lines received, the lines logcast reported dropped for it, the
///   lines logcast passed over for it as too fast to show: the view sends a page the newest
///   lines a few frames a second, WebViewPacer.swift). The counts are the page's since it
///   loaded (`open`), sync lines included.
/// - `blank`: every page goes to `about:blank` (its WebSocket closes); answers `BLANK`.
/// - `quit`.
///
/// The pages are polled every 20 ms through the driver: browser and driver CPU, not logcast's.
let costsBrowserScript = #"""
import os, sys, time
for v in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(v, None)
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

pages = int(sys.argv[1])
drivers = []
for _ in range(pages):
    opts = Options()
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,900"]:
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    d.set_page_load_timeout(60)
    drivers.append(d)
print("STARTED", flush=True)

LAST = "var l = document.querySelector('#log .line:last-child'); return l ? l.children[1].textContent : '';"
COUNT = ("var c = document.getElementById('count').textContent; var d = document.getElementById('dropped');"
         " var s = document.getElementById('skipped');"
         " return [parseInt(c, 10) || 0, d.hidden ? 0 : (parseInt(d.textContent, 10) || 0), s ? (parseInt(s.dataset.count, 10) || 0) : 0];")

def quit_all():
    for d in drivers:
        try:
            d.quit()
        except Exception:
            pass

try:
    for command in sys.stdin:
        words = command.split()
        if not words:
            continue
        if words[0] == "open":
            for d in drivers:
                d.get("http://127.0.0.1:%s/" % words[1])
            end = time.time() + 60
            while time.time() < end:
                if all(d.execute_script("return document.getElementById('status').dataset.state;") == "live" for d in drivers):
                    break
                time.sleep(0.02)
            else:
                print("FAILED the pages did not go live in 60 s", flush=True)
                continue
            print("READY", flush=True)
        elif words[0] == "wait":
            want, timeout = words[1] + " ", float(words[2])
            start = time.time()
            took = [None] * len(drivers)
            while time.time() < start + timeout and None in took:
                for i, d in enumerate(drivers):
                    if took[i] is None and d.execute_script(LAST).startswith(want):
                        took[i] = time.time() - start
                time.sleep(0.02)
            counts = [d.execute_script(COUNT) for d in drivers]
            if None in took:
                print("FAILED not every page got %s in %s s; shown %r" % (words[1], words[2], counts), flush=True)
                continue
            print("DONE %s %s %s %s" % (",".join("%.3f" % t for t in took), ",".join(str(c[0]) for c in counts),
                                        ",".join(str(c[1]) for c in counts), ",".join(str(c[2]) for c in counts)), flush=True)
        elif words[0] == "blank":
            for d in drivers:
                d.get("about:blank")
            print("BLANK", flush=True)
        elif words[0] == "quit":
            break
finally:
    quit_all()
"""#

/// The Chromium pages of the `costs` runs: one Python helper (``costsBrowserScript``) for
/// the whole benchmark.
final class BrowserPool {
    let pid: pid_t
    let input: Int32
    let output: Int32
    let pages: Int
    private var pending: [UInt8] = []

    /// Starts the helper and waits for its browsers (bounded: 180 s).
    ///
    /// - Parameters:
    ///   - pages: how many Chromium pages.
    ///   - cpu: the CPU the helper, its drivers and browsers are pinned to (`nil`: none).
    ///   - errors: where the helper's standard error goes.
    init(pages: Int, cpu: Int?, errors: String) {
        self.pages = pages
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { fail("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        for fd in toChild + fromChild { posix_spawn_file_actions_addclose(&actions, fd) }
        var argv = ["/usr/bin/env", "python3", "-u", "-c", costsBrowserScript, "\(pages)"]
        if let cpu { argv = ["/usr/bin/taskset", "-c", "\(cpu)"] + argv }
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        var child = pid_t()
        let rc = posix_spawn(&child, argv[0], &actions, nil, cArgs, environ)
        posix_spawn_file_actions_destroy(&actions)
        close(toChild[0])
        close(fromChild[1])
        guard rc == 0 else { fail("cannot start \(argv[0]): error \(rc)") }
        pid = child
        input = toChild[1]
        output = fromChild[0]
        let started = line(timeout: 180)
        guard started == "STARTED" else {
            fail("the browser helper did not start (\(started ?? "no answer"); its errors: \(errors)); chromium, chromium-driver and Selenium (pip) are needed")
        }
    }

    /// One line from the helper, or `nil` past `timeout` seconds or at its end.
    func line(timeout: Double) -> String? {
        let deadline = now() + timeout
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let nl = pending.firstIndex(of: 10) {
                let text = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeSubrange(...nl)
                return text
            }
            let left = deadline - now()
            if left <= 0 { return nil }
            var p = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(min(left, 1) * 1000) + 1) > 0 else { continue }
            let n = read(output, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            pending += chunk[0..<n]
        }
    }

    /// Sends `command` and returns the answer (fails the benchmark on none or `FAILED`).
    func ask(_ command: String, timeout: Double) -> String {
        writeText(input, command + "\n")
        guard let answer = line(timeout: timeout + 30) else { fail("the browser helper did not answer \(command)") }
        if answer.hasPrefix("FAILED") { fail("browsers: \(answer)") }
        return answer
    }

    /// Every page loads the web view on `port` and has its WebSocket open.
    func open(port: UInt16) { _ = ask("open \(port)", timeout: 90) }

    /// Waits until every page shows `text` as its last line: the seconds each took from now,
    /// the lines each page counted, the lines logcast dropped for each, the lines it skipped
    /// for each (too fast to show).
    func wait(for text: String, timeout: Double) -> (seconds: [Double], shown: [Int], dropped: [Int], skipped: [Int]) {
        let words = ask("wait \(text) \(Int(timeout))", timeout: timeout).split(separator: " ")
        guard words.count == 5 else { fail("browsers: unexpected answer \(words)") }
        func list<T>(_ word: Substring, _ make: (Substring) -> T?) -> [T] { word.split(separator: ",").compactMap(make) }
        return (list(words[1]) { Double($0) }, list(words[2]) { Int($0) }, list(words[3]) { Int($0) }, list(words[4]) { Int($0) })
    }

    /// Every page leaves the view (its WebSocket closes).
    func blank() { _ = ask("blank", timeout: 60) }

    /// Ends the helper and its browsers.
    func quit() {
        writeText(input, "quit\n")
        close(input)
        let deadline = now() + 30
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if now() > deadline {
                kill(pid, SIGTERM)
                _ = waitpid(pid, &status, 0)
                break
            }
            usleep(50_000)
        }
        close(output)
    }
}
