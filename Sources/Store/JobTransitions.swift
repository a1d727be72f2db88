import Foundation
import MediaVocabulary
import Wording

/// A change to a job's reserved unit that a transition asks its engine to write, in the same
/// transaction, as one ledger line (nothing when the unit is already settled).
public struct QuotaSettlement: Sendable, Equatable {
    public var state: QuotaState
    public var reason: String
    public var workerSeconds: Double

    /// The ledger line's change and the job's new quota state, or nil when the job's unit is not
    /// reserved any more (settled before: nothing to write). Marks the job settled.
    public func apply(to job: inout Job) -> (period: String, change: Int)? {
        guard job.quotaState == QuotaState.reserved.rawValue, let period = job.quotaPeriod else { return nil }
        job.quotaState = state.rawValue
        return (period, state == .released ? -1 : 0)
    }
}

/// The state changes of a job, written once for both engines: each sets every field the new state
/// implies (status, stage, message, times, lease) and returns the quota settlement to record.
extension Job {
    public mutating func markCompleted(
        output: JobOutput, segments: [Segment], processingSeconds: Double,
        workerSeconds: Double, now: Date
    ) -> QuotaSettlement {
        status = .completed
        progress = 100
        stage = "done"
        message = Say.highlightReady
        self.output = output
        self.segments = segments
        self.processingSeconds = processingSeconds
        finishedAt = now
        updatedAt = now
        self.workerSeconds += workerSeconds
        releaseLease()
        if let duplicate = output.duplicateOf, duplicate.resultCopied {
            // A re-upload given the highlight its original already made: not a second highlight.
            message = Say.reuploadHighlightReady
            return QuotaSettlement(
                state: .released, reason: "released: a re-upload of job \(duplicate.jobId); its highlight was returned",
                workerSeconds: workerSeconds)
        }
        return QuotaSettlement(
            state: .consumed, reason: "consumed: the highlight was delivered", workerSeconds: workerSeconds)
    }

    public mutating func markFailed(code: String, message: String, chargeSeconds: Double, now: Date) -> QuotaSettlement
    {
        status = .failed
        stage = "failed"
        errorCode = code
        errorMessage = message
        self.message = message
        finishedAt = now
        updatedAt = now
        workerSeconds += chargeSeconds
        releaseLease()
        let reason =
            chargeSeconds > 0
            ? "released: the job failed (\(code)); worker time charged" : "released: the job failed (\(code))"
        return QuotaSettlement(state: .released, reason: reason, workerSeconds: chargeSeconds)
    }

    public mutating func markCancelled(now: Date) -> QuotaSettlement {
        status = .cancelled
        stage = "cancelled"
        message = Say.cancelledAtRequest
        finishedAt = now
        updatedAt = now
        releaseLease()
        return QuotaSettlement(state: .released, reason: "released: the job was cancelled", workerSeconds: 0)
    }

    /// Back in the queue after a transient failure, to start after `runAfter` (the attempt stays
    /// counted). Returns the reason of the ledger line charging `chargeSeconds` (when above 0).
    public mutating func markRetrying(runAfter: Date, abnormal: Bool, chargeSeconds: Double, reason: String, now: Date)
        -> String
    {
        status = .pending
        stage = nil
        self.runAfter = runAfter
        if abnormal { abnormalExits += 1 }
        workerSeconds += chargeSeconds
        message = Say.waitingToRetry(reason)
        updatedAt = now
        releaseLease()
        return "worker time: attempt \(attempts) ended (\(reason))"
    }

    /// A processing job whose worker is gone (a crash, an expired lease): back in the queue (after
    /// `backoffSeconds`·2^(attempts−1) when above 0), or failed once started `maxAttempts` times.
    /// Returns the settlement when it failed, nil when it was re-queued.
    public mutating func markInterrupted(maxAttempts: Int, backoffSeconds: Double, now: Date) -> QuotaSettlement? {
        releaseLease()
        updatedAt = now
        guard attempts < maxAttempts else {
            status = .failed
            stage = "failed"
            errorCode = "interrupted"
            errorMessage = Job.interruptedMessage(attempts: attempts)
            message = errorMessage!
            finishedAt = now
            return QuotaSettlement(
                state: .released, reason: "released: processing was interrupted too often", workerSeconds: 0)
        }
        status = .pending
        stage = nil
        if backoffSeconds > 0 {
            runAfter = now.addingTimeInterval(retryBackoff(base: backoffSeconds, attempts: attempts))
        }
        message = Job.requeuedMessage(attempts: attempts, maxAttempts: maxAttempts)
        return nil
    }

    /// The job as the accepting transaction stores it: the plan's terms and one reserved unit of
    /// `period` (the engine writes the matching ledger line, `reservationReason`).
    public func reserving(_ limits: QuotaLimits, period: String) -> Job {
        var job = self
        job.outputCap = limits.outputCap
        job.retentionHours = limits.retentionHours
        job.maxDurationSeconds = limits.maxDurationSeconds
        job.quotaPeriod = period
        job.quotaState = QuotaState.reserved.rawValue
        return job
    }

    public static let reservationReason = "reserved when the job was accepted"

    private mutating func releaseLease() {
        leaseOwner = nil
        leaseExpiresAt = nil
    }
}
