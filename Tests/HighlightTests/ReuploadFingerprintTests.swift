import Analysis
import Foundation
import MediaEngine
import MediaSynth
import Testing

/// Sparse sampling like the sampled plan: a keyframe every `interval` frames from `phase`, plus `burst` frames after it.
struct SparseSampling {
    var phase: Int
    var interval = 30
    var burst = 3
    /// Instead: windows of `seconds` from these times only (a verification decode seeking to them).
    var times: [Double]? = nil
    var seconds = 0.0

    func keeps(_ index: Int, rate: Double) -> Bool {
        if let times {
            return times.contains { let first = Int(($0 * rate).rounded()); return index >= first && index <= first + Int(seconds * rate) }
        }
        return ((index - phase) % interval + interval) % interval <= burst
    }
}

enum ReuploadMedia {
    /// 40 s of lively and dull parts (seeds 11...16), 320x180 H.264 at 30 fps, no barcode.
    static let originalParts: [SynthPart] = [
        SynthPart(start: 0, kind: .lively, seed: 11), SynthPart(start: 6, kind: .dull, seed: 12),
        SynthPart(start: 12, kind: .lively, seed: 13), SynthPart(start: 19, kind: .dull, seed: 14),
        SynthPart(start: 25, kind: .lively, seed: 15), SynthPart(start: 32, kind: .dull, seed: 16),
    ]

    static func spec(duration: Double = 40, parts: [SynthPart] = originalParts, _ configure: (inout SynthSpec) -> Void = { _ in }) -> SynthSpec {
        var spec = SynthSpec()
        spec.width = 320
        spec.height = 180
        spec.duration = duration
        spec.barcode = false
        spec.audio = false
        spec.parts = parts
        configure(&spec)
        return spec
    }

    /// The original's parts with its first `seconds` cut off (parts may start before 0: they play from their middle).
    static func trimmedStart(_ seconds: Double) -> [SynthPart] {
        originalParts.map { SynthPart(start: $0.start - seconds, kind: $0.kind, seed: $0.seed) }
    }

    static func write(_ spec: SynthSpec, _ dir: Scratch, _ name: String) throws -> String {
        let path = dir.path(name)
        try Synth.write(spec, to: path)
        return path
    }

    /// A re-encoded copy of `path` scaled to `maxSide`, its display rotation baked into the pixels (rotation 0).
    static func transcode(_ path: String, to output: String, maxSide: Int = 4096, crf: Int = 23, codec: VideoEncoding.Codec = .h264) throws {
        var options = AnalysisOptions()
        options.maxSide = maxSide
        options.decodeAudio = false
        let decoder = try AnalysisDecoder(path: path, options: options)
        let rotation = decoder.info.video.rotation
        let w = decoder.width, h = decoder.height
        let turned = rotation % 180 != 0
        var video = VideoEncoding(width: turned ? h : w, height: turned ? w : h, frameRate: Rational(30, 1))
        video.preset = "ultrafast"
        video.crf = crf
        video.codec = codec
        let writer = try MediaWriter(path: output, video: video, audio: nil)
        var failure: MediaError?
        var index: Int64 = 0
        try decoder.run { frame in
            guard failure == nil else { return }
            let fw = frame.width, fh = frame.height
            do throws(MediaError) {
                try writer.writePicture(pts: index) { p in
                    func copy(_ src: UnsafeBufferPointer<UInt8>, _ stride: Int, _ sw: Int, _ sh: Int, _ dst: UnsafeMutableRawPointer, _ dstStride: Int) {
                        let dw = turned ? sh : sw, dh = turned ? sw : sh
                        for y in 0..<dh {
                            let row = dst.advanced(by: y * dstStride).assumingMemoryBound(to: UInt8.self)
                            for x in 0..<dw {
                                // Display pixel (x, y) of the stored picture turned clockwise by `rotation`.
                                let (sx, sy): (Int, Int)
                                switch rotation {
                                case 90: (sx, sy) = (y, sh - 1 - x)
                                case 180: (sx, sy) = (sw - 1 - x, sh - 1 - y)
                                case 270: (sx, sy) = (sw - 1 - y, x)
                                default: (sx, sy) = (x, y)
                                }
                                row[x] = src[sy * stride + sx]
                            }
                        }
                    }
                    copy(frame.luma, frame.lumaStride, fw, fh, p.y, p.yStride)
                    copy(frame.cb, frame.chromaStride, frame.chromaWidth, frame.chromaHeight, p.u, p.uStride)
                    copy(frame.cr, frame.chromaStride, frame.chromaWidth, frame.chromaHeight, p.v, p.vStride)
                }
            } catch { failure = error }
            index += 1
        }
        if let failure { throw failure }
        try writer.finish()
    }

    /// The fingerprint the analysis pass would make (its default decode: 256 px, reference frames
    /// only), optionally from sparse frames only.
    static func fingerprint(_ path: String, sparse: SparseSampling? = nil) throws -> ContentFingerprint {
        var options = AnalysisOptions()
        options.maxSide = 256
        options.skipNonReferenceFrames = true
        options.decodeAudio = false
        let decoder = try AnalysisDecoder(path: path, options: options)
        let info = decoder.info
        let rate = info.video.frameRate > 0 ? info.video.frameRate : 30
        let fingerprinter = ContentFingerprinter(rotation: info.video.rotation, expectedSeconds: info.duration)
        var features = FrameFeatures()
        let summary = try decoder.run { frame in
            if let sparse {
                let index = Int((frame.time * rate).rounded())
                guard sparse.keeps(index, rate: rate) else { return }
            }
            guard let y = frame.luma.baseAddress, let u = frame.cb.baseAddress, let v = frame.cr.baseAddress else { return }
            features.measure(FrameView(time: frame.time, width: frame.width, height: frame.height, luma: y, lumaStride: frame.lumaStride,
                                       chromaWidth: frame.chromaWidth, chromaHeight: frame.chromaHeight, cb: u, cr: v,
                                       chromaStride: frame.chromaStride))
            fingerprinter.consume(features)
        }
        // As AnalysisPipeline: the decoded end, stretched by the header by up to a frame.
        let decodedEnd = summary.lastFrameTime ?? 0
        return fingerprinter.finish(duration: max(decodedEnd, min(info.duration, decodedEnd + 1)))
    }
}

@Suite("Re-upload fingerprints", .serialized)
struct ReuploadFingerprintTests {
    @Test("re-encodes, resizes, HEVC, trims, rotation and sparse decodes match at their offset; unrelated videos never do")
    func corpus() throws {
        let dir = Scratch()
        let frame = 1.0 / 30
        let trim = 91.0 / 30 // 3.03 s: not a whole number of steps
        let original = try ReuploadMedia.write(ReuploadMedia.spec(), dir, "original.mp4")
        let rotated = try ReuploadMedia.write(ReuploadMedia.spec { $0.rotation = 90 }, dir, "rotated-metadata.mp4")
        let baked = dir.path("rotated-pixels.mp4")
        try ReuploadMedia.transcode(rotated, to: baked)
        let crf = try ReuploadMedia.write(ReuploadMedia.spec { $0.crf = 40 }, dir, "crf40.mp4")
        // Synth draws its textures in pixels, so other sizes are made by scaling the original.
        let half = dir.path("half.mp4")
        try ReuploadMedia.transcode(original, to: half, maxSide: 160, crf: 28)
        let hevc = try ReuploadMedia.write(ReuploadMedia.spec { $0.codec = .hevc; $0.crf = 30 }, dir, "hevc.mp4")
        let startTrim = try ReuploadMedia.write(ReuploadMedia.spec(duration: 40 - trim, parts: ReuploadMedia.trimmedStart(trim)) { $0.crf = 30 },
                                                dir, "trim-start.mp4")
        let endTrim = try ReuploadMedia.write(ReuploadMedia.spec(duration: 33) { $0.crf = 30 }, dir, "trim-end.mp4")
        let bothTrimSource = try ReuploadMedia.write(ReuploadMedia.spec(duration: 30, parts: ReuploadMedia.trimmedStart(5)), dir, "trim-both-source.mp4")
        let bothTrim = dir.path("trim-both.mp4")
        try ReuploadMedia.transcode(bothTrimSource, to: bothTrim, maxSide: 240, crf: 32, codec: .hevc)

        let fOriginal = try ReuploadMedia.fingerprint(original)
        let fOriginalSparse = try ReuploadMedia.fingerprint(original, sparse: SparseSampling(phase: 0))
        let fRotated = try ReuploadMedia.fingerprint(rotated)
        let fBaked = try ReuploadMedia.fingerprint(baked)
        let fCRF = try ReuploadMedia.fingerprint(crf)
        let fCRFSparse = try ReuploadMedia.fingerprint(crf, sparse: SparseSampling(phase: 13))
        let fCRFSparseSamePhase = try ReuploadMedia.fingerprint(crf, sparse: SparseSampling(phase: 0))
        let fHalf = try ReuploadMedia.fingerprint(half)
        let fHEVC = try ReuploadMedia.fingerprint(hevc)
        let fStart = try ReuploadMedia.fingerprint(startTrim)
        let fStartSparse = try ReuploadMedia.fingerprint(startTrim, sparse: SparseSampling(phase: 7))
        let fEnd = try ReuploadMedia.fingerprint(endTrim)
        let fBoth = try ReuploadMedia.fingerprint(bothTrim)

        // (name, new, old, expected offset, tolerance)
        let positives: [(String, ContentFingerprint, ContentFingerprint, Double, Double)] = [
            ("crf 40", fCRF, fOriginal, 0, frame),
            ("half resolution", fHalf, fOriginal, 0, frame),
            ("HEVC", fHEVC, fOriginal, 0, frame),
            ("trimmed 3.03 s at the start", fStart, fOriginal, trim, frame),
            ("trimmed at the end", fEnd, fOriginal, 0, frame),
            ("trimmed both ends, 240 px HEVC", fBoth, fOriginal, 5, frame),
            ("rotation in pixels vs metadata", fBaked, fRotated, 0, frame),
            ("sparse copy vs full original", fCRFSparse, fOriginal, 0, frame),
            ("sparse trimmed copy vs full original", fStartSparse, fOriginal, trim, frame),
            ("sparse copy vs sparse original (same phase)", fCRFSparseSamePhase, fOriginalSparse, 0, frame),
        ]
        var found = 0, total = 0
        var clock = Duration.zero, matches = 0
        func timed(_ a: ContentFingerprint, _ b: ContentFingerprint) -> FingerprintMatch? {
            let start = ContinuousClock.now
            let m = FingerprintMatcher.match(a, b)
            clock += ContinuousClock.now - start
            matches += 1
            return m
        }
        for (name, new, old, offset, tolerance) in positives {
            for (a, b, expected) in [(new, old, offset), (old, new, -offset)] {
                total += 1
                let m = timed(a, b)
                let error = m.map { abs($0.offset - expected) } ?? .infinity
                print("positive \(name) \(expected >= 0 ? "" : "(reversed)"): \(m.map { "offset \(String(format: "%.4f", $0.offset)) error \(String(format: "%.4f", error)) overlap \(String(format: "%.1f", $0.overlap)) distance \(String(format: "%.2f", $0.distance)) refined \($0.refined)" } ?? "no match")")
                #expect(m != nil, "\(name): not recognised: \(FingerprintMatcher.judge(a, b))")
                #expect(error <= tolerance + 1e-6, "\(name): offset \(m?.offset ?? .nan), expected \(expected)")
                if error <= tolerance + 1e-6 { found += 1 }
            }
        }

        // Both sparse with keyframes at other times: frames up to half a keyframe interval apart
        // cannot be compared in fast footage; the verdict asks for a verification decode of the new
        // video at the old entries' times, which then matches.
        for (name, new, newPath, expected) in [("sparse copy vs sparse original (other phase)", fCRFSparse, crf, 0.0),
                                               ("sparse trimmed vs sparse original (other phase)", fStartSparse, startTrim, trim)] {
            total += 1
            let start = ContinuousClock.now
            var verdict = FingerprintMatcher.judge(new, fOriginalSparse)
            clock += ContinuousClock.now - start
            matches += 1
            print("  ", verdict)
            #expect(verdict.match != nil || !verdict.verifyAt.isEmpty, "\(name): neither a match nor a verification request")
            if verdict.match == nil, !verdict.verifyAt.isEmpty {
                let windows = verdict.verifyAt.count
                let verified = try ReuploadMedia.fingerprint(newPath, sparse: SparseSampling(phase: 0, times: verdict.verifyAt, seconds: verdict.verifySeconds))
                verdict = FingerprintMatcher.judge(verified, fOriginalSparse)
                print("   after a verification decode of \(windows) windows:", verdict)
            }
            let m = verdict.match
            let error = m.map { abs($0.offset - expected) } ?? .infinity
            print("positive \(name): \(m.map { "offset \(String(format: "%.4f", $0.offset)) error \(String(format: "%.4f", error)) refined \($0.refined)" } ?? "no match")")
            #expect(error <= 0.25, "\(name): \(verdict)")
            if error <= 0.25 { found += 1 }
        }

        // Negatives.
        let other = try ReuploadMedia.write(ReuploadMedia.spec(parts: [
            SynthPart(start: 0, kind: .dull, seed: 21), SynthPart(start: 9, kind: .lively, seed: 22),
            SynthPart(start: 17, kind: .dull, seed: 23), SynthPart(start: 28, kind: .lively, seed: 24),
        ]), dir, "other.mp4")
        let sameKinds = try ReuploadMedia.write(ReuploadMedia.spec(parts: ReuploadMedia.originalParts.map {
            SynthPart(start: $0.start, kind: $0.kind, seed: $0.seed + 20)
        }), dir, "same-kinds.mp4")
        let blackFrozen = try ReuploadMedia.write(ReuploadMedia.spec(parts: [
            SynthPart(start: 0, kind: .black, seed: 0), SynthPart(start: 12, kind: .frozen, seed: 11),
            SynthPart(start: 30, kind: .black, seed: 0),
        ]), dir, "black-frozen.mp4")
        let firstTen = try ReuploadMedia.write(ReuploadMedia.spec(parts: Array(ReuploadMedia.originalParts.prefix(2)) + [
            SynthPart(start: 10, kind: .lively, seed: 41), SynthPart(start: 20, kind: .dull, seed: 42), SynthPart(start: 30, kind: .lively, seed: 43),
        ]), dir, "first-ten.mp4")
        let still = try ReuploadMedia.write(ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .frozen, seed: 5)]), dir, "still.mp4")
        let stillEvent = try ReuploadMedia.write(ReuploadMedia.spec(parts: [
            SynthPart(start: 0, kind: .frozen, seed: 5), SynthPart(start: 10, kind: .lively, seed: 9), SynthPart(start: 15, kind: .frozen, seed: 5),
        ]), dir, "still-event.mp4")
        let stillCopy = try ReuploadMedia.write(ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .frozen, seed: 5)]) { $0.crf = 35 }, dir, "still-copy.mp4")
        let negatives: [(String, ContentFingerprint)] = [
            ("other video", try ReuploadMedia.fingerprint(other)),
            ("same kinds, other seeds", try ReuploadMedia.fingerprint(sameKinds)),
            ("mostly black and frozen", try ReuploadMedia.fingerprint(blackFrozen)),
            ("first 10 s then other content", try ReuploadMedia.fingerprint(firstTen)),
            ("first 10 s then other content, sparse", try ReuploadMedia.fingerprint(firstTen, sparse: SparseSampling(phase: 5))),
        ]
        let family: [(String, ContentFingerprint)] = [
            ("original", fOriginal), ("original sparse", fOriginalSparse), ("crf 40", fCRF), ("half", fHalf), ("HEVC", fHEVC),
            ("trim start", fStart), ("trim end", fEnd), ("trim both", fBoth), ("sparse copy", fCRFSparse),
        ]
        var falseMatches = 0, negativeChecks = 0
        for (name, n) in negatives {
            for (oldName, f) in family {
                for (a, b) in [(n, f), (f, n)] {
                    negativeChecks += 1
                    if let m = timed(a, b) {
                        falseMatches += 1
                        Issue.record("false match: \(name) vs \(oldName): \(m)")
                    }
                }
            }
        }
        // A verification decode asked for by a sparse negative must not turn it into a match. A
        // dense old fingerprint (a full decode) asks for none: the look already met its frames.
        let sparseNegative = negatives[4].1
        let sparseOlds: Set<String> = ["original sparse", "sparse copy"]
        for (oldName, f) in family {
            let verdict = FingerprintMatcher.judge(sparseNegative, f)
            if !sparseOlds.contains(oldName) {
                #expect(verdict.verifyAt.isEmpty, "\(oldName) is dense: no verification decode, \(verdict.verifyAt.count) windows asked")
            }
            guard verdict.match == nil, !verdict.verifyAt.isEmpty else { continue }
            negativeChecks += 1
            let verified = try ReuploadMedia.fingerprint(firstTen, sparse: SparseSampling(phase: 0, times: verdict.verifyAt, seconds: verdict.verifySeconds))
            let again = FingerprintMatcher.judge(verified, f)
            print("   negative verification vs \(oldName):", again)
            if let m = again.match {
                falseMatches += 1
                Issue.record("false match after verification: first 10 s then other content vs \(oldName): \(m)")
            }
        }
        for i in negatives.indices {
            for j in negatives.indices where i != j && !(negatives[i].0.hasPrefix("first") && negatives[j].0.hasPrefix("first")) {
                negativeChecks += 1
                if let m = timed(negatives[i].1, negatives[j].1) {
                    falseMatches += 1
                    Issue.record("false match: \(negatives[i].0) vs \(negatives[j].0): \(m)")
                }
            }
        }
        // Two recordings of one still scene (one with something happening) never match; nor does a
        // still video its own re-encode: without change over time there is no evidence of the same footage.
        let fStill = try ReuploadMedia.fingerprint(still), fStillEvent = try ReuploadMedia.fingerprint(stillEvent)
        let fStillCopy = try ReuploadMedia.fingerprint(stillCopy)
        // Posed: one still scene (same seed) with its subject standing elsewhere, or moving between
        // two places half-way (a jump cut).
        let posedLeft = try ReuploadMedia.write(ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.2)]), dir, "posed-left.mp4")
        let posedRight = try ReuploadMedia.write(ReuploadMedia.spec(parts: [SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.7)]), dir, "posed-right.mp4")
        let posedJump = try ReuploadMedia.write(ReuploadMedia.spec(parts: [
            SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.2), SynthPart(start: 20, kind: .posed, seed: 5, subjectX: 0.7),
        ]) { $0.crf = 30 }, dir, "posed-jump.mp4")
        let fLeft = try ReuploadMedia.fingerprint(posedLeft), fRight = try ReuploadMedia.fingerprint(posedRight)
        let fJump = try ReuploadMedia.fingerprint(posedJump)
        for (name, a, b) in [("still scene with an event vs still scene", fStillEvent, fStill), ("still scene vs still scene with an event", fStill, fStillEvent),
                             ("still video vs its re-encode", fStillCopy, fStill),
                             ("posed subject left vs right", fLeft, fRight), ("posed subject right vs left", fRight, fLeft),
                             ("posed jump cut vs left", fJump, fLeft), ("posed left vs jump cut", fLeft, fJump),
                             ("posed jump cut vs right", fJump, fRight), ("posed right vs jump cut", fRight, fJump)] {
            negativeChecks += 1
            if let m = timed(a, b) {
                falseMatches += 1
                Issue.record("false match: \(name): \(m)")
            }
        }
        let perMatch = clock / matches
        print("duplicate recall \(found)/\(total) = \(Double(found) / Double(total)); false matches \(falseMatches)/\(negativeChecks); \(perMatch) per match (40 s videos)")
        #expect(Double(found) / Double(total) >= 0.95)
        #expect(falseMatches == 0)

        // JSON round trip.
        let data = try JSONEncoder().encode(fOriginal)
        #expect(try JSONDecoder().decode(ContentFingerprint.self, from: data) == fOriginal)
        print("JSON of a 40 s fingerprint: \(data.count) bytes")
    }
}

@Suite("Re-upload fingerprints: keyframes at cuts", .serialized)
struct ReuploadCutKeyframeTests {
    /// A re-export with scene-cut keyframes (ffmpeg's default): every keyframe, and so every burst
    /// of a look, starts at a cut, mostly inside a fingerprint step whose full-decode entry
    /// averages both shots. Against the original's full fingerprint the look must still be recognised.
    @Test("a look whose keyframes all sit on cuts, anywhere in their steps, is recognised against the full original, to the frame")
    func keyframesAtCuts() throws {
        let dir = Scratch()
        // 30 s of 1.5 s shots, cut 1 to 5 frames into a 0.2 s step (no one shift of the steps
        // pairs every burst with a step of its own shot).
        let cuts: [Double] = (1..<20).map { (i: Int) -> Double in Double(i) * 1.5 + Double(1 + i % 5) / 30 }
        let parts = [SynthPart(start: 0, kind: .dull, seed: 60)] + cuts.enumerated().map { SynthPart(start: $1, kind: $0 % 2 == 0 ? .posed : .dull, seed: 61 + $0) }
        let original = try ReuploadMedia.write(ReuploadMedia.spec(duration: 30, parts: parts), dir, "shots.mp4")
        let copy = try ReuploadMedia.write(ReuploadMedia.spec(duration: 30, parts: parts) { $0.crf = 32 }, dir, "shots-copy.mp4")
        let full = try ReuploadMedia.fingerprint(original)
        // The copy's look: each cut's frame and the 3 after it.
        let look = try ReuploadMedia.fingerprint(copy, sparse: SparseSampling(phase: 0, times: cuts, seconds: 3.0 / 30))
        let verdict = FingerprintMatcher.judge(look, full)
        print("keyframes at cuts vs the full original:", verdict, verdict.match.map { "refined offset \($0.offset)" } ?? "")
        let match = try #require(verdict.match, "recognised: \(verdict)")
        #expect(abs(match.offset) <= 1.0 / 30 + 1e-6, "offset \(match.offset)")
        // The same look against another video with the same cuts (lively shots) is not.
        let otherParts = parts.map { SynthPart(start: $0.start, kind: .lively, seed: $0.seed) }
        let other = try ReuploadMedia.write(ReuploadMedia.spec(duration: 30, parts: otherParts), dir, "other-shots.mp4")
        let otherVerdict = FingerprintMatcher.judge(look, try ReuploadMedia.fingerprint(other))
        print("vs other:", otherVerdict, otherVerdict.match.map { "\($0)" } ?? "")
        #expect(otherVerdict.match == nil)
    }
}

extension ReuploadCutKeyframeTests {
    /// The matcher's rule for bursts after cuts, on fingerprints made without media: an old dense
    /// fingerprint of fast footage (every step's hash unrelated to the next), and a look whose
    /// entries are either a whole step (a keyframe inside a shot) or the last half of a step right
    /// after a cut (what the old NEXT step shows; the old step itself averages both shots). No one
    /// offset pairs both kinds with their own steps by time alone.
    @Test("a burst that starts mid-step at a cut agrees with the old step after it; nothing else moves")
    func burstAfterCutAgreesWithTheNextStep() {
        var random = SplitMix(seed: 77)
        let steps = 150, step = 0.2
        let old = (0..<steps).map { _ in random.next() & ~1 }
        var track: [Int8] = []
        var h = 0.0, v = 0.0
        for _ in 0..<Int(Double(steps) * step * 30) {
            h = max(-100, min(100, h + (random.nextUnit() - 0.5) * 12))
            v = max(-100, min(100, v + (random.nextUnit() - 0.5) * 12))
            track += [Int8(h), Int8(v)]
        }
        let oldPrint = ContentFingerprint(step: step, entries: old, duration: Double(steps) * step, trackRate: 30, track: track)
        var entries = [UInt64?](repeating: nil, count: steps), phases = [UInt8](repeating: 128, count: steps)
        func noisy(_ hash: UInt64) -> UInt64 { hash ^ (1 << (1 + random.next() % 63)) }
        for (n, j) in stride(from: 2, to: steps - 2, by: 5).enumerated() {
            if n % 2 == 0 {
                entries[j] = noisy(old[j]) // a whole step
            } else {
                entries[j] = noisy(old[j + 1]) // frames 3-5 of step j, after a cut: the next step's picture
                phases[j] = 170
            }
        }
        let look = ContentFingerprint(step: step, entries: entries, duration: Double(steps) * step, phases: phases, trackRate: 30, track: track)
        let verdict = FingerprintMatcher.judge(look, oldPrint)
        print("bursts after cuts vs the old dense fingerprint:", verdict)
        let match = verdict.match
        #expect(match != nil, "\(verdict)")
        #expect(abs(match?.offset ?? 1) <= 1.0 / 30, "offset \(String(describing: match?.offset))")
        // The same look against unrelated fast footage is not recognised.
        let unrelated = ContentFingerprint(step: step, entries: (0..<steps).map { _ in random.next() & ~1 }, duration: Double(steps) * step,
                                           trackRate: 30, track: track.reversed())
        #expect(FingerprintMatcher.match(look, unrelated) == nil)
    }
}

/// Fingerprints of long videos without media: shots of slowly drifting hashes and a smooth track.
enum LongFingerprints {
    static func make(seconds: Double, seed: UInt64) -> ContentFingerprint {
        var random = SplitMix(seed: seed)
        let step = 0.2, rate = 30.0
        var entries: [UInt64?] = [], lumas: [UInt8] = []
        var hash: UInt64 = 0
        for i in 0..<Int(seconds / step) {
            if i % 25 == 0 { hash = random.next() & ~1 } // a new shot every 5 s
            else { for _ in 0..<3 { hash ^= 1 << (1 + random.next() % 63) } } // drift
            entries.append(hash)
            lumas.append(UInt8(truncatingIfNeeded: hash >> 8))
        }
        var track: [Int8] = []
        var h = 0.0, v = 0.0
        for _ in 0..<Int(seconds * rate) {
            h = max(-100, min(100, h + (random.nextUnit() - 0.5) * 12))
            v = max(-100, min(100, v + (random.nextUnit() - 0.5) * 12))
            track += [Int8(h), Int8(v)]
        }
        return ContentFingerprint(step: step, entries: entries, duration: seconds, phases: nil, lumas: lumas, flat: nil,
                                  trackRate: rate, track: track)
    }

    /// `f` from `start` seconds (a whole number of steps and cells) with `bits` bits of noise per entry.
    static func trimmed(_ f: ContentFingerprint, start: Double, bits: Int, seed: UInt64) -> ContentFingerprint {
        var random = SplitMix(seed: seed)
        let first = Int((start / f.step).rounded()), cell = Int((start * f.trackRate).rounded())
        let entries = f.entries[first...].map { e -> UInt64? in
            guard var e else { return nil }
            for _ in 0..<bits { e ^= 1 << (1 + random.next() % 63) }
            return e
        }
        return ContentFingerprint(step: f.step, entries: entries, duration: f.duration - start, phases: Array(f.phases[first...]),
                                  lumas: Array(f.lumas[first...]), flat: Array(f.flat[first...]), trackRate: f.trackRate,
                                  track: Array(f.track[(2 * cell)...]))
    }
}

@Suite("Re-upload fingerprints: size and cost")
struct ReuploadFingerprintCostTests {
    @Test("a 10-minute fingerprint stays under 100 KB of JSON; a trimmed copy matches, 50 unrelated ones do not (prints the cost)")
    func tenMinutes() throws {
        let old = LongFingerprints.make(seconds: 600, seed: 1)
        let data = try JSONEncoder().encode(old)
        print("JSON of a 10-minute fingerprint: \(data.count) bytes")
        #expect(data.count < 100_000)
        #expect(try JSONDecoder().decode(ContentFingerprint.self, from: data) == old)

        let copy = LongFingerprints.trimmed(old, start: 30, bits: 3, seed: 2)
        let unrelated = (0..<50).map { LongFingerprints.make(seconds: 600, seed: 100 + UInt64($0)) }
        var start = ContinuousClock.now
        let m = FingerprintMatcher.match(copy, old)
        let matched = ContinuousClock.now - start
        #expect(m != nil && abs(m!.offset - 30) < 0.02, "\(String(describing: m))")
        start = ContinuousClock.now
        var falseMatches = 0
        for u in unrelated where FingerprintMatcher.match(copy, u) != nil { falseMatches += 1 }
        let perUnrelated = (ContinuousClock.now - start) / unrelated.count
        print("10-minute videos: a match \(matched), an unrelated comparison \(perUnrelated)")
        #expect(falseMatches == 0)
    }
}
