import ReactiveUV

/// A route: a method and a path pattern whose `:name` segments capture (`/users/:id`).
///
/// Not a framework: a matcher to use with ordinary operators.
///
/// ```swift
/// let user = HTTPRoute("GET", "/users/:id")
/// requests.subscribeNext { request in
///     if let params = user.match(request) {
///         request.respond(text: "user \(params["id"]!)")
///     } else {
///         request.respond(status: 404, text: "not found")
///     }
/// }
/// ```
public struct HTTPRoute: Sendable {
    /// The method matched (`GET`), or `nil` for any.
    public let method: String?
    private let segments: [Substring]

    /// A route for `method` and `pattern`.
    ///
    /// - Parameters:
    ///   - method: the method to match, or `nil` for any.
    ///   - pattern: `/`-separated literal segments and `:name` captures.
    public init(_ method: String?, _ pattern: String) {
        self.method = method
        segments = pattern.split(separator: "/")
    }

    /// The captured parameters (percent-decoded) when `request` matches, else `nil`.
    ///
    /// - Parameter request: the request to test.
    /// - Returns: parameter names (without `:`) to values, empty for a route with none.
    public func match(_ request: HTTPRequest) -> [String: String]? {
        if let method, method != request.method { return nil }
        let parts = request.path.split(separator: "/")
        guard parts.count == segments.count else { return nil }
        var params: [String: String] = [:]
        for (pattern, part) in zip(segments, parts) {
            if pattern.first == ":" {
                params[String(pattern.dropFirst())] = HTTPRouter.percentDecode(part)
            } else if pattern != part {
                return nil
            }
        }
        return params
    }
}

extension Signal where Value == HTTPRequest {
    /// The requests matching `route`, each with its captured parameters: composes with
    /// `filter`, `flattenMap` and `merge` like any signal.
    ///
    /// Events arrive on the connection's loop thread; disposal and termination are those of
    /// the source. A request that matches no route given to `route(_:)` is the
    /// application's to answer (for instance with a 404 on the unmatched remainder).
    ///
    /// - Parameter route: the route to match.
    /// - Returns: matching requests and their parameters.
    public func route(_ route: HTTPRoute) -> Signal<(request: HTTPRequest, parameters: [String: String])> {
        flattenMap { request -> Signal<(request: HTTPRequest, parameters: [String: String])> in
            guard let params = route.match(request) else { return .empty() }
            return .return((request, params))
        }
    }
}

/// Helpers shared by routes and query parsing.
enum HTTPRouter {
    /// `%XX` and `+` decoded; invalid escapes kept as they are; invalid UTF-8 replaced.
    static func percentDecode<S: StringProtocol>(_ s: S) -> String {
        var out: [UInt8] = []
        let bytes = Array(s.utf8)
        var i = 0
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 48...57: b - 48
            case 65...70: b - 55
            case 97...102: b - 87
            default: nil
            }
        }
        while i < bytes.count {
            if bytes[i] == 37, i + 2 < bytes.count, let h = hex(bytes[i + 1]), let l = hex(bytes[i + 2]) {
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(bytes[i] == 43 ? 32 : bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
