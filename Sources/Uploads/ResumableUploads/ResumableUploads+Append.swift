import Accounts
import Foundation
import NIOCore
import Requests
import Store
import _NIOFileSystem

extension ResumableUploads {
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

        public init(
            offset: Int64, length: Int64? = nil, completes: Bool = false, checksum: Checksum? = nil,
            contentLength: Int64? = nil
        ) {
            self.offset = offset; self.length = length; self.completes = completes; self.checksum = checksum;
            self.contentLength = contentLength
        }
    }

    public enum Outcome: Sendable {
        /// Bytes recorded; more expected.
        case partial(ResumableUpload)
        /// The last byte arrived and the file became a job.
        case completed(ResumableUpload, Job, QuotaUsage)
    }

    /// Appends `body` at `append.offset`. `wrote` is told the bytes written so far by this append
    /// (disk accounting); `stop` ends this append's request (closes its connection) when a newer
    /// append takes over. Refusals are `Refusal`s: unknown, finished, offset mismatch, held
    /// elsewhere, past the length, checksum mismatch (the append's bytes discarded), length
    /// conflicts; past the plan's limit is whatever `tooLarge` gives.
    public func append<Body: AsyncSequence>(
        id: String, account: Account, _ append: Append, body: Body,
        tooLarge: (AccountPlan) -> Error,
        stop: @escaping @Sendable () -> Void,
        wrote: (Int64) throws -> Void
    ) async throws -> Outcome where Body.Element == ByteBuffer {
        let holder = UUID().uuidString.lowercased()
        let upload = try await takeHold(id: id, account: account, holder: holder)
        running.withLock { $0[id] = (holder, stop) }
        defer { running.withLock { if $0[id]?.holder == holder { $0[id] = nil } } }
        do {
            return try await appendHeld(
                upload, holder: holder, account: account, append, body: body, tooLarge: tooLarge, wrote: wrote)
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
            switch try await store.holdUpload(
                id: id, accountId: account.id, holder: holder,
                until: now.addingTimeInterval(Self.holdSeconds), now: now)
            {
            case .missing:
                throw Self.notFound
            case .held(let upload):
                guard upload.state == .receiving else { throw Self.finished(upload) }
                try await recheckPlace(upload, holder: holder, account: account)
                return upload
            case .busy(let upload):
                if !stopped, let stop = running.withLock({ $0[id]?.stop }) {
                    logger.info(
                        "a new append takes over a resumable upload from a stale one", metadata: ["upload": "\(id)"])
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

    /// An upload idle past its plan's `uploadIdleMinutes` held no place against jobs at once; on
    /// resuming it takes one again, if one is free (else 429, the hold let go).
    private func recheckPlace(_ upload: ResumableUpload, holder: String, account: Account) async throws {
        let plan = try await intake.policy.accountPlan(account)
        guard let idle = plan.plan.uploadIdleSeconds, upload.updatedAt < now.addingTimeInterval(-idle),
            let refusal = try await store.uploadPlaceRefusal(
                id: upload.id, accountId: account.id, now: now, limits: intake.policy.limits)
        else { return }
        try? await store.releaseUpload(id: upload.id, holder: holder, now: now)
        throw await intake.policy.refusal(refusal, account: account, plan: plan)
    }

    private func appendHeld<Body: AsyncSequence>(
        _ held: ResumableUpload, holder: String, account: Account, _ append: Append, body: Body,
        tooLarge: (AccountPlan) -> Error,
        wrote: (Int64) throws -> Void
    ) async throws -> Outcome where Body.Element == ByteBuffer {
        let (plan, limit) = try await admit(append, to: held, account: account, tooLarge: tooLarge)
        try await staging.prepare(id: held.id, offset: held.offset)
        let handle = try await staging.openForAppend(id: held.id)
        var writer = AppendWriter(
            uploads: self, id: held.id, holder: holder, handle: handle, start: held.offset,
            checksum: append.checksum)
        let recorded: (upload: ResumableUpload, completing: Bool)
        do {
            var interrupted = try await writer.receive(body, limit: limit, wrote: wrote) {
                held.length != nil || append.length != nil ? Refusal.pastLength(limit: limit) : tooLarge(plan)
            }
            let received = writer.position + Int64(writer.pending.readableBytes) - writer.start
            if let contentLength = append.contentLength, received < contentLength { interrupted = true }
            try await writer.verify(append.checksum, interrupted: interrupted)
            try await writer.drain(wrote: wrote)
            recorded = try await record(held, append, writer: writer, interrupted: interrupted)
        } catch {
            // A commit still running finishes before the file is closed (its offset is true).
            _ = try? await writer.inflight?.value
            try? await writer.handle.close()
            throw error
        }
        guard recorded.completing else { return .partial(recorded.upload) }
        return try await complete(recorded.upload, holder: holder, account: account)
    }

    /// The checks before an append reads its body: its offset, a length it declares, the plan's
    /// limit. Returns the plan and the size the upload may reach.
    private func admit(
        _ append: Append, to upload: ResumableUpload, account: Account, tooLarge: (AccountPlan) -> Error
    ) async throws -> (AccountPlan, Int64) {
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
        let plan = try await intake.policy.accountPlan(account)
        let limit = min(maxBytes(plan), append.length ?? upload.length ?? .max)
        if let length = append.length ?? upload.length, length > maxBytes(plan) { throw tooLarge(plan) }
        if let contentLength = append.contentLength, upload.offset + contentLength > limit {
            throw upload.length != nil || append.length != nil
                ? Refusal.pastLength(limit: limit)
                : tooLarge(plan)
        }
        return (plan, limit)
    }

    /// Records what the append wrote. An upload still incomplete is answered at once while the
    /// bytes are made durable and recorded (`settle`); otherwise they are recorded now, and a
    /// complete upload stays held to become a job.
    private func record(
        _ held: ResumableUpload, _ append: Append, writer: AppendWriter, interrupted: Bool
    ) async throws -> (upload: ResumableUpload, completing: Bool) {
        var upload = held
        let (id, holder, handle) = (held.id, writer.holder, writer.handle)
        let (position, committed) = (writer.position, writer.committed)
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
            return (upload, false)
        }
        // One transaction records the offset (and the length) and, unless the upload is now
        // complete and becomes a job under the same hold, lets go of the hold.
        if position > committed {
            try await handle.synchronize()
            try await staging.publish(id: id, range: committed..<position)
        }
        let now = self.now
        guard
            try await store.recordUploadOffset(
                id: id, holder: holder, offset: position, length: length,
                heldUntil: now.addingTimeInterval(Self.holdSeconds),
                expiresAt: now.addingTimeInterval(expirySeconds), release: !completing, now: now)
        else {
            throw Self.gone
        }
        try await handle.close()
        upload.offset = position
        upload.length = length
        return (upload, completing)
    }

    /// Makes `unsynced` durable, records the offset and lets go of the hold, in the background.
    private func settle(_ upload: ResumableUpload, holder: String, handle: WriteFileHandle, unsynced: Range<Int64>) {
        let (id, store, staging, logger, clock, expiry) = (
            upload.id, store, staging, logger, intake.clock, expirySeconds
        )
        let task = Task {
            do {
                if !unsynced.isEmpty {
                    try await handle.synchronize()
                    try await staging.publish(id: id, range: unsynced)
                }
                let now = clock()
                let recorded = try await store.recordUploadOffset(
                    id: id, holder: holder, offset: unsynced.upperBound, length: upload.length,
                    heldUntil: now.addingTimeInterval(Self.holdSeconds),
                    expiresAt: now.addingTimeInterval(expiry), release: true, now: now)
                if !recorded { logger.info("an answered append found its upload ended", metadata: ["upload": "\(id)"]) }
            } catch {
                logger.error(
                    "an answered append could not record its bytes; the upload stays at its previous offset",
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
}
