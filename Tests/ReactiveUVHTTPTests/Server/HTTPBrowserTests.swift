import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// A real browser against our HTTP server: headless Chromium (Debian's `chromium` and
/// `chromium-driver`, driven by Selenium from PyPI) loads a page from `HTTP.listen` that
/// opens a WebSocket (upgraded through `HTTPRequest.upgrade(headers:)`) and an
/// `EventSource` to the same server, and shows everything that arrives.
final class HTTPBrowserTests: XCTestCase {
    /// How many WebSocket messages and how many server-sent events the server sends.
    static let count = 100

    func testHeadlessChromiumSeesEveryWebSocketMessageAndServerSentEventInOrder() throws {
        let loop = try EventLoop()
        let directory = wsTemporaryDirectory()
        let screenshot = directory + "/browser.png"
        let n = Self.count
        var port = 0
        var closes: [WebSocketClose] = []
        var sseRequests = 0
        let options = WebSocketOptions()
        let server = HTTP.listen(port: 0, on: loop, onListening: { port = $0.port })
            .subscribeNext { request in
                switch request.path {
                case "/":
                    request.respond(headers: ["Content-Type": "text/html; charset=utf-8"], text: browserEventsPage(count: n))
                case "/events":
                    // Spaced out so the events interleave with the WebSocket's messages; the
                    // stream then stays open (a completed stream would make the browser
                    // reconnect) until the page closes it.
                    sseRequests += 1
                    let ticks = Signal<SchedulerTime>.interval(0.01, on: loop.scheduler).take(n)
                    let indexed = ticks.scan(start: -1) { index, _ in index + 1 }
                    request.respond(events: indexed.concat(.never()).map { ServerSentEvent(data: "sse \($0)", id: String($0)) })
                case "/ws":
                    switch WebSocket.serverHandshake(method: request.method, headers: request.headers, options: options) {
                    case .refuse(let status, let headers, let body):
                        request.respond(status: status, headers: headers, text: body)
                    case .accept(let headers, let compression, let subprotocol):
                        _ = request.upgrade(headers: headers).subscribeNext { upgrade in
                            let ws = WebSocketConnection(upgrade: upgrade, role: .server, options: options, compression: compression, subprotocol: subprotocol)
                            _ = ws.closed.subscribeNext { closes.append($0) }
                            // Reading the page's messages is what answers its close frame.
                            _ = ws.messages.subscribe()
                            // Every tenth message binary (its index as one byte), the rest text.
                            let ticks = Signal<SchedulerTime>.interval(0.01, on: loop.scheduler).take(n)
                            let indexed = ticks.scan(start: -1) { index, _ in index + 1 }
                            _ = ws.send(indexed.map { i in i % 10 == 9 ? .binary([UInt8(i)]) : .text("ws \(i)") }).subscribe()
                        }
                    }
                default:
                    request.respond(status: 404, text: "not found")
                }
            }
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 30), "listening")

        let run = wsRunPython(pythonBrowserScreenshot, [String(port), screenshot], on: loop)
        XCTAssertTrue(loop.run(until: { run.finished }, timeout: 180), "the browser run ended")
        XCTAssertEqual(run.exit?.status, 0, String(decoding: run.stderr, as: UTF8.self))
        let expectedWS = (0..<n).map { $0 % 10 == 9 ? "WS binary \($0)" : "WS text ws \($0)" }
        let expectedSSE = (0..<n).map { "SSE \($0) sse \($0)" }
        XCTAssertEqual(run.lines.filter { $0.hasPrefix("WS ") }, expectedWS, run.output)
        XCTAssertEqual(run.lines.filter { $0.hasPrefix("SSE ") }, expectedSSE, run.output)
        XCTAssertEqual(run.line("CLOSE"), "4005 page done true", run.output)
        XCTAssertEqual(run.line("ORDER"), "ok", "the page's own sequence-number check")
        XCTAssertEqual(sseRequests, 1, "the EventSource never had to reconnect")

        // The screenshot: a PNG file (its signature) of some size, kept as the test's artifact.
        XCTAssertTrue(loop.run(until: { closes.count == 1 }, timeout: 30))
        XCTAssertEqual(closes, [WebSocketClose(code: 4005, reason: "page done", initiatedByPeer: true)])
        let file = fopen(screenshot, "rb")
        XCTAssertNotNil(file, "screenshot at \(screenshot)")
        var signature = [UInt8](repeating: 0, count: 8)
        if let file {
            XCTAssertEqual(fread(&signature, 1, 8, file), 8)
            fclose(file)
        }
        XCTAssertEqual(signature, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "a PNG")
        print("HTTPBrowserTests: screenshot saved at \(screenshot)")

        server.dispose()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }
}

/// The page: a WebSocket to `/ws` and an `EventSource` on `/events`; every message and event
/// is shown as a line in its column and logged. The page checks the sequence numbers itself
/// (`order`), closes the WebSocket with 4005 and the EventSource after `count` of each,
/// and sets its title to `done` once both are finished.
func browserEventsPage(count: Int) -> String {
    #"""
    <!doctype html>
    <html><head><meta charset="utf-8"><title>running</title>
    <style>body{font:12px monospace;display:flex;gap:2em} div.col{width:45%}</style></head>
    <body><div class="col" id="ws"><b>WebSocket</b></div><div class="col" id="sse"><b>EventSource</b></div>
    <script>
    var count = \#(count), log = [], order = "ok", wsNext = 0, sseNext = 0, wsDone = false, sseDone = false;
    function show(column, text) {
      var line = document.createElement("div");
      line.textContent = text;
      document.getElementById(column).appendChild(line);
    }
    function finish() { if (wsDone && sseDone) document.title = "done"; }
    var ws = new WebSocket("ws://" + location.host + "/ws");
    ws.binaryType = "arraybuffer";
    ws.onmessage = function(e) {
      var text, seq;
      if (typeof e.data === "string") { text = "text " + e.data; seq = parseInt(e.data.split(" ")[1]); }
      else { seq = new Uint8Array(e.data)[0]; text = "binary " + seq; }
      if (seq !== wsNext) order = "ws expected " + wsNext + " got " + seq;
      wsNext += 1;
      log.push("WS " + text);
      show("ws", text);
      if (wsNext === count) ws.close(4005, "page done");
    };
    ws.onclose = function(e) {
      log.push("CLOSE " + e.code + " " + e.reason + " " + e.wasClean);
      show("ws", "closed " + e.code);
      wsDone = true;
      finish();
    };
    var source = new EventSource("/events");
    source.onmessage = function(e) {
      var seq = parseInt(e.lastEventId);
      if (seq !== sseNext || e.data !== "sse " + seq) order = "sse expected " + sseNext + " got " + seq + " " + e.data;
      sseNext += 1;
      log.push("SSE " + e.lastEventId + " " + e.data);
      show("sse", e.lastEventId + ": " + e.data);
      if (sseNext === count) { source.close(); sseDone = true; show("sse", "closed"); finish(); }
    };
    source.onerror = function() { log.push("SSE-ERROR " + source.readyState); };
    </script></body></html>
    """#
}

/// Headless Chromium through Selenium: `PORT SCREENSHOT`. Opens the page at `/`, waits
/// (bounded) for its title to become `done`, prints the page's log and order check, and
/// saves a screenshot to `SCREENSHOT`.
let pythonBrowserScreenshot = #"""
import sys, time
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
port, screenshot = int(sys.argv[1]), sys.argv[2]
opts = Options()
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=900,2400"]:
    opts.add_argument(a)
opts.binary_location = "/usr/bin/chromium"
driver = webdriver.Chrome(options=opts, service=Service("/usr/bin/chromedriver"))
try:
    driver.get(f"http://127.0.0.1:{port}/")
    deadline = time.time() + 120
    while driver.title != "done" and time.time() < deadline:
        time.sleep(0.05)
    for line in driver.execute_script("return log"):
        print(line, flush=True)
    print("ORDER", driver.execute_script("return order"), flush=True)
    if not driver.save_screenshot(screenshot):
        sys.exit("no screenshot")
finally:
    driver.quit()
"""#
