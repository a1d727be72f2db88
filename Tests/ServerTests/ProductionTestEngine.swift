import Foundation
import JobMedia
import Logging
import MomentsConfig
import ObjectStorage
import PostgresStore
import Store

/// The production engines for a test server: a fresh PostgreSQL database on the test cluster and
/// the media in a fresh bucket on the S3 test server.
enum ProductionTestEngine {
    static func open(settings: inout ServiceSettings, sandboxForAll: Bool, logger: Logger) async throws -> (
        any MomentsStore, any MediaStorage
    ) {
        let url = try await TestServers.freshDatabase()
        settings.databaseURL = url
        let store = try await PostgresStore.started(url: url, sandboxForAll: sandboxForAll, logger: logger)
        let s3 = try TestServers.s3
        settings.mediaStorage.backend = "s3"
        settings.mediaStorage.endpoint = s3.endpoint
        settings.mediaStorage.region = "us-east-1"
        settings.mediaStorage.bucket = "t-\(UUID().uuidString.prefix(13).lowercased())"
        settings.mediaStorage.pathStyle = true
        let environment = ["AWS_ACCESS_KEY_ID": s3.accessKey, "AWS_SECRET_ACCESS_KEY": s3.secretKey]
        let bucket = S3Client(
            configuration: try MediaStorageFactory.s3Configuration(settings.mediaStorage, environment: environment),
            httpClient: S3MediaStorage.sharedHTTPClient, logger: logger)
        try await bucket.createBucket()
        let media = try MediaStorageFactory.make(
            settings: settings, layout: StorageLayout(root: settings.storagePath),
            environment: environment, logger: logger)
        return (store, media)
    }
}
