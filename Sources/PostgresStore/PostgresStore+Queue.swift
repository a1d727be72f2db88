import Foundation
import MediaVocabulary
import Store
import Wording
import PostgresNIO

/// The durable queue with leases. The claim is one statement: the next runnable job chosen with
/// AppDatabase's fairness order and locked `FOR UPDATE SKIP LOCKED` (claimers on any host skip each
/// other's rows instead of waiting), then marked processing. Every later write of the worker is
/// guarded by `status = 'processing' AND "leaseOwner" = worker`.
extension PostgresStore {
    public func claimNextJob(worker: String, leaseSeconds: Double, now: Date) async throws -> Job? {
        let expires = now.addingTimeInterval(leaseSeconds)
        return try await rows(
            """
            WITH next AS (
                SELECT j.id AS claimed FROM job j
                WHERE j.status = 'pending' AND (j."runAfter" IS NULL OR j."runAfter" <= \(now))
                ORDER BY
                    (SELECT COUNT(*) FROM job r WHERE r."accountId" = j."accountId" AND r.status = 'processing'),
                    COALESCE((SELECT MAX(s."startedAt") FROM job s WHERE s."accountId" = j."accountId" AND s.id <> j.id), '-infinity'),
                    j."createdAt", j.seq
                LIMIT 1
                FOR UPDATE OF j SKIP LOCKED
            )
            UPDATE job SET status = 'processing', attempts = attempts + 1, "startedAt" = \(now), "updatedAt" = \(now),
                "runAfter" = NULL, stage = 'starting',
                message = CASE WHEN attempts + 1 > 1 THEN \(Say.restartingAfterInterruption) ELSE \(Say.stageStarting) END,
                "leaseOwner" = \(worker), "leaseExpiresAt" = \(expires)
            FROM next WHERE job.id = next.claimed AND job.status = 'pending'
            RETURNING \(unescaped: Rows.jobColumns)
            """
        ).first.map(Rows.job)
    }

    public func renewLeases(worker: String, jobIDs: [String], leaseSeconds: Double, now: Date) async throws -> Set<
        String
    > {
        guard !jobIDs.isEmpty else { return [] }
        let expires = now.addingTimeInterval(leaseSeconds)
        return Set(
            try await rows(
                """
                UPDATE job SET "leaseExpiresAt" = \(expires)
                WHERE id = ANY(\(jobIDs)) AND status = 'processing' AND "leaseOwner" = \(worker) RETURNING id
                """
            ).map { try $0.decode(String.self) })
    }

    public func rescueExpiredLeases(maxAttempts: Int, backoffSeconds: Double, now: Date) async throws -> (
        requeued: [String], failed: [String]
    ) {
        try await transaction { connection in
            // SKIP LOCKED: a job whose worker is writing right now is not expired for long; the next
            // rescue pass (on this host or another) takes it.
            let stuck = try await connection.rows(
                """
                SELECT \(unescaped: Rows.jobColumns) FROM job
                WHERE status = 'processing' AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < \(now))
                ORDER BY "leaseExpiresAt" NULLS FIRST, seq FOR UPDATE SKIP LOCKED
                """, logger: logger
            ).map(Rows.job)
            var requeued: [String] = [], failed: [String] = []
            for var job in stuck {
                if let settlement = job.markInterrupted(
                    maxAttempts: maxAttempts, backoffSeconds: backoffSeconds, now: now)
                {
                    try await Self.settle(&job, settlement, now: now, on: connection, logger: logger)
                    failed.append(job.id)
                } else {
                    requeued.append(job.id)
                }
                try await Rows.update(job, on: connection, logger: logger)
                if job.status == .failed {
                    try await Self.enqueueWebhook(job, now: now, on: connection, logger: logger)
                    try await Self.enqueuePushes(job, now: now, on: connection, logger: logger)
                }
            }
            if !requeued.isEmpty { try await Self.notifyQueued(connection, logger: logger) }
            return (requeued, failed)
        }
    }

    public func updateProgress(id: String, worker: String, progress: Int, stage: String, message: String, now: Date)
        async throws -> Bool
    {
        let progress = min(100, max(0, progress))
        return try await rows(
            """
            UPDATE job SET progress = GREATEST(progress, \(progress)), stage = \(stage), message = \(message), "updatedAt" = \(now)
            WHERE id = \(id) AND status = 'processing' AND "leaseOwner" = \(worker) RETURNING id
            """
        ).count > 0
    }

    public func complete(
        id: String, worker: String, output: JobOutput, segments: [Segment], processingSeconds: Double,
        workerSeconds: Double, now: Date
    ) async throws -> Bool {
        try await transaction { connection in
            guard var job = try await Self.heldJob(id: id, worker: worker, on: connection, logger: logger) else {
                return false
            }
            let settlement = job.markCompleted(
                output: output, segments: segments, processingSeconds: processingSeconds,
                workerSeconds: workerSeconds, now: now)
            try await Self.settle(&job, settlement, now: now, on: connection, logger: logger)
            try await Rows.update(job, on: connection, logger: logger)
            try await Self.enqueueWebhook(job, now: now, on: connection, logger: logger)
            try await Self.enqueuePushes(job, now: now, on: connection, logger: logger)
            return true
        }
    }

    @discardableResult
    public func fail(id: String, worker: String?, code: String, message: String, chargeSeconds: Double, now: Date)
        async throws -> Bool
    {
        try await transaction { connection in
            let found: Job?
            if let worker {
                found = try await Self.heldJob(id: id, worker: worker, on: connection, logger: logger)
            } else {
                found = try await Rows.lockedJob(id: id, on: connection, logger: logger)
            }
            guard var job = found, job.status == .processing || job.status == .pending else { return false }
            let settlement = job.markFailed(code: code, message: message, chargeSeconds: chargeSeconds, now: now)
            try await Self.settle(&job, settlement, now: now, on: connection, logger: logger)
            try await Rows.update(job, on: connection, logger: logger)
            try await Self.enqueueWebhook(job, now: now, on: connection, logger: logger)
            try await Self.enqueuePushes(job, now: now, on: connection, logger: logger)
            return true
        }
    }

    @discardableResult
    public func retryLater(
        id: String, worker: String, runAfter: Date, abnormal: Bool, chargeSeconds: Double, reason: String, now: Date
    ) async throws -> Bool {
        try await transaction { connection in
            guard var job = try await Self.heldJob(id: id, worker: worker, on: connection, logger: logger) else {
                return false
            }
            let ledgerReason = job.markRetrying(
                runAfter: runAfter, abnormal: abnormal, chargeSeconds: chargeSeconds, reason: reason, now: now)
            try await Rows.update(job, on: connection, logger: logger)
            if chargeSeconds > 0 {
                try await Rows.addLedgerLine(
                    accountId: job.accountId, jobId: job.id, period: job.quotaPeriod ?? UsagePeriod.month(of: now).name,
                    change: 0, workerSeconds: chargeSeconds, reason: ledgerReason, now: now,
                    on: connection, logger: logger)
            }
            try await Self.notifyQueued(connection, logger: logger)
            return true
        }
    }

    public func requeue(id: String, worker: String, now: Date) async throws {
        try await transaction { connection in
            let changed = try await connection.run(
                """
                UPDATE job SET status = 'pending', attempts = GREATEST(0, attempts - 1), stage = NULL,
                    message = \(Say.requeuedAtShutdown), "updatedAt" = \(now),
                    "leaseOwner" = NULL, "leaseExpiresAt" = NULL
                WHERE id = \(id) AND status = 'processing' AND "leaseOwner" = \(worker) RETURNING id
                """, logger: logger)
            if changed > 0 { try await Self.notifyQueued(connection, logger: logger) }
        }
    }

    public func queueStatistics(now: Date) async throws -> QueueStatistics {
        guard
            let row = try await rows(
                """
                SELECT COUNT(*) FILTER (WHERE status = 'pending'), COUNT(*) FILTER (WHERE status = 'processing'),
                    MIN(GREATEST("createdAt", COALESCE("runAfter", "createdAt")))
                        FILTER (WHERE status = 'pending' AND ("runAfter" IS NULL OR "runAfter" <= \(now)))
                FROM job WHERE status IN ('pending', 'processing')
                """
            ).first
        else { return QueueStatistics(pending: 0, processing: 0, oldestPendingSeconds: nil) }
        let (pending, processing, oldest) = try row.decode((Int, Int, Date?).self)
        return QueueStatistics(
            pending: pending, processing: processing,
            oldestPendingSeconds: oldest.map { max(0, now.timeIntervalSince($0)) })
    }

    /// The job `worker` holds (processing under its lease), locked for the transaction; nil otherwise.
    static func heldJob(id: String, worker: String, on connection: PostgresConnection, logger: Logger) async throws
        -> Job?
    {
        try await connection.rows(
            """
            SELECT \(unescaped: Rows.jobColumns) FROM job
            WHERE id = \(id) AND status = 'processing' AND "leaseOwner" = \(worker) FOR UPDATE
            """, logger: logger
        ).first.map(Rows.job)
    }
}
