import Analysis
import Foundation
@testable import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// Look-alike moments: two moments of one scene (the background stays, the subject
/// stands elsewhere), even in different shots far apart, are never both in a highlight unless the
/// target cannot be filled without them.
@Suite("Look-alike moments")
struct LookAlikeTests {
    @Test("two moments of one scene in far-apart shots: one of them, unless nothing else fills the target")
    func lookAlikeMomentsAreShownOnce() throws {
        let dir = Scratch()
        var spec = SynthSpec()
        spec.width = 320
        spec.height = 180
        spec.duration = 30
        spec.barcode = false
        spec.audio = false
        spec.parts = [
            SynthPart(start: 0, kind: .lively, seed: 31), SynthPart(start: 5, kind: .posed, seed: 5, subjectX: 0.2),
            SynthPart(start: 10, kind: .lively, seed: 32), SynthPart(start: 15, kind: .dull, seed: 33),
            SynthPart(start: 20, kind: .posed, seed: 5, subjectX: 0.7), SynthPart(start: 25, kind: .lively, seed: 34)
        ]
        let path = dir.path("look-alike.mp4")
        try Synth.write(spec, to: path)
        let analysis = try AnalysisPipeline.analyze(path)
        func inPart(_ c: Candidate) -> SynthPart { spec.part(at: (c.start + c.end) / 2)!.0 }
        func posed(_ c: Candidate) -> Bool { inPart(c).kind == .posed }
        let settings = SelectionSettings()

        // The measure: the posed moments look alike (same scene and colours, subject moved); no other pair does.
        let first = try #require(analysis.candidates.first { posed($0) && $0.end <= 10.01 })
        let second = try #require(analysis.candidates.first { posed($0) && $0.start >= 19.99 })
        #expect(
            Selector.lookAlike(first.fingerprint, second.fingerprint, settings),
            "similarity \(first.fingerprint.similarity(to: second.fingerprint)), colour \(first.fingerprint.colourSimilarity(to: second.fingerprint))"
        )
        #expect(
            first.fingerprint.similarity(to: second.fingerprint) < SegmentFingerprint.duplicateSimilarity,
            "not the same footage")
        for a in analysis.candidates where !posed(a) {
            for b in analysis.candidates
            where inPart(b).seed != inPart(a).seed && (b.start >= a.end || a.start >= b.end) {
                #expect(!Selector.lookAlike(a.fingerprint, b.fingerprint, settings), "\(inPart(a)) vs \(inPart(b))")
            }
        }

        // The posed moments score best: a 10 s highlight still shows only one of them.
        var scored = Scoring.score(analysis.candidates, weights: ScoreWeights(), hasAudio: false)
        for i in scored.indices where posed(scored[i].candidate) { scored[i].score += 10 }
        func posedParts(_ segments: [Segment]) -> Set<Double> {
            Set(
                segments.compactMap { s -> Double? in
                    let part = spec.part(at: (s.start + s.end) / 2)!.0
                    return part.kind == .posed ? part.start : nil
                })
        }
        var selection = settings
        selection.targetDuration = 10
        let short = Selector.select(analysis, scored: scored, settings: selection)
        #expect(posedParts(short).count == 1, "one of the look-alike moments: \(short)")
        #expect(abs(short.reduce(0) { $0 + $1.duration } - 10) <= 0.5)

        // A target only the whole video fills: the look-alike moment comes back rather than a short highlight.
        selection.targetDuration = 27
        let long = Selector.select(analysis, scored: scored, settings: selection)
        #expect(posedParts(long).count == 2, "\(long)")
        #expect(abs(long.reduce(0) { $0 + $1.duration } - 27) <= 0.5)

        // Without the rule (the threshold out of reach) both posed moments are taken at 10 s: the test discriminates.
        selection.targetDuration = 10
        selection.lookAlikeSimilarity = 2
        #expect(posedParts(Selector.select(analysis, scored: scored, settings: selection)).count == 2)
    }
}
