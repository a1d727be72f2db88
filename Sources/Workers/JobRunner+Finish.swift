import Analysis
import FFmpeg
import Foundation
import Highlight
import Isolation
import JobMedia
import Logging
import Requests
import MediaEngine
import MomentsConfig
import ServiceLifecycle
import Store
import Synchronization
import Telemetry

/// How a job ends: its child's outcome recorded as completed, handed back, cancelled, retried or
/// failed, with the messages its owner reads.
extension JobRunner {
    /// A child that died abnormally this many times fails the job for good.
    static let abnormalExitLimit = 2

    /// Records how the job's child ended: completed (results stored first), handed back at
    /// shutdown, cancelled, retried or failed; every outcome settles the job's quota unit.
    func finish(
        _ job: Job, worker: String, outcome: ChildOutcome, token: CancellationToken, started: Date,
        recognized: RecognizedReupload?, stages: JobStageTimer, log: Logger
    ) async {
        let now = clock()
        let elapsed = now.timeIntervalSince(started)
        // What a failure charges against the daily worker budget: the time spent, unless the job
        // is a re-cut (its input already made a highlight, so the failure is not the input's).
        let isRecut = job.edit?.recutOf != nil
        let charge = isRecut ? 0 : elapsed
        do {
            switch outcome {
            case .answered(let message):
                guard let result = message.result else {
                    try await failForGood(
                        job, worker: worker, code: "internal", message: Self.serviceFailureMessage, charge: 0, log: log,
                        reason: "the child answered without a result")
                    return
                }
                let finished = Finished(
                    job: job, worker: worker, result: result, recognized: recognized, now: now, elapsed: elapsed)
                try await complete(finished, stages: stages, log: log)
            case .cancelled:
                try await stopped(job, worker: worker, now: now, elapsed: elapsed, log: log)
            case .failed(let error) where Self.isTransient(error):
                try await retryOrFail(
                    job, worker: worker, reason: "the server could not store the result", abnormal: false, charge: 0,
                    finalCode: error.kind.rawValue, finalMessage: Self.serviceFailureMessage, log: log,
                    detail: error.description)
            case .failed(let error):
                // The input's fault: its unit is released, the worker time stays charged. A re-cut's
                // input already made a highlight: its failure is the service's, charged nothing.
                let (code, message) = Self.failure(error)
                try await failForGood(
                    job, worker: worker, code: code, message: isRecut ? Self.recutFailureMessage : message,
                    charge: charge, log: log, reason: error.description)
            case .abnormal(let reason, let timedOut):
                try await abnormal(job, worker: worker, reason: reason, timedOut: timedOut, charge: charge, log: log)
            case .sandboxUnavailable(let reason):
                // Not the input's fault and not a crash: nothing is charged, the operator is told.
                log.error("a job was not processed: its sandbox is incomplete", metadata: ["reason": "\(reason)"])
                try await failForGood(
                    job, worker: worker, code: "processing_unavailable",
                    message: Refusal.processingUnavailableMessage, charge: 0, log: log, reason: reason)
            }
        } catch {
            log.error("cannot record the job's outcome", metadata: ["error": "\(error)"])
        }
    }

    /// A finished child's answer and what its job's completion needs.
    struct Finished {
        var job: Job
        var worker: String
        var result: ChildMessage.Result
        var recognized: RecognizedReupload?
        var now: Date
        var elapsed: Double
    }

    /// The highlight is made: its files are stored (an earlier highlight's copied for a
    /// recognised re-upload), then the job is completed, unless it was cancelled meanwhile.
    private func complete(_ done: Finished, stages: JobStageTimer, log: Logger) async throws {
        let (job, worker, result) = (done.job, done.worker, done.result)
        let duplicate = result.report.duplicateOf
        var earlierOutput: JobOutput?
        if let duplicate, duplicate.resultCopied {
            stages.step("copy earlier highlight")
            earlierOutput = await copyEarlierHighlight(duplicate, of: result, to: job, log: log)
            guard earlierOutput != nil else {
                try await retryOrFail(
                    job, worker: worker, reason: "the earlier highlight could not be copied", abnormal: false,
                    charge: 0, finalCode: "io", finalMessage: Self.serviceFailureMessage, log: log,
                    detail: "the earlier job's result is gone or could not be copied")
                return
            }
        }
        // Stored (on disk, or in the bucket) before the database says completed.
        stages.step("store results")
        guard (try? await mediaStorage.publish(jobID: job.id, files: MediaFile.results)) != nil else {
            try await retryOrFail(
                job, worker: worker, reason: "the server could not store the result", abnormal: false,
                charge: 0, finalCode: "io", finalMessage: Self.serviceFailureMessage, log: log,
                detail: "the media storage refused the results")
            return
        }
        let output = Self.output(of: result, earlier: earlierOutput)
        let segments = Self.segments(of: result.report)
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
        _ duplicate: ReuploadMatch, of result: ChildMessage.Result, to job: Job, log: Logger
    ) async -> JobOutput? {
        let earlier = try? await database.job(id: duplicate.jobId, accountId: job.accountId)?.output
        guard var earlier,
            (try? await mediaStorage.copyMedia(from: duplicate.jobId, to: job.id, files: [.result, .poster])) != nil
        else { return nil }
        // An original-quality highlight's preview comes along (best effort: without it there is none).
        if earlier.preview?.state == .ready,
            (try? await mediaStorage.copyMedia(from: duplicate.jobId, to: job.id, files: [.preview])) == nil
        {
            earlier.preview = nil
        }
        if earlier.preview?.state != .ready { earlier.preview = nil }
        earlier.storyboard = result.report.storyboard
        if result.report.storyboardReused == true,
            (try? await mediaStorage.copyMedia(from: duplicate.jobId, to: job.id, files: [.storyboard])) == nil
        {
            log.info("the earlier storyboard could not be copied", metadata: ["of": "\(duplicate.jobId)"])
            earlier.storyboard = nil
        }
        return earlier
    }

    /// The completed job's input, kept inputs and fingerprint settled, and the completion logged.
    private func afterCompletion(_ done: Finished, stages: JobStageTimer, log: Logger) async {
        let (job, result, render) = (done.job, done.result, done.result.render)
        // The input stays for the plan's retention where re-cuts are allowed (the sweeper removes it with the rest).
        if !settings.keepUploads, job.edit?.keepsInput != true {
            await mediaStorage.removeInput(jobID: job.id)
        }
        await settleKeptInputs(job, recognized: done.recognized, log: log)
        await storeFingerprint(
            result.fingerprint ?? (result.report.analysisReused == true ? done.recognized?.fingerprint : nil),
            job: job, log: log)
        log.info(
            "job completed",
            metadata: [
                "seconds": "\(String(format: "%.1f", done.elapsed))", "output_bytes": "\(render?.fileSize ?? 0)",
                "copied_frames": "\(render?.copiedFrames ?? 0)", "steps_ms": "\(stages.breakdown)"
            ])
        JobMetrics.finished(.completed)
    }

    /// The job's output as its owner sees it: the render's (upright dimensions), or the earlier
    /// highlight's for a copied re-upload.
    static func output(of result: ChildMessage.Result, earlier: JobOutput?) -> JobOutput {
        let render = result.render
        let upright = (render?.rotation ?? 0) % 180 != 0
        var output = JobOutput(
            duration: render?.duration ?? 0, size: render?.fileSize ?? 0,
            width: upright ? render?.height ?? 0 : render?.width ?? 0,
            height: upright ? render?.width ?? 0 : render?.height ?? 0)
        if let earlier {
            output = JobOutput(
                duration: earlier.duration, size: earlier.size, width: earlier.width, height: earlier.height)
            output.render = earlier.render
            output.preview = earlier.preview
        }
        output.analysisReused = result.report.analysisReused ?? result.cached
        output.render = result.report.render.map {
            JobRender(method: $0.method.rawValue, reason: $0.reason, largestStartShift: $0.largestStartShift)
        }
        // quality=original: a preview every browser plays follows the completion.
        if result.report.render != nil, result.render != nil { output.preview = JobPreview(state: .pending) }
        output.duplicateOf = result.report.duplicateOf.map {
            JobDuplicate(jobId: $0.jobId, offsetSeconds: $0.offset, resultCopied: $0.resultCopied)
        }
        output.storyboard = earlier != nil ? earlier?.storyboard : result.report.storyboard
        return output
    }

    /// The chosen segments with their scores and, when reframed, each one's mean crop window.
    static func segments(of report: HighlightReport) -> [JobSegment] {
        let reframe = report.reframe
        return report.segments.enumerated().map { index, s in
            var segment = JobSegment(start: s.start, end: s.end, score: s.score, reason: s.reason)
            segment.people = s.people
            if let reframe, index < reframe.tracks.count {
                segment.crop = Self.meanWindow(reframe, track: reframe.tracks[index])
            }
            return segment
        }
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
                message:
                    "The video could not be processed: it took longer than this server allows for a video of its length. Check that the file plays correctly, export it again as MP4 and upload it.",
                charge: charge, log: log, reason: reason)
        } else if job.abnormalExits + 1 >= Self.abnormalExitLimit {
            try await failForGood(
                job, worker: worker, code: "processing_failed",
                message: isRecut ? Self.recutFailureMessage : Self.unprocessableMessage,
                charge: charge, log: log, reason: reason)
        } else {
            try await retryOrFail(
                job, worker: worker, reason: "processing stopped unexpectedly", abnormal: true, charge: charge,
                finalCode: "processing_failed",
                finalMessage: isRecut ? Self.recutFailureMessage : Self.unprocessableMessage,
                log: log, detail: reason)
        }
    }

    /// A reframe track's mean window over its segment (for timelines: one transform per clip).
    static func meanWindow(_ reframe: Reframe, track: CropTrack) -> JobCrop {
        let n = Double(max(1, track.x.count))
        let cx = track.x.isEmpty ? 0.5 : track.x.reduce(0, +) / n
        let cy = track.y.isEmpty ? 0.5 : track.y.reduce(0, +) / n
        return JobCrop(
            x: max(0, cx - reframe.width / 2), y: max(0, cy - reframe.height / 2), width: reframe.width,
            height: reframe.height)
    }

    static let unprocessableMessage =
        "The video could not be processed. Check that it plays correctly, export it again as MP4 and upload it."
    static let recutFailureMessage =
        "The re-cut could not be made; you were not charged for it. Try other settings, or upload the video again."
    static let serviceFailureMessage =
        "The server could not finish this highlight; you were not charged for it. Please upload the video again later."

    /// The input could not be brought to the worker (the media storage failed): worth another attempt.
    static let workspaceFailure = ChildOutcome.failed(
        MediaError(.io, operation: "prepare workspace", detail: "the input could not be fetched from the media storage")
    )

    /// Failures of the service, not of the video: worth another attempt.
    static func isTransient(_ error: MediaError) -> Bool { error.kind == .io }

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

    /// The code and sentence a failed job shows to its owner: the user's terms, never a path or
    /// FFmpeg's text (those go to the log).
    static func failure(_ error: MediaError) -> (String, String) {
        switch error.kind {
        case .unusable:
            return (
                error.kind.rawValue,
                "No usable footage: the video is black, frozen or blurred throughout, or too short for a highlight."
            )
        case .truncated, .notMedia, .notVideo, .unsupportedCodec, .dimensionsTooLarge, .unsupportedContainer:
            return (
                error.kind.rawValue,
                "The video could not be processed: \(error.detail). Try exporting it again as MP4 and upload it."
            )
        case .tooLong, .tooManyFrames, .badTimestamps:
            // Limits on decoded data: the detail names the limit in the user's terms.
            return (
                error.kind.rawValue,
                "The video could not be processed: \(error.detail). Check that it plays correctly, trim or export it again, and upload it."
            )
        case .invalidRange, .fileNotFound, .emptyFile, .io, .cancelled, .ffmpeg:
            return (error.kind.rawValue, unprocessableMessage)
        }
    }
}
