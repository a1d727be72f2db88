import Foundation
import Store
import Testing
@testable import Workers

/// Leases on claimed jobs (`jobs.leaseSeconds`): a worker that vanished loses its job to the
/// rescuer of any process; a worker that is alive keeps renewing its lease through a long job.
@Suite("Job leases")
struct LeaseTests {
    /// A job claimed by a worker that then vanished (no renewals) goes back to the queue once its
    /// lease has run out, with its attempt counted and a backoff, and is then done by a live worker.
    @Test func vanishedWorkersJobIsRescued() async throws {
        let server = try await TestServer { s in
            s.workers = 0
            s.leaseSeconds = 3
            s.retryBackoffSeconds = 1
        }
        let db = server.service.database
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let accepted = try await client.upload(
                key: key, file: try await Fixtures.data(.tiny), fields: [("target_duration", "5")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            let ghost = try #require(
                try await db.claimNextJob(worker: "ghost-host/1/x#0", leaseSeconds: 1, now: Date()))
            #expect(ghost.id == job)
            // The rescuer (every half lease) finds the expired lease.
            var rescued: Job?
            for _ in 0..<100 {
                if let current = try await db.job(id: job), current.status == .pending { rescued = current; break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let back = try #require(rescued, "the job was not rescued")
            #expect(back.attempts == 1 && back.leaseOwner == nil && back.runAfter != nil)
            #expect(back.message.contains("attempt 2 of 3"), "\(back.message)")
            // The vanished worker cannot write about it any more.
            #expect(
                try await db.updateProgress(
                    id: job, worker: "ghost-host/1/x#0", progress: 50, stage: "rendering", message: "x", now: Date())
                    == false)
        }
    }

    /// A process that stalled for longer than the lease (a starved machine) and wakes with its
    /// rescuer first does not take back the jobs it is still running: it renews its own leases
    /// before it rescues. (The stall is the test clock jumping ahead of the last renewal.)
    @Test func aStalledProcessKeepsItsOwnRunningJobs() async throws {
        let clock = TestClock(Date())
        let server = try await TestServer(clock: clock) { s in
            s.leaseSeconds = 30
        }
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let accepted = try await client.upload(
                key: key, file: try await Fixtures.data(.long), fields: [("target_duration", "10")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            var running = false
            for _ in 0..<600 where !running {
                running = server.service.runner.runningJobIDs.contains(job)
                if !running { try await Task.sleep(for: .milliseconds(50)) }
            }
            try #require(running, "the job never started")
            clock.now = clock.now.addingTimeInterval(90)
            await server.service.runner.rescueExpiredLeases()
            let current = try #require(try await server.service.database.job(id: job))
            #expect(
                current.attempts == 1 && (current.status == .processing || current.status == .completed),
                "\(current.status) attempt \(current.attempts)")
            _ = try await client.poll(job: job, key: key, timeout: 240) {
                ["completed", "failed"].contains($0["status"] as? String ?? "")
            }
            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            #expect(detail["status"] as? String == "completed" && detail["attempts"] as? Int == 1, "\(detail)")
        }
    }

    /// A job longer than the lease completes on its first attempt: its worker renews the lease.
    @Test func liveWorkerKeepsItsLease() async throws {
        let server = try await TestServer { s in
            s.leaseSeconds = 3
        }
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let accepted = try await client.upload(
                key: key, file: try await Fixtures.data(.long), fields: [("target_duration", "10")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            let started = Date()
            _ = try await client.poll(job: job, key: key, timeout: 240) {
                ["completed", "failed"].contains($0["status"] as? String ?? "")
            }
            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            #expect(detail["status"] as? String == "completed", "\(detail)")
            #expect(detail["attempts"] as? Int == 1, "\(detail)")
            #expect(
                Date().timeIntervalSince(started) > 3, "the job must outlast one lease for this test to mean anything")
        }
    }
}
