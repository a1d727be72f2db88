import Foundation
import HTTPTypes
import HummingbirdTesting
import MomentsConfig
import Testing

/// A job's routes before any worker has run it: listing, downloads, re-cuts and cancellation.
@Suite("Router: jobs")
struct JobRoutesTests {
    @Test func listingShowsAnAccountsOwnJobsOnly() async throws {
        var plans = PlanSettings()
        plans.free.concurrentJobs = 5
        try await RouterHarness(plans: plans).run { client in
            let (_, key) = try await client.account()
            for _ in 0..<2 {
                #expect(try await client.upload(key: key, fields: [("target_duration", "20"), ("aspect", "9:16")]).status == .ok)
            }
            let mine = try await client.send(.get, "/api/v1/jobs", key: key).object()
            #expect(mine["total"] as? Int == 2, "\(mine)")
            // Each row says what a person tells it apart by: the file, the length, the shape.
            let row = try #require((mine["jobs"] as? [[String: Any]])?.first)
            #expect(row["source_name"] as? String == "clip.mp4", "\(row)")
            #expect(row["target_duration"] as? Int == 20 && row["aspect"] as? String == "9:16", "\(row)")
            #expect(row["recut_of"] == nil && row["kept_until"] == nil, "pending: nothing kept yet; \(row)")
            let (_, other) = try await client.account()
            let theirs = try await client.send(.get, "/api/v1/jobs", key: other).object()
            #expect(theirs["total"] as? Int == 0)
        }
    }

    @Test func aPendingJobHasNothingToDownloadOrRecut() async throws {
        try await RouterHarness().run { client in
            let (_, key) = try await client.account()
            let jobId = try #require(try await client.upload(key: key).object()["job_id"] as? String)
            try await client.send(.get, "/api/v1/jobs/\(jobId)/download", key: key)
                .problem(.conflict, "job_not_completed")
            try await client.send(
                .post, "/api/v1/jobs/\(jobId)/recuts", key: key, headers: [.contentType: "application/json"],
                body: .init(string: #"{"target_duration": 15}"#)
            ).problem(.conflict, "job_not_completed")
        }
    }

    @Test func cancellingAPendingJobGivesItsUnitBack() async throws {
        let harness = try RouterHarness()
        try await harness.run { client in
            let (_, key) = try await client.account()
            let jobId = try #require(try await client.upload(key: key).object()["job_id"] as? String)
            #expect(!harness.storedFiles().isEmpty, "the input is stored with the job")
            let cancelled = try await client.send(.delete, "/api/v1/jobs/\(jobId)", key: key)
            #expect(cancelled.status == .ok)
            #expect(try cancelled.object()["status"] as? String == "cancelled")
            #expect(harness.storedFiles().isEmpty, "\(harness.storedFiles())")
            let usage = try await client.send(.get, "/api/v1/account", key: key).object()["usage"] as? [String: Any]
            #expect(usage?["used"] as? Int == 0, "a cancelled job that delivered nothing is not charged")
        }
    }
}
