import Prometheus
import Synchronization

/// Every metric Moments exports, named here and nowhere else: other modules call the typed helpers
/// (`HTTPMetrics`, `UploadMetrics`, `QueueMetrics`, `JobMetrics`, `WorkerMetrics`, `QuotaMetrics`,
/// `WebhookMetrics`).
/// Names follow Prometheus conventions: `moments_` prefix, base units (seconds, bytes), `_total`
/// on counters. Label values are always from a closed set (route patterns, codes the server
/// defines), never a path, an id or anything else a client chose.
enum MomentsMetrics {
    static var registry: PrometheusCollectorRegistry { MetricsExporter.registry }

    // MARK: HTTP

    static let httpRequests = "moments_http_requests_total"
    static let httpRequestsHelp = "HTTP requests answered, by route pattern, method and status."
    static let httpDuration = "moments_http_request_duration_seconds"
    static let httpDurationHelp = "Time from the request head to the last byte of the response, by route pattern."
    /// 5 ms ... 30 s.
    static let httpBuckets: [Duration] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30].map {
        .milliseconds(Int64($0 * 1000))
    }

    // MARK: Uploads

    static let uploadBytes = "moments_upload_received_bytes_total"
    static let uploadBytesHelp = "Bytes of upload bodies written to storage."
    static let uploadsInFlight = "moments_uploads_in_flight"
    static let uploadsInFlightHelp = "Upload bodies being received now."
    static let uploads = "moments_uploads_total"
    static let uploadsHelp = "Finished upload requests: result accepted or refused, code the refusal's problem code."

    // MARK: Queue

    static let queueJobs = "moments_queue_jobs"
    static let queueJobsHelp = "Jobs in the queue by state (sampled from the store)."
    static let queueOldest = "moments_queue_oldest_pending_age_seconds"
    static let queueOldestHelp = "How long the oldest runnable pending job has waited (0 when none waits)."

    // MARK: Jobs

    static let jobsFinished = "moments_jobs_finished_total"
    static let jobsFinishedHelp = "Job attempts that ended, by outcome."
    static let jobStageDuration = "moments_job_stage_duration_seconds"
    static let jobStageDurationHelp =
        "Time a job attempt spent in each stage (analysis, render, publish) and in all (total)."
    /// 50 ms ... 1 h.
    static let jobStageBuckets: [Duration] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600]
        .map { .milliseconds(Int64($0 * 1000)) }
    static let jobAttempts = "moments_job_attempts"
    static let jobAttemptsHelp = "The attempt number of each job attempt started (1 = first try)."
    static let jobAttemptBuckets: [Double] = [1, 2, 3, 5, 10]

    // MARK: Workers

    static let workersConfigured = "moments_workers"
    static let workersConfiguredHelp = "Job workers configured in this process."
    static let workersBusy = "moments_workers_busy"
    static let workersBusyHelp = "Job workers running a job now."
    static let workersBusyRatio = "moments_workers_busy_ratio"
    static let workersBusyRatioHelp = "Busy workers divided by configured workers (0 when none is configured)."

    // MARK: Quota

    static let quotaRefusals = "moments_quota_refusals_total"
    static let quotaRefusalsHelp = "Uploads refused by a plan limit, by problem code."

    // MARK: Webhooks

    static let webhookAttempts = "moments_webhook_attempts_total"
    static let webhookAttemptsHelp = "Webhook delivery attempts, by outcome (delivered, retried, gave_up)."

    // MARK: Pushes

    static let pushesSent = "moments_pushes_sent_total"
    static let pushesSentHelp = "Pushes APNs accepted."
    static let pushFailures = "moments_push_failures_total"
    static let pushFailuresHelp =
        "Push attempts APNs refused or did not answer, by reason (APNs' reason, timeout, connection, tls, signing, expired, other)."

    /// Creates every metric family (and the labelled series whose label sets are known in advance)
    /// so a scrape shows them at zero before the first event.
    static func touch() { _ = initialised }

    private static let initialised: Bool = {
        _ = registry.makeCounter(name: uploadBytes, help: uploadBytesHelp)
        _ = registry.makeGauge(name: uploadsInFlight, help: uploadsInFlightHelp)
        for state in ["pending", "processing"] {
            _ = registry.makeGauge(name: queueJobs, labels: [("state", state)], help: queueJobsHelp)
        }
        _ = registry.makeGauge(name: queueOldest, help: queueOldestHelp)
        for outcome in JobOutcome.allCases { _ = JobMetrics.finishedCounter(outcome) }
        for stage in JobStage.allCases { _ = JobMetrics.stageHistogram(stage) }
        _ = registry.makeValueHistogram(
            descriptor: .init(metricName: jobAttempts, unitName: "", helpText: jobAttemptsHelp),
            buckets: jobAttemptBuckets)
        _ = registry.makeGauge(name: workersConfigured, help: workersConfiguredHelp)
        _ = registry.makeGauge(name: workersBusy, help: workersBusyHelp)
        _ = registry.makeGauge(name: workersBusyRatio, help: workersBusyRatioHelp)
        for code in QuotaRefusalCode.allCases { _ = QuotaMetrics.counter(code) }
        for outcome in WebhookAttemptOutcome.allCases { _ = WebhookMetrics.counter(outcome) }
        _ = PushMetrics.sentCounter
        for reason in PushMetrics.reasons { _ = PushMetrics.failedCounter(reason) }
        return true
    }()
}

// MARK: - HTTP

/// One answered request.
public enum HTTPMetrics {
    /// The route label of a request no route matched.
    public static let unmatchedRoute = "unmatched"

    /// `route`: the route pattern (`/api/v1/jobs/{id}/status`), or `unmatchedRoute`; `method` is
    /// folded to the standard methods (anything else is `OTHER`).
    public static func record(route: String, method: String, status: Int, duration: Duration) {
        let method = standardMethods.contains(method) ? method : "OTHER"
        let status = (100...599).contains(status) ? String(status) : "other"
        MomentsMetrics.registry.makeCounter(
            name: MomentsMetrics.httpRequests,
            labels: [("route", route), ("method", method), ("status", status)],
            help: MomentsMetrics.httpRequestsHelp
        ).increment()
        MomentsMetrics.registry.makeDurationHistogram(
            descriptor: .init(
                metricName: MomentsMetrics.httpDuration, unitName: "", helpText: MomentsMetrics.httpDurationHelp),
            labels: [("route", route)], buckets: MomentsMetrics.httpBuckets
        ).record(duration)
    }

    static let standardMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
}

// MARK: - Uploads

public enum UploadMetrics {
    /// `bytes` more of an upload body reached storage.
    public static func received(bytes: Int64) {
        guard bytes > 0 else { return }
        bytesCounter.increment(by: bytes)
    }

    /// An upload body starts (`started`) or stops (`ended`) being received.
    public static func started() { inFlight.increment() }
    public static func ended() { inFlight.decrement() }

    /// The upload became a job.
    public static func accepted() {
        MomentsMetrics.registry.makeCounter(
            name: MomentsMetrics.uploads, labels: [("result", "accepted")],
            help: MomentsMetrics.uploadsHelp
        ).increment()
    }

    /// The upload was refused with the problem `code` (a code the server defines, e.g. `file_too_large`).
    public static func refused(code: String) {
        MomentsMetrics.registry.makeCounter(
            name: MomentsMetrics.uploads, labels: [("result", "refused"), ("code", code)],
            help: MomentsMetrics.uploadsHelp
        ).increment()
    }

    static let bytesCounter = MomentsMetrics.registry.makeCounter(
        name: MomentsMetrics.uploadBytes, help: MomentsMetrics.uploadBytesHelp)
    static let inFlight = MomentsMetrics.registry.makeGauge(
        name: MomentsMetrics.uploadsInFlight, help: MomentsMetrics.uploadsInFlightHelp)
}

// MARK: - Queue

public enum QueueMetrics {
    /// A sample of the store's queue (see `QueueSampler` in Jobs).
    public static func record(pending: Int, processing: Int, oldestPendingSeconds: Double?) {
        pendingGauge.set(to: Double(pending))
        processingGauge.set(to: Double(processing))
        oldestGauge.set(to: max(0, oldestPendingSeconds ?? 0))
    }

    static let pendingGauge = MomentsMetrics.registry.makeGauge(
        name: MomentsMetrics.queueJobs, labels: [("state", "pending")],
        help: MomentsMetrics.queueJobsHelp)
    static let processingGauge = MomentsMetrics.registry.makeGauge(
        name: MomentsMetrics.queueJobs, labels: [("state", "processing")],
        help: MomentsMetrics.queueJobsHelp)
    static let oldestGauge = MomentsMetrics.registry.makeGauge(
        name: MomentsMetrics.queueOldest, help: MomentsMetrics.queueOldestHelp)
}

// MARK: - Jobs

/// How a job attempt ended.
public enum JobOutcome: String, Sendable, CaseIterable {
    /// The highlight was stored and the job completed.
    case completed
    /// The job failed for good.
    case failed
    /// Its owner cancelled it.
    case cancelled
    /// It failed for a transient reason and waits for another attempt.
    case retried
    /// A job that lost its worker (a crash, a stale lease) was put back in the queue.
    case rescued
    /// The worker shut down and put the job back in the queue.
    case handedBack = "handed_back"
}

/// The stages a job attempt's time is measured in.
public enum JobStage: String, Sendable, CaseIterable {
    case analysis, render, publish, total
}

public enum JobMetrics {
    /// `count` job attempts ended with `outcome`.
    public static func finished(_ outcome: JobOutcome, count: Int = 1) {
        guard count > 0 else { return }
        finishedCounter(outcome).increment(by: Int64(count))
    }

    /// Startup recovery of jobs a crash left processing: `requeued` are rescued, `failed` failed.
    public static func recovered(requeued: Int, failed: Int) {
        finished(.rescued, count: requeued)
        finished(.failed, count: failed)
    }

    /// A worker starts attempt number `attempt` of a job: the returned timer measures its stages
    /// (feed it the engine's stage names with `enter(_:)`, call `publishing()` when the engine is
    /// done and `done()` when the outcome is recorded) and counts the worker busy meanwhile.
    public static func started(attempt: Int) -> JobStageTimer {
        attempts.record(Double(max(1, attempt)))
        return JobStageTimer()
    }

    static func finishedCounter(_ outcome: JobOutcome) -> Counter {
        MomentsMetrics.registry.makeCounter(
            name: MomentsMetrics.jobsFinished, labels: [("outcome", outcome.rawValue)],
            help: MomentsMetrics.jobsFinishedHelp)
    }

    static func stageHistogram(_ stage: JobStage) -> DurationHistogram {
        MomentsMetrics.registry.makeDurationHistogram(
            descriptor: .init(
                metricName: MomentsMetrics.jobStageDuration, unitName: "", helpText: MomentsMetrics.jobStageDurationHelp
            ),
            labels: [("stage", stage.rawValue)], buckets: MomentsMetrics.jobStageBuckets)
    }

    static let stageHistograms: [JobStage: DurationHistogram] = Dictionary(
        uniqueKeysWithValues: JobStage.allCases.map { ($0, stageHistogram($0)) })
    static let attempts = MomentsMetrics.registry.makeValueHistogram(
        descriptor: .init(
            metricName: MomentsMetrics.jobAttempts, unitName: "", helpText: MomentsMetrics.jobAttemptsHelp),
        buckets: MomentsMetrics.jobAttemptBuckets)
}

// MARK: - Workers

public enum WorkerMetrics {
    private struct Counts { var configured = 0; var busy = 0 }
    private static let counts = Mutex(Counts())

    /// `count` workers start; call `stopped` on the result when they stop (a process may run
    /// several runners, e.g. tests: the counts add up).
    public static func started(_ count: Int) -> WorkerSlots {
        adjust(configured: count)
        return WorkerSlots(count: count)
    }

    static func busy(_ change: Int) { adjust(busy: change) }

    static func adjust(configured: Int = 0, busy: Int = 0) {
        counts.withLock { counts in
            counts.configured += configured
            counts.busy += busy
            configuredGauge.set(to: Double(counts.configured))
            busyGauge.set(to: Double(counts.busy))
            busyRatioGauge.set(to: counts.configured > 0 ? min(1, Double(counts.busy) / Double(counts.configured)) : 0)
        }
    }

    static let configuredGauge = MomentsMetrics.registry.makeGauge(
        name: MomentsMetrics.workersConfigured, help: MomentsMetrics.workersConfiguredHelp)
    static let busyGauge = MomentsMetrics.registry.makeGauge(
        name: MomentsMetrics.workersBusy, help: MomentsMetrics.workersBusyHelp)
    static let busyRatioGauge = MomentsMetrics.registry.makeGauge(
        name: MomentsMetrics.workersBusyRatio, help: MomentsMetrics.workersBusyRatioHelp)
}

/// Workers counted as configured until `stopped()` (once; later calls do nothing).
public final class WorkerSlots: Sendable {
    private let count: Mutex<Int>
    init(count: Int) { self.count = Mutex(count) }
    public func stopped() {
        let released = count.withLock { value -> Int in
            defer { value = 0 }; return value
        }
        if released != 0 { WorkerMetrics.adjust(configured: -released) }
    }
}

// MARK: - Quota

/// The problem codes of plan-limit refusals.
public enum QuotaRefusalCode: String, Sendable, CaseIterable {
    case quotaExceeded = "quota_exceeded"
    case tooManyJobs = "too_many_jobs"
    case qualityNotInPlan = "quality_not_in_plan"
    case dailyBudgetExceeded = "daily_budget_exceeded"
}

public enum QuotaMetrics {
    public static func refused(_ code: QuotaRefusalCode) { counter(code).increment() }

    static func counter(_ code: QuotaRefusalCode) -> Counter {
        MomentsMetrics.registry.makeCounter(
            name: MomentsMetrics.quotaRefusals, labels: [("code", code.rawValue)],
            help: MomentsMetrics.quotaRefusalsHelp)
    }
}
