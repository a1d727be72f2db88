import Foundation
import MediaVocabulary
import GRDB
import Store
import Wording

/// The durable job queue: every state change is one write transaction guarded by the state it
/// expects, so a cancel racing a completion has exactly one winner.
extension AppDatabase {
    /// Inserts a job without reserving quota: for tools and tests. The service accepts jobs with
    /// `insertReserving`.
    public func insertUnmetered(_ job: Job) async throws {
        try await writer.write { db in try job.insert(db) }
        broadcaster.send(.jobQueued)
    }

    /// The job if it belongs to `accountId` (another account's job is indistinguishable from none).
    public func job(id: String, accountId: String) async throws -> Job? {
        try await writer.read { db in
            try Job.filter(Job.Columns.id == id && Job.Columns.accountId == accountId).fetchOne(db)
        }
    }

    /// The fields of GET …/status, read on the caller's thread with a cached statement: the most
    /// frequent request (apps poll it) costs one indexed lookup and no JSON decoding.
    public func jobStatus(id: String, accountId: String) async throws -> JobStatusRow? {
        try await lookup { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT status, progress, message, mediaDeletedAt IS NOT NULL FROM job WHERE id = ? AND accountId = ?
                    """)
            guard let row = try Row.fetchOne(statement, arguments: [id, accountId]),
                let status = JobState(rawValue: row[0])
            else { return nil }
            return JobStatusRow(id: id, status: status, progress: row[1], message: row[2], mediaDeleted: row[3])
        }
    }

    public func job(id: String) async throws -> Job? {
        try await writer.read { db in try Job.fetchOne(db, key: id) }
    }

    /// One page of an account's jobs, newest first, and the account's total.
    public func jobs(accountId: String, limit: Int, offset: Int) async throws -> (jobs: [Job], total: Int) {
        try await writer.read { db in
            let all = Job.filter(Job.Columns.accountId == accountId)
            let page = try all.order(Job.Columns.createdAt.desc, Column.rowID.desc).limit(limit, offset: offset)
                .fetchAll(db)
            return (page, try all.fetchCount(db))
        }
    }

    /// Atomically takes the next pending job and marks it processing (one more attempt). Fair across
    /// accounts: the job of the account with the fewest jobs running goes first, then the account
    /// whose last job started longest ago (round robin), then the oldest job. So one account's
    /// backlog never starves the others. Jobs waiting out a retry backoff (`runAfter`) are skipped.
    public func claimNextJob(worker: String, leaseSeconds: Double, now: Date) async throws -> Job? {
        try await writer.write { db in
            guard
                var job = try Job.fetchOne(
                    db,
                    sql: """
                        SELECT j.* FROM job j
                        WHERE j.status = 'pending' AND (j.runAfter IS NULL OR j.runAfter <= ?)
                        ORDER BY
                          (SELECT COUNT(*) FROM job r WHERE r.accountId = j.accountId AND r.status = 'processing'),
                          COALESCE((SELECT MAX(s.startedAt) FROM job s WHERE s.accountId = j.accountId AND s.id != j.id), ''),
                          j.createdAt, j.rowid
                        LIMIT 1
                        """, arguments: [now])
            else { return nil }
            job.status = .processing
            job.attempts += 1
            job.startedAt = now
            job.updatedAt = now
            job.runAfter = nil
            job.leaseOwner = worker
            job.leaseExpiresAt = now.addingTimeInterval(leaseSeconds)
            job.stage = "starting"
            job.message = job.attempts > 1 ? Say.restartingAfterInterruption : Say.stageStarting
            try job.update(db)
            return job
        }
    }

    /// Puts a processing job back in the queue after a transient failure, to start again after
    /// `runAfter` (its attempt stays counted). `abnormal`: its child died (counted apart: the
    /// second such death fails the job for good). `chargeSeconds` go on the ledger.
    @discardableResult
    public func retryLater(
        id: String, worker: String, runAfter: Date, abnormal: Bool, chargeSeconds: Double, reason: String, now: Date
    ) async throws -> Bool {
        let queued = try await writer.write { db -> Bool in
            guard var job = try Job.fetchOne(db, key: id), job.status == .processing, job.leaseOwner == worker else {
                return false
            }
            let ledgerReason = job.markRetrying(
                runAfter: runAfter, abnormal: abnormal, chargeSeconds: chargeSeconds, reason: reason, now: now)
            try job.update(db)
            if chargeSeconds > 0 {
                try UsageEntry.stored(
                    id: nil, accountId: job.accountId, jobId: job.id,
                    period: job.quotaPeriod ?? UsagePeriod.month(of: now).name,
                    change: 0, workerSeconds: chargeSeconds, reason: ledgerReason, createdAt: now
                ).insert(db)
            }
            return true
        }
        if queued { broadcaster.send(.jobQueued) }
        return queued
    }

    /// Records progress of a held job; progress never decreases. False when the job is no longer
    /// held by `worker` (cancelled or rescued), which tells the worker to stop.
    @discardableResult
    public func updateProgress(id: String, worker: String, progress: Int, stage: String, message: String, now: Date)
        async throws -> Bool
    {
        try await writer.write { db in
            try db.execute(
                sql: """
                    UPDATE job SET progress = MAX(progress, ?), stage = ?, message = ?, updatedAt = ?
                    WHERE id = ? AND status = 'processing' AND leaseOwner = ?
                    """, arguments: [min(100, max(0, progress)), stage, message, now, id, worker])
            return db.changesCount > 0
        }
    }

    /// Extends `worker`'s leases; returns the ids it still holds.
    public func renewLeases(worker: String, jobIDs: [String], leaseSeconds: Double, now: Date) async throws -> Set<
        String
    > {
        guard !jobIDs.isEmpty else { return [] }
        return try await writer.write { db in
            var held = Set<String>()
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE job SET leaseExpiresAt = ? WHERE id = ? AND status = 'processing' AND leaseOwner = ?
                    """)
            for id in jobIDs {
                try statement.execute(arguments: [now.addingTimeInterval(leaseSeconds), id, worker])
                if db.changesCount > 0 { held.insert(id) }
            }
            return held
        }
    }

    /// Re-queues (or fails after `maxAttempts`) processing jobs whose lease expired.
    public func rescueExpiredLeases(maxAttempts: Int, backoffSeconds: Double, now: Date) async throws -> (
        requeued: [String], failed: [String]
    ) {
        let result = try await writer.write { db in
            let expired = try Job.filter(
                Job.Columns.status == JobState.processing.rawValue
                    && (Job.Columns.leaseExpiresAt == nil || Job.Columns.leaseExpiresAt < now)
            ).fetchAll(db)
            return try Self.recover(expired, in: db, maxAttempts: maxAttempts, backoffSeconds: backoffSeconds, now: now)
        }
        if !result.requeued.isEmpty { broadcaster.send(.jobQueued) }
        if !result.failed.isEmpty { broadcaster.send(.webhookQueued); broadcaster.send(.pushQueued) }
        return result
    }

    /// Completes a held job. False when it is not held any more (cancelled or rescued meanwhile;
    /// the caller then removes the result).
    public func complete(
        id: String, worker: String, output: JobOutput, segments: [Segment], processingSeconds: Double,
        workerSeconds: Double = 0, now: Date
    ) async throws -> Bool {
        let completed = try await writer.write { db in
            guard var job = try Job.fetchOne(db, key: id), job.status == .processing, job.leaseOwner == worker else {
                return false
            }
            let settlement = job.markCompleted(
                output: output, segments: segments, processingSeconds: processingSeconds,
                workerSeconds: workerSeconds, now: now)
            try Self.settle(db, job: &job, settlement, now: now)
            try job.update(db)
            try Self.enqueueWebhook(db, job: job, now: now)
            try Self.enqueuePushes(db, job: job, now: now)
            return true
        }
        if completed { broadcaster.send(.webhookQueued); broadcaster.send(.pushQueued) }
        return completed
    }

    /// Fails a processing job with a stable code and a sentence for the user. Its unit is released;
    /// `chargeSeconds` of worker time stay charged (0 when the service caused the failure).
    @discardableResult
    public func fail(id: String, worker: String?, code: String, message: String, chargeSeconds: Double = 0, now: Date)
        async throws -> Bool
    {
        let failed = try await writer.write { db in
            guard var job = try Job.fetchOne(db, key: id) else { return false }
            if let worker {
                guard job.status == .processing, job.leaseOwner == worker else { return false }
            } else {
                guard job.status == .processing || job.status == .pending else { return false }
            }
            let settlement = job.markFailed(code: code, message: message, chargeSeconds: chargeSeconds, now: now)
            try Self.settle(db, job: &job, settlement, now: now)
            try job.update(db)
            try Self.enqueueWebhook(db, job: job, now: now)
            try Self.enqueuePushes(db, job: job, now: now)
            return true
        }
        if failed { broadcaster.send(.webhookQueued); broadcaster.send(.pushQueued) }
        return failed
    }

    /// Cancels a pending or processing job of `accountId`. Returns the job after the change and the
    /// state it had before, or nil when there is no such job for this account.
    public func cancel(id: String, accountId: String, now: Date) async throws -> (job: Job, previous: JobState)? {
        let result = try await writer.write { db -> (job: Job, previous: JobState)? in
            guard var job = try Job.filter(Job.Columns.id == id && Job.Columns.accountId == accountId).fetchOne(db)
            else { return nil }
            let previous = job.status
            if !previous.isFinished {
                let settlement = job.markCancelled(now: now)
                try Self.settle(db, job: &job, settlement, now: now)
                try job.update(db)
                try Self.enqueueWebhook(db, job: job, now: now)
            }
            return (job, previous)
        }
        if let result, !result.previous.isFinished {
            broadcaster.send(.jobCancelled(id: id))
            broadcaster.send(.webhookQueued)
        }
        return result
    }

    /// Marks a finished job's media deleted (the files are removed by the caller).
    public func markMediaDeleted(id: String, now: Date) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE job SET mediaDeletedAt = COALESCE(mediaDeletedAt, ?), updatedAt = ? WHERE id = ?",
                arguments: [now, now, id])
            // With its media goes what re-uploads were recognised by.
            try db.execute(sql: "DELETE FROM content_fingerprint WHERE jobId = ?", arguments: [id])
        }
    }

    public func setPreview(id: String, _ preview: JobPreview, now: Date) async throws {
        try await writer.write { db in
            guard var job = try Job.fetchOne(db, key: id), job.status == .completed, job.output != nil else { return }
            job.output?.preview = preview
            job.updatedAt = now
            try job.update(db)
        }
    }

    /// Puts a processing job back in the queue without counting the attempt (graceful shutdown).
    public func requeue(id: String, worker: String, now: Date) async throws {
        let queued = try await writer.write { db -> Bool in
            try db.execute(
                sql: """
                    UPDATE job SET status = 'pending', attempts = MAX(0, attempts - 1), stage = NULL, leaseOwner = NULL,
                    leaseExpiresAt = NULL, message = ?, updatedAt = ?
                    WHERE id = ? AND status = 'processing' AND leaseOwner = ?
                    """, arguments: [Say.requeuedAtShutdown, now, id, worker])
            return db.changesCount > 0
        }
        if queued { broadcaster.send(.jobQueued) }
    }

    /// At start-up of the only process using this database (SQLite behind the storage lock): jobs
    /// left processing by a crash go back to the queue at once (no lease to wait out), or fail once
    /// they have been started `maxAttempts` times. Returns (re-queued, failed) ids.
    public func recoverInterruptedJobs(maxAttempts: Int, now: Date) throws -> (requeued: [String], failed: [String]) {
        try writer.write { db in
            try Self.recover(
                try Job.filter(Job.Columns.status == JobState.processing.rawValue).fetchAll(db), in: db,
                maxAttempts: maxAttempts, backoffSeconds: 0, now: now)
        }
    }

    private static func recover(_ stuck: [Job], in db: Database, maxAttempts: Int, backoffSeconds: Double, now: Date)
        throws -> (requeued: [String], failed: [String])
    {
        var requeued: [String] = [], failed: [String] = []
        for var job in stuck {
            if let settlement = job.markInterrupted(maxAttempts: maxAttempts, backoffSeconds: backoffSeconds, now: now)
            {
                try settle(db, job: &job, settlement, now: now)
                failed.append(job.id)
            } else {
                requeued.append(job.id)
            }
            try job.update(db)
            if job.status == .failed {
                try enqueueWebhook(db, job: job, now: now)
                try enqueuePushes(db, job: job, now: now)
            }
        }
        return (requeued, failed)
    }

    /// Finished jobs whose media still exist and whose retention (their own, else
    /// `defaultRetentionHours`) has run out at `now`.
    public func jobsWithExpiredMedia(now: Date, defaultRetentionHours: Double, limit: Int = 500) async throws -> [Job] {
        try await writer.read { db in
            try Job.fetchAll(
                db,
                sql: """
                    SELECT * FROM job WHERE finishedAt IS NOT NULL AND mediaDeletedAt IS NULL
                    AND julianday(finishedAt) + COALESCE(retentionHours, ?) / 24.0 < julianday(?) LIMIT ?
                    """, arguments: [defaultRetentionHours, now, limit])
        }
    }

    /// Ids of all jobs that exist (the sweeper removes directories belonging to none).
    public func existingJobIDs(_ ids: [String]) async throws -> Set<String> {
        try await writer.read { db in
            Set(try String.fetchAll(db, Job.select(Job.Columns.id).filter(ids.contains(Job.Columns.id))))
        }
    }

    /// Recent successful jobs (input and processing time), newest first, for the time estimate.
    public func recentCompletedJobs(limit: Int = 20) async throws -> [Job] {
        try await writer.read { db in
            try Job.filter(Job.Columns.status == JobState.completed.rawValue && Column("processingSeconds") != nil)
                .order(Job.Columns.finishedAt.desc).limit(limit).fetchAll(db)
        }
    }

    /// An account's jobs waiting or running.
    public func activeJobs(accountId: String) async throws -> [Job] {
        try await writer.read { db in
            try Job.filter(
                Job.Columns.accountId == accountId
                    && [JobState.pending.rawValue, JobState.processing.rawValue].contains(Job.Columns.status)
            ).fetchAll(db)
        }
    }

    /// Jobs waiting or running, oldest first (queue position and wait estimate).
    public func unfinishedJobs() async throws -> [Job] {
        try await writer.read { db in
            try Job.filter([JobState.pending.rawValue, JobState.processing.rawValue].contains(Job.Columns.status))
                .order(Job.Columns.createdAt, Column.rowID).fetchAll(db)
        }
    }

    public func queueStatistics(now: Date) async throws -> QueueStatistics {
        try await writer.read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT COALESCE(SUM(status = 'pending'), 0), COALESCE(SUM(status = 'processing'), 0),
                           MIN(CASE WHEN status = 'pending' AND (runAfter IS NULL OR runAfter <= ?) THEN MAX(createdAt, COALESCE(runAfter, createdAt)) END)
                    FROM job WHERE status IN ('pending', 'processing')
                    """, arguments: [now])
            let oldest: Date? = row?[2]
            return QueueStatistics(
                pending: row?[0] ?? 0, processing: row?[1] ?? 0,
                oldestPendingSeconds: oldest.map { max(0, now.timeIntervalSince($0)) })
        }
    }

    /// Writes the heartbeat row: proves the database file (and its WAL) accepts writes.
    public func checkWritable(now: Date = Date()) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT INTO heartbeat(id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at = excluded.at",
                arguments: [now])
        }
    }
}
