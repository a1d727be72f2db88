import Foundation
import HummingbirdTesting
import Testing

/// `focus` through the API on real footage with people in it (scripts/people-footage's mix: a man
/// in a car, an animated dialogue and a webcam face beside a screencast, between bikes, a ball and an animated bunny):
/// the job runs in the isolated child, which loads the face detector there.
@Suite("People through the API", .serialized, .onceAcrossEngines)
struct PeopleJobTests {
    static func footage() throws -> Data {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let path = root.appendingPathComponent(".build/footage/mix-test.mp4").path
        #expect(
            FileManager.default.fileExists(atPath: path),
            "run scripts/people-footage first (make test does): it fetches the footage and builds \(path)")
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// A 47 s video analysed with faces and rendered: minutes under the service tier's 16-wide
    /// load on PostgreSQL + S3, so a longer deadline than the other tests' 120 s.
    static func completed(_ client: any TestClientProtocol, _ job: String, key: String) async throws -> [String: Any] {
        let statuses = try await client.poll(job: job, key: key, timeout: 420) {
            ["completed", "failed", "cancelled"].contains($0["status"] as? String ?? "")
        }
        #expect(statuses.last?["status"] as? String == "completed", "\(statuses.last ?? [:])")
        return try await client.get("/api/v1/jobs/\(job)", key: key).json()
    }

    /// Seconds of the highlight in its people moments.
    static func peopleSeconds(_ segments: [[String: Any]]) -> Double {
        segments.filter { $0["people"] as? Bool == true }.reduce(0) { $0 + ($1["duration"] as? Double ?? 0) }
    }

    @Test("an upload with focus=auto at 9:16 shows people moments; a re-cut with focus=action keeps the stored faces")
    func focusThroughTheAPI() async throws {
        let video = try Self.footage()
        let server = try await TestServer(media: .shipped)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let upload = try await client.upload(
                key: key, file: video,
                fields: [("target_duration", "20"), ("quality", "low"), ("aspect", "9:16"), ("focus", "auto")])
            #expect(upload.status == .ok, "\(upload.text)")
            let job = try #require(try upload.json()["job_id"] as? String)
            let detail = try await Self.completed(client, job, key: key)
            let parameters = try #require(detail["parameters"] as? [String: Any])
            #expect(parameters["focus"] as? String == "auto")
            let segments = try #require(detail["segments"] as? [[String: Any]])
            let people = segments.filter { $0["people"] as? Bool == true }.count
            #expect(people >= 3, "\(segments)")
            #expect(detail["people_moments"] as? Int == people)
            let analysis = try await client.get("/api/v1/jobs/\(job)/analysis", key: key).json()
            let faces = try #require(analysis["faces"] as? [String: Any])
            #expect(faces["unavailable"] == nil, "the child could not load the detector: \(faces)")
            #expect((faces["tracks"] as? [Any])?.isEmpty == false)

            let recut = try await RecutTests.post(
                client, "/api/v1/jobs/\(job)/recuts", key: key, json: #"{"focus": "action", "aspect": "16:9"}"#)
            #expect(recut.status == .created, "\(recut.text)")
            let recutJob = try #require(try recut.json()["job_id"] as? String)
            let recutDetail = try await Self.completed(client, recutJob, key: key)
            #expect((recutDetail["parameters"] as? [String: Any])?["focus"] as? String == "action")
            #expect((recutDetail["output"] as? [String: Any])?["analysis_reused"] as? Bool == true)
            // The stored faces are kept (the re-cut reads them, the crop can use them) ...
            let recutAnalysis = try await client.get("/api/v1/jobs/\(recutJob)/analysis", key: key).json()
            #expect(((recutAnalysis["faces"] as? [String: Any])?["tracks"] as? [Any])?.isEmpty == false)
            // ... but no longer preferred: fewer seconds of the highlight show people. (A lively
            // moment may still have a face in it, so the count of people moments alone can tie.)
            let recutSegments = try #require(recutDetail["segments"] as? [[String: Any]])
            #expect(
                Self.peopleSeconds(recutSegments) < Self.peopleSeconds(segments) - 2,
                "action \(recutSegments), auto \(segments)")
        }
    }
}
