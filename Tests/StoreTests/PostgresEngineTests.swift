import Foundation
import Store
import PostgresNIO
import PostgresStore
import Synchronization
import Testing

/// What only the PostgreSQL engine has: its URL, its schema migrations, its listening connection.
@Suite("PostgreSQL engine")
struct PostgresEngineTests {
    @Test func urlsAreParsedWithDecodedCredentialsAndDefaults() throws {
        let full = try PostgresURL.configuration(
            "postgresql://moments%40app:p%3Ass%2Fw0rd@db.example.com:6432/moments_prod?sslmode=disable")
        #expect(full.username == "moments@app" && full.password == "p:ss/w0rd")
        #expect(full.host == "db.example.com" && full.port == 6432 && full.database == "moments_prod")

        let short = try PostgresURL.configuration("postgres://moments@localhost")
        #expect(short.port == 5432 && short.database == "moments" && short.password == nil)

        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            _ = try PostgresURL.configuration("postgres://u:secret@h/db?sslmode=\(mode)")
        }
    }

    @Test func refusedURLsNeverRepeatThePassword() {
        for url in [
            "postgres://u:hunter2@h/db?sslmode=sometimes", "mysql://u:hunter2@h/db", "postgres://:hunter2@h/db",
            "postgres://u:hunter2@h/db?password=x", "not a url hunter2"
        ] {
            #expect {
                _ = try PostgresURL.configuration(url)
            } throws: { error in
                !"\(error)".contains("hunter2") && !String(reflecting: error).contains("hunter2")
            }
        }
    }

    @Test func unreachableServerFailsAtOnceWithItsReasonAndNoPassword() async {
        let start = ContinuousClock.now
        await #expect {
            _ = try await PostgresStore(
                url: "postgres://moments:hunter2@127.0.0.1:1/moments?sslmode=disable", logger: StoreHarness.logger)
        } throws: { error in
            let text = "\(error)"
            return text.contains("moments@127.0.0.1:1/moments") && text.contains("refused") && !text.contains("hunter2")
        }
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func storesStartingTogetherMigrateOnce() async throws {
        try await StoreHarness.with(.postgresql) { h in
            // Three more processes opening the same database at once: the advisory lock makes them
            // take turns, and the schema is recorded once.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 { group.addTask { _ = try await h.secondInstance() } }
                try await group.waitForAll()
            }
            let store = try #require(h.store as? PostgresStore)
            let versions = try await store.client.query("SELECT version FROM moments_schema_migration").collect()
                .map { try $0.decode(Int.self) }
            // Every migration recorded exactly once (however many the schema has).
            #expect(versions.count == Set(versions).count && versions.contains(1), "\(versions)")
            #expect(store.engine == "postgresql" && !store.isExclusive)
            try await store.checkWritable(now: Date())
        }
    }

    @Test func listenerConnectsAgainAfterLosingItsConnection() async throws {
        try await StoreHarness.with(.postgresql) { h in
            let api = h.store
            let worker = try #require(try await h.secondInstance() as? PostgresStore)
            let (account, _) = try await api.createAccount(label: nil, plan: "free", now: Date())
            let recorder = EventRecorder(worker.events())
            defer { recorder.stop() }
            // The server drops the worker's listening connection (a failover, a restart, a proxy).
            let dropped = try await worker.client.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'
                """
            ).collect()
            #expect(dropped.count >= 1)
            // Connected again: one jobQueued (notifications may have been missed meanwhile)...
            #expect(
                await recorder.wait(seconds: 5) { $0.contains(.jobQueued) },
                "no jobQueued after the listener reconnected")
            // ...and it hears the other process again.
            let job = StoreBehaviourTests.job(account.id, at: Date())
            try await api.insertUnmetered(job)
            _ = try await api.cancel(id: job.id, accountId: account.id, now: Date())
            #expect(
                await recorder.wait(seconds: 2) { $0.contains(.jobCancelled(id: job.id)) },
                "the reconnected listener missed a cancel")
        }
    }

    @Test func closedStoreRefusesFurtherUse() async throws {
        try await StoreHarness.with(.postgresql) { h in
            let other = try await h.secondInstance()
            let stream = other.events()
            try await other.close()
            var iterator = stream.makeAsyncIterator()
            #expect(await iterator.next() == nil)
            await #expect(throws: (any Error).self) { _ = try await other.job(id: "x") }
        }
    }

}

/// Records a store's events as they arrive.
final class EventRecorder: Sendable {
    private final class Seen: Sendable { let events = Mutex<[StoreEvent]>([]) }
    private let box = Seen()
    private let task: Task<Void, Never>

    init(_ events: AsyncStream<StoreEvent>) {
        let box = self.box
        task = Task { for await event in events { box.events.withLock { $0.append(event) } } }
    }

    /// Whether what was seen satisfies `condition` within `seconds`.
    func wait(seconds: Double, _ condition: ([StoreEvent]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if box.events.withLock({ condition($0) }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return box.events.withLock { condition($0) }
    }

    func stop() { task.cancel() }
}
