// A small bounded reader of one HTTP request head, standing in for ReactiveUVHTTP's server
// until it is merged (then the example uses `HTTP.listen`). It reads at most 16 KiB, stops
// reading once the head has ended, and hands over the bytes read past it (the client's
// first WebSocket frames may arrive with the request).

import ReactiveUV
import ReactiveUVHTTP

/// A request line's method and target, and the header fields.
struct RequestHead {
    let method: String
    let target: String
    let headers: HTTPHeaders
}

/// Why a head could not be read.
enum RequestHeadError: Error {
    case tooLarge
    case malformed
    case closedEarly
}

/// Reads one request head from `tcp`: sends it with the bytes read past it, then completes.
func readRequestHead(_ tcp: TCPConnection) -> Signal<(RequestHead, [UInt8])> {
    Signal.create { subscriber in
        let reading = CompoundDisposable()
        var bytes: [UInt8] = []
        var done = false
        // The head waits until the reads subscription is gone: a TLS connection can deliver
        // it while `subscribe` is still running, and whoever gets it must be able to read.
        var subscribed = false
        var outcome: [() -> Void] = []
        func emit(_ send: @escaping () -> Void) {
            if subscribed { send() } else { outcome.append(send) }
        }
        reading.add(tcp.reads.subscribe(
            next: { chunk in
                guard !done else { return }
                let searchFrom = max(0, bytes.count - 3)
                bytes += chunk
                guard let end = headEnd(bytes, from: searchFrom) else {
                    if bytes.count > 16 * 1024 {
                        done = true
                        reading.dispose()
                        emit { subscriber.sendError(RequestHeadError.tooLarge) }
                    }
                    return
                }
                done = true
                reading.dispose()
                guard let head = parse(bytes[..<(end - 4)]) else {
                    emit { subscriber.sendError(RequestHeadError.malformed) }
                    return
                }
                emit {
                    subscriber.sendNext((head, Array(bytes[end...])))
                    subscriber.sendCompleted()
                }
            },
            error: { subscriber.sendError($0) },
            completed: { if !done { subscriber.sendError(RequestHeadError.closedEarly) } }))
        subscribed = true
        outcome.forEach { $0() }
        return reading
    }
}

/// The index after the head's blank line, searching from `start`.
private func headEnd(_ bytes: [UInt8], from start: Int) -> Int? {
    guard bytes.count >= 4 else { return nil }
    var i = start
    while i + 4 <= bytes.count {
        if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i + 4 }
        i += 1
    }
    return nil
}

/// The request line and fields; `nil` for anything malformed.
private func parse(_ bytes: ArraySlice<UInt8>) -> RequestHead? {
    guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
    let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
    let requestLine = lines[0].split(separator: " ")
    guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return nil }
    var headers = HTTPHeaders()
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":"), colon != line.startIndex, line.first != " ", line.first != "\t" else { return nil }
        var value = line[line.index(after: colon)...]
        while value.first == " " || value.first == "\t" { value.removeFirst() }
        while value.last == " " || value.last == "\t" { value.removeLast() }
        headers.add(String(line[..<colon]), String(value))
    }
    return RequestHead(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers)
}
