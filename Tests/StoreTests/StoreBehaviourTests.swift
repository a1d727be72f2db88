import Foundation
import MediaVocabulary
import Store
import Testing

/// What users rely on from the store, asserted the same way against both engines.
@Suite("Store behaviours on both engines")
struct StoreBehaviourTests {
    /// Whole seconds: both engines keep instants to at least the millisecond.
    static let t0 = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18

    static func job(_ accountId: String, at date: Date = t0) -> Job {
        Job(
            id: UUID().uuidString.lowercased(), accountId: accountId, targetDuration: 30, quality: .high,
            input: JobInput(
                size: 1_000_000, duration: 60, container: "mp4", videoCodec: "h264", audioCodec: "aac",
                width: 1920, height: 1080, rotation: 0, frameRate: 30),
            estimatedSeconds: 20, now: date)
    }

    static func limits(monthly: Int? = 10, concurrent: Int = 10, daily: Double? = nil)
        -> @Sendable (Bool) -> QuotaLimits
    {
        { _ in
            QuotaLimits(
                monthly: monthly, concurrent: concurrent, outputCap: 1080, retentionHours: 24, dailyWorkerSeconds: daily
            )
        }
    }

    static func accept(
        _ store: any MomentsStore, _ job: Job, limits: @escaping @Sendable (Bool) -> QuotaLimits = limits()
    ) async throws -> Job {
        let result = try await store.insertReserving(job, now: job.createdAt, limits: limits)
        guard case .success(let accepted) = result else {
            Issue.record("refused: \(result)")
            throw CancellationError()
        }
        return accepted
    }

    // MARK: Accounts and keys

    @Test(arguments: Engine.allCases)
    func keysAuthenticateRevokeAndRotate(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            guard let first = try await Self.secondKeyRevokesTheFirst(store),
                let keyId = try await Self.disableThenRotate(
                    store, account: first.account, secondSecret: first.secondSecret)
            else { return }
            try await Self.keyUseAndTheActiveKeyLimit(store, account: first.account, keyId: keyId)
        }
    }

    /// A new account's key authenticates and cannot be revoked alone; a second key lets it go.
    /// Returns the account and the second key's secret; nil (an issue recorded) when a step is refused.
    static func secondKeyRevokesTheFirst(
        _ store: any MomentsStore
    ) async throws -> (account: Account, secondSecret: String)? {
        let (account, secret) = try await store.createAccount(label: "app", plan: "free", now: Self.t0)
        guard
            case .valid(let found, let firstKeyId) = try await store.authenticate(
                keyHash: Account.hash(apiKey: secret))
        else {
            Issue.record("the new key does not authenticate"); return nil
        }
        #expect(found == account)
        #expect(try await store.account(apiKey: secret) == account)
        #expect(try await store.authenticate(keyHash: Account.hash(apiKey: "mk_unknown")) == .unknown)

        // The last active key cannot be revoked.
        #expect(
            try await store.revokeKey(id: firstKeyId, accountId: account.id, now: Self.t0)
                == .failure(.lastActiveKey))
        guard
            case .success((let second, let secondSecret)) = try await store.createKey(
                accountId: account.id, label: "ci", now: Self.t0 + 1)
        else { Issue.record("createKey refused"); return nil }
        #expect(
            try await store.createKey(accountId: "nobody", label: nil, now: Self.t0).map { $0.0 }
                == .failure(.noSuchAccount))
        // Another account's key looks like no key.
        let (other, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
        #expect(try await store.revokeKey(id: second.id, accountId: other.id, now: Self.t0) == .failure(.notFound))

        guard
            case .success(let revoked) = try await store.revokeKey(
                id: firstKeyId, accountId: account.id, now: Self.t0 + 2)
        else {
            Issue.record("revoke refused"); return nil
        }
        #expect(revoked.revokedAt == Self.t0 + 2)
        #expect(try await store.authenticate(keyHash: Account.hash(apiKey: secret)) == .revoked)
        #expect(try await store.account(apiKey: secret) == nil)
        #expect(try await store.keys(accountId: account.id).map(\.id) == [firstKeyId, second.id])
        return (account, secondSecret)
    }

    /// Disabling refuses every key, enabling restores them; rotation leaves one new key. Returns
    /// the rotated key's id; nil (an issue recorded) when a step is refused.
    static func disableThenRotate(
        _ store: any MomentsStore, account: Account, secondSecret: String
    ) async throws -> String? {
        // Disabled: every key refused at once, enabled again: valid.
        try await store.setDisabled(accountId: account.id, true, now: Self.t0 + 3)
        #expect(
            try await store.authenticate(keyHash: Account.hash(apiKey: secondSecret))
                == .disabled(accountId: account.id))
        try await store.setDisabled(accountId: account.id, false, now: Self.t0 + 4)
        guard case .valid = try await store.authenticate(keyHash: Account.hash(apiKey: secondSecret)) else {
            Issue.record("enabled again but refused"); return nil
        }
        #expect(try await store.setDisabled(accountId: "nobody", true, now: Self.t0) == nil)

        // Rotation: one new key, every other active key revoked.
        _ = try await store.createKey(accountId: account.id, label: "third", now: Self.t0 + 5)
        guard let rotated = try await store.rotateKey(accountId: account.id, label: "rotated", now: Self.t0 + 6)
        else {
            Issue.record("rotate found no account"); return nil
        }
        #expect(rotated.revoked == 2)
        #expect(try await store.authenticate(keyHash: Account.hash(apiKey: secondSecret)) == .revoked)
        guard
            case .valid(_, let keyId) = try await store.authenticate(keyHash: Account.hash(apiKey: rotated.secret))
        else {
            Issue.record("the rotated key does not authenticate"); return nil
        }
        #expect(keyId == rotated.key.id)
        #expect(try await store.rotateKey(accountId: "nobody", label: nil, now: Self.t0) == nil)
        return keyId
    }

    /// Key use is recorded in the background and never moves back; at most
    /// `maxActivePerAccount` active keys; the tester flag.
    static func keyUseAndTheActiveKeyLimit(_ store: any MomentsStore, account: Account, keyId: String) async throws {
        // Key use is recorded in the background.
        store.recordKeyUse(keyId: keyId, at: Self.t0 + 7)
        await store.keyUsesRecorded()
        #expect(try await store.keys(accountId: account.id).first { $0.id == keyId }?.lastUsedAt == Self.t0 + 7)
        // An older use never moves it back.
        store.recordKeyUse(keyId: keyId, at: Self.t0 + 1)
        await store.keyUsesRecorded()
        #expect(try await store.keys(accountId: account.id).first { $0.id == keyId }?.lastUsedAt == Self.t0 + 7)

        // At most maxActivePerAccount active keys.
        for _ in 1..<APIKey.maxActivePerAccount {
            _ = try await store.createKey(accountId: account.id, label: nil, now: Self.t0 + 8)
        }
        #expect(
            try await store.createKey(accountId: account.id, label: nil, now: Self.t0 + 9).map { $0.0 }
                == .failure(.tooManyKeys(limit: APIKey.maxActivePerAccount)))
        #expect(try await store.setTester(accountId: account.id, true)?.tester == true)
        #expect(try await store.account(id: account.id)?.tester == true)
        #expect(try await store.setTester(accountId: "nobody", true) == nil)
    }

    // MARK: Jobs

    @Test(arguments: Engine.allCases)
    func jobListsStatusAndSweeperQueries(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let (other, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            var ids: [String] = []
            for i in 0..<5 {
                ids.append(try await Self.accept(store, Self.job(account.id, at: Self.t0 + Double(i))).id)
            }
            let foreign = try await Self.accept(store, Self.job(other.id, at: Self.t0 + 10))

            let page = try await store.jobs(accountId: account.id, limit: 2, offset: 1)
            #expect(page.total == 5 && page.jobs.map(\.id) == [ids[3], ids[2]])
            #expect(try await store.job(id: foreign.id, accountId: account.id) == nil)
            let accepted = try #require(try await store.job(id: ids[0], accountId: account.id))
            #expect(
                accepted.input == Self.job(account.id).input && accepted.retentionHours == 24
                    && accepted.message == "Waiting in the queue")
            #expect(
                try await store.jobStatus(id: ids[0], accountId: account.id)
                    == JobStatusRow(
                        id: ids[0], status: .pending, progress: 0, message: "Waiting in the queue", mediaDeleted: false)
            )
            #expect(try await store.jobStatus(id: ids[0], accountId: other.id) == nil)
            #expect(try await store.unfinishedJobs().map(\.id) == ids + [foreign.id])
            #expect(try await store.activeJobs(accountId: other.id).map(\.id) == [foreign.id])
            #expect(try await store.existingJobIDs([ids[1], "gone", foreign.id]) == [ids[1], foreign.id])
            #expect(try await store.existingJobIDs([]) == [])

            // The other account's job out of the way (cancelled late: its retention runs out last).
            _ = try await store.cancel(id: foreign.id, accountId: other.id, now: Self.t0 + 3600 * 30)
            // Two delivered at different times: the sweeper's retention and the time estimate.
            let segments = [Segment(start: 1, end: 4, score: 0.9, reason: "motion")]
            let output = JobOutput(duration: 3, size: 10, width: 640, height: 360)
            for (i, worker) in ["w1", "w2"].enumerated() {
                let job = try #require(
                    try await store.claimNextJob(worker: worker, leaseSeconds: 60, now: Self.t0 + 100))
                #expect(
                    try await store.complete(
                        id: job.id, worker: worker, output: output, segments: segments, processingSeconds: 7,
                        workerSeconds: 7, now: Self.t0 + 3600 * Double(i + 1)))
            }
            let recent = try await store.recentCompletedJobs(limit: 10)
            #expect(
                recent.map(\.id) == [ids[1], ids[0]] && recent[0].segments == segments
                    && recent[0].processingSeconds == 7)
            // Retention 24 h after finishing: the first expires an hour before the second.
            let expired = try await store.jobsWithExpiredMedia(
                now: Self.t0 + 3600 * 25 + 1, defaultRetentionHours: 1, limit: 10)
            #expect(expired.map(\.id) == [ids[0]])
            try await store.markMediaDeleted(id: ids[0], now: Self.t0 + 3600 * 26)
            #expect(try await store.jobStatus(id: ids[0], accountId: account.id)?.mediaDeleted == true)
            #expect(
                try await store.jobsWithExpiredMedia(now: Self.t0 + 3600 * 27, defaultRetentionHours: 1, limit: 10).map(
                    \.id) == [ids[1]])
            try await store.checkWritable(now: Self.t0)
        }
    }

    // MARK: Quota

    @Test(arguments: Engine.allCases)
    func quotaReservesConsumesAndReleasesWithLedger(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let period = UsagePeriod.month(of: Self.t0).name
            let limits = Self.limits(monthly: 2, concurrent: 5)
            let a = try await Self.accept(store, Self.job(account.id), limits: limits)
            #expect(a.quotaState == "reserved" && a.quotaPeriod == period && a.outputCap == 1080)
            let b = try await Self.accept(store, Self.job(account.id, at: Self.t0 + 1), limits: limits)
            #expect(try await store.usedUnits(accountId: account.id, period: period) == 2)
            #expect(
                try await store.insertReserving(Self.job(account.id), now: Self.t0 + 2, limits: limits).map(\.id)
                    == .failure(.overQuota(limit: 2, used: 2)))

            // Delivered: consumed (still counted), worker time charged on the same line.
            let claimed = try #require(try await store.claimNextJob(worker: "w1", leaseSeconds: 60, now: Self.t0 + 3))
            #expect(claimed.id == a.id)
            let output = JobOutput(duration: 30, size: 100, width: 1280, height: 720)
            #expect(
                try await store.complete(
                    id: a.id, worker: "w1", output: output, segments: [], processingSeconds: 5,
                    workerSeconds: 6, now: Self.t0 + 8))
            // Failed: released (no longer counted).
            _ = try #require(try await store.claimNextJob(worker: "w1", leaseSeconds: 60, now: Self.t0 + 9))
            #expect(
                try await store.fail(
                    id: b.id, worker: "w1", code: "unreadable", message: "We could not read it", chargeSeconds: 0,
                    now: Self.t0 + 10))
            #expect(try await store.usedUnits(accountId: account.id, period: period) == 1)
            let done = try #require(try await store.job(id: a.id))
            #expect(
                done.status == .completed && done.quotaState == "consumed" && done.output == output
                    && done.workerSeconds == 6)
            let failed = try #require(try await store.job(id: b.id, accountId: account.id))
            #expect(
                failed.status == .failed && failed.errorCode == "unreadable" && failed.message == "We could not read it"
            )

            let ledger = try await store.ledger(accountId: account.id, limit: 10)
            #expect(
                ledger.map(\.reason) == [
                    "released: the job failed (unreadable)", "consumed: the highlight was delivered",
                    "reserved when the job was accepted", "reserved when the job was accepted"
                ])
            #expect(ledger.map(\.change) == [-1, 0, 1, 1])
            #expect(ledger[1].workerSeconds == 6)
            #expect(try await store.workerSecondsUsed(accountId: account.id, now: Self.t0 + 11) == 6)

            // Cancelling a pending job releases its unit once.
            let c = try await Self.accept(store, Self.job(account.id, at: Self.t0 + 12), limits: limits)
            let cancelled = try #require(try await store.cancel(id: c.id, accountId: account.id, now: Self.t0 + 13))
            #expect(
                cancelled.previous == .pending && cancelled.job.status == .cancelled
                    && cancelled.job.message == "Cancelled at your request")
            let again = try #require(try await store.cancel(id: c.id, accountId: account.id, now: Self.t0 + 14))
            #expect(again.previous == .cancelled)
            #expect(try await store.cancel(id: c.id, accountId: "someone-else", now: Self.t0) == nil)
            #expect(
                try await store.ledger(accountId: account.id, limit: 1).first?.reason
                    == "released: the job was cancelled")
            #expect(try await store.usedUnits(accountId: account.id, period: period) == 1)
        }
    }

    @Test(arguments: Engine.allCases)
    func jobsAtOnceAndDailyBudgetRefuse(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let limits = Self.limits(monthly: nil, concurrent: 1, daily: 100)
            let a = try await Self.accept(store, Self.job(account.id), limits: limits)
            #expect(
                try await store.insertReserving(Self.job(account.id), now: Self.t0 + 1, limits: limits).map(\.id)
                    == .failure(.tooManyJobs(limit: 1, active: 1)))
            try await store.chargeWorkerTime(
                jobId: a.id, seconds: 100, reason: "worker time: attempt 1 ended (cancelled)", now: Self.t0 + 2)
            #expect(try await store.job(id: a.id)?.workerSeconds == 100)
            _ = try await store.cancel(id: a.id, accountId: account.id, now: Self.t0 + 3)
            #expect(
                try await store.insertReserving(Self.job(account.id), now: Self.t0 + 4, limits: limits).map(\.id)
                    == .failure(.overBudget(limit: 100, used: 100)))
            // The next UTC day has a fresh budget.
            let tomorrow = UsagePeriod.day(of: Self.t0).next + 60
            _ = try await Self.accept(store, Self.job(account.id, at: tomorrow), limits: limits)
        }
    }

    /// Two processes accepting uploads of one account at once never exceed its quota.
    @Test(arguments: Engine.allCases)
    func concurrentAcceptsThroughTwoInstancesNeverExceedTheQuota(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let first = h.store
            let second = try await h.secondInstance()
            let (account, _) = try await first.createAccount(label: nil, plan: "free", now: Self.t0)
            let limits = Self.limits(monthly: 3, concurrent: 100)
            let accepted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<20 {
                    let store = i % 2 == 0 ? first : second
                    group.addTask {
                        if case .success = try await store.insertReserving(
                            Self.job(account.id), now: Self.t0, limits: limits)
                        {
                            return true
                        }
                        return false
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(accepted == 3)
            #expect(try await first.usedUnits(accountId: account.id, period: UsagePeriod.month(of: Self.t0).name) == 3)
            #expect(try await second.activeJobs(accountId: account.id).count == 3)
        }
    }
}
