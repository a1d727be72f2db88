import Foundation
import Store
import Testing

/// Push devices and the push outbox on both engines: devices capped per account and moved between
/// accounts, pushes written with a job's end (completed or failed only), claimed by one dispatcher
/// at a time, and a device APNs no longer knows removed with its pending pushes.
@Suite("Push devices and outbox on both engines")
struct PushStoreTests {
    static let t0 = StoreBehaviourTests.t0

    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    @Test(arguments: Engine.allCases)
    func devicesAreCappedMovedAndRemoved(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let (other, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)

            guard
                case .created(let first) = try await store.registerDevice(
                    accountId: account.id, token: Self.token(1), environment: .production,
                    limit: 2, now: Self.t0 + 1)
            else { Issue.record("not created"); return }
            #expect(first.environment == .production && first.createdAt == Self.t0 + 1)
            // Known: its environment changes, its creation stays.
            let again = try await store.registerDevice(
                accountId: account.id, token: Self.token(1), environment: .sandbox, limit: 2, now: Self.t0 + 2)
            #expect(
                again
                    == .updated(
                        PushDevice(
                            token: Self.token(1), accountId: account.id, environment: .sandbox, createdAt: Self.t0 + 1,
                            updatedAt: Self.t0 + 2)))
            _ = try await store.registerDevice(
                accountId: account.id, token: Self.token(2), environment: .production, limit: 2, now: Self.t0 + 3)
            // The cap: a third refused, re-registering a known one still fine.
            #expect(
                try await store.registerDevice(
                    accountId: account.id, token: Self.token(3), environment: .production, limit: 2, now: Self.t0 + 4)
                    == .limitReached(limit: 2))
            if case .updated = try await store.registerDevice(
                accountId: account.id, token: Self.token(2), environment: .production, limit: 2,
                now: Self.t0 + 5)
            {
            } else {
                Issue.record("a known device refused at the cap")
            }
            #expect(try await store.devices(accountId: account.id).map(\.token) == [Self.token(1), Self.token(2)])
            let stored = try await store.devices(accountId: account.id)
            #expect(stored.first?.environment == .sandbox && stored.first?.updatedAt == Self.t0 + 2)

            // Another account registering the same token takes it over.
            if case .created = try await store.registerDevice(
                accountId: other.id, token: Self.token(2), environment: .production, limit: 2,
                now: Self.t0 + 6)
            {
            } else {
                Issue.record("the token did not move")
            }
            #expect(try await store.devices(accountId: account.id).map(\.token) == [Self.token(1)])
            #expect(try await store.devices(accountId: other.id).map(\.token) == [Self.token(2)])

            // Only the holder removes it.
            #expect(!(try await store.deleteDevice(accountId: account.id, token: Self.token(2), now: Self.t0 + 7)))
            #expect(try await store.deleteDevice(accountId: other.id, token: Self.token(2), now: Self.t0 + 7))
            #expect(try await store.devices(accountId: other.id).isEmpty)
        }
    }

    @Test(arguments: Engine.allCases)
    func pushesComeWithTheJobsEndAndGoOnce(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let (other, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            for n in 1...3 {
                _ = try await store.registerDevice(
                    accountId: account.id, token: Self.token(n), environment: n == 3 ? .sandbox : .production,
                    limit: 20, now: Self.t0)
            }
            _ = try await store.registerDevice(
                accountId: other.id, token: Self.token(9), environment: .production, limit: 20, now: Self.t0)

            let done = try await Self.completedJobPushesEachDevice(store, account: account)
            let failed = try await Self.failedJobPushesCancelledDoesNot(store, account: account)
            // Two dispatchers on two instances claim at once: each push goes to one of them.
            let second = try await h.secondInstance()
            try await Self.twoDispatchersClaimEachPushOnce(store, second)
            try await Self.holderRecordsAndAGoneDeviceGoes(store, account: account, done: done, failed: failed)
        }
    }

    /// Completed: one push per device of the account, none to the other account's. Returns the job.
    static func completedJobPushesEachDevice(_ store: any MomentsStore, account: Account) async throws -> Job {
        let output = JobOutput(duration: 12, size: 1000, width: 320, height: 180)
        // Completed: one push per device of the account, none to the other account's.
        let done = try await StoreBehaviourTests.accept(store, StoreBehaviourTests.job(account.id, at: Self.t0 + 1))
        _ = try #require(try await store.claimNextJob(worker: "w1", leaseSeconds: 30, now: Self.t0 + 2))
        #expect(
            try await store.complete(
                id: done.id, worker: "w1", output: output, segments: [], processingSeconds: 1,
                workerSeconds: 1, now: Self.t0 + 3))
        let pushes = try await store.pushDeliveries(jobId: done.id)
        #expect(Set(pushes.map(\.token)) == [Self.token(1), Self.token(2), Self.token(3)])
        #expect(
            pushes.allSatisfy {
                $0.status == .pending && $0.nextAttemptAt == Self.t0 + 3 && $0.accountId == account.id
            })
        #expect(pushes.first { $0.token == Self.token(3) }?.environment == .sandbox)
        let payload =
            try JSONSerialization.jsonObject(with: Data(try #require(pushes.first?.payload).utf8)) as? [String: Any]
        #expect(payload?["job_id"] as? String == done.id && payload?["status"] as? String == "completed")
        let alert = (payload?["aps"] as? [String: Any])?["alert"] as? [String: Any]
        #expect(
            alert?["title"] as? String == "Your highlight is ready"
                && alert?["body"] as? String == "Your 12-second highlight is ready to watch.")
        return done
    }

    /// A cancelled job pushes nothing; a failed one (by the operator or the rescuer) pushes to each
    /// device. Returns the failed job.
    static func failedJobPushesCancelledDoesNot(_ store: any MomentsStore, account: Account) async throws -> Job {
        // Cancelled: no push. Failed (operator, rescuer): a push each.
        let cancelled = try await StoreBehaviourTests.accept(
            store, StoreBehaviourTests.job(account.id, at: Self.t0 + 4))
        _ = try await store.cancel(id: cancelled.id, accountId: account.id, now: Self.t0 + 5)
        #expect(try await store.pushDeliveries(jobId: cancelled.id).isEmpty)
        let failed = try await StoreBehaviourTests.accept(
            store, StoreBehaviourTests.job(account.id, at: Self.t0 + 6))
        #expect(
            try await store.fail(
                id: failed.id, worker: nil, code: "no_footage", message: "The video has nothing to show.",
                chargeSeconds: 0, now: Self.t0 + 7))
        let failure = try await store.pushDeliveries(jobId: failed.id)
        #expect(failure.count == 3 && failure.allSatisfy { $0.payload.contains("The video has nothing to show.") })
        return failed
    }

    /// Four claims at once across two instances: the six due pushes go out once in all.
    static func twoDispatchersClaimEachPushOnce(_ store: any MomentsStore, _ second: any MomentsStore) async throws {
        let claims = try await withThrowingTaskGroup(of: [String].self) { group in
            for index in 0..<4 {
                let claimer = index % 2 == 0 ? store : second
                group.addTask {
                    try await claimer.claimDuePushes(
                        worker: "d\(index)", leaseSeconds: 60, limit: 2, now: Self.t0 + 10
                    ).map(\.id)
                }
            }
            var all: [String] = []
            for try await ids in group { all += ids }
            return all
        }
        #expect(claims.count == Set(claims).count && claims.count == 6, "\(claims)")
        #expect(
            try await store.claimDuePushes(worker: "d9", leaseSeconds: 60, limit: 20, now: Self.t0 + 11).isEmpty)
    }

    /// Only the claim's holder records an attempt; a device APNs no longer knows goes with its pending
    /// pushes, and a retried push waits for its next attempt.
    static func holderRecordsAndAGoneDeviceGoes(
        _ store: any MomentsStore, account: Account, done: Job, failed: Job
    ) async throws {
        // The holder records; an intruder cannot.
        let mine = try await store.claimDuePushes(worker: "late", leaseSeconds: 60, limit: 20, now: Self.t0 + 100)
        #expect(mine.count == 6)
        let sent = try #require(mine.first { $0.token == Self.token(1) })
        #expect(
            !(try await store.recordPushAttempt(
                id: sent.id, worker: "intruder", outcome: .sent, statusCode: 200, reason: nil, now: Self.t0 + 101)))
        #expect(
            try await store.recordPushAttempt(
                id: sent.id, worker: "late", outcome: .sent, statusCode: 200, reason: nil, now: Self.t0 + 101))
        let retried = try #require(mine.first { $0.token == Self.token(3) })
        #expect(
            try await store.recordPushAttempt(
                id: retried.id, worker: "late", outcome: .retry(at: Self.t0 + 110), statusCode: 503,
                reason: "ServiceUnavailable", now: Self.t0 + 101))

        // APNs no longer knows token 2: the device goes, with its other pending push.
        let gone = try #require(mine.first { $0.token == Self.token(2) })
        #expect(
            try await store.recordPushAttempt(
                id: gone.id, worker: "late", outcome: .deviceGone, statusCode: 410, reason: "Unregistered",
                now: Self.t0 + 102))
        #expect(try await store.devices(accountId: account.id).map(\.token) == [Self.token(1), Self.token(3)])
        let all = try await store.pushDeliveries(jobId: done.id) + store.pushDeliveries(jobId: failed.id)
        #expect(all.filter { $0.token == Self.token(2) }.allSatisfy { $0.status == .failed })
        #expect(
            all.first { $0.id == sent.id }?.status == .sent
                && all.first { $0.id == sent.id }?.sentAt == Self.t0 + 101)
        let waiting = try #require(all.first { $0.id == retried.id })
        #expect(
            waiting.status == .pending && waiting.attempts == 1 && waiting.lastStatusCode == 503
                && waiting.lastReason == "ServiceUnavailable")
        // Not due before its next attempt; due after. A removed device's push is never claimed again.
        #expect(
            !(try await store.claimDuePushes(worker: "x", leaseSeconds: 60, limit: 20, now: Self.t0 + 200)).contains {
                $0.token == Self.token(2)
            })
    }
}
