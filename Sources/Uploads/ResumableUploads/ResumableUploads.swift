import Foundation
import Logging
import Requests
import Store
import Synchronization

/// Resumable uploads, whatever the protocol (tus 1.0 or the IETF draft; the HTTP layer maps
/// headers to these calls): creating one (the same checks as a plain upload, on the declared
/// length), appending bytes at the recorded offset, and turning the complete file into a job
/// exactly as `POST /upload` does.
///
/// One append at a time per upload: an append holds the upload (a hold in the database, renewed
/// while bytes arrive, so it works across API hosts). A new append to an upload held by a stale
/// append of this process stops the stale one (it keeps the bytes it has) and takes over, as the
/// IETF draft advises for a client that reconnected; one held on another host is refused (`.uploadLocked`).
public final class ResumableUploads: Sendable {
    let intake: UploadIntake
    public let staging: UploadStaging
    let logger: Logger
    /// Appends running in this process, by upload id: their holder and how to stop them.
    let running = Mutex<[String: (holder: String, stop: @Sendable () -> Void)]>([:])
    /// Appends of this process that have answered and are making their last bytes durable (fsync,
    /// the bucket's part, the offset recorded, the hold let go), by upload id. Every request on
    /// the upload in this process waits for its upload's first: it then sees the offset answered.
    let settling = Mutex<[String: Task<Void, Never>]>([:])

    /// `upload.resumableExpiryHours`: an upload that received no byte for this long is deleted.
    public var expirySeconds: Double { intake.settings.resumableExpiryHours * 3600 }
    /// A hold lasts this long unless renewed (an appending host that died frees it within this).
    /// Longer than `upload.stallSeconds` (30 s), after which a body that brings nothing is cut
    /// off, plus a commit's fsync and part upload: a live append never loses its hold.
    static let holdSeconds = 90.0
    /// Completion (probe, storing the input, the job's row) holds the upload this long.
    static let completionHoldSeconds = 3600.0
    /// While bytes arrive without a checksum to verify, they are made durable and recorded at
    /// least this often (bytes and seconds): a dropped connection or a crash loses at most this much.
    static let commitBytes: Int64 = 64 << 20
    static let commitSeconds = 5.0
    /// Bytes gathered before one write to the staging file.
    static let batchBytes = 1 << 20

    /// The staging folder is made by `StorageLayout.prepare`.
    public init(intake: UploadIntake, logger: Logger) {
        self.intake = intake
        self.staging = UploadStaging(layout: intake.layout, storage: intake.mediaStorage, logger: logger)
        self.logger = logger
    }

    var store: any UploadRepository { intake.database }
    var now: Date { intake.clock() }

    // MARK: Looking up

    /// The upload as its owner sees it (nil: none for this account).
    public func upload(id: String, account: Account) async throws -> ResumableUpload? {
        await settled(id)
        return try await store.upload(id: id, accountId: account.id).map(expiredIfLapsed)
    }

    /// A receiving upload past its expiry, not held by an append, is expired whether or not the
    /// sweeper has marked it yet (its offset request answers 410; an append cannot revive it).
    func expiredIfLapsed(_ upload: ResumableUpload) -> ResumableUpload {
        let now = self.now
        guard upload.state == .receiving, upload.expiresAt < now, (upload.heldUntil ?? .distantPast) <= now else {
            return upload
        }
        var upload = upload
        upload.state = .expired
        return upload
    }

    /// Waits until an append of this process that has answered has also recorded its bytes.
    func settled(_ id: String) async {
        if let task = settling.withLock({ $0[id] }) { await task.value }
    }

    /// Waits for every append of this process still recording its bytes (graceful shutdown).
    public func settleAll() async {
        for task in settling.withLock({ Array($0.values) }) { await task.value }
    }

    /// The upload for an offset request (HEAD). A client asks for the offset when it resumes, so
    /// an append of this process still running on the upload is most likely ending (its client
    /// went away and the server is reading what was already sent) or stale (a half-open
    /// connection). The answer waits up to `drainSeconds` for it to end on its own, then stops it,
    /// as the IETF draft advises, and waits (up to `settleSeconds`) until it has recorded what it
    /// got, so the offset is the truth. An upload held on another host is waited for up to
    /// `remoteSettleSeconds` (an append there that has answered lets go once its bytes are recorded).
    public func settledUpload(id: String, account: Account) async throws -> ResumableUpload? {
        guard var upload = try await upload(id: id, account: account) else { return nil }
        guard running.withLock({ $0[id] != nil }) else {
            // Held on another host: most likely an append there that has answered and is recording
            // its bytes (milliseconds); its offset is the one its client was told. Worth a short wait.
            let deadline = Date().addingTimeInterval(Self.remoteSettleSeconds)
            while upload.holder != nil, upload.state == .receiving, (upload.heldUntil ?? .distantPast) > now,
                Date() < deadline
            {
                try await Task.sleep(for: .milliseconds(10))
                guard let fresh = try await store.upload(id: id, accountId: account.id) else { return nil }
                upload = expiredIfLapsed(fresh)
            }
            return upload
        }
        let drained = Date().addingTimeInterval(Self.drainSeconds)
        while running.withLock({ $0[id] != nil }), Date() < drained {
            try await Task.sleep(for: .milliseconds(20))
        }
        if let stop = running.withLock({ $0[id]?.stop }) {
            stop()
            let deadline = Date().addingTimeInterval(Self.settleSeconds)
            while running.withLock({ $0[id] != nil }), Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        return try await self.upload(id: id, account: account)
    }

    /// How long an append waits for another host's append on the same upload to let go before
    /// answering 423 (one that has answered holds the upload while it records its bytes).
    static let remoteSettleSeconds = 2.0
    /// How long an offset request lets a running append end by itself before stopping it.
    static let drainSeconds = 3.0
    /// How long an offset request waits for a stopped append to record its bytes (with the s3
    /// backend that includes storing the part in the bucket).
    static let settleSeconds = 15.0

    public static let notFound = Refusal.uploadNotFound
    public static let gone = Refusal.uploadGone

    public static func finished(_ upload: ResumableUpload) -> Refusal {
        switch upload.state {
        case .completed: .uploadComplete(offset: upload.offset, jobID: upload.jobId)
        case .failed: .uploadFailed(code: upload.errorCode, message: upload.errorMessage)
        case .terminated, .expired, .receiving: gone
        }
    }
}
