import Foundation
import JobMedia
import Store

/// What an account can do to its jobs: read and list them, cancel a running one (its worker in
/// this process stops at once; another process's worker sees the cancellation through the store),
/// delete a finished one's media, and reach a completed one's files.
public final class JobControl: Sendable {
    let database: any JobRepository
    let mediaStorage: any MediaStorage
    let runner: JobRunner
    let clock: @Sendable () -> Date

    public init(
        database: any JobRepository, mediaStorage: any MediaStorage, runner: JobRunner,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database
        self.mediaStorage = mediaStorage
        self.runner = runner
        self.clock = clock
    }

    public func jobStatus(id: String, account: Account) async throws -> JobStatusRow? {
        try await database.jobStatus(id: id, accountId: account.id)
    }

    public func job(id: String, account: Account) async throws -> Job? {
        try await database.job(id: id, accountId: account.id)
    }

    public func jobs(account: Account, limit: Int, offset: Int) async throws -> (jobs: [Job], total: Int) {
        try await database.jobs(accountId: account.id, limit: limit, offset: offset)
    }

    /// DELETE: cancels a pending or processing job (its worker stops and removes its files before
    /// this returns); on a finished job, deletes its stored media. Idempotent. Nil: no such job.
    public func cancelOrDelete(id: String, account: Account) async throws -> Job? {
        guard let (job, previous) = try await database.cancel(id: id, accountId: account.id, now: clock()) else {
            return nil
        }
        switch previous {
        case .pending:
            if await !runner.stop(jobID: id) { await mediaStorage.removeMedia(jobID: id, keepingInput: false) }
            return job
        case .processing:
            // Its worker removes the files (even one that claimed it a moment ago: it looks at the
            // job's state once it has registered).
            await runner.stop(jobID: id)
            return job
        case .completed, .failed, .cancelled:
            await mediaStorage.removeMedia(jobID: id, keepingInput: false)
            if job.mediaDeletedAt == nil { try await database.markMediaDeleted(id: id, now: clock()) }
            return try await database.job(id: id) ?? job
        }
    }

    /// How to serve a stored file of a completed job whose media were not deleted; nil when there
    /// is nothing to serve. Throws `MediaStorageError.unavailable` when the storage cannot answer.
    public func media(_ job: Job, _ file: MediaFile) async throws -> MediaDownload? {
        guard job.status == .completed, job.mediaDeletedAt == nil else { return nil }
        do {
            return try await mediaStorage.download(jobID: job.id, file: file)
        } catch MediaStorageError.notFound {
            return nil
        }
    }

    /// Runs one sweeper pass now (the runner also sweeps every `storage.sweepIntervalSeconds`).
    /// `orphanGraceSeconds` replaces the hour a file belonging to nothing is left alone (files'
    /// ages are wall-clock ages, which a test cannot move).
    public func sweepNow(orphanGraceSeconds: TimeInterval? = nil) async {
        var sweeper = runner.sweeper
        if let orphanGraceSeconds { sweeper.graceSeconds = orphanGraceSeconds }
        await sweeper.sweep()
    }
}
