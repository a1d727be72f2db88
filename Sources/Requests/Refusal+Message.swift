import MediaVocabulary
import Foundation
import JobMedia
import Store

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

    public var message: String {
        switch self {
        case .quotaExceeded(let q): Self.message(q)
        case .tooManyJobs(let t): Self.message(t)
        case .dailyBudgetExceeded(let b): Self.message(b)
        case .originalQualityNotInPlan(let plan, let product):
            "Original quality (your video's own picture, copied without re-encoding) is not part of the \(plan) plan."
                + (product.map { " Subscribe to \($0) to get it, or" } ?? "") + " choose quality high."
        case .unreadable, .unusableMedia, .tooShort, .tooLongForServer, .tooLongForPlan, .originalBeyondPlan:
            mediaMessage
        case .insufficientStorage:
            "The server is low on storage space and cannot take this upload now. Try again later."
        case .storageUnavailable:
            MediaStorageError.userMessage
        case .processingUnavailable:
            Self.processingUnavailableMessage
        case .serverBusy(let resumable):
            "The server is receiving as many uploads as it can right now. Try again in a minute"
                + (resumable ? Self.keepsWhatItHas : "") + "."
        case .tooManyUploads(let limit, let resumable):
            "Your account is already sending \(limit) upload\(limit == 1 ? "" : "s") at once. "
                + "Wait for one to finish, then send this one" + (resumable ? Self.keepsWhatItHas : "") + "."
        case .fileTooLarge(let f):
            Self.message(f)
        case .targetDurationNotANumber, .targetDurationNotWhole, .targetDurationOutOfRange, .invalidQuality,
            .qualityNotAString, .invalidAspect, .aspectNotAString, .invalidFocus, .invalidInclude, .invalidExclude:
            optionsMessage
        case .uploadNotFound, .uploadGone, .uploadComplete, .uploadFailed, .uploadLocked, .offsetMismatch,
            .lengthMismatch, .pastLength, .appendInterrupted, .checksumMismatch:
            uploadMessage
        }
    }

    static let keepsWhatItHas = "; the upload keeps what it has"
    /// A job or upload the server cannot process safely (its sandbox is incomplete): nothing of
    /// the user's is lost or charged, the operator is told by the log and /ready.
    public static let processingUnavailableMessage =
        "The server cannot process videos right now: its operator has been told. Nothing was charged; try again later."

    static func message(_ f: FileTooLarge) -> String {
        let detail = "The file is larger than the \(f.plan) plan accepts (\(f.limit / 1_000_000) MB)."
        guard let upgrade = f.upgrade else { return detail + " Upload a shorter or smaller video." }
        return detail + " Upload a shorter or smaller video, or subscribe to \(upgrade.product) for files up to "
            + "\(upgrade.maxBytes / 1_000_000) MB."
    }

    static func timestamp(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

    /// What frees a place an unfinished upload holds.
    static let unfinishedUploadHint =
        " An upload keeps its place while it is received; an unfinished resumable "
        + "upload until it completes, is cancelled (DELETE its upload URL), expires, or receives "
        + "nothing for the plan's idle time."

    static func message(_ q: QuotaExceeded) -> String {
        var detail =
            "You have made \(q.used) of your \(q.limit) \(q.plan) highlights this month. "
            + "The count resets on \(timestamp(q.resetsAt))"
        if let product = q.upgradeProduct {
            detail += "; subscribe to \(product) for unlimited highlights."
        } else {
            detail += " (the fair-use limit of the \(q.plan) plan)."
        }
        return detail
    }

    static func message(_ t: TooManyJobs) -> String {
        let busy = t.active + t.uploading
        let counting = t.uploading > 0 ? " (counting uploads still being received)" : ""
        let upgrade = t.upgradeJobs.map { ", or subscribe to \(t.product) to run \($0) at once" } ?? ""
        let hint = t.uploading > 0 ? unfinishedUploadHint : ""
        let jobs = "\(t.limit) job\(t.limit == 1 ? "" : "s")", verb = busy == 1 ? "is" : "are"
        return "Your plan runs \(jobs) at a time and \(busy) \(verb) "
            + "still in progress\(counting). Try again in about \(t.retryAfter) s\(upgrade).\(hint)"
    }

    static func message(_ b: DailyBudget) -> String {
        var detail =
            "Your \(b.plan) plan's processing time for today (\(Int(b.limitSeconds / 60)) minutes) "
            + "is used up; it renews at \(timestamp(b.resetsAt))."
        if let product = b.upgradeProduct { detail += " Subscribe to \(product) for more." }
        return detail
    }

    /// Where a client finds what the server reads.
    static let formatsHint = " Upload an MP4, MOV or another format listed at /api/v1/upload/formats."

    var mediaMessage: String {
        switch self {
        case .unreadable:
            return "The uploaded file could not be read: it is damaged or not a video this server can read."
                + Self.formatsHint
        case .unusableMedia(let kind, let detail):
            return Self.what(kind, detail: detail) + Self.formatsHint
        case .tooShort(let duration):
            return String(format: "The video is %.2f s long; a highlight needs at least 1 second of video.", duration)
        case .tooLongForServer(let duration, let limit):
            return String(
                format: "The video is %.0f s long; this server accepts videos up to %.0f s. "
                    + "Trim it and upload again.", duration, limit)
        case .tooLongForPlan(let p):
            let detail = String(
                format: "The video is %.0f s long; the %@ plan accepts videos up to %.0f s.",
                p.duration, p.plan, p.limitSeconds)
            guard let upgrade = p.upgrade else { return detail + " Trim it and upload again." }
            let minutes = Int(upgrade.limitSeconds / 60)
            return detail + " Trim it, or subscribe to \(upgrade.product) for up to \(minutes) minutes."
        case .originalBeyondPlan(let o):
            return String(
                format: "The original video (%.0f s, %lld MB) is beyond what the %@ plan accepts now "
                    + "(%.0f s, %lld MB).",
                o.duration, o.bytes / 1_000_000, o.plan, o.limitSeconds, o.limitBytes / 1_000_000)
        default:
            return ""
        }
    }

    static func what(_ kind: MediaFailure, detail: String) -> String {
        switch kind {
        case .emptyFile: "The uploaded file is empty."
        case .notMedia: "The uploaded file is not a video this server can read."
        case .notVideo: "The uploaded file has no video: it is a still image or audio only."
        case .unsupportedCodec: "The video's codec is not supported."
        case .dimensionsTooLarge:
            "The video's picture is larger than this server accepts (8192 px a side, 36 megapixels)."
        case .truncated:
            "The video file is incomplete (it ends early, e.g. the upload was cut short or the recording was not "
                + "finished)."
        case .unsupportedContainer:
            "The uploaded file is a playlist, manifest, list of other files or a container this server does not open."
        case .tooLong, .tooManyFrames, .badTimestamps: "The video cannot be accepted: \(detail)."
        case .fileNotFound, .io, .ffmpeg, .cancelled, .invalidRange, .unusable: "The video cannot be read."
        }
    }

    var optionsMessage: String {
        switch self {
        case .targetDurationNotANumber(let text):
            return "target_duration must be a whole number of seconds, not \"\(text)\"."
        case .targetDurationNotWhole:
            return "target_duration must be a whole number of seconds."
        case .targetDurationOutOfRange(let value, let minimum, let maximum, _):
            return "target_duration must be between \(minimum) and \(maximum) seconds; it was \(value)."
        case .invalidQuality(let given, _):
            return "quality must be low, medium, high or original; it was \"\(given)\"."
        case .qualityNotAString:
            return "quality must be low, medium, high or original."
        case .invalidAspect(let given):
            let choices = AspectRatio.allCases.map(\.rawValue).joined(separator: ", ")
            return "aspect must be one of \(choices); it was \"\(given.prefix(40))\"."
        case .aspectNotAString:
            return "aspect must be a string such as \"9:16\"."
        case .invalidFocus(let given):
            return "focus must be auto (people first where there are any), people or action; it was \"\(given.prefix(40))\"."
        case .invalidInclude(let fault):
            return Self.message(fault)
        case .invalidExclude(let fault):
            return Self.message(fault)
        default:
            return ""
        }
    }

    static func message(_ fault: IncludeFault) -> String {
        switch fault {
        case .malformed:
            return "include lists the source times (seconds) that must be in the highlight: \"12.5,40\" or [12.5, 40]."
        case .tooMany(let count):
            return "include takes at most \(EditRequest.maxPins) times; it had \(count)."
        case .pastEnd(let time, let duration):
            return String(format: "The pinned time %.1f s is past the end of the video (%.1f s).", time, duration)
        case .nearExclusion(let time, let range):
            return String(
                format: "The pinned time %.2f s is inside (or within %.2f s of) the excluded range "
                    + "%.2f-%.2f s; move or remove one of them.",
                time, EditRequest.pinClearance, range.start, range.end)
        case .doNotFit(let pins, let target):
            return "\(pins) pinned times do not fit a \(target) s highlight; pin fewer or ask for a longer one."
        }
    }

    static func message(_ fault: ExcludeFault) -> String {
        switch fault {
        case .malformed:
            "exclude lists source ranges (seconds) never to show: \"10-20,30-35\", [[10, 20]] or "
                + "[{\"start\": 10, \"end\": 20}], each start before its end."
        case .notAList: "exclude must be a list of ranges."
        case .badRange: "Times are seconds of the original video: no negative time, every range's start before its end."
        case .tooMany(let count): "exclude takes at most \(EditRequest.maxExclusions) ranges; it had \(count)."
        case .leavesNothing: "exclude leaves no footage to make a highlight of."
        }
    }

    var uploadMessage: String {
        switch self {
        case .uploadNotFound:
            return "There is no such upload. Create one with POST /api/v1/uploads."
        case .uploadGone:
            return "This upload was cancelled or has expired; its bytes are deleted. Start a new upload."
        case .uploadComplete(_, let jobID):
            return "This upload is complete; its job is \(jobID ?? "")."
        case .uploadFailed(_, let message):
            return message ?? "This upload was refused. Start a new upload."
        case .uploadLocked:
            return "Another request is still sending bytes to this upload. Wait for it to end (or drop it), "
                + "then ask for the offset (HEAD) and continue."
        case .offsetMismatch(let offset, let sent):
            return "The upload is at byte \(offset), not \(sent). Ask for the offset (HEAD) and send from there."
        case .lengthMismatch(.changed(let length, let to)):
            return "The upload's length is \(length) bytes; it cannot change to \(to)."
        case .lengthMismatch(.belowReceived(let declared, let received)):
            return "The declared length (\(declared) bytes) is less than the bytes already received (\(received))."
        case .lengthMismatch(.endedElsewhere(let declared, let ended)):
            return "The upload was declared as \(declared) bytes but ended at \(ended)."
        case .pastLength(let limit):
            return "The bytes sent go past the upload's declared length (\(limit) bytes)."
        case .appendInterrupted:
            return "The append ended before its bytes arrived, so its checksum cannot be verified; nothing of it "
                + "was kept. Ask for the offset (HEAD) and send again."
        case .checksumMismatch(let offset):
            return "The bytes received do not match the Upload-Checksum sent with them; they were discarded. "
                + "Send them again from offset \(offset)."
        default:
            return ""
        }
    }
}
