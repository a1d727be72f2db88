import MediaVocabulary
import Foundation

/// Where a resumable upload is (tus 1.0 or the IETF draft, one resource `/api/v1/uploads/{id}`).
public enum ResumableUploadState: String, Codable, Sendable, CaseIterable {
    /// Taking bytes (appends, HEAD).
    case receiving
    /// Every byte is in and became a job (`jobId`).
    case completed
    /// Every byte is in but the file was refused (not a video, too long, over quota): `errorCode`.
    case failed
    /// Deleted by its owner (tus termination, IETF cancellation).
    case terminated
    /// Abandoned: no byte arrived for the expiry period; its bytes were deleted.
    case expired

    /// No more bytes will be taken.
    public var isFinished: Bool { self != .receiving }
}

/// One resumable upload: what is known of it lives here (offset, declared length, parameters),
/// so it survives a restart and any API host can serve it. The bytes live in the upload staging
/// area (a local file, and in S3 deployments parts in the bucket); `offset` counts only bytes made
/// durable there.
public struct ResumableUpload: Codable, Sendable, Equatable {
        public var id: String
    public var accountId: String
    /// "tus" or "ietf" (the protocol of the creating request; both may append).
    public var flavor: String
    /// The declared total size; nil while deferred (tus creation-defer-length, IETF without
    /// Upload-Complete ?1 and no Upload-Length).
    public var length: Int64?
    /// Bytes received and stored durably.
    public var offset: Int64
    public var filename: String?
    public var targetDuration: Int
    public var quality: HighlightQuality
    public var state: ResumableUploadState
    public var jobId: String?
    public var errorCode: String?
    public var errorMessage: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// Abandoned after this instant (moved forward by every append).
    public var expiresAt: Date
    /// The request appending now (one at a time), and until when its hold lasts unless renewed.
    public var holder: String?
    public var heldUntil: Date?
    /// Shape, pinned and excluded moments asked for at creation (tus metadata or the IETF query).
    public var edit: JobEdit?

    public init(
        id: String, accountId: String, flavor: String, length: Int64?, filename: String?, targetDuration: Int,
        quality: HighlightQuality, now: Date, expiresAt: Date
    ) {
        self.id = id; self.accountId = accountId; self.flavor = flavor; self.length = length; self.offset = 0
        self.filename = filename; self.targetDuration = targetDuration; self.quality = quality; self.state = .receiving
        self.createdAt = now; self.updatedAt = now; self.expiresAt = expiresAt
    }

    /// Every declared byte is in.
    public var isComplete: Bool { length.map { offset >= $0 } ?? false }
}

/// What taking an upload for an append found.
public enum UploadHold: Sendable, Equatable {
    /// The caller holds it now (its state as of the hold).
    case held(ResumableUpload)
    /// Another request holds it (appending now); its state.
    case busy(ResumableUpload)
    /// No such upload for this account.
    case missing
}

/// Resumable uploads: one row each, changed one transaction at a time, appends serialised by a
/// hold (holder + heldUntil) that the appending request renews and releases.
public protocol UploadRepository: Sendable {
    func createUpload(_ upload: ResumableUpload) async throws
    /// The upload if it belongs to `accountId` (another account's is indistinguishable from none).
    func upload(id: String, accountId: String) async throws -> ResumableUpload?
    func upload(id: String) async throws -> ResumableUpload?
    /// Holds a receiving upload for `holder` until `until`, unless another holder's hold is live.
    func holdUpload(id: String, accountId: String, holder: String, until: Date, now: Date) async throws -> UploadHold
    /// Records the durable offset (and a length declared late) while held; moves the expiry to
    /// `expiresAt` and the hold to `heldUntil`, or lets go of it (`release`). False: not held by
    /// `holder` any more.
    func recordUploadOffset(
        id: String, holder: String, offset: Int64, length: Int64?, heldUntil: Date, expiresAt: Date,
        release: Bool, now: Date
    ) async throws -> Bool
    /// Lets go of the hold (the upload stays receiving).
    func releaseUpload(id: String, holder: String, now: Date) async throws
    /// Ends a held upload: completed with its job, or failed with a code and a sentence. False: not held.
    func finishUpload(
        id: String, holder: String, state: ResumableUploadState, jobId: String?, errorCode: String?,
        errorMessage: String?, now: Date
    ) async throws -> Bool
    /// The owner's DELETE: a receiving upload becomes terminated (even while an append holds it;
    /// the append notices when it records its offset). Returns the upload before the change.
    func terminateUpload(id: String, accountId: String, now: Date) async throws -> ResumableUpload?
    /// Receiving uploads whose expiry passed (the sweeper marks them expired and deletes their bytes).
    func expiredUploads(now: Date, limit: Int) async throws -> [ResumableUpload]
    /// Marks a receiving upload expired. False: it was not receiving or not expired any more.
    func expireUpload(id: String, now: Date) async throws -> Bool
    /// Deletes rows of uploads finished before `before` (their bytes are already gone).
    func purgeFinishedUploads(before: Date) async throws -> Int
    /// The account's uploads still receiving that hold a place against jobs at once: those that
    /// received bytes since `activeSince` or are receiving now (an idle one holds none).
    func receivingUploads(accountId: String, now: Date, activeSince: Date) async throws -> Int
    /// Whether the upload `id`, resuming after it was idle (it held no place), finds one: the
    /// plan's jobs at once counted as for a new upload, without itself; nil when there is room.
    func uploadPlaceRefusal(id: String, accountId: String, now: Date, limits: @Sendable (Bool) -> QuotaLimits)
        async throws -> QuotaRefusal?
    /// Which of `ids` are uploads still receiving (staged bytes of any other are orphans).
    func receivingUploadIDs(_ ids: [String]) async throws -> Set<String>
    /// Creates an upload in one transaction that first checks the plan's limits (UploadAdmission.swift):
    /// the month's quota, jobs at once counting the account's active jobs, its uploads still
    /// receiving and its plain uploads being received, and the day's worker time. Race-free across
    /// processes. `limits` is asked inside the transaction with whether the account is pro at `now`.
    func createUpload(_ upload: ResumableUpload, now: Date, limits: @Sendable (Bool) -> QuotaLimits) async throws
        -> Result<ResumableUpload, QuotaRefusal>
    /// A plain upload's place against jobs at once, taken with the same checks in one transaction
    /// and held until `until` (renewed while its body arrives) or until released.
    func admitUpload(
        id: String, accountId: String, until: Date, now: Date,
        limits: @Sendable (Bool) -> QuotaLimits
    ) async throws -> Result<Void, QuotaRefusal>
    func renewUploadAdmission(id: String, until: Date) async throws
    func releaseUploadAdmission(id: String) async throws
    /// The plain uploads' places whose id starts with `prefix` (a process names its places after
    /// itself, so a restarted server finds those its dead predecessor held).
    func uploadAdmissionIDs(prefix: String) async throws -> [String]
}

// MARK: SQLite
