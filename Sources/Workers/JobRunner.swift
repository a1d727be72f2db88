import Foundation
import HighlightJob
import MediaVocabulary
import Isolation
import JobMedia
import Logging
import MomentsConfig
import ServiceLifecycle
import Store
import Synchronization
import Telemetry

/// What the workers use of the store: the queue (claims, leases, outcomes), the jobs, the usage
/// (worker time), the kept inputs, the plans' entitlements, the store's events, and the recovery at
/// start-up. Accounts, keys, uploads, webhooks, pushes and fingerprints are not theirs.
public typealias RunnerStore = JobRepository & QueueRepository & UsageRepository & KeptInputRepository
    & SubscriptionRepository & StoreEventSource & InterruptedJobRecovery

/// The workers: N loops that claim jobs from the durable queue and have each made
/// (`HighlightJobs`: the job's media side), plus the sweeper. A Service: on graceful shutdown it stops claiming, stops running jobs and puts
/// them back in the queue (they start again with the next process).
public final class JobRunner: Service, Sendable {
    struct Running: Sendable {
        var token: CancellationToken
        /// The worker holding the job's lease.
        var worker: String
        /// Set when the lease was lost (the job was rescued by another process): the worker stops
        /// and leaves the job's shared media alone, since another worker may hold it now.
        var leaseLost = false
        var waiters: [Waiter] = []
    }

    let database: any RunnerStore
    let layout: StorageLayout
    let mediaStorage: any MediaStorage
    let settings: ServiceSettings
    /// The media side of each job: its request, children and result.
    let highlights: HighlightJobs
    /// The plans (kept-input allowance when a highlight is made).
    let plans: PlanSettings
    let logger: Logger
    let clock: @Sendable () -> Date
    private let running = Mutex<[String: Running]>([:])
    /// Previews being made for completed jobs (their jobs' tokens stop with the lease): each stops
    /// at shutdown, or when its job is deleted.
    let previews = Mutex<[String: CancellationToken]>([:])
    let shuttingDown = Atomic<Bool>(false)
    private let doorbells = Mutex<[AsyncStream<Void>.Continuation]>([])
    /// This process among all the processes sharing the queue: host, pid and a random tag, so a
    /// lease names the very worker loop holding it.
    public let processTag: String

    public init(
        database: any RunnerStore, layout: StorageLayout, mediaStorage: (any MediaStorage)? = nil,
        settings: ServiceSettings, highlights: HighlightJobs,
        plans: PlanSettings = PlanSettings(), logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database; self.layout = layout; self.settings = settings; self.highlights = highlights
        self.plans = plans
        self.mediaStorage = mediaStorage ?? FilesystemMediaStorage(layout: layout, logger: logger)
        self.logger = logger; self.clock = clock
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        processTag = "\(String(cString: host))/\(getpid())/\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The lease owner name of worker loop `index`.
    func workerName(_ index: Int) -> String { "\(processTag)#\(index)" }

    var sweeper: Sweeper {
        Sweeper(
            database: database, layout: layout, storage: mediaStorage, runningJobIDs: { self.runningJobIDs },
            settings: settings, logger: logger, clock: clock)
    }

    /// Before the server takes requests: jobs a crash left `processing` go back to the queue (their
    /// folders emptied of everything but the input) or fail after `maxAttempts`; partial uploads
    /// are deleted (no upload can be in flight yet).
    public func recoverAtStartup() throws {
        // Only a store this process has to itself knows every processing job is orphaned; a shared
        // one waits for leases to expire (other processes may be working on them right now).
        guard database.isExclusive else { return }
        let recovered = try database.recoverInterruptedJobs(maxAttempts: settings.maxAttempts, now: clock())
        for id in recovered.failed { layout.removeJobFiles(id) }
        for id in recovered.requeued { layout.removeJobFiles(id, keepingInput: true) }
        JobMetrics.recovered(requeued: recovered.requeued.count, failed: recovered.failed.count)
        if !recovered.requeued.isEmpty || !recovered.failed.isEmpty {
            logger.notice(
                "recovered interrupted jobs",
                metadata: ["requeued": "\(recovered.requeued)", "failed": "\(recovered.failed)"])
        }
        sweeper.removeAbandonedUploads(olderThan: 0)
    }

    public func run() async throws {
        let workerSlots = WorkerMetrics.started(settings.workers); defer { workerSlots.stopped() }
        await withGracefulShutdownHandler {
            // Worker loops and the sweeper end at shutdown; the helpers around them (poll, store
            // events, lease renewal, rescuer) are cancelled once those have ended.
            await withTaskGroup(of: Bool.self) { group in
                for index in 0..<settings.workers {
                    let (stream, continuation) = AsyncStream.makeStream(
                        of: Void.self, bufferingPolicy: .bufferingNewest(1))
                    doorbells.withLock { $0.append(continuation) }
                    group.addTask {
                        await self.workerLoop(index, wakeups: stream); return true
                    }
                }
                group.addTask {
                    await self.sweeper.run(until: { self.shuttingDown.load(ordering: .relaxed) || Task.isCancelled });
                    return true
                }
                // Polls the queue every second too: a job whose retry backoff ran out, or whose news
                // was missed, is never stranded.
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        self.notifyNewJob()
                    }
                    return false
                }
                group.addTask {
                    await self.listenToStore(); return false
                }
                group.addTask {
                    await self.renewLeasesWhileRunning(); return false
                }
                group.addTask {
                    await self.rescueWhileRunning(); return false
                }
                var essential = settings.workers + 1
                while essential > 0, let wasEssential = await group.next() {
                    if wasEssential { essential -= 1 }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.beginShutdown()
        }
    }

    /// Reacts to the store's events: a job queued wakes the workers; a job cancelled (by an API
    /// process anywhere) stops the worker of this process running it.
    func listenToStore() async {
        for await event in database.events() {
            switch event {
            case .jobQueued: notifyNewJob()
            case .jobCancelled(let id):
                running.withLock { _ = $0[id]?.token.cancel() }
                previews.withLock { _ = $0[id]?.cancel() }
            case .webhookQueued, .pushQueued, .jobChanged: break  // the dispatchers and event streams listen for these
            }
        }
    }

    /// Renews the leases of the jobs this process runs every third of the lease. A job whose lease
    /// is no longer held (cancelled, or rescued after this process stalled) is stopped.
    func renewLeasesWhileRunning() async {
        let interval = settings.leaseSeconds / 3
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(interval))
            await renewLeases()
        }
    }

    func renewLeases() async {
        // Each attempt is known by its token: a job retried at once by the same worker is a new
        // attempt under the same id, and must not pay for its previous attempt's lapsed lease.
        let byWorker = running.withLock { jobs in
            Dictionary(grouping: jobs, by: { $0.value.worker }).mapValues {
                $0.map { (id: $0.key, token: $0.value.token) }
            }
        }
        for (worker, attempts) in byWorker {
            do {
                let held = try await database.renewLeases(
                    worker: worker, jobIDs: attempts.map(\.id), leaseSeconds: settings.leaseSeconds,
                    now: clock())
                for (id, token) in attempts where !held.contains(id) {
                    // Cancelled by its owner: the usual cancel path (files removed, time charged).
                    // Anything else (re-queued or held by another worker): the lease was lost.
                    let current = try? await database.job(id: id)
                    let lost = current.map { !$0.status.isFinished } ?? false
                    let stopped = running.withLock { jobs -> Bool in
                        guard let entry = jobs[id], entry.token === token else { return false }
                        if lost { jobs[id]!.leaseLost = true }
                        token.cancel()
                        return true
                    }
                    guard stopped else { continue }
                    if lost {
                        logger.notice("job no longer held by this worker; stopping it", metadata: ["job": "\(id)"])
                    }
                }
            } catch {
                logger.warning("cannot renew job leases", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Re-queues jobs whose lease expired (their worker or host is gone), on every process: the
    /// store makes concurrent rescues harmless.
    func rescueWhileRunning() async {
        let interval = max(1, settings.leaseSeconds / 2)
        while !Task.isCancelled {
            await rescueExpiredLeases()
            try? await Task.sleep(for: .seconds(interval))
        }
    }

    func rescueExpiredLeases() async {
        // This process's own jobs first: after a stall longer than the lease (a starved machine),
        // the rescuer may wake before the renewer and would take back jobs still running here.
        await renewLeases()
        do {
            let rescued = try await database.rescueExpiredLeases(
                maxAttempts: settings.maxAttempts,
                backoffSeconds: settings.retryBackoffSeconds, now: clock())
            JobMetrics.recovered(requeued: rescued.requeued.count, failed: rescued.failed.count)
            if !rescued.requeued.isEmpty || !rescued.failed.isEmpty {
                logger.warning(
                    "rescued jobs whose worker is gone",
                    metadata: ["requeued": "\(rescued.requeued)", "failed": "\(rescued.failed)"])
            }
            for id in rescued.failed { layout.removeJobFiles(id) }
        } catch is CancellationError {
        } catch {
            logger.error("cannot rescue expired jobs", metadata: ["error": "\(error)"])
        }
    }

    /// Wakes the workers: a job was queued.
    public func notifyNewJob() {
        doorbells.withLock { bells in for bell in bells { bell.yield() } }
    }

    /// Stops the job if a worker runs it, and returns once the worker has removed its files, or
    /// after `timeout` if the engine is slow to notice. False when no worker had it.
    @discardableResult
    public func stop(jobID: String, timeout: Duration = .seconds(3)) async -> Bool {
        let token: CancellationToken? = running.withLock { $0[jobID]?.token }
        guard let token else { return false }
        token.cancel()
        let waiter = Waiter()
        let timer = Task {
            try? await Task.sleep(for: timeout)
            waiter.resume()
        }
        await waiter.wait { waiter in
            let registered = self.running.withLock { jobs -> Bool in
                guard jobs[jobID] != nil else { return false }
                jobs[jobID]!.waiters.append(waiter)
                return true
            }
            if !registered { waiter.resume() }
        }
        timer.cancel()
        return true
    }

    /// Jobs being processed right now.
    public var runningJobIDs: [String] { running.withLock { Array($0.keys) } }

    func beginShutdown() {
        shuttingDown.store(true, ordering: .relaxed)
        running.withLock { jobs in for job in jobs.values { job.token.cancel() } }
        previews.withLock { tokens in for token in tokens.values { token.cancel() } }
        doorbells.withLock { bells in for bell in bells { bell.finish() } }
    }

    private func workerLoop(_ index: Int, wakeups: AsyncStream<Void>) async {
        var iterator = wakeups.makeAsyncIterator()
        let worker = workerName(index)
        while !shuttingDown.load(ordering: .relaxed) {
            do {
                while !shuttingDown.load(ordering: .relaxed),
                    let job = try await database.claimNextJob(
                        worker: worker, leaseSeconds: settings.leaseSeconds, now: clock())
                {
                    await process(job, worker: worker)
                }
            } catch {
                logger.error("cannot claim a job", metadata: ["error": "\(error)"])
            }
            guard await iterator.next() != nil else { return }
        }
    }

    /// The settings of the isolated children this runner starts: each sees only its own paths of
    /// the storage.
    public var isolation: IsolationSettings {
        var isolation = IsolationSettings(
            executable: settings.childExecutable.isEmpty
                ? IsolationSettings.defaultExecutable() : settings.childExecutable,
            memoryBytes: UInt64(max(0, settings.childMemoryBytes)), niceness: Int32(settings.niceness))
        if let users = IsolationSettings.userRange(settings.childUsers) { isolation.childUsers = users }
        isolation.allowWeaker = Set(settings.allowWeakerIsolation.compactMap(IsolationLayer.init(rawValue:)))
        isolation.viewRoot = layout.root
        return isolation
    }

    /// A job's wall-clock budget: the base plus a share per second of video. The header's duration
    /// is not trusted beyond the plan's limit (decoding stops there).
    func timeBudget(_ job: Job) -> Double {
        let claimed = max(1, job.input.duration)
        let seconds = min(max(claimed, 1), job.maxDurationSeconds ?? settings.maxDurationSeconds)
        return settings.timeBudgetSeconds + settings.timeBudgetPerVideoSecond * seconds
    }

    private func process(_ job: Job, worker: String) async {
        let token = await register(job, worker: worker)
        let started = clock()
        let stages = JobMetrics.started(attempt: job.attempts)
        var log = logger
        log[metadataKey: "job"] = "\(job.id)"
        log.info("job started", metadata: ["worker": "\(worker)", "attempt": "\(job.attempts)"])

        let reporter = ProgressReporter(
            jobID: job.id, worker: worker, database: database, token: token,
            interval: .milliseconds(settings.progressIntervalMs), clock: clock)
        let progressTask = Task { await reporter.run() }
        // The child sees local files only: the input is fetched to the job's workspace first.
        stages.step("fetch input")
        let prepared = try? await mediaStorage.prepareWorkspace(jobID: job.id)
        let workspace = prepared ?? JobWorkspace(directory: layout.jobDirectory(job.id))
        // A recognised re-upload is not analysed: its keyframes' fingerprint stands for it.
        var attempt = HighlightAttempt.workspaceFailure
        if prepared != nil {
            attempt = await highlights.make(
                job, workspace: workspace, isolation: isolation, seconds: timeBudget(job),
                maxDurationSeconds: settings.maxDurationSeconds, token: token,
                onProgress: { stage, fraction in reporter.report(stage: stage, fraction: fraction) }, stages: stages,
                log: log)
        }
        progressTask.cancel()
        stages.publishing()
        let leaseLost = running.withLock { $0[job.id].map { $0.token === token && $0.leaseLost } ?? false }
        if leaseLost {
            // Another worker holds the job now: its media are that worker's; nothing to record.
            log.warning("job stopped: its lease was lost (rescued while this worker stalled)")
        } else {
            await finish(job, worker: worker, attempt: attempt, started: started, stages: stages, log: log)
            // After `completed`: it does not delay the highlight.
            if job.quality == .original, prepared != nil, !shuttingDown.load(ordering: .relaxed) {
                await makePreview(job, workspace: workspace, log: log)
            }
        }
        // Scratch is this process's own, whoever holds the job now.
        await mediaStorage.discardWorkspace(jobID: job.id)
        stages.done()
        let waiters = running.withLock { jobs -> [Waiter] in
            guard jobs[job.id]?.token === token else { return [] }
            return jobs.removeValue(forKey: job.id)?.waiters ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Registers the job as running here and returns its cancellation token (already cancelled
    /// when a shutdown or a DELETE came between the claim and the registration).
    private func register(_ job: Job, worker: String) async -> CancellationToken {
        // An earlier attempt of this job may still be finishing here (a retry at once, claimed by
        // another worker loop of this process): it ends first, so that neither its clean-up nor
        // its lease renewal can touch this attempt.
        while running.withLock({ $0[job.id] != nil }) {
            let waiter = Waiter()
            await waiter.wait { waiter in
                let registered = running.withLock { jobs -> Bool in
                    guard jobs[job.id] != nil else { return false }
                    jobs[job.id]!.waiters.append(waiter)
                    return true
                }
                if !registered { waiter.resume() }
            }
        }
        let token = CancellationToken()
        running.withLock { $0[job.id] = Running(token: token, worker: worker) }
        // A failed read is not a cancellation (the job then runs).
        if shuttingDown.load(ordering: .relaxed) {
            token.cancel()
        } else if let current = try? await database.job(id: job.id),
            current.status != .processing || current.leaseOwner != worker
        {
            token.cancel()
        }
        return token
    }
}

/// A continuation resumed exactly once, by whichever comes first (the worker or a timer).
final class Waiter: Sendable {
    private let state = Mutex<(resumed: Bool, continuation: CheckedContinuation<Void, Never>?)>((false, nil))

    func wait(registering register: (Waiter) -> Void) async {
        await withCheckedContinuation { continuation in
            let alreadyResumed = state.withLock { s -> Bool in
                if s.resumed { return true }
                s.continuation = continuation
                return false
            }
            if alreadyResumed { continuation.resume() } else { register(self) }
        }
    }

    func resume() {
        let continuation = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.resumed else { return nil }
            s.resumed = true
            defer { s.continuation = nil }
            return s.continuation
        }
        continuation?.resume()
    }
}
