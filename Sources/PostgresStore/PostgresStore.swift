import Foundation
import Store
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The store on PostgreSQL: many API and worker processes on many hosts share one database.
/// Same semantics as `AppDatabase` method by method; where SQLite relies on its single writer,
/// this engine takes row locks (`SELECT … FOR UPDATE`, `FOR UPDATE SKIP LOCKED` for the claim) in
/// the method's one transaction. Events travel by LISTEN/NOTIFY, sent inside the transactions that
/// cause them (delivered only if they commit).
///
/// A Service: `run()` runs the connection pool, migrates the schema and listens for events, until
/// graceful shutdown or `close()`; `moments serve` and `worker` run it first in their ServiceGroup
/// (so it stops last). Calls made before it has started wait for it; if it could not start, they
/// fail with the reason.
public final class PostgresStore: MomentsStore, Service {
    /// The pool, whether or not it runs yet (`client` waits until it does).
    let pool: PostgresClient
    public let sandboxForAll: Bool
    let logger: Logger
    let hub: EventHub
    /// The key-use writes still running (fire and forget for the request, awaitable for tests).
    let keyUses = BackgroundWrites()
    /// Opened once the schema is migrated and LISTEN is in place (or with the reason it is not).
    private let started = StartGate()
    /// Opened when `run()` has ended.
    private let ended = StartGate()
    /// Finished by `close()`; `run()` waits on it (an AsyncStream's wait ends on cancellation too).
    private let stopRequested: AsyncStream<Void>
    private let stopRequest: AsyncStream<Void>.Continuation
    private let running = Atomic<Bool>(false)

    /// The pool, once the store runs with its schema in place.
    public var client: PostgresClient {
        get async throws {
            try await started.wait()
            return pool
        }
    }

    public var engine: String { "postgresql" }
    public var isExclusive: Bool { false }

    /// Channels of the events (NOTIFY inside the transactions that cause them).
    static let queuedChannel = "moments_jobs"
    static let cancelChannel = "moments_cancel"
    /// Sent by a trigger on `job` (migration 9) when what its event stream shows changes.
    static let jobChangedChannel = "moments_job_changed"

    /// Connects to the database at `url` (postgres://user:password@host:5432/database?sslmode=…),
    /// migrates it to the current schema and starts listening for the store's events.
    public convenience init(url: String, sandboxForAll: Bool = false, logger: Logger) async throws {
        let parts = try PostgresURL.parse(url)
        try await Self.probe(parts, logger: logger)
        self.init(configuration: parts.clientConfiguration, sandboxForAll: sandboxForAll, logger: logger)
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

    public init(configuration: PostgresClient.Configuration, sandboxForAll: Bool = false, logger: Logger) {
        // The client's background log says little the store does not (a failed connection surfaces
        // as the error of the call that needed it), and warns when a call beats `run()` starting.
        var background = logger
        background.logLevel = max(logger.logLevel, .error)
        pool = PostgresClient(configuration: configuration, backgroundLogger: background)
        hub = EventHub()
        (stopRequested, stopRequest) = AsyncStream.makeStream()
        self.sandboxForAll = sandboxForAll
        self.logger = logger
    }

    /// Runs the pool, migrates the schema (once across processes: an advisory lock), listens for
    /// the store's events, and opens the store to its callers; until graceful shutdown or `close()`.
    public func run() async throws {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        defer {
            hub.finish()
            ended.open(.success(()))
        }
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await self.pool.run() }
            do {
                try await PostgresMigrations.migrate(pool, logger: logger)
            } catch {
                let failure = PostgresStoreError.unavailable(
                    "could not prepare the PostgreSQL database (schema migration): \(Self.reason(error))")
                started.open(.failure(failure))
                throw failure
            }
            let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
            group.addTask {
                await Self.listen(client: self.pool, hub: self.hub, logger: self.logger, ready: readyContinuation)
            }
            // Events are delivered from the moment the store opens: wait (bounded) for LISTEN.
            await withTaskGroup(of: Void.self) { wait in
                wait.addTask { for await _ in ready { return } }
                wait.addTask { try? await Task.sleep(for: .seconds(10)) }
                await wait.next()
                wait.cancelAll()
            }
            started.open(.success(()))
            await cancelWhenGracefulShutdown { for await _ in self.stopRequested {} }
            group.cancelAll()
        }
    }

    /// Waits until the store runs with its schema in place; throws why it could not start.
    public func ready() async throws { try await started.wait() }

    public func events() -> AsyncStream<StoreEvent> { hub.subscribe() }

    public func checkWritable(now: Date) async throws {
        try await execute(
            "INSERT INTO heartbeat (id, at) VALUES (1, \(now)) ON CONFLICT (id) DO UPDATE SET at = excluded.at")
    }

    /// Stops `run()` (listening, every connection) and waits for it to end. Further use throws.
    public func close() async throws {
        started.open(.failure(PostgresStoreError.unavailable("the store was closed")))
        stopRequest.finish()
        if running.load(ordering: .relaxed) { try? await ended.wait() }
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

/// A one-time gate: callers wait until it is opened with a result, then all get that result.
final class StartGate: Sendable {
    private let state = Mutex<(result: Result<Void, any Error>?, waiters: [CheckedContinuation<Void, any Error>])>(
        (nil, []))

    func wait() async throws {
        if let result = state.withLock({ $0.result }) { return try result.get() }
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            let result = state.withLock { state -> Result<Void, any Error>? in
                if state.result == nil { state.waiters.append(waiter) }
                return state.result
            }
            if let result { waiter.resume(with: result) }
        }
    }

    /// The first result wins; later ones are ignored.
    func open(_ result: Result<Void, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard state.result == nil else { return [] }
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
