import Foundation
import JobMedia
import Logging
import PostgresStore
import SQLiteStore
import Store

/// Opens the store a `StoreLocation` names: SQLite (creating its folder) or PostgreSQL.
enum StoreOpener {
    static func open(_ location: StoreLocation, sandboxForAll: Bool, logger: Logger) async throws -> any MomentsStore {
        switch location {
        case .sqlite(let path):
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            return try AppDatabase(path: path, sandboxForAll: sandboxForAll)
        case .postgresql(let url):
            return try await PostgresStore(url: url, sandboxForAll: sandboxForAll, logger: logger)
        }
    }
}
