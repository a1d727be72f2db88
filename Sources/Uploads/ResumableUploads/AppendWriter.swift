import Foundation
import NIOCore
import Requests
import Store
import _NIOFileSystem

/// One append's bytes on their way into the staging file: gathered into batches, written at the
/// upload's offset and committed (made durable, stored in the bucket, the offset recorded with
/// the hold renewed) while more arrive.
struct AppendWriter {
    let uploads: ResumableUploads
    let id: String
    let holder: String
    let handle: WriteFileHandle
    /// The offset the append began at.
    let start: Int64
    /// Where the next batch is written.
    var position: Int64
    /// How far the bytes are durable and recorded.
    var committed: Int64
    var lastCommit = Date()
    var hasher: Hasher?
    var pending = ByteBuffer()
    var inflight: Task<Void, any Error>?

    init(
        uploads: ResumableUploads, id: String, holder: String, handle: WriteFileHandle, start: Int64,
        checksum: ResumableUploads.Checksum?
    ) {
        self.uploads = uploads
        self.id = id
        self.holder = holder
        self.handle = handle
        self.start = start
        self.position = start
        self.committed = start
        self.hasher = checksum.map { Hasher($0.algorithm) }
        pending.reserveCapacity(ResumableUploads.batchBytes + 64 * 1024)
    }

    /// Reads `body` into the file, committing as it goes; past `limit` the append is refused with
    /// `pastLimit()`. True when the body broke off: what arrived is kept.
    mutating func receive<Body: AsyncSequence>(
        _ body: Body, limit: Int64, wrote: (Int64) throws -> Void, pastLimit: () -> any Error
    ) async throws -> Bool where Body.Element == ByteBuffer {
        do {
            for try await var chunk in body {
                if position + Int64(pending.readableBytes) + Int64(chunk.readableBytes) > limit {
                    // Wrapped: `tooLarge` may be any error (the HTTP layer's problem), and
                    // anything but a refusal below counts as a dropped connection.
                    throw BodyRefusal(error: pastLimit())
                }
                hasher?.update(chunk.readableBytesView)
                pending.writeBuffer(&chunk)
                if pending.readableBytes >= ResumableUploads.batchBytes { try await flush(wrote: wrote) }
                if hasher == nil, position - committed >= ResumableUploads.commitBytes || commitDue {
                    try await commit(wrote: wrote)
                } else if hasher != nil, commitDue {
                    // Nothing is recorded before the checksum is verified, but the hold is
                    // renewed, so no other request takes the upload while this one writes.
                    try await renewHold()
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
            uploads.logger.info(
                "resumable upload append interrupted",
                metadata: ["upload": "\(id)", "error": "\(error)"])
            return true
        }
        return false
    }

    /// The last commit (or hold renewal) is `commitSeconds` old.
    var commitDue: Bool { Date().timeIntervalSince(lastCommit) >= ResumableUploads.commitSeconds }

    /// Writes the gathered bytes at `position`.
    mutating func flush(wrote: (Int64) throws -> Void) async throws {
        guard pending.readableBytes > 0 else { return }
        let count = try await handle.write(contentsOf: pending.readableBytesView, toAbsoluteOffset: position)
        try await UploadStaging.startWriteback(handle, from: position, count: Int64(count))
        position += Int64(count)
        pending.clear()
        try wrote(position - start)
    }

    /// Writes the gathered bytes and waits for the commit still running (its failure is thrown).
    mutating func drain(wrote: (Int64) throws -> Void) async throws {
        try await flush(wrote: wrote)
        if let previous = inflight {
            inflight = nil
            try await previous.value
        }
    }

    /// A commit (fsync, the bucket's part, the offset recorded with the hold renewed) runs
    /// beside the receiving loop, so the disk's write-back overlaps the network instead of
    /// stalling it; one at a time, and awaited before the append's last commit.
    mutating func commit(wrote: (Int64) throws -> Void) async throws {
        try await drain(wrote: wrote)
        guard position > committed else { return }
        let range = committed..<position
        let (id, holder, handle) = (self.id, self.holder, self.handle)
        let (store, staging, expiry) = (uploads.store, uploads.staging, uploads.expirySeconds)
        let clock = uploads.intake.clock
        inflight = Task {
            try await handle.synchronize()
            try await staging.publish(id: id, range: range)
            let now = clock()
            guard
                try await store.recordUploadOffset(
                    id: id, holder: holder, offset: range.upperBound, length: nil,
                    heldUntil: now.addingTimeInterval(ResumableUploads.holdSeconds),
                    expiresAt: now.addingTimeInterval(expiry), release: false,
                    now: now)
            else {
                throw ResumableUploads.gone
            }
        }
        committed = position
        lastCommit = Date()
    }

    /// Renews the hold at the committed offset, recording no new bytes.
    mutating func renewHold() async throws {
        let (now, store) = (uploads.now, uploads.store)
        guard
            try await store.recordUploadOffset(
                id: id, holder: holder, offset: committed, length: nil,
                heldUntil: now.addingTimeInterval(ResumableUploads.holdSeconds),
                expiresAt: now.addingTimeInterval(uploads.expirySeconds),
                release: false, now: now)
        else {
            throw ResumableUploads.gone
        }
        lastCommit = Date()
    }

    /// With a checksum, the append's bytes are kept only when all of them arrived and match it.
    func verify(_ checksum: ResumableUploads.Checksum?, interrupted: Bool) async throws {
        guard let checksum, var hasher = hasher else { return }
        if interrupted {
            try? await handle.close()
            throw Refusal.appendInterrupted
        }
        guard hasher.finish() == checksum.digest else {
            try? await handle.close()
            throw Refusal.checksumMismatch(offset: start)
        }
    }
}

/// A refusal raised while the body is read, kept apart from the body's own errors (a dropped
/// connection keeps what arrived; a refusal answers).
private struct BodyRefusal: Error {
    let error: any Error
}
