import HTTPTypes
import Hummingbird
import Requests
import Wording

/// The HTTP status of every refusal of the service, in one table: the multipart upload, the tus
/// and IETF resumable uploads and re-cuts answer a refusal alike (the resumable controller adds
/// only its protocol's headers).
extension Refusal {
    public var status: HTTPResponse.Status {
        switch self {
        case .uploadLocked: return .init(code: 423, reasonPhrase: "Locked")
        case .checksumMismatch: return .init(code: 460, reasonPhrase: "Checksum Mismatch")
        // Without a reason phrase, as these answers always had (the problem's title names the status).
        default: return .init(code: statusCode)
        }
    }

    public var statusCode: Int {
        switch self {
        case .quotaExceeded, .originalQualityNotInPlan: 402
        case .tooManyJobs, .dailyBudgetExceeded: 429
        case .unreadable, .unusableMedia, .tooShort, .tooLongForServer, .tooLongForPlan, .originalBeyondPlan: 422
        case .insufficientStorage: 507
        case .storageUnavailable, .serverBusy, .processingUnavailable: 503
        case .tooManyUploads: 429
        case .fileTooLarge: 413
        // A form field's target_duration that is no number is malformed; the other options are out of range.
        case .targetDurationNotANumber: 400
        case .targetDurationNotWhole, .targetDurationOutOfRange, .invalidQuality, .qualityNotAString, .invalidAspect,
            .aspectNotAString, .invalidFocus, .invalidInclude, .invalidExclude:
            422
        case .uploadNotFound: 404
        case .uploadGone, .uploadFailed: 410
        case .uploadComplete, .offsetMismatch: 409
        case .uploadLocked: 423
        case .lengthMismatch, .appendInterrupted: 400
        case .pastLength: 413
        case .checksumMismatch: 460
        }
    }
}

extension Problem {
    /// The refusal as its problem: the table's status, the refusal's code, sentence and figures,
    /// and Retry-After when waiting helps.
    public init(_ refusal: Refusal) {
        var extensions: [String: ProblemValue] = [:]
        for (key, value) in refusal.extras {
            switch value {
            case .int(let v): extensions[key] = .int(v)
            case .string(let v): extensions[key] = .string(v)
            case .strings(let v): extensions[key] = .strings(v)
            }
        }
        var headers: HTTPFields = [:]
        if let retry = refusal.retryAfter { headers[.retryAfter] = String(retry) }
        self.init(refusal.status, code: refusal.code, detail: refusal.message, extensions: extensions, headers: headers)
    }
}

extension Problem {
    /// Why a job cannot be re-cut (before any of its options are looked at), as its problem.
    public init(_ refusal: RecutRefusal) {
        switch refusal {
        case .notFound(let jobID):
            self = Problem.jobNotFound(jobID)
        case .notCompleted(let state):
            self.init(
                .conflict, code: "job_not_completed",
                detail: Say.recutNotCompleted(state: state.rawValue),
                extensions: ["job_status": .string(state.rawValue)])
        case .notAllowed(let plan):
            self.init(
                .forbidden, code: "recuts_not_allowed",
                detail: Say.recutsNotAllowed(plan: plan))
        case .inputGone:
            self.init(
                .gone, code: "input_deleted",
                detail: Say.recutInputGone)
        }
    }
}
