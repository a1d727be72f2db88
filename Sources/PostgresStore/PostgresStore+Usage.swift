import Foundation
import Store
import Logging
import PostgresNIO

/// The monthly quota ledger and the daily worker-time budget (AppDatabase's Quota.swift and
/// WorkerBudget.swift). Accepting a job locks the account row first: every upload of the account,
/// from any process, waits its turn to count and insert, so two uploads racing for the last unit
/// cannot both win.
extension PostgresStore {
    public func insertReserving(_ job: Job, now: Date, limits: @Sendable (Bool) -> QuotaLimits) async throws -> Result<
        Job, QuotaRefusal
    > {
        try await transaction { connection -> Result<Job, QuotaRefusal> in
            _ = try await Self.lockAccount(job.accountId, on: connection, logger: logger)
            let pro = try await entitlement(job.accountId, now: now, on: connection).grantsPro
            let limits = limits(pro)
            let period = UsagePeriod.month(of: now).name
            let used = try await Self.used(job.accountId, period: period, on: connection, logger: logger)
            if let monthly = limits.monthly, used >= monthly {
                return .failure(.overQuota(limit: monthly, used: used))
            }
            let active =
                try await connection.rows(
                    """
                    SELECT COUNT(*) FROM job WHERE "accountId" = \(job.accountId) AND status IN ('pending', 'processing')
                    """, logger: logger
                ).first?.decode(Int.self) ?? 0
            if active >= limits.concurrent {
                return .failure(.tooManyJobs(limit: limits.concurrent, active: active))
            }
            if let budget = limits.dailyWorkerSeconds {
                let spent = try await Self.workerSecondsUsed(
                    job.accountId, since: UsagePeriod.day(of: now).start, on: connection, logger: logger)
                if spent >= budget { return .failure(.overBudget(limit: budget, used: spent)) }
            }
            let job = job.reserving(limits, period: period)
            try await Rows.insert(job, on: connection, logger: logger)
            try await Rows.addLedgerLine(
                accountId: job.accountId, jobId: job.id, period: period, change: 1,
                reason: Job.reservationReason, now: now, on: connection, logger: logger)
            try await Self.notifyQueued(connection, logger: logger)
            return .success(job)
        }
    }

    public func usedUnits(accountId: String, period: String) async throws -> Int {
        try await client.withConnection { connection in
            try await Self.used(accountId, period: period, on: connection, logger: logger)
        }
    }

    static func used(_ accountId: String, period: String, on connection: PostgresConnection, logger: Logger)
        async throws -> Int
    {
        try await connection.rows(
            """
            SELECT COALESCE(SUM(change), 0)::bigint FROM usage_ledger WHERE "accountId" = \(accountId) AND period = \(period)
            """, logger: logger
        ).first?.decode(Int.self) ?? 0
    }

    public func ledger(accountId: String, limit: Int) async throws -> [UsageEntry] {
        try await rows(
            """
            SELECT \(unescaped: Rows.ledgerColumns) FROM usage_ledger WHERE "accountId" = \(accountId) ORDER BY id DESC LIMIT \(limit)
            """
        ).map(Rows.ledgerEntry)
    }

    public func workerSecondsUsed(accountId: String, now: Date) async throws -> Double {
        try await client.withConnection { connection in
            try await Self.workerSecondsUsed(
                accountId, since: UsagePeriod.day(of: now).start, on: connection, logger: logger)
        }
    }

    static func workerSecondsUsed(
        _ accountId: String, since start: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> Double {
        try await connection.rows(
            """
            SELECT COALESCE(SUM("workerSeconds"), 0)::double precision FROM usage_ledger
            WHERE "accountId" = \(accountId) AND "createdAt" >= \(start)
            """, logger: logger
        ).first?.decode(Double.self) ?? 0
    }

    public func chargeWorkerTime(jobId: String, seconds: Double, reason: String, now: Date) async throws {
        guard seconds > 0 else { return }
        try await transaction { connection in
            guard var job = try await Rows.lockedJob(id: jobId, on: connection, logger: logger) else { return }
            job.workerSeconds += seconds
            try await connection.run(
                "UPDATE job SET \"workerSeconds\" = \(job.workerSeconds) WHERE id = \(jobId)", logger: logger)
            try await Rows.addLedgerLine(
                accountId: job.accountId, jobId: job.id, period: job.quotaPeriod ?? UsagePeriod.month(of: now).name,
                change: 0, workerSeconds: seconds, reason: reason, now: now, on: connection, logger: logger)
        }
    }
}
