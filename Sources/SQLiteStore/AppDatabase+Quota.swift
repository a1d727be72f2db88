import Foundation
import GRDB
import Store

extension AppDatabase {
    /// Accepts a job in one write transaction that checks the plan's limits: the monthly quota
    /// (one unit is reserved, with a ledger line) and the number of jobs running at once. Two
    /// uploads racing for the last unit cannot both win: SQLite runs one writer at a time.
    /// `limits` is asked inside the transaction, with whether the account is pro at `now`.
    public func insertReserving(_ job: Job, now: Date, limits: @Sendable (Bool) -> QuotaLimits) async throws -> Result<
        Job, QuotaRefusal
    > {
        let result = try await writer.write { db -> Result<Job, QuotaRefusal> in
            let pro = try Self.entitlement(db, accountId: job.accountId, now: now).grantsPro
            let limits = limits(pro)
            let period = UsagePeriod.month(of: now).name
            let used = try Self.used(db, accountId: job.accountId, period: period)
            if let monthly = limits.monthly, used >= monthly {
                return .failure(.overQuota(limit: monthly, used: used))
            }
            let active = try Job.filter(
                Job.Columns.accountId == job.accountId
                    && [JobState.pending.rawValue, JobState.processing.rawValue].contains(Job.Columns.status)
            ).fetchCount(db)
            if active >= limits.concurrent {
                return .failure(.tooManyJobs(limit: limits.concurrent, active: active))
            }
            if let budget = limits.dailyWorkerSeconds {
                let spent = try Self.workerSecondsUsed(
                    db, accountId: job.accountId, since: UsagePeriod.day(of: now).start)
                if spent >= budget { return .failure(.overBudget(limit: budget, used: spent)) }
            }
            let job = job.reserving(limits, period: period)
            try job.insert(db)
            try UsageEntry.stored(
                id: nil, accountId: job.accountId, jobId: job.id, period: period, change: 1,
                reason: Job.reservationReason, createdAt: now
            ).insert(db)
            return .success(job)
        }
        if case .success = result { broadcaster.send(.jobQueued) }
        return result
    }

    /// Units counted this period: reserved (jobs in flight) and consumed (delivered).
    public func usedUnits(accountId: String, period: String) async throws -> Int {
        try await writer.read { db in try Self.used(db, accountId: accountId, period: period) }
    }

    static func used(_ db: Database, accountId: String, period: String) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COALESCE(SUM(change), 0) FROM usage_ledger WHERE accountId = ? AND period = ?",
            arguments: [accountId, period]) ?? 0
    }

    /// Settles a job's reserved unit inside the caller's transaction: consumed on delivery,
    /// released on failure or cancellation, charging `workerSeconds` against the day's budget on the
    /// same ledger line. Does nothing when it is already settled.
    static func settle(_ db: Database, job: inout Job, _ settlement: QuotaSettlement, now: Date) throws {
        guard let (period, change) = settlement.apply(to: &job) else { return }
        try UsageEntry.stored(
            id: nil, accountId: job.accountId, jobId: job.id, period: period, change: change,
            workerSeconds: settlement.workerSeconds, reason: settlement.reason, createdAt: now
        ).insert(db)
    }

    /// The ledger of an account, newest first.
    public func ledger(accountId: String, limit: Int = 100) async throws -> [UsageEntry] {
        try await writer.read { db in
            try UsageEntry.filter(Column("accountId") == accountId).order(Column("id").desc).limit(limit).fetchAll(db)
        }
    }
}
