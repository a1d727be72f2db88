import MediaVocabulary
import Foundation
import Store

/// Why the service refuses an upload, an append or a re-cut: each case names what was refused and
/// carries the domain's figures (limits, usage, seconds to wait). The HTTP status of each is the
/// server's business (MomentsServer's Refusal+HTTP.swift); the stable `code`, the user's sentence
/// (`message`) and the figures a client can act on (`extras`) are here, in Refusal+Message.swift.
public enum Refusal: Error, Sendable, Equatable {
    /// A figure a client can act on, as the problem's extension members carry it.
    public enum Value: Sendable, Equatable { case int(Int), string(String), strings([String]) }

    // MARK: Plan and quota

    /// The month's highlights are used up.
    case quotaExceeded(QuotaExceeded)
    /// The plan's jobs at once are running or being uploaded.
    case tooManyJobs(TooManyJobs)
    /// The plan's worker time for the UTC day is spent.
    case dailyBudgetExceeded(DailyBudget)
    /// `quality=original` on a plan without it; `upgradeProduct` lifts it.
    case originalQualityNotInPlan(plan: String, upgradeProduct: String?)

    // MARK: The video

    /// The probe could not read the file at all.
    case unreadable
    /// The probe read the file and found it unusable (`kind` is FFmpeg's verdict, `detail` its figures).
    case unusableMedia(kind: MediaFailure, detail: String)
    /// Shorter than a highlight needs (1 s).
    case tooShort(duration: Double)
    /// Longer than this server accepts of anyone.
    case tooLongForServer(duration: Double, limit: Double)
    /// Longer than the account's plan accepts.
    case tooLongForPlan(PlanLimit)
    /// A re-cut's original is beyond what the account's plan accepts now.
    case originalBeyondPlan(OriginalBeyondPlan)

    // MARK: The server's room

    /// The disk would fall below its floor.
    case insufficientStorage
    /// The server receives as many upload bodies as it can (`resumable`: the upload keeps its bytes).
    case serverBusy(resumable: Bool)
    /// The account already sends its share of upload bodies at once.
    case tooManyUploads(limit: Int, resumable: Bool)
    /// Larger than the account's plan accepts.
    case fileTooLarge(FileTooLarge)
    /// The media storage cannot take or copy the input right now.
    case storageUnavailable
    /// The sandbox that parses uploads is incomplete on this server (`IsolationLayer`): nothing is
    /// parsed until its operator fixes it.
    case processingUnavailable

    // MARK: A highlight's options

    /// A text field's target_duration that is not a whole number.
    case targetDurationNotANumber(String)
    /// A JSON target_duration that is not a whole number.
    case targetDurationNotWhole
    /// target_duration outside the server's range; `listsAllowed` adds the range as figures.
    case targetDurationOutOfRange(Int, minimum: Int, maximum: Int, listsAllowed: Bool)
    /// A quality that is not one of `HighlightQuality`; `listsAllowed` adds the choices as figures.
    case invalidQuality(String, listsAllowed: Bool)
    /// A JSON quality that is not a string.
    case qualityNotAString
    /// An aspect that is not one of `AspectRatio`.
    case invalidAspect(String)
    /// A JSON aspect that is not a string.
    case aspectNotAString
    /// A focus that is not one of `HighlightFocus` (auto, people, action).
    case invalidFocus(String)
    case invalidInclude(IncludeFault)
    case invalidExclude(ExcludeFault)

    // MARK: Resumable uploads

    /// No such upload for this account.
    case uploadNotFound
    /// Cancelled or expired: its bytes are deleted.
    case uploadGone
    /// Complete: its job exists.
    case uploadComplete(offset: Int64, jobID: String?)
    /// Refused when its last byte arrived; the stored code and sentence of that refusal.
    case uploadFailed(code: String?, message: String?)
    /// Another request holds the upload.
    case uploadLocked(offset: Int64, retryAfter: Int)
    /// An append that does not start where the upload is.
    case offsetMismatch(offset: Int64, sent: Int64)
    case lengthMismatch(LengthFault)
    /// Bytes past the upload's declared length.
    case pastLength(limit: Int64)
    /// An append with a checksum whose bytes did not all arrive.
    case appendInterrupted
    /// An append whose bytes do not match its checksum (discarded; the upload stays at `offset`).
    case checksumMismatch(offset: Int64)
}

extension Refusal {
    /// Retry-After of a 503 server_busy and of a 429 too_many_uploads.
    public static let serverBusyRetrySeconds = 30
    public static let tooManyUploadsRetrySeconds = 10

    public struct FileTooLarge: Sendable, Equatable {
        public var limit: Int64, plan: String
        /// The product that would accept the file, with its limit, when it lifts this one.
        public var upgrade: (product: String, maxBytes: Int64)?

        public init(limit: Int64, plan: String, upgrade: (product: String, maxBytes: Int64)?) {
            self.limit = limit
            self.plan = plan
            self.upgrade = upgrade
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.limit == b.limit && a.plan == b.plan && a.upgrade?.product == b.upgrade?.product
                && a.upgrade?.maxBytes == b.upgrade?.maxBytes
        }
    }

    public struct QuotaExceeded: Sendable, Equatable {
        public var limit: Int, used: Int, resetsAt: Date, plan: String
        /// The product that lifts the cap, on the free plan.
        public var upgradeProduct: String?

        public init(limit: Int, used: Int, resetsAt: Date, plan: String, upgradeProduct: String?) {
            self.limit = limit
            self.used = used
            self.resetsAt = resetsAt
            self.plan = plan
            self.upgradeProduct = upgradeProduct
        }
    }

    public struct TooManyJobs: Sendable, Equatable {
        public var limit: Int, active: Int, uploading: Int, retryAfter: Int
        public var product: String
        /// The jobs at once the product runs, when that is more than `limit`.
        public var upgradeJobs: Int?

        public init(limit: Int, active: Int, uploading: Int, retryAfter: Int, product: String, upgradeJobs: Int?) {
            self.limit = limit
            self.active = active
            self.uploading = uploading
            self.retryAfter = retryAfter
            self.product = product
            self.upgradeJobs = upgradeJobs
        }
    }

    public struct DailyBudget: Sendable, Equatable {
        public var limitSeconds: Double, usedSeconds: Double, resetsAt: Date, plan: String
        public var upgradeProduct: String?
        public var retryAfter: Int

        public init(limitSeconds: Double, usedSeconds: Double, resetsAt: Date, plan: String, upgradeProduct: String?, retryAfter: Int) {
            self.limitSeconds = limitSeconds
            self.usedSeconds = usedSeconds
            self.resetsAt = resetsAt
            self.plan = plan
            self.upgradeProduct = upgradeProduct
            self.retryAfter = retryAfter
        }
    }

    public struct PlanLimit: Sendable, Equatable {
        public var duration: Double, limitSeconds: Double, plan: String
        /// The product that would accept the video and its limit in seconds.
        public var upgrade: (product: String, limitSeconds: Double)?

        public static func == (a: Self, b: Self) -> Bool {
            a.duration == b.duration && a.limitSeconds == b.limitSeconds && a.plan == b.plan
                && a.upgrade?.product == b.upgrade?.product && a.upgrade?.limitSeconds == b.upgrade?.limitSeconds
        }

        public init(duration: Double, limitSeconds: Double, plan: String, upgrade: (product: String, limitSeconds: Double)?) {
            self.duration = duration
            self.limitSeconds = limitSeconds
            self.plan = plan
            self.upgrade = upgrade
        }
    }

    public struct OriginalBeyondPlan: Sendable, Equatable {
        public var duration: Double, bytes: Int64, plan: String, limitSeconds: Double, limitBytes: Int64

        public init(duration: Double, bytes: Int64, plan: String, limitSeconds: Double, limitBytes: Int64) {
            self.duration = duration
            self.bytes = bytes
            self.plan = plan
            self.limitSeconds = limitSeconds
            self.limitBytes = limitBytes
        }
    }

    public enum IncludeFault: Sendable, Equatable {
        /// Not a list of non-negative seconds.
        case malformed
        case tooMany(Int)
        case pastEnd(time: Double, duration: Double)
        case nearExclusion(time: Double, range: TimeRange)
        case doNotFit(pins: Int, targetDuration: Int)
    }

    public enum ExcludeFault: Sendable, Equatable {
        /// Not a list of ranges in a form the fields take.
        case malformed
        /// A JSON exclude that is not a list.
        case notAList
        /// A negative time or a range that does not start before it ends.
        case badRange
        case tooMany(Int)
        /// Nothing left to make a highlight of.
        case leavesNothing
    }

    public enum LengthFault: Sendable, Equatable {
        case changed(length: Int64, to: Int64)
        case belowReceived(declared: Int64, received: Int64)
        case endedElsewhere(declared: Int64, ended: Int64)
    }
}
