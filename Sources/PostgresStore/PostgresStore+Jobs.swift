import Foundation
import Store
import PostgresNIO

/// Jobs as their owners and the sweeper see them (AppDatabase's JobQueue.swift, read side and
/// owner's changes).
extension PostgresStore {
    public func insertUnmetered(_ job: Job) async throws {
        try await transaction { connection in
            try await Rows.insert(job, on: connection, logger: logger)
            try await Self.notifyQueued(connection, logger: logger)
        }
    }

    public func job(id: String, accountId: String) async throws -> Job? {
        try await rows(
            "SELECT \(unescaped: Rows.jobColumns) FROM job WHERE id = \(id) AND \"accountId\" = \(accountId)"
        ).first.map(Rows.job)
    }

    public func jobStatus(id: String, accountId: String) async throws -> JobStatusRow? {
        var found: HotStatements.JobStatus.Row?
        for try await row in try await client.execute(
            HotStatements.JobStatus(id: id, accountId: accountId), logger: logger)
        { found = row }
        guard let (status, progress, message, deleted) = found else { return nil }
        guard let state = JobState(rawValue: status) else { return nil }
        return JobStatusRow(id: id, status: state, progress: progress, message: message, mediaDeleted: deleted)
    }

    public func job(id: String) async throws -> Job? {
        try await rows("SELECT \(unescaped: Rows.jobColumns) FROM job WHERE id = \(id)").first.map(Rows.job)
    }

    public func jobs(accountId: String, limit: Int, offset: Int) async throws -> (jobs: [Job], total: Int) {
        // One snapshot for the page and the total (REPEATABLE READ is what SQLite's read gives).
        try await transaction { connection in
            try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", logger: logger)
            let page = try await connection.rows(
                """
                SELECT \(unescaped: Rows.jobColumns) FROM job WHERE "accountId" = \(accountId)
                ORDER BY "createdAt" DESC, seq DESC LIMIT \(limit) OFFSET \(offset)
                """, logger: logger
            ).map(Rows.job)
            let total =
                try await connection.rows("SELECT COUNT(*) FROM job WHERE \"accountId\" = \(accountId)", logger: logger)
                .first?.decode(Int.self) ?? 0
            return (page, total)
        }
    }

    public func cancel(id: String, accountId: String, now: Date) async throws -> (job: Job, previous: JobState)? {
        try await transaction { connection in
            guard
                var job = try await connection.rows(
                    """
                    SELECT \(unescaped: Rows.jobColumns) FROM job WHERE id = \(id) AND "accountId" = \(accountId) FOR UPDATE
                    """, logger: logger
                ).first.map(Rows.job)
            else { return nil }
            let previous = job.status
            if !previous.isFinished {
                let settlement = job.markCancelled(now: now)
                try await Self.settle(&job, settlement, now: now, on: connection, logger: logger)
                try await Rows.update(job, on: connection, logger: logger)
                try await connection.run("SELECT pg_notify(\(Self.cancelChannel), \(job.id))", logger: logger)
                try await Self.enqueueWebhook(job, now: now, on: connection, logger: logger)
            }
            return (job, previous)
        }
    }

    public func markMediaDeleted(id: String, now: Date) async throws {
        try await transaction { connection in
            try await connection.run(
                """
                UPDATE job SET "mediaDeletedAt" = COALESCE("mediaDeletedAt", \(now)), "updatedAt" = \(now) WHERE id = \(id)
                """, logger: logger)
            // With its media goes what re-uploads were recognised by.
            try await connection.run(#"DELETE FROM content_fingerprint WHERE "jobId" = \#(id)"#, logger: logger)
        }
    }

    public func setPreview(id: String, _ preview: JobPreview, now: Date) async throws {
        try await transaction { connection in
            guard var job = try await Rows.lockedJob(id: id, on: connection, logger: logger), job.status == .completed,
                job.output != nil
            else { return }
            job.output?.preview = preview
            job.updatedAt = now
            try await Rows.update(job, on: connection, logger: logger)
        }
    }

    public func jobsWithExpiredMedia(now: Date, defaultRetentionHours: Double, limit: Int) async throws -> [Job] {
        try await rows(
            """
            SELECT \(unescaped: Rows.jobColumns) FROM job WHERE "finishedAt" IS NOT NULL AND "mediaDeletedAt" IS NULL
            AND "finishedAt" + COALESCE("retentionHours", \(defaultRetentionHours)) * interval '1 hour' < \(now) LIMIT \(limit)
            """
        ).map(Rows.job)
    }

    public func existingJobIDs(_ ids: [String]) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return Set(try await rows("SELECT id FROM job WHERE id = ANY(\(ids))").map { try $0.decode(String.self) })
    }

    public func recentCompletedJobs(limit: Int) async throws -> [Job] {
        try await rows(
            """
            SELECT \(unescaped: Rows.jobColumns) FROM job WHERE status = 'completed' AND "processingSeconds" IS NOT NULL
            ORDER BY "finishedAt" DESC LIMIT \(limit)
            """
        ).map(Rows.job)
    }

    public func activeJobs(accountId: String) async throws -> [Job] {
        try await rows(
            """
            SELECT \(unescaped: Rows.jobColumns) FROM job WHERE "accountId" = \(accountId) AND status IN ('pending', 'processing')
            """
        ).map(Rows.job)
    }

    public func unfinishedJobs() async throws -> [Job] {
        try await rows(
            """
            SELECT \(unescaped: Rows.jobColumns) FROM job WHERE status IN ('pending', 'processing') ORDER BY "createdAt", seq
            """
        ).map(Rows.job)
    }

    // MARK: Shared

    /// A job became runnable: every process listening learns it when this transaction commits.
    static func notifyQueued(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("SELECT pg_notify(\(queuedChannel), '')", logger: logger)
    }

    /// Settles a job's reserved unit inside the caller's transaction (like AppDatabase.settle):
    /// consumed on delivery, released on failure or cancellation, with `workerSeconds` on the
    /// same ledger line. Nothing when already settled.
    static func settle(
        _ job: inout Job, _ settlement: QuotaSettlement, now: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard let (period, change) = settlement.apply(to: &job) else { return }
        try await Rows.addLedgerLine(
            accountId: job.accountId, jobId: job.id, period: period, change: change,
            workerSeconds: settlement.workerSeconds, reason: settlement.reason, now: now, on: connection, logger: logger
        )
    }
}
