import Foundation
import JobStore
import Logging
import MomentsConfig

/// Filled in once the PostgreSQL store and the S3 media storage are merged.
enum ProductionTestEngine {
    static func openStore(settings: inout ServiceSettings, sandboxForAll: Bool, logger: Logger) async throws -> (any MomentsStore)? {
        throw MissingTestServer(what: "the production engines", how: "merge them")
    }
}
