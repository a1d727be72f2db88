import Foundation
import GRDB
import Store

/// The service's database: accounts and the job queue, in SQLite through GRDB. On a file, one
/// DatabasePool (WAL: readers never wait for the writer); in memory (`inMemory`, for unit tests),
/// one DatabaseQueue with the same schema and code. Every consistent change is one write transaction.
public final class AppDatabase: MomentsStore {
    public let writer: any DatabaseWriter
    public var engine: String { "sqlite" }
    /// One process per database: the server holds the storage lock.
    public var isExclusive: Bool { true }
    /// This process's store events (SQLite has no other process to hear from).
    let broadcaster = StoreEventBroadcaster()
    /// `appStore.sandboxForAll`: App Store sandbox (TestFlight) subscriptions grant pro to every
    /// account, not only to testers. SQL sees it as `moments_sandbox_for_all()` (see `entitlement`).
    public let sandboxForAll: Bool

    /// Opens (creating if needed) the database at `path` and migrates it to the current schema.
    public convenience init(path: String, sandboxForAll: Bool = false) throws {
        let configuration = Self.configuration(sandboxForAll: sandboxForAll)
        Self.makePrivate(path)
        try self.init(writer: try DatabasePool(path: path, configuration: configuration), sandboxForAll: sandboxForAll)
    }

    /// A database that lives in memory only, for tests that need a store but not its file (the
    /// hummingbird-examples' in-memory repository, with this store's own code and schema).
    public static func inMemory(sandboxForAll: Bool = false) throws -> AppDatabase {
        try AppDatabase(
            writer: try DatabaseQueue(configuration: configuration(sandboxForAll: sandboxForAll)),
            sandboxForAll: sandboxForAll)
    }

    private init(writer: any DatabaseWriter, sandboxForAll: Bool) throws {
        self.sandboxForAll = sandboxForAll
        self.writer = writer
        try Self.migrator.migrate(writer)
        writer.add(transactionObserver: JobChangeObserver(broadcaster: broadcaster), extent: .databaseLifetime)
    }

    static func configuration(sandboxForAll: Bool) -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.maximumReaderCount = 8
        configuration.prepareDatabase { db in
            // FULL: a committed transaction (a charge on the ledger, a completed job) survives a power
            // loss, not only a crash. WAL keeps it cheap: one fsync of the log per commit.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            db.add(
                function: DatabaseFunction("moments_sandbox_for_all", argumentCount: 0, pure: true) { _ in sandboxForAll
                })
        }
        return configuration
    }

    /// The database and its -wal and -shm files readable by this process's user only (0600): they
    /// hold the API keys' hashes and the webhook endpoints. SQLite gives the -wal and -shm it makes
    /// the database file's mode, so the file is made 0600 before SQLite first opens it.
    static func makePrivate(_ path: String) {
        guard !path.isEmpty, path != ":memory:" else { return }
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 { Glibc.close(fd) }
        for file in [path, path + "-wal", path + "-shm"] { chmod(file, 0o600) }
    }

    /// A lookup of the hot paths (API key, job status): one cached statement on one of the
    /// readers, no transaction around it (a single SELECT is atomic on its own), awaited.
    func lookup<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writer.unsafeRead(body)
    }

    public func events() -> AsyncStream<StoreEvent> { broadcaster.subscribe() }

    /// Closes the database (checkpointing the WAL). Further use throws.
    public func close() throws {
        broadcaster.finish()
        try writer.close()
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
        migrator.registerMigration("v3 plans, quota ledger, subscriptions") { db in
            try db.alter(table: "job") { t in
                // The month the job's unit counts against and whether it is reserved, consumed or released.
                t.add(column: "quotaPeriod", .text)
                t.add(column: "quotaState", .text)
                // Largest shorter side of the output the account's plan allows.
                t.add(column: "outputCap", .integer)
                // How long the result is kept after the job finished (the plan's retention).
                t.add(column: "retentionHours", .double)
            }
            try db.create(table: "usage_ledger") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("jobId", .text).notNull()
                t.column("period", .text).notNull()
                t.column("change", .integer).notNull()
                t.column("reason", .text).notNull()
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(index: "usage_ledger_account_period", on: "usage_ledger", columns: ["accountId", "period"])
            try db.create(table: "subscription") { t in
                t.primaryKey("originalTransactionId", .text)
                t.column("accountId", .text).references("account", onDelete: .setNull)
                t.column("productId", .text).notNull()
                t.column("expiresAt", .datetime)
                t.column("gracePeriodExpiresAt", .datetime)
                t.column("state", .text).notNull()
                t.column("lastSignedDate", .datetime).notNull()
                t.column("environment", .text).notNull()
                t.column("source", .text).notNull()
                t.column("updatedAt", .datetime).notNull()
            }
            try db.create(index: "subscription_account", on: "subscription", columns: ["accountId"])
            // Jobs waiting or running when this migration runs hold a unit of their month.
            try db.execute(
                sql: """
                    UPDATE job SET quotaState = 'reserved', quotaPeriod = strftime('%Y-%m', createdAt) WHERE status IN ('pending', 'processing');
                    INSERT INTO usage_ledger (accountId, jobId, period, change, reason, createdAt)
                    SELECT accountId, id, quotaPeriod, 1, 'reserved when quotas were introduced', CURRENT_TIMESTAMP FROM job WHERE quotaState = 'reserved';
                    """)
            try db.create(table: "app_store_notification") { t in
                t.primaryKey("notificationUUID", .text)
                t.column("notificationType", .text).notNull()
                t.column("subtype", .text)
                t.column("originalTransactionId", .text)
                t.column("signedDate", .datetime).notNull()
                t.column("receivedAt", .datetime).notNull()
                t.column("applied", .boolean).notNull()
            }
        }
        migrator.registerMigration("v4 api keys and account state") { db in
            // An account holds several keys; the one it had moves into the new table.
            try db.create(table: "api_key") { t in
                t.primaryKey("id", .text)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("hash", .text).notNull().unique()
                t.column("prefix", .text).notNull()
                t.column("label", .text)
                t.column("createdAt", .datetime).notNull()
                t.column("lastUsedAt", .datetime)
                t.column("revokedAt", .datetime)
            }
            try db.create(index: "api_key_account", on: "api_key", columns: ["accountId"])
            for row in try Row.fetchAll(db, sql: "SELECT id, apiKeyHash, apiKeyPrefix, createdAt FROM account") {
                try db.execute(
                    sql: "INSERT INTO api_key (id, accountId, hash, prefix, createdAt) VALUES (?, ?, ?, ?, ?)",
                    arguments: [
                        UUID().uuidString.lowercased(), row["id"], row["apiKeyHash"], row["apiKeyPrefix"],
                        row["createdAt"]
                    ])
            }
            // The account table without its key columns (a UNIQUE column cannot be dropped: the
            // table is rebuilt, as SQLite documents; GRDB runs migrations with foreign keys off and
            // checks them before committing).
            try db.create(table: "account_v4") { t in
                t.primaryKey("id", .text)
                t.column("plan", .text).notNull().defaults(to: "free")
                t.column("label", .text)
                t.column("createdAt", .datetime).notNull()
                t.column("disabledAt", .datetime)
                t.column("tester", .boolean).notNull().defaults(to: false)
            }
            try db.execute(
                sql: """
                    INSERT INTO account_v4 (id, plan, label, createdAt) SELECT id, plan, label, createdAt FROM account;
                    DROP TABLE account;
                    ALTER TABLE account_v4 RENAME TO account;
                    """)
        }
        migrator.registerMigration("v5 sticky subscription revocation") { db in
            // When the subscription was revoked (refund, Apple's revoke, an operator): until a
            // REFUND_REVERSED or an operator's grant, no later transaction reinstates it.
            try db.alter(table: "subscription") { t in t.add(column: "revokedAt", .datetime) }
            try db.execute(sql: "UPDATE subscription SET revokedAt = updatedAt WHERE state = 'revoked'")
        }
        registerWorkerBudgetMigration(&migrator)
        migrator.registerMigration("v7 queue leases") { db in
            try db.alter(table: "job") { t in
                t.add(column: "leaseOwner", .text)
                t.add(column: "leaseExpiresAt", .datetime)
            }
            // Jobs processing now were claimed before leases existed: a minute to be renewed.
            try db.execute(
                sql: "UPDATE job SET leaseExpiresAt = datetime('now', '+60 seconds') WHERE status = 'processing'")
            try db.create(index: "job_lease", on: "job", columns: ["status", "leaseExpiresAt"])
        }
        registerWebhookMigration(&migrator)
        registerResumableUploadMigration(&migrator)
        migrator.registerMigration("v10 job edits") { db in
            // Shape, pinned and excluded moments, source name, re-cut origin (JSON, as GRDB stores nested values).
            try db.alter(table: "job") { t in t.add(column: "edit", .text) }
            try db.alter(table: "resumable_upload") { t in t.add(column: "edit", .text) }
        }
        migrator.registerMigration("v11 content fingerprints") { db in
            // Re-uploads recognised per account: one fingerprint per analysed input.
            try db.create(table: "content_fingerprint") { t in
                t.column("jobId", .text).primaryKey().references("job", onDelete: .cascade)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("duration", .double).notNull()
                t.column("fingerprint", .text).notNull()
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(
                index: "content_fingerprint_account", on: "content_fingerprint", columns: ["accountId", "createdAt"])
        }
        registerPushMigration(&migrator)
        registerUploadAdmissionMigration(&migrator)
        return migrator
    }
}
