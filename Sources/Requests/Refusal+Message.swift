import MediaVocabulary
import Foundation
import JobMedia
import Store
import Wording

/// What a refusal tells the client: a stable code, a sentence saying what is wrong and what to do
/// (the user's terms only: FFmpeg's text and paths go to the log), and the figures behind it.
extension Refusal {
    public var code: String {
        switch self {
        case .quotaExceeded: "quota_exceeded"
        case .tooManyJobs: "too_many_jobs"
        case .dailyBudgetExceeded: "daily_budget_exceeded"
        case .originalQualityNotInPlan: "quality_not_in_plan"
        case .unreadable: "unreadable"
        case .unusableMedia(let kind, _): kind.rawValue
        case .tooShort: "too_short"
        case .tooLongForServer, .tooLongForPlan, .originalBeyondPlan: "too_long"
        case .insufficientStorage: "insufficient_storage"
        case .serverBusy: "server_busy"
        case .tooManyUploads: "too_many_uploads"
        case .fileTooLarge: "file_too_large"
        case .storageUnavailable: "storage_unavailable"
        case .processingUnavailable: "processing_unavailable"
        case .targetDurationNotANumber, .targetDurationNotWhole, .targetDurationOutOfRange: "invalid_target_duration"
        case .invalidQuality, .qualityNotAString: "invalid_quality"
        case .invalidAspect, .aspectNotAString: "invalid_aspect"
        case .invalidFocus: "invalid_focus"
        case .invalidInclude: "invalid_include"
        case .invalidExclude: "invalid_exclude"
        case .uploadNotFound: "upload_not_found"
        case .uploadGone: "upload_gone"
        case .uploadComplete: "upload_complete"
        case .uploadFailed(let code, _): code ?? "upload_failed"
        case .uploadLocked: "upload_locked"
        case .offsetMismatch: "offset_mismatch"
        case .lengthMismatch: "length_mismatch"
        case .pastLength: "past_length"
        case .appendInterrupted: "upload_interrupted"
        case .checksumMismatch: "checksum_mismatch"
        }
    }

    /// Seconds after which the same request may succeed.
    public var retryAfter: Int? {
        switch self {
        case .tooManyJobs(let t): t.retryAfter
        case .dailyBudgetExceeded(let b): b.retryAfter
        case .storageUnavailable: MediaStorageError.retryAfterSeconds
        case .processingUnavailable: 300
        case .serverBusy: Self.serverBusyRetrySeconds
        case .tooManyUploads: Self.tooManyUploadsRetrySeconds
        case .uploadLocked(_, let retry): retry
        default: nil
        }
    }

    /// The figures a client can act on: limits, usage, the product that lifts a limit, the offset.
    public var extras: [String: Value] {
        switch self {
        case .quotaExceeded(let q):
            var extras: [String: Value] = [
                "limit": .int(q.limit), "used": .int(q.used),
                "remaining": .int(max(0, q.limit - q.used)),
                "resets_at": .string(Self.timestamp(q.resetsAt)), "plan": .string(q.plan)
            ]
            if let product = q.upgradeProduct { extras["product_id"] = .string(product) }
            return extras
        case .tooManyJobs(let t):
            var extras: [String: Value] = [
                "limit": .int(t.limit), "active": .int(t.active),
                "product_id": .string(t.product)
            ]
            if t.uploading > 0 { extras["uploading"] = .int(t.uploading) }
            return extras
        case .dailyBudgetExceeded(let b):
            var extras: [String: Value] = [
                "limit_seconds": .int(Int(b.limitSeconds)),
                "used_seconds": .int(Int(b.usedSeconds.rounded())),
                "resets_at": .string(Self.timestamp(b.resetsAt)), "plan": .string(b.plan)
            ]
            if let product = b.upgradeProduct { extras["product_id"] = .string(product) }
            return extras
        case .originalQualityNotInPlan(let plan, let product):
            var extras: [String: Value] = ["plan": .string(plan)]
            if let product { extras["product_id"] = .string(product) }
            return extras
        case .tooLongForPlan(let p):
            var extras: [String: Value] = ["limit_seconds": .int(Int(p.limitSeconds)), "plan": .string(p.plan)]
            if let upgrade = p.upgrade { extras["product_id"] = .string(upgrade.product) }
            return extras
        case .originalBeyondPlan(let o):
            return ["limit_seconds": .int(Int(o.limitSeconds)), "plan": .string(o.plan)]
        case .tooManyUploads(let limit, _):
            return ["limit": .int(limit)]
        case .fileTooLarge(let f):
            var extras: [String: Value] = ["limit_bytes": .int(Int(f.limit)), "plan": .string(f.plan)]
            if let upgrade = f.upgrade { extras["product_id"] = .string(upgrade.product) }
            return extras
        case .targetDurationOutOfRange(_, let minimum, let maximum, true):
            return ["minimum": .int(minimum), "maximum": .int(maximum)]
        case .invalidQuality(_, true):
            return ["allowed": .strings(HighlightQuality.allCases.map(\.rawValue))]
        case .uploadComplete(let offset, let jobID):
            return ["offset": .int(Int(offset)), "job_id": .string(jobID ?? "")]
        case .uploadLocked(let offset, _), .offsetMismatch(let offset, _), .checksumMismatch(let offset):
            return ["offset": .int(Int(offset))]
        default:
            return [:]
        }
    }

    /// The user's sentence (Wording's `Say`, the one home of what the service says).
    public var message: String {
        switch self {
        case .quotaExceeded(let q):
            Say.quotaExceeded(used: q.used, limit: q.limit, plan: q.plan, resetsAt: q.resetsAt, upgradeProduct: q.upgradeProduct)
        case .tooManyJobs(let t):
            Say.tooManyJobs(
                limit: t.limit, active: t.active, uploading: t.uploading, retryAfter: t.retryAfter, product: t.product,
                upgradeJobs: t.upgradeJobs)
        case .dailyBudgetExceeded(let b):
            Say.dailyBudgetExceeded(limitSeconds: b.limitSeconds, plan: b.plan, resetsAt: b.resetsAt, upgradeProduct: b.upgradeProduct)
        case .originalQualityNotInPlan(let plan, let product):
            Say.originalQualityNotInPlan(plan: plan, upgradeProduct: product)
        case .unreadable: Say.unreadableUpload
        case .unusableMedia(let kind, let detail): Say.unusableUpload(kind, detail: detail)
        case .tooShort(let duration): Say.tooShort(duration: duration)
        case .tooLongForServer(let duration, let limit): Say.tooLongForServer(duration: duration, limit: limit)
        case .tooLongForPlan(let p):
            Say.tooLongForPlan(duration: p.duration, limitSeconds: p.limitSeconds, plan: p.plan, upgrade: p.upgrade)
        case .originalBeyondPlan(let o):
            Say.originalBeyondPlan(
                duration: o.duration, bytes: o.bytes, plan: o.plan, limitSeconds: o.limitSeconds, limitBytes: o.limitBytes)
        case .insufficientStorage: Say.insufficientStorage
        case .storageUnavailable: Say.storageUnavailable
        case .processingUnavailable: Say.processingUnavailable
        case .serverBusy(let resumable): Say.serverBusy(resumable: resumable)
        case .tooManyUploads(let limit, let resumable): Say.tooManyUploads(limit: limit, resumable: resumable)
        case .fileTooLarge(let f): Say.fileTooLarge(limitBytes: f.limit, plan: f.plan, upgrade: f.upgrade)
        case .targetDurationNotANumber(let text): Say.targetDurationNotANumber(text)
        case .targetDurationNotWhole: Say.targetDurationNotWhole
        case .targetDurationOutOfRange(let value, let minimum, let maximum, _):
            Say.targetDurationOutOfRange(value, minimum: minimum, maximum: maximum)
        case .invalidQuality(let given, _): Say.invalidQuality(given)
        case .qualityNotAString: Say.qualityNotAString
        case .invalidAspect(let given): Say.invalidAspect(given)
        case .aspectNotAString: Say.aspectNotAString
        case .invalidFocus(let given): Say.invalidFocus(given)
        case .invalidInclude(let fault): Self.message(fault)
        case .invalidExclude(let fault): Self.message(fault)
        case .uploadNotFound, .uploadGone, .uploadComplete, .uploadFailed, .uploadLocked, .offsetMismatch,
            .lengthMismatch, .pastLength, .appendInterrupted, .checksumMismatch:
            uploadMessage
        }
    }

    static func timestamp(_ date: Date) -> String { Say.timestamp(date) }

    static func message(_ fault: IncludeFault) -> String {
        switch fault {
        case .malformed: Say.includeMalformed
        case .tooMany(let count): Say.includeTooMany(count, limit: EditRequest.maxPins)
        case .pastEnd(let time, let duration): Say.pinPastEnd(time: time, duration: duration)
        case .nearExclusion(let time, let range):
            Say.pinNearExclusion(time: time, clearance: EditRequest.pinClearance, start: range.start, end: range.end)
        case .doNotFit(let pins, let target): Say.pinsDoNotFit(pins, targetDuration: target)
        }
    }

    static func message(_ fault: ExcludeFault) -> String {
        switch fault {
        case .malformed: Say.excludeMalformed
        case .notAList: Say.excludeNotAList
        case .badRange: Say.excludeBadRange
        case .tooMany(let count): Say.excludeTooMany(count, limit: EditRequest.maxExclusions)
        case .leavesNothing: Say.excludeLeavesNothing
        }
    }

    var uploadMessage: String {
        switch self {
        case .uploadNotFound: Say.uploadNotFound
        case .uploadGone: Say.uploadGone
        case .uploadComplete(_, let jobID): Say.uploadComplete(jobID: jobID ?? "")
        case .uploadFailed(_, let message): message ?? Say.uploadRefused
        case .uploadLocked: Say.uploadLocked
        case .offsetMismatch(let offset, let sent): Say.offsetMismatch(offset: offset, sent: sent)
        case .lengthMismatch(.changed(let length, let to)): Say.lengthChanged(length: length, to: to)
        case .lengthMismatch(.belowReceived(let declared, let received)):
            Say.lengthBelowReceived(declared: declared, received: received)
        case .lengthMismatch(.endedElsewhere(let declared, let ended)):
            Say.lengthEndedElsewhere(declared: declared, ended: ended)
        case .pastLength(let limit): Say.pastLength(limit: limit)
        case .appendInterrupted: Say.appendInterrupted
        case .checksumMismatch(let offset): Say.checksumMismatch(offset: offset)
        default: ""
        }
    }
}
