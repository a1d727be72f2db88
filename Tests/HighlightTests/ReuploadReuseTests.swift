import Analysis
import Foundation
@testable import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// Re-uploads recognised from a cheap look at their keyframes, and the earlier analysis reused in
/// their own seconds.
@Suite("Re-upload recognition and analysis reuse")
struct ReuploadReuseTests {
    static let trim = 91.0 / 30  // 3.03 s: not a whole number of fingerprint steps

    @Test(
        "a trimmed re-encode is recognised from its keyframes, to the frame, and the earlier analysis shifted matches its own"
    )
    func trimmedCopyReusesTheAnalysis() throws {
        let dir = Scratch()
        let original = try ReuploadMedia.write(ReuploadMedia.spec(), dir, "original.mp4")
        let analysis = try AnalysisPipeline.analyze(original)
        let fingerprint = try #require(analysis.fingerprint, "the analysis fingerprints its input")
        #expect(abs(fingerprint.duration - analysis.duration) < 0.1)

        let copy = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 40 - Self.trim, parts: ReuploadMedia.trimmedStart(Self.trim)) { $0.crf = 32 },
            dir, "copy.mp4")
        let candidates = [ReuploadCandidate(jobId: "earlier", fingerprint: fingerprint, copySegments: nil)]
        let recognition = try ReuploadRecognizer.recognize(copy, candidates: candidates, analysis: AnalysisSettings())
        let match = try #require(recognition.match, "the copy is recognised")
        #expect(!recognition.deferred)
        #expect(match.jobId == "earlier")
        #expect(abs(match.offset - Self.trim) <= 1.0 / 30 + 1e-6, "offset \(match.offset), expected \(Self.trim)")
        let frames = Int((40 - Self.trim) * 30)
        print(
            "recognised: offset \(String(format: "%.4f", match.offset)) refined \(match.refined) overlap \(match.overlap) distance \(match.distance); \(recognition.framesDecoded) of \(frames) frames decoded"
        )
        #expect(
            recognition.framesDecoded < frames / 3,
            "a cheap look: \(recognition.framesDecoded) of \(frames) frames decoded")

        try Self.reusedAnalysisMatchesTheCopysOwn(analysis, recognition: recognition, copy: copy)
        try Self.unrelatedOrNoCandidatesIsNoMatch(dir, copy: copy, candidates: candidates)
        try Self.sparseKeyframesLookLongerOrDefer(dir, candidates: candidates)
    }

    /// The earlier analysis in the copy's seconds: the copy's own cuts, shots and length, and a
    /// selection of the copy's footage.
    static func reusedAnalysisMatchesTheCopysOwn(
        _ analysis: VideoAnalysis, recognition: Recognition, copy: String
    ) throws {
        // The earlier analysis in the copy's seconds against the copy's own analysis.
        let target = try #require(recognition.target)
        let reused = analysis.reused(for: target)
        let own = try AnalysisPipeline.analyze(copy)
        #expect(abs(reused.duration - own.duration) < 0.1, "\(reused.duration) vs \(own.duration)")
        let frame = 1.0 / 30
        for b in own.boundaries {
            #expect(
                reused.boundaries.contains { abs($0.time - b.time) <= 2 * frame + 1e-6 },
                "cut at \(b.time) of the copy is in the reused analysis: \(reused.boundaries.map(\.time))")
        }
        for b in reused.boundaries {
            #expect(
                own.boundaries.contains { abs($0.time - b.time) <= 2 * frame + 1e-6 },
                "reused cut at \(b.time) is the copy's: \(own.boundaries.map(\.time))")
        }
        #expect(reused.shots.count == own.shots.count)
        #expect(
            reused.candidates.allSatisfy { $0.start >= 0 && $0.end <= reused.duration && $0.shot < reused.shots.count })
        #expect(reused.motion.allSatisfy { $0.time >= 0 && $0.time <= reused.duration })
        #expect(reused.fingerprint == nil, "a reused analysis points at its original")
        // The selection on the reused analysis picks footage of the copy.
        let scored = Scoring.score(reused.candidates, weights: ScoreWeights(), hasAudio: reused.hasAudio)
        var selection = SelectionSettings()
        selection.targetDuration = 10
        let segments = Selector.select(reused, scored: scored, settings: selection)
        #expect(!segments.isEmpty && segments.allSatisfy { $0.start >= 0 && $0.end <= reused.duration + 1e-6 })
    }

    /// Unrelated footage matches no candidate, and nothing matches without candidates.
    static func unrelatedOrNoCandidatesIsNoMatch(
        _ dir: Scratch, copy: String, candidates: [ReuploadCandidate]
    ) throws {
        // Unrelated footage is not recognised; nor is anything without candidates.
        let other = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [
                SynthPart(start: 0, kind: .dull, seed: 21), SynthPart(start: 9, kind: .lively, seed: 22),
                SynthPart(start: 17, kind: .dull, seed: 23), SynthPart(start: 28, kind: .lively, seed: 24)
            ]), dir, "other.mp4")
        #expect(
            try ReuploadRecognizer.recognize(other, candidates: candidates, analysis: AnalysisSettings()).match == nil)
        #expect(try ReuploadRecognizer.recognize(copy, candidates: [], analysis: AnalysisSettings()).match == nil)
    }

    /// Sparse keyframes: 6 s apart, longer bursts still recognise the copy; 15 s apart, the look
    /// defers to the analysis, whose own fingerprint recognises it.
    static func sparseKeyframesLookLongerOrDefer(_ dir: Scratch, candidates: [ReuploadCandidate]) throws {
        // Keyframes 6 s apart: a second's burst after each, and the look still recognises it.
        let sparseKeys = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 30) { $0.keyframeIntervalSeconds = 6 }, dir, "keys-6s.mp4")
        let looked = try ReuploadRecognizer.recognize(sparseKeys, candidates: candidates, analysis: AnalysisSettings())
        #expect(
            looked.match.map { abs($0.offset) <= 1.0 / 30 + 1e-6 } == true,
            "keyframes every 6 s: \(String(describing: looked.match))")
        #expect(looked.framesDecoded < 30 * 30 / 3, "\(looked.framesDecoded) frames")
        // Keyframes too far apart for any look (15 s): the analysis judges instead.
        let sparse = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 30) { $0.keyframeIntervalSeconds = 15 }, dir, "keys-15s.mp4")
        let deferred = try ReuploadRecognizer.recognize(sparse, candidates: candidates, analysis: AnalysisSettings())
        #expect(deferred.deferred && deferred.match == nil)
        let sparseAnalysis = try AnalysisPipeline.analyze(sparse)
        let judged = ReuploadRecognizer.judge(
            try #require(sparseAnalysis.fingerprint), candidates: candidates, duration: sparseAnalysis.duration)
        #expect(
            judged.match.map { abs($0.offset) <= 1.0 / 30 + 1e-6 } == true,
            "the analysis' own fingerprint recognises it: \(String(describing: judged.match))")
    }

    @Test(
        "keyframes every second: the quick pass decodes every other group and decides; its second pass fingerprints the union as one pass would"
    )
    func quickPassThenTheRest() throws {
        let dir = Scratch()
        let original = try ReuploadMedia.write(ReuploadMedia.spec(), dir, "original.mp4")
        let fingerprint = try #require(try AnalysisPipeline.analyze(original).fingerprint)
        let copy = try ReuploadMedia.write(
            ReuploadMedia.spec {
                $0.crf = 32; $0.keyframeIntervalSeconds = 1; $0.fixedGOPWithoutBFrames = true
            },
            dir, "copy-1s-keys.mp4")
        let candidates = [ReuploadCandidate(jobId: "earlier", fingerprint: fingerprint, copySegments: nil)]
        let quick = try ReuploadRecognizer.recognize(copy, candidates: candidates, analysis: AnalysisSettings())
        var everyGroup = ReuploadRecognizer.Settings()
        everyGroup.quickLookSpacing = 0
        let whole = try ReuploadRecognizer.recognize(
            copy, candidates: candidates, analysis: AnalysisSettings(), settings: everyGroup)
        print(
            "1 s keyframes: quick pass \(quick.framesDecoded) frames (\(quick.keyframePasses ?? 0) pass), every group \(whole.framesDecoded) frames"
        )
        #expect(quick.match.map { abs($0.offset) <= 1.0 / 30 + 1e-6 } == true, "\(String(describing: quick.match))")
        #expect(quick.keyframePasses == 1 && quick.verificationFrames == 0)
        #expect(whole.match != nil)
        #expect(
            Double(quick.framesDecoded) <= 0.6 * Double(whole.framesDecoded),
            "\(quick.framesDecoded) vs \(whole.framesDecoded) frames")
        try Self.unrelatedIsNoMatchAfterEitherPass(dir, candidates: candidates)
        try Self.twoPassesFingerprintAsOne(copy)
    }

    /// Unrelated 1 s-keyframe footage: no match, though an alignment sends the look to its second pass.
    static func unrelatedIsNoMatchAfterEitherPass(_ dir: Scratch, candidates: [ReuploadCandidate]) throws {
        // Unrelated footage is not recognised (the synthetic scenes share textures, so an
        // alignment is found and the rest decoded too: both passes still say no).
        let other = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [
                SynthPart(start: 0, kind: .dull, seed: 21), SynthPart(start: 9, kind: .lively, seed: 22),
                SynthPart(start: 17, kind: .dull, seed: 23), SynthPart(start: 28, kind: .lively, seed: 24)
            ]) {
                $0.keyframeIntervalSeconds = 1; $0.fixedGOPWithoutBFrames = true
            }, dir, "other-1s-keys.mp4")
        let unrelated = try ReuploadRecognizer.recognize(other, candidates: candidates, analysis: AnalysisSettings())
        #expect(unrelated.match == nil)
        print("unrelated: \(unrelated.framesDecoded) frames, \(unrelated.keyframePasses ?? 0) pass(es)")
    }

    /// The quick pass's groups and the rest, fingerprinted in time order, give the one-pass fingerprint.
    static func twoPassesFingerprintAsOne(_ copy: String) throws {
        // The two passes together: every group's frames, fingerprinted in time order with the kept ones.
        var options = AnalysisOptions()
        options.maxSide = AnalysisSettings().maxSide
        options.skipNonReferenceFrames = true
        options.decodeAudio = false
        let decoder = try AnalysisDecoder(path: copy, options: options)
        var features = FrameFeatures()
        let onePass = ContentFingerprinter(rotation: 0, expectedSeconds: 40)
        try decoder.runSampled(
            burstFrames: 3,
            onFrame: { frame in
                guard let view = frame.view else { return }
                features.measureThumbnail(view)
                onePass.consume(features)
            }, onGroup: { _ in })
        var kept = ThumbnailLog(expectedFrames: 100)
        var firstKeys = Set<Double>()
        var index = 0
        try decoder.runSampled(
            burstFrames: 3,
            decodesGroup: { time in
                defer { index += 1 }
                if index % 2 == 0 { firstKeys.insert(time) }
                return index % 2 == 0
            },
            onFrame: { frame in
                guard let view = frame.view else { return }
                features.measureThumbnail(view)
                kept.append(features)
            }, onGroup: { _ in })
        #expect(firstKeys.count >= 19 && kept.count > 0)
        let twoPasses = ContentFingerprinter(rotation: 0, expectedSeconds: 40)
        try decoder.runSampled(
            burstFrames: 3, decodesGroup: { !firstKeys.contains($0) },
            onFrame: { frame in
                guard let view = frame.view else { return }
                features.measureThumbnail(view)
                kept.replay(before: features.time, into: twoPasses)
                twoPasses.consume(features)
            }, onGroup: { _ in })
        kept.replayRest(into: twoPasses)
        #expect(
            twoPasses.finish(duration: 40) == onePass.finish(duration: 40),
            "the union of both passes is the one-pass fingerprint")
    }

    @Test(
        "a copy trimmed to 16 s of 24 (8 keyframes): too few entries in the quick pass, a closer look with longer bursts recognises it"
    )
    func shortCopyGetsACloserLook() throws {
        let dir = Scratch()
        let parts: [SynthPart] = [
            SynthPart(start: 0, kind: .dull, seed: 60), SynthPart(start: 3.5, kind: .lively, seed: 61),
            SynthPart(start: 8, kind: .dull, seed: 62),
            SynthPart(start: 11, kind: .lively, seed: 63), SynthPart(start: 15, kind: .dull, seed: 64),
            SynthPart(start: 18, kind: .lively, seed: 65)
        ]
        let original = try ReuploadMedia.write(ReuploadMedia.spec(duration: 24, parts: parts), dir, "original-24s.mp4")
        let fingerprint = try #require(try AnalysisPipeline.analyze(original).fingerprint)
        let candidates = [ReuploadCandidate(jobId: "earlier", fingerprint: fingerprint, copySegments: nil)]
        let trim = 8.0
        let copy = try ReuploadMedia.write(
            ReuploadMedia.spec(
                duration: 24 - trim,
                parts: parts.map { SynthPart(start: $0.start - trim, kind: $0.kind, seed: $0.seed) }
            ) {
                $0.crf = 32
            }, dir, "copy-16s.mp4")
        let recognition = try ReuploadRecognizer.recognize(copy, candidates: candidates, analysis: AnalysisSettings())
        print(
            "16 s copy: \(recognition.framesDecoded) frames, \(recognition.keyframePasses ?? 0) passes, \(String(describing: recognition.match))"
        )
        #expect(
            recognition.match.map { abs($0.offset - trim) <= 1.0 / 30 + 1e-6 } == true,
            "\(String(describing: recognition.match)) \(recognition.firstLook ?? "")")
        #expect(recognition.keyframePasses == 2)
        #expect(
            recognition.framesDecoded < Int((24 - trim) * 30) / 2,
            "still a look, not an analysis: \(recognition.framesDecoded) frames")
        // A short unrelated video is not recognised.
        let other = try ReuploadMedia.write(
            ReuploadMedia.spec(
                duration: 16,
                parts: [
                    SynthPart(start: 0, kind: .lively, seed: 22), SynthPart(start: 7, kind: .dull, seed: 23)
                ]), dir, "other-16s.mp4")
        #expect(
            try ReuploadRecognizer.recognize(other, candidates: candidates, analysis: AnalysisSettings()).match == nil)
    }

    @Test("no verification decode for a family whose dense fingerprint said no; a sparse-only family still gets one")
    func settledFamiliesAreNotVerified() throws {
        let dir = Scratch()
        let original = try ReuploadMedia.write(ReuploadMedia.spec(), dir, "original.mp4")
        let dense = try #require(try AnalysisPipeline.analyze(original).fingerprint)
        let sparse = try ReuploadMedia.fingerprint(original, sparse: SparseSampling(phase: 13))
        #expect(dense.isDense() && !sparse.isDense())
        // The first 10 s of the original, then other footage: related, but not a copy.
        let partial = try ReuploadMedia.write(
            ReuploadMedia.spec(
                parts: Array(ReuploadMedia.originalParts.prefix(2)) + [
                    SynthPart(start: 10, kind: .lively, seed: 41), SynthPart(start: 20, kind: .dull, seed: 42),
                    SynthPart(start: 30, kind: .lively, seed: 43)
                ]), dir, "first-ten.mp4")
        let family = [
            ReuploadCandidate(jobId: "original", fingerprint: dense, copySegments: nil, family: "original"),
            ReuploadCandidate(jobId: "copy", fingerprint: sparse, copySegments: nil, family: "original")
        ]
        let settled = try ReuploadRecognizer.recognize(partial, candidates: family, analysis: AnalysisSettings())
        #expect(settled.match == nil)
        #expect(
            settled.verificationFrames == 0,
            "the dense original said no: \(settled.verificationFrames) verification frames")
        let sparseOnly = [ReuploadCandidate(jobId: "copy", fingerprint: sparse, copySegments: nil, family: "copy")]
        let verified = try ReuploadRecognizer.recognize(partial, candidates: sparseOnly, analysis: AnalysisSettings())
        #expect(verified.match == nil)
        print(
            "first 10 s then other footage: \(settled.framesDecoded) frames against the family with its dense original, \(verified.framesDecoded) (\(verified.verificationFrames) verifying) against its sparse copy alone"
        )
    }
}
