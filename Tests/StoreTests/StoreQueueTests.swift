import Foundation
import Store
import Testing

/// The job queue on both engines: fair claims, leases that guard every worker write, rescue.
extension StoreBehaviourTests {
    @Test(arguments: Engine.allCases)
    func claimIsFairAcrossAccounts(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (busy, _) = try await store.createAccount(label: "busy", plan: "free", now: Self.t0)
            let (quiet, _) = try await store.createAccount(label: "quiet", plan: "free", now: Self.t0)
            let b1 = try await Self.accept(store, Self.job(busy.id, at: Self.t0))
            let b2 = try await Self.accept(store, Self.job(busy.id, at: Self.t0 + 1))
            let b3 = try await Self.accept(store, Self.job(busy.id, at: Self.t0 + 2))
            let q1 = try await Self.accept(store, Self.job(quiet.id, at: Self.t0 + 3))
            // A job waiting out a retry backoff is not runnable yet.
            var order: [String] = []
            for i in 0..<4 {
                let job = try #require(
                    try await store.claimNextJob(worker: "w\(i)", leaseSeconds: 60, now: Self.t0 + 10 + Double(i)))
                #expect(
                    job.status == .processing && job.attempts == 1 && job.leaseOwner == "w\(i)"
                        && job.message == "Starting")
                #expect(job.leaseExpiresAt == Self.t0 + 70 + Double(i))
                order.append(job.id)
            }
            // Busy's oldest, then quiet (no job running), then busy's others.
            #expect(order == [b1.id, q1.id, b2.id, b3.id])
            #expect(try await store.claimNextJob(worker: "w9", leaseSeconds: 60, now: Self.t0 + 20) == nil)
            let stats = try await store.queueStatistics(now: Self.t0 + 20)
            #expect(stats.pending == 0 && stats.processing == 4 && stats.oldestPendingSeconds == nil)
        }
    }

    @Test(arguments: Engine.allCases)
    func concurrentClaimersNeverShareAJob(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let second = try await h.secondInstance()
            var ids = Set<String>()
            for a in 0..<3 {
                let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
                for i in 0..<10 {
                    ids.insert(try await Self.accept(store, Self.job(account.id, at: Self.t0 + Double(a * 10 + i))).id)
                }
            }
            let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
                for worker in 0..<10 {
                    let claimer = worker % 2 == 0 ? store : second
                    group.addTask {
                        var mine: [String] = []
                        while let job = try await claimer.claimNextJob(
                            worker: "w\(worker)", leaseSeconds: 60, now: Self.t0 + 100)
                        {
                            mine.append(job.id)
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(claimed.count == 30)
            #expect(Set(claimed) == ids)
        }
    }

    @Test(arguments: Engine.allCases)
    func leasesGuardEveryWorkerWriteAndRescueRequeuesThenFails(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let job = try await Self.accept(store, Self.job(account.id))
            let other = try await Self.accept(store, Self.job(account.id, at: Self.t0 + 1))
            try await Self.onlyTheLeaseOwnerRenewsAndReports(store, job: job, other: other)
            try await Self.rescueRequeuesAndLocksOutTheStaleOwner(store, job: job)
            try await Self.backoffThenFailForGood(store, account: account, job: job, other: other)
            try await Self.heldJobRetriesLater(store, account: account)
        }
    }

    /// The worker holding `job` (claimed first) renews its lease and reports progress, which never
    /// goes back; another worker renews nothing.
    static func onlyTheLeaseOwnerRenewsAndReports(_ store: any MomentsStore, job: Job, other: Job) async throws {
        _ = try #require(try await store.claimNextJob(worker: "w1", leaseSeconds: 30, now: Self.t0 + 10))
        #expect(
            try await store.renewLeases(
                worker: "w1", jobIDs: [job.id, other.id], leaseSeconds: 30, now: Self.t0 + 20) == [job.id])
        #expect(
            try await store.renewLeases(worker: "w2", jobIDs: [job.id], leaseSeconds: 30, now: Self.t0 + 20) == [])
        #expect(try await store.job(id: job.id)?.leaseExpiresAt == Self.t0 + 50)
        #expect(
            try await store.updateProgress(
                id: job.id, worker: "w1", progress: 40, stage: "analysing", message: "Analysing", now: Self.t0 + 21)
        )
        #expect(
            try await store.updateProgress(
                id: job.id, worker: "w1", progress: 10, stage: "analysing", message: "Analysing", now: Self.t0 + 22)
        )
        #expect(try await store.job(id: job.id)?.progress == 40)
    }

    /// An expired lease puts the job back in the queue with a backoff; its stale owner can write nothing.
    static func rescueRequeuesAndLocksOutTheStaleOwner(_ store: any MomentsStore, job: Job) async throws {
        // Not expired yet: nothing rescued.
        let early = try await store.rescueExpiredLeases(maxAttempts: 2, backoffSeconds: 10, now: Self.t0 + 49)
        #expect(early.requeued.isEmpty && early.failed.isEmpty)
        // Expired: back in the queue, attempt counted, backoff 10·2^0.
        let rescued = try await store.rescueExpiredLeases(maxAttempts: 2, backoffSeconds: 10, now: Self.t0 + 60)
        #expect(rescued.requeued == [job.id] && rescued.failed.isEmpty)
        let waiting = try #require(try await store.job(id: job.id))
        #expect(waiting.status == .pending && waiting.attempts == 1 && waiting.runAfter == Self.t0 + 70)
        #expect(waiting.message == "Waiting in the queue (processing was interrupted; attempt 2 of 2 next)")

        // The stale owner can do nothing about it any more.
        let output = JobOutput(duration: 30, size: 1, width: 2, height: 2)
        #expect(
            try await !store.complete(
                id: job.id, worker: "w1", output: output, segments: [], processingSeconds: 1, workerSeconds: 1,
                now: Self.t0 + 61))
        #expect(
            try await !store.fail(
                id: job.id, worker: "w1", code: "x", message: "x", chargeSeconds: 0, now: Self.t0 + 61))
        #expect(
            try await !store.updateProgress(
                id: job.id, worker: "w1", progress: 90, stage: "rendering", message: "x", now: Self.t0 + 61))
        #expect(
            try await !store.retryLater(
                id: job.id, worker: "w1", runAfter: Self.t0 + 62, abnormal: false, chargeSeconds: 0, reason: "x",
                now: Self.t0 + 61))
    }

    /// The other job goes first while ours backs off; started `maxAttempts` times it fails for good.
    static func backoffThenFailForGood(
        _ store: any MomentsStore, account: Account, job: Job, other: Job
    ) async throws {
        let period = UsagePeriod.month(of: Self.t0).name
        let output = JobOutput(duration: 30, size: 1, width: 2, height: 2)
        // Backoff: the other job goes first; ours once runAfter has passed.
        let next = try #require(try await store.claimNextJob(worker: "w2", leaseSeconds: 30, now: Self.t0 + 65))
        #expect(next.id == other.id)
        #expect(try await store.claimNextJob(worker: "w2", leaseSeconds: 30, now: Self.t0 + 66) == nil)
        let again = try #require(try await store.claimNextJob(worker: "w2", leaseSeconds: 30, now: Self.t0 + 70))
        #expect(again.id == job.id && again.attempts == 2 && again.message == "Restarting after an interruption")
        #expect(
            try await !store.complete(
                id: job.id, worker: "w1", output: output, segments: [], processingSeconds: 1, workerSeconds: 1,
                now: Self.t0 + 71))

        // Started maxAttempts times: failed for good, unit released with AppDatabase's words.
        try await store.requeue(id: other.id, worker: "w2", now: Self.t0 + 90)
        let last = try await store.rescueExpiredLeases(maxAttempts: 2, backoffSeconds: 10, now: Self.t0 + 200)
        #expect(last.failed == [job.id] && last.requeued.isEmpty)
        let failed = try #require(try await store.job(id: job.id))
        #expect(failed.status == .failed && failed.errorCode == "interrupted" && failed.quotaState == "released")
        #expect(
            failed.message
                == "Processing was interrupted 2 times (the server stopped while working on it); giving up. Please upload the video again."
        )
        #expect(
            try await store.ledger(accountId: account.id, limit: 1).first?.reason
                == "released: processing was interrupted too often")
        // The handed-back job kept its attempt uncounted and waits again.
        let handedBack = try #require(try await store.job(id: other.id))
        #expect(
            handedBack.status == .pending && handedBack.attempts == 0
                && handedBack.message == "Waiting in the queue (the server restarted)")
        #expect(try await store.usedUnits(accountId: account.id, period: period) == 1)
    }

    /// The job left: claimed, then retried later after an abnormal exit.
    static func heldJobRetriesLater(_ store: any MomentsStore, account: Account) async throws {
        // A held job retried later: pending until runAfter, worker time on the ledger.
        let held = try #require(try await store.claimNextJob(worker: "w3", leaseSeconds: 30, now: Self.t0 + 300))
        #expect(
            try await store.retryLater(
                id: held.id, worker: "w3", runAfter: Self.t0 + 400, abnormal: true, chargeSeconds: 4,
                reason: "the engine crashed", now: Self.t0 + 301))
        let retrying = try #require(try await store.job(id: held.id))
        #expect(retrying.status == .pending && retrying.abnormalExits == 1 && retrying.workerSeconds == 4)
        #expect(retrying.message == "Waiting to try again (the engine crashed)")
        #expect(
            try await store.ledger(accountId: account.id, limit: 1).first?.reason
                == "worker time: attempt 1 ended (the engine crashed)")
        let stats = try await store.queueStatistics(now: Self.t0 + 500)
        #expect(stats.pending == 1 && stats.processing == 0 && stats.oldestPendingSeconds == 100)
    }

    @Test(arguments: Engine.allCases)
    func concurrentRescuersRescueEachJobOnce(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let second = try await h.secondInstance()
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            var ids = Set<String>()
            for i in 0..<12 {
                let job = try await Self.accept(
                    store, Self.job(account.id, at: Self.t0 + Double(i)),
                    limits: Self.limits(monthly: nil, concurrent: 100))
                _ = try #require(try await store.claimNextJob(worker: "gone", leaseSeconds: 10, now: Self.t0 + 20))
                ids.insert(job.id)
            }
            let results = try await withThrowingTaskGroup(of: [String].self) { group in
                for rescuer in [store, second, store, second] {
                    group.addTask {
                        try await rescuer.rescueExpiredLeases(maxAttempts: 3, backoffSeconds: 5, now: Self.t0 + 60)
                            .requeued
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(results.count == 12 && Set(results) == ids)
            let jobs = try await store.unfinishedJobs()
            #expect(
                jobs.allSatisfy {
                    $0.status == .pending && $0.attempts == 1 && $0.leaseOwner == nil && $0.runAfter == Self.t0 + 65
                })
        }
    }
}
