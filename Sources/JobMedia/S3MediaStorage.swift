import AsyncHTTPClient
import Foundation
import Logging
import ObjectStorage

/// Media as objects `<prefix>/jobs/<id>/input|highlight.mp4|poster.jpg|analysis.json` in an
/// S3-compatible bucket (AWS S3, Cloudflare R2, MinIO). Workers copy the input to a local scratch
/// folder (`<storage.path>/scratch/<id>/`) for the isolated child, which sees local files only, and
/// upload the results from there. Files move between disk and bucket as streams, never whole in
/// memory. Failures are logged here (with the key, never credentials) and reported to callers as
/// `MediaStorageError.unavailable`, which carries nothing a user could be shown by mistake.
public struct S3MediaStorage: MediaStorage {
    public let client: S3Client
    /// "" or "<prefix>/".
    public let keyPrefix: String
    /// `<storage.path>/scratch`.
    public let scratchDirectory: String
    public let presignDownloads: Bool
    public let presignSeconds: Int
    let logger: Logger

    public init(
        client: S3Client, prefix: String, scratchDirectory: String, presignDownloads: Bool = false,
        presignSeconds: Int = 300, logger: Logger
    ) {
        self.client = client
        let trimmed = prefix.trimmingCharacters(in: CharacterSet(charactersIn: "/ "))
        self.keyPrefix = trimmed.isEmpty ? "" : trimmed + "/"
        self.scratchDirectory = scratchDirectory
        self.presignDownloads = presignDownloads
        self.presignSeconds = presignSeconds
        self.logger = logger
    }

    /// One HTTP client for every S3MediaStorage of the process, never shut down (so releasing a
    /// storage never has to). Redirects are not followed: a signed request is not replayed elsewhere.
    public static let sharedHTTPClient: HTTPClient = {
        var config = HTTPClient.Configuration()
        config.redirectConfiguration = .disallow
        config.timeout = .init(connect: .seconds(5), read: .seconds(60))
        config.decompression = .disabled
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: config)
    }()

    public var name: String { "s3" }

    public func key(_ jobID: String, _ file: MediaFile) -> String { "\(keyPrefix)jobs/\(jobID)/\(file.rawValue)" }
    public var jobsPrefix: String { "\(keyPrefix)jobs/" }
    public func scratchPath(_ jobID: String) -> String { scratchDirectory + "/" + jobID }

    // MARK: Data flow

    /// Uploads the file (in parts above the client's threshold, streamed from disk), then deletes it.
    public func storeInput(jobID: String, from localFile: String) async throws {
        try await guarded("store the input", jobID) {
            try await client.upload(fileAt: localFile, key: key(jobID, .input), contentType: "application/octet-stream")
        }
        try? FileManager.default.removeItem(atPath: localFile)
    }

    /// Downloads the input to `scratch/<id>/input` (a fresh folder); nothing is left on failure.
    public func prepareWorkspace(jobID: String) async throws -> JobWorkspace {
        let workspace = JobWorkspace(directory: scratchPath(jobID))
        try? FileManager.default.removeItem(atPath: workspace.directory)
        do {
            try FileManager.default.createDirectory(atPath: workspace.directory, withIntermediateDirectories: true)
            try await guarded("fetch the input", jobID) {
                try await client.getObject(key: key(jobID, .input), toFileAt: workspace.inputPath)
            }
            // A re-cut's analysis data comes with it (a plain job has none yet: it makes it).
            if try await guarded(
                "look up the analysis data", jobID, { try await client.headObject(key: key(jobID, .analysisData)) })
                != nil
            {
                try await guarded("fetch the analysis data", jobID) {
                    try await client.getObject(key: key(jobID, .analysisData), toFileAt: workspace.analysisDataPath)
                }
            }
            return workspace
        } catch {
            try? FileManager.default.removeItem(atPath: workspace.directory)
            throw error
        }
    }

    /// Uploads the results the child wrote, then removes the scratch folder.
    public func publish(jobID: String, files: [MediaFile]) async throws {
        let workspace = JobWorkspace(directory: scratchPath(jobID))
        for file in files where FileManager.default.fileExists(atPath: workspace.path(file)) {
            try await guarded("publish \(file.rawValue)", jobID) {
                try await client.upload(
                    fileAt: workspace.path(file), key: key(jobID, file), contentType: Self.contentType(file))
            }
        }
    }

    public func discardWorkspace(jobID: String) async {
        try? FileManager.default.removeItem(atPath: scratchPath(jobID))
    }

    /// Deletes the job's known keys (at once: a slow bucket costs one round of retries, not four).
    public func removeMedia(jobID: String, keepingInput: Bool) async {
        let files = MediaFile.allCases.filter { !(keepingInput && ($0 == .input || $0 == .analysisData)) }
        await withTaskGroup(of: Void.self) { group in
            for file in files {
                group.addTask {
                    do {
                        try await client.deleteObject(key: key(jobID, file))
                    } catch {
                        logger.error(
                            "cannot delete a job's object; the sweeper will try again",
                            metadata: ["job": "\(jobID)", "file": "\(file.rawValue)", "error": "\(error)"])
                    }
                }
            }
        }
    }

    public func copyMedia(from source: String, to target: String, files: [MediaFile]) async throws {
        for file in files {
            guard
                try await guarded(
                    "look up \(file.rawValue)", source, { try await client.headObject(key: key(source, file)) }) != nil
            else {
                throw MediaStorageError.notFound
            }
            try await guarded("copy \(file.rawValue)", target) {
                try await client.copyObject(from: key(source, file), to: key(target, file))
            }
        }
    }

    public func fetch(jobID: String, file: MediaFile, to path: String) async throws {
        try await guarded("fetch \(file.rawValue)", jobID) {
            try await client.getObject(key: key(jobID, file), toFileAt: path)
        }
    }

    public func removeInput(jobID: String) async {
        do {
            try await client.deleteObject(key: key(jobID, .input))
        } catch {
            logger.error(
                "cannot delete a job's input object; the sweeper will try again",
                metadata: ["job": "\(jobID)", "error": "\(error)"])
        }
    }

    // MARK: Reading

    public func mediaExists(jobID: String, file: MediaFile) async throws -> Bool {
        try await guarded("look up \(file.rawValue)", jobID) { try await client.headObject(key: key(jobID, file)) }
            != nil
    }

    /// A presigned URL (when configured) or the object's description and a ranged-GET opener; nil
    /// when the object does not exist.
    public func download(jobID: String, file: MediaFile) async throws -> MediaDownload? {
        let key = key(jobID, file)
        let s3 = client
        guard let info = try await guarded("look up \(file.rawValue)", jobID, { try await s3.headObject(key: key) })
        else { return nil }
        if presignDownloads {
            return .redirect(s3.presignedGetURL(key: key, expires: .seconds(presignSeconds)))
        }
        let storage = self
        return .object(
            StoredObject(size: info.size, etag: info.etag, lastModified: info.lastModified) { range in
                try await storage.guarded("read \(file.rawValue)", jobID) {
                    try await s3.getObject(key: key, range: range)
                }
            })
    }

    /// Jobs with at least one object under `<prefix>/jobs/`. The listing asks for `<prefix>/jobs`
    /// (no trailing `/`: moto, the test server, cannot check the signature of a `/` in a query
    /// value) and keeps the keys under `jobs/`.
    public func storedJobs() async throws -> [StoredJobMedia] {
        let objects = try await guarded("list jobs", nil) {
            try await client.listObjects(prefix: String(jobsPrefix.dropLast()))
        }
        var jobs: [String: StoredJobMedia] = [:]
        for object in objects where object.key.hasPrefix(jobsPrefix) {
            let rest = object.key.dropFirst(jobsPrefix.count).split(
                separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard rest.count == 2, !rest[0].isEmpty else { continue }
            let id = String(rest[0])
            var entry = jobs[id] ?? StoredJobMedia(jobID: id, modified: nil, hasInput: false)
            if let date = object.lastModified, entry.modified.map({ date > $0 }) ?? true { entry.modified = date }
            if rest[1] == MediaFile.input.rawValue { entry.hasInput = true }
            jobs[id] = entry
        }
        return jobs.values.sorted { $0.jobID < $1.jobID }
    }

    public func workspaceJobIDs() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: scratchDirectory)) ?? []
    }

    /// Writes and deletes a tiny object: the bucket answers, the credentials are valid and may write.
    public func readiness() async -> (ok: Bool, detail: String)? {
        let probe = "\(keyPrefix)readiness/\(UUID().uuidString.lowercased())"
        do {
            try await client.putObject(key: probe, bytes: Array("ok".utf8), contentType: "text/plain")
            try await client.deleteObject(key: probe)
            return (true, "bucket writable")
        } catch {
            logger.warning("media storage readiness check failed", metadata: ["error": "\(error)"])
            return (false, "the bucket cannot be written (see the log)")
        }
    }

    // MARK: Helpers

    static func contentType(_ file: MediaFile) -> String {
        switch file {
        case .input: "application/octet-stream"
        case .result, .preview: "video/mp4"
        case .poster: "image/jpeg"
        case .analysis, .analysisData: "application/json"
        case .storyboard: "image/png"
        }
    }

    /// Runs an S3 operation: a missing object becomes `.notFound`, cancellation stays itself, any
    /// other failure is logged and becomes `.unavailable`.
    func guarded<T: Sendable>(_ what: String, _ jobID: String?, _ operation: () async throws -> T) async throws -> T {
        do {
            return try await operation()
        } catch let error as S3Error where error.status == 404 {
            logger.warning(
                "media object missing",
                metadata: ["operation": "\(what)", "job": "\(jobID ?? "-")", "error": "\(error)"])
            throw MediaStorageError.notFound
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.error(
                "media storage failed",
                metadata: ["operation": "\(what)", "job": "\(jobID ?? "-")", "error": "\(error)"])
            throw MediaStorageError.unavailable
        }
    }
}
