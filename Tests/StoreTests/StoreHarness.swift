import Foundation
import Store
import Logging
import PostgresNIO
import PostgresStore
import Testing

/// The two engines of the store; every behaviour test runs against both.
enum Engine: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgresql
    var testDescription: String { rawValue }
}

/// One test's store: SQLite on a temporary file, or PostgreSQL in a database of its own created
/// from MOMENTS_TEST_DATABASE_URL (dropped at the end).
final class StoreHarness: @unchecked Sendable {
    let engine: Engine
    let store: any MomentsStore
    private var others: [any MomentsStore] = []
    private let open: @Sendable () async throws -> any MomentsStore
    private let cleanup: @Sendable () async throws -> Void

    static let logger: Logger = {
        var logger = Logger(label: "StoreTests")
        logger.logLevel = .error
        return logger
    }()

    static let setupHint = """
        MOMENTS_TEST_DATABASE_URL is not set: the PostgreSQL cases need a server. Run \
        `eval "$(scripts/pg-test-server start)"` first (scripts/pg-test-server stop afterwards).
        """

    private init(
        engine: Engine, open: @escaping @Sendable () async throws -> any MomentsStore,
        cleanup: @escaping @Sendable () async throws -> Void
    ) async throws {
        self.engine = engine
        self.open = open
        self.cleanup = cleanup
        store = try await open()
    }

    /// Another instance on the same database (another process, as far as the engine can tell).
    func secondInstance() async throws -> any MomentsStore {
        let other = try await open()
        others.append(other)
        return other
    }

    /// Runs `body` with a fresh store of `engine`, then closes it and removes its database.
    static func with(_ engine: Engine, _ body: (StoreHarness) async throws -> Void) async throws {
        let harness = try await make(engine)
        do {
            try await body(harness)
        } catch {
            try? await harness.close()
            throw error
        }
        try await harness.close()
    }

    private func close() async throws {
        for other in others { try await other.close() }
        try await store.close()
        try await cleanup()
    }

    private static func make(_ engine: Engine) async throws -> StoreHarness {
        switch engine {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moments-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let path = folder.appendingPathComponent("moments.sqlite").path
            return try await StoreHarness(
                engine: engine, open: { try SQLiteEngine.open(path: path) },
                cleanup: { try? FileManager.default.removeItem(at: folder) })
        case .postgresql:
            guard let url = ProcessInfo.processInfo.environment["MOMENTS_TEST_DATABASE_URL"], !url.isEmpty else {
                Issue.record(Comment(rawValue: setupHint))
                throw HarnessError.noDatabase
            }
            let name = "moments_t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            try await admin(url) { client in
                _ = try await client.query("CREATE DATABASE \(unescaped: name)").collect()
            }
            var parts = URLComponents(string: url)!
            parts.path = "/" + name
            let databaseURL = parts.string!
            return try await StoreHarness(
                engine: engine,
                open: {
                    try await PostgresStore.started(url: databaseURL, logger: StoreHarness.logger)
                },
                cleanup: {
                    try await admin(url) { client in
                        _ = try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)").collect()
                    }
                })
        }
    }

    /// A short-lived client on the server's maintenance database.
    private static func admin(_ url: String, _ body: (PostgresClient) async throws -> Void) async throws {
        let client = PostgresClient(configuration: try PostgresURL.configuration(url), backgroundLogger: logger)
        let run = Task { await client.run() }
        defer { run.cancel() }
        try await body(client)
    }
}

enum HarnessError: Error { case noDatabase }
