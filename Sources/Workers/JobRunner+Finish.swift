import Foundation
import HighlightJob
import JobMedia
import Logging
import Requests
import MomentsConfig
import ServiceLifecycle
import Store
import Synchronization
import Telemetry
import Wording

/// How a job ends: its child's outcome recorded as completed, handed back, cancelled, retried or
/// failed, with the messages its owner reads.
extension JobRunner {
    /// A child that died abnormally this many times fails the job for good.
    static let abnormalExitLimit = 2

    /// Records how the job's child ended: completed (results stored first), handed back at
    /// shutdown, cancelled, retried or failed; every outcome settles the job's quota unit.
    func finish(
        _ job: Job, worker: String, attempt: HighlightAttempt, started: Date, stages: JobStageTimer, log: Logger
    ) async {
        let now = clock()
        let elapsed = now.timeIntervalSince(started)
        // What a failure charges against the daily worker budget: the time spent, unless the job
        // is a re-cut (its input already made a highlight, so the failure is not the input's).
        let isRecut = job.edit?.recutOf != nil
        let charge = isRecut ? 0 : elapsed
        do {
            switch attempt.outcome {
            case .answeredWithoutResult:
                try await failForGood(
                    job, worker: worker, code: "internal", message: Say.serviceFailure, charge: 0, log: log,
                    reason: "the child answered without a result")
            case .made(let made):
                let finished = Finished(
                    job: job, worker: worker, made: made, recognized: attempt.recognized, now: now, elapsed: elapsed)
                try await complete(finished, stages: stages, log: log)
            case .cancelled:
                try await stopped(job, worker: worker, now: now, elapsed: elapsed, log: log)
            case .failed(let problem) where problem.isTransient:
                try await retryOrFail(
                    job, worker: worker, reason: "the server could not store the result", abnormal: false, charge: 0,
                    finalCode: problem.code, finalMessage: Say.serviceFailure, log: log,
                    detail: problem.description)
            case .failed(let problem):
                // The input's fault: its unit is released, the worker time stays charged. A re-cut's
                // input already made a highlight: its failure is the service's, charged nothing.
                try await failForGood(
                    job, worker: worker, code: problem.code,
                    message: isRecut ? Say.recutFailure : problem.message, charge: charge, log: log,
                    reason: problem.description)
            case .abnormal(let reason, let timedOut):
                try await abnormal(job, worker: worker, reason: reason, timedOut: timedOut, charge: charge, log: log)
            case .sandboxUnavailable(let reason):
                // Not the input's fault and not a crash: nothing is charged, the operator is told.
                log.error("a job was not processed: its sandbox is incomplete", metadata: ["reason": "\(reason)"])
                try await failForGood(
                    job, worker: worker, code: "processing_unavailable",
                    message: Say.processingUnavailable, charge: 0, log: log, reason: reason)
            }
        } catch {
            log.error("cannot record the job's outcome", metadata: ["error": "\(error)"])
        }
    }

    /// A finished child's answer and what its job's completion needs.
    struct Finished {
        var job: Job
        var worker: String
        var made: MadeHighlight
        var recognized: RecognizedReupload?
        var now: Date
        var elapsed: Double
    }

    /// The highlight is made: its files are stored (an earlier highlight's copied for a
    /// recognised re-upload), then the job is completed, unless it was cancelled meanwhile.
    private func complete(_ done: Finished, stages: JobStageTimer, log: Logger) async throws {
        let (job, worker, made) = (done.job, done.worker, done.made)
        var earlierOutput: JobOutput?
        if let earlierJobId = made.copiesHighlightOf {
            stages.step("copy earlier highlight")
            earlierOutput = await copyEarlierHighlight(of: earlierJobId, as: made, to: job, log: log)
            guard earlierOutput != nil else {
                try await retryOrFail(
                    job, worker: worker, reason: "the earlier highlight could not be copied", abnormal: false,
                    charge: 0, finalCode: "io", finalMessage: Say.serviceFailure, log: log,
                    detail: "the earlier job's result is gone or could not be copied")
                return
            }
        }
        // Stored (on disk, or in the bucket) before the database says completed.
        stages.step("store results")
        guard (try? await mediaStorage.publish(jobID: job.id, files: MediaFile.results)) != nil else {
            try await retryOrFail(
                job, worker: worker, reason: "the server could not store the result", abnormal: false,
                charge: 0, finalCode: "io", finalMessage: Say.serviceFailure, log: log,
                detail: "the media storage refused the results")
            return
        }
        let output = made.output(earlier: earlierOutput)
        let segments = made.segments
        stages.step("record")
        let completed = try await retrying {
            try await self.database.complete(
                id: job.id, worker: worker, output: output, segments: segments, processingSeconds: done.elapsed,
                workerSeconds: done.elapsed, now: done.now)
        }
        if completed {
            await afterCompletion(done, stages: stages, log: log)
        } else {
            await mediaStorage.removeMedia(jobID: job.id, keepingInput: false)
            try? await database.chargeWorkerTime(
                jobId: job.id, seconds: done.elapsed, reason: "worker time: cancelled while finishing", now: done.now)
            log.info("job cancelled as it completed; result removed")
            JobMetrics.finished(.cancelled)
        }
    }

    /// A re-upload given its earlier highlight: that highlight's files become this job's. Nil when
    /// they could not be copied (the storyboard is best effort: without it there is none).
    private func copyEarlierHighlight(
        of earlierJobId: String, as made: MadeHighlight, to job: Job, log: Logger
    ) async -> JobOutput? {
        let earlier = try? await database.job(id: earlierJobId, accountId: job.accountId)?.output
        guard var earlier,
            (try? await mediaStorage.copyMedia(from: earlierJobId, to: job.id, files: [.result, .poster])) != nil
        else { return nil }
        // An original-quality highlight's preview comes along (best effort: without it there is none).
        if earlier.preview?.state == .ready,
            (try? await mediaStorage.copyMedia(from: earlierJobId, to: job.id, files: [.preview])) == nil
        {
            earlier.preview = nil
        }
        if earlier.preview?.state != .ready { earlier.preview = nil }
        earlier.storyboard = made.storyboard
        if made.reusesStoryboard,
            (try? await mediaStorage.copyMedia(from: earlierJobId, to: job.id, files: [.storyboard])) == nil
        {
            log.info("the earlier storyboard could not be copied", metadata: ["of": "\(earlierJobId)"])
            earlier.storyboard = nil
        }
        return earlier
    }

    /// The completed job's input, kept inputs and fingerprint settled, and the completion logged.
    private func afterCompletion(_ done: Finished, stages: JobStageTimer, log: Logger) async {
        let job = done.job
        // The input stays for the plan's retention where re-cuts are allowed (the sweeper removes it with the rest).
        if !settings.keepUploads, job.edit?.keepsInput != true {
            await mediaStorage.removeInput(jobID: job.id)
        }
        await settleKeptInputs(job, recognized: done.recognized, log: log)
        await highlights.storeFingerprint(of: done.made, recognized: done.recognized, job: job, log: log)
        log.info(
            "job completed",
            metadata: [
                "seconds": "\(String(format: "%.1f", done.elapsed))", "output_bytes": "\(done.made.fileSize)",
                "copied_frames": "\(done.made.copiedFrames)", "steps_ms": "\(stages.breakdown)"
            ])
        JobMetrics.finished(.completed)
    }

    /// Stopped before the end: handed back to the queue at shutdown, else cancelled by its owner
    /// (its files removed, the worker time it used charged).
    private func stopped(_ job: Job, worker: String, now: Date, elapsed: Double, log: Logger) async throws {
        if shuttingDown.load(ordering: .relaxed), try await database.job(id: job.id)?.status == .processing {
            try await retrying { try await self.database.requeue(id: job.id, worker: worker, now: now) }
            log.notice("job stopped by shutdown; back in the queue")
            JobMetrics.finished(.handedBack)
        } else {
            await mediaStorage.removeMedia(jobID: job.id, keepingInput: false)
            // A cancel after processing began still costs the worker time it used.
            try? await database.chargeWorkerTime(
                jobId: job.id, seconds: elapsed, reason: "worker time: cancelled during processing", now: now)
            log.info("job cancelled; files removed")
            JobMetrics.finished(.cancelled)
        }
    }

    /// The child died (crash, limits) or ran out of time: a second death or a timeout fails the job.
    private func abnormal(
        _ job: Job, worker: String, reason: String, timedOut: Bool, charge: Double, log: Logger
    ) async throws {
        let isRecut = job.edit?.recutOf != nil
        if timedOut {
            try await failForGood(
                job, worker: worker, code: "time_limit",
                message: Say.timeLimit,
                charge: charge, log: log, reason: reason)
        } else if job.abnormalExits + 1 >= Self.abnormalExitLimit {
            try await failForGood(
                job, worker: worker, code: "processing_failed",
                message: isRecut ? Say.recutFailure : Say.unprocessable,
                charge: charge, log: log, reason: reason)
        } else {
            try await retryOrFail(
                job, worker: worker, reason: "processing stopped unexpectedly", abnormal: true, charge: charge,
                finalCode: "processing_failed",
                finalMessage: isRecut ? Say.recutFailure : Say.unprocessable,
                log: log, detail: reason)
        }
    }

    /// Fails the job; the input and every file of it are removed (only a final failure deletes the input).
    func failForGood(
        _ job: Job, worker: String, code: String, message: String, charge: Double, log: Logger, reason: String
    ) async throws {
        _ = try await retrying {
            try await self.database.fail(
                id: job.id, worker: worker, code: code, message: message, chargeSeconds: charge, now: self.clock())
        }
        await mediaStorage.removeMedia(jobID: job.id, keepingInput: settings.keepUploads)
        log.warning("job failed", metadata: ["code": "\(code)", "error": "\(reason)"])
        JobMetrics.finished(.failed)
    }

    /// Another attempt later (exponential backoff), keeping the input; after `maxAttempts` the job fails.
    func retryOrFail(
        _ job: Job, worker: String, reason: String, abnormal: Bool, charge: Double, finalCode: String,
        finalMessage: String,
        log: Logger, detail: String
    ) async throws {
        guard job.attempts < settings.maxAttempts else {
            try await failForGood(
                job, worker: worker, code: finalCode, message: finalMessage, charge: charge, log: log, reason: detail)
            return
        }
        let delay = retryBackoff(base: settings.retryBackoffSeconds, attempts: job.attempts)
        let now = clock()
        await mediaStorage.removeMedia(jobID: job.id, keepingInput: true)
        _ = try await retrying {
            try await self.database.retryLater(
                id: job.id, worker: worker, runAfter: now.addingTimeInterval(delay), abnormal: abnormal,
                chargeSeconds: charge, reason: reason, now: now)
        }
        log.warning("job will be retried", metadata: ["in_seconds": "\(Int(delay))", "reason": "\(detail)"])
        JobMetrics.finished(.retried)
    }

    /// Runs a job's final database write again (after 0.5, 1, 2, 4, 8 s) when it fails (a busy or
    /// momentarily full database), so a finished job is not left looking `processing`. If every try
    /// fails, the job's lease runs out and a rescuer re-queues it.
    func retrying<T: Sendable>(_ write: @Sendable () async throws -> T) async throws -> T {
        var delay = 0.5
        while true {
            do { return try await write() } catch {
                if delay > 8 { throw error }
                logger.warning(
                    "database write failed; retrying", metadata: ["error": "\(error)", "in_seconds": "\(delay)"])
                try? await Task.sleep(for: .seconds(delay))
                delay *= 2
            }
        }
    }
}
