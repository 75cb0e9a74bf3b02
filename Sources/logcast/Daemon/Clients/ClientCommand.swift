/// One line a client sends to logcast: the line protocol.
///
/// ```
/// GREP <regex>      replace this client's filter (an empty regex matches everything);
///                   answered `OK GREP <regex>` once compiled, until then the old filter holds
/// PAUSE / RESUME    stop / start sending lines to this client (lines meanwhile are skipped)
/// STATS             one line of counters
/// HELP              this list, as `HELP …` lines ending with `OK HELP`
/// QUIT              close the connection
/// LINE <file>\t<text>  (from a forwarding logcast) inject a line into this logcast's stream
/// SINCE <seq|time>  (a hub, --from) stored lines from a stream sequence or a time, then live
/// SYNC <token>      (from a forwarding logcast) answered `OK SYNC <token>` once every
///                   command before it has been handled: the acknowledgement of its LINEs
/// AUTH <token>      (with --auth-token-file) the first command: the shared token
/// ```
/// Commands are case-insensitive; anything else gets `ERR <reason>` and the connection stays up.
enum ClientCommand: Equatable {
    case grep(String)
    case pause
    case resume
    case stats
    case help
    case quit
    case line(file: String, text: String)
    case sync(String)
    case since(String)
    case auth(String)

    /// The `HELP` reply, one line per command.
    static let helpText = [
        "GREP <regex>   only lines matching <regex> from now on (Hyperscan syntax, bytes; empty: every line)",
        "PAUSE          stop sending lines (lines meanwhile are skipped)",
        "RESUME         send lines again",
        "STATS          one line of counters",
        "HELP           this list",
        "QUIT           say BYE and close",
        "LINE <file>\\t<text>  (forwarding logcasts) put a line into this logcast's stream",
        "SINCE <seq|time>  (hub: --from) the stream's lines from a sequence (1: all) or a time (2026-11-23T22:00:00Z, @<epoch s>), then live ones",
        "SYNC <token>   (forwarding logcasts) answered OK SYNC <token> after every command before it",
        "AUTH <token>   (when logcast asks for a token) the first command: answered OK AUTH, or ERR and the connection closes",
        "Sent to you: <file>: <line>, OK ..., ERR <reason>, STATS ..., HEARTBEAT <uptime>, DROPPED <lines lost so far>, BYE",
    ]

    /// Parses one protocol line.
    static func parse(_ raw: String) -> Result<ClientCommand, ProtocolError> {
        if raw.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0 == "\u{FFFD}" || $0.value == 0x7F }) {
            return .failure(.binary)
        }
        let trimmed = raw.drop(while: { $0 == " " })
        let verbEnd = trimmed.firstIndex(of: " ") ?? trimmed.endIndex
        let verb = trimmed[..<verbEnd].uppercased()
        let argument = trimmed[verbEnd...].drop(while: { $0 == " " })
        switch verb {
        case "GREP": return .success(.grep(String(argument)))
        case "PAUSE": return argument.isEmpty ? .success(.pause) : .failure(.unexpectedArgument(verb))
        case "RESUME": return argument.isEmpty ? .success(.resume) : .failure(.unexpectedArgument(verb))
        case "STATS": return argument.isEmpty ? .success(.stats) : .failure(.unexpectedArgument(verb))
        case "HELP": return argument.isEmpty ? .success(.help) : .failure(.unexpectedArgument(verb))
        case "QUIT": return argument.isEmpty ? .success(.quit) : .failure(.unexpectedArgument(verb))
        case "LINE":
            guard let tab = argument.firstIndex(of: "\t") else { return .failure(.malformedLine) }
            return .success(.line(file: String(argument[..<tab]), text: String(argument[argument.index(after: tab)...])))
        case "SINCE": return argument.isEmpty ? .failure(.missingArgument(verb)) : .success(.since(String(argument)))
        case "SYNC": return argument.isEmpty ? .failure(.missingArgument(verb)) : .success(.sync(String(argument)))
        case "AUTH": return argument.isEmpty ? .failure(.missingArgument(verb)) : .success(.auth(String(argument)))
        case "": return .failure(.empty)
        default: return .failure(.unknown(String(verb.prefix(32))))
        }
    }
}

/// Why a client's line was refused; sent back as `ERR <description>`.
enum ProtocolError: Error, Equatable, CustomStringConvertible {
    case empty
    case unknown(String)
    case unexpectedArgument(String)
    case missingArgument(String)
    case malformedLine
    case binary
    case lineTooLong(Int)

    var description: String {
        switch self {
        case .empty: return "empty command"
        case .unknown(let verb): return "unknown command '\(verb)' (try HELP)"
        case .unexpectedArgument(let verb): return "\(verb) takes no argument"
        case .missingArgument(let verb): return "\(verb) needs an argument"
        case .malformedLine: return "LINE needs '<file>\\t<text>'"
        case .binary: return "binary data is not a command"
        case .lineTooLong(let max): return "command longer than \(max) bytes"
        }
    }
}
