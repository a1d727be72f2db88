import Highlight
import MediaConfig
import Foundation
import HummingbirdTesting
import AnalysisDecode
import MediaEngine
import MediaPictures
import MomentsConfig
import Testing

/// The `media.analysis.*` and `media.render.*` keys of Config/ change what jobs do (read back from
/// the job's analysis JSON and its highlight), not only what the CLI does.
@Suite("Media config reaches jobs", .serialized, .onceAcrossEngines)
struct MediaConfigTests {
    private func job(_ media: MediaDefaults) async throws -> (analysis: [String: Any], highlight: Data) {
        let server = try await TestServer(media: media)
        let video = try await Fixtures.data(.short)
        let (analysis, highlight) = try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let (job, status) = try await client.uploadAndWait(video, key: key)
            #expect(status == "completed")
            let analysis = try await client.get("/api/v1/jobs/\(job)/analysis", key: key)
            let download = try await client.get("/api/v1/jobs/\(job)/download", key: key)
            return (Data(analysis.body.readableBytesView), Data(download.body.readableBytesView))
        }
        let json = try #require(try JSONSerialization.jsonObject(with: analysis) as? [String: Any])
        return (json, highlight)
    }

    @Test("analysis.audioSampleRate, maxFrameRate, skipLoopFilter and decodePlan; render.audioFadeSeconds")
    func keysReachJobs() async throws {
        var media = MediaDefaults()
        media.template.analysis.audioSampleRate = 8_000
        media.template.analysis.maxFrameRate = 10
        media.template.analysis.skipLoopFilter = false
        media.template.analysis.plan.choice = .full
        media.template.audioFade = 0.5
        let tuned = try await job(media)
        let decode = try #require(tuned.analysis["decode"] as? [String: Any])
        #expect(decode["plan"] as? String == "full")
        #expect(decode["skipped_loop_filter"] as? Bool == false)
        let samples = try #require(decode["audio_samples"] as? Int)
        #expect(abs(Double(samples) - 12 * 8_000) < 1_600, "\(samples) audio samples at 8 kHz")
        let analysed = try #require(decode["frames_analysed"] as? Int)
        #expect(analysed >= 115 && analysed <= 125, "\(analysed) frames analysed at 10 fps")

        var sampled = MediaDefaults()
        sampled.template.analysis.plan.choice = .sampled
        let plain = try await job(sampled)
        let plainDecode = try #require(plain.analysis["decode"] as? [String: Any])
        #expect(plainDecode["plan"] as? String == "sampled")
        #expect(abs(Double(plainDecode["audio_samples"] as? Int ?? 0) - 12 * 16_000) < 2_400)

        // The fade: the highlight's first 0.2 s is faint with a 0.5 s fade-in, loud without
        // (the same settings otherwise, so the same moments).
        var unfaded = media
        unfaded.template.audioFade = MediaDefaults().template.audioFade
        let loud = try await job(unfaded)
        #expect(try openingLoudness(tuned.highlight) < 0.5 * openingLoudness(loud.highlight))
    }

    @Test("analysis.faces and faceLibrary reach the job's analysis; weights.people is read from the environment")
    func faceKeys() async throws {
        // The shipped default looks for faces (the detector is installed by make setup).
        let looked = try await job(MediaDefaults())
        let faces = try #require(looked.analysis["faces"] as? [String: Any])
        #expect(faces["unavailable"] == nil, "\(faces)")
        #expect((faces["looks"] as? [Double])?.isEmpty == false)
        var off = MediaDefaults()
        off.template.analysis.faces.enabled = false
        let switchedOff = try #require(try await job(off).analysis["faces"] as? [String: Any])
        #expect((switchedOff["unavailable"] as? String)?.contains("switched off") == true)
        var missing = MediaDefaults()
        missing.template.analysis.faces.library = "/nonexistent/libfacedetection.so"
        let absent = try #require(try await job(missing).analysis["faces"] as? [String: Any])
        let why = try #require(absent["unavailable"] as? String)
        #expect(why.contains("not installed") && !why.contains("nonexistent"), "\(why)")

        let reader = try await MomentsConfiguration.reader(
            environment: [
                "MEDIA_WEIGHTS_PEOPLE": "1.5", "MEDIA_ANALYSIS_FACES": "false",
                "MEDIA_ANALYSIS_FACE_LIBRARY": "/opt/faces.so",
            ], file: "/nonexistent/moments.json")
        let read = MediaDefaults(reader: reader)
        #expect(read.template.weights.people == 1.5)
        #expect(read.template.analysis.faces.enabled == false)
        #expect(read.template.analysis.faces.library == "/opt/faces.so")
    }

    /// Mean absolute level of the first 0.2 s of a video's sound (a highlight starts at a quiet
    /// point: the synthetic lively sound's 150 ms gaps; a burst follows within them).
    private func openingLoudness(_ video: Data) throws -> Double {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fade-\(UUID().uuidString).mp4").path
        try video.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var sum = 0.0, count = 0
        try AnalysisDecoder(path: path).run(
            onFrame: { _ in },
            onAudio: { chunk in
                for (i, v) in chunk.samples.enumerated() where chunk.time + Double(i) / Double(chunk.sampleRate) < 0.2 {
                    sum += Double(abs(v))
                    count += 1
                }
            })
        return sum / Double(max(1, count))
    }
}
