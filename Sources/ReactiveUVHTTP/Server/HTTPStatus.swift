/// Reason phrases for the status line (RFC 9110 §15); a status without one gets an empty
/// phrase, which the grammar allows.
enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: ""
        }
    }

    /// Whether a response with this status to this method carries no body (RFC 9110 §6.4.1).
    static func hasNoBody(_ status: Int, method: String) -> Bool {
        // The length first: `==` of two different strings, "GET" and "HEAD", called
        // `_stringCompareWithSmolCheck` on every response.
        hasNoBody(status, isHead: method.utf8.count == 4 && method == "HEAD")
    }

    /// ``hasNoBody(_:method:)`` with the method's test made by the caller
    /// (``HTTPRequest/isHead`` reads it in place, without copying the method out).
    static func hasNoBody(_ status: Int, isHead: Bool) -> Bool {
        isHead || status < 200 || status == 204 || status == 304
    }
}
