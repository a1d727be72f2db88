import Foundation
import HTTPTypes
import HummingbirdTesting
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import MomentsConfig
import Testing

/// `quality=original` through the API: refused on the free plan before anything is charged; on
/// pro, the phone's own HEVC HDR pictures copied, then a preview every browser plays; a 9:16 re-cut
/// of it is encoded and says why.
@Suite("Original quality through the API", .serialized)
struct OriginalQualityJobTests {
    /// 6 s of 720p HEVC Main10 HLG, P-frames only, a keyframe a second (a phone's structure).
    static func phoneVideo() throws -> Data {
        var spec = SynthSpec.phone(width: 1280, height: 720, frameRate: 30, duration: 6, rotation: 0)
        spec.cuts = [2.5]
        spec.beeps = [1, 3, 5]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("moments-phone-\(UUID()).mp4").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Synth.write(spec, to: path)
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    @Test("a free account asking for original is refused with the product that lifts it, and nothing is charged")
    func freePlanRefused() async throws {
        let video = try await Fixtures.data(.short)
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let upload = try await client.upload(
                key: key, file: video, fields: [("target_duration", "5"), ("quality", "original")])
            let problem = try upload.expectProblem(HTTPResponse.Status(code: 402), code: "quality_not_in_plan")
            #expect(problem["product_id"] as? String == "com.moments.pro.monthly")
            #expect((problem["detail"] as? String)?.contains("choose quality high") == true, "\(problem)")
            let account = try await client.get("/api/v1/account", key: key).json()
            #expect((account["usage"] as? [String: Any])?["used"] as? Int == 0, "\(account)")
            #expect(try await client.get("/api/v1/jobs", key: key).json()["total"] as? Int == 0)
        }
    }

    @Test(
        "pro: the highlight is the phone's own HEVC HLG pictures, then a 540p H.264 preview; a 9:16 re-cut is encoded and says why"
    )
    func proOriginal() async throws {
        let video = try Self.phoneVideo()
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let (account, key) = try await client.createAccount()
            try await server.service.database.grantPro(
                accountId: account, until: Date().addingTimeInterval(86400), now: Date())
            let upload = try await client.upload(
                key: key, file: video, fields: [("target_duration", "5"), ("quality", "original")])
            #expect(upload.status == .ok, "\(upload.text)")
            let job = try #require(try upload.json()["job_id"] as? String)
            let detail = try await RecutTests.completed(client, job, key: key)
            #expect((detail["parameters"] as? [String: Any])?["quality"] as? String == "original")
            let output = try #require(detail["output"] as? [String: Any])
            let render = try #require(output["render"] as? [String: Any])
            #expect(render["method"] as? String == "copy", "\(render)")
            #expect(output["width"] as? Int == 1280 && output["height"] as? Int == 720)

            let download = try await client.get("/api/v1/jobs/\(job)/download", key: key)
            #expect(download.status == .ok)
            let original = try Self.probe(Data(download.body.readableBytesView))
            #expect(original.video.codec == "hevc" && original.video.bitDepth == 10)
            #expect(original.video.colorTransfer == "arib-std-b67")

            // The preview follows the completion.
            var preview: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(180)
            while Date() < deadline {
                let current = try await client.get("/api/v1/jobs/\(job)", key: key).json()
                preview = (current["output"] as? [String: Any])?["preview"] as? [String: Any] ?? [:]
                if preview["state"] as? String != "pending" { break }
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(preview["state"] as? String == "ready", "\(preview)")
            let links = try await client.get("/api/v1/jobs/\(job)", key: key).json()["links"] as? [String: Any]
            #expect((links?["preview"] as? String)?.hasSuffix("/api/v1/jobs/\(job)/preview") == true)
            let small = try await client.get("/api/v1/jobs/\(job)/preview", key: key)
            #expect(small.status == .ok && small.headers[.contentType] == "video/mp4")
            let previewInfo = try Self.probe(Data(small.body.readableBytesView))
            #expect(previewInfo.video.codec == "h264" && previewInfo.video.bitDepth == 8 && !previewInfo.video.isHDR)
            #expect(min(previewInfo.video.displayWidth, previewInfo.video.displayHeight) <= 540)
            let mediaLinks = try await client.get("/api/v1/jobs/\(job)/media-links", key: key).json()
            #expect(mediaLinks["preview"] is String)

            // A 9:16 re-cut cannot copy (the picture is cropped): encoded, and the detail says why.
            let recut = try await RecutTests.post(
                client, "/api/v1/jobs/\(job)/recuts", key: key, json: #"{"aspect": "9:16"}"#)
            #expect(recut.status == .created, "\(recut.text)")
            let recutJob = try #require(try recut.json()["job_id"] as? String)
            let recutDetail = try await RecutTests.completed(client, recutJob, key: key)
            let recutRender = (recutDetail["output"] as? [String: Any])?["render"] as? [String: Any]
            #expect(recutRender?["method"] as? String == "encode", "\(recutRender ?? [:])")
            #expect((recutRender?["reason"] as? String)?.contains("crops the picture") == true)
        }
    }

    @Test("plans.*.original: off for free and on for pro as shipped, set per plan from the environment")
    func planSetting() async throws {
        let shipped = PlanSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(!shipped.free.original && shipped.pro.original)
        let set = PlanSettings(
            reader: try await MomentsConfiguration.reader(
                environment: ["PLANS_FREE_ORIGINAL": "true", "PLANS_PRO_ORIGINAL": "false"], file: "Config/moments.json"))
        #expect(set.free.original && !set.pro.original)
    }

    static func probe(_ data: Data) throws -> MediaInfo {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("moments-probe-\(UUID()).mp4").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try data.write(to: URL(fileURLWithPath: path))
        return try Probe.probe(path)
    }
}
