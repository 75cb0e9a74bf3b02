/// A type-erased command, so errors can carry the command that produced them.
public protocol AnyCommand: AnyObject, Sendable {}

/// Errors of ``Command``: RAC's `RACCommandErrorDomain`.
public enum CommandError: Error, CustomStringConvertible {
    /// `execute` was called while the command was disabled (RAC's
    /// `RACCommandErrorNotEnabled`); carries the command (RAC's `RACUnderlyingCommandErrorKey`).
    case notEnabled(command: any AnyCommand)

    /// RAC's message: "The command is disabled and cannot be executed".
    public var description: String {
        switch self {
        case .notEnabled: return "The command is disabled and cannot be executed"
        }
    }

    /// The command this error is about.
    public var command: any AnyCommand {
        switch self {
        case .notEnabled(let command): return command
        }
    }

    /// Whether this is a `notEnabled` error.
    public var isNotEnabled: Bool {
        if case .notEnabled = self { return true }
        return false
    }
}
