import Foundation

/// Which store `database.url` names: SQLite (empty, `sqlite:PATH`, or a plain path) or PostgreSQL
/// (`postgres://` or `postgresql://`).
public enum StoreLocation: Equatable, Sendable {
    case sqlite(path: String)
    case postgresql(url: String)

    public init(_ url: String, storagePath: String) {
        let trimmed = url.trimmingCharacters(in: .whitespaces)
        let lower = trimmed.lowercased()
        if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") {
            self = .postgresql(url: trimmed)
        } else if trimmed.isEmpty {
            self = .sqlite(path: StorageLayout(root: storagePath).databasePath)
        } else if lower.hasPrefix("sqlite:") {
            var path = String(trimmed.dropFirst("sqlite:".count))
            // sqlite:///abs/path and sqlite://rel as well as sqlite:path
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            self = .sqlite(path: path.isEmpty ? StorageLayout(root: storagePath).databasePath : path)
        } else {
            self = .sqlite(path: trimmed)
        }
    }

    /// The location for logs: a PostgreSQL URL without its password.
    public var redacted: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgresql(let url):
            guard var parts = URLComponents(string: url) else { return "postgresql://…" }
            if parts.password != nil { parts.password = "***" }
            parts.query = nil
            return parts.string ?? "postgresql://…"
        }
    }
}

public struct StoreLocationError: Error, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}
