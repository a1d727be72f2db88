import Foundation
import JobStore
import Logging
import MediaEngine
import MomentsConfig
import Synchronization
import AppStore
import Telemetry

/// What the HTTP layer asks of the job system: accounts, accepting uploads, reading and cancelling
/// jobs, readiness. It owns the database, the storage layout and the workers.
public final class JobService: Sendable {
    public let database: any MomentsStore
    public let layout: StorageLayout
    /// Where job media live (folders under storage.path, or an S3 bucket: `storage.backend`).
    public let mediaStorage: any MediaStorage
    public let settings: ServiceSettings
    public let runner: JobRunner
    public let clock: @Sendable () -> Date
    let inspector: UploadInspector
    let estimator = TimeEstimator()
    /// Frees the plain uploads' places this host's dead processes left (started with the service;
    /// awaited before the first admission: `UploadAdmission.swift`).
    let releasePlacesOfDeadProcesses: Task<Void, Never>

    public let plans: PlanSettings
    /// Nil when no Apple root certificate is configured: subscription endpoints then refuse
    /// (fail closed) with `appStoreUnavailable` as the reason.
    public let appStore: AppStoreVerifier?
    public let appStoreUnavailable: String?

    /// Creates the storage folders, opens the store (`store`, or SQLite under `settings.storagePath`
    /// when nil; see `StoreLocation`), recovers jobs a crash interrupted, and loads the Apple root
    /// certificates.
    public init(
        settings: ServiceSettings, media: MediaDefaults, plans: PlanSettings = PlanSettings(),
        appStore: AppStoreSettings = AppStoreSettings(), store: (any MomentsStore)? = nil,
        mediaStorage: (any MediaStorage)? = nil, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.plans = plans
        (self.appStore, self.appStoreUnavailable) = Self.verifier(appStore)
        if let reason = appStoreUnavailable {
            logger.notice("App Store verification is off", metadata: ["reason": "\(reason)"])
        }
        let layout = StorageLayout(root: settings.storagePath)
        try layout.prepare()
        let database: any MomentsStore
        if let store {
            database = store
        } else {
            guard case .sqlite(let path) = StoreLocation(settings.databaseURL, storagePath: settings.storagePath) else {
                throw StoreLocationError(reason: "a PostgreSQL database is opened by the caller (moments serve/worker)")
            }
            database = try AppDatabase(path: path, sandboxForAll: appStore.sandboxForAll)
        }
        // One process per storage folder when the store is the embedded SQLite (it has no leases
        // to tell another process's jobs from orphans); a shared store has no such limit.
        lock = database.isExclusive ? try StorageLock(layout.path(".lock")) : nil
        let mediaStorage =
            try mediaStorage ?? MediaStorageFactory.make(settings: settings, layout: layout, logger: logger)
        self.mediaStorage = mediaStorage
        self.database = database
        self.layout = layout
        self.settings = settings
        self.clock = clock
        // Pushes: the APNs key is read now, so a bad one stops the start (APNsConfigurationError).
        let apns = try APNsCredentials.load(settings.push)
        if apns == nil {
            logger.notice("Push notifications are off", metadata: ["reason": "no APNs key (APNS_KEY_PATH)"])
        }
        self.runner = JobRunner(
            database: database, layout: layout, mediaStorage: mediaStorage, settings: settings, media: media,
            apns: apns, plans: plans,
            logger: logger, clock: clock)
        // The probe answers an upload the client is waiting on (bounded by its time limit): it runs at
        // the API's priority, not the render's (`jobs.niceness`).
        var probeIsolation = runner.isolation
        probeIsolation.niceness = 0
        self.inspector = UploadInspector(
            maxDurationSeconds: settings.maxDurationSeconds, isolation: probeIsolation, logger: logger)
        releasePlacesOfDeadProcesses = Task { [database] in await Self.releaseDeadHolders(database) }
        try runner.recoverAtStartup()
    }

    /// The verifier for the configured roots, or why there is none.
    static func verifier(_ settings: AppStoreSettings) -> (AppStoreVerifier?, String?) {
        do {
            let roots = try settings.rootCertificates.map { path -> [UInt8] in
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw AppStoreVerificationError(
                        kind: .untrusted, detail: "the Apple root certificate \(path) is missing")
                }
                return [UInt8](data)
            }
            return (
                try AppStoreVerifier(
                    rootCertificates: roots, bundleId: settings.bundleId, environments: Set(settings.environments)), nil
            )
        } catch {
            return (nil, "\(error)")
        }
    }

    /// Held for the life of the service: one process per storage folder (SQLite only).
    private let lock: StorageLock?

    /// The containers and codecs the linked FFmpeg reads (computed once).
    public static let formats = FormatCatalog.current()

    // MARK: Accounts

    public func createAccount(label: String?) async throws -> (Account, String) {
        try await database.createAccount(label: label, plan: "free", now: clock())
    }

    /// What `apiKey` is worth now. Every request reads its key and account from the database (one
    /// cached-statement lookup, tens of microseconds), so a revoked key or a disabled account is
    /// refused on the very next request: there is no cache to go stale. The key's lastUsedAt is
    /// written at most once per `keyUseInterval` per key by this process, on the database's writer
    /// queue, never waited for.
    public func authenticate(apiKey: String) async throws -> KeyLookup {
        // Keys are 46 characters; anything much longer is not one (and is not hashed).
        guard apiKey.utf8.count <= 200 else { return .unknown }
        let lookup = try await database.authenticate(keyHash: Account.hash(apiKey: apiKey))
        if case .valid(_, let keyId) = lookup {
            let now = clock()
            let due = keyUses.withLock { recorded -> Bool in
                if let last = recorded[keyId], now.timeIntervalSince(last) < Self.keyUseInterval { return false }
                if recorded.count >= 10_000 { recorded.removeAll(keepingCapacity: true) }
                recorded[keyId] = now
                return true
            }
            if due { database.recordKeyUse(keyId: keyId, at: now) }
        }
        return lookup
    }

    /// The account holding the active key `apiKey` (nil when unknown, revoked or disabled).
    public func account(apiKey: String) async throws -> Account? {
        if case .valid(let account, _) = try await authenticate(apiKey: apiKey) { return account }
        return nil
    }

    static let keyUseInterval: TimeInterval = 60
    /// When this process last recorded each key's use (so a burst of requests writes once).
    private let keyUses = Mutex<[String: Date]>([:])

    // MARK: Uploads

    /// A fresh path under Storage/uploads for a body being received.
    public func newUploadPath() -> String { layout.newUploadPath() }

    /// Refuses when storing `expectedBytes` more would leave less than the configured floor.
    public func checkDiskSpace(expectedBytes: Int64) throws(Refusal) {
        guard let free = layout.freeBytes() else { return }
        if free - expectedBytes < settings.minFreeBytes { throw .insufficientStorage }
    }

    // MARK: Plans and quota

    /// An account's plan now, what entitles it, and its usage this month.
    public struct AccountPlan: Sendable {
        public var plan: Plan
        public var entitlement: Entitlement
        public var usage: QuotaUsage
        /// The plan that would lift this plan's limits (nil for pro).
        public var upgrade: Plan?
    }

    public struct QuotaUsage: Sendable, Equatable {
        public var limit: Int?
        public var used: Int
        public var remaining: Int?
        public var period: String
        public var resetsAt: Date
    }

    public func accountPlan(_ account: Account) async throws -> AccountPlan {
        let now = clock()
        let entitlement = try await database.entitlement(accountId: account.id, now: now)
        let plan = entitlement.grantsPro ? plans.pro : plans.free
        let period = UsagePeriod.month(of: now)
        let used = try await database.usedUnits(accountId: account.id, period: period.name)
        let usage = QuotaUsage(
            limit: plan.monthlyHighlights, used: used,
            remaining: plan.monthlyHighlights.map { max(0, $0 - used) }, period: period.name, resetsAt: period.resetsAt)
        return AccountPlan(
            plan: plan, entitlement: entitlement, usage: usage, upgrade: entitlement.grantsPro ? nil : plans.pro)
    }

    /// Before an upload streams: refuses at once when the month's quota is used up or the plan's
    /// jobs-at-once limit is reached, so nobody uploads a gigabyte to be told no. The accepting
    /// transaction checks both again.
    public func precheck(_ account: Account) async throws -> AccountPlan {
        try await precheck(account, uploadsInProgress: 0)
    }

    /// `precheck`, counting `uploadsInProgress` (the account's other bodies being received, not yet
    /// jobs) and its resumable uploads still receiving against the plan's jobs-at-once with its
    /// active jobs.
    public func precheck(_ account: Account, uploadsInProgress: Int) async throws -> AccountPlan {
        let current = try await accountPlan(account)
        let uploadsInProgress =
            uploadsInProgress + (try await database.receivingUploads(accountId: account.id, now: clock()))
        if let limit = current.usage.limit, current.usage.used >= limit {
            throw overQuota(limit: limit, used: current.usage.used, usage: current.usage, plan: current.plan)
        }
        let active = try await database.activeJobs(accountId: account.id)
        if active.count + uploadsInProgress >= current.plan.concurrentJobs {
            throw tooManyJobs(limit: current.plan.concurrentJobs, active: active, uploading: uploadsInProgress)
        }
        if let budget = current.plan.dailyWorkerSeconds {
            let spent = try await database.workerSecondsUsed(accountId: account.id, now: clock())
            if spent >= budget { throw overBudget(limit: budget, used: spent, plan: current.plan) }
        }
        return current
    }

    /// Refused until the next UTC day: the plan's daily worker time is spent.
    func overBudget(limit: Double, used: Double, plan: Plan) -> Refusal {
        QuotaMetrics.refused(.dailyBudgetExceeded)
        let next = UsagePeriod.day(of: clock()).next
        let retry = max(1, Int(next.timeIntervalSince(clock()).rounded(.up)))
        let product = plan.name == plans.free.name ? plans.proProductId : nil
        return .dailyBudgetExceeded(
            .init(
                limitSeconds: limit, usedSeconds: used, resetsAt: next, plan: plan.name,
                upgradeProduct: product, retryAfter: retry))
    }

    func overQuota(limit: Int, used: Int, usage: QuotaUsage, plan: Plan) -> Refusal {
        QuotaMetrics.refused(.quotaExceeded)
        return .quotaExceeded(
            .init(
                limit: limit, used: used, resetsAt: usage.resetsAt, plan: plan.name,
                upgradeProduct: plan.name == plans.free.name ? plans.proProductId : nil))
    }

    func tooManyJobs(limit: Int, active: [Job], uploading: Int = 0) -> Refusal {
        QuotaMetrics.refused(.tooManyJobs)
        let now = clock()
        let waits = active.map { job -> Double in
            let elapsed = job.startedAt.map { now.timeIntervalSince($0) } ?? 0
            return Double(job.estimatedSeconds) - elapsed
        }
        let retry = Int(min(600, max(5, waits.min() ?? 30)).rounded(.up))
        let proJobs = plans.pro.concurrentJobs
        return .tooManyJobs(
            .init(
                limit: limit, active: active.count, uploading: uploading, retryAfter: retry,
                product: plans.proProductId, upgradeJobs: limit < proJobs ? proJobs : nil))
    }

    /// Probes the received file and, when it is a usable video within the plan's limits, makes it
    /// a pending job, reserving one unit of the month's quota in the same transaction. The file is
    /// moved into the job's folder, or deleted when refused: nothing is left behind either way.
    /// `edit` (shape, pinned and excluded moments) is checked against the video's length here.
    public func acceptUpload(
        at path: String, account: Account, targetDuration: Int, quality: String,
        plan current: AccountPlan, edit: EditRequest = EditRequest(), sourceName: String? = nil
    ) async throws -> (Job, QuotaUsage) {
        let input: JobInput
        do {
            input = try await inspector.inspect(path)
            try edit.check(duration: input.duration, targetDuration: targetDuration)
            let plan = current.plan
            if input.duration > plan.maxDurationSeconds {
                var upgrade: (product: String, limitSeconds: Double)?
                if let pro = current.upgrade, input.duration <= pro.maxDurationSeconds {
                    upgrade = (plans.proProductId, pro.maxDurationSeconds)
                }
                throw Refusal.tooLongForPlan(
                    .init(
                        duration: input.duration, limitSeconds: plan.maxDurationSeconds,
                        plan: plan.name, upgrade: upgrade))
            }
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        let now = clock()
        let recent = (try? await database.recentCompletedJobs(limit: 20)) ?? []
        let queue = (try? await database.unfinishedJobs()) ?? []
        let estimate = estimator.estimate(
            input: input, targetDuration: targetDuration, quality: quality, recent: recent,
            queue: queue, workers: settings.workers)
        var job = Job(
            id: UUID().uuidString.lowercased(), accountId: account.id, targetDuration: targetDuration,
            quality: quality, input: input, estimatedSeconds: estimate, now: now)
        job.message = queue.isEmpty ? "Waiting to start" : "Waiting in the queue (\(queue.count) ahead)"
        job.edit = edit.job(sourceName: sourceName, keepsInput: current.plan.recuts)
        return try await enqueue(job, account: account, plan: current, now: now) {
            // The input is stored (durably) before the job row commits: a power loss cannot leave
            // a job without its input.
            do { try await storeInput(jobID: job.id, from: path) } catch {
                try? FileManager.default.removeItem(atPath: path)
                throw error
            }
        }
    }

    /// Stores the job's media (`storeMedia`), then inserts the job reserving one unit of the
    /// month's quota in the same transaction; the media go again if the job is refused.
    func enqueue(
        _ job: Job, account: Account, plan current: AccountPlan, now: Date,
        storeMedia: () async throws -> Void
    ) async throws -> (Job, QuotaUsage) {
        let (free, pro) = (plans.free, plans.pro)
        let accepted: Result<Job, QuotaRefusal>
        do {
            try await storeMedia()
            accepted = try await database.insertReserving(job, now: now) { isPro in
                // The plan as of this transaction (a subscription may have changed during the upload).
                let plan = isPro ? pro : free
                return QuotaLimits(
                    monthly: plan.monthlyHighlights, concurrent: plan.concurrentJobs,
                    outputCap: plan.maxOutputSide, retentionHours: plan.retentionDays * 24,
                    maxDurationSeconds: plan.maxDurationSeconds, dailyWorkerSeconds: plan.dailyWorkerSeconds)
            }
        } catch {
            await mediaStorage.removeMedia(jobID: job.id, keepingInput: false)
            throw error
        }
        switch accepted {
        case .success(let inserted):
            // The store announces the new job (StoreEvent.jobQueued) to the workers of every process.
            return (inserted, try await accountPlan(account).usage)
        case .failure(let refusal):
            await mediaStorage.removeMedia(jobID: job.id, keepingInput: false)
            switch refusal {
            case .overQuota(let limit, let used):
                throw overQuota(limit: limit, used: used, usage: current.usage, plan: current.plan)
            case .tooManyJobs(let limit, _):
                throw tooManyJobs(limit: limit, active: (try? await database.activeJobs(accountId: account.id)) ?? [])
            case .overBudget(let limit, let used):
                throw overBudget(limit: limit, used: used, plan: current.plan)
            }
        }
    }

    // MARK: Jobs

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

    // Files of a completed job: `media(_:_:)` (JobService+MediaStorage.swift).

    /// Runs one sweeper pass now (the runner also sweeps every `storage.sweepIntervalSeconds`).
    /// `orphanGraceSeconds` replaces the hour a file belonging to nothing is left alone (files'
    /// ages are wall-clock ages, which a test cannot move).
    public func sweepNow(orphanGraceSeconds: TimeInterval? = nil) async {
        var sweeper = runner.sweeper
        if let orphanGraceSeconds { sweeper.graceSeconds = orphanGraceSeconds }
        await sweeper.sweep()
    }

    // MARK: Readiness

    public struct Check: Sendable, Codable, Equatable {
        public var ok: Bool
        public var detail: String
    }

    /// `readiness()`, answered from the last check when it is younger than `maxAge` seconds, so a
    /// caller polling /ready does not write to the database and the disk on every call.
    public func cachedReadiness(maxAge: TimeInterval) async -> [String: Check] {
        let now = clock()
        if maxAge > 0, let (at, checks) = readinessCache.withLock({ $0 }), now.timeIntervalSince(at) >= 0,
            now.timeIntervalSince(at) < maxAge
        {
            return checks
        }
        let checks = await readiness()
        readinessCache.withLock { $0 = (now, checks) }
        return checks
    }

    private let readinessCache = Mutex<(Date, [String: Check])?>(nil)

    /// Database writable, storage writable, free disk above the floor.
    public func readiness() async -> [String: Check] {
        var checks: [String: Check] = [:]
        do {
            try await database.checkWritable(now: clock())
            checks["database"] = Check(ok: true, detail: "\(database.engine) writable")
        } catch {
            checks["database"] = Check(ok: false, detail: "not writable: \(error)")
        }
        let probe = layout.uploadsDirectory + "/.ready-\(UUID().uuidString)"
        if FileManager.default.createFile(atPath: probe, contents: Data("ok".utf8)) {
            try? FileManager.default.removeItem(atPath: probe)
            checks["storage"] = Check(ok: true, detail: "writable")
        } else {
            checks["storage"] = Check(ok: false, detail: "cannot write under \(layout.root)")
        }
        if checks["storage"]?.ok == true, let remote = await mediaStorage.readiness() {
            checks["storage"] = Check(ok: remote.ok, detail: remote.detail)
        }
        if let free = layout.freeBytes() {
            let ok = free >= settings.minFreeBytes
            checks["disk"] = Check(
                ok: ok, detail: "\(free / 1_000_000) MB free, floor \(settings.minFreeBytes / 1_000_000) MB")
        } else {
            checks["disk"] = Check(ok: false, detail: "cannot read free space of \(layout.root)")
        }
        return checks
    }
}
