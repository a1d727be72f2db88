import Foundation
import Store
import Testing

/// The store's events on both engines: a queued job and a cancel reach the other instances.
extension StoreBehaviourTests {
    @Test(arguments: Engine.allCases)
    func insertAnnouncesAQueuedJob(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let events = store.events()
            let waiter = Task {
                for await event in events where event == .jobQueued { return true }; return false
            }
            _ = try await Self.accept(store, Self.job(account.id))
            #expect(await Self.within(seconds: 1, waiter), "no jobQueued event within a second of the insert")
        }
    }

    @Test(arguments: Engine.allCases)
    func cancelReachesTheWorkersStore(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            // PostgreSQL: another process's store. SQLite: events come from this process only.
            let workerSide = engine == .postgresql ? try await h.secondInstance() : store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let job = try await Self.accept(store, Self.job(account.id))
            _ = try #require(try await workerSide.claimNextJob(worker: "w1", leaseSeconds: 60, now: Self.t0 + 1))
            let events = workerSide.events()
            let id = job.id
            let waiter = Task {
                for await event in events where event == .jobCancelled(id: id) { return true }; return false
            }
            let result = try #require(try await store.cancel(id: job.id, accountId: account.id, now: Self.t0 + 2))
            #expect(result.previous == .processing)
            #expect(
                await Self.within(seconds: 1, waiter), "the cancel did not reach the worker's store within a second")
            #expect(
                try await workerSide.renewLeases(worker: "w1", jobIDs: [job.id], leaseSeconds: 60, now: Self.t0 + 3)
                    == [])
        }
    }

    /// True when `task` returned true within `seconds` (it is cancelled otherwise).
    static func within(seconds: Double, _ task: Task<Bool, Never>) async -> Bool {
        let timer = Task {
            try? await Task.sleep(for: .seconds(seconds)); task.cancel()
        }
        let value = await task.value
        timer.cancel()
        return value
    }
}
