import Analysis
import Foundation
@testable import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// The earlier highlight given to a recognised copy: returned whole without a render, or its shared
/// segments copied into a new one; crop positions moved between stored orientations.
extension ReuploadReuseTests {
    /// The original (40 s) and its 8 s highlight at low quality: `first.mp4`, its stored analysis
    /// `first-analysis.json`.
    /// The source second a report's poster shows (its output time walked back through the hard-cut segments).
    static func posterSourceTime(_ report: HighlightReport) -> Double? {
        guard var t = report.posterTime else { return nil }
        for s in report.segments {
            if t < s.end - s.start { return s.start + t }
            t -= s.end - s.start
        }
        return nil
    }

    static func firstHighlight(_ dir: Scratch) throws -> HighlightResult {
        let original = try ReuploadMedia.write(ReuploadMedia.spec(), dir, "original.mp4")
        var request = HighlightRequest(source: original)
        request.output = dir.path("first.mp4")
        request.posterOutput = dir.path("first-poster.jpg")
        request.analysisData = dir.path("first-analysis.json")
        request.selection.targetDuration = 8
        request.quality = .low
        return try HighlightEngine.make(request)
    }

    @Test(
        "the same highlight asked of a recognised copy is the earlier one's segments, in the copy's seconds, without a render"
    )
    func sameHighlightIsReturnedWithoutARender() throws {
        let dir = Scratch()
        let first = try Self.firstHighlight(dir)
        let fingerprint = try #require(first.fingerprint)

        let copy = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 40 - Self.trim, parts: ReuploadMedia.trimmedStart(Self.trim)) { $0.crf = 30 },
            dir, "copy.mp4")
        let earlier = first.report.segments
        let candidates = [ReuploadCandidate(jobId: "earlier", fingerprint: fingerprint, copySegments: earlier)]
        let recognition = try ReuploadRecognizer.recognize(copy, candidates: candidates, analysis: AnalysisSettings())
        let match = try #require(recognition.match)
        var again = HighlightRequest(source: copy)
        again.output = dir.path("second.mp4")
        again.analysisData = dir.path("second-analysis.json")
        again.selection.targetDuration = 8
        again.quality = .low
        again.reuse = AnalysisReuse(
            analysisPath: dir.path("first-analysis.json"), match: match, target: try #require(recognition.target),
            copySegments: earlier.allSatisfy { $0.start >= Self.trim } ? earlier : nil)
        let second = try HighlightEngine.make(again)
        #expect(second.report.analysisReused == true)
        let duplicate = try #require(second.report.duplicateOf)
        #expect(duplicate.jobId == "earlier")
        if earlier.allSatisfy({ $0.start >= Self.trim }) {
            #expect(duplicate.resultCopied)
            #expect(
                second.render == nil && !FileManager.default.fileExists(atPath: dir.path("second.mp4")), "no render")
            for (a, b) in zip(second.report.segments, earlier) {
                #expect(abs(a.start - (b.start - match.offset)) < 1e-9 && abs(a.end - (b.end - match.offset)) < 1e-9)
            }
        } else {
            #expect(!duplicate.resultCopied && second.render != nil)
        }
        // The copy's own stored analysis is in its seconds (a re-cut of it works on it).
        let stored = try #require(HighlightEngine.loadAnalysis(dir.path("second-analysis.json")))
        #expect(abs(stored.duration - (40 - Self.trim)) < 0.1)

        // Another highlight of the copy (a shorter one): the analysis is reused, the render is made.
        var other = again
        other.selection.targetDuration = 5
        other.output = dir.path("third.mp4")
        other.analysisData = dir.path("third-analysis.json")
        other.reuse?.copySegments = nil
        let third = try HighlightEngine.make(other)
        #expect(third.report.analysisReused == true && third.report.duplicateOf?.resultCopied == false)
        #expect(third.render != nil && third.report.segments.allSatisfy { $0.end <= 40 - Self.trim + 1e-6 })
    }

    @Test(
        "the same highlight of a copy trimmed into it: the moments both share are copied from the earlier file, not encoded again"
    )
    func trimmedIntoTheHighlightCopiesTheSharedSegments() throws {
        let dir = Scratch()
        let first = try Self.firstHighlight(dir)
        let earlier = first.report.segments.sorted { $0.start < $1.start }
        try #require(earlier.count >= 2, "\(earlier)")
        // Trimmed just past the earlier highlight's first moment: it is gone, the others stay.
        let trim = ((earlier[0].end + 0.2) * 30).rounded(.up) / 30
        try #require(earlier[1].start > trim + 0.1, "\(earlier)")
        let copy = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 40 - trim, parts: ReuploadMedia.trimmedStart(trim)) { $0.crf = 30 },
            dir, "copy.mp4")
        let candidates = [
            ReuploadCandidate(
                jobId: "earlier", fingerprint: try #require(first.fingerprint), copySegments: first.report.segments)
        ]
        let recognition = try ReuploadRecognizer.recognize(copy, candidates: candidates, analysis: AnalysisSettings())
        let match = try #require(recognition.match)
        #expect(abs(match.offset - trim) <= 1.0 / 30, "offset \(match.offset), trimmed \(trim)")
        #expect(
            ReuploadRecognizer.copiedSegments(first.report.segments, offset: match.offset, duration: 40 - trim) == nil)

        var again = HighlightRequest(source: copy)
        again.output = dir.path("second.mp4")
        again.posterOutput = dir.path("second-poster.jpg")
        again.selection.targetDuration = 8
        again.quality = .low
        again.reuse = AnalysisReuse(
            analysisPath: dir.path("first-analysis.json"), match: match, target: try #require(recognition.target),
            copySegments: first.report.segments, earlierResult: dir.path("first.mp4"),
            earlierPoster: dir.path("first-poster.jpg"))
        let second = try HighlightEngine.make(again)
        #expect(second.report.duplicateOf?.resultCopied == false)
        let render = try #require(second.render)
        // Where the new highlight shows what the earlier one showed, those pictures are copied (from
        // a keyframe on: each earlier moment starts on one, and there is one at least every 2 s).
        let kept = earlier.dropFirst().map { (start: $0.start - match.offset, end: $0.end - match.offset) }
        let shared = kept.reduce(0.0) { sum, k in
            sum + second.report.segments.reduce(0.0) { $0 + max(0, min($1.end, k.end) - max($1.start, k.start)) }
        }
        #expect(shared >= 2, "\(kept) vs \(second.report.segments)")
        #expect(
            render.copiedFrames > 0 && Double(render.copiedFrames) >= (shared - 2.0 * Double(kept.count)) * 30,
            "\(render.copiedFrames) copied of \(render.frames), \(shared) s shared")
        #expect(render.copiedFrames < render.frames, "the new moment is encoded")

        // The poster: the earlier one's file when the best frame is the one it shows (here it is:
        // that moment is one both highlights share), drawn from the new highlight otherwise.
        let earlierFrame = try #require(Self.posterSourceTime(first.report)),
            newFrame = try #require(Self.posterSourceTime(second.report))
        #expect(
            abs(newFrame + match.offset - earlierFrame) < 0.5 / 30,
            "poster frames \(earlierFrame) vs \(newFrame) + \(match.offset)")
        #expect(second.report.posterReused == true)
        #expect(
            FileManager.default.contents(atPath: dir.path("second-poster.jpg"))
                == FileManager.default.contents(atPath: dir.path("first-poster.jpg")))

        // The same highlight encoded in full: same length, same moments, the same poster frame drawn.
        again.reuse?.earlierResult = nil
        again.reuse?.earlierPoster = nil
        again.output = dir.path("plain.mp4")
        again.posterOutput = dir.path("plain-poster.jpg")
        let plain = try HighlightEngine.make(again)
        #expect(plain.render?.copiedFrames == 0 && plain.render?.frames == render.frames)
        #expect(plain.report.segments == second.report.segments)
        #expect(plain.report.posterReused == nil && plain.report.posterTime == second.report.posterTime)
        #expect(FileManager.default.fileExists(atPath: dir.path("plain-poster.jpg")))
        let info = try Probe.probe(dir.path("second.mp4"))
        #expect(abs(info.duration - render.duration) <= 1.0 / 30)
    }

    /// The earlier highlight's moments in the copy's seconds: shifted, clipped to the copy, their
    /// score, reason and people kept (a recognised re-upload lists the same people moments), the
    /// crop left to the new render; none when one falls outside the copy.
    @Test func copiedMomentsKeepWhatTheyAre() throws {
        let earlier = [
            Segment(start: 3, end: 7, score: 0.8, reason: "people", people: true,
                    crop: CropWindow(x: 0.2, y: 0, width: 0.5, height: 1)),
            Segment(start: 10, end: 12.5, score: 0.6, reason: "motion", people: false)
        ]
        let copied = try #require(ReuploadRecognizer.copiedSegments(earlier, offset: 2, duration: 20))
        #expect(copied == [
            Segment(start: 1, end: 5, score: 0.8, reason: "people", people: true),
            Segment(start: 8, end: 10.5, score: 0.6, reason: "motion", people: false)
        ])
        #expect(ReuploadRecognizer.copiedSegments(earlier, offset: 4, duration: 20) == nil)
    }

    @Test("positions move between stored orientations through the displayed picture")
    func reorientation() {
        // The displayed top-left corner of a 90-degree source is its stored bottom-left.
        let turn = Reorientation(from: 90, to: 0)
        let (x, y) = turn.point(0, 1)
        #expect(abs(x - 0) < 1e-6 && abs(y - 0) < 1e-6)
        for from in [0, 90, 180, 270] {
            for to in [0, 90, 180, 270] {
                let there = Reorientation(from: from, to: to).point(0.2, 0.7)
                let back = Reorientation(from: to, to: from).point(there.0, there.1)
                #expect(abs(back.0 - 0.2) < 1e-6 && abs(back.1 - 0.7) < 1e-6, "\(from) -> \(to)")
                let v = Reorientation(from: from, to: to).vector(0.3, -0.1)
                let w = Reorientation(from: to, to: from).vector(v.0, v.1)
                #expect(abs(w.0 - 0.3) < 1e-6 && abs(w.1 + 0.1) < 1e-6)
            }
        }
    }
}
