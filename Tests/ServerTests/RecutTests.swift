import Foundation
import HTTPTypes
import HummingbirdTesting
import Store
import AnalysisDecode
import MediaEngine
import MediaPictures
import NIOCore
import Testing
import Timeline

@Suite("Creative control: re-cuts, reframing, pinned moments, timelines, storyboards", .serialized)
struct RecutTests {
    static func post(_ client: any TestClientProtocol, _ uri: String, key: String, json: String) async throws
        -> TestResponse
    {
        try await client.executeRequest(
            uri: uri, method: .post, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: json))
    }

    static func completed(_ client: any TestClientProtocol, _ job: String, key: String) async throws -> [String: Any] {
        let statuses = try await client.poll(job: job, key: key) {
            ["completed", "failed", "cancelled"].contains($0["status"] as? String ?? "")
        }
        let last = try #require(statuses.last)
        #expect(last["status"] as? String == "completed", "\(last)")
        return try await client.get("/api/v1/jobs/\(job)", key: key).json()
    }

    static func segments(_ detail: [String: Any]) -> [(start: Double, end: Double, crop: [String: Any]?)] {
        ((detail["segments"] as? [[String: Any]]) ?? []).map {
            (($0["start"] as? Double) ?? -1, ($0["end"] as? Double) ?? -1, $0["crop"] as? [String: Any])
        }
    }

    /// The README's creative flow: upload once with an excluded range, then a shorter 9:16 re-cut
    /// with a pinned moment, made from the stored analysis; its timelines and storyboard.
    @Test func recutFromTheStoredAnalysis() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let original = try await Self.uploadWithAnExcludedRange(client, server, video, key: key)
            let (recut, segments) = try await Self.verticalRecutWithAPin(client, server, original: original, key: key)
            try await Self.expectTimelines(client, recut: recut, segments: segments, key: key)
            try await Self.expectStoryboardAndPrivacy(client, original: original, recut: recut, key: key)
        }
    }

    /// The first highlight, nothing from its excluded range; its input is kept for re-cuts. Its job id.
    static func uploadWithAnExcludedRange(
        _ client: any TestClientProtocol, _ server: TestServer, _ video: Data, key: String
    ) async throws -> String {
        let upload = try await client.upload(
            key: key, file: video, fields: [("target_duration", "6"), ("quality", "low"), ("exclude", "0-2.5")])
        #expect(upload.status == .ok, "\(upload.text)")
        let original = try #require(try upload.json()["job_id"] as? String)
        let first = try await Self.completed(client, original, key: key)
        let parameters = try #require(first["parameters"] as? [String: Any])
        #expect(parameters["aspect"] as? String == "source")
        #expect((parameters["exclude"] as? [[String: Any]])?.first?["end"] as? Double == 2.5)
        #expect(
            Self.segments(first).allSatisfy { $0.start >= 2.5 },
            "nothing from the excluded range: \(Self.segments(first))")
        #expect((first["output"] as? [String: Any])?["analysis_reused"] as? Bool == false)
        // The sweeper leaves a completed job's kept input alone.
        await server.service.sweepNow(orphanGraceSeconds: 0)
        #expect(try await server.service.mediaStorage.mediaExists(jobID: original, file: .input))
        let links = try #require(first["links"] as? [String: Any])
        #expect((links["recuts"] as? String)?.hasSuffix("/api/v1/jobs/\(original)/recuts") == true)
        return original
    }

    /// A 5 s vertical re-cut with a pinned moment, from the stored analysis. Its job id and segments.
    static func verticalRecutWithAPin(
        _ client: any TestClientProtocol, _ server: TestServer, original: String, key: String
    ) async throws -> (String, [(start: Double, end: Double, crop: [String: Any]?)]) {
        // A 5 s vertical re-cut with a pinned moment.
        let response = try await Self.post(
            client, "/api/v1/jobs/\(original)/recuts", key: key,
            json: #"{"target_duration": 5, "aspect": "9:16", "include": [1.0], "exclude": []}"#)
        #expect(response.status == .created, "\(response.text)")
        let accepted = try response.json()
        let recut = try #require(accepted["job_id"] as? String)
        #expect(response.headers[.location]?.hasSuffix("/api/v1/jobs/\(recut)") == true)
        let detail = try await Self.completed(client, recut, key: key)
        #expect(detail["recut_of"] as? String == original)
        let output = try #require(detail["output"] as? [String: Any])
        #expect(output["analysis_reused"] as? Bool == true, "the re-cut ran no analysis decode: \(output)")
        let width = try #require(output["width"] as? Int), height = try #require(output["height"] as? Int)
        #expect(height > width && abs(Double(width) / Double(height) - 9.0 / 16) < 0.02, "\(width)x\(height)")
        let segments = Self.segments(detail)
        #expect(segments.contains { $0.start <= 1.0 && $0.end >= 1.0 }, "the pinned moment is in: \(segments)")
        #expect(segments.allSatisfy { $0.crop != nil }, "each segment carries its reframe window")
        let total = segments.reduce(0) { $0 + $1.end - $1.start }
        #expect(abs(total - 5) < 0.6, "\(total) s for a 5 s re-cut")
        let download = try await client.get("/api/v1/jobs/\(recut)/download", key: key)
        let file = server.scratch.path("recut.mp4")
        try Data(download.body.readableBytesView).write(to: URL(fileURLWithPath: file))
        let info = try Probe.probe(file)
        #expect(info.video.displayWidth == width && info.video.displayHeight == height)
        return (recut, segments)
    }

    /// The re-cut's timelines (FCPXML, EDL, OTIO) parse back to its segments, to the frame.
    static func expectTimelines(
        _ client: any TestClientProtocol, recut: String, segments: [(start: Double, end: Double, crop: [String: Any]?)],
        key: String
    ) async throws {
        // Timelines of the re-cut parse back to its segments, to the frame.
        let rate = TimelineRate.nearest(to: 30)
        let frames = segments.map {
            (
                Int(($0.start * Double(rate.numerator) / Double(rate.denominator)).rounded()),
                Int(($0.end * Double(rate.numerator) / Double(rate.denominator)).rounded())
            )
        }
        let fcpxml = try await client.get("/api/v1/jobs/\(recut)/timeline?format=fcpxml", key: key)
        #expect(fcpxml.status == .ok && fcpxml.headers[.contentDisposition]?.contains(".fcpxml") == true)
        #expect(
            fcpxml.text.contains("passwd.mp4") && !fcpxml.text.contains("etc/passwd"),
            "the upload's file name, without its path")
        let fromXML = try TimelineParse.fcpxml(fcpxml.text)
        #expect(
            fromXML.map(\.sourceIn) == frames.map(\.0) && fromXML.map(\.sourceOut) == frames.map(\.1),
            "\(fromXML) vs \(frames)")
        let edl = try await client.get("/api/v1/jobs/\(recut)/timeline?format=edl", key: key)
        let fromEDL = try TimelineParse.edl(edl.text)
        #expect(fromEDL.map(\.sourceIn) == frames.map(\.0) && fromEDL.map(\.sourceOut) == frames.map(\.1))
        let otio = try await client.get("/api/v1/jobs/\(recut)/timeline?format=otio", key: key).json()
        #expect(otio["OTIO_SCHEMA"] as? String == "Timeline.1")
        let bad = try await client.get("/api/v1/jobs/\(recut)/timeline?format=aaf", key: key)
        _ = try bad.expectProblem(.badRequest, code: "invalid_format")
    }

    /// The storyboard is a PNG; another account sees none of the jobs.
    static func expectStoryboardAndPrivacy(
        _ client: any TestClientProtocol, original: String, recut: String, key: String
    ) async throws {
        // The storyboard.
        let storyboard = try await client.get("/api/v1/jobs/\(recut)/storyboard.png", key: key)
        #expect(storyboard.status == .ok && storyboard.headers[.contentType] == "image/png")
        let png = Array(storyboard.body.readableBytesView)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        // The job detail says where the filmstrip row sits in that picture (the studio's timeline
        // shows it): the picture's size as its PNG header gives it, the row inside, full width
        // but the margins.
        let detail = try await client.get("/api/v1/jobs/\(recut)", key: key).json()
        let frame = try #require((detail["output"] as? [String: Any])?["storyboard"] as? [String: Any], "\(detail)")
        let row = try #require(frame["filmstrip"] as? [String: Int])
        let header = { (at: Int) in png[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        let (width, height) = (header(16), header(20))
        #expect(frame["width"] as? Int == width && frame["height"] as? Int == height)
        let (x, y, w, h) = (row["x"] ?? -1, row["y"] ?? -1, row["width"] ?? 0, row["height"] ?? 0)
        #expect(x > 0 && y > 0 && h >= 24 && x + w < width && y + h < height && w > width * 9 / 10, "\(row)")

        // Another account sees none of it.
        let (_, other) = try await client.createAccount()
        _ = try await Self.post(client, "/api/v1/jobs/\(original)/recuts", key: other, json: "{}").expectProblem(
            .notFound)
        _ = try await client.get("/api/v1/jobs/\(recut)/timeline", key: other).expectProblem(.notFound)
        _ = try await client.get("/api/v1/jobs/\(recut)/storyboard.png", key: other).expectProblem(.notFound)
    }

    @Test func badEditsAreRefusedWithAReason() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            for (field, value, code) in [
                ("aspect", "3:2", "invalid_aspect"), ("focus", "faces", "invalid_focus"), ("include", "abc", "invalid_include"),
                ("include", "99", "invalid_include"), ("exclude", "5-2", "invalid_exclude"),
                ("exclude", "0-100", "invalid_exclude")
            ] {
                let response = try await client.upload(key: key, file: video, fields: [(field, value)])
                _ = try response.expectProblem(.unprocessableContent, code: code)
            }
            // A pinned time inside an excluded range.
            let both = try await client.upload(key: key, file: video, fields: [("include", "4"), ("exclude", "3-5")])
            _ = try both.expectProblem(.unprocessableContent, code: "invalid_include")
            // ...or too close to one to have footage around it.
            let edge = try await client.upload(key: key, file: video, fields: [("include", "5.1"), ("exclude", "3-5")])
            _ = try edge.expectProblem(.unprocessableContent, code: "invalid_include")
            #expect(server.storedFiles().isEmpty, "refused uploads leave nothing: \(server.storedFiles())")

            let upload = try await client.upload(
                key: key, file: video, fields: [("target_duration", "5"), ("quality", "low")])
            let job = try #require(try upload.json()["job_id"] as? String)
            _ = try await Self.completed(client, job, key: key)
            _ = try await Self.post(client, "/api/v1/jobs/\(job)/recuts", key: key, json: #"{"aspect": "2:1"}"#)
                .expectProblem(.unprocessableContent, code: "invalid_aspect")
            _ = try await Self.post(client, "/api/v1/jobs/\(job)/recuts", key: key, json: #"{"focus": 3}"#)
                .expectProblem(.unprocessableContent, code: "invalid_focus")
            _ = try await Self.post(client, "/api/v1/jobs/\(job)/recuts", key: key, json: #"{"include": [500]}"#)
                .expectProblem(.unprocessableContent, code: "invalid_include")
            _ = try await Self.post(client, "/api/v1/jobs/\(job)/recuts", key: key, json: #"{"colour": "red"}"#)
                .expectProblem(.badRequest, code: "unknown_field")
            _ = try await Self.post(client, "/api/v1/jobs/\(job)/recuts", key: key, json: "[1,2]")
                .expectProblem(.badRequest, code: "invalid_json")
            // Once the job's media are deleted, there is nothing to re-cut.
            _ = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
            _ = try await Self.post(client, "/api/v1/jobs/\(job)/recuts", key: key, json: "{}")
                .expectProblem(.gone, code: "input_deleted")
        }
    }

    /// plans.<plan>.recuts false: the upload is not kept after its highlight, and a re-cut is refused.
    @Test func planWithoutRecuts() async throws {
        var plans = TestServer.roomyPlans
        plans.free.recuts = false
        let server = try await TestServer(plans: plans)
        let video = try await Fixtures.data(.short)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let upload = try await client.upload(
                key: key, file: video, fields: [("target_duration", "5"), ("quality", "low")])
            let job = try #require(try upload.json()["job_id"] as? String)
            let detail = try await Self.completed(client, job, key: key)
            #expect((detail["links"] as? [String: Any])?["recuts"] == nil)
            #expect(
                try await !server.service.mediaStorage.mediaExists(jobID: job, file: .input),
                "the upload is deleted once the highlight is made")
            _ = try await Self.post(client, "/api/v1/jobs/\(job)/recuts", key: key, json: #"{"target_duration": 6}"#)
                .expectProblem(.forbidden, code: "recuts_not_allowed")
        }
    }
}
