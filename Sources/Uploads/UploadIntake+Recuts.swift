import Foundation
import Accounts
import JobMedia
import Requests
import Store
import Wording

extension UploadIntake {
    /// A new job from a completed one of the same account: another length, shape, quality or
    /// set of pinned and excluded moments, rendered from the kept input with the stored analysis
    /// (no analysis decode). The job gets its own copy of both (links or server-side copies), so
    /// it lives and is retained like any other; it counts against the month's quota like an upload.
    public func recut(_ originalID: String, account: Account, request: RecutRequest) async throws -> (Job, QuotaUsage) {
        guard let original = try await database.job(id: originalID, accountId: account.id) else { throw RecutRefusal.notFound(jobID: originalID) }
        guard original.status == .completed else { throw RecutRefusal.notCompleted(original.status) }
        let current = try await policy.precheck(account)
        guard current.plan.recuts else { throw RecutRefusal.notAllowed(plan: current.plan.name) }
        guard original.mediaDeletedAt == nil, original.edit?.keepsInput == true || settings.keepUploads else {
            throw RecutRefusal.inputGone
        }
        // The plan as it is now (a subscription may have lapsed since the upload).
        if original.input.duration > current.plan.maxDurationSeconds
            || original.input.size > current.plan.maxUploadBytes
        {
            let plan = current.plan
            throw Refusal.originalBeyondPlan(
                .init(
                    duration: original.input.duration, bytes: original.input.size,
                    plan: plan.name, limitSeconds: plan.maxDurationSeconds,
                    limitBytes: plan.maxUploadBytes))
        }

        let base = original.edit ?? JobEdit()
        let options = try HighlightOptions.recut(request, of: original, limits: settings.highlightLimits)
        try policy.check(quality: options.quality, plan: current)
        let (target, quality, edit) = (options.targetDuration, options.quality, options.edit)

        let now = clock()
        let recent = (try? await database.recentCompletedJobs(limit: 20)) ?? []
        let queue = (try? await database.unfinishedJobs()) ?? []
        // No analysis: about what the render of the original took.
        let estimate = max(
            1,
            Int(
                (Double(
                    estimator.estimate(
                        input: original.input, targetDuration: target, quality: quality, recent: recent,
                        queue: queue, workers: settings.workers)) * 0.5).rounded()))
        var job = Job(
            id: UUID().uuidString.lowercased(), accountId: account.id, targetDuration: target, quality: quality,
            input: original.input, estimatedSeconds: estimate, now: now)
        job.message = Say.queued(ahead: queue.count)
        job.edit = edit.job(sourceName: base.sourceName, recutOf: original.id, keepsInput: current.plan.recuts)
        return try await enqueue(job, account: account, plan: current, now: now) {
            do {
                // A recognised re-upload of the same video may hold the original's input for it.
                if let holder = base.inputHeldBy, holder != original.id {
                    try await mediaStorage.copyMedia(from: holder, to: job.id, files: [.input])
                    try await mediaStorage.copyMedia(from: original.id, to: job.id, files: [.analysisData])
                } else {
                    try await mediaStorage.copyMedia(from: original.id, to: job.id, files: [.input, .analysisData])
                }
            } catch MediaStorageError.notFound {
                throw RecutRefusal.inputGone
            } catch is MediaStorageError {
                throw Refusal.storageUnavailable
            }
        }
    }
}
