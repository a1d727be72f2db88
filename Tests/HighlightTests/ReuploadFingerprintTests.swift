import Analysis
import FFmpeg
import Foundation
import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
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
            return times.contains {
                let first = Int(($0 * rate).rounded()); return index >= first && index <= first + Int(seconds * rate)
            }
        }
        return ((index - phase) % interval + interval) % interval <= burst
    }
}

enum ReuploadMedia {
    /// 40 s of lively and dull parts (seeds 11...16), 320x180 H.264 at 30 fps, no barcode.
    static let originalParts: [SynthPart] = [
        SynthPart(start: 0, kind: .lively, seed: 11), SynthPart(start: 6, kind: .dull, seed: 12),
        SynthPart(start: 12, kind: .lively, seed: 13), SynthPart(start: 19, kind: .dull, seed: 14),
        SynthPart(start: 25, kind: .lively, seed: 15), SynthPart(start: 32, kind: .dull, seed: 16)
    ]

    static func spec(
        duration: Double = 40, parts: [SynthPart] = originalParts, _ configure: (inout SynthSpec) -> Void = { _ in }
    ) -> SynthSpec {
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
    static func transcode(
        _ path: String, to output: String, maxSide: Int = 4096, crf: Int = 23, codec: VideoEncoding.Codec = .h264
    ) throws {
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
                    func copy(
                        _ src: UnsafeBufferPointer<UInt8>, _ stride: Int, _ sw: Int, _ sh: Int,
                        _ dst: UnsafeMutableRawPointer, _ dstStride: Int
                    ) {
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
            guard let y = frame.luma.baseAddress, let u = frame.cb.baseAddress, let v = frame.cr.baseAddress else {
                return
            }
            features.measure(
                FrameView(
                    time: frame.time, width: frame.width, height: frame.height, luma: y, lumaStride: frame.lumaStride,
                    chromaWidth: frame.chromaWidth, chromaHeight: frame.chromaHeight, cb: u, cr: v,
                    chromaStride: frame.chromaStride))
            fingerprinter.consume(features)
        }
        // As AnalysisPipeline: the decoded end, stretched by the header by up to a frame.
        let decodedEnd = summary.lastFrameTime ?? 0
        return fingerprinter.finish(duration: max(decodedEnd, min(info.duration, decodedEnd + 1)))
    }
}

@Suite("Re-upload fingerprints")
struct ReuploadFingerprintTests {
    @Test(
        "re-encodes, resizes, HEVC, trims, rotation and sparse decodes match at their offset; unrelated videos never do"
    )
    func corpus() throws {
        let dir = Scratch()
        let copies = try CorpusCopies(dir)
        var tally = CorpusTally()
        Self.checkCopies(copies, &tally)
        try Self.checkSparseCopiesOfOtherPhase(copies, &tally)
        let (negatives, firstTen) = try Self.negatives(dir)
        let family = copies.family
        Self.checkNegatives(negatives, against: family, &tally)
        try Self.checkSparseNegativeVerification(negatives[4].1, firstTen: firstTen, against: family, &tally)
        Self.checkNegativePairs(negatives, &tally)
        try Self.checkStillAndPosedScenes(dir, &tally)
        let (found, total, falseMatches, negativeChecks) = (
            tally.found, tally.total, tally.falseMatches, tally.negativeChecks
        )
        let perMatch = tally.clock / tally.matches
        print(
            "duplicate recall \(found)/\(total) = \(Double(found) / Double(total)); false matches \(falseMatches)/\(negativeChecks); \(perMatch) per match (40 s videos)"
        )
        #expect(Double(found) / Double(total) >= 0.95)
        #expect(falseMatches == 0)

        // JSON round trip.
        let fOriginal = copies.fOriginal
        let data = try JSONEncoder().encode(fOriginal)
        #expect(try JSONDecoder().decode(ContentFingerprint.self, from: data) == fOriginal)
        print("JSON of a 40 s fingerprint: \(data.count) bytes")
    }
}

@Suite("Re-upload fingerprints: keyframes at cuts")
struct ReuploadCutKeyframeTests {
    /// A re-export with scene-cut keyframes (ffmpeg's default): every keyframe, and so every burst
    /// of a look, starts at a cut, mostly inside a fingerprint step whose full-decode entry
    /// averages both shots. Against the original's full fingerprint the look must still be recognised.
    @Test(
        "a look whose keyframes all sit on cuts, anywhere in their steps, is recognised against the full original, to the frame"
    )
    func keyframesAtCuts() throws {
        let dir = Scratch()
        // 30 s of 1.5 s shots, cut 1 to 5 frames into a 0.2 s step (no one shift of the steps
        // pairs every burst with a step of its own shot).
        let cuts: [Double] = (1..<20).map { (i: Int) -> Double in Double(i) * 1.5 + Double(1 + i % 5) / 30 }
        let parts =
            [SynthPart(start: 0, kind: .dull, seed: 60)]
            + cuts.enumerated().map { SynthPart(start: $1, kind: $0 % 2 == 0 ? .posed : .dull, seed: 61 + $0) }
        let original = try ReuploadMedia.write(ReuploadMedia.spec(duration: 30, parts: parts), dir, "shots.mp4")
        let copy = try ReuploadMedia.write(
            ReuploadMedia.spec(duration: 30, parts: parts) { $0.crf = 32 }, dir, "shots-copy.mp4")
        let full = try ReuploadMedia.fingerprint(original)
        // The copy's look: each cut's frame and the 3 after it.
        let look = try ReuploadMedia.fingerprint(copy, sparse: SparseSampling(phase: 0, times: cuts, seconds: 3.0 / 30))
        let verdict = FingerprintMatcher.judge(look, full)
        print(
            "keyframes at cuts vs the full original:", verdict,
            verdict.match.map { "refined offset \($0.offset)" } ?? "")
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
        let oldPrint = ContentFingerprint(
            step: step, entries: old, duration: Double(steps) * step, trackRate: 30, track: track)
        var entries = [UInt64?](repeating: nil, count: steps), phases = [UInt8](repeating: 128, count: steps)
        func noisy(_ hash: UInt64) -> UInt64 { hash ^ (1 << (1 + random.next() % 63)) }
        for (n, j) in stride(from: 2, to: steps - 2, by: 5).enumerated() {
            if n % 2 == 0 {
                entries[j] = noisy(old[j])  // a whole step
            } else {
                entries[j] = noisy(old[j + 1])  // frames 3-5 of step j, after a cut: the next step's picture
                phases[j] = 170
            }
        }
        let look = ContentFingerprint(
            step: step, entries: entries, duration: Double(steps) * step, phases: phases, trackRate: 30, track: track)
        let verdict = FingerprintMatcher.judge(look, oldPrint)
        print("bursts after cuts vs the old dense fingerprint:", verdict)
        let match = verdict.match
        #expect(match != nil, "\(verdict)")
        #expect(abs(match?.offset ?? 1) <= 1.0 / 30, "offset \(String(describing: match?.offset))")
        // The same look against unrelated fast footage is not recognised.
        let unrelated = ContentFingerprint(
            step: step, entries: (0..<steps).map { _ in random.next() & ~1 }, duration: Double(steps) * step,
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
            if i % 25 == 0 {
                hash = random.next() & ~1
            }  // a new shot every 5 s
            else {
                for _ in 0..<3 { hash ^= 1 << (1 + random.next() % 63) }
            }  // drift
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
        return ContentFingerprint(
            step: step, entries: entries, duration: seconds, phases: nil, lumas: lumas, flat: nil,
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
        return ContentFingerprint(
            step: f.step, entries: entries, duration: f.duration - start, phases: Array(f.phases[first...]),
            lumas: Array(f.lumas[first...]), flat: Array(f.flat[first...]), trackRate: f.trackRate,
            track: Array(f.track[(2 * cell)...]))
    }
}

@Suite("Re-upload fingerprints: size and cost")
struct ReuploadFingerprintCostTests {
    @Test(
        "a 10-minute fingerprint stays under 100 KB of JSON; a trimmed copy matches, 50 unrelated ones do not (prints the cost)"
    )
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

@Suite("Re-upload fingerprints: an original analysed on its I- and P-frames")
struct ReuploadAnchorsOriginalTests {
    /// The anchors plan fingerprints a B-frame original from one frame in four; a copy's look
    /// (keyframe bursts of a re-encode) must still be placed on it to the frame.
    @Test("an original fingerprinted by the anchors plan (B-frames skipped) recognises a re-encoded copy, to the frame")
    func anchorsOriginal() throws {
        let dir = Scratch()
        let original = try ReuploadMedia.write(
            ReuploadMedia.spec {
                $0.preset = "veryfast"
                $0.fixedBFrames = 3
                $0.keyframeIntervalSeconds = 1
            }, dir, "original.mp4")
        var settings = AnalysisSettings()
        settings.shots.jumpCuts = false
        let analysis = try AnalysisPipeline.analyze(original, settings: settings)
        #expect(analysis.summary.plan == "anchors")
        let stored = try #require(analysis.fingerprint)
        let copy = try ReuploadMedia.write(ReuploadMedia.spec { $0.crf = 32 }, dir, "copy.mp4")
        for phase in [0, 13] {
            let look = try ReuploadMedia.fingerprint(copy, sparse: SparseSampling(phase: phase))
            let verdict = FingerprintMatcher.judge(look, stored)
            let match = try #require(verdict.match, "phase \(phase): \(verdict)")
            #expect(abs(match.offset) <= 1.0 / 30 + 1e-6, "phase \(phase): offset \(match.offset)")
        }
    }
}
