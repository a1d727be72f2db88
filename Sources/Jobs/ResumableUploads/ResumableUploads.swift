import Crypto
import Foundation
import JobStore
import Logging
import NIOCore
import Synchronization
import _NIOFileSystem

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
    let service: JobService
    public let staging: UploadStaging
    let logger: Logger
    /// Appends running in this process, by upload id: their holder and how to stop them.
    private let running = Mutex<[String: (holder: String, stop: @Sendable () -> Void)]>([:])
    /// Appends of this process that have answered and are making their last bytes durable (fsync,
    /// the bucket's part, the offset recorded, the hold let go), by upload id. Every request on
    /// the upload in this process waits for its upload's first: it then sees the offset answered.
    private let settling = Mutex<[String: Task<Void, Never>]>([:])

    /// `upload.resumableExpiryHours`: an upload that received no byte for this long is deleted.
    public var expirySeconds: Double { service.settings.resumableExpiryHours * 3600 }
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
    public init(service: JobService, logger: Logger) {
        self.service = service
        self.staging = UploadStaging(layout: service.layout, storage: service.mediaStorage, logger: logger)
        self.logger = logger
    }

    var store: any MomentsStore { service.database }
    var now: Date { service.clock() }

    // MARK: Creation

    public struct Creation: Sendable {
        public var flavor: String
        public var length: Int64?
        public var filename: String?
        public var targetDuration: Int
        public var quality: String
        /// Shape, pinned and excluded moments (checked against the video when the last byte is in).
        public var edit = EditRequest()

        public init(flavor: String, length: Int64?, filename: String?, targetDuration: Int, quality: String, edit: EditRequest = EditRequest()) {
            self.flavor = flavor; self.length = length; self.filename = filename; self.targetDuration = targetDuration; self.quality = quality
            self.edit = edit
        }
    }

    /// The largest file the account may upload now (server and plan).
    public func maxBytes(_ plan: JobService.AccountPlan) -> Int64 { min(service.settings.maxUploadBytes, plan.plan.maxUploadBytes) }

    /// Creates an upload after the checks of a plain upload: quota, jobs at once counting the
    /// account's uploads still receiving, daily budget, the declared length against the plan (via
    /// `tooLarge`) and the disk.
    public func create(_ creation: Creation, account: Account, tooLarge: (JobService.AccountPlan) -> Error) async throws -> (ResumableUpload, JobService.AccountPlan) {
        let plan = try await service.precheck(account)
        if let length = creation.length {
            if length > maxBytes(plan) { throw tooLarge(plan) }
            try service.checkDiskSpace(expectedBytes: length)
        }
        let now = self.now
        var upload = ResumableUpload(id: UUID().uuidString.lowercased(), accountId: account.id, flavor: creation.flavor,
                                     length: creation.length, filename: creation.filename, targetDuration: creation.targetDuration,
                                     quality: creation.quality, now: now, expiresAt: now.addingTimeInterval(expirySeconds))
        if creation.edit != EditRequest() { upload.edit = creation.edit.job(sourceName: nil, keepsInput: false) }
        try await staging.prepare(id: upload.id, offset: 0)
        do {
            // The plan's checks again, in the transaction that inserts the row: parallel
            // creations of one account cannot all pass the check above.
            upload = try await service.createAdmitted(upload, account: account, plan: plan)
        } catch {
            await staging.remove(id: upload.id)
            throw error
        }
        return (upload, plan)
    }

    // MARK: Appending

    /// A checksum the client sent for an append's bytes (tus checksum extension).
    public struct Checksum: Sendable {
        public enum Algorithm: String, Sendable, CaseIterable { case sha1, sha256, md5 }
        public var algorithm: Algorithm
        public var digest: [UInt8]

        public init(algorithm: Algorithm, digest: [UInt8]) { self.algorithm = algorithm; self.digest = digest }
    }

    public struct Append: Sendable {
        /// The offset the client believes the upload is at (tus/IETF Upload-Offset).
        public var offset: Int64
        /// A length declared with this append (deferred length, or IETF's final append).
        public var length: Int64?
        /// The client says this append ends the upload (IETF Upload-Complete: ?1).
        public var completes: Bool
        public var checksum: Checksum?
        /// The body's Content-Length, when sent.
        public var contentLength: Int64?

        public init(offset: Int64, length: Int64? = nil, completes: Bool = false, checksum: Checksum? = nil, contentLength: Int64? = nil) {
            self.offset = offset; self.length = length; self.completes = completes; self.checksum = checksum; self.contentLength = contentLength
        }
    }

    public enum Outcome: Sendable {
        /// Bytes recorded; more expected.
        case partial(ResumableUpload)
        /// The last byte arrived and the file became a job.
        case completed(ResumableUpload, Job, JobService.QuotaUsage)
    }

    /// The upload as its owner sees it (nil: none for this account).
    public func upload(id: String, account: Account) async throws -> ResumableUpload? {
        await settled(id)
        return try await store.upload(id: id, accountId: account.id).map(expiredIfLapsed)
    }

    /// A receiving upload past its expiry, not held by an append, is expired whether or not the
    /// sweeper has marked it yet (its offset request answers 410; an append cannot revive it).
    func expiredIfLapsed(_ upload: ResumableUpload) -> ResumableUpload {
        let now = self.now
        guard upload.state == .receiving, upload.expiresAt < now, (upload.heldUntil ?? .distantPast) <= now else { return upload }
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
            while upload.holder != nil, upload.state == .receiving, (upload.heldUntil ?? .distantPast) > now, Date() < deadline {
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

    /// Appends `body` at `append.offset`. `wrote` is told the bytes written so far by this append
    /// (disk accounting); `stop` ends this append's request (closes its connection) when a newer
    /// append takes over. Refusals are `Refusal`s: unknown, finished, offset mismatch, held
    /// elsewhere, past the length, checksum mismatch (the append's bytes discarded), length
    /// conflicts; past the plan's limit is whatever `tooLarge` gives.
    public func append<Body: AsyncSequence>(
        id: String, account: Account, _ append: Append, body: Body,
        tooLarge: (JobService.AccountPlan) -> Error,
        stop: @escaping @Sendable () -> Void,
        wrote: (Int64) throws -> Void
    ) async throws -> Outcome where Body.Element == ByteBuffer {
        let holder = UUID().uuidString.lowercased()
        let upload = try await takeHold(id: id, account: account, holder: holder)
        running.withLock { $0[id] = (holder, stop) }
        defer { running.withLock { if $0[id]?.holder == holder { $0[id] = nil } } }
        do {
            return try await appendHeld(upload, holder: holder, account: account, append, body: body, tooLarge: tooLarge, wrote: wrote)
        } catch {
            // Let go before answering, so the client's immediate retry finds the upload free.
            // (A no-op when the append already released it or the upload has ended.)
            try? await store.releaseUpload(id: id, holder: holder, now: now)
            throw error
        }
    }

    /// Holds the upload for `holder`: a stale append of this process is stopped first (up to 5 s).
    func takeHold(id: String, account: Account, holder: String) async throws -> ResumableUpload {
        await settled(id)
        let deadline = Date().addingTimeInterval(5)
        // An append that answered on another host may be a moment from letting go (recording its
        // bytes): worth a short wait before a 423.
        let remoteDeadline = Date().addingTimeInterval(Self.remoteSettleSeconds)
        var stopped = false
        while true {
            switch try await store.holdUpload(id: id, accountId: account.id, holder: holder,
                                              until: now.addingTimeInterval(Self.holdSeconds), now: now) {
            case .missing:
                throw Self.notFound
            case .held(let upload):
                guard upload.state == .receiving else { throw Self.finished(upload) }
                return upload
            case .busy(let upload):
                if !stopped, let stop = running.withLock({ $0[id]?.stop }) {
                    logger.info("a new append takes over a resumable upload from a stale one", metadata: ["upload": "\(id)"])
                    stop()
                    stopped = true
                }
                guard stopped ? Date() < deadline : Date() < remoteDeadline else {
                    throw Refusal.uploadLocked(offset: upload.offset, retryAfter: Int(Self.holdSeconds))
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    private func appendHeld<Body: AsyncSequence>(
        _ held: ResumableUpload, holder: String, account: Account, _ append: Append, body: Body,
        tooLarge: (JobService.AccountPlan) -> Error,
        wrote: (Int64) throws -> Void
    ) async throws -> Outcome where Body.Element == ByteBuffer {
        var upload = held
        let id = upload.id
        guard append.offset == upload.offset else {
            throw Refusal.offsetMismatch(offset: upload.offset, sent: append.offset)
        }
        if let declared = append.length {
            if let length = upload.length, length != declared {
                throw Refusal.lengthMismatch(.changed(length: length, to: declared))
            }
            if declared < upload.offset {
                throw Refusal.lengthMismatch(.belowReceived(declared: declared, received: upload.offset))
            }
        }
        let plan = try await service.accountPlan(account)
        let limit = min(maxBytes(plan), append.length ?? upload.length ?? .max)
        if let length = append.length ?? upload.length, length > maxBytes(plan) { throw tooLarge(plan) }
        if let contentLength = append.contentLength, upload.offset + contentLength > limit {
            throw upload.length != nil || append.length != nil
                ? Refusal.pastLength(limit: limit)
                : tooLarge(plan)
        }
        try await staging.prepare(id: id, offset: upload.offset)

        let start = upload.offset
        var position = start
        var committed = start
        var lastCommit = Date()
        var hasher = append.checksum.map { Hasher($0.algorithm) }
        var interrupted = false
        var pending = ByteBuffer()
        pending.reserveCapacity(Self.batchBytes + 64 * 1024)
        let handle = try await staging.openForAppend(id: id)
        var inflight: Task<Void, any Error>?
        do {
            func flush() async throws {
                guard pending.readableBytes > 0 else { return }
                let count = try await handle.write(contentsOf: pending.readableBytesView, toAbsoluteOffset: position)
                try await UploadStaging.startWriteback(handle, from: position, count: Int64(count))
                position += Int64(count)
                pending.clear()
                try wrote(position - start)
            }
            // A commit (fsync, the bucket's part, the offset recorded with the hold renewed) runs
            // beside the receiving loop, so the disk's write-back overlaps the network instead of
            // stalling it; one at a time, and awaited before the append's last commit.
            func commit() async throws {
                try await flush()
                if let previous = inflight {
                    inflight = nil
                    try await previous.value
                }
                guard position > committed else { return }
                let range = committed..<position
                let (store, staging, expiry) = (self.store, self.staging, expirySeconds)
                let clock = service.clock
                inflight = Task {
                    try await handle.synchronize()
                    try await staging.publish(id: id, range: range)
                    let now = clock()
                    guard try await store.recordUploadOffset(id: id, holder: holder, offset: range.upperBound, length: nil,
                                                             heldUntil: now.addingTimeInterval(Self.holdSeconds),
                                                             expiresAt: now.addingTimeInterval(expiry), release: false, now: now) else {
                        throw Self.gone
                    }
                }
                committed = position
                lastCommit = Date()
            }
            do {
                for try await var chunk in body {
                    if position + Int64(pending.readableBytes) + Int64(chunk.readableBytes) > limit {
                        // Wrapped: `tooLarge` may be any error (the HTTP layer's problem), and
                        // anything but a refusal below counts as a dropped connection.
                        throw BodyRefusal(error: upload.length != nil || append.length != nil
                            ? Refusal.pastLength(limit: limit)
                            : tooLarge(plan))
                    }
                    hasher?.update(chunk.readableBytesView)
                    pending.writeBuffer(&chunk)
                    if pending.readableBytes >= Self.batchBytes { try await flush() }
                    if hasher == nil, position - committed >= Self.commitBytes || Date().timeIntervalSince(lastCommit) >= Self.commitSeconds {
                        try await commit()
                    } else if hasher != nil, Date().timeIntervalSince(lastCommit) >= Self.commitSeconds {
                        // Nothing is recorded before the checksum is verified, but the hold is
                        // renewed, so no other request takes the upload while this one writes.
                        let now = self.now
                        guard try await store.recordUploadOffset(id: id, holder: holder, offset: committed, length: nil,
                                                                 heldUntil: now.addingTimeInterval(Self.holdSeconds),
                                                                 expiresAt: now.addingTimeInterval(expirySeconds), release: false, now: now) else {
                            throw Self.gone
                        }
                        lastCommit = Date()
                    }
                }
            } catch let refusal as Refusal {
                throw refusal
            } catch let refusal as BodyRefusal {
                // Past the limit, whatever the framing (Content-Length, chunked, deferred length):
                // refused, and nothing of this append past the bytes already written is kept.
                throw refusal.error
            } catch {
                // The connection dropped, the body broke, or a newer append closed it: keep
                // what arrived (unless a checksum can no longer be verified).
                interrupted = true
                logger.info("resumable upload append interrupted", metadata: ["upload": "\(id)", "error": "\(error)"])
            }
            if let contentLength = append.contentLength, position + Int64(pending.readableBytes) - start < contentLength { interrupted = true }
            if let checksum = append.checksum, var hasher {
                if interrupted {
                    try? await handle.close()
                    throw Refusal.appendInterrupted
                }
                guard hasher.finish() == checksum.digest else {
                    try? await handle.close()
                    throw Refusal.checksumMismatch(offset: start)
                }
            }
            try await flush()
            if let previous = inflight {
                inflight = nil
                try await previous.value
            }
            // The length, once this append is in: declared now or before, or where a final append ends.
            var length = append.length ?? upload.length
            if append.completes && !interrupted {
                if let declared = length, declared != position {
                    throw Refusal.lengthMismatch(.endedElsewhere(declared: declared, ended: position))
                }
                length = position
            }
            let completing = !interrupted && length.map { position >= $0 } ?? false
            if !completing && !interrupted {
                // The client is answered now and sends its next append while these bytes are made
                // durable and recorded (which the next request in this process waits for, and
                // another host's waits for through the hold). The recorded offset never runs ahead
                // of the bytes on disk: should the recording fail, or the process die first, the
                // offset stays where it was, the next append at the answered offset gets a 409
                // with the true one, and the client resumes from there.
                upload.offset = position
                upload.length = length
                upload.expiresAt = self.now.addingTimeInterval(expirySeconds)
                settle(upload, holder: holder, handle: handle, unsynced: committed..<position)
                return .partial(upload)
            }
            // One transaction records the offset (and the length) and, unless the upload is now
            // complete and becomes a job under the same hold, lets go of the hold.
            if position > committed {
                try await handle.synchronize()
                try await staging.publish(id: id, range: committed..<position)
            }
            let now = self.now
            guard try await store.recordUploadOffset(id: id, holder: holder, offset: position, length: length,
                                                     heldUntil: now.addingTimeInterval(Self.holdSeconds),
                                                     expiresAt: now.addingTimeInterval(expirySeconds), release: !completing, now: now) else {
                throw Self.gone
            }
            try await handle.close()
            upload.offset = position
            upload.length = length
            guard completing else { return .partial(upload) }
        } catch {
            // A commit still running finishes before the file is closed (its offset is true).
            _ = try? await inflight?.value
            try? await handle.close()
            throw error
        }
        return try await complete(upload, holder: holder, account: account)
    }

    /// Every byte is in: the file becomes a job through the plain upload's acceptance (probe in the
    /// isolated child, plan limits, quota reserved in the job's transaction). A refusal ends the
    /// upload as failed (its bytes deleted, nothing charged) and is thrown.
    private func complete(_ upload: ResumableUpload, holder: String, account: Account) async throws -> Outcome {
        var upload = upload
        let path = staging.path(upload.id)
        let now = self.now
        _ = try await store.recordUploadOffset(id: upload.id, holder: holder, offset: upload.offset, length: upload.length,
                                               heldUntil: now.addingTimeInterval(Self.completionHoldSeconds),
                                               expiresAt: now.addingTimeInterval(expirySeconds), release: false, now: now)
        do {
            try await staging.prepare(id: upload.id, offset: upload.offset)
            let plan = try await service.accountPlan(account)
            let (job, usage) = try await service.acceptUpload(at: path, account: account, targetDuration: upload.targetDuration,
                                                              quality: upload.quality, plan: plan, edit: EditRequest(upload.edit),
                                                              sourceName: upload.filename.flatMap(EditRequest.displayName))
            if try await !store.finishUpload(id: upload.id, holder: holder, state: .completed, jobId: job.id, errorCode: nil,
                                              errorMessage: nil, now: self.now) {
                logger.error("a resumable upload became a job but its row could not record it (cancelled meanwhile?)",
                             metadata: ["upload": "\(upload.id)", "job": "\(job.id)"])
            }
            await staging.remove(id: upload.id)
            upload.state = .completed
            upload.jobId = job.id
            return .completed(upload, job, usage)
        } catch {
            let rejection = error as? Refusal
            // A failure that is not a refusal (the database or the bucket for a moment) keeps
            // the bytes when they are still staged: the client completes the upload again with
            // an empty append at its offset.
            if rejection == nil, FileManager.default.fileExists(atPath: path) || staging.parts != nil {
                logger.error("completing a resumable upload failed; its bytes are kept for a retry",
                             metadata: ["upload": "\(upload.id)", "error": "\(error)"])
                throw error
            }
            let code = rejection?.code ?? "upload_failed"
            let message = rejection?.message ?? "The upload could not be turned into a job. Try again later."
            _ = try? await store.finishUpload(id: upload.id, holder: holder, state: .failed, jobId: nil, errorCode: code,
                                              errorMessage: message, now: now)
            await staging.remove(id: upload.id)
            throw error
        }
    }

    /// Makes `unsynced` durable, records the offset and lets go of the hold, in the background.
    private func settle(_ upload: ResumableUpload, holder: String, handle: WriteFileHandle, unsynced: Range<Int64>) {
        let (id, store, staging, logger, clock, expiry) = (upload.id, store, staging, logger, service.clock, expirySeconds)
        let task = Task {
            do {
                if !unsynced.isEmpty {
                    try await handle.synchronize()
                    try await staging.publish(id: id, range: unsynced)
                }
                let now = clock()
                let recorded = try await store.recordUploadOffset(id: id, holder: holder, offset: unsynced.upperBound, length: upload.length,
                                                                  heldUntil: now.addingTimeInterval(Self.holdSeconds),
                                                                  expiresAt: now.addingTimeInterval(expiry), release: true, now: now)
                if !recorded { logger.info("an answered append found its upload ended", metadata: ["upload": "\(id)"]) }
            } catch {
                logger.error("an answered append could not record its bytes; the upload stays at its previous offset",
                             metadata: ["upload": "\(id)", "error": "\(error)"])
                try? await store.releaseUpload(id: id, holder: holder, now: clock())
            }
            try? await handle.close()
        }
        settling.withLock { $0[id] = task }
        Task {
            await task.value
            settling.withLock { if $0[id] == task { $0[id] = nil } }
        }
    }

    // MARK: Termination and expiry

    /// DELETE: a receiving upload is terminated and its bytes deleted (an append in progress in
    /// this process is stopped). Nil: no such upload for this account.
    public func terminate(id: String, account: Account) async throws -> ResumableUpload? {
        await settled(id)
        guard let upload = try await store.terminateUpload(id: id, accountId: account.id, now: now) else { return nil }
        if upload.state == .receiving {
            running.withLock { $0[id]?.stop }?()
            await staging.remove(id: id)
        }
        return upload
    }

    /// Expired uploads' bytes deleted, their rows marked expired; finished rows older than a week
    /// deleted; staged files of uploads no longer receiving removed. Returns how many expired.
    @discardableResult
    public func sweep() async -> Int {
        await settleAll()
        var expired = 0
        let now = self.now
        do {
            for upload in try await store.expiredUploads(now: now, limit: 500) where try await store.expireUpload(id: upload.id, now: now) {
                await staging.remove(id: upload.id)
                expired += 1
            }
            _ = try await store.purgeFinishedUploads(before: now.addingTimeInterval(-7 * 86400))
            let local = staging.stagedIDs()
            let live = try await store.receivingUploadIDs(local)
            for id in local where !live.contains(id) {
                // Created a moment ago and not yet recorded? Rows are written right after the file.
                let path = staging.path(id)
                let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date ?? now
                if Date().timeIntervalSince(modified) > 60 { await staging.remove(id: id) } // the file's clock
            }
            if let parts = staging.parts {
                let stored = try await parts.storedIDs()
                let liveParts = try await store.receivingUploadIDs(Array(stored))
                for id in stored where !liveParts.contains(id) {
                    if let row = try await store.upload(id: id), row.state == .receiving { continue }
                    await parts.remove(id: id, logger: logger)
                }
            }
        } catch {
            logger.error("resumable upload sweep failed", metadata: ["error": "\(error)"])
        }
        if expired > 0 { logger.info("expired resumable uploads deleted", metadata: ["uploads": "\(expired)"]) }
        return expired
    }

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

/// A refusal raised while the body is read, kept apart from the body's own errors (a dropped
/// connection keeps what arrived; a refusal answers).
private struct BodyRefusal: Error {
    let error: any Error
}

/// The running digest of an append's bytes.
struct Hasher {
    private enum State { case sha1(Insecure.SHA1), sha256(SHA256), md5(Insecure.MD5) }
    private var state: State

    init(_ algorithm: ResumableUploads.Checksum.Algorithm) {
        switch algorithm {
        case .sha1: state = .sha1(Insecure.SHA1())
        case .sha256: state = .sha256(SHA256())
        case .md5: state = .md5(Insecure.MD5())
        }
    }

    mutating func update(_ bytes: ByteBufferView) {
        bytes.withUnsafeBytes { raw in
            switch state {
            case .sha1(var h): h.update(bufferPointer: raw); state = .sha1(h)
            case .sha256(var h): h.update(bufferPointer: raw); state = .sha256(h)
            case .md5(var h): h.update(bufferPointer: raw); state = .md5(h)
            }
        }
    }

    mutating func finish() -> [UInt8] {
        switch state {
        case .sha1(let h): Array(h.finalize())
        case .sha256(let h): Array(h.finalize())
        case .md5(let h): Array(h.finalize())
        }
    }
}
