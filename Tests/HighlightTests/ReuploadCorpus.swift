import Analysis
import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// The corpus's copies of one 40 s original (re-encodes, resizes, HEVC, trims, rotation), written
/// to `dir`, and their fingerprints, full and sparse.
struct CorpusCopies {
    static let frame = 1.0 / 30
    static let trim = 91.0 / 30  // 3.03 s: not a whole number of steps

    let crf: String, startTrim: String
    let fOriginal, fOriginalSparse, fRotated, fBaked: ContentFingerprint
    let fCRF, fCRFSparse, fCRFSparseSamePhase, fHalf, fHEVC: ContentFingerprint
    let fStart, fStartSparse, fEnd, fBoth: ContentFingerprint

    init(_ dir: Scratch) throws {
        let trim = Self.trim
        let original = try ReuploadMedia.write(ReuploadMedia.spec(), dir, "original.mp4")
        let rotated = try ReuploadMedia.write(ReuploadMedia.spec { $0.rotation = 90 }, dir, "rotated-metadata.mp4")
        let baked = dir.path("rotated-pixels.mp4")
        try ReuploadMedia.transcode(rotated, to: baked)
        let crf = try ReuploadMedia.write(ReuploadMedia.spec { $0.crf = 40 }, dir, "crf40.mp4")
        // Synth draws its textures in pixels, so other sizes are made by scaling the original.
        let half = dir.path("half.mp4")
        try ReuploadMedia.transcode(original, to: half, maxSide: 160, crf: 28)
        let hevc = try ReuploadMedia.write(
            ReuploadMedia.spec {
                $0.codec = .hevc; $0.crf = 30
            }, dir, "hevc.mp4")
        let startTrim = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 40 - trim, parts: ReuploadMedia.trimmedStart(trim)) { $0.crf = 30 },
            dir, "trim-start.mp4")
        let endTrim = try ReuploadMedia.write(ReuploadMedia.spec(duration: 33) { $0.crf = 30 }, dir, "trim-end.mp4")
        let bothTrimSource = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 30, parts: ReuploadMedia.trimmedStart(5)), dir, "trim-both-source.mp4")
        let bothTrim = dir.path("trim-both.mp4")
        try ReuploadMedia.transcode(bothTrimSource, to: bothTrim, maxSide: 240, crf: 32, codec: .hevc)
        self.crf = crf
        self.startTrim = startTrim

        fOriginal = try ReuploadMedia.fingerprint(original)
        fOriginalSparse = try ReuploadMedia.fingerprint(original, sparse: SparseSampling(phase: 0))
        fRotated = try ReuploadMedia.fingerprint(rotated)
        fBaked = try ReuploadMedia.fingerprint(baked)
        fCRF = try ReuploadMedia.fingerprint(crf)
        fCRFSparse = try ReuploadMedia.fingerprint(crf, sparse: SparseSampling(phase: 13))
        fCRFSparseSamePhase = try ReuploadMedia.fingerprint(crf, sparse: SparseSampling(phase: 0))
        fHalf = try ReuploadMedia.fingerprint(half)
        fHEVC = try ReuploadMedia.fingerprint(hevc)
        fStart = try ReuploadMedia.fingerprint(startTrim)
        fStartSparse = try ReuploadMedia.fingerprint(startTrim, sparse: SparseSampling(phase: 7))
        fEnd = try ReuploadMedia.fingerprint(endTrim)
        fBoth = try ReuploadMedia.fingerprint(bothTrim)
    }

    /// The fingerprints no unrelated video may match.
    var family: [(String, ContentFingerprint)] {
        [
            ("original", fOriginal), ("original sparse", fOriginalSparse), ("crf 40", fCRF), ("half", fHalf),
            ("HEVC", fHEVC),
            ("trim start", fStart), ("trim end", fEnd), ("trim both", fBoth), ("sparse copy", fCRFSparse)
        ]
    }
}

/// What the corpus counted: duplicates recognised, false matches, and the time matching took.
struct CorpusTally {
    var found = 0, total = 0
    var falseMatches = 0, negativeChecks = 0
    var clock = Duration.zero, matches = 0

    /// A match, timed.
    mutating func timed(_ a: ContentFingerprint, _ b: ContentFingerprint) -> FingerprintMatch? {
        let start = ContinuousClock.now
        let m = FingerprintMatcher.match(a, b)
        clock += ContinuousClock.now - start
        matches += 1
        return m
    }
}

extension ReuploadFingerprintTests {
    /// Every copy matches its original, both ways round, at its offset.
    static func checkCopies(_ c: CorpusCopies, _ tally: inout CorpusTally) {
        let (frame, trim) = (CorpusCopies.frame, CorpusCopies.trim)
        // (name, new, old, expected offset, tolerance)
        let positives: [(String, ContentFingerprint, ContentFingerprint, Double, Double)] = [
            ("crf 40", c.fCRF, c.fOriginal, 0, frame),
            ("half resolution", c.fHalf, c.fOriginal, 0, frame),
            ("HEVC", c.fHEVC, c.fOriginal, 0, frame),
            ("trimmed 3.03 s at the start", c.fStart, c.fOriginal, trim, frame),
            ("trimmed at the end", c.fEnd, c.fOriginal, 0, frame),
            ("trimmed both ends, 240 px HEVC", c.fBoth, c.fOriginal, 5, frame),
            ("rotation in pixels vs metadata", c.fBaked, c.fRotated, 0, frame),
            ("sparse copy vs full original", c.fCRFSparse, c.fOriginal, 0, frame),
            ("sparse trimmed copy vs full original", c.fStartSparse, c.fOriginal, trim, frame),
            ("sparse copy vs sparse original (same phase)", c.fCRFSparseSamePhase, c.fOriginalSparse, 0, frame)
        ]
        for (name, new, old, offset, tolerance) in positives {
            for (a, b, expected) in [(new, old, offset), (old, new, -offset)] {
                tally.total += 1
                let m = tally.timed(a, b)
                let error = m.map { abs($0.offset - expected) } ?? .infinity
                print(
                    "positive \(name) \(expected >= 0 ? "" : "(reversed)"): \(m.map { "offset \(String(format: "%.4f", $0.offset)) error \(String(format: "%.4f", error)) overlap \(String(format: "%.1f", $0.overlap)) distance \(String(format: "%.2f", $0.distance)) refined \($0.refined)" } ?? "no match")"
                )
                #expect(m != nil, "\(name): not recognised: \(FingerprintMatcher.judge(a, b))")
                #expect(error <= tolerance + 1e-6, "\(name): offset \(m?.offset ?? .nan), expected \(expected)")
                if error <= tolerance + 1e-6 { tally.found += 1 }
            }
        }
    }

    /// Both sparse with keyframes at other times: frames up to half a keyframe interval apart
    /// cannot be compared in fast footage; the verdict asks for a verification decode of the new
    /// video at the old entries' times, which then matches.
    static func checkSparseCopiesOfOtherPhase(_ c: CorpusCopies, _ tally: inout CorpusTally) throws {
        let fOriginalSparse = c.fOriginalSparse
        for (name, new, newPath, expected) in [
            ("sparse copy vs sparse original (other phase)", c.fCRFSparse, c.crf, 0.0),
            ("sparse trimmed vs sparse original (other phase)", c.fStartSparse, c.startTrim, CorpusCopies.trim)
        ] {
            tally.total += 1
            let start = ContinuousClock.now
            var verdict = FingerprintMatcher.judge(new, fOriginalSparse)
            tally.clock += ContinuousClock.now - start
            tally.matches += 1
            print("  ", verdict)
            #expect(
                verdict.match != nil || !verdict.verifyAt.isEmpty, "\(name): neither a match nor a verification request"
            )
            if verdict.match == nil, !verdict.verifyAt.isEmpty {
                let windows = verdict.verifyAt.count
                let verified = try ReuploadMedia.fingerprint(
                    newPath, sparse: SparseSampling(phase: 0, times: verdict.verifyAt, seconds: verdict.verifySeconds))
                verdict = FingerprintMatcher.judge(verified, fOriginalSparse)
                print("   after a verification decode of \(windows) windows:", verdict)
            }
            let m = verdict.match
            let error = m.map { abs($0.offset - expected) } ?? .infinity
            print(
                "positive \(name): \(m.map { "offset \(String(format: "%.4f", $0.offset)) error \(String(format: "%.4f", error)) refined \($0.refined)" } ?? "no match")"
            )
            #expect(error <= 0.25, "\(name): \(verdict)")
            if error <= 0.25 { tally.found += 1 }
        }
    }

    /// Unrelated videos, fingerprinted (the last one sparse), and the path of the one that shares
    /// the original's first 10 s.
    static func negatives(_ dir: Scratch) throws -> ([(String, ContentFingerprint)], firstTen: String) {
        let other = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [
                SynthPart(start: 0, kind: .dull, seed: 21), SynthPart(start: 9, kind: .lively, seed: 22),
                SynthPart(start: 17, kind: .dull, seed: 23), SynthPart(start: 28, kind: .lively, seed: 24)
            ]), dir, "other.mp4")
        let sameKinds = try ReuploadMedia.write(
            ReuploadMedia.spec(
                parts: ReuploadMedia.originalParts.map {
                    SynthPart(start: $0.start, kind: $0.kind, seed: $0.seed + 20)
                }), dir, "same-kinds.mp4")
        let blackFrozen = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [
                SynthPart(start: 0, kind: .black, seed: 0), SynthPart(start: 12, kind: .frozen, seed: 11),
                SynthPart(start: 30, kind: .black, seed: 0)
            ]), dir, "black-frozen.mp4")
        let firstTen = try ReuploadMedia.write(
            ReuploadMedia.spec(
                parts: Array(ReuploadMedia.originalParts.prefix(2)) + [
                    SynthPart(start: 10, kind: .lively, seed: 41), SynthPart(start: 20, kind: .dull, seed: 42),
                    SynthPart(start: 30, kind: .lively, seed: 43)
                ]), dir, "first-ten.mp4")
        let negatives: [(String, ContentFingerprint)] = [
            ("other video", try ReuploadMedia.fingerprint(other)),
            ("same kinds, other seeds", try ReuploadMedia.fingerprint(sameKinds)),
            ("mostly black and frozen", try ReuploadMedia.fingerprint(blackFrozen)),
            ("first 10 s then other content", try ReuploadMedia.fingerprint(firstTen)),
            (
                "first 10 s then other content, sparse",
                try ReuploadMedia.fingerprint(firstTen, sparse: SparseSampling(phase: 5))
            )
        ]
        return (negatives, firstTen)
    }

    /// No unrelated video matches any copy, either way round.
    static func checkNegatives(
        _ negatives: [(String, ContentFingerprint)], against family: [(String, ContentFingerprint)],
        _ tally: inout CorpusTally
    ) {
        for (name, n) in negatives {
            for (oldName, f) in family {
                for (a, b) in [(n, f), (f, n)] {
                    tally.negativeChecks += 1
                    if let m = tally.timed(a, b) {
                        tally.falseMatches += 1
                        Issue.record("false match: \(name) vs \(oldName): \(m)")
                    }
                }
            }
        }
    }

    /// A verification decode asked for by a sparse negative must not turn it into a match. A
    /// dense old fingerprint (a full decode) asks for none: the look already met its frames.
    static func checkSparseNegativeVerification(
        _ sparseNegative: ContentFingerprint, firstTen: String,
        against family: [(String, ContentFingerprint)],
        _ tally: inout CorpusTally
    ) throws {
        let sparseOlds: Set<String> = ["original sparse", "sparse copy"]
        for (oldName, f) in family {
            let verdict = FingerprintMatcher.judge(sparseNegative, f)
            if !sparseOlds.contains(oldName) {
                #expect(
                    verdict.verifyAt.isEmpty,
                    "\(oldName) is dense: no verification decode, \(verdict.verifyAt.count) windows asked")
            }
            guard verdict.match == nil, !verdict.verifyAt.isEmpty else { continue }
            tally.negativeChecks += 1
            let verified = try ReuploadMedia.fingerprint(
                firstTen, sparse: SparseSampling(phase: 0, times: verdict.verifyAt, seconds: verdict.verifySeconds))
            let again = FingerprintMatcher.judge(verified, f)
            print("   negative verification vs \(oldName):", again)
            if let m = again.match {
                tally.falseMatches += 1
                Issue.record("false match after verification: first 10 s then other content vs \(oldName): \(m)")
            }
        }
    }

    /// Unrelated videos do not match each other (but for the two cuts of one video).
    static func checkNegativePairs(_ negatives: [(String, ContentFingerprint)], _ tally: inout CorpusTally) {
        for i in negatives.indices {
            for j in negatives.indices
            where i != j && !(negatives[i].0.hasPrefix("first") && negatives[j].0.hasPrefix("first")) {
                tally.negativeChecks += 1
                if let m = tally.timed(negatives[i].1, negatives[j].1) {
                    tally.falseMatches += 1
                    Issue.record("false match: \(negatives[i].0) vs \(negatives[j].0): \(m)")
                }
            }
        }
    }

    /// Two recordings of one still scene (one with something happening) never match; nor does a
    /// still video its own re-encode: without change over time there is no evidence of the same footage.
    static func checkStillAndPosedScenes(_ dir: Scratch, _ tally: inout CorpusTally) throws {
        let still = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .frozen, seed: 5)]), dir, "still.mp4")
        let stillEvent = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [
                SynthPart(start: 0, kind: .frozen, seed: 5), SynthPart(start: 10, kind: .lively, seed: 9),
                SynthPart(start: 15, kind: .frozen, seed: 5)
            ]), dir, "still-event.mp4")
        let stillCopy = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .frozen, seed: 5)]) { $0.crf = 35 }, dir,
            "still-copy.mp4")
        let fStill = try ReuploadMedia.fingerprint(still), fStillEvent = try ReuploadMedia.fingerprint(stillEvent)
        let fStillCopy = try ReuploadMedia.fingerprint(stillCopy)
        // Posed: one still scene (same seed) with its subject standing elsewhere, or moving between
        // two places half-way (a jump cut).
        let posedLeft = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.2)]), dir,
            "posed-left.mp4")
        let posedRight = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.7)]), dir,
            "posed-right.mp4")
        let posedJump = try ReuploadMedia.write(
            ReuploadMedia.spec(parts: [
                SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.2),
                SynthPart(start: 20, kind: .posed, seed: 5, subjectX: 0.7)
            ]) { $0.crf = 30 }, dir, "posed-jump.mp4")
        let fLeft = try ReuploadMedia.fingerprint(posedLeft), fRight = try ReuploadMedia.fingerprint(posedRight)
        let fJump = try ReuploadMedia.fingerprint(posedJump)
        for (name, a, b) in [
            ("still scene with an event vs still scene", fStillEvent, fStill),
            ("still scene vs still scene with an event", fStill, fStillEvent),
            ("still video vs its re-encode", fStillCopy, fStill),
            ("posed subject left vs right", fLeft, fRight), ("posed subject right vs left", fRight, fLeft),
            ("posed jump cut vs left", fJump, fLeft), ("posed left vs jump cut", fLeft, fJump),
            ("posed jump cut vs right", fJump, fRight), ("posed right vs jump cut", fRight, fJump)
        ] {
            tally.negativeChecks += 1
            if let m = tally.timed(a, b) {
                tally.falseMatches += 1
                Issue.record("false match: \(name): \(m)")
            }
        }
    }
}
