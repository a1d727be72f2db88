import Analysis
import Foundation
import Testing

@Suite("Motion")
struct MotionTests {
    func analyse(_ frames: [OwnedFrame], fps: Double = 30) -> [MotionAnalyzer.Sample] {
        let motion = MotionAnalyzer()
        Scenes.features(frames, fps: fps) { _, view in motion.consume(view) }
        return motion.finish()
    }

    @Test("a textured block moving at a known velocity on a still scene is subject motion")
    func movingObject() {
        // 4 px per frame to the right at 30 fps on a 256-px picture = 0.47 widths per second.
        let samples = analyse((0..<30).map { Scenes.frame(seed: 2, object: (40 + 4 * $0, 50)) })
        let later = samples.dropFirst(2)
        let subject = later.map(\.subject).reduce(0, +) / Float(later.count)
        let peak = later.map(\.subjectPeak).sorted()[later.count / 2]
        let camera = later.map { abs($0.cameraX) + abs($0.cameraY) }.reduce(0, +) / Float(later.count)
        #expect(subject > 0.002, "subject \(subject)")
        #expect(abs(peak - 4.0 * 30 / 256) < 0.12, "fastest block \(peak), object 0.47 widths/s")
        #expect(camera < 0.02, "camera \(camera)")
    }

    @Test("a pan is camera motion at its speed, not subject motion")
    func pan() {
        // The scene shifts 6 px per frame: content moves left by 6 px = -0.70 widths per second.
        let samples = analyse((0..<30).map { Scenes.frame(seed: 3, dx: 6 * $0) })
        let later = Array(samples.dropFirst(2))
        let cameraX = later.map(\.cameraX).reduce(0, +) / Float(later.count)
        let subject = later.map(\.subject).reduce(0, +) / Float(later.count)
        #expect(abs(cameraX + 6.0 * 30 / 256) < 0.05, "camera \(cameraX)")
        #expect(subject < 0.02, "subject \(subject)")
    }

    @Test("a still scene has no motion and no shake")
    func still() {
        let samples = analyse((0..<20).map { _ in Scenes.frame(seed: 4) })
        #expect(samples.allSatisfy { $0.subject == 0 && $0.cameraX == 0 && $0.shake == 0 })
    }

    @Test("a shaking camera has shake; a steady pan has little")
    func shake() {
        let shaky = analyse((0..<40).map { Scenes.frame(seed: 5, dx: $0 % 2 == 0 ? 0 : 5) })
        let steady = analyse((0..<40).map { Scenes.frame(seed: 5, dx: 3 * $0) })
        let shakyMean = shaky.dropFirst(2).map(\.shake).reduce(0, +) / 38
        let steadyMean = steady.dropFirst(2).map(\.shake).reduce(0, +) / 38
        #expect(shakyMean > 4 * steadyMean + 0.05, "shaky \(shakyMean), steady \(steadyMean)")
    }
}

@Suite("Audio")
struct AudioTests {
    /// 16 kHz: silence, a 1 s tone burst at 1.0 s, silence, a burst at 3.0 s.
    func analyse() -> AudioAnalyzer.Result {
        let rate = 16_000
        var samples = [Float](repeating: 0, count: rate * 5)
        for start in [1.0, 3.0] {
            for i in Int(start * Double(rate))..<Int((start + 1) * Double(rate)) {
                samples[i] = Float(sin(2 * Double.pi * 440 * Double(i) / Double(rate)) * 0.5)
            }
        }
        let analyzer = AudioAnalyzer()
        // In uneven chunks, as a decoder delivers them.
        var at = 0
        while at < samples.count {
            let n = min(1000 + at % 700, samples.count - at)
            samples[at..<(at + n)].withUnsafeBufferPointer {
                analyzer.consume($0, time: Double(at) / Double(rate), rate: rate)
            }
            at += n
        }
        return analyzer.finish()
    }

    @Test("loudness is high during tone bursts and silence is flagged between them")
    func loudnessAndSilence() {
        let r = analyse()
        #expect(r.loudness.count == 50)
        #expect(r.loudness[15] > -12 && r.loudness[35] > -12)  // 0.5 amplitude sine: about -9 dBFS
        #expect(r.loudness[5] < -60 && r.loudness[25] < -60)
        #expect(r.silent[5] && r.silent[25] && !r.silent[15])
    }

    @Test("onsets peak where the bursts start")
    func onsets() {
        let r = analyse()
        let start = max(r.onset[9], r.onset[10]), steady = r.onset[15], quiet = r.onset[5]
        #expect(start > 5 * max(steady, 1e-4), "onset \(start), steady \(steady)")
        #expect(start > 5 * max(quiet, 1e-4))
    }

    @Test("the quiet point near a loud stretch is in the gap")
    func quietPoint() {
        let r = analyse()
        let points = r.quietPoints(near: 2.1, radius: 0.3)
        #expect(!points.isEmpty)
        if let best = points.first { #expect(best > 2.0 && best < 2.4) }
    }
}

@Suite("Quality")
struct QualityTests {
    func analyse(_ frames: [OwnedFrame]) -> [QualityAnalyzer.Sample] {
        let quality = QualityAnalyzer()
        Scenes.features(frames) { f, _ in quality.consume(f) }
        return quality.finish()
    }

    @Test("blurred frames are flagged against the video's sharp ones")
    func blur() {
        let sharp = (0..<30).map { Scenes.frame(seed: 6, object: (10 + $0 * 3, 30)) }
        let soft = sharp.prefix(15).map { Scenes.blurred($0, passes: 4) }
        let samples = analyse(sharp + soft)
        #expect(samples[0..<30].allSatisfy { !$0.isBlurred })
        #expect(samples[30..<45].allSatisfy { $0.isBlurred })
        #expect(samples[40].sharpness < samples[10].sharpness / 3)
    }

    @Test("black, frozen and flash frames are defects; ordinary frames are not")
    func defects() {
        var frames = (0..<30).map { Scenes.frame(seed: 7, object: (10 + $0 * 3, 30)) }
        frames += Array(repeating: Scenes.black(), count: 10)
        frames += Array(repeating: Scenes.frame(seed: 8), count: 30)  // frozen for a second
        var lively = (0..<30).map { Scenes.frame(seed: 9, object: (10 + $0 * 3, 30)) }
        lively[15] = Scenes.white()
        frames += lively
        let s = analyse(frames)
        #expect(s[0..<30].allSatisfy { !$0.isDefect })
        #expect(s[30..<40].allSatisfy { $0.isBlack && $0.exposure == 0 })
        #expect(s[41..<70].allSatisfy { $0.isFrozen })
        #expect(s[85].isFlash)
        #expect(s[70..<85].allSatisfy { !$0.isDefect })
    }

    /// movie-hello (forensics-samples): a webcam face in an inset over a still screencast. Frame to
    /// frame the picture's mean changes by 0.002-0.05 (the old frozen test called all of it
    /// frozen, so the person was never shown), yet the inset's cells drift by many levels within
    /// half a second. A repeated picture with noise under the limits stays frozen.
    @Test("a small subject moving slowly over a still picture is not frozen; a repeated picture is")
    func slowInsetIsNotFrozen() {
        func analyse(_ cell: (Int, Int) -> Float) -> [QualityAnalyzer.Sample] {
            let quality = QualityAnalyzer()
            var f = FrameFeatures()
            f.meanLuma = 120
            f.lumaDeviation = 40
            f.laplacianVariance = 200
            for n in 0..<90 {
                f.time = Double(n) / 30
                for i in 0..<f.thumb.count { f.thumb[i] = 100 + Float(i % 7) * 10 + cell(n, i) }
                quality.consume(f)
            }
            return quality.finish()
        }
        // 4x4 cells of 1024 (1.6 %) brighten by 0.5 level per frame: a frame-to-frame mean of 0.008.
        let inset = Set((0..<4).flatMap { y in (0..<4).map { y * 32 + 2 + $0 } })
        let slow = analyse { n, i in inset.contains(i) ? Float(n) * 0.5 : 0 }
        #expect(slow.allSatisfy { !$0.isFrozen })
        #expect(slow.dropFirst().allSatisfy { $0.change < 0.05 })
        let repeated = analyse { n, i in Float((n * 31 + i * 17) % 5) * 0.02 }  // noise under 0.1 level
        #expect(repeated.dropFirst().allSatisfy { $0.isFrozen })
    }

    @Test("a dark picture has poor exposure")
    func exposure() {
        let s = analyse([Scenes.frame(seed: 1, brightness: 0.15), Scenes.frame(seed: 1)])
        #expect(s[0].exposure < 0.6 && s[1].exposure == 1)
    }
}

@Suite("Fingerprints")
struct FingerprintTests {
    func hash(_ frame: OwnedFrame) -> UInt64 {
        var h: UInt64 = 0
        Scenes.features([frame]) { f, _ in h = DCTHash.hash(f.thumb) }
        return h
    }

    @Test("the same picture softened and rescaled keeps its hash; another picture does not")
    func robustHash() {
        let original = Scenes.frame(seed: 11, object: (60, 40))
        let softer = Scenes.blurred(original, passes: 2)
        let darker = Scenes.frame(seed: 11, object: (60, 40), brightness: 0.8)
        let other = Scenes.frame(seed: 12, object: (60, 40))
        #expect(DCTHash.distance(hash(original), hash(softer)) <= 6)
        #expect(DCTHash.distance(hash(original), hash(darker)) <= 8)
        #expect(DCTHash.distance(hash(original), hash(other)) >= 16)
    }

    @Test("repeated footage is recognised as a duplicate even when trimmed differently; other footage is not")
    func segments() {
        let collector = FingerprintCollector()
        let a = (0..<60).map { Scenes.frame(seed: 13, object: (10 + 3 * $0, 40)) }
        let b = (0..<60).map { Scenes.frame(seed: 14, object: (10 + 3 * $0, 40)) }
        let again = a[10..<50].map { Scenes.blurred($0, passes: 1) }  // shown again, trimmed and softer
        Scenes.features(a + b + Array(again)) { f, _ in collector.consume(f) }
        let fa = collector.fingerprint(start: 0, end: 2)
        let fb = collector.fingerprint(start: 2, end: 4)
        let fAgain = collector.fingerprint(start: 4, end: 5.33)
        #expect(fa.similarity(to: fAgain) >= SegmentFingerprint.duplicateSimilarity)
        #expect(fa.similarity(to: fb) < SegmentFingerprint.duplicateSimilarity)
    }
}
