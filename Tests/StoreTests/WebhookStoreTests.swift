import Foundation
import Store
import Testing

/// The webhook outbox on both engines: written with the job's final state (and only then), and
/// claimed by one dispatcher at a time.
@Suite("Webhook outbox on both engines")
struct WebhookStoreTests {
    static let t0 = StoreBehaviourTests.t0

    static func deliveries(_ store: any MomentsStore, _ job: Job) async throws -> [WebhookDelivery] {
        try await store.webhookDeliveries(jobId: job.id, accountId: job.accountId).map(\.delivery)
    }

    @Test(arguments: Engine.allCases)
    func outboxRowsComeWithTheFinalStateOnly(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let output = JobOutput(duration: 5, size: 1000, width: 320, height: 180)

            // No endpoint when the job completes: nothing to deliver.
            let before = try await StoreBehaviourTests.accept(store, StoreBehaviourTests.job(account.id))
            _ = try #require(try await store.claimNextJob(worker: "w1", leaseSeconds: 30, now: Self.t0 + 1))
            #expect(
                try await store.complete(
                    id: before.id, worker: "w1", output: output, segments: [], processingSeconds: 1,
                    workerSeconds: 1, now: Self.t0 + 2))
            #expect(try await Self.deliveries(store, before).isEmpty)

            let endpoint = try await store.setWebhookEndpoint(
                accountId: account.id, url: "https://example.com/hook", secret: "whsec_a",
                now: Self.t0 + 3)
            #expect(endpoint.rotatedAt == nil && endpoint.createdAt == Self.t0 + 3)

            // Completed by its holder: one job.completed; a worker that lost the job writes nothing.
            let done = try await StoreBehaviourTests.accept(store, StoreBehaviourTests.job(account.id, at: Self.t0 + 4))
            _ = try #require(try await store.claimNextJob(worker: "w1", leaseSeconds: 30, now: Self.t0 + 5))
            #expect(
                !(try await store.complete(
                    id: done.id, worker: "w2", output: output, segments: [], processingSeconds: 1,
                    workerSeconds: 1, now: Self.t0 + 6)))
            #expect(try await Self.deliveries(store, done).isEmpty)
            #expect(
                try await store.complete(
                    id: done.id, worker: "w1", output: output, segments: [], processingSeconds: 1,
                    workerSeconds: 1, now: Self.t0 + 7))
            let completed = try await Self.deliveries(store, done)
            #expect(completed.map(\.eventType) == [.jobCompleted] && completed.first?.status == .pending)
            #expect(completed.first?.nextAttemptAt == Self.t0 + 7 && completed.first?.attempts == 0)
            let payload = try WebhookPayload.decode(try #require(completed.first?.payload))
            #expect(payload.id == completed.first?.id && payload.type == .jobCompleted && payload.data.jobId == done.id)
            #expect(payload.data.status == .completed && payload.data.progress == 100 && payload.data.resultUrl == nil)

            // Cancelled: job.cancelled; cancelling it again changes nothing.
            let cancelled = try await StoreBehaviourTests.accept(
                store, StoreBehaviourTests.job(account.id, at: Self.t0 + 8))
            _ = try await store.cancel(id: cancelled.id, accountId: account.id, now: Self.t0 + 9)
            _ = try await store.cancel(id: cancelled.id, accountId: account.id, now: Self.t0 + 10)
            #expect(try await Self.deliveries(store, cancelled).map(\.eventType) == [.jobCancelled])

            // Failed by an operator, and failed by the rescuer after too many interruptions.
            let failed = try await StoreBehaviourTests.accept(
                store, StoreBehaviourTests.job(account.id, at: Self.t0 + 11))
            #expect(
                try await store.fail(
                    id: failed.id, worker: nil, code: "bad", message: "Bad.", chargeSeconds: 0, now: Self.t0 + 12))
            let failure = try WebhookPayload.decode(
                try #require(try await Self.deliveries(store, failed).first?.payload))
            #expect(failure.type == .jobFailed && failure.data.errorCode == "bad")
            let stuck = try await StoreBehaviourTests.accept(
                store, StoreBehaviourTests.job(account.id, at: Self.t0 + 13))
            _ = try #require(try await store.claimNextJob(worker: "w1", leaseSeconds: 30, now: Self.t0 + 14))
            let rescued = try await store.rescueExpiredLeases(maxAttempts: 1, backoffSeconds: 10, now: Self.t0 + 100)
            #expect(rescued.failed == [stuck.id])
            #expect(try await Self.deliveries(store, stuck).map(\.eventType) == [.jobFailed])

            // Another account sees none of them.
            let (other, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            #expect(try await store.webhookDeliveries(jobId: done.id, accountId: other.id).isEmpty)

            // PUT again rotates; DELETE removes.
            let rotated = try await store.setWebhookEndpoint(
                accountId: account.id, url: "https://example.com/new", secret: "whsec_b",
                now: Self.t0 + 200)
            #expect(rotated.secret == "whsec_b" && rotated.url == "https://example.com/new")
            #expect(rotated.createdAt == Self.t0 + 3 && rotated.rotatedAt == Self.t0 + 200)
            #expect(try await store.deleteWebhookEndpoint(accountId: account.id))
            #expect(!(try await store.deleteWebhookEndpoint(accountId: account.id)))
            #expect(try await store.webhookEndpoint(accountId: account.id) == nil)
        }
    }

    @Test(arguments: Engine.allCases)
    func claimsLeaseEachDeliveryToOneDispatcher(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            // Five accounts with two events each.
            let (jobs, all) = try await Self.fiveAccountsWithTwoEvents(store)
            var accountOf: [String: String] = [:]
            for delivery in all { accountOf[delivery.id] = delivery.accountId }
            #expect(all.count == 10)
            // Four dispatchers (two of them on another connection or process) claim at once.
            let second = try await h.secondInstance()
            let claims = try await Self.claimAtOnce(store, second)
            let claimed = claims.flatMap { $0 }
            #expect(claimed.count == Set(claimed).count, "no delivery claimed twice: \(claims)")
            #expect(
                Set(claimed.map { accountOf[$0] }).count == claimed.count,
                "one delivery per account at a time: \(claims)")
            // Leased: not claimable again until the lease runs out; nor is any other delivery of an
            // account with one leased.
            let rest = try await store.claimDueWebhooks(worker: "d9", leaseSeconds: 60, limit: 20, now: Self.t0 + 31)
            #expect(Set(rest.map(\.delivery.id)).isDisjoint(with: claimed) && claimed.count + rest.count == 5)
            #expect(Set((claimed + rest.map(\.delivery.id)).map { accountOf[$0] }).count == 5, "each account's first")
            #expect(rest.allSatisfy { $0.endpoint?.secret == "whsec_a" })
            #expect(
                try await store.claimDueWebhooks(worker: "d9", leaseSeconds: 60, limit: 20, now: Self.t0 + 32).isEmpty)

            // Only the holder records an attempt.
            let id = try #require(claims.first(where: { !$0.isEmpty })?.first)
            let holder = "d\(try #require(claims.firstIndex(where: { $0.contains(id) })))"
            let attempt = WebhookAttempt(
                deliveryId: id, number: 1, at: Self.t0 + 32, statusCode: 500, error: nil, durationMs: 12)
            #expect(
                !(try await store.recordWebhookAttempt(
                    attempt, worker: "intruder", outcome: .delivered, now: Self.t0 + 32)))
            #expect(
                try await store.recordWebhookAttempt(
                    attempt, worker: holder, outcome: .retry(at: Self.t0 + 42), now: Self.t0 + 32))
            // Its account is free again: its other delivery comes next; this one is not due before
            // its next attempt.
            let early = try await store.claimDueWebhooks(worker: "d8", leaseSeconds: 60, limit: 20, now: Self.t0 + 41)
            let sibling = try #require(early.first?.delivery.id)
            #expect(
                early.count == 1 && sibling != id && accountOf[sibling] == accountOf[id], "\(early.map(\.delivery.id))")
            let done = WebhookAttempt(
                deliveryId: sibling, number: 1, at: Self.t0 + 41, statusCode: 200, error: nil, durationMs: 5)
            #expect(try await store.recordWebhookAttempt(done, worker: "d8", outcome: .delivered, now: Self.t0 + 41))
            let due = try await store.claimDueWebhooks(worker: "d8", leaseSeconds: 60, limit: 20, now: Self.t0 + 42)
            #expect(due.map(\.delivery.id) == [id])
            let success = WebhookAttempt(
                deliveryId: id, number: 2, at: Self.t0 + 43, statusCode: 204, error: nil, durationMs: 7)
            #expect(try await store.recordWebhookAttempt(success, worker: "d8", outcome: .delivered, now: Self.t0 + 43))
            // Delivered: never claimed again, and its log has both attempts in order.
            let later = try await store.claimDueWebhooks(worker: "d7", leaseSeconds: 60, limit: 20, now: Self.t0 + 1000)
            #expect(!later.map(\.delivery.id).contains(id) && !later.map(\.delivery.id).contains(sibling))
            #expect(
                Set(later.map { accountOf[$0.delivery.id] }).count == later.count && later.count == 4,
                "the other four accounts' (expired leases): \(later.map(\.delivery.id))")
            let logs = try await Self.logs(store, jobs)
            let entry = try #require(logs.first { $0.delivery.id == id })
            #expect(logs.count == 10)
            #expect(
                entry.delivery.status == .delivered && entry.delivery.deliveredAt == Self.t0 + 43
                    && entry.delivery.attempts == 2)
            #expect(
                entry.delivery.lastStatusCode == 204 && entry.delivery.nextAttemptAt == nil
                    && entry.delivery.leaseOwner == nil)
            #expect(entry.attempts.map(\.statusCode) == [500, 204] && entry.attempts.map(\.durationMs) == [12, 7])
        }
    }

    /// Accounts whose endpoint is failing (a pending delivery of theirs was attempted already)
    /// are claimed within `failingLimit`, the others first whatever their order; each claim says
    /// which it is.
    @Test(arguments: Engine.allCases)
    func failingEndpointsAreClaimedWithinTheirLimit(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (_, all) = try await Self.fiveAccountsWithTwoEvents(store)
            let first = try await store.claimDueWebhooks(
                worker: "d1", leaseSeconds: 60, limit: 10, failingLimit: 10, now: Self.t0 + 30)
            #expect(first.count == 5 && first.allSatisfy { !$0.failing }, "none attempted yet")
            // The first three accounts' endpoints fail (retry soon); the last two deliver.
            let order = first.map(\.delivery.accountId)
            let failing = Set(order.prefix(3))
            for claim in first {
                let attempt = WebhookAttempt(
                    deliveryId: claim.delivery.id, number: 1, at: Self.t0 + 30, statusCode: nil, error: "no answer",
                    durationMs: 10_000)
                let outcome: WebhookOutcome =
                    failing.contains(claim.delivery.accountId) ? .retry(at: Self.t0 + 31) : .delivered
                #expect(
                    try await store.recordWebhookAttempt(attempt, worker: "d1", outcome: outcome, now: Self.t0 + 30))
            }
            // Due now: each account's second event (and the failing ones' first, due later).
            let second = try await store.claimDueWebhooks(
                worker: "d2", leaseSeconds: 60, limit: 10, failingLimit: 1, now: Self.t0 + 40)
            #expect(second.count == 3, "\(second.map(\.delivery.accountId))")
            #expect(second.filter(\.failing).count == 1 && second.filter { !$0.failing }.count == 2)
            #expect(second.allSatisfy { $0.failing == failing.contains($0.delivery.accountId) })
            let retried = try #require(second.first { $0.failing })
            #expect(
                retried.delivery.attempts == 0,
                "the account's oldest due delivery, never tried itself, is in the failing account's share")
            #expect(Set(second.map(\.delivery.accountId)).count == 3, "one per account")
            // No room for failing endpoints: the other two failing accounts wait.
            #expect(
                try await store.claimDueWebhooks(
                    worker: "d3", leaseSeconds: 60, limit: 10, failingLimit: 0, now: Self.t0 + 40
                ).isEmpty)
            let rest = try await store.claimDueWebhooks(
                worker: "d3", leaseSeconds: 60, limit: 10, failingLimit: 5, now: Self.t0 + 40)
            #expect(rest.count == 2 && rest.allSatisfy(\.failing))
            #expect(Set((second + rest).map(\.delivery.id)).count == 5 && all.count == 10)
        }
    }

    /// Five accounts with a webhook endpoint and two events each (cancelled jobs), and the
    /// deliveries written for them.
    static func fiveAccountsWithTwoEvents(_ store: any MomentsStore) async throws -> ([Job], [WebhookDelivery]) {
        var jobs: [Job] = []
        for a in 0..<5 {
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            _ = try await store.setWebhookEndpoint(
                accountId: account.id, url: "https://example.com/hook\(a)", secret: "whsec_a", now: Self.t0)
            for i in 0..<2 {
                let job = try await StoreBehaviourTests.accept(
                    store, StoreBehaviourTests.job(account.id, at: Self.t0 + Double(a * 2 + i)))
                _ = try await store.cancel(id: job.id, accountId: account.id, now: Self.t0 + 20)
                jobs.append(job)
            }
        }
        let all = try await withThrowingTaskGroup(of: [WebhookDelivery].self) { group in
            for job in jobs { group.addTask { try await Self.deliveries(store, job) } }
            var all: [WebhookDelivery] = []
            for try await log in group { all += log }
            return all
        }
        return (jobs, all)
    }

    /// Four dispatchers, alternating between `store` and `second`, claim up to three deliveries
    /// each at once. Indexed by dispatcher (the group answers in completion order, not in index order).
    static func claimAtOnce(_ store: any MomentsStore, _ second: any MomentsStore) async throws -> [[String]] {
        try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
            for index in 0..<4 {
                let claimer = index % 2 == 0 ? store : second
                group.addTask {
                    (
                        index,
                        try await claimer.claimDueWebhooks(
                            worker: "d\(index)", leaseSeconds: 60, limit: 3, now: Self.t0 + 30
                        )
                        .map(\.delivery.id)
                    )
                }
            }
            var all = [[String]](repeating: [], count: 4)
            for try await (index, ids) in group { all[index] = ids }
            return all
        }
    }

    /// The delivery logs of `jobs`, with their attempts.
    static func logs(_ store: any MomentsStore, _ jobs: [Job]) async throws
        -> [(delivery: WebhookDelivery, attempts: [WebhookAttempt])]
    {
        try await withThrowingTaskGroup(of: [(delivery: WebhookDelivery, attempts: [WebhookAttempt])].self) { group in
            for job in jobs {
                group.addTask { try await store.webhookDeliveries(jobId: job.id, accountId: job.accountId) }
            }
            var all: [(delivery: WebhookDelivery, attempts: [WebhookAttempt])] = []
            for try await log in group { all += log }
            return all
        }
    }
}
