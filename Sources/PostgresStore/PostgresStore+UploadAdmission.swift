import Foundation
import Store
import Logging
import PostgresNIO

/// Upload admission and the sign-up limit (AppDatabase's UploadAdmission.swift). An admission
/// locks the account row first, as accepting a job does: every upload of the account, from any
/// process, waits its turn to count and insert, so parallel creations cannot all pass the check.
extension PostgresStore {
    /// The plan's checks for a new upload of `accountId`, inside the caller's transaction (the
    /// account row locked): nil when there is room.
    func uploadRefusal(
        _ accountId: String, now: Date, limits: @Sendable (Bool) -> QuotaLimits,
        on connection: PostgresConnection
    ) async throws -> QuotaRefusal? {
        let pro = try await entitlement(accountId, now: now, on: connection).grantsPro
        let limits = limits(pro)
        let period = UsagePeriod.month(of: now).name
        let used = try await Self.used(accountId, period: period, on: connection, logger: logger)
        if let monthly = limits.monthly, used >= monthly { return .overQuota(limit: monthly, used: used) }
        let since = limits.uploadsActiveSince(now)
        let busy =
            try await connection.rows(
                """
                SELECT (SELECT COUNT(*) FROM job WHERE "accountId" = \(accountId) AND status IN ('pending', 'processing'))
                     + (SELECT COUNT(*) FROM resumable_upload WHERE "accountId" = \(accountId) AND state = 'receiving' AND "expiresAt" >= \(now)
                          AND ("updatedAt" >= \(since) OR (holder IS NOT NULL AND "heldUntil" >= \(now))))
                     + (SELECT COUNT(*) FROM upload_admission WHERE "accountId" = \(accountId) AND "expiresAt" >= \(now))
                """, logger: logger
            ).first?.decode(Int.self) ?? 0
        if busy >= limits.concurrent { return .tooManyJobs(limit: limits.concurrent, active: busy) }
        if let budget = limits.dailyWorkerSeconds {
            let spent = try await Self.workerSecondsUsed(
                accountId, since: UsagePeriod.day(of: now).start, on: connection, logger: logger)
            if spent >= budget { return .overBudget(limit: budget, used: spent) }
        }
        return nil
    }

    public func createUpload(_ u: ResumableUpload, now: Date, limits: @Sendable (Bool) -> QuotaLimits) async throws
        -> Result<ResumableUpload, QuotaRefusal>
    {
        try await transaction { connection -> Result<ResumableUpload, QuotaRefusal> in
            _ = try await Self.lockAccount(u.accountId, on: connection, logger: logger)
            if let refusal = try await uploadRefusal(u.accountId, now: now, limits: limits, on: connection) {
                return .failure(refusal)
            }
            try await connection.run(
                """
                INSERT INTO resumable_upload (id, "accountId", flavor, length, "offset", filename, "targetDuration", quality, state,
                    "createdAt", "updatedAt", "expiresAt", edit)
                VALUES (\(u.id), \(u.accountId), \(u.flavor), \(u.length), \(u.offset), \(u.filename), \(u.targetDuration), \(u.quality.rawValue),
                    \(u.state.rawValue), \(u.createdAt), \(u.updatedAt), \(u.expiresAt), \(try Rows.json(u.edit))::jsonb)
                """, logger: logger)
            return .success(u)
        }
    }

    public func admitUpload(
        id: String, accountId: String, until: Date, now: Date,
        limits: @Sendable (Bool) -> QuotaLimits
    ) async throws -> Result<Void, QuotaRefusal> {
        try await transaction { connection -> Result<Void, QuotaRefusal> in
            _ = try await Self.lockAccount(accountId, on: connection, logger: logger)
            // Places whose request died (its process with it) lapse.
            try await connection.run("DELETE FROM upload_admission WHERE \"expiresAt\" < \(now)", logger: logger)
            if let refusal = try await uploadRefusal(accountId, now: now, limits: limits, on: connection) {
                return .failure(refusal)
            }
            try await connection.run(
                """
                INSERT INTO upload_admission (id, "accountId", "createdAt", "expiresAt") VALUES (\(id), \(accountId), \(now), \(until))
                """, logger: logger)
            return .success(())
        }
    }

    public func renewUploadAdmission(id: String, until: Date) async throws {
        try await execute("UPDATE upload_admission SET \"expiresAt\" = \(until) WHERE id = \(id)")
    }

    public func releaseUploadAdmission(id: String) async throws {
        try await execute("DELETE FROM upload_admission WHERE id = \(id)")
    }

    public func uploadAdmissionIDs(prefix: String) async throws -> [String] {
        try await rows("SELECT id FROM upload_admission WHERE left(id, length(\(prefix))) = \(prefix)").map {
            try $0.decode(String.self)
        }
    }

    public func admitSignup(client: String, perWindow: Int, windowSeconds: Double, now: Date) async throws
        -> SignupAdmission
    {
        guard perWindow > 0 else { return .admitted }
        return try await transaction { connection -> SignupAdmission in
            // One sign-up of a client at a time, whichever process takes it.
            try await connection.run(
                "SELECT pg_advisory_xact_lock(hashtextextended(\("signup:" + client), 0))", logger: logger)
            let since = now.addingTimeInterval(-windowSeconds)
            // Every client's attempts older than the window go (they count no more).
            try await connection.run("DELETE FROM signup_attempt WHERE \"createdAt\" < \(since)", logger: logger)
            let times = try await connection.rows(
                """
                SELECT "createdAt" FROM signup_attempt WHERE client = \(client) ORDER BY "createdAt"
                """, logger: logger
            ).map { try $0.decode(Date.self) }
            if times.count >= perWindow {
                let retry = windowSeconds - now.timeIntervalSince(times[times.count - perWindow])
                return .refused(retryAfterSeconds: max(1, Int(retry.rounded(.up))))
            }
            try await connection.run(
                "INSERT INTO signup_attempt (client, \"createdAt\") VALUES (\(client), \(now))", logger: logger)
            return .admitted
        }
    }
}
