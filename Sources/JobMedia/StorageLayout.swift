import Foundation

/// Where everything lives under the storage root. File names come from job ids the server made,
/// never from the client.
public struct StorageLayout: Sendable {
    public let root: String

    public init(root: String) { self.root = root }

    public var databasePath: String { path("moments.sqlite") }
    /// Uploads being received (`<random>.partial`); moved into their job's folder once accepted.
    public var uploadsDirectory: String { path("uploads") }
    public var jobsDirectory: String { path("jobs") }
    public var cacheDirectory: String { path("cache/analysis") }
    /// One account's analysis cache (never shared: no account learns of another's uploads).
    public func accountCacheDirectory(_ accountID: String) -> String {
        let safe =
            !accountID.isEmpty
            && accountID.utf8.allSatisfy {
                ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45
            }
        return cacheDirectory + "/" + (safe ? accountID : accountID.utf8.map { String(format: "%02x", $0) }.joined())
    }
    /// Resumable uploads' bytes until their last byte arrives (`UploadStaging`).
    public var resumableDirectory: String { path("resumable") }

    public func jobDirectory(_ id: String) -> String { path("jobs/\(id)") }
    public func inputPath(_ id: String) -> String { path("jobs/\(id)/input") }
    public func resultPath(_ id: String) -> String { path("jobs/\(id)/highlight.mp4") }
    public func posterPath(_ id: String) -> String { path("jobs/\(id)/poster.jpg") }
    public func analysisPath(_ id: String) -> String { path("jobs/\(id)/analysis.json") }

    public func newUploadPath() -> String { path("uploads/\(UUID().uuidString.lowercased()).partial") }

    /// Creates the folders: the storage 0700 when it is made here (an existing one keeps the mode
    /// its operator gave it), and its folders 0700 always. Other local users read nothing of it;
    /// a media child reaches its own paths through its view of the storage (`IsolationSettings.viewRoot`).
    public func prepare() throws {
        if !FileManager.default.fileExists(atPath: root) {
            try FileManager.default.createDirectory(
                atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        for dir in [uploadsDirectory, jobsDirectory, cacheDirectory, resumableDirectory] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o700)
        }
        // Cache's parent ("cache") too: it sits between the storage and the analysis cache.
        chmod((cacheDirectory as NSString).deletingLastPathComponent, 0o700)
    }

    /// Bytes free for an unprivileged writer on the storage volume.
    public func freeBytes() -> Int64? {
        var stats = statvfs()
        guard statvfs(root, &stats) == 0 else { return nil }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// Removes a job's folder (input, results and any temporary file of a render), or, with
    /// `keepingInput`, everything in it but the input and its analysis data (a retry, or a re-cut's
    /// retry, then selects from it instead of decoding the input again).
    public func removeJobFiles(_ id: String, keepingInput: Bool = false) {
        guard keepingInput else {
            try? FileManager.default.removeItem(atPath: jobDirectory(id))
            return
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: jobDirectory(id))) ?? []
        where name != "input" && name != "analysis-data.json" {
            try? FileManager.default.removeItem(atPath: jobDirectory(id) + "/" + name)
        }
    }

    public func path(_ relative: String) -> String { (root as NSString).appendingPathComponent(relative) }
}

/// An exclusive lock on the storage folder (flock on Storage/.lock), so a second server on the same
/// folder refuses to start instead of re-queueing the first one's running jobs.
public final class StorageLock: Sendable {
    private let descriptor: Int32

    public init(_ path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StorageLockError(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw StorageLockError(path: path, reason: "another moments server is using this storage folder")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }
}

public struct StorageLockError: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}
