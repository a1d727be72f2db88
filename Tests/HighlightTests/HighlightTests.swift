import Analysis
import Foundation
import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// A temporary directory removed when released.
final class Scratch {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("moments-highlight-\(UUID().uuidString)")
    init() { try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// A small synthetic video made of `parts` (no barcode: frozen parts must not change).
func partsVideo(_ dir: Scratch, _ name: String, duration: Double, _ parts: [SynthPart]) throws -> (
    path: String, spec: SynthSpec
) {
    var spec = SynthSpec()
    spec.width = 320
    spec.height = 180
    spec.duration = duration
    spec.barcode = false
    spec.parts = parts
    let path = dir.path(name)
    try Synth.write(spec, to: path)
    return (path, spec)
}

/// `duration` s of 480x270 H.264 made of `parts`, with three B-frames between anchors in a fixed
/// pattern and a keyframe every 2 s (the anchors plan's input), no frame-number barcode (redrawn on
/// every frame, it is what the jump measures' fine grid calls a jump).
func bFramePartsVideo(_ dir: Scratch, _ name: String, duration: Double, _ parts: [SynthPart]) throws -> String {
    var spec = SynthSpec()
    spec.width = 480
    spec.height = 270
    spec.duration = duration
    spec.keyframeIntervalSeconds = 2
    spec.preset = "veryfast"
    spec.fixedBFrames = 3
    spec.barcode = false
    spec.parts = parts
    let path = dir.path(name)
    try Synth.write(spec, to: path)
    return path
}

/// 60 s: lively parts among dull, black, frozen and blurred ones, and a repeat of the first lively part.
func plantedVideo(_ dir: Scratch, _ configure: (inout SynthSpec) -> Void = { _ in }) throws -> (
    path: String, spec: SynthSpec
) {
    var spec = SynthSpec.planted()
    configure(&spec)
    let path = dir.path("planted.mp4")
    try Synth.write(spec, to: path)
    return (path, spec)
}

/// What a highlight of the planted layout shows: its length, and the seconds of it on lively parts
/// and on defects (black, frozen, blurred), sampled at 100 points per segment.
func plantedShares(_ segments: [Segment], _ spec: SynthSpec) -> (total: Double, lively: Double, defect: Double) {
    var lively = 0.0, defect = 0.0
    for s in segments {
        for step in 0..<100 {
            let kind = spec.part(at: s.start + s.duration * (Double(step) + 0.5) / 100)!.0.kind
            if kind == .lively { lively += s.duration / 100 }
            if kind == .black || kind == .frozen || kind == .blurred { defect += s.duration / 100 }
        }
    }
    return (segments.reduce(0) { $0 + $1.duration }, lively, defect)
}

@Suite("Highlight")
struct HighlightTests {
    @Test("picks the lively parts, once each, never defects, at the asked length, in order")
    func selection() throws {
        let dir = Scratch()
        let (path, spec) = try plantedVideo(dir)
        var request = HighlightRequest(source: path)
        request.selection.targetDuration = 12
        request.output = dir.path("highlight.mp4")
        request.analysisOutput = dir.path("analysis.json")
        request.posterOutput = dir.path("poster.jpg")
        let result = try HighlightEngine.make(request)
        let segments = result.report.segments
        let (total, lively, defect) = plantedShares(segments, spec)
        #expect(abs(total - 12) <= 0.5, "total \(total)")
        #expect(zip(segments, segments.dropFirst()).allSatisfy { $0.end <= $1.start }, "chronological, no overlap")
        #expect(segments.allSatisfy { $0.duration >= 1.5 })
        #expect(lively / total >= 0.85, "lively share \(lively / total)")
        #expect(defect == 0, "defect seconds \(defect)")
        let original = segments.contains { $0.start < 11 && $0.end > 6 }
        let repeated = segments.contains { $0.start < 51 && $0.end > 46 }
        #expect(!(original && repeated), "the repeated footage appears twice")

        // Outputs: the MP4 at that length, a poster, the analysis JSON with its fields.
        let info = try Probe.probe(request.output!)
        #expect(abs(info.duration - total) < 0.1)
        #expect(FileManager.default.fileExists(atPath: request.posterOutput!))
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: request.analysisOutput!)))
            as! [String: Any]
        for key in ["duration", "fps", "cuts", "shots", "signals", "candidates", "segments"] {
            #expect(json[key] != nil, "\(key)")
        }
        let signals = json["signals"] as! [String: Any]
        #expect((signals["motion"] as! [Any]).count == 60 && signals["loudness"] != nil && signals["sharpness"] != nil)
        let cuts = json["cuts"] as! [Int]
        // Every part starts a shot, at its first frame (within one frame), except that the black
        // part between 11 and 15 s is one fade boundary inside it rather than two cuts.
        let starts: [Double] = spec.parts.dropFirst().map(\.start).filter { $0 != 11 && $0 != 15 }
        let expected: [Int] = starts.map { Int($0 * 30) }
        let boundaries = result.report.boundaries
        #expect(cuts.count == expected.count + 1, "cuts \(cuts)")
        for e in expected { #expect(cuts.contains { abs($0 - e) <= 1 }, "no cut at frame \(e): \(cuts)") }
        #expect(boundaries.contains { $0.kind == .fade && $0.time > 11 && $0.time < 15 })
    }

    @Test("segment boundaries inside a shot land on quiet points of the sound")
    func quietCuts() throws {
        let dir = Scratch()
        let (path, _) = try partsVideo(
            dir, "talk.mp4", duration: 24,
            [SynthPart(start: 0, kind: .lively, seed: 3), SynthPart(start: 12, kind: .lively, seed: 8)])
        var request = HighlightRequest(source: path)
        request.selection.targetDuration = 8
        let result = try HighlightEngine.make(request)
        let boundaries = result.report.boundaries.map(\.time)
        var checked = 0
        for s in result.report.segments {
            for t in [s.start, s.end] where !boundaries.contains(where: { abs($0 - t) < 0.35 }) && t > 0.2 && t < 23.8 {
                // Lively sound: 250 ms bursts then 150 ms gaps, every 400 ms.
                let phase = t.truncatingRemainder(dividingBy: 0.4)
                #expect(phase >= 0.23 && phase <= 0.42, "a cut at \(t) s falls \(phase) s into a burst")
                checked += 1
            }
        }
        #expect(checked >= 2)
    }

    @Test("a video shorter than the target gives all its usable footage")
    func shortVideo() throws {
        let dir = Scratch()
        let (path, _) = try partsVideo(
            dir, "short.mp4", duration: 9,
            [
                SynthPart(start: 0, kind: .lively, seed: 1), SynthPart(start: 4, kind: .black, seed: 0),
                SynthPart(start: 5, kind: .dull, seed: 2)
            ])
        var request = HighlightRequest(source: path)
        request.selection.targetDuration = 30
        let result = try HighlightEngine.make(request)
        let total = result.report.segments.reduce(0) { $0 + $1.duration }
        #expect(total > 6.5 && total <= 8.1, "total \(total)")
        #expect(!result.report.segments.contains { $0.start < 4.9 && $0.end > 4.1 }, "black included")
    }

    @Test("the analysis is cached by content and settings")
    func cache() throws {
        let dir = Scratch()
        var spec = SynthSpec()
        spec.duration = 6
        spec.cuts = [3]
        let path = dir.path("v.mp4")
        try Synth.write(spec, to: path)
        let copy = dir.path("renamed.mp4")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        let cacheDir = dir.path("cache")
        let first = try HighlightEngine.analyze(path, settings: AnalysisSettings(), cacheDirectory: cacheDir)
        let second = try HighlightEngine.analyze(copy, settings: AnalysisSettings(), cacheDirectory: cacheDir)
        #expect(!first.cached && second.cached)
        #expect(first.0 == second.0)
        var other = AnalysisSettings()
        other.shots.cutThreshold = 0.5
        #expect(try !HighlightEngine.analyze(path, settings: other, cacheDirectory: cacheDir).cached)
    }

    @Test("footage re-encoded smaller and softer is recognised as the same; other footage is not")
    func reencodedFootage() throws {
        let dir = Scratch()
        let (original, _) = try partsVideo(
            dir, "original.mp4", duration: 8,
            [SynthPart(start: 0, kind: .lively, seed: 4), SynthPart(start: 4, kind: .lively, seed: 9)])
        // The same footage through the encoder again, re-encoded by libx264 at the fastest preset.
        var copy = RenderRequest(
            source: original, segments: [TimeRange(start: 0.5, end: 3.5)], output: dir.path("copy.mp4"))
        copy.quality = .low
        copy.preset = "ultrafast"
        _ = try Renderer.render(copy)
        let a = try AnalysisPipeline.analyze(original)
        let b = try AnalysisPipeline.analyze(copy.output)
        guard let first = a.candidates.first(where: { $0.shot == 0 }),
            let second = a.candidates.first(where: { $0.shot == 1 }),
            let again = b.candidates.first
        else {
            Issue.record("missing candidates: \(a.candidates.count), \(b.candidates.count)")
            return
        }
        #expect(first.fingerprint.similarity(to: again.fingerprint) >= SegmentFingerprint.duplicateSimilarity)
        #expect(second.fingerprint.similarity(to: again.fingerprint) < SegmentFingerprint.duplicateSimilarity)
    }

    @Test("a video with nothing usable is refused with a reason")
    func nothingUsable() throws {
        let dir = Scratch()
        let (path, _) = try partsVideo(dir, "black.mp4", duration: 5, [SynthPart(start: 0, kind: .black, seed: 0)])
        var request = HighlightRequest(source: path)
        request.selection.targetDuration = 5
        request.output = dir.path("out.mp4")
        do {
            _ = try HighlightEngine.make(request)
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .unusable)
        }
        #expect(!FileManager.default.fileExists(atPath: request.output!))
    }
}
