import Foundation
import MediaVocabulary
import HTTPTypes
import HummingbirdTesting
import MomentsConfig
import NIOCore
import SQLiteStore
import Store
import Testing

@Suite("Plans and the free-tier quota")
struct QuotaTests {
    static func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    /// Three highlights in November; the fourth is a 402 that says what to do; December starts afresh.
    @Test func monthlyLimitAcrossMonthBoundary() async throws {
        var plans = PlanSettings()
        plans.free.concurrentJobs = 10  // only the monthly cap is under test here
        let clock = TestClock(Self.utc("2026-11-30T23:50:00Z"))
        let server = try await TestServer(plans: plans, clock: clock)
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            for expected in [2, 1, 0] {
                let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
                #expect(accepted.status == .ok, "\(accepted.text)")
                let quota = try #require(try accepted.json()["quota"] as? [String: Any])
                #expect(quota["remaining"] as? Int == expected && quota["limit"] as? Int == 3)
            }
            let refused = try await client.upload(key: key, file: video)
            let problem = try refused.expectProblem(HTTPResponse.Status(code: 402), code: "quota_exceeded")
            #expect(problem["limit"] as? Int == 3 && problem["used"] as? Int == 3 && problem["remaining"] as? Int == 0)
            #expect(problem["resets_at"] as? String == "2026-12-01T00:00:00Z")
            #expect(problem["product_id"] as? String == "com.moments.pro.monthly")
            let account = try await client.get("/api/v1/account", key: key).json()
            #expect((account["usage"] as? [String: Any])?["remaining"] as? Int == 0)

            clock.now = Self.utc("2026-12-01T00:00:01Z")
            let december = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            #expect(december.status == .ok, "\(december.text)")
            let quota = try #require(try december.json()["quota"] as? [String: Any])
            #expect(
                quota["period"] as? String == "2026-12" && quota["used"] as? Int == 1 && quota["remaining"] as? Int == 2
            )
        }
        #expect(server.storedFiles().filter { $0.hasSuffix(".partial") }.isEmpty)
    }

    /// 20 uploads at once from one free account: exactly the allowed number get in (1 at a time on
    /// the free plan; 3 a month when more may run at once), the rest 402 or 429.
    @Test(arguments: [(1, 1), (10, 3)])
    func concurrentUploadsCannotRace(concurrentJobs: Int, expectedAccepted: Int) async throws {
        var plans = PlanSettings()
        plans.free.concurrentJobs = concurrentJobs
        let server = try await TestServer(plans: plans)
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let response = try await client.upload(
                            key: key, file: video, fields: [("target_duration", "5")])
                        return (Int(response.status.code), response.headers[.retryAfter])
                    }
                }
                return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0.0 == 200 }.count == expectedAccepted, "\(statuses)")
            #expect(statuses.allSatisfy { [200, 402, 429].contains($0.0) }, "\(statuses)")
            #expect(
                statuses.filter { $0.0 == 429 }.allSatisfy { $0.1.flatMap(Int.init) ?? 0 > 0 },
                "429 without Retry-After")
            let ledger = try await server.service.database.ledger(
                accountId: try #require(
                    try await server.service.database
                        .account(apiKey: key)?.id))
            #expect(ledger.filter { $0.change == 1 }.count == expectedAccepted)
            for id in (try await server.service.database.activeJobs(accountId: ledger.first?.accountId ?? "")).map(\.id)
            {
                _ = try await client.get("/api/v1/jobs/\(id)", key: key, method: .delete)
            }
        }
        #expect(server.storedFiles().filter { $0.hasSuffix(".partial") }.isEmpty)
    }

    /// A failed job and a cancelled job give their unit back; a delivered one keeps it.
    @Test func releaseOnFailureAndCancel() async throws {
        var plans = PlanSettings()
        plans.free.concurrentJobs = 10
        let server = try await TestServer(plans: plans)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            func used() async throws -> Int {
                try await client.get("/api/v1/account", key: key).json()["usage"].flatMap {
                    ($0 as? [String: Any])?["used"] as? Int
                } ?? -1
            }

            let black = try await Fixtures.data(.black)
            let failing = try #require(
                try await client.upload(key: key, file: black, fields: [("target_duration", "5")]).json()["job_id"]
                    as? String)
            #expect(try await used() == 1)
            _ = try await client.poll(job: failing, key: key) { ($0["status"] as? String) == "failed" }
            #expect(try await used() == 0)

            let long = try await Fixtures.data(.long)
            let cancelled = try #require(try await client.upload(key: key, file: long).json()["job_id"] as? String)
            #expect(try await used() == 1)
            _ = try await client.get("/api/v1/jobs/\(cancelled)", key: key, method: .delete)
            #expect(try await used() == 0)

            let short = try await Fixtures.data(.short)
            let delivered = try #require(
                try await client.upload(key: key, file: short, fields: [("target_duration", "5")]).json()["job_id"]
                    as? String)
            _ = try await client.poll(job: delivered, key: key) { ($0["status"] as? String) == "completed" }
            #expect(try await used() == 1)

            let accountId = try #require(try await server.service.database.account(apiKey: key)?.id)
            let reasons = try await server.service.database.ledger(accountId: accountId).map(\.reason)
            #expect(reasons.contains { $0.hasPrefix("released: the job failed") })
            #expect(reasons.contains { $0.hasPrefix("released: the job was cancelled") })
            #expect(reasons.contains { $0.hasPrefix("consumed") })
        }
    }

    /// A job re-queued after a crash keeps its unit; one that fails after the last attempt gives it back.
    @Test(
        .enabled(
            if: TestEngine.isEmbedded,
            "start-up recovery of a store the process has to itself (SQLite); on PostgreSQL, leases: see StoreTests and ScaleOutTests"
        )) func crashRecoveryKeepsThenReleasesTheUnit() async throws
    {
        let server = try await TestServer(plans: .init())
        let db = server.service.database
        let (account, _) = try await server.service.createAccount(label: nil)
        let input = JobInput(
            size: 1, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320, height: 180,
            rotation: 0, frameRate: 30)
        let job = Job(
            id: "crashy", accountId: account.id, targetDuration: 10, quality: .high, input: input, estimatedSeconds: 5,
            now: Date())
        let limits = QuotaLimits(monthly: 3, concurrent: 1, outputCap: 1080, retentionHours: 168)
        _ = try await db.insertReserving(job, now: Date()) { _ in limits }
        let period = UsagePeriod.month(of: Date()).name
        for attempt in 1...3 {
            _ = try await db.claimNextJob(worker: "test", leaseSeconds: 30, now: Date())
            _ = try (db as! AppDatabase).recoverInterruptedJobs(maxAttempts: 3, now: Date())
            #expect(try await db.usedUnits(accountId: account.id, period: period) == (attempt < 3 ? 1 : 0))
        }
    }

    /// Sign-ups per client address are limited: the quota is per account.
    @Test func accountCreationIsLimitedPerAddress() async throws {
        let server = try await TestServer { $0.accountsPerAddressPerHour = 3 }
        try await withServer(server, .router) { client in
            for _ in 0..<3 { _ = try await client.createAccount() }
            let refused = try await client.executeRequest(
                uri: "/api/v1/accounts", method: .post, headers: [:], body: nil)
            try refused.expectProblem(.tooManyRequests, code: "too_many_accounts")
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 > 0)
        }
    }

    /// GET /api/v1/account, and the plan's size and duration limits naming the plan that lifts them.
    @Test func accountAndPlanLimits() async throws {
        var plans = PlanSettings()
        plans.free.maxUploadBytes = 100_000
        let server = try await TestServer(plans: plans)
        let video = try await Fixtures.data(.short)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let account = try await client.get("/api/v1/account", key: key).json()
            #expect(account["account_id"] as? String == id && account["plan"] as? String == "free")
            #expect(account["entitlement"] is NSNull)
            #expect(account["upgrade_product_id"] as? String == "com.moments.pro.monthly")
            let limits = try #require(account["limits"] as? [String: Any])
            #expect(limits["monthly_highlights"] as? Int == 3 && limits["concurrent_jobs"] as? Int == 1)
            #expect(limits["max_output_side"] as? Int == 1080 && limits["retention_days"] as? Int == 7)
            #expect(limits["recuts"] as? Bool == true)
            let usage = try #require(account["usage"] as? [String: Any])
            #expect(usage["used"] as? Int == 0 && usage["remaining"] as? Int == 3 && usage["resets_at"] is String)

            let tooLarge = try await client.upload(key: key, file: video).expectProblem(
                .contentTooLarge, code: "file_too_large")
            #expect(
                tooLarge["plan"] as? String == "free" && tooLarge["product_id"] as? String == "com.moments.pro.monthly")
            #expect((tooLarge["detail"] as? String)?.contains("com.moments.pro.monthly") == true)
        }
        var short = PlanSettings()
        short.free.maxDurationSeconds = 5
        let durationServer = try await TestServer(plans: short)
        try await withServer(durationServer, .router) { client in
            let (_, key) = try await client.createAccount()
            let problem = try await client.upload(key: key, file: video).expectProblem(
                .unprocessableContent, code: "too_long")
            #expect(
                problem["limit_seconds"] as? Int == 5 && problem["product_id"] as? String == "com.moments.pro.monthly")
            #expect(
                try await client.get("/api/v1/account", key: key).json()["usage"].flatMap {
                    ($0 as? [String: Any])?["used"] as? Int
                } == 0)
        }
        #expect(durationServer.storedFiles().isEmpty)
    }
}
