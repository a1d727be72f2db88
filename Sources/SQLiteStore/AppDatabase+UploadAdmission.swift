import Foundation
import GRDB
import Store

extension AppDatabase {
    static func registerUploadAdmissionMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v14 upload admission and sign-up limit") { db in
            try db.create(table: "upload_admission") { t in
                t.primaryKey("id", .text)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("createdAt", .datetime).notNull()
                t.column("expiresAt", .datetime).notNull()
            }
            try db.create(
                index: "upload_admission_account", on: "upload_admission", columns: ["accountId", "expiresAt"])
            try db.create(index: "upload_admission_expiry", on: "upload_admission", columns: ["expiresAt"])
            try db.create(table: "signup_attempt") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("client", .text).notNull()
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(index: "signup_attempt_client", on: "signup_attempt", columns: ["client", "createdAt"])
            try db.create(index: "signup_attempt_time", on: "signup_attempt", columns: ["createdAt"])
        }
    }

    /// The plan's checks for a new upload of `accountId`, inside the caller's write transaction:
    /// nil when there is room.
    static func uploadRefusal(_ db: Database, accountId: String, now: Date, limits: @Sendable (Bool) -> QuotaLimits)
        throws -> QuotaRefusal?
    {
        let pro = try Self.entitlement(db, accountId: accountId, now: now).grantsPro
        let limits = limits(pro)
        let period = UsagePeriod.month(of: now).name
        let used = try Self.used(db, accountId: accountId, period: period)
        if let monthly = limits.monthly, used >= monthly { return .overQuota(limit: monthly, used: used) }
        let busy =
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM job WHERE accountId = ?1 AND status IN ('pending', 'processing'))
                         + (SELECT COUNT(*) FROM resumable_upload WHERE accountId = ?1 AND \(Self.holdsPlace))
                         + (SELECT COUNT(*) FROM upload_admission WHERE accountId = ?1 AND expiresAt >= ?2)
                    """, arguments: [accountId, now, limits.uploadsActiveSince(now)]) ?? 0
        if busy >= limits.concurrent { return .tooManyJobs(limit: limits.concurrent, active: busy) }
        if let budget = limits.dailyWorkerSeconds {
            let spent = try Self.workerSecondsUsed(db, accountId: accountId, since: UsagePeriod.day(of: now).start)
            if spent >= budget { return .overBudget(limit: budget, used: spent) }
        }
        return nil
    }

    public func createUpload(_ upload: ResumableUpload, now: Date, limits: @Sendable (Bool) -> QuotaLimits) async throws
        -> Result<ResumableUpload, QuotaRefusal>
    {
        try await writer.write { db in
            if let refusal = try Self.uploadRefusal(db, accountId: upload.accountId, now: now, limits: limits) {
                return .failure(refusal)
            }
            try upload.insert(db)
            return .success(upload)
        }
    }

    public func admitUpload(
        id: String, accountId: String, until: Date, now: Date,
        limits: @Sendable (Bool) -> QuotaLimits
    ) async throws -> Result<Void, QuotaRefusal> {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM upload_admission WHERE expiresAt < ?", arguments: [now])
            if let refusal = try Self.uploadRefusal(db, accountId: accountId, now: now, limits: limits) {
                return .failure(refusal)
            }
            try db.execute(
                sql: "INSERT INTO upload_admission (id, accountId, createdAt, expiresAt) VALUES (?, ?, ?, ?)",
                arguments: [id, accountId, now, until])
            return .success(())
        }
    }

    public func renewUploadAdmission(id: String, until: Date) async throws {
        try await relaxedWrite { db in
            try db.execute(sql: "UPDATE upload_admission SET expiresAt = ? WHERE id = ?", arguments: [until, id])
        }
    }

    public func releaseUploadAdmission(id: String) async throws {
        try await relaxedWrite { db in
            try db.execute(sql: "DELETE FROM upload_admission WHERE id = ?", arguments: [id])
        }
    }

    public func uploadAdmissionIDs(prefix: String) async throws -> [String] {
        try await writer.read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM upload_admission WHERE substr(id, 1, length(?1)) = ?1", arguments: [prefix])
        }
    }

    public func admitSignup(client: String, perWindow: Int, windowSeconds: Double, now: Date) async throws
        -> SignupAdmission
    {
        guard perWindow > 0 else { return .admitted }
        return try await writer.write { db in
            let since = now.addingTimeInterval(-windowSeconds)
            try db.execute(sql: "DELETE FROM signup_attempt WHERE createdAt < ?", arguments: [since])
            let times = try Date.fetchAll(
                db, sql: "SELECT createdAt FROM signup_attempt WHERE client = ? ORDER BY createdAt",
                arguments: [client])
            if times.count >= perWindow {
                let retry = windowSeconds - now.timeIntervalSince(times[times.count - perWindow])
                return .refused(retryAfterSeconds: max(1, Int(retry.rounded(.up))))
            }
            try db.execute(
                sql: "INSERT INTO signup_attempt (client, createdAt) VALUES (?, ?)", arguments: [client, now])
            return .admitted
        }
    }
}
