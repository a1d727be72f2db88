import Configuration
import Foundation

/// Where job media (inputs, highlights, posters, analyses) are kept. The database, uploads being
/// received, the analysis cache and the workers' scratch folders stay under `storage.path` whatever
/// the backend. Credentials are never configuration: the S3 backend reads AWS_ACCESS_KEY_ID,
/// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN from the environment only.
public struct MediaStorageSettings: Sendable, Equatable {
    public enum Backend: String, Sendable, Equatable, CaseIterable {
        case filesystem
        case s3
    }

    /// `storage.backend` / STORAGE_BACKEND: "filesystem" (folders under storage.path) or "s3".
    /// Another name stops the server at startup (`MediaStorageFactory`), so a typo does not
    /// silently keep media on the local disk.
    public var backend = Backend.filesystem.rawValue
    /// `storage.s3.endpoint` / STORAGE_S3_ENDPOINT: e.g. https://<account>.r2.cloudflarestorage.com or
    /// http://127.0.0.1:9000. Empty: AWS (https://s3.<region>.amazonaws.com).
    public var endpoint = ""
    /// `storage.s3.region` / STORAGE_S3_REGION: the signing region (R2 accepts us-east-1 as well as auto).
    public var region = "us-east-1"
    /// `storage.s3.bucket` / STORAGE_S3_BUCKET: required with the s3 backend.
    public var bucket = ""
    /// `storage.s3.pathStyle` / STORAGE_S3_PATH_STYLE: endpoint/bucket/key (MinIO, local servers)
    /// instead of bucket.endpoint/key.
    public var pathStyle = false
    /// `storage.s3.prefix` / STORAGE_S3_PREFIX: prepended to every key (`<prefix>/jobs/<id>/...`),
    /// so several deployments can share a bucket.
    public var prefix = ""
    /// `storage.s3.presignDownloads` / STORAGE_S3_PRESIGN_DOWNLOADS: downloads answer 302 to a
    /// presigned URL of the bucket instead of streaming through the server.
    public var presignDownloads = false
    /// `storage.s3.presignSeconds` / STORAGE_S3_PRESIGN_SECONDS: how long a presigned URL is valid
    /// (1 s to 7 days).
    public var presignSeconds = 300

    public init() {}

    /// The backend named by `backend`, nil when it names none.
    public var backendKind: Backend? { Backend(rawValue: backend.trimmingCharacters(in: .whitespaces).lowercased()) }

    public init(reader config: ConfigReader) {
        let storage = config.scoped(to: "storage")
        storage.read("backend", into: &backend)
        let s3 = storage.scoped(to: "s3")
        s3.read("endpoint", into: &endpoint)
        s3.read("region", into: &region)
        s3.read("bucket", into: &bucket)
        s3.read("pathStyle", into: &pathStyle)
        s3.read("prefix", into: &prefix)
        s3.read("presignDownloads", into: &presignDownloads)
        s3.read("presignSeconds", into: &presignSeconds, in: 1...7 * 24 * 3600)
    }
}
