import Analysis
import FFmpeg
import Foundation
import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// The whole engine on uploads whose headers lie: memory and work follow the decoded media.
@Suite("Hostile input through the engine")
struct HostileHighlightTests {
    func source(_ dir: Scratch, seconds: Double) throws -> String {
        let path = dir.path("source.mp4")
        var spec = SynthSpec()
        spec.width = 128
        spec.height = 72
        spec.duration = seconds
        spec.parts = [SynthPart(start: 0, kind: .lively, seed: 1), SynthPart(start: seconds / 2, kind: .dull, seed: 2)]
        spec.barcode = false
        try Synth.write(spec, to: path)
        return path
    }

    func patch(_ source: String, to path: String, _ edit: (inout MP4Patch) -> Void) throws -> String {
        var patch = try MP4Patch(contentsOf: source)
        edit(&patch)
        try patch.write(to: path)
        return path
    }

    static func peakResident() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    @Test("a 2,000,000,000 timescale with one-tick frames: analysis is bounded (it used to abort allocating ~1 TB)")
    func billionTickTimescale() throws {
        let dir = Scratch()
        let path = try patch(try source(dir, seconds: 2), to: dir.path("ticks.mp4")) {
            $0.retimeVideo(timescale: 2_000_000_000, sampleDelta: 1)
        }
        do {
            let analysis = try AnalysisPipeline.analyze(path)
            #expect(analysis.duration < 3)
            #expect(analysis.summary.framesDecoded <= 240)
        } catch {
            #expect([MediaError.Kind.tooManyFrames, .badTimestamps, .unusable].contains(error.kind), "\(error)")
        }
        #expect(Self.peakResident() < 2 << 30)
    }

    @Test("a header claiming hours on a short video: nothing is sized from it")
    func headerClaimsHours() throws {
        let dir = Scratch()
        let path = try patch(try source(dir, seconds: 3), to: dir.path("hours.mp4")) { $0.claimDuration(40_000) }
        let analysis = try AnalysisPipeline.analyze(path)
        #expect(analysis.duration < 5, "the decoded length, not the header's \(analysis.duration)")
        let report = HighlightEngine.makeReport(analysis, scored: [], segments: [])
        #expect(report.signals.motion.count <= 5)
    }

    @Test("a video longer than the plan's cap whose header says it is short: too long, analysis and render alike")
    func tooLong() throws {
        let dir = Scratch()
        let path = try patch(try source(dir, seconds: 8), to: dir.path("short.mp4")) { $0.claimDuration(2) }
        var settings = AnalysisSettings()
        settings.limits = DecodeLimits(maxDecodedSeconds: 5)
        #expect(throws: MediaError.self) { _ = try AnalysisPipeline.analyze(path, settings: settings) }
        do { _ = try AnalysisPipeline.analyze(path, settings: settings) } catch {
            #expect(error.kind == .tooLong)
            #expect(error.detail.contains("5 s"))
        }
        var request = HighlightRequest(source: path)
        request.output = dir.path("out.mp4")
        request.limits = DecodeLimits(maxDecodedSeconds: 5)
        #expect(request.analysis.limits.maxDecodedSeconds == 5)
        do { _ = try HighlightEngine.make(request); Issue.record("expected too long") } catch {
            #expect(error.kind == .tooLong)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("out.mp4")))
        // Within the cap the same file is analysed in full.
        settings.limits = DecodeLimits(maxDecodedSeconds: 600)
        #expect(try AnalysisPipeline.analyze(path, settings: settings).duration > 7.5)
    }

    @Test("the limits are part of the cache key")
    func cacheKey() throws {
        let dir = Scratch()
        let path = try source(dir, seconds: 1)
        let cache = AnalysisCache(directory: dir.path("cache"))
        var tight = AnalysisSettings()
        tight.limits = DecodeLimits(maxDecodedSeconds: 60)
        #expect(try cache.key(for: path, settings: tight) != cache.key(for: path, settings: AnalysisSettings()))
    }

    @Test("analysers reserve a bounded amount whatever the caller expects")
    func boundedReservation() {
        let frames = Int.max / 4
        _ = ShotDetector(expectedFrames: frames, maxFrameRate: 2e9)
        _ = MotionAnalyzer(expectedFrames: frames)
        _ = QualityAnalyzer(expectedFrames: frames)
        _ = FingerprintCollector(expectedFrames: frames)
        #expect(Self.peakResident() < 2 << 30)
    }
}
