import Foundation
import HTTPTypes
import HummingbirdTesting
import MomentsConfig
import Testing

/// Plain uploads through the router, the probe answered from memory: acceptance, the plan's
/// limits, and refusals that leave nothing behind and charge nothing.
@Suite("Router: uploads")
struct UploadRoutesTests {
    @Test func anAcceptedUploadIsAPendingJobOnlyItsAccountSees() async throws {
        let harness = try RouterHarness()
        try await harness.run { client in
            let (_, key) = try await client.account()
            let accepted = try await client.upload(key: key, fields: [("target_duration", "20")])
            #expect(accepted.status == .ok, "\(String(buffer: accepted.body))")
            let json = try accepted.object()
            let jobId = try #require(json["job_id"] as? String)
            #expect((json["quota"] as? [String: Any])?["used"] as? Int == 1)
            let status = try await client.send(.get, "/api/v1/jobs/\(jobId)/status", key: key)
            #expect(try status.object()["status"] as? String == "pending")
            let (_, other) = try await client.account()
            try await client.send(.get, "/api/v1/jobs/\(jobId)/status", key: other).problem(.notFound, "job_not_found")
            try await client.send(.delete, "/api/v1/jobs/\(jobId)", key: other).problem(.notFound, "job_not_found")
        }
        #expect(harness.storedFiles().count == 0, "the folder is removed after the run")
    }

    @Test func anUnreadableFileIsRefusedAndLeavesNothing() async throws {
        let harness = try RouterHarness(probe: StubProbe(refusal: .unreadable))
        try await harness.run { client in
            let (_, key) = try await client.account()
            try await client.upload(key: key).problem(.unprocessableContent, "unreadable")
            #expect(harness.storedFiles().isEmpty, "\(harness.storedFiles())")
            let usage = try await client.send(.get, "/api/v1/account", key: key).object()["usage"] as? [String: Any]
            #expect(usage?["used"] as? Int == 0, "a refused upload is not charged")
        }
    }

    @Test func theMonthsQuotaIsEnforcedAndNamesTheUpgrade() async throws {
        var plans = PlanSettings()
        plans.free.monthlyHighlights = 1
        plans.free.concurrentJobs = 5
        let product = plans.proProductId
        try await RouterHarness(plans: plans).run { client in
            let (_, key) = try await client.account()
            #expect(try await client.upload(key: key).status == .ok)
            let refused = try await client.upload(key: key).problem(HTTPResponse.Status(code: 402), "quota_exceeded")
            #expect(refused["product_id"] as? String == product, "\(refused)")
        }
    }

    @Test func aVideoLongerThanThePlanIsRefusedWithTheLimit() async throws {
        var plans = PlanSettings()
        plans.free.maxDurationSeconds = 120
        try await RouterHarness(plans: plans, probe: StubProbe(duration: 600)).run { client in
            let (_, key) = try await client.account()
            let problem = try await client.upload(key: key).problem(.unprocessableContent, "too_long")
            #expect("\(problem)".contains("120"), "\(problem)")
        }
    }

    @Test func aBodyThatIsNotAFormIsRefused() async throws {
        try await RouterHarness().run { client in
            let (_, key) = try await client.account()
            try await client.send(.post, "/api/v1/upload", key: key, headers: [.contentType: "video/mp4"])
                .problem(.unsupportedMediaType, "not_multipart")
        }
    }
}
