import Foundation
import GRDB
import Store

/// Worker time as a budget: every attempt's processing time is charged to the account (on the
/// usage ledger) whatever the outcome, except when the service itself caused the failure. A plan's
/// `dailyWorkerSeconds` caps what one account can make the workers do in a UTC day.
extension AppDatabase {
    static func workerSecondsUsed(_ db: Database, accountId: String, since start: Date) throws -> Double {
        try Double.fetchOne(
            db,
            sql: """
                SELECT COALESCE(SUM(workerSeconds), 0) FROM usage_ledger WHERE accountId = ? AND createdAt >= ?
                """, arguments: [accountId, start]) ?? 0
    }

    /// Worker seconds charged to an account since the start of `now`'s UTC day.
    public func workerSecondsUsed(accountId: String, now: Date) async throws -> Double {
        try await writer.read { db in
            try Self.workerSecondsUsed(db, accountId: accountId, since: UsagePeriod.day(of: now).start)
        }
    }

    /// Charges one attempt's worker time without settling the job (a cancel, a shutdown, a retry).
    public func chargeWorkerTime(jobId: String, seconds: Double, reason: String, now: Date) async throws {
        guard seconds > 0 else { return }
        try await writer.write { db in
            guard var job = try Job.fetchOne(db, key: jobId) else { return }
            job.workerSeconds += seconds
            try job.update(db)
            try UsageEntry.stored(
                id: nil, accountId: job.accountId, jobId: job.id,
                period: job.quotaPeriod ?? UsagePeriod.month(of: now).name,
                change: 0, workerSeconds: seconds, reason: reason, createdAt: now
            ).insert(db)
        }
    }

    static func registerWorkerBudgetMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6 isolated jobs, retries with backoff, worker-time budget") { db in
            try db.alter(table: "job") { t in
                t.add(column: "maxDurationSeconds", .double)
                t.add(column: "abnormalExits", .integer).notNull().defaults(to: 0)
                t.add(column: "runAfter", .datetime)
                t.add(column: "workerSeconds", .double).notNull().defaults(to: 0)
            }
            try db.alter(table: "usage_ledger") { t in
                t.add(column: "workerSeconds", .double).notNull().defaults(to: 0)
            }
            try db.create(index: "usage_ledger_account_time", on: "usage_ledger", columns: ["accountId", "createdAt"])
        }
    }
}
