import Analysis
import Foundation
import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// `quality=original` through the engine: the selection snaps starts onto keyframes and the
/// pictures are copied, or the highlight is encoded and says why.
@Suite("Original quality")
struct OriginalQualityTests {
    /// 24 s of lively and dull parts, P-frames only, a keyframe every `keyframes` seconds.
    static func video(_ dir: Scratch, keyframes: Double) throws -> String {
        var spec = SynthSpec()
        spec.width = 480
        spec.height = 270
        spec.duration = 24
        spec.keyframeIntervalSeconds = keyframes
        spec.fixedGOPWithoutBFrames = true
        spec.barcode = false
        spec.parts = [
            SynthPart(start: 0, kind: .dull, seed: 1), SynthPart(start: 3.3, kind: .lively, seed: 7),
            SynthPart(start: 8.6, kind: .dull, seed: 2), SynthPart(start: 12.2, kind: .lively, seed: 11),
            SynthPart(start: 17.7, kind: .dull, seed: 3), SynthPart(start: 20.4, kind: .lively, seed: 13)
        ]
        spec.beeps = [4.0, 9.0, 14.0, 21.0]
        let path = dir.path("source.mp4")
        try Synth.write(spec, to: path)
        return path
    }

    static func request(_ source: String, _ dir: Scratch) -> HighlightRequest {
        var request = HighlightRequest(source: source)
        request.output = dir.path("out.mp4")
        request.quality = .uhd
        request.selection.targetDuration = 8
        request.original = OriginalSettings()
        return request
    }

    @Test("one keyframe a second: every start lands on one in its own shot and the pictures are copied")
    func copied() throws {
        let dir = Scratch()
        let source = try Self.video(dir, keyframes: 1)
        let result = try HighlightEngine.make(Self.request(source, dir))
        let render = try #require(result.report.render)
        #expect(render.method == .copy, "\(render)")
        #expect((render.largestStartShift ?? 9) <= 1 + 1e-6)
        for segment in result.report.segments {
            #expect(abs(segment.start - segment.start.rounded()) < 1e-6, "\(segment.start) is not on a keyframe")
        }
        #expect(result.render?.copiedFrames == result.render?.frames)
        #expect(try Probe.probe(dir.path("out.mp4")).video.codecLongName.contains("H.264"))
        // The highlight's length is still what was asked for.
        #expect(abs((result.render?.duration ?? 0) - 8) <= 1)
    }

    @Test(
        "a start moves to the nearest keyframe (at most half a second with one a second), never into the shot before"
    )
    func snapRule() throws {
        let dir = Scratch()
        let source = try Self.video(dir, keyframes: 1)
        let analysis = try HighlightEngine.analyze(source, settings: AnalysisSettings(), cacheDirectory: nil).0
        let keyframes = try PacketTable.read(source, limits: DecodeLimits(), cancellation: nil).keyframeTimes
        let asked = [
            Segment(start: 5.4, end: 7, score: 1, reason: ""),
            Segment(start: 13.6, end: 16, score: 1, reason: ""),
            Segment(start: 20.45, end: 22, score: 1, reason: "")
        ]
        let snapped = try Selector.snapToKeyframes(
            asked, keyframes: keyframes, analysis: analysis, settings: KeyframeSnapSettings(),
            selection: SelectionSettings()
        ).get()
        // 20.45 is just after the cut at 20.4: 20.0 would show the shot before, so 21.0.
        #expect(snapped.map(\.start) == [5.0, 14.0, 21.0])
        // Each end moved with its start: the lengths stay.
        #expect(zip(asked, snapped).allSatisfy { abs($0.duration - $1.duration) < 1e-6 })
        var far = KeyframeSnapSettings()
        far.maxStartShift = 0.3
        let refused = Selector.snapToKeyframes(
            asked, keyframes: keyframes, analysis: analysis, settings: far, selection: SelectionSettings())
        guard case .failure(let refusal) = refused else {
            Issue.record("a start 0.4 s from every keyframe was snapped with a 0.3 s limit")
            return
        }
        #expect(refusal.start == 5.4 && refusal.reason.contains("0.40 s away"))
    }

    @Test("keyframes 10 s apart: the highlight is encoded, and says why")
    func farKeyframes() throws {
        let dir = Scratch()
        let source = try Self.video(dir, keyframes: 10)
        let result = try HighlightEngine.make(Self.request(source, dir))
        let render = try #require(result.report.render)
        #expect(render.method == .encode)
        #expect(render.reason?.contains("keyframes are too far apart") == true, "\(render)")
        #expect(result.render?.copiedFrames == 0)
    }

    @Test("a 9:16 crop or a crossfade is encoded, and says why")
    func shapeAndCrossfade() throws {
        let dir = Scratch()
        let source = try Self.video(dir, keyframes: 1)
        var portrait = Self.request(source, dir)
        portrait.aspect = .portrait
        let cropped = try #require(try HighlightEngine.make(portrait).report.render)
        #expect(cropped.method == .encode && cropped.reason?.contains("crops the picture") == true)
        var faded = Self.request(source, dir)
        faded.style = .crossfade
        let blended = try #require(try HighlightEngine.make(faded).report.render)
        #expect(blended.method == .encode && blended.reason?.contains("crossfade") == true)
    }
}
