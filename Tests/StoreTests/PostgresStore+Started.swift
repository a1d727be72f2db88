import Logging
import PostgresStore

extension PostgresStore {
    /// A store running for the rest of the test process (or until `close()`), its schema in place:
    /// in the service it runs in the process's ServiceGroup instead.
    static func started(url: String, sandboxForAll: Bool = false, logger: Logger) async throws -> PostgresStore {
        let store = try await PostgresStore(url: url, sandboxForAll: sandboxForAll, logger: logger)
        Task { try? await store.run() }
        try await store.ready()
        return store
    }
}
