import Foundation
import HTTPTypes
import HummingbirdTesting
import MomentsConfig
import NIOCore
import Store
import Testing

/// Hostile clients against the storage: a re-upload of the same (padded) video is recognised and
/// free, so it must not keep a second copy of the input for the retention period; and whatever an
/// account uploads, the inputs kept for re-cuts stay within its plan's `keptInputBytes`.
@Suite("Hostile clients: storage", .serialized)
struct HostileStorageTests {
    /// The attack's file: a video with megabytes of padding after it (zeros a demuxer skips).
    static func paddedVideo(_ name: String, padding: Int = 2 << 20, seedOffset: Int = 0, trim: Double = 0) async throws
        -> Data
    {
        var data = try await ReuploadTests.video(name, trim: trim, seedOffset: seedOffset)
        data.append(Data(count: padding))
        return data
    }

    static func storesInput(_ server: TestServer, _ job: String) async throws -> Bool {
        try await server.service.mediaStorage.mediaExists(jobID: job, file: .input)
    }

    @Test func aRecognisedReuploadKeepsOneCopyOfItsInput() async throws {
        let server = try await TestServer()
        let video = try await Self.paddedVideo("hostile-same")
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let first = try await ReuploadTests.upload(client, key: key, video)
            let firstID = try #require(first["job_id"] as? String)
            #expect(try await ReuploadTests.used(client, key: key) == 1)
            #expect(try await Self.storesInput(server, firstID), "kept for re-cuts")

            // The same bytes again, three times: recognised, not charged, and one input stored in all.
            var ids = [firstID]
            for _ in 0..<3 {
                let again = try await ReuploadTests.upload(client, key: key, video)
                let id = try #require(again["job_id"] as? String)
                #expect(again["duplicate_of"] != nil, "recognised: \(again)")
                ids.append(id)
            }
            #expect(try await ReuploadTests.used(client, key: key) == 1, "a recognised re-upload charges nothing more")
            // The worker settles the kept inputs just after each job reads completed.
            var stored: [String] = []
            _ = try await eventually(within: 10) {
                stored = []
                for id in ids where try await Self.storesInput(server, id) { stored.append(id) }
                return stored == [ids.last!]
            }
            #expect(stored == [ids.last!], "one copy, the newest's: \(stored) of \(ids)")

            // The earlier jobs' re-cuts use the kept copy.
            let recut = try await RecutTests.post(
                client, "/api/v1/jobs/\(firstID)/recuts", key: key, json: #"{"target_duration": 5}"#)
            #expect(recut.status == .created, "\(recut.text)")
            let recutID = try #require(try recut.json()["job_id"] as? String)
            _ = try await RecutTests.completed(client, recutID, key: key)

            // Deleting the earlier jobs leaves the newest its input.
            for id in ids.dropLast() { _ = try await client.get("/api/v1/jobs/\(id)", key: key, method: .delete) }
            await server.service.sweepNow(orphanGraceSeconds: 0)
            #expect(try await Self.storesInput(server, ids.last!))
            let newest = try await client.get("/api/v1/jobs/\(ids.last!)", key: key).json()
            #expect((newest["links"] as? [String: Any])?["recuts"] != nil, "\(newest)")
        }
    }

    @Test func keptInputsStayWithinThePlansAllowance() async throws {
        let older = try await Self.paddedVideo("hostile-older", padding: 1 << 20)
        let newer = try await Self.paddedVideo("hostile-newer", padding: 1 << 20, seedOffset: 103, trim: 2)
        var plans = TestServer.roomyPlans
        plans.free.keptInputBytes = Int64(older.count + newer.count - 1)
        let server = try await TestServer(plans: plans)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let first = try await ReuploadTests.upload(client, key: key, older)
            let firstID = try #require(first["job_id"] as? String)
            #expect(try await Self.storesInput(server, firstID))

            let second = try await ReuploadTests.upload(client, key: key, newer)
            let secondID = try #require(second["job_id"] as? String)
            #expect(second["duplicate_of"] == nil, "another video: \(second)")
            // Both do not fit: the older input is released, the newer kept. The worker settles the
            // kept inputs just after the job reads completed.
            #expect(
                try await eventually(within: 10) { try await !Self.storesInput(server, firstID) },
                "the oldest kept input is released")
            #expect(try await Self.storesInput(server, secondID))
            let released = try await client.get("/api/v1/jobs/\(firstID)", key: key).json()
            #expect((released["links"] as? [String: Any])?["recuts"] == nil, "no re-cut offered: \(released)")
            // (A raw client: the server answers before reading the body, then closes the connection.)
            let refused = try await Wire(client).send(
                .POST, "/api/v1/jobs/\(firstID)/recuts", key: key,
                headers: [("Content-Type", "application/json")], body: Data("{}".utf8))
            #expect(refused.status == 410, "\(refused.text)")
            let problem = try refused.json()
            #expect((problem["type"] as? String)?.hasSuffix("/input_deleted") == true, "\(problem)")
            #expect((problem["detail"] as? String)?.contains("Upload it again") == true)
            // Its highlight stays.
            #expect(try await client.get("/api/v1/jobs/\(firstID)/download", key: key).status == .ok)
        }
        // A video larger than the whole allowance is not kept at all.
        var tight = TestServer.roomyPlans
        tight.free.keptInputBytes = Int64(older.count - 1)
        let strict = try await TestServer(plans: tight)
        try await withServer(strict, .live) { client in
            let (_, key) = try await client.createAccount()
            let job = try await ReuploadTests.upload(client, key: key, older)
            let id = try #require(job["job_id"] as? String)
            #expect(try await eventually(within: 10) { try await !Self.storesInput(strict, id) })
        }
    }

    @Test func theAllowanceIsASettingOfEachPlan() async throws {
        let shipped = PlanSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(shipped.free.keptInputBytes == 2 << 30 && shipped.pro.keptInputBytes == 50 << 30)
        let set = PlanSettings(
            reader: try await MomentsConfiguration.reader(
                environment: ["PLANS_FREE_KEPT_INPUT_BYTES": "1000"], file: "Config/moments.json"))
        #expect(set.free.keptInputBytes == 1000 && set.pro.keptInputBytes == 50 << 30)
    }
}
