import Foundation
import Store
import Logging
import PostgresNIO

/// The store on PostgreSQL: many API and worker processes on many hosts share one database.
/// Same semantics as `AppDatabase` method by method; where SQLite relies on its single writer,
/// this engine takes row locks (`SELECT … FOR UPDATE`, `FOR UPDATE SKIP LOCKED` for the claim) in
/// the method's one transaction. Events travel by LISTEN/NOTIFY, sent inside the transactions that
/// cause them (delivered only if they commit).
public final class PostgresStore: MomentsStore {
    public let client: PostgresClient
    public let sandboxForAll: Bool
    let logger: Logger
    let hub: EventHub
    private let runTask: Task<Void, Never>
    private let listenerTask: Task<Void, Never>

    public var engine: String { "postgresql" }
    public var isExclusive: Bool { false }

    /// Channels of the events (NOTIFY inside the transactions that cause them).
    static let queuedChannel = "moments_jobs"
    static let cancelChannel = "moments_cancel"

    /// Connects to the database at `url` (postgres://user:password@host:5432/database?sslmode=…),
    /// migrates it to the current schema and starts listening for the store's events.
    public convenience init(url: String, sandboxForAll: Bool = false, logger: Logger) async throws {
        let parts = try PostgresURL.parse(url)
        try await Self.probe(parts, logger: logger)
        try await self.init(configuration: parts.clientConfiguration, sandboxForAll: sandboxForAll, logger: logger)
    }

    /// One connection made and closed: a server that is down, a wrong password or a missing
    /// database is reported at once with its reason (the pool would retry for a minute and then
    /// report only that it gave up).
    static func probe(_ parts: PostgresURL.Parts, logger: Logger) async throws {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try parts.connectionConfiguration(), id: 0, logger: logger)
            try? await connection.close()
        } catch {
            throw PostgresStoreError.unavailable(
                "could not connect to PostgreSQL as \(parts.redacted): \(reason(error))")
        }
    }

    /// The server's message, or the connection error, without the query or the code location.
    static func reason(_ error: any Error) -> String {
        if let error = error as? PostgresTransactionError,
            let cause = error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError
        {
            return reason(cause)
        }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            if let underlying = error.underlying { return String(describing: underlying) }
            return "\(error.code)"
        }
        return String(describing: error)
    }

    public init(configuration: PostgresClient.Configuration, sandboxForAll: Bool = false, logger: Logger) async throws {
        // The client's background log says little the store does not (a failed connection surfaces
        // as the error of the call that needed it), and warns when a call beats `run()` starting.
        var background = logger
        background.logLevel = max(logger.logLevel, .error)
        let client = PostgresClient(configuration: configuration, backgroundLogger: background)
        let hub = EventHub()
        self.client = client
        self.hub = hub
        self.sandboxForAll = sandboxForAll
        self.logger = logger
        runTask = Task { await client.run() }
        do {
            try await PostgresMigrations.migrate(client, logger: logger)
        } catch {
            runTask.cancel()
            await runTask.value
            throw PostgresStoreError.unavailable(
                "could not prepare the PostgreSQL database (schema migration): \(Self.reason(error))")
        }
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        listenerTask = Task {
            await Self.listen(client: client, hub: hub, logger: logger, ready: readyContinuation)
        }
        // Events are delivered from the moment init returns: wait (bounded) for LISTEN to be in place.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in ready { return } }
            group.addTask { try? await Task.sleep(for: .seconds(10)) }
            await group.next()
            group.cancelAll()
        }
    }

    public func events() -> AsyncStream<StoreEvent> { hub.subscribe() }

    public func checkWritable(now: Date) async throws {
        try await execute(
            "INSERT INTO heartbeat (id, at) VALUES (1, \(now)) ON CONFLICT (id) DO UPDATE SET at = excluded.at")
    }

    /// Stops listening and closes every connection. Further use throws.
    public func close() async throws {
        listenerTask.cancel()
        await listenerTask.value
        runTask.cancel()
        await runTask.value
        hub.finish()
    }

    // MARK: Running statements

    /// One consistent change: `body` runs in a transaction on one connection (committed when it
    /// returns, rolled back when it throws).
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withConnection { connection in
                try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
            }
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error.commitError ?? error.beginError ?? error
        }
    }

    /// One statement outside any explicit transaction; its rows.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await client.query(query, logger: logger).collect()
    }

    func execute(_ query: PostgresQuery) async throws {
        _ = try await client.query(query, logger: logger).collect()
    }
}

public enum PostgresStoreError: Error, CustomStringConvertible, Sendable {
    case unavailable(String)
    case corrupt(String)
    public var description: String {
        switch self {
        case .unavailable(let text), .corrupt(let text): return text
        }
    }
}

extension PostgresConnection {
    /// The rows of one statement run on this connection (inside the caller's transaction).
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await self.query(query, logger: logger).collect()
    }

    /// Runs one statement; the number of rows it returned (use RETURNING to count changed rows).
    @discardableResult
    func run(_ query: PostgresQuery, logger: Logger) async throws -> Int {
        try await self.query(query, logger: logger).collect().count
    }
}
