import Foundation
import Logging
import MomentsConfig
import ObjectStorage

/// Builds the configured media storage. Credentials come from the environment only
/// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN), never from
/// configuration files; errors name the missing setting, never a secret.
public enum MediaStorageFactory {
    public static func make(
        settings: ServiceSettings, layout: StorageLayout,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger
    ) throws -> any MediaStorage {
        let media = settings.mediaStorage
        switch media.backendKind {
        case .filesystem:
            return FilesystemMediaStorage(layout: layout, logger: logger)
        case .s3:
            let configuration = try s3Configuration(media, environment: environment)
            let client = S3Client(
                configuration: configuration, httpClient: S3MediaStorage.sharedHTTPClient, logger: logger)
            let scratch = layout.path("scratch")
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            logger.info(
                "media storage: S3",
                metadata: ["path_style": "\(configuration.pathStyle)", "presign": "\(media.presignDownloads)"])
            return S3MediaStorage(
                client: client, prefix: media.prefix, scratchDirectory: scratch,
                presignDownloads: media.presignDownloads, presignSeconds: media.presignSeconds, logger: logger)
        case nil:
            throw MediaStorageError.misconfigured(
                "storage.backend (STORAGE_BACKEND) must be \"filesystem\" or \"s3\", not \"\(media.backend)\"")
        }
    }

    /// The client configuration of the s3 backend.
    public static func s3Configuration(_ media: MediaStorageSettings, environment: [String: String])
        throws(MediaStorageError) -> S3Configuration
    {
        func value(_ name: String) -> String? {
            guard let v = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty else {
                return nil
            }
            return v
        }
        let region =
            media.region.trimmingCharacters(in: .whitespaces).isEmpty
            ? "us-east-1" : media.region.trimmingCharacters(in: .whitespaces)
        let endpointText =
            media.endpoint.trimmingCharacters(in: .whitespaces).isEmpty
            ? "https://s3.\(region).amazonaws.com" : media.endpoint.trimmingCharacters(in: .whitespaces)
        guard let endpoint = URL(string: endpointText), let scheme = endpoint.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = endpoint.host, !host.isEmpty, endpoint.user == nil
        else {
            throw .misconfigured(
                "storage.s3.endpoint (STORAGE_S3_ENDPOINT) must be an http(s) URL such as https://s3.us-east-1.amazonaws.com, without credentials"
            )
        }
        let bucket = media.bucket.trimmingCharacters(in: .whitespaces)
        guard !bucket.isEmpty else {
            throw .misconfigured("storage.s3.bucket (STORAGE_S3_BUCKET) is required when storage.backend is s3")
        }
        guard let accessKey = value("AWS_ACCESS_KEY_ID") else {
            throw .misconfigured("the s3 backend needs the environment variable AWS_ACCESS_KEY_ID")
        }
        guard let secretKey = value("AWS_SECRET_ACCESS_KEY") else {
            throw .misconfigured("the s3 backend needs the environment variable AWS_SECRET_ACCESS_KEY")
        }
        let credentials = AWSCredentials(
            accessKeyId: accessKey, secretAccessKey: secretKey, sessionToken: value("AWS_SESSION_TOKEN"))
        return S3Configuration(
            endpoint: endpoint, region: region, bucket: bucket, pathStyle: media.pathStyle, credentials: credentials)
    }
}
