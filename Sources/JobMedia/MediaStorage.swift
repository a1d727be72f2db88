import Foundation
import ObjectStorage
import Wording

/// The files of a job, named by the server (never by the client).
public enum MediaFile: String, Sendable, CaseIterable {
    case input
    case result = "highlight.mp4"
    case poster = "poster.jpg"
    case analysis = "analysis.json"
    /// The whole analysis (every measurement), kept so a re-cut selects and renders without
    /// decoding the input again.
    case analysisData = "analysis-data.json"
    case storyboard = "storyboard.png"
    /// A `quality=original` highlight's H.264 preview (≤ 540p), published after the job completed.
    case preview = "preview.mp4"

    /// The results a worker publishes.
    public static let results: [MediaFile] = [.result, .poster, .analysis, .analysisData, .storyboard]
}

/// A local folder a worker's isolated child reads the input from and writes the results to: the
/// child sees local files only.
public struct JobWorkspace: Sendable, Equatable {
    public var directory: String

    public init(directory: String) { self.directory = directory }

    public func path(_ file: MediaFile) -> String { directory + "/" + file.rawValue }
    public var inputPath: String { path(.input) }
    public var resultPath: String { path(.result) }
    public var posterPath: String { path(.poster) }
    public var analysisPath: String { path(.analysis) }
    public var analysisDataPath: String { path(.analysisData) }
    public var storyboardPath: String { path(.storyboard) }
    public var previewPath: String { path(.preview) }
    /// Where the job's child writes a new analysis for its account's cache (the worker moves it in).
    public var cacheOutputDirectory: String { directory + "/cache-new" }
}

/// How a download is served.
public enum MediaDownload: Sendable {
    /// A local file (FileResponder: ranges, ETag, Last-Modified).
    case file(path: String)
    /// An object streamed from the bucket through the server (ranged GETs).
    case object(StoredObject)
    /// 302 to a presigned URL of the bucket.
    case redirect(URL)
}

/// An object's description, and a way to stream it (or a range of it) from the bucket.
public struct StoredObject: Sendable {
    public var size: Int64
    public var etag: String?
    public var lastModified: Date?
    let opener: @Sendable (S3ByteRange?) async throws -> S3ObjectStream

    public init(
        size: Int64, etag: String?, lastModified: Date?,
        opener: @escaping @Sendable (S3ByteRange?) async throws -> S3ObjectStream
    ) {
        self.size = size; self.etag = etag; self.lastModified = lastModified; self.opener = opener
    }

    /// Starts the GET; returns once the headers are in (the body is still on the wire). A missing
    /// object throws `MediaStorageError.notFound`, any other failure `.unavailable`.
    public func open(range: ClosedRange<Int64>?) async throws -> S3ObjectStream {
        try await opener(range.map { .bytes($0) })
    }
}

/// A job's media found in storage (for the sweeper).
public struct StoredJobMedia: Sendable, Equatable {
    public var jobID: String
    /// The newest modification of its files (nil when unknown).
    public var modified: Date?
    public var hasInput: Bool

    public init(jobID: String, modified: Date?, hasInput: Bool) {
        self.jobID = jobID; self.modified = modified; self.hasInput = hasInput
    }
}

/// Failures of the media storage as the job system reports them: the underlying error (endpoint,
/// bucket, key) is logged by the backend, never carried here, so no caller can show it to a user.
public enum MediaStorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The storage cannot be reached or refused the operation: try again later (503).
    case unavailable
    /// The object or file does not exist.
    case notFound
    /// The configuration is unusable (raised at startup; names keys, never secrets).
    case misconfigured(String)

    public var description: String {
        switch self {
        case .unavailable: "the media storage is unavailable"
        case .notFound: "the media file does not exist"
        case .misconfigured(let reason): "media storage: \(reason)"
        }
    }

    /// What an API client is told when the storage fails under an upload or a download.
    public static let userMessage = Say.storageUnavailable
    public static let retryAfterSeconds = 30
}

/// Where a job's media live, shaped around the data flow:
///
/// - API, after an upload is accepted: `storeInput(jobID:from:)` takes the local file (moved or
///   uploaded, never read into memory);
/// - worker: `prepareWorkspace(jobID:)` gives a local folder holding the input, the isolated child
///   writes its results there, `publishResults(jobID:)` stores them before the job is marked
///   completed, and `discardWorkspace(jobID:)` runs after every outcome;
/// - downloads: `download(jobID:file:)`;
/// - DELETE, retention, failures: `removeMedia(jobID:keepingInput:)` and `removeInput(jobID:)`;
/// - sweeper: `storedJobs()` (orphans) and `workspaceJobIDs()` (scratch of jobs nobody runs).
public protocol MediaStorage: Sendable {
    /// "filesystem" or "s3" (logs).
    var name: String { get }

    /// Makes `localFile` the job's input; the local file is gone afterwards (moved, or uploaded
    /// and deleted). Durable when it returns. Throws `MediaStorageError.unavailable` on failure
    /// (the local file is then left for the caller to delete).
    func storeInput(jobID: String, from localFile: String) async throws

    /// A local folder holding the job's input, for the worker's child to read and write.
    func prepareWorkspace(jobID: String) async throws -> JobWorkspace

    /// Stores `files` the child wrote in the job's workspace (durably): the results before the job
    /// is marked completed (`MediaFile.results`), a preview after. The workspace stays until
    /// `discardWorkspace`.
    func publish(jobID: String, files: [MediaFile]) async throws

    /// Removes the worker's local copy (S3: the scratch folder; filesystem: nothing, the job's
    /// folder is its storage). Called after every outcome; never fails.
    func discardWorkspace(jobID: String) async

    /// Deletes the job's stored media (all of them, or all but the input and its analysis data).
    /// Best effort: failures are logged, and the sweeper finds what is left.
    func removeMedia(jobID: String, keepingInput: Bool) async

    /// Gives job `target` its own copy of `files` of job `source` (a re-cut: the input and the
    /// analysis data), durably. Filesystem: hard links; S3: server-side copies. Throws
    /// `MediaStorageError.notFound` when a file is missing, `.unavailable` on failure.
    func copyMedia(from source: String, to target: String, files: [MediaFile]) async throws

    /// Copies one stored file of job `jobID` to a local path (a re-upload's worker takes the
    /// earlier job's analysis data). Throws `MediaStorageError.notFound` when it is not stored.
    func fetch(jobID: String, file: MediaFile, to path: String) async throws

    /// Deletes the job's input only (after it completed, unless uploads are kept).
    func removeInput(jobID: String) async

    /// Whether the file is stored.
    func mediaExists(jobID: String, file: MediaFile) async throws -> Bool

    /// How to serve a stored file; nil when it is not stored.
    func download(jobID: String, file: MediaFile) async throws -> MediaDownload?

    /// Every job that has media in storage.
    func storedJobs() async throws -> [StoredJobMedia]

    /// Jobs with a local workspace that is not their storage (S3 scratch folders).
    func workspaceJobIDs() -> [String]

    /// Nil when there is nothing to check beyond the local folders; otherwise whether the backend
    /// answers, with a detail for the server log (no endpoint, bucket or credentials).
    func readiness() async -> (ok: Bool, detail: String)?
}
