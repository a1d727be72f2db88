import CFileSync
import Foundation
import JobMedia
import Logging
import NIOCore
import ObjectStorage
import Synchronization
import _NIOFileSystem

/// Where a resumable upload's bytes wait until the last one arrives: a local file
/// `<storage.path>/resumable/<id>` on the API host receiving them. With the s3 media backend the
/// bytes are also kept in the bucket as part objects `<prefix>/uploads/<id>/<offset>`, so any API
/// host can take the next append or finish the upload: a host whose local file is behind the
/// recorded offset fetches the parts it lacks first. The database's offset is the truth; bytes
/// staged past it (an append that died before recording) are cut off before the next append.
///
/// Parts are at least `S3UploadParts.minimumPartBytes` (5 MiB, S3's minimum part size) except
/// the upload's last one, the "open" part, which grows while bytes arrive and is rewritten (the
/// same key) at most once per `S3UploadParts.flushDelay` (and at once when it reaches the
/// minimum, which seals it): a client sending a thousand one-byte appends makes about one write
/// per second, not a thousand objects. Between an answered append and that write (one to five
/// seconds, longer as the open part grows) its bytes are durable on this host's disk only; another
/// host asked to continue the upload then waits for the write (`S3UploadParts.catchUpSeconds`).
public struct UploadStaging: Sendable {
    public let directory: String
    let parts: S3UploadParts?
    let logger: Logger

    public init(layout: StorageLayout, storage: any MediaStorage, logger: Logger) {
        directory = layout.resumableDirectory
        let folder = layout.resumableDirectory
        parts = (storage as? S3MediaStorage).map { s3 in
            S3UploadParts(
                client: s3.client, prefix: s3.keyPrefix + "uploads/", localPath: { id in folder + "/" + id },
                logger: logger)
        }
        self.logger = logger
    }

    public func path(_ id: String) -> String { directory + "/" + id }

    /// Makes the local file hold exactly bytes 0..<`offset` (creating it when new): bytes past the
    /// offset are cut off, and missing ones fetched from the bucket's parts. Throws
    /// `UploadStagingError.lost` when the bytes cannot be found anywhere.
    public func prepare(id: String, offset: Int64) async throws {
        let path = path(id)
        let handle = try await FileSystem.shared.openFile(
            forWritingAt: FilePath(path), options: .modifyFile(createIfNecessary: true))
        do {
            let size = try await handle.info().size
            if size > offset {
                // Bytes past the recorded offset (an append that died before recording): the
                // bucket's open part may hold them too, so it is rewritten from the offset on.
                try await handle.resize(to: .bytes(offset))
                await parts?.truncated(id: id, to: offset)
            } else if size < offset {
                guard let parts else { throw UploadStagingError.lost }
                try await parts.fetch(id: id, from: size, to: offset, into: handle)
            } else if offset == 0 {
                // A new upload: nothing of it in the bucket yet (no need to look).
                parts?.seed(id: id)
            }
            try await handle.close()
        } catch {
            try? await handle.close()
            throw error
        }
    }

    /// Opens the local file for an append at `offset` (after `prepare`).
    public func openForAppend(id: String) async throws -> WriteFileHandle {
        try await FileSystem.shared.openFile(
            forWritingAt: FilePath(path(id)), options: .modifyFile(createIfNecessary: false))
    }

    /// Starts the disk's write-back of bytes just written (Linux `sync_file_range`, which does not
    /// wait), so the fsync that must precede an acknowledged offset finds them mostly on disk
    /// already: the write-back overlaps the network instead of following it (a 5 MB PATCH's
    /// fsync is about 10 ms on a disk that writes 500 MB/s).
    static func startWriteback(_ handle: WriteFileHandle, from offset: Int64, count: Int64) async throws {
        _ = try await handle.withUnsafeDescriptor { descriptor in
            moments_start_writeback(descriptor.rawValue, offset, Int64(count))
        }
    }

    /// Makes bytes `range` of the local file (already synchronised by the caller) reachable from
    /// every host: a sealed part when the open part reaches the minimum part size, otherwise the
    /// open part's next write (within `S3UploadParts.flushDelay`). Nothing for the filesystem backend.
    public func publish(id: String, range: Range<Int64>) async throws {
        guard let parts, !range.isEmpty else { return }
        try await parts.store(id: id, fileAt: path(id), range: range)
    }

    /// Deletes the upload's bytes: the local file and any parts in the bucket (its own keys only).
    public func remove(id: String) async {
        await parts?.remove(id: id, logger: logger)
        try? FileManager.default.removeItem(atPath: path(id))
    }

    /// Writes every open part with bytes not yet in the bucket now (graceful shutdown), so
    /// another host can continue those uploads.
    public func flushPending() async {
        await parts?.flushAll()
    }

    /// Ids of uploads with a local file here.
    public func stagedIDs() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !$0.hasPrefix(".") }
    }
}

public enum UploadStagingError: Error, Equatable {
    /// The recorded bytes are neither on this host nor in the bucket.
    case lost
}

/// A resumable upload's parts in the bucket: `<prefix><id>/<offset, 16 digits>`, each covering the
/// bytes from its offset to its offset plus its size, the next part starting where it ends. The
/// parts are found by following that chain (HEAD or GET of the key at the next offset): an upload's
/// own keys only, never a listing of every upload of every account.
struct S3UploadParts: Sendable {
    /// S3's minimum part size: parts below it are the upload's last, open part only.
    static let minimumPartBytes: Int64 = 5 << 20
    /// The open part is written at most this often while bytes arrive (and at once when it seals),
    /// less often as it grows: each write sends the whole part again, so one upload's rewrites
    /// stay under about `rewriteBytesPerSecond` however its client slices its appends.
    static let flushDelay: Duration = .seconds(1)
    static let rewriteBytesPerSecond: Int64 = 1 << 20
    static func delay(openBytes: Int64) -> Duration {
        .milliseconds(max(1000, min(5000, openBytes * 1000 / rewriteBytesPerSecond)))
    }
    /// How long a host that lacks an upload's newest bytes waits for another host's open part to
    /// be written before the bytes count as lost (the longest delay, and the write itself).
    static let catchUpSeconds = 8.0

    let client: S3Client
    let prefix: String
    let localPath: @Sendable (String) -> String
    let logger: Logger
    let book = PartBook()

    func key(_ id: String, _ offset: Int64) -> String {
        let digits = String(offset)
        return prefix + id + "/" + String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }

    /// The parts following each other from `start` (a part's offset) whose offsets are below
    /// `limit`, by HEAD requests on the upload's own keys.
    func walk(id: String, from start: Int64, below limit: Int64 = .max) async throws -> [PartSpan] {
        var spans: [PartSpan] = []
        var position = start
        while position < limit, let info = try await client.headObject(key: key(id, position)), info.size > 0 {
            spans.append(PartSpan(start: position, end: position + info.size))
            position += info.size
        }
        return spans
    }

    /// What this host knows of the upload's parts, learnt from the bucket when it knows nothing
    /// (an upload begun on another host, or before a restart). `recorded`: the recorded offset.
    func knownState(id: String, recorded: Int64) async throws -> OpenPart {
        if let known = book.entries.withLock({ $0[id] }) { return known }
        let spans = try await walk(id: id, from: 0, below: max(recorded, 1))
        let learnt = OpenPart(spans: spans, recorded: recorded)
        book.entries.withLock { if $0[id] == nil { $0[id] = learnt } }
        return book.entries.withLock { $0[id] ?? learnt }
    }

    /// An upload this host has just created: no part yet.
    func seed(id: String) {
        book.entries.withLock { if $0[id] == nil { $0[id] = OpenPart() } }
    }

    /// Publishes bytes `range` (the file is durable up to its end; its start is the recorded offset).
    func store(id: String, fileAt path: String, range: Range<Int64>) async throws {
        let state = try await knownState(id: id, recorded: range.lowerBound)
        if range.upperBound - state.open >= Self.minimumPartBytes {
            // The open part reaches the minimum: written now, sealed; the next bytes open a new one.
            await cancelFlush(id)
            let start = book.entries.withLock { $0[id]?.open } ?? state.open
            try await client.putObject(
                key: key(id, start), fileAt: path, range: start..<range.upperBound,
                contentType: "application/octet-stream")
            book.entries.withLock { entry in
                guard var part = entry[id] else { return }
                part.written(PartSpan(start: start, end: range.upperBound))
                part.open = range.upperBound
                part.pending = nil
                entry[id] = part
            }
            return
        }
        schedule(id, pending: range.upperBound)
    }

    /// Notes bytes to write to the open part, and starts the timer that writes them unless one runs.
    private func schedule(_ id: String, pending end: Int64) {
        book.entries.withLock { entry in
            guard var part = entry[id] else { return }
            part.pending = max(part.pending ?? 0, end)
            if part.flush == nil {
                part.generation &+= 1
                let generation = part.generation
                part.flush = Task { await self.flushLoop(id, generation: generation) }
            }
            entry[id] = part
        }
    }

    /// Writes the open part (from the local file) one `flushDelay` after bytes were noted, and
    /// again while more arrive meanwhile; a few failures in a row give up (logged).
    private func flushLoop(_ id: String, generation: UInt64) async {
        var failures = 0
        while true {
            let unwritten = book.entries.withLock { entry in entry[id].map { ($0.pending ?? $0.open) - $0.open } } ?? 0
            try? await Task.sleep(for: Self.delay(openBytes: unwritten))
            if Task.isCancelled { return }
            let span: PartSpan? = book.entries.withLock { entry in
                guard var part = entry[id], part.generation == generation else { return nil }
                guard let pending = part.pending, pending > part.open else {
                    part.pending = nil
                    part.flush = nil
                    entry[id] = part
                    return nil
                }
                return PartSpan(start: part.open, end: pending)
            }
            guard let span else { return }
            do {
                try await client.putObject(
                    key: key(id, span.start), fileAt: localPath(id), range: span.start..<span.end,
                    contentType: "application/octet-stream")
                book.entries.withLock { entry in
                    guard var part = entry[id], part.generation == generation else { return }
                    part.written(span)
                    if part.pending == span.end { part.pending = nil }
                    entry[id] = part
                }
                failures = 0
            } catch {
                if Task.isCancelled { return }
                failures += 1
                logger.warning(
                    "could not store a resumable upload's open part; retrying",
                    metadata: ["upload": "\(id)", "error": "\(error)"])
                if failures >= 5 {
                    book.entries.withLock { entry in
                        if entry[id]?.generation == generation { entry[id]?.flush = nil }
                    }
                    return
                }
            }
        }
    }

    /// Stops the open part's timer, waiting for a write in progress to end.
    private func cancelFlush(_ id: String) async {
        let task: Task<Void, Never>? = book.entries.withLock { entry in
            let task = entry[id]?.flush
            entry[id]?.flush = nil
            entry[id]?.generation &+= 1
            return task
        }
        task?.cancel()
        await task?.value
    }

    /// Writes every pending open part now (graceful shutdown).
    func flushAll() async {
        let ids = book.entries.withLock { $0.compactMap { $0.value.pending != nil ? $0.key : nil } }
        for id in ids {
            await cancelFlush(id)
            guard
                let span: PartSpan = book.entries.withLock({ entry in
                    guard let part = entry[id], let pending = part.pending, pending > part.open else { return nil }
                    return PartSpan(start: part.open, end: pending)
                })
            else { continue }
            do {
                try await client.putObject(
                    key: key(id, span.start), fileAt: localPath(id), range: span.start..<span.end,
                    contentType: "application/octet-stream")
                book.entries.withLock {
                    $0[id]?.written(span); $0[id]?.pending = nil
                }
            } catch {
                logger.warning(
                    "could not store a resumable upload's open part at shutdown",
                    metadata: ["upload": "\(id)", "error": "\(error)"])
            }
        }
    }

    /// The local file was cut back to `offset` (bytes past the recorded offset): what is known of
    /// the open part follows. A sealed part reaching past the offset becomes the open part again.
    func truncated(id: String, to offset: Int64) async {
        await cancelFlush(id)
        let restart: Int64? = book.entries.withLock { entry in
            guard var part = entry[id] else { return nil }
            part.cut(to: offset)
            let pending = part.pending
            entry[id] = part
            return pending
        }
        if let restart { schedule(id, pending: restart) }
    }

    /// Appends the parts covering `from..<to` to `handle` (whose file is `from` bytes long). A file
    /// that ends inside a part is cut back to that part's start first. Bytes another host has
    /// answered but not yet written (its open part, within a second or so) are waited for.
    func fetch(id: String, from: Int64, to: Int64, into handle: WriteFileHandle) async throws {
        let deadline = Date().addingTimeInterval(Self.catchUpSeconds)
        var spans = try await walk(id: id, from: 0, below: to)
        while (spans.last?.end ?? 0) < to {
            guard Date() < deadline else { throw UploadStagingError.lost }
            try await Task.sleep(for: .milliseconds(200))
            // The open part may have grown (rewritten) or been sealed with a new one after it.
            let known = spans.dropLast()
            spans = Array(known) + (try await walk(id: id, from: known.last?.end ?? 0, below: to))
        }
        guard let first = spans.last(where: { $0.start <= from }) else { throw UploadStagingError.lost }
        if first.start < from { try await handle.resize(to: .bytes(first.start)) }
        var position = first.start
        for span in spans where span.start >= first.start {
            guard span.start == position else { throw UploadStagingError.lost }
            let stream = try await client.getObject(key: key(id, span.start))
            for try await chunk in stream.body {
                position += Int64(
                    try await handle.write(contentsOf: chunk.readableBytesView, toAbsoluteOffset: position))
            }
        }
        guard position >= to else { throw UploadStagingError.lost }
        if position > to { try await handle.resize(to: .bytes(to)) }
        try await handle.synchronize()
        let learnt = OpenPart(spans: spans, recorded: to)
        await cancelFlush(id)
        book.entries.withLock { $0[id] = learnt }
    }

    /// Deletes the upload's parts: those this host knows, and those that follow them in the
    /// bucket (written by another host). No listing of other uploads.
    func remove(id: String, logger: Logger) async {
        await cancelFlush(id)
        let known = book.entries.withLock { $0.removeValue(forKey: id) }
        do {
            var keys = Set((known?.keys ?? []).map { key(id, $0) })
            let from = known?.spans.last?.start ?? 0
            for span in try await walk(id: id, from: from) { keys.insert(key(id, span.start)) }
            // Keys the sweeper's listing found (a part off the chain, left by a crash).
            keys.formUnion(book.listed.withLock { $0.removeValue(forKey: id) } ?? [])
            for key in keys.sorted() {
                try await client.deleteObject(key: key)
            }
        } catch {
            logger.warning(
                "could not delete a resumable upload's parts; the sweeper retries",
                metadata: ["upload": "\(id)", "error": "\(error)"])
        }
    }

    /// Upload ids with parts in the bucket (the sweeper's periodic look for leftovers). Listed under
    /// the slash-free prefix and filtered here: a `/` in a ListObjectsV2 prefix is signed as %2F (as
    /// AWS specifies), which some S3-compatible servers (moto) re-encode differently and refuse.
    func storedIDs() async throws -> Set<String> {
        var found: [String: Set<String>] = [:]
        for object in try await client.listObjects(prefix: String(prefix.dropLast())) where object.key.hasPrefix(prefix)
        {
            guard let id = object.key.dropFirst(prefix.count).split(separator: "/").first.map(String.init) else {
                continue
            }
            found[id, default: []].insert(object.key)
        }
        let listed = found
        book.listed.withLock { $0 = listed }
        return Set(found.keys)
    }
}

/// Bytes `start..<end` of an upload, stored as the part at `start`.
struct PartSpan: Sendable, Equatable {
    var start: Int64
    var end: Int64
}

/// What one host knows of an upload's parts.
struct OpenPart: Sendable {
    /// The parts in the bucket, in order.
    var spans: [PartSpan] = []
    /// Every key offset written or seen (for removal, stale ones included).
    var keys: Set<Int64> = []
    /// Where the open part starts (the end of the sealed parts).
    var open: Int64 = 0
    /// The end of bytes answered but not yet in the open part's object.
    var pending: Int64?
    var flush: Task<Void, Never>?
    var generation: UInt64 = 0

    init() {}

    /// From the parts found in the bucket below the recorded offset.
    init(spans found: [PartSpan], recorded: Int64) {
        keys = Set(found.map(\.start))
        spans = found
        cut(to: recorded)
    }

    mutating func written(_ span: PartSpan) {
        keys.insert(span.start)
        spans.removeAll { $0.start >= span.start }
        spans.append(span)
    }

    /// Only bytes below `offset` count: a part reaching past it, or smaller than the minimum,
    /// is the open one (rewritten by the next write).
    mutating func cut(to offset: Int64) {
        spans.removeAll { $0.start >= offset }
        if let last = spans.last, last.end > offset || last.end - last.start < S3UploadParts.minimumPartBytes {
            open = last.start
        } else {
            open = spans.last?.end ?? 0
        }
        if let p = pending { pending = p > open ? min(p, offset) : nil }
    }
}

/// The open parts this host tracks, by upload id.
final class PartBook: Sendable {
    let entries = Mutex<[String: OpenPart]>([:])
    /// The keys of each upload as the sweeper's last listing found them.
    let listed = Mutex<[String: Set<String>]>([:])
}
