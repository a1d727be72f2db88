import Foundation
import GRDB

/// One line of the usage ledger: every reservation, consumption and release of a highlight.
public struct UsageEntry: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "usage_ledger"
    public var id: Int64?
    public var accountId: String
    public var jobId: String
    /// The calendar month (UTC) the unit counts against: "2026-11".
    public var period: String
    /// +1 reserve, 0 consume (the reserved unit is kept), -1 release.
    public var change: Int
    /// Worker time charged against the account's daily budget by this line (0 for most).
    public var workerSeconds: Double = 0
    public var reason: String
    public var createdAt: Date
}

/// A plan's terms for a job, as the accepting transaction applies them.
public struct QuotaLimits: Sendable, Equatable {
    /// Highlights per period; nil = no cap.
    public var monthly: Int?
    public var concurrent: Int
    /// Largest shorter side of the output, and how long the result is kept.
    public var outputCap: Int
    public var retentionHours: Double
    /// The plan's longest video (enforced on decoded timestamps by the worker).
    public var maxDurationSeconds: Double?
    /// Worker seconds per UTC day; nil = no budget.
    public var dailyWorkerSeconds: Double?
    public init(
        monthly: Int?, concurrent: Int, outputCap: Int, retentionHours: Double,
        maxDurationSeconds: Double? = nil, dailyWorkerSeconds: Double? = nil
    ) {
        self.monthly = monthly; self.concurrent = concurrent; self.outputCap = outputCap;
        self.retentionHours = retentionHours
        self.maxDurationSeconds = maxDurationSeconds; self.dailyWorkerSeconds = dailyWorkerSeconds
    }
}

/// Why the accepting transaction refused a job.
public enum QuotaRefusal: Error, Sendable, Equatable {
    case overQuota(limit: Int, used: Int)
    case tooManyJobs(limit: Int, active: Int)
    /// The day's worker time is spent (seconds used of `limit`).
    case overBudget(limit: Double, used: Double)
}

public enum QuotaState: String, Sendable { case reserved, consumed, released }

extension AppDatabase {
    /// Accepts a job in one write transaction that checks the plan's limits: the monthly quota
    /// (one unit is reserved, with a ledger line) and the number of jobs running at once. Two
    /// uploads racing for the last unit cannot both win: SQLite runs one writer at a time.
    /// `limits` is asked inside the transaction, with whether the account is pro at `now`.
    public func insertReserving(_ job: Job, now: Date, limits: @Sendable (Bool) -> QuotaLimits) async throws -> Result<
        Job, QuotaRefusal
    > {
        let result = try await pool.write { db -> Result<Job, QuotaRefusal> in
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
            try UsageEntry(
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
        try await pool.read { db in try Self.used(db, accountId: accountId, period: period) }
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
        try UsageEntry(
            id: nil, accountId: job.accountId, jobId: job.id, period: period, change: change,
            workerSeconds: settlement.workerSeconds, reason: settlement.reason, createdAt: now
        ).insert(db)
    }

    /// The ledger of an account, newest first.
    public func ledger(accountId: String, limit: Int = 100) async throws -> [UsageEntry] {
        try await pool.read { db in
            try UsageEntry.filter(Column("accountId") == accountId).order(Column("id").desc).limit(limit).fetchAll(db)
        }
    }
}
