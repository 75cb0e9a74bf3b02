import Foundation
import Glibc
import ReactiveUVNATSTestKit
import XCTest

/// The live web view on `--http` (issue 31, `GET /`): the real daemon on temp files, a real
/// headless Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium from
/// PyPI) and, without a browser, Python's `websockets` for the WebSocket protocol.
final class LogcastWebViewTests: LogcastProcessTestCase {
    /// Starts logcast and waits for its listener and its HTTP endpoint; the HTTP port.
    func startWithHTTP(_ arguments: [String]) throws -> (LogcastProcess, Int) {
        let p = try start(arguments + ["--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--heartbeat", "0"])
        return (p, try p.httpPort())
    }

    /// Runs `python3 -c script arguments…` (bounded by `timeout(1)`); its status, standard
    /// output lines and standard error.
    func python(_ script: String, _ arguments: [String], timeout: Int = 240) throws -> (status: Int32, lines: [String], errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = [String(timeout), "python3", "-u", "-c", script] + arguments
        let outPath = dir + "/python.out", errPath = dir + "/python.err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        try process.run()
        process.waitUntilExit()
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return (process.terminationStatus, out.split(separator: "\n").map(String.init), err)
    }

    func line(_ lines: [String], _ prefix: String) -> String? {
        lines.first { $0.hasPrefix(prefix + " ") }.map { String($0.dropFirst(prefix.count + 1)) }
    }

    func testHeadlessChromiumSeesNumberedLinesFiltersWithHighlightsPausesAndChoosesAFile() throws {
        let a = dir + "/app.log", b = dir + "/db.log"
        for path in [a, b] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let (p, port) = try startWithHTTP([a, b])
        let artifacts = dir + "/artifacts"
        try FileManager.default.createDirectory(atPath: artifacts, withIntermediateDirectories: true)
        let screenshot = artifacts + "/logcast-web-view.png"

        let run = try python(webViewBrowserScript, [String(port), a, b, screenshot])
        let output = run.lines.joined(separator: "\n") + "\n" + run.errors
        XCTAssertEqual(run.status, 0, output)
        // Every numbered line, counted and in order; the page's bound.
        XCTAssertEqual(line(run.lines, "NUMBERED"), "200 in order", output)
        XCTAssertEqual(line(run.lines, "BOUND"), "2000 first=bulk-0501 last=bulk-2500", output)
        // A burst: the page got the newest lines and a count of those passed over, exactly.
        XCTAssertEqual(line(run.lines, "BURST"), "shown+skipped+dropped=30000 skipped>0=True in-order=True said=skipped N lines: too fast to show", output)
        // The filter: exactly the matching lines, each with its highlight.
        let matches = stride(from: 7, through: 97, by: 10).map { String(format: "n-%04d", $0) } + ["n-9997"]
        XCTAssertEqual(line(run.lines, "FILTERED"), matches.joined(separator: ","), output)
        XCTAssertEqual(line(run.lines, "MARKS"), matches.joined(separator: ","), output)
        XCTAssertEqual(line(run.lines, "BADFILTER")?.hasPrefix("invalid regex: "), true, output)
        XCTAssertEqual(line(run.lines, "OLDFILTER"), "n-0107", "a bad pattern leaves the filter in force: \(output)")
        // Pause: nothing while paused (after another client saw all 50), then all of them.
        XCTAssertEqual(line(run.lines, "PAUSED"), "0 shown while another client got 50", output)
        XCTAssertEqual(line(run.lines, "RESUMED"), "50 in order", output)
        XCTAssertEqual(line(run.lines, "FILE"), "20 from \(b), none from \(a)", output)
        XCTAssertEqual(line(run.lines, "CSP"), "no violation", output)

        // The screenshot: a PNG, kept as the test's artifact.
        let png = FileManager.default.contents(atPath: screenshot) ?? Data()
        XCTAssertEqual(Array(png.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "a PNG at \(screenshot)")
        let filtered = screenshot.replacingOccurrences(of: ".png", with: "-filter.png")
        XCTAssertEqual(Array((FileManager.default.contents(atPath: filtered) ?? Data()).prefix(4)), [0x89, 0x50, 0x4E, 0x47], "a PNG at \(filtered)")
        print("LogcastWebViewTests: screenshots saved at \(keepArtifact(screenshot)) and \(keepArtifact(filtered))")

        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }

    /// Copies `path` to `.build/test-artifacts/` (the temporary directory is removed).
    func keepArtifact(_ path: String) -> String {
        var root = URL(fileURLWithPath: LogcastProcess.binary).deletingLastPathComponent()
        while root.lastPathComponent != ".build" && root.path != "/" { root = root.deletingLastPathComponent() }
        let folder = (root.path == "/" ? dir : root.path) + "/test-artifacts"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let target = folder + "/" + URL(fileURLWithPath: path).lastPathComponent
        try? FileManager.default.removeItem(atPath: target)
        return (try? FileManager.default.copyItem(atPath: path, toPath: target)) != nil ? target : path
    }

    func testTheWebSocketProtocolFiltersRefusesABadPatternAndWhatAPageMayNotSend() throws {
        // db.log is followed through a FILE pattern: the chooser lists it like a named file.
        XCTAssertEqual(mkdir(dir + "/db", 0o755), 0)
        let a = dir + "/app.log", b = dir + "/db/db.log"
        for path in [a, b] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let (p, port) = try startWithHTTP([a, dir + "/db/*.log"])
        let run = try python(webViewProtocolScript, [String(port), a, b, "filter"])
        let output = run.lines.joined(separator: "\n") + "\n" + run.errors
        XCTAssertEqual(run.status, 0, output)
        XCTAssertEqual(line(run.lines, "HELLO"), "\(a),\(b)", output)
        // No permessage-deflate: deflating each frame for each page cost more CPU than the
        // rest of the view (WebView.openWebSocket; Benchmarks/README.md, "hidden costs").
        XCTAssertEqual(line(run.lines, "EXTENSIONS"), "none", output)
        XCTAssertEqual(line(run.lines, "FILTERED"), "\(a): x-0003,\(a): x-0013,\(b): x-0023", output)
        XCTAssertEqual(line(run.lines, "BAD")?.hasPrefix("ERR invalid regex: "), true, output)
        XCTAssertEqual(line(run.lines, "STILL"), "\(a): x-0033", output)
        XCTAssertEqual(line(run.lines, "LINE"), "ERR LINE is not available to the web view (GREP, PAUSE, RESUME, FILE, STATS, SINCE)", output)
        XCTAssertEqual(line(run.lines, "NEWLINE"), "ERR one command per message (no line break)", output)
        XCTAssertEqual(line(run.lines, "INJECTED"), "none", output)
        XCTAssertEqual(line(run.lines, "ORIGIN"), "403", output)
        XCTAssertEqual(line(run.lines, "FLOOD")?.hasPrefix("closed"), true, output)
        XCTAssertTrue(p.errors.contains("not reading its replies: 256 unsent; closing"), p.errors)
        XCTAssertEqual(line(run.lines, "AFTER"), "hello", "logcast serves on: \(output)")
        XCTAssertTrue(p.errors.contains("ended: client closed"), p.errors)
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }

    func testAPausedViewPastTheQueueLimitLosesLinesCountedOrItsConnection() throws {
        let a = dir + "/app.log"
        _ = FileManager.default.createFile(atPath: a, contents: nil)
        // drop: the lines past the limit are counted in DROPPED; what arrives is in order.
        // Ticks come all through the paused phase (0.05 s apart): their `DROPPED` notices
        // have an allowance of their own (LineFanOut.notice), so a view a whisker under the
        // limit is not ended as "not reading its replies". (Whether a tick finds it a
        // whisker under is timing here; LogcastClientTests and ClientFeedTests pin it.)
        let (p, port) = try startWithHTTP([a, "--queue-limit", "4000", "--tick", "0.05"])
        let run = try python(webViewProtocolScript, [String(port), a, "", "drop"])
        let output = run.lines.joined(separator: "\n") + "\n" + run.errors
        XCTAssertEqual(run.status, 0, output)
        XCTAssertEqual(line(run.lines, "DROP"), "received+dropped=500 dropped>0 in-order first=x-0001", output)
        XCTAssertEqual(line(run.lines, "REPORTED"), "DROPPED equals logcast_lines_dropped_total", output)
        XCTAssertEqual(occurrences(of: "not reading its replies", in: p.errors), 0, p.errors)
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)

        // disconnect: the paused view is closed; a client that keeps up is not.
        let (q, port2) = try startWithHTTP([a, "--queue-limit", "4000", "--slow-client", "disconnect"])
        let run2 = try python(webViewProtocolScript, [String(port2), a, "", "disconnect"])
        let output2 = run2.lines.joined(separator: "\n") + "\n" + run2.errors
        XCTAssertEqual(run2.status, 0, output2)
        XCTAssertEqual(line(run2.lines, "DISCONNECTED"), "paused view closed, live client got 500", output2)
        let deadline = Date().addingTimeInterval(30)
        while !q.errors.contains("too slow") && Date() < deadline { usleep(10_000) }
        XCTAssertTrue(q.errors.contains("ended: too slow"), "the session ended by the slow-client policy: \(q.errors)")
        q.signal(SIGTERM)
        XCTAssertEqual(q.waitForExit(timeout: 30), 0, q.errors)
    }

    /// A page is sent what it can show (WebViewPacer): a burst far faster than the view's
    /// rate comes as frames at most ten a second, each the newest lines (at most the page's
    /// 2,000) after an exact count of those passed over; a slow trickle comes line by line.
    func testABurstComesAsTheNewestLinesWithAnExactSkipCountAndATrickleLineByLine() throws {
        let a = dir + "/app.log"
        _ = FileManager.default.createFile(atPath: a, contents: nil)
        let (p, port) = try startWithHTTP([a])
        let run = try python(webViewProtocolScript, [String(port), a, "", "pace"])
        let output = run.lines.joined(separator: "\n") + "\n" + run.errors
        XCTAssertEqual(run.status, 0, output)
        // Each line written once the last arrived is a frame of its own.
        XCTAssertEqual(line(run.lines, "TRICKLE"), (1...10).map { String(format: "t-%04d", $0) }.joined(separator: " "), output)
        // 50,000 lines in one write: every line is received, skipped or dropped, exactly;
        // the received ones in order, each run after a skip starting exactly past it.
        // Whether any is skipped depends on how fast logcast reads them (more than 2,000
        // between two frames: under ASan beside the TSan lane none was); the paused burst
        // below always is.
        let burst = try XCTUnwrap(line(run.lines, "BURST"), output)
        XCTAssertTrue(["received+skipped+dropped=50000 skipped>0 gaps-exact in-order last=b-050000",
                       "received+skipped+dropped=50000 skipped=0 gaps-exact in-order last=b-050000"].contains(burst), output)
        XCTAssertEqual(line(run.lines, "FRAMES"), "at most 2000 lines each, at most one per 0.1 s", output)
        // 5,000 lines read while the page is paused: RESUME sends the newest 2,000 in one
        // frame, after the count of the 3,000 passed over.
        XCTAssertEqual(line(run.lines, "RESUMED"), "skipped=3000 received=2000 first=p-003001 last=p-005000 in-order", output)
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }

    func testWithATokenThePageAndTheWebSocketAskForItAndACookieKeepsIt() throws {
        let a = dir + "/app.log", b = dir + "/secret.log"
        for path in [a, b] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let tokenFile = dir + "/token", accessFile = dir + "/access"
        try "s3cret-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        // The view is `token`: it may read app.log only.
        try "token: \(a)\n".write(toFile: accessFile, atomically: true, encoding: .utf8)
        let (p, port) = try startWithHTTP([a, b, "--auth-token-file", tokenFile, "--access-file", accessFile])
        let run = try python(webViewProtocolScript, [String(port), a, "s3cret-token", "token"])
        let output = run.lines.joined(separator: "\n") + "\n" + run.errors
        XCTAssertEqual(run.status, 0, output)
        XCTAssertEqual(line(run.lines, "PAGE"), "401 401 303 200", output)
        XCTAssertEqual(line(run.lines, "WS"), "401 401 hello", output)
        XCTAssertEqual(line(run.lines, "FILES"), a, "the chooser offers only what the token may read: \(output)")
        XCTAssertEqual(line(run.lines, "READ"), "\(a): visible-2", "a line of secret.log never reaches the view: \(output)")
        XCTAssertEqual(line(run.lines, "CSP")?.contains("script-src 'self'"), true, output)
        XCTAssertFalse(p.output.contains("s3cret-token") || p.errors.contains("s3cret-token"), "the token is never logged")
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }
}

/// A hub's web view across a restart: headless Chromium keeps its page while logcast (edge
/// and hub in one process, on a real nats-server) is stopped with SIGTERM and started again
/// on the same HTTP port; the page reconnects with `SINCE` and gets every line written
/// meanwhile, once each, in order.
final class LogcastWebViewHubTests: LogcastProcessTestCase {
    var servers: NATSTestServers?

    override func tearDown() {
        servers?.stopAll()
        servers = nil
        super.tearDown()
    }

    func testAHubsPageReconnectsAfterARestartAndResumesWithSinceLosingNoLine() throws {
        let servers = try NATSTestServers(count: 1)
        self.servers = servers
        try servers.startAll()
        let log = dir + "/app.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let port = freeLoopbackPort()
        let arguments = [log, "--publish", servers.urls[0], "--from", servers.urls[0], "--stream", "LOGS", "--subject", "logs.test",
                         "--state-dir", dir + "/state", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:\(port)", "--heartbeat", "0"]
        let first = try start(arguments)
        XCTAssertTrue(first.waitForOutput("http on 127.0.0.1:\(port)"), first.output + first.errors)
        let argumentsJSON = String(decoding: try JSONSerialization.data(withJSONObject: arguments), as: UTF8.self)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["300", "python3", "-u", "-c", webViewHubScript, String(port), log,
                             String(first.process.processIdentifier), LogcastProcess.binary, argumentsJSON, dir]
        let outPath = dir + "/python.out"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: outPath)
        try process.run()
        process.waitUntilExit()
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 0, output + "\nsecond logcast: " + ((try? String(contentsOfFile: dir + "/second.err", encoding: .utf8)) ?? ""))
        XCTAssertEqual(first.waitForExit(timeout: 30), 0, "the first logcast ended by SIGTERM: \(first.errors)")
        let lines = output.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("BEFORE 100 in order"), output)
        XCTAssertTrue(lines.contains("AFTER 200 in order, each once"), output)
        XCTAssertTrue(lines.contains("LIVE 210 in order, each once"), output)
        XCTAssertTrue(lines.contains("SECOND exited 0"), output)
    }
}

/// `PORT LOG PID LOGCAST ARGUMENTS_JSON DIR`: the page, 100 lines, SIGTERM to PID, 100 lines
/// written while logcast is down, LOGCAST ARGUMENTS started again (stopped at the end), the
/// page's lines checked (`BEFORE`, `AFTER`, `LIVE`, `SECOND exited 0`).
let webViewHubScript = #"""
import os, sys, time, json, signal, subprocess
for v in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(v, None)
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

port, log, pid, binary, arguments, workdir = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5]), sys.argv[6]
opts = Options()
for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,900"]:
    opts.add_argument(arg)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
d.set_page_load_timeout(60)
second = None

def wait(cond, what, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise SystemExit("timed out waiting for " + what + "; page: " + d.find_element(By.TAG_NAME, "body").text[-3000:])

def append(lines):
    with open(log, "a") as f:
        f.write("".join(l + "\n" for l in lines))

def texts(prefix):
    return [t for t in d.execute_script("return Array.from(document.querySelectorAll('#log .line .text')).map(function (e) { return e.textContent; })") if t.startswith(prefix)]

def state():
    return d.find_element(By.ID, "status").get_attribute("data-state")

def exited(p):
    try:
        with open("/proc/%d/stat" % p) as f:
            return f.read().split(")")[-1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True

def check(label, count):
    got = texts("h-")
    want = ["h-%04d" % i for i in range(1, count + 1)]
    print(label, "%d in order%s" % (len(got), ", each once" if label != "BEFORE" else "") if got == want else "wrong: %d %r" % (len(got), [g for g in got if got.count(g) > 1][:10] or got[-10:]))

try:
    d.get("http://127.0.0.1:%d/" % port)
    wait(lambda: state() == "live", "the WebSocket to open")
    for k in range(600):
        append(["sync-%d" % k])
        end = time.time() + 0.5
        seen = False
        while time.time() < end and not seen:
            seen = ("sync-%d" % k) in texts("sync-")
            time.sleep(0.02)
        if seen:
            break
    else:
        raise SystemExit("no line reached the page through the stream")
    append(["h-%04d" % i for i in range(1, 101)])
    wait(lambda: "h-0100" in texts("h-"), "h-0100")
    check("BEFORE", 100)

    # logcast stops: the page sees its WebSocket close.
    os.kill(pid, signal.SIGTERM)
    wait(lambda: state() == "disconnected", "the page to see logcast gone")
    wait(lambda: exited(pid), "the first logcast to exit")
    append(["h-%04d" % i for i in range(101, 201)])
    second = subprocess.Popen([binary] + arguments, stdout=open(workdir + "/second.out", "w"), stderr=open(workdir + "/second.err", "w"))
    wait(lambda: "h-0200" in texts("h-"), "h-0200 after the restart")
    time.sleep(0.5)  # (h-0200 is the marker; this only widens the window for a duplicate)
    check("AFTER", 200)
    append(["h-%04d" % i for i in range(201, 211)])
    wait(lambda: "h-0210" in texts("h-"), "h-0210")
    check("LIVE", 210)
    d.save_screenshot(workdir + "/hub-web-view.png")
finally:
    d.quit()
    if second is not None:
        second.send_signal(signal.SIGTERM)
        try:
            print("SECOND exited", second.wait(timeout=30))
        except subprocess.TimeoutExpired:
            second.kill()
            print("SECOND killed")
"""#

/// Headless Chromium through Selenium: `PORT FILE_A FILE_B SCREENSHOT`. Prints one line per
/// check (`NUMBERED …`, `BOUND …`, `FILTERED …`, `MARKS …`, `BADFILTER …`, `OLDFILTER …`,
/// `PAUSED …`, `RESUMED …`, `FILE …`, `CSP …`) for the test to assert on; every wait is for
/// a positive marker, bounded.
let webViewBrowserScript = #"""
import os, sys, time, json
# Loopback only: a proxy from the environment must not carry these connections.
for v in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(v, None)
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select
from websockets.sync.client import connect

port, a, b, shot = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
opts = Options()
for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,900"]:
    opts.add_argument(arg)
opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
d.set_page_load_timeout(60)

def wait(cond, what, timeout=90):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise SystemExit("timed out waiting for " + what + "; page: " + d.find_element(By.TAG_NAME, "body").text[-3000:])

def append(path, lines):
    with open(path, "a") as f:
        f.write("".join(l + "\n" for l in lines))

def rows():
    return d.execute_script("return Array.from(document.querySelectorAll('#log .line')).map(function (r) { return [r.children[0].textContent, r.children[1].textContent]; })")

def texts(prefix):
    return [t for (f, t) in rows() if t.startswith(prefix)]

def clear():
    d.find_element(By.ID, "clear").click()
    wait(lambda: len(rows()) == 0, "an empty view")

def state():
    return d.find_element(By.ID, "status").get_attribute("data-state")

def set_filter(pattern):
    box = d.find_element(By.ID, "filter")
    box.clear()
    box.send_keys(pattern + Keys.ENTER)

try:
    d.get("http://127.0.0.1:%d/" % port)
    wait(lambda: state() == "live", "the WebSocket to open")
    # The tails open off the loop from the files' ends: write until a line shows.
    for path in (a, b):
        for k in range(600):
            append(path, ["sync-%d" % k])
            end = time.time() + 0.5
            seen = False
            while time.time() < end and not seen:
                seen = ("sync-%d" % k) in texts("sync-")
                time.sleep(0.02)
            if seen:
                break
        else:
            raise SystemExit("the tail of %s never started" % path)
    clear()

    # N numbered lines arrive, counted, in order.
    expected = ["n-%04d alpha" % i for i in range(1, 201)]
    append(a, expected)
    wait(lambda: "n-0200 alpha" in texts("n-"), "n-0200")
    got = texts("n-")
    print("NUMBERED", "%d in order" % len(got) if got == expected else "wrong: %r" % got[:20])

    # The page keeps at most 2000 lines.
    clear()
    append(a, ["bulk-%04d" % i for i in range(1, 2501)])
    wait(lambda: d.execute_script("var l = document.querySelector('#log .line:last-child'); return l && l.children[1].textContent === 'bulk-2500';"), "bulk-2500")
    kept = rows()
    print("BOUND", "%d first=%s last=%s" % (len(kept), kept[0][1], kept[-1][1]))

    # A burst far faster than a page can show: logcast sends the newest lines and says how
    # many it passed over; the page counts them apart from DROPPED.
    COUNTS = ("return [parseInt(document.getElementById('count').textContent, 10) || 0,"
              " parseInt(document.getElementById('skipped').dataset.count, 10) || 0,"
              " document.getElementById('dropped').hidden ? 0 : (parseInt(document.getElementById('dropped').textContent, 10) || 0),"
              " document.getElementById('skipped').hidden ? '' : document.getElementById('skipped').textContent];")
    clear()
    shown0, skipped0, dropped0, _ = d.execute_script(COUNTS)
    append(a, ["burst-%05d" % i for i in range(1, 30001)])
    wait(lambda: d.execute_script("var l = document.querySelector('#log .line:last-child'); return l && l.children[1].textContent === 'burst-30000';"), "burst-30000")
    shown1, skipped1, dropped1, said = d.execute_script(COUNTS)
    kept = [int(t[6:]) for t in texts("burst-")]
    print("BURST", "shown+skipped+dropped=%d skipped>0=%s in-order=%s said=%s" % (
        (shown1 - shown0) + (skipped1 - skipped0) + (dropped1 - dropped0), skipped1 > skipped0,
        kept == sorted(set(kept)) and len(kept) <= 2000, said.replace(str(skipped1), "N")))

    # A filter: only the matches come, each highlighted.
    clear()
    set_filter(r"n-\d\d\d7")
    wait(lambda: d.find_element(By.ID, "filter").get_attribute("data-applied") == r"n-\d\d\d7", "OK GREP")
    append(a, ["n-%04d beta" % i for i in range(1, 101)] + ["n-9997 end"])
    wait(lambda: any(t.startswith("n-9997") for (f, t) in rows()), "n-9997")
    print("FILTERED", ",".join(t.split(" ")[0] for (f, t) in rows()))
    print("MARKS", ",".join(m.text for m in d.find_elements(By.CSS_SELECTOR, "#log .line mark")))
    d.save_screenshot(shot.replace(".png", "-filter.png"))

    # A bad pattern: the server's error shows; the filter in force stays.
    set_filter("n-(")
    wait(lambda: d.find_element(By.ID, "error").is_displayed(), "the error")
    print("BADFILTER", d.find_element(By.ID, "error").text)
    clear()
    append(a, ["n-0106 gamma", "n-0107 gamma"])
    wait(lambda: len(rows()) >= 1, "n-0107")
    print("OLDFILTER", ",".join(t.split(" ")[0] for (f, t) in rows()))
    set_filter("")
    wait(lambda: d.find_element(By.ID, "filter").get_attribute("data-applied") == "", "the filter cleared")

    # Pause: lines written meanwhile are not shown (another client sees all of them), then
    # resume brings every one, in order.
    other = connect("ws://127.0.0.1:%d/ws" % port, open_timeout=30)
    json.loads(other.recv(timeout=30))  # hello
    d.find_element(By.ID, "pause").click()
    wait(lambda: state() == "paused", "OK PAUSE")
    clear()
    paused_lines = ["p-%04d" % i for i in range(1, 51)]
    append(a, paused_lines)
    seen = []
    while "p-0050" not in seen:
        m = json.loads(other.recv(timeout=60))
        if m["t"] == "lines":
            seen += [t for (f, t) in m["lines"] if t.startswith("p-")]
    time.sleep(0.3)  # (the marker is above: the other client got all 50; this only widens the window)
    print("PAUSED", "%d shown while another client got %d" % (len(texts("p-")), len(seen)))
    d.find_element(By.ID, "pause").click()
    wait(lambda: "p-0050" in texts("p-"), "p-0050 after resume")
    got = texts("p-")
    print("RESUMED", "%d in order" % len(got) if got == paused_lines else "wrong: %r" % got)

    # The file chooser: only the chosen file's lines.
    Select(d.find_element(By.ID, "file")).select_by_value(b)
    wait(lambda: d.find_element(By.ID, "file").get_attribute("data-applied") == b, "OK FILE")
    clear()
    append(a, ["other-%04d" % i for i in range(1, 21)])
    seen = []
    while "other-0020" not in seen:
        m = json.loads(other.recv(timeout=60))
        if m["t"] == "lines":
            seen += [t for (f, t) in m["lines"]]
    append(b, ["chosen-%04d" % i for i in range(1, 21)])
    wait(lambda: "chosen-0020" in texts("chosen-"), "chosen-0020")
    got = rows()
    from_b = [t for (f, t) in got if f == b and t.startswith("chosen-")]
    from_a = [t for (f, t) in got if f != b]
    print("FILE", "%d from %s, %s from %s" % (len(from_b), b, "none" if not from_a else len(from_a), a))
    other.close()

    d.save_screenshot(shot)
    logs = d.get_log("browser")
    csp = [e["message"] for e in logs if "Content Security Policy" in e["message"] or "Content-Security-Policy" in e["message"]]
    print("CSP", "no violation" if not csp else csp)
finally:
    d.quit()
"""#

/// Python `websockets` against `/ws`: `PORT FILE_A FILE_B|TOKEN MODE`, MODE one of `filter`,
/// `drop`, `disconnect`, `token`, `pace`. Prints one line per check.
let webViewProtocolScript = #"""
import os, sys, time, json, http.client
for v in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(v, None)
from websockets.sync.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

port, a, b, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
url = "ws://127.0.0.1:%d/ws" % port

def append(path, lines):
    with open(path, "a") as f:
        f.write("".join(l + "\n" for l in lines))

def messages(ws, timeout=60):
    while True:
        yield json.loads(ws.recv(timeout=timeout))

def lines_until(ws, last):
    got = []
    for m in messages(ws):
        if m["t"] == "lines":
            got += ["%s: %s" % (f, t) for (f, t) in m["lines"]]
            if any(l.endswith(last) for l in got):
                return got

def metric(line_start):
    """The value of the /metrics sample whose line starts with `line_start`."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    return int(float([l for l in body.splitlines() if l.startswith(line_start)][0].split(" ")[-1]))

def reply(ws, prefix):
    for m in messages(ws):
        if m["t"] == "reply" and m["text"].startswith(prefix):
            return m["text"]

def sync(ws, paths):
    for path in paths:
        for k in range(600):
            append(path, ["sync-%d" % k])
            try:
                end = time.time() + 0.5
                while time.time() < end:
                    m = json.loads(ws.recv(timeout=0.5))
                    if m["t"] == "lines" and any(t == "sync-%d" % k for (f, t) in m["lines"]):
                        raise StopIteration
            except TimeoutError:
                pass
            except StopIteration:
                break
        else:
            raise SystemExit("the tail of %s never started" % path)

if mode == "filter":
    # The client offers permessage-deflate (websockets' default); logcast declines it.
    ws = connect(url, open_timeout=30)
    print("EXTENSIONS", ws.response.headers.get("Sec-WebSocket-Extensions", "none"))
    hello = json.loads(ws.recv(timeout=30))
    print("HELLO", ",".join(hello["files"]))
    sync(ws, [a, b])
    ws.send(r"GREP x-\d\d\d3")
    reply(ws, "OK GREP")
    append(a, ["x-%04d" % i for i in range(1, 20)])
    append(b, ["x-%04d" % i for i in range(20, 30)])
    print("FILTERED", ",".join(lines_until(ws, "x-0023")))
    ws.send("GREP x-(")
    print("BAD", reply(ws, "ERR"))
    append(a, ["x-0031", "x-0033"])
    print("STILL", ",".join(lines_until(ws, "x-0033")))
    ws.send("LINE %s\tinjected" % a)
    print("LINE", reply(ws, "ERR"))
    ws.send("STATS\nLINE %s\tinjected" % a)
    print("NEWLINE", reply(ws, "ERR"))
    ws.send("GREP ")
    reply(ws, "OK GREP")
    append(a, ["after-injection"])
    got = lines_until(ws, "after-injection")
    print("INJECTED", "none" if not any("injected" in l for l in got) else got)
    ws.close()
    try:
        connect(url, open_timeout=30, origin="http://evil.example")
        print("ORIGIN", "accepted")
    except InvalidStatus as e:
        print("ORIGIN", e.response.status_code)
    # A page that sends commands and never reads the answers is closed, not buffered for.
    flood = connect(url, open_timeout=30, max_queue=1, compression=None)
    sent = 0
    try:
        while sent < 2000000:
            flood.send("FILE " + "f" * 8000)
            sent += 1
        print("FLOOD", "never closed")
    except ConnectionClosed as e:
        print("FLOOD", "closed", e.rcvd.code if e.rcvd else None, e.rcvd.reason if e.rcvd else None)
        print("FLOODED", sent)
    ok = connect(url, open_timeout=30)
    print("AFTER", json.loads(ok.recv(timeout=30))["t"])
    ok.close()

elif mode in ("drop", "disconnect"):
    live = connect(url, open_timeout=30, max_queue=None)
    json.loads(live.recv(timeout=30))
    sync(live, [a])
    view = connect(url, open_timeout=30)
    json.loads(view.recv(timeout=30))
    view.send("PAUSE")
    reply(view, "OK PAUSE")
    # In batches, each seen by the live client: several blocks, more than the queue limit.
    # A batch is well under the limit (20 lines of about 82 bytes with the file's name
    # against 4,000): the live client may still have the previous batch's write in flight
    # when the next is read (its completion not yet run on a slow loop), and with 50 lines
    # (4,100 bytes) it was then over the limit itself (a failure seen under TSan).
    total = 500
    for start in range(1, total + 1, 20):
        batch = ["x-%04d %s" % (i, "." * 40) for i in range(start, start + 20)]
        append(a, batch)
        lines_until(live, batch[-1].split(" ")[0] + " " + "." * 40)
    if mode == "disconnect":
        try:
            while True:
                view.recv(timeout=60)
            print("DISCONNECTED", "no")
        except ConnectionClosed:
            print("DISCONNECTED", "paused view closed, live client got %d" % total)
    else:
        view.send("RESUME")
        got, reported = [], None
        append(a, ["x-9999 marker"])
        for m in messages(view):
            if m["t"] == "lines":
                got += [t.split(" ")[0] for (f, t) in m["lines"] if t.startswith("x-")]
            elif m["t"] == "reply" and m["text"].startswith("DROPPED "):
                reported = int(m["text"].split(" ")[1])
            if "x-9999" in got:
                break
        # Only the paused view drops (the live client reads everything): the daemon's count.
        dropped = metric("logcast_lines_dropped_total ")
        # The view is told at the next tick (DROPPED <lines lost so far>; an earlier report
        # may have said fewer).
        while reported != dropped:
            m = json.loads(view.recv(timeout=60))
            if m["t"] == "reply" and m["text"].startswith("DROPPED "):
                reported = int(m["text"].split(" ")[1])
        print("REPORTED", "DROPPED equals logcast_lines_dropped_total" if reported == dropped else "DROPPED %d, metrics %d" % (reported, dropped))
        numbered = [g for g in got if g != "x-9999"]
        ok = numbered == sorted(numbered) and len(set(numbered)) == len(numbered)
        print("DROP", "received+dropped=%d dropped>0 %s first=%s" % (len(numbered) + dropped if dropped else -1, "in-order" if ok else "out-of-order", numbered[0] if numbered else "-"))

elif mode == "pace":
    ws = connect(url, open_timeout=30, max_size=None, max_queue=None)
    json.loads(ws.recv(timeout=30))
    sync(ws, [a])
    # A trickle: each line written once the previous one arrived, so one line waits at a
    # time and every frame holds one (sent at once or on the next frame tick alike).
    frames = []
    for i in range(1, 11):
        append(a, ["t-%04d" % i])
        for m in messages(ws):
            if m["t"] == "skipped":
                frames.append("skipped")
            elif m["t"] == "lines":
                frames.append(",".join(t for (f, t) in m["lines"]))
                if any(t == "t-%04d" % i for (f, t) in m["lines"]):
                    break
    print("TRICKLE", " ".join(frames))
    # A burst: 50,000 lines in one write.
    total = 50000
    start = time.time()
    append(a, ["b-%06d %s" % (i, "." * 30) for i in range(1, total + 1)])
    received = skipped = dropped = frames = biggest = last = 0
    gap = 0
    gaps_exact = in_order = True
    for m in messages(ws):
        if m["t"] == "skipped":
            skipped += m["lines"]
            gap += m["lines"]
        elif m["t"] == "reply" and m["text"].startswith("DROPPED "):
            dropped = int(m["text"].split(" ")[1])
        elif m["t"] == "lines":
            numbers = [int(t[2:8]) for (f, t) in m["lines"] if t.startswith("b-")]
            frames += 1
            biggest = max(biggest, len(m["lines"]))
            for n in numbers:
                if n <= last:
                    in_order = False
                if n != last + 1 + gap:
                    gaps_exact = False
                gap = 0
                last = n
            received += len(numbers)
            if last == total:
                break
    elapsed = time.time() - start
    if dropped:
        gaps_exact = True  # lines lost to a slow reader leave gaps of their own (counted in the sum)
    print("BURST", "received+skipped+dropped=%d skipped%s %s %s last=b-%06d" % (received + skipped + dropped, ">0" if skipped > 0 else "=0",
          "gaps-exact" if gaps_exact else "gaps-wrong", "in-order" if in_order else "out-of-order", last))
    # Frames go out at most every 0.1 s (timers may fire a millisecond early: 0.09), the
    # first at once: however late this reader ran, the last arrived after the last was sent.
    print("FRAMES", "at most 2000 lines each, at most one per 0.1 s" if biggest <= 2000 and frames <= elapsed / 0.09 + 2
          else "%d frames in %.2f s, the biggest %d lines" % (frames, elapsed, biggest))
    # A burst read while the page is paused (logcast's own count says when), then RESUME.
    def lines_read():
        return metric('logcast_file_lines_read_total{file="%s"} ' % a)
    ws.send("PAUSE")
    reply(ws, "OK PAUSE")
    before = lines_read()
    append(a, ["p-%06d" % i for i in range(1, 5001)])
    deadline = time.time() + 300
    while lines_read() < before + 5000:
        if time.time() > deadline:
            raise SystemExit("logcast never read the paused burst")
        time.sleep(0.05)
    ws.send("RESUME")
    got, passed = [], 0
    for m in messages(ws):
        if m["t"] == "skipped":
            passed += m["lines"]
        elif m["t"] == "lines":
            got += [t for (f, t) in m["lines"] if t.startswith("p-")]
            if "p-005000" in got:
                break
    print("RESUMED", "skipped=%d received=%d first=%s last=%s %s" % (passed, len(got), got[0] if got else "-", got[-1] if got else "-",
          "in-order" if got == sorted(got) and len(set(got)) == len(got) else "out-of-order"))
    ws.close()

elif mode == "token":
    token = b
    def get(path, headers={}):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        r.read()
        return r
    r1 = get("/")
    r2 = get("/?token=wrong")
    r3 = get("/?token=" + token)
    cookie = r3.getheader("Set-Cookie").split(";")[0]
    r4 = get("/", {"Cookie": cookie})
    print("PAGE", r1.status, r2.status, r3.status, r4.status)
    print("CSP", r4.getheader("Content-Security-Policy"))
    codes = []
    for headers in ({}, {"Cookie": "logcast_token=00"}):
        try:
            connect(url, open_timeout=30, additional_headers=headers)
            codes.append("accepted")
        except InvalidStatus as e:
            codes.append(str(e.response.status_code))
    ws = connect(url, open_timeout=30, additional_headers={"Cookie": cookie})
    hello = json.loads(ws.recv(timeout=30))
    codes.append(hello["t"])
    print("WS", " ".join(codes))
    print("FILES", ",".join(hello["files"]))
    sync(ws, [a])
    secret = a.rsplit("/", 1)[0] + "/secret.log"
    append(a, ["visible-1"])
    lines_until(ws, "visible-1")
    # The marker that hidden-1 reached the fan-out: /metrics counts it read (the tail of
    # secret.log may start late: written again until counted). visible-2, written after,
    # then comes after it in the stream, so the view's lines up to visible-2 say whether
    # hidden-1 came.
    counted = False
    for k in range(300):
        append(secret, ["hidden-%d" % k])
        end = time.time() + 1
        while time.time() < end and not counted:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
            body = c.getresponse().read().decode()
            counted = any(l.startswith('logcast_file_lines_read_total{file="%s"}' % secret) and float(l.split(" ")[-1]) >= 1 for l in body.splitlines())
            time.sleep(0.05)
        if counted:
            break
    append(a, ["visible-2"])
    got = ",".join(l for l in lines_until(ws, "visible-2") if "visible-1" not in l)
    print("READ", got if counted else "secret.log was never read")
    ws.close()
"""#
