import MediaVocabulary
import Accounts
import Foundation
import Isolation
import JobMedia
import Logging
import MomentsConfig
import Requests
import Store
import Wording

/// Turning a received file into a queued job: the disk floor, the probe (in an isolated child), the
/// plan's length and quota checks, storing the input and inserting the job in one transaction
/// that reserves a unit of the month's quota. Plain and resumable uploads and re-cuts come here.
public final class UploadIntake: Sendable {
    let database: any JobRepository & UploadRepository & UsageRepository
    public let layout: StorageLayout
    let mediaStorage: any MediaStorage
    let settings: ServiceSettings
    public let policy: PlanPolicy
    let probe: any UploadProbe
    let estimator = TimeEstimator()
    let clock: @Sendable () -> Date
    /// Frees the plain uploads' places this host's dead processes left (started with the intake;
    /// awaited before the first admission: `UploadIntake+Admission.swift`).
    let releasePlacesOfDeadProcesses: Task<Void, Never>

    public init(
        database: any JobRepository & UploadRepository & UsageRepository, layout: StorageLayout, mediaStorage: any MediaStorage, settings: ServiceSettings,
        policy: PlanPolicy, isolation: IsolationSettings, probe: (any UploadProbe)? = nil, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database
        self.layout = layout
        self.mediaStorage = mediaStorage
        self.settings = settings
        self.policy = policy
        self.clock = clock
        // The probe answers an upload the client is waiting on (bounded by its time limit): it runs at
        // the API's priority, not the render's (`jobs.niceness`).
        var probeIsolation = isolation
        probeIsolation.niceness = 0
        self.probe =
            probe
            ?? UploadInspector(maxDurationSeconds: settings.maxDurationSeconds, isolation: probeIsolation, logger: logger)
        releasePlacesOfDeadProcesses = Task { [database] in await Self.releaseDeadHolders(database) }
    }

    var plans: PlanSettings { policy.plans }

    /// A fresh path under Storage/uploads for a body being received.
    public func newUploadPath() -> String { layout.newUploadPath() }

    /// Refuses when storing `expectedBytes` more would leave less than the configured floor.
    public func checkDiskSpace(expectedBytes: Int64) throws(Refusal) {
        guard let free = layout.freeBytes() else { return }
        if free - expectedBytes < settings.minFreeBytes { throw .insufficientStorage }
    }

    /// Probes the received file and, when it is a usable video within the plan's limits, makes it
    /// a pending job, reserving one unit of the month's quota in the same transaction. The file is
    /// moved into the job's folder, or deleted when refused: nothing is left behind either way.
    /// `edit` (shape, pinned and excluded moments) is checked against the video's length here.
    public func acceptUpload(
        at path: String, account: Account, targetDuration: Int, quality: HighlightQuality,
        plan current: AccountPlan, edit: EditRequest = EditRequest(), sourceName: String? = nil
    ) async throws -> (Job, QuotaUsage) {
        let input: JobInput
        do {
            input = try await probe.inspect(path)
            try edit.check(duration: input.duration, targetDuration: targetDuration)
            try checkLength(input, plan: current)
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
        job.message = Say.queued(ahead: queue.count)
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

    /// Refuses a video longer than the plan allows, naming the plan that would take it.
    func checkLength(_ input: JobInput, plan current: AccountPlan) throws {
        let plan = current.plan
        guard input.duration > plan.maxDurationSeconds else { return }
        var upgrade: (product: String, limitSeconds: Double)?
        if let pro = current.upgrade, input.duration <= pro.maxDurationSeconds {
            upgrade = (plans.proProductId, pro.maxDurationSeconds)
        }
        throw Refusal.tooLongForPlan(
            .init(duration: input.duration, limitSeconds: plan.maxDurationSeconds, plan: plan.name, upgrade: upgrade))
    }

    /// Stores the job's media (`storeMedia`), then inserts the job reserving one unit of the
    /// month's quota in the same transaction; the media go again if the job is refused.
    func enqueue(
        _ job: Job, account: Account, plan current: AccountPlan, now: Date,
        storeMedia: () async throws -> Void
    ) async throws -> (Job, QuotaUsage) {
        let accepted: Result<Job, QuotaRefusal>
        do {
            try await storeMedia()
            accepted = try await database.insertReserving(job, now: now, limits: policy.limits)
        } catch {
            await mediaStorage.removeMedia(jobID: job.id, keepingInput: false)
            throw error
        }
        switch accepted {
        case .success(let inserted):
            // The store announces the new job (StoreEvent.jobQueued) to the workers of every process.
            return (inserted, try await policy.accountPlan(account).usage)
        case .failure(let refusal):
            await mediaStorage.removeMedia(jobID: job.id, keepingInput: false)
            switch refusal {
            case .overQuota(let limit, let used):
                throw policy.overQuota(limit: limit, used: used, usage: current.usage, plan: current.plan)
            case .tooManyJobs(let limit, _):
                let active = (try? await database.activeJobs(accountId: account.id)) ?? []
                throw policy.tooManyJobs(limit: limit, active: active)
            case .overBudget(let limit, let used):
                throw policy.overBudget(limit: limit, used: used, plan: current.plan)
            }
        }
    }

    /// Hands an accepted upload to the media storage; a storage failure becomes a refusal telling the
    /// user to try again (the cause goes to the log, never to the client).
    func storeInput(jobID: String, from path: String) async throws {
        do {
            try await mediaStorage.storeInput(jobID: jobID, from: path)
        } catch is MediaStorageError {
            throw Refusal.storageUnavailable
        }
    }
}
