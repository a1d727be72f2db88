import Foundation
import GRDB
import Store

extension AppDatabase {
    static func registerResumableUploadMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v9 resumable uploads") { db in
            try db.create(table: "resumable_upload") { t in
                t.primaryKey("id", .text)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("flavor", .text).notNull()
                t.column("length", .integer)
                t.column("offset", .integer).notNull().defaults(to: 0)
                t.column("filename", .text)
                t.column("targetDuration", .integer).notNull()
                t.column("quality", .text).notNull()
                t.column("state", .text).notNull()
                t.column("jobId", .text)
                t.column("errorCode", .text)
                t.column("errorMessage", .text)
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
                t.column("expiresAt", .datetime).notNull()
                t.column("holder", .text)
                t.column("heldUntil", .datetime)
            }
            try db.create(index: "resumable_upload_account", on: "resumable_upload", columns: ["accountId", "state"])
            try db.create(index: "resumable_upload_expiry", on: "resumable_upload", columns: ["state", "expiresAt"])
        }
    }

    /// A write of an upload's hold or offset, committed without waiting for the disk
    /// (synchronous = NORMAL: the WAL is synced at the next FULL commit or checkpoint). Safe here:
    /// the bytes are fsynced before their offset is written, so a power loss can only take the
    /// offset back to bytes that are on disk (the client sends the rest again), and a lost hold is
    /// no hold. It saves a WAL fsync per append, most of a 5 MB PATCH's overhead.
    func relaxedWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
            var result: T?
            try db.inTransaction {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    public func createUpload(_ upload: ResumableUpload) async throws {
        try await writer.write { db in try upload.insert(db) }
    }

    public func upload(id: String, accountId: String) async throws -> ResumableUpload? {
        try await writer.read { db in
            try ResumableUpload.filter(Column("id") == id && Column("accountId") == accountId).fetchOne(db)
        }
    }

    public func upload(id: String) async throws -> ResumableUpload? {
        try await writer.read { db in try ResumableUpload.fetchOne(db, key: id) }
    }

    public func holdUpload(id: String, accountId: String, holder: String, until: Date, now: Date) async throws
        -> UploadHold
    {
        try await relaxedWrite { db in
            guard
                var upload = try ResumableUpload.filter(Column("id") == id && Column("accountId") == accountId)
                    .fetchOne(db)
            else {
                return .missing
            }
            if upload.state == .receiving, upload.holder != nil, let held = upload.heldUntil, held > now {
                return .busy(upload)
            }
            guard upload.state == .receiving else { return .held(upload) }
            if upload.expiresAt < now {
                // Past its expiry and not yet swept: it stays dead (an append must not revive it).
                try db.execute(
                    sql:
                        "UPDATE resumable_upload SET state = 'expired', holder = NULL, heldUntil = NULL, updatedAt = ? WHERE id = ?",
                    arguments: [now, id])
                upload.state = .expired
                upload.holder = nil
                upload.heldUntil = nil
                return .held(upload)
            }
            upload.holder = holder
            upload.heldUntil = until
            try upload.update(db)
            return .held(upload)
        }
    }

    public func recordUploadOffset(
        id: String, holder: String, offset: Int64, length: Int64?, heldUntil: Date, expiresAt: Date,
        release: Bool, now: Date
    ) async throws -> Bool {
        try await relaxedWrite { db in
            try db.execute(
                sql: """
                    UPDATE resumable_upload SET offset = ?, length = COALESCE(length, ?), expiresAt = ?, updatedAt = ?,
                        holder = CASE WHEN ? THEN NULL ELSE holder END, heldUntil = CASE WHEN ? THEN NULL ELSE ? END
                    WHERE id = ? AND holder = ? AND state = 'receiving'
                    """, arguments: [offset, length, expiresAt, now, release, release, heldUntil, id, holder])
            return db.changesCount > 0
        }
    }

    public func releaseUpload(id: String, holder: String, now: Date) async throws {
        try await relaxedWrite { db in
            try db.execute(
                sql: "UPDATE resumable_upload SET holder = NULL, heldUntil = NULL WHERE id = ? AND holder = ?",
                arguments: [id, holder])
        }
    }

    public func finishUpload(
        id: String, holder: String, state: ResumableUploadState, jobId: String?, errorCode: String?,
        errorMessage: String?, now: Date
    ) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: """
                    UPDATE resumable_upload SET state = ?, jobId = ?, errorCode = ?, errorMessage = ?, holder = NULL, heldUntil = NULL, updatedAt = ?
                    WHERE id = ? AND holder = ? AND state = 'receiving'
                    """, arguments: [state, jobId, errorCode, errorMessage, now, id, holder])
            return db.changesCount > 0
        }
    }

    public func terminateUpload(id: String, accountId: String, now: Date) async throws -> ResumableUpload? {
        try await writer.write { db in
            guard
                let upload = try ResumableUpload.filter(Column("id") == id && Column("accountId") == accountId)
                    .fetchOne(db)
            else { return nil }
            if upload.state == .receiving {
                try db.execute(
                    sql:
                        "UPDATE resumable_upload SET state = 'terminated', holder = NULL, heldUntil = NULL, updatedAt = ? WHERE id = ?",
                    arguments: [now, id])
            }
            return upload
        }
    }

    public func expiredUploads(now: Date, limit: Int) async throws -> [ResumableUpload] {
        try await writer.read { db in
            try ResumableUpload.filter(Column("state") == "receiving" && Column("expiresAt") < now).limit(limit)
                .fetchAll(db)
        }
    }

    public func expireUpload(id: String, now: Date) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: """
                    UPDATE resumable_upload SET state = 'expired', holder = NULL, heldUntil = NULL, updatedAt = ?
                    WHERE id = ? AND state = 'receiving' AND expiresAt < ? AND (holder IS NULL OR heldUntil < ?)
                    """, arguments: [now, id, now, now])
            return db.changesCount > 0
        }
    }

    public func purgeFinishedUploads(before: Date) async throws -> Int {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM resumable_upload WHERE state != 'receiving' AND updatedAt < ?", arguments: [before])
            return db.changesCount
        }
    }

    public func receivingUploads(accountId: String, now: Date, activeSince: Date) async throws -> Int {
        try await writer.read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT COUNT(*) FROM resumable_upload WHERE accountId = ?1 AND \(Self.holdsPlace)",
                arguments: [accountId, now, activeSince]) ?? 0
        }
    }

    /// A resumable upload holding a place against jobs at once (?2 now, ?3 active since): receiving,
    /// not expired, and it received bytes lately or is receiving them now.
    static let holdsPlace = """
        state = 'receiving' AND expiresAt >= ?2 AND (updatedAt >= ?3 OR (holder IS NOT NULL AND heldUntil >= ?2))
        """

    public func uploadPlaceRefusal(
        id: String, accountId: String, now: Date, limits: @Sendable (Bool) -> QuotaLimits
    ) async throws -> QuotaRefusal? {
        try await writer.write { db in
            let limits = limits(try Self.entitlement(db, accountId: accountId, now: now).grantsPro)
            let busy =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT COUNT(*) FROM job WHERE accountId = ?1 AND status IN ('pending', 'processing'))
                             + (SELECT COUNT(*) FROM resumable_upload WHERE accountId = ?1 AND id != ?4 AND \(Self.holdsPlace))
                             + (SELECT COUNT(*) FROM upload_admission WHERE accountId = ?1 AND expiresAt >= ?2)
                        """, arguments: [accountId, now, limits.uploadsActiveSince(now), id]) ?? 0
            return busy >= limits.concurrent ? .tooManyJobs(limit: limits.concurrent, active: busy) : nil
        }
    }

    public func receivingUploadIDs(_ ids: [String]) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return try await writer.read { db in
            Set(
                try String.fetchAll(
                    db,
                    ResumableUpload.select(Column("id")).filter(
                        ids.contains(Column("id")) && Column("state") == "receiving")))
        }
    }
}
