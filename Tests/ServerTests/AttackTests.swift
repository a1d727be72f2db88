import Foundation
import HTTPTypes
import HummingbirdTesting
import Store
import MediaSynth
import MomentsConfig
import Testing

/// The attacks of the security review, replayed through the HTTP API against a running server:
/// each is refused (4xx problem+json) or ends in a job that fails with a clear message; the server
/// stays up, no other account's pixels come back, and no body reveals a path or FFmpeg's text.
@Suite("Attacks through the API")
struct AttackTests {
    /// A copy of `fixture` with its MP4 boxes edited.
    static func patched(_ fixture: Fixtures.Name, _ edit: (inout MP4Patch) -> Void) throws -> Data {
        var patch = try MP4Patch(contentsOf: Fixtures.path(fixture))
        edit(&patch)
        return patch.data
    }

    /// Uploads `file` as the attacker; returns the response and, when a job was made, its final detail.
    static func attack(_ client: any TestClientProtocol, key: String, file: Data, server: TestServer) async throws -> (
        TestResponse, [String: Any]?
    ) {
        let response = try await client.upload(key: key, file: file, fields: [("target_duration", "5")])
        expectNoInternals(response.text, server: server)
        guard response.status == .ok, let job = try response.json()["job_id"] as? String else { return (response, nil) }
        _ = try await client.poll(job: job, key: key, timeout: 90) {
            ["completed", "failed"].contains($0["status"] as? String ?? "")
        }
        let detail = try await client.get("/api/v1/jobs/\(job)", key: key)
        expectNoInternals(detail.text, server: server)
        return (response, try detail.json())
    }

    /// Manifests, playlists and concat lists naming another account's highlight: refused at upload
    /// (422), nothing of the victim's video is read or returned.
    @Test func manifestsNamingAnotherAccountsVideo() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        let victimJob = try await withServer(server, .live) { client in
            let (_, victimKey) = try await client.createAccount()
            let accepted = try await client.upload(key: victimKey, file: video, fields: [("target_duration", "5")])
            let victimJob = try #require(try accepted.json()["job_id"] as? String)
            _ = try await client.poll(job: victimJob, key: victimKey) { $0["status"] as? String == "completed" }
            return victimJob
        }
        let target = server.layout.resultPath(victimJob)
        #expect(try await server.service.mediaStorage.mediaExists(jobID: victimJob, file: .result))
        // Each refused upload closes its connection: the router client sends each on its own.
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let attacks = [
                "hls":
                    "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:10.0,\nfile://\(target)\n#EXTINF:10.0,\n\(target)\n#EXT-X-ENDLIST\n",
                "dash": """
                <?xml version="1.0" encoding="utf-8"?>
                <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT10S" minBufferTime="PT1S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
                 <Period><AdaptationSet mimeType="video/mp4"><Representation id="1" bandwidth="100000" width="320" height="180" codecs="avc1.42c00a">
                  <BaseURL>file://\(target)</BaseURL><SegmentBase indexRange="0-100"/></Representation></AdaptationSet></Period>
                </MPD>
                """,
                "ffconcat": "ffconcat version 1.0\nfile '\(target)'\nfile 'file:\(target)'\n"
            ]
            for (name, text) in attacks {
                let (response, job) = try await Self.attack(client, key: key, file: Data(text.utf8), server: server)
                #expect(job == nil, "\(name) made a job: \(job ?? [:])")
                let problem = try response.expectProblem(.unprocessableContent)
                #expect(
                    ["unsupported_container", "not_media"].contains(
                        (problem["type"] as? String)?.split(separator: "/").last.map(String.init) ?? ""),
                    "\(name): \(problem)")
            }
            let list = try await client.get("/api/v1/jobs", key: key).json()
            #expect(list["total"] as? Int == 0)
            #expect(try await client.get("/health", key: nil).status == .ok)
        }
    }

    /// The 87 KB crafted MP4 of the review (a 2,000,000,000 timescale and one-tick frames) and a
    /// flood of frames in no time: a clear failure, the server alive, the unit given back.
    @Test(arguments: ["billion-tick timescale", "frame flood"])
    func lyingTimestamps(_ attack: String) async throws {
        let server = try await TestServer()
        let file = try Self.patched(.short) { patch in
            if attack == "frame flood" {
                patch.retimeVideo(sampleDelta: 1)
            } else {
                patch.retimeVideo(timescale: 2_000_000_000, sampleDelta: 1)
            }
        }
        try await withServer(server, .live) { client in
            let (accountId, key) = try await client.createAccount()
            let (response, job) = try await Self.attack(client, key: key, file: file, server: server)
            if let job {
                #expect(job["status"] as? String == "failed", "\(job)")
                let error = try #require(job["error"] as? [String: Any])
                #expect(
                    ["too_many_frames", "bad_timestamps", "processing_failed", "no_usable_footage"].contains(
                        error["code"] as? String ?? ""), "\(error)")
                #expect(
                    (error["message"] as? String)?.hasPrefix("The video could not be processed") == true
                        || error["code"] as? String == "no_usable_footage", "\(error)")
            } else {
                try response.expectProblem(.unprocessableContent)
            }
            #expect(try await client.get("/health", key: nil).status == .ok)
            let ledger = try await server.service.database.ledger(accountId: accountId)
            #expect(ledger.map(\.change).reduce(0, +) == 0, "nothing charged for a job that did not deliver: \(ledger)")
        }
        #expect(server.storedFiles().isEmpty, "\(server.storedFiles())")
    }

    /// A 12 s video whose header says 5 s passes the plan's 8 s cap at upload, and is stopped by the
    /// cap on decoded timestamps: the job fails naming the limit.
    @Test func headerClaimingShortIsStoppedAtThePlanLimit() async throws {
        var plans = TestServer.roomyPlans
        plans.free.maxDurationSeconds = 8
        let server = try await TestServer(plans: plans)
        let file = try Self.patched(.short) { $0.claimDuration(5) }
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let (response, job) = try await Self.attack(client, key: key, file: file, server: server)
            #expect(response.status == .ok, "the header claims 5 s: \(response.text)")
            let error = try #require(job?["error"] as? [String: Any], "\(job ?? [:])")
            #expect(error["code"] as? String == "too_long", "\(error)")
            #expect((error["message"] as? String)?.contains("8 s") == true, "the limit is named: \(error)")
        }
    }
}
