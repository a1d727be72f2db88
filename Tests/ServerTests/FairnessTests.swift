import Foundation
import MediaVocabulary
import HTTPTypes
import Highlight
import HummingbirdTesting
import Logging
import AnalysisDecode
import MediaEngine
import MediaPictures
import MomentsConfig
import SQLiteStore
import Store
import Testing

@Suite("Fair queue and worker-time budget")
struct FairnessTests {
    /// One account's backlog does not starve another: the next claim goes to the account with the
    /// fewest running jobs, then to the one that started a job longest ago.
    @Test func claimsAreFairAcrossAccounts() async throws {
        let scratch = Scratch()
        let database = try AppDatabase(path: scratch.path("db.sqlite"))
        let (a, _) = try await database.createAccount(label: "busy")
        let (b, _) = try await database.createAccount(label: "quiet")
        let input = JobInput(
            size: 1, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320, height: 180,
            rotation: 0, frameRate: 30)
        var now = Date(timeIntervalSince1970: 1_800_000_000)
        for i in 0..<5 {
            try await database.insertUnmetered(
                Job(
                    id: "a\(i)", accountId: a.id, targetDuration: 10, quality: .low, input: input, estimatedSeconds: 1,
                    now: now))
            now += 1
        }
        try await database.insertUnmetered(
            Job(
                id: "b0", accountId: b.id, targetDuration: 10, quality: .low, input: input, estimatedSeconds: 1,
                now: now))
        try await database.insertUnmetered(
            Job(
                id: "b1", accountId: b.id, targetDuration: 10, quality: .low, input: input, estimatedSeconds: 1,
                now: now + 1))
        var order: [String] = []
        for _ in 0..<4 {
            now += 1
            let job = try #require(try await database.claimNextJob(worker: "test", leaseSeconds: 30, now: now))
            order.append(job.id)
            // Finish it so only the round robin decides the next one.
            _ = try await database.complete(
                id: job.id, worker: "test", output: JobOutput(duration: 1, size: 1, width: 1, height: 1), segments: [],
                processingSeconds: 1, workerSeconds: 0, now: now)
        }
        #expect(order == ["a0", "b0", "a1", "b1"], "\(order)")
        // A job waiting out a retry backoff is skipped until its time.
        let retry = try #require(try await database.claimNextJob(worker: "test", leaseSeconds: 30, now: now + 1))
        try await database.retryLater(
            id: retry.id, worker: "test", runAfter: now + 100, abnormal: false, chargeSeconds: 0, reason: "test",
            now: now + 1)
        let next = try await database.claimNextJob(worker: "test", leaseSeconds: 30, now: now + 2)
        #expect(next?.id != retry.id)
        try database.close()
    }

    /// A plan's daily worker time, once used, refuses new uploads with 429 until the next UTC day;
    /// the ledger shows the seconds charged.
    @Test func dailyWorkerBudget() async throws {
        var plans = TestServer.roomyPlans
        plans.free.dailyWorkerSeconds = 60
        let clock = TestClock(QuotaTests.utc("2026-11-23T22:00:00Z"))
        let server = try await TestServer(plans: plans, clock: clock)
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .router) { client in
            let (accountId, key) = try await client.createAccount()
            let first = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            #expect(first.status == .ok)
            let job = try #require(try first.json()["job_id"] as? String)
            // Finished before the clock moves: a job still running at midnight would charge its
            // whole (test-clock) time to the next day.
            _ = try await client.poll(job: job, key: key) {
                ["completed", "failed"].contains($0["status"] as? String ?? "")
            }
            try await server.service.database.chargeWorkerTime(jobId: job, seconds: 61, reason: "test", now: clock.now)
            let refused = try await client.upload(key: key, file: video)
            let problem = try refused.expectProblem(.tooManyRequests, code: "daily_budget_exceeded")
            #expect(refused.headers[.retryAfter] == "7200")
            #expect(problem["limit_seconds"] as? Int == 60 && problem["used_seconds"] as? Int == 61)
            let ledger = try await server.service.database.ledger(accountId: accountId)
            #expect(ledger.contains { $0.workerSeconds == 61 })
            _ = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
            clock.now = QuotaTests.utc("2026-11-24T00:00:01Z")
            let nextDay = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            #expect(nextDay.status == .ok, "\(nextDay.text)")
            if let id = try nextDay.json()["job_id"] as? String {
                _ = try await client.get("/api/v1/jobs/\(id)", key: key, method: .delete)
            }
        }
    }
}
