import Foundation
import MediaVocabulary

// The store behind the service, as repository protocols with two engines: SQLite through GRDB
// (`AppDatabase`, the embedded default) and PostgreSQL through postgres-nio (`PostgresStore`, the
// production shape: many API and worker processes on many hosts). Every method is one consistent
// change (one transaction) or one read; the engines differ only in how they keep that promise.

/// Accounts.
public protocol AccountRepository: Sendable {
    /// Creates an account and its first API key; returns the account with the key (the only time
    /// the key exists in clear).
    func createAccount(label: String?, plan: String, now: Date) async throws -> (Account, String)
    /// The account holding the active (not revoked) key `apiKey`, or nil (disabled accounts too).
    func account(apiKey: String) async throws -> Account?
    func account(id: String) async throws -> Account?
    /// Disables (or enables again) an account; effective on its next request. Nil: no such account.
    @discardableResult func setDisabled(accountId: String, _ disabled: Bool, now: Date) async throws -> Account?
    /// Marks an account as a tester (sandbox purchases grant it pro) or not. Nil: no such account.
    @discardableResult func setTester(accountId: String, _ tester: Bool) async throws -> Account?
    /// Counts a sign-up of `client` (an opaque key) unless it already made `perWindow` in the last
    /// `windowSeconds`: one transaction, so the limit holds across API processes.
    func admitSignup(client: String, perWindow: Int, windowSeconds: Double, now: Date) async throws -> SignupAdmission
}

/// API keys: several per account, stored as SHA-256, checked on every request.
public protocol KeyRepository: Sendable {
    /// The key whose SHA-256 is `keyHash`, with its account: one indexed lookup, no cache.
    func authenticate(keyHash: String) async throws -> KeyLookup
    /// Records that a key was used, in the background (the caller does not wait).
    func recordKeyUse(keyId: String, at date: Date)
    /// Returns once every key use recorded before this call is written (or has failed): what a
    /// caller awaits instead of guessing how long the background write takes.
    func keyUsesRecorded() async
    /// Every key of the account (active and revoked), oldest first.
    func keys(accountId: String) async throws -> [APIKey]
    func createKey(accountId: String, label: String?, now: Date) async throws -> Result<(APIKey, String), KeyRefusal>
    /// Revokes one key; the account's last active key is refused.
    func revokeKey(id: String, accountId: String, now: Date) async throws -> Result<APIKey, KeyRefusal>
    /// A new key, every other active key revoked, in one transaction. Nil: no such account.
    func rotateKey(accountId: String, label: String?, now: Date) async throws -> (
        key: APIKey, secret: String, revoked: Int
    )?
}

/// Jobs as their owners and the sweeper see them.
public protocol JobRepository: Sendable {
    /// Inserts a job without reserving quota (tools and tests; the service uses `insertReserving`).
    func insertUnmetered(_ job: Job) async throws
    /// The job if it belongs to `accountId` (another account's job is indistinguishable from none).
    func job(id: String, accountId: String) async throws -> Job?
    /// The fields of GET …/status: one indexed lookup, no JSON decoding.
    func jobStatus(id: String, accountId: String) async throws -> JobStatusRow?
    func job(id: String) async throws -> Job?
    /// One page of an account's jobs, newest first, and the account's total.
    func jobs(accountId: String, limit: Int, offset: Int) async throws -> (jobs: [Job], total: Int)
    /// Cancels a pending or processing job of `accountId` (releasing its unit; a processing job's
    /// worker learns it through `StoreEvent.jobCancelled` and its next lease renewal). Returns the
    /// job after the change and the state it had before; nil: no such job for this account.
    func cancel(id: String, accountId: String, now: Date) async throws -> (job: Job, previous: JobState)?
    /// Marks a finished job's media deleted (the caller removes them).
    func markMediaDeleted(id: String, now: Date) async throws
    /// Records the state of a completed job's preview (`JobOutput.preview`); nothing when the job
    /// is not completed (deleted or cancelled meanwhile).
    func setPreview(id: String, _ preview: JobPreview, now: Date) async throws
    /// Finished jobs whose media still exist and whose retention ran out at `now`.
    func jobsWithExpiredMedia(now: Date, defaultRetentionHours: Double, limit: Int) async throws -> [Job]
    /// Which of `ids` are jobs (the sweeper removes media belonging to none).
    func existingJobIDs(_ ids: [String]) async throws -> Set<String>
    /// Recent successful jobs, newest first (time estimates).
    func recentCompletedJobs(limit: Int) async throws -> [Job]
    /// An account's jobs waiting or running.
    func activeJobs(accountId: String) async throws -> [Job]
    /// Jobs waiting or running, oldest first (queue position and wait estimate).
    func unfinishedJobs() async throws -> [Job]
}

/// The durable queue. A worker claims a job with a lease (`leaseExpiresAt`) that it renews while it
/// works; every write a worker makes about its job is guarded by `status = 'processing' AND
/// leaseOwner = worker`, so a worker whose lease was rescued (a host that froze and came back)
/// can neither complete nor fail a job another worker now holds: each job completes exactly once.
public protocol QueueRepository: Sendable {
    /// Atomically takes the next runnable pending job (fair across accounts: fewest running first,
    /// then the account whose last job started longest ago, then the oldest job; `runAfter` in the
    /// future skipped), marks it processing with one more attempt, `leaseOwner = worker` and
    /// `leaseExpiresAt = now + leaseSeconds`. Safe with any number of claimers on any hosts.
    func claimNextJob(worker: String, leaseSeconds: Double, now: Date) async throws -> Job?
    /// Extends the leases `worker` holds on `jobIDs` to `now + leaseSeconds`. Returns the ids it
    /// still holds; a job missing from the answer was cancelled or rescued: stop working on it.
    func renewLeases(worker: String, jobIDs: [String], leaseSeconds: Double, now: Date) async throws -> Set<String>
    /// Processing jobs whose lease expired before `now` (their worker or host is gone) go back to
    /// the queue with their attempt counted and `runAfter = now + backoffSeconds·2^(attempts−1)`
    /// (at most an hour), or fail (unit released) once started `maxAttempts` times.
    func rescueExpiredLeases(maxAttempts: Int, backoffSeconds: Double, now: Date) async throws -> (
        requeued: [String], failed: [String]
    )
    /// Progress of a held job (never decreasing). False: not held by `worker` any more.
    func updateProgress(id: String, worker: String, progress: Int, stage: String, message: String, now: Date)
        async throws -> Bool
    /// Completes a held job, consuming its unit and charging `workerSeconds`. False: not held any more
    /// (cancelled or rescued meanwhile; the caller discards the result).
    func complete(
        id: String, worker: String, output: JobOutput, segments: [Segment], processingSeconds: Double,
        workerSeconds: Double, now: Date
    ) async throws -> Bool
    /// Fails a job with a stable code and a sentence for the user; its unit is released and
    /// `chargeSeconds` charged. `worker` nil: any pending or processing job (operators, start-up).
    @discardableResult
    func fail(id: String, worker: String?, code: String, message: String, chargeSeconds: Double, now: Date) async throws
        -> Bool
    /// A held job back in the queue after a transient failure, to start after `runAfter` (attempt
    /// kept counted). `abnormal`: its child died (counted apart).
    @discardableResult
    func retryLater(
        id: String, worker: String, runAfter: Date, abnormal: Bool, chargeSeconds: Double, reason: String, now: Date
    ) async throws -> Bool
    /// Hands a held job back without counting the attempt (graceful shutdown of its worker).
    func requeue(id: String, worker: String, now: Date) async throws
    /// Queue depth and the age of the oldest runnable pending job (metrics).
    func queueStatistics(now: Date) async throws -> QueueStatistics
}

/// The monthly quota ledger and the daily worker-time budget.
public protocol UsageRepository: Sendable {
    /// Accepts a job in one transaction that checks the plan's limits (monthly quota: one unit
    /// reserved with a ledger line; jobs at once; daily worker time), race-free across processes.
    /// `limits` is asked inside the transaction with whether the account is pro at `now`.
    func insertReserving(_ job: Job, now: Date, limits: @Sendable (Bool) -> QuotaLimits) async throws -> Result<
        Job, QuotaRefusal
    >
    /// Units counted in `period`: reserved and consumed.
    func usedUnits(accountId: String, period: String) async throws -> Int
    /// The ledger of an account, newest first.
    func ledger(accountId: String, limit: Int) async throws -> [UsageEntry]
    /// Worker seconds charged to the account since the start of `now`'s UTC day.
    func workerSecondsUsed(accountId: String, now: Date) async throws -> Double
    /// Charges one attempt's worker time without settling the job.
    func chargeWorkerTime(jobId: String, seconds: Double, reason: String, now: Date) async throws
}

/// App Store subscriptions and the notifications that change them.
public protocol SubscriptionRepository: Sendable {
    /// App Store sandbox (TestFlight) subscriptions grant pro to every account, not only testers.
    var sandboxForAll: Bool { get }
    func entitlement(accountId: String, now: Date) async throws -> Entitlement
    func applyTransaction(_ tx: TransactionFacts, accountId: String, now: Date) async throws -> Result<
        Entitlement, SubscriptionRefusal
    >
    func applyNotification(
        uuid: String, type: String, subtype: String?, signedDate: Date, tx: TransactionFacts?,
        effect: NotificationEffect, now: Date
    ) async throws -> Bool
    func grantPro(accountId: String, until: Date, now: Date) async throws
    func revokeSubscriptions(accountId: String, now: Date) async throws -> Int
    func subscriptions(accountId: String) async throws -> [Subscription]
}

/// What happened in the store that a process may want to react to at once, wherever it happened:
/// PostgreSQL delivers them from every process (LISTEN/NOTIFY); SQLite from this process only
/// (its other writers are found by polling and lease renewal).
public enum StoreEvent: Sendable, Equatable {
    /// A job became runnable (inserted, re-queued, handed back).
    case jobQueued
    /// A job was cancelled by its owner.
    case jobCancelled(id: String)
    /// A webhook delivery was written to the outbox (a job reached a final state).
    case webhookQueued
    /// A push was written to the outbox (a job with registered devices completed or failed).
    case pushQueued
    /// What a job's event stream shows changed (status, progress, message, its media deleted),
    /// or the job was removed; nil: any job may have (events were missed). Sent after commit.
    case jobChanged(id: String?)
}

/// The store's events (jobs queued, cancelled and changed, deliveries queued): this process's, and
/// with PostgreSQL every process's.
public protocol StoreEventSource: Sendable {
    /// A stream of the store's events for as long as the caller iterates it.
    func events() -> AsyncStream<StoreEvent>
}

/// The whole store. A service takes only the repositories it uses (`any JobRepository & …`).
/// The recovery at start-up of the jobs a crash interrupted.
public protocol InterruptedJobRecovery: Sendable {
    /// True when only this process uses the store (SQLite behind the storage lock): at start-up
    /// every processing job is known to be orphaned and is recovered at once instead of waiting for
    /// its lease to expire.
    var isExclusive: Bool { get }
    /// At the start of an exclusive store's only process: every `processing` job was orphaned by a
    /// crash; each goes back to the queue, or fails after `maxAttempts`. A shared store recovers by
    /// leases instead and returns nothing here.
    func recoverInterruptedJobs(maxAttempts: Int, now: Date) throws -> (requeued: [String], failed: [String])
}

/// Whether the store can take writes, and which engine it is (GET /ready).
public protocol StoreHealth: Sendable {
    /// "sqlite" or "postgresql" (logs, metrics, /ready).
    var engine: String { get }
    /// Proves the database accepts writes (GET /ready).
    func checkWritable(now: Date) async throws
}

public protocol MomentsStore: AccountRepository, KeyRepository, JobRepository, QueueRepository, UsageRepository,
    SubscriptionRepository,
    UploadRepository, WebhookRepository, PushRepository, FingerprintRepository, KeptInputRepository, StoreEventSource,
    StoreHealth, InterruptedJobRecovery
{
    /// Closes connections. Further use throws.
    func close() async throws
}

/// Queue depth for metrics and readiness.
public struct QueueStatistics: Sendable, Equatable {
    /// Jobs pending (including those waiting out a retry backoff) and processing.
    public var pending: Int
    public var processing: Int
    /// Seconds the oldest runnable pending job has waited (createdAt or runAfter, whichever is
    /// later); nil when none waits.
    public var oldestPendingSeconds: Double?

    public init(pending: Int, processing: Int, oldestPendingSeconds: Double?) {
        self.pending = pending; self.processing = processing; self.oldestPendingSeconds = oldestPendingSeconds
    }
}

/// Calendar periods the quota and the budget count in (UTC).
public enum UsagePeriod {
    /// The calendar month of `date` ("2026-11") and the instant the next one starts.
    public static func month(of date: Date) -> (name: String, resetsAt: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month], from: date)
        let start = calendar.date(from: parts)!
        let next = calendar.date(byAdding: .month, value: 1, to: start)!
        return (String(format: "%04d-%02d", parts.year!, parts.month!), next)
    }

    /// The UTC day of `date`: its start and the next day's start.
    public static func day(of date: Date) -> (start: Date, next: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let start = calendar.startOfDay(for: date)
        return (start, calendar.date(byAdding: .day, value: 1, to: start)!)
    }
}

/// Backoff of a job re-queued after its `attempts`-th start: base·2^(attempts−1), at most an hour.
public func retryBackoff(base: Double, attempts: Int) -> Double {
    min(3600, base * pow(2, Double(max(0, attempts - 1))))
}

extension MomentsStore {
    /// The ledger's newest 100 lines.
    public func ledger(accountId: String) async throws -> [UsageEntry] {
        try await ledger(accountId: accountId, limit: 100)
    }
}

extension MomentsStore {
    public func recoverInterruptedJobs(maxAttempts: Int, now: Date) throws -> (requeued: [String], failed: [String]) {
        ([], [])
    }
}
