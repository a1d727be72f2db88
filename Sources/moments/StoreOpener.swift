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

    /// Runs `body` with the store running (PostgreSQL's pool and listener in a child task, stopped
    /// after): for a command that uses the store without a ServiceGroup.
    static func whileRunning<T>(_ store: any MomentsStore, _ body: () async throws -> T) async throws -> T {
        guard let postgres = store as? PostgresStore else { return try await body() }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await postgres.run() }
            do {
                try await postgres.ready()
                let result = try await body()
                try await postgres.close()
                return result
            } catch {
                try? await postgres.close()
                throw error
            }
        }
    }
}
