import CFileSync
import Foundation
import Logging
import NIOCore
import ObjectStorage
import _NIOFileSystem

/// Where a resumable upload's bytes wait until the last one arrives: a local file
/// `<storage.path>/resumable/<id>` on the API host receiving them. With the s3 media backend each
/// durable append is also stored in the bucket as a part object `<prefix>/uploads/<id>/<offset>`,
/// so any API host can take the next append or finish the upload: a host whose local file is
/// behind the recorded offset fetches the parts it lacks first. The database's offset is the truth;
/// bytes staged past it (an append that died before recording) are cut off before the next append.
public struct UploadStaging: Sendable {
    public let directory: String
    let parts: S3UploadParts?
    let logger: Logger

    public init(layout: StorageLayout, storage: any MediaStorage, logger: Logger) {
        directory = layout.resumableDirectory
        parts = (storage as? S3MediaStorage).map { S3UploadParts(client: $0.client, prefix: $0.keyPrefix + "uploads/") }
        self.logger = logger
    }

    public func path(_ id: String) -> String { directory + "/" + id }

    /// Makes the local file hold exactly bytes 0..<`offset` (creating it when new): bytes past the
    /// offset are cut off, and missing ones fetched from the bucket's parts. Throws
    /// `UploadStagingError.lost` when the bytes cannot be found anywhere.
    public func prepare(id: String, offset: Int64) async throws {
        let path = path(id)
        let handle = try await FileSystem.shared.openFile(forWritingAt: FilePath(path), options: .modifyFile(createIfNecessary: true))
        do {
            let size = try await handle.info().size
            if size > offset {
                try await handle.resize(to: .bytes(offset))
            } else if size < offset {
                guard let parts else { throw UploadStagingError.lost }
                try await parts.fetch(id: id, from: size, to: offset, into: handle)
            }
            try await handle.close()
        } catch {
            try? await handle.close()
            throw error
        }
    }

    /// Opens the local file for an append at `offset` (after `prepare`).
    public func openForAppend(id: String) async throws -> WriteFileHandle {
        try await FileSystem.shared.openFile(forWritingAt: FilePath(path(id)), options: .modifyFile(createIfNecessary: false))
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

    /// Makes bytes `range` of the local file durable where every host can reach them (the bucket's
    /// part; nothing more for the filesystem backend, whose caller has synchronised the file).
    public func publish(id: String, range: Range<Int64>) async throws {
        guard let parts, !range.isEmpty else { return }
        try await parts.store(id: id, fileAt: path(id), range: range)
    }

    /// Deletes the upload's bytes: the local file and any parts in the bucket.
    public func remove(id: String) async {
        try? FileManager.default.removeItem(atPath: path(id))
        await parts?.remove(id: id, logger: logger)
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
/// bytes from its offset to the next part's.
struct S3UploadParts: Sendable {
    let client: S3Client
    let prefix: String

    func key(_ id: String, _ offset: Int64) -> String {
        let digits = String(offset)
        return prefix + id + "/" + String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }

    func store(id: String, fileAt path: String, range: Range<Int64>) async throws {
        try await client.putObject(key: key(id, range.lowerBound), fileAt: path, range: range, contentType: "application/octet-stream")
    }

    /// Appends the parts covering `from..<to` to `handle` (whose file is `from` bytes long). A file
    /// that ends inside a part is cut back to that part's start first.
    func fetch(id: String, from: Int64, to: Int64, into handle: WriteFileHandle) async throws {
        let offsets = try await partKeys(id).compactMap { Int64($0.split(separator: "/").last ?? "") }.sorted()
        guard let start = offsets.last(where: { $0 <= from }) else { throw UploadStagingError.lost }
        if start < from { try await handle.resize(to: .bytes(start)) }
        var position = start
        for offset in offsets where offset >= start && offset < to {
            guard offset == position else { throw UploadStagingError.lost }
            let stream = try await client.getObject(key: key(id, offset))
            for try await chunk in stream.body {
                position += Int64(try await handle.write(contentsOf: chunk.readableBytesView, toAbsoluteOffset: position))
            }
        }
        guard position >= to else { throw UploadStagingError.lost }
        if position > to { try await handle.resize(to: .bytes(to)) }
        try await handle.synchronize()
    }

    /// The keys of an upload's parts. Listed under the slash-free prefix and filtered here: a
    /// `/` in a ListObjectsV2 prefix is signed as %2F (as AWS specifies), which some S3-compatible
    /// servers (moto) re-encode differently and refuse; AWS, R2 and MinIO accept either.
    func partKeys(_ id: String) async throws -> [String] {
        let mine = prefix + id + "/"
        return try await client.listObjects(prefix: String(prefix.dropLast())).map(\.key).filter { $0.hasPrefix(mine) }
    }

    func remove(id: String, logger: Logger) async {
        do {
            for key in try await partKeys(id) {
                try await client.deleteObject(key: key)
            }
        } catch {
            logger.warning("could not delete a resumable upload's parts; the sweeper retries", metadata: ["upload": "\(id)", "error": "\(error)"])
        }
    }

    /// Upload ids with parts in the bucket.
    func storedIDs() async throws -> Set<String> {
        Set(try await client.listObjects(prefix: String(prefix.dropLast())).compactMap { object -> String? in
            guard object.key.hasPrefix(prefix) else { return nil }
            let rest = object.key.dropFirst(prefix.count)
            return rest.split(separator: "/").first.map(String.init)
        })
    }
}
