import Foundation
import JobStore
import Logging
import MomentsConfig
import PostgresStore

/// The production engines for a test server: a fresh PostgreSQL database on the test cluster and
/// the media in a fresh bucket on the S3 test server.
enum ProductionTestEngine {
    static func openStore(settings: inout ServiceSettings, sandboxForAll: Bool, logger: Logger) async throws -> (any MomentsStore)? {
        let url = try TestServers.freshDatabase()
        settings.databaseURL = url
        return try await PostgresStore(url: url, sandboxForAll: sandboxForAll, logger: logger)
    }
}
