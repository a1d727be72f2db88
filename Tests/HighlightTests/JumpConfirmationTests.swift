import Analysis
import Foundation
@testable import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Jump confirmation")
struct JumpConfirmationTests {
    /// The anchors pass compares pictures two to four frames apart, so a subject's own motion can
    /// spike like a jump there. Each jump it reports is judged again on every frame around it.
    @Test("a jump the anchors pass reports where every frame shows none is dropped; one beside a real jump lands on its frame")
    func judgedOnEveryFrame() throws {
        let dir = Scratch()
        let path = try bFramePartsVideo(
            dir, "jump.mp4", duration: 10,
            [
                SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.2),
                SynthPart(start: 3.1, kind: .posed, seed: 5, subjectX: 0.7),  // a jump on frame 93
                SynthPart(start: 6, kind: .lively, seed: 31)
            ])
        var settings = AnalysisSettings()
        settings.shots.jumpCuts = true
        let decoder = try AnalysisDecoder(path: path, options: settings.decodeOptions)
        func jump(_ frame: Double) -> ShotBoundary {
            ShotBoundary(kind: .jump, time: frame / 30, windowStart: frame / 30, windowEnd: frame / 30, score: 0.5)
        }
        let cut = ShotBoundary(kind: .cut, time: 6, windowStart: 6, windowEnd: 6, score: 0.5)
        // Reported: the real jump two frames late (the next anchor), a jump in the still posed
        // part, one in the lively part's fast motion, and the cut.
        let reported = [jump(95), jump(45), cut, jump(240)]
        let judged = try JumpConfirmation.confirm(
            reported, decoder: decoder, settings: settings.shots, frameRate: 30)
        #expect(judged.boundaries.map(\.kind) == [.jump, .cut], "\(judged.boundaries)")
        #expect(abs((judged.boundaries.first?.time ?? 0) - 3.1) < 0.5 / 30, "\(judged.boundaries)")
        #expect(judged.boundaries.last == cut)
        // A second of frames on each side of each jump; the first two jumps' surroundings overlap
        // and are decoded once, as one range (0.5-4.2 s, then 7-9 s; from each one's keyframe).
        #expect(judged.ranges == 2)
        #expect(judged.frames > 150 && judged.frames < 300, "\(judged.frames) frames")
        // Without a jump, nothing is decoded.
        let none = try JumpConfirmation.confirm([cut], decoder: decoder, settings: settings.shots, frameRate: 30)
        #expect(none.boundaries == [cut] && none.ranges == 0 && none.frames == 0)
    }
}
