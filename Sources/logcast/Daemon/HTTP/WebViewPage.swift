/// The web view's page, script and style (`GET /`, `/webview.js`, `/webview.css`), kept in
/// the binary as string literals: logcast serves them itself, with no CDN and no network.
///
/// Why three resources and not one page with inline `<script>`: the page is served with a
/// strict `Content-Security-Policy` (``WebView/contentSecurityPolicy``) that allows scripts
/// and styles from logcast itself only (`'self'`), never inline ones; an inline script would
/// need `'unsafe-inline'` or a hash kept in step with the text. The script builds every line
/// with `textContent` (never `innerHTML`), so a log line cannot inject markup.
///
/// The page speaks the protocol ``WebViewTransport`` documents: it sends line-protocol
/// commands (`GREP`, `PAUSE`, `RESUME`, `FILE`, `STATS`) as text messages and shows the JSON
/// frames it receives. It keeps at most ``WebViewPage/maxLines`` lines in the DOM; logcast
/// sends it at most that many per frame, a few frames a second, and says how many older
/// lines it passed over (`{"t":"skipped","lines":N}`): the page shows the running total in
/// its status area ("skipped N lines: too fast to show"), apart from `DROPPED` (lines lost
/// because the page did not read).
enum WebViewPage {
    /// Lines the page keeps; older ones are removed from the DOM.
    static let maxLines = 2000

    /// The HTML page.
    static let html = #"""
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>logcast</title>
    <link rel="stylesheet" href="/webview.css">
    <script src="/webview.js" defer></script>
    </head><body>
    <header>
      <strong>logcast</strong>
      <label>filter <input id="filter" type="text" size="40" spellcheck="false" autocomplete="off" placeholder="Hyperscan regex; Enter applies, empty shows all"></label>
      <label>file <select id="file"><option value="">all files</option></select></label>
      <button id="pause" type="button">Pause</button>
      <button id="clear" type="button">Clear</button>
      <span id="status" data-state="connecting">connecting</span>
      <span id="count">0 lines</span>
      <span id="skipped" data-count="0" hidden></span>
    </header>
    <div id="error" hidden></div>
    <div id="dropped" hidden></div>
    <main id="log" aria-live="off"></main>
    </body></html>

    """#

    /// The script: the WebSocket, the filter, pause and resume, the file chooser, the
    /// bounded list of lines and their highlights.
    static let script = #"""
    "use strict";
    (function () {
      var MAX_LINES = \#(maxLines);
      var log, statusEl, countEl, skippedEl, errorEl, droppedEl, filterEl, fileEl, pauseEl;
      var ws = null, retry = 0, paused = false, shown = 0, skipped = 0, highlight = null;
      var appliedFilter = "", requestedFilter = null, knownFiles = {};
      // With a hub (--from): where to resume after a reconnect (the message after the last
      // SEQ seen, or where this view's replay started).
      var resumeFrom = null;

      function setStatus(state, text) { statusEl.dataset.state = state; statusEl.textContent = text; }
      function showError(text) { errorEl.textContent = text; errorEl.hidden = !text; }
      function send(text) { if (ws && ws.readyState === 1) ws.send(text); }

      // Highlights use the filter as a JavaScript RegExp where it compiles as one (most
      // Hyperscan patterns do); the server's Hyperscan filter decides which lines come.
      function compileHighlight(pattern) {
        if (!pattern) return null;
        try { return new RegExp(pattern, "g"); } catch (e) { return null; }
      }

      function fill(el, text) {
        if (!highlight) { el.textContent = text; return; }
        var at = 0, m, guard = 0;
        highlight.lastIndex = 0;
        while ((m = highlight.exec(text)) !== null && guard++ < 1000) {
          if (m[0].length === 0) { highlight.lastIndex++; continue; }
          if (m.index > at) el.appendChild(document.createTextNode(text.slice(at, m.index)));
          var mark = document.createElement("mark");
          mark.textContent = m[0];
          el.appendChild(mark);
          at = m.index + m[0].length;
        }
        if (at < text.length) el.appendChild(document.createTextNode(text.slice(at)));
      }

      function addFile(file) {
        if (knownFiles[file]) return;
        knownFiles[file] = true;
        var option = document.createElement("option");
        option.value = file;
        option.textContent = file;
        fileEl.appendChild(option);
      }

      function addLines(lines) {
        var stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        var fragment = document.createDocumentFragment();
        for (var i = 0; i < lines.length; i++) {
          var row = document.createElement("div");
          row.className = "line";
          var file = document.createElement("span");
          file.className = "file";
          file.textContent = lines[i][0];
          var text = document.createElement("span");
          text.className = "text";
          fill(text, lines[i][1]);
          row.appendChild(file);
          row.appendChild(text);
          fragment.appendChild(row);
          addFile(lines[i][0]);
        }
        log.appendChild(fragment);
        shown += lines.length;
        while (log.childElementCount > MAX_LINES) log.removeChild(log.firstElementChild);
        countEl.textContent = shown + " lines (" + log.childElementCount + " kept)";
        if (stick) log.scrollTop = log.scrollHeight;
      }

      function reply(text) {
        if (text.indexOf("OK GREP") === 0) {
          appliedFilter = text.slice(8);
          highlight = compileHighlight(appliedFilter);
          requestedFilter = null;
          filterEl.dataset.applied = appliedFilter;
          showError("");
          setStatus(paused ? "paused" : "live", (paused ? "paused" : "live") + (appliedFilter ? ", filter " + appliedFilter + (highlight ? "" : " (no highlight: not a JavaScript RegExp)") : ""));
        } else if (text.indexOf("OK SINCE") === 0) {
          showError("");
        } else if (text.indexOf("SEQ ") === 0) {
          resumeFrom = String(parseInt(text.slice(4), 10) + 1);
        } else if (text.indexOf("ERR SINCE") === 0) {
          // The hub could not start this view's replay (NATS not connected yet): again later.
          showError(text.slice(4));
          if (ws) ws.close();
        } else if (text.indexOf("ERR ") === 0) {
          showError(text.slice(4));
        } else if (text === "OK PAUSE") {
          setStatus("paused", "paused (logcast keeps your place)");
        } else if (text === "OK RESUME") {
          setStatus("live", "live");
        } else if (text.indexOf("OK FILE") === 0) {
          fileEl.dataset.applied = text.slice(8);
        } else if (text.indexOf("DROPPED ") === 0) {
          droppedEl.hidden = false;
          droppedEl.textContent = text.slice(8) + " lines dropped: this view fell more than logcast's queue limit behind";
        } else if (text.indexOf("BYE") === 0) {
          setStatus("closed", text);
        }
      }

      // Lines logcast passed over because they came faster than a page can show them (it
      // sends the newest, a few frames a second): not lost to a slow page (that is DROPPED).
      function skip(n) {
        skipped += n;
        skippedEl.dataset.count = String(skipped);
        skippedEl.textContent = "skipped " + skipped + " lines: too fast to show";
        skippedEl.hidden = false;
      }

      function handle(message) {
        if (message.t === "lines") addLines(message.lines);
        else if (message.t === "skipped") skip(message.lines);
        else if (message.t === "reply") reply(message.text);
        else if (message.t === "hello") {
          for (var i = 0; i < message.files.length; i++) addFile(message.files[i]);
          if (message.since && resumeFrom === null) resumeFrom = message.since;
        }
      }

      function connect() {
        var scheme = location.protocol === "https:" ? "wss://" : "ws://";
        ws = new WebSocket(scheme + location.host + "/ws" + (resumeFrom !== null ? "?since=" + encodeURIComponent(resumeFrom) : ""));
        ws.onopen = function () {
          retry = 0;
          setStatus(paused ? "paused" : "live", paused ? "paused" : "live");
          // A reconnect restores the view's choices.
          if (appliedFilter || requestedFilter) send("GREP " + (requestedFilter !== null ? requestedFilter : appliedFilter));
          if (fileEl.value) send("FILE " + fileEl.value);
          if (paused) send("PAUSE");
        };
        ws.onmessage = function (e) {
          var message;
          try { message = JSON.parse(e.data); } catch (x) { return; }
          handle(message);
        };
        ws.onclose = function (e) {
          ws = null;
          retry = Math.min(retry + 1, 10);
          setStatus("disconnected", "disconnected (" + e.code + "); reconnecting");
          setTimeout(connect, 500 * retry);
        };
      }

      function init() {
        log = document.getElementById("log");
        statusEl = document.getElementById("status");
        countEl = document.getElementById("count");
        skippedEl = document.getElementById("skipped");
        errorEl = document.getElementById("error");
        droppedEl = document.getElementById("dropped");
        filterEl = document.getElementById("filter");
        fileEl = document.getElementById("file");
        pauseEl = document.getElementById("pause");
        filterEl.addEventListener("keydown", function (e) {
          if (e.key !== "Enter") return;
          showError("");
          requestedFilter = filterEl.value;
          send("GREP " + filterEl.value);
        });
        fileEl.addEventListener("change", function () { send("FILE " + fileEl.value); });
        pauseEl.addEventListener("click", function () {
          paused = !paused;
          pauseEl.textContent = paused ? "Resume" : "Pause";
          send(paused ? "PAUSE" : "RESUME");
        });
        document.getElementById("clear").addEventListener("click", function () {
          while (log.firstChild) log.removeChild(log.firstChild);
          countEl.textContent = shown + " lines (0 kept)";
        });
        connect();
      }

      if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
    })();

    """#

    /// The style sheet.
    static let style = #"""
    body { margin: 0; font: 13px/1.35 ui-monospace, monospace; background: #fff; color: #111; }
    header { position: sticky; top: 0; display: flex; flex-wrap: wrap; gap: 0.8em; align-items: center;
             padding: 0.5em 0.8em; background: #eef1f5; border-bottom: 1px solid #ccd; }
    #status[data-state="live"] { color: #086b08; }
    #status[data-state="paused"] { color: #a05a00; }
    #status[data-state="disconnected"], #status[data-state="closed"] { color: #b00020; }
    #error { padding: 0.4em 0.8em; background: #fde7ea; color: #b00020; }
    #dropped { padding: 0.4em 0.8em; background: #fff4d6; }
    #skipped { color: #5a6270; }
    #log { padding: 0.3em 0.8em; white-space: pre-wrap; word-break: break-all; }
    .line { border-bottom: 1px solid #f2f2f2; }
    .file { color: #5a6270; margin-right: 0.7em; }
    mark { background: #ffe066; color: inherit; }

    """#
}
