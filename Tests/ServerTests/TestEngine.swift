import Foundation
import JobMedia
import Logging
import MomentsConfig
import Store
import Testing

/// The engines the service tests run on: `MOMENTS_TEST_ENGINE` unset or `sqlite` = the embedded
/// defaults (SQLite + the filesystem); `postgresql+s3` = the production shape (a fresh PostgreSQL
/// database per server on the test cluster, media in a fresh S3 bucket on moto). `make test` runs
/// the service tests once on each.
enum TestEngine: String {
    case embedded = "sqlite"
    case production = "postgresql+s3"

    static let current: TestEngine = {
        let name = ProcessInfo.processInfo.environment["MOMENTS_TEST_ENGINE"] ?? ""
        return name.isEmpty ? .embedded : TestEngine(rawValue: name) ?? .embedded
    }()

    /// True on the embedded engines: for tests of what only they have (the storage lock, start-up
    /// recovery of a store the process has to itself, files on the local disk).
    static var isEmbedded: Bool { current == .embedded }

    /// The store and media storage a test server uses (nil: the service opens SQLite and the
    /// folders in its storage path), with the settings that say so.
    func open(settings: inout ServiceSettings, sandboxForAll: Bool, logger: Logger) async throws -> (
        store: (any MomentsStore)?, media: (any MediaStorage)?
    ) {
        switch self {
        case .embedded:
            return (nil, nil)
        case .production:
            let (store, media) = try await ProductionTestEngine.open(
                settings: &settings, sandboxForAll: sandboxForAll, logger: logger)
            return (store, media)
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// For suites whose assertions do not depend on the store or the media storage (the sandbox,
    /// the transport, configuration, the studio's files): run once, in the embedded tier.
    static var onceAcrossEngines: Self {
        .enabled(if: TestEngine.isEmbedded, "does not depend on the engines: runs once, in the embedded tier")
    }
}
