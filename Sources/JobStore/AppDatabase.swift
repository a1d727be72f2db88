import Foundation
import GRDB

/// The service's database: accounts and the job queue, in SQLite through GRDB. One DatabasePool
/// (WAL: readers never wait for the writer); every consistent change is one write transaction.
public final class AppDatabase: Sendable {
    public let pool: DatabasePool

    /// Opens (creating if needed) the database at `path` and migrates it to the current schema.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.maximumReaderCount = 8
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    /// Closes the database (checkpointing the WAL). Further use throws.
    public func close() throws {
        try pool.close()
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 accounts and jobs") { db in
            try db.create(table: "account") { t in
                t.primaryKey("id", .text)
                t.column("apiKeyHash", .text).notNull().unique()
                t.column("apiKeyPrefix", .text).notNull()
                // Plans and quotas (next issue) hang off the account: the plan name is here already.
                t.column("plan", .text).notNull().defaults(to: "free")
                t.column("label", .text)
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "job") { t in
                t.primaryKey("id", .text)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("status", .text).notNull()
                t.column("stage", .text)
                t.column("progress", .integer).notNull().defaults(to: 0)
                t.column("message", .text).notNull()
                t.column("targetDuration", .integer).notNull()
                t.column("quality", .text).notNull()
                t.column("input", .jsonText).notNull()
                t.column("estimatedSeconds", .integer).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("createdAt", .datetime).notNull()
                t.column("startedAt", .datetime)
                t.column("finishedAt", .datetime)
                t.column("updatedAt", .datetime).notNull()
                t.column("processingSeconds", .double)
                t.column("errorCode", .text)
                t.column("errorMessage", .text)
                t.column("output", .jsonText)
                t.column("segments", .jsonText)
                t.column("mediaDeletedAt", .datetime)
            }
            try db.create(index: "job_queue", on: "job", columns: ["status", "createdAt"])
            try db.create(index: "job_account", on: "job", columns: ["accountId", "createdAt"])
        }
        migrator.registerMigration("v2 heartbeat") { db in
            // One row rewritten by GET /ready: proof that the database accepts writes.
            try db.create(table: "heartbeat") { t in
                t.primaryKey("id", .integer)
                t.column("at", .datetime).notNull()
            }
        }
        return migrator
    }
}
