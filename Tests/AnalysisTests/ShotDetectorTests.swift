import Analysis
import Testing

@Suite("Shot detector")
struct ShotDetectorTests {
    func detect(_ frames: [OwnedFrame], settings: ShotDetector.Settings = ShotDetector.Settings()) -> [ShotBoundary] {
        let detector = ShotDetector(settings: settings)
        Scenes.features(frames) { f, _ in detector.consume(f) }
        return detector.finish()
    }

    /// `count` frames of scene `seed` with a slowly moving object.
    func shot(_ seed: Int, _ count: Int) -> [OwnedFrame] {
        (0..<count).map { Scenes.frame(seed: seed, object: (20 + $0 * 2, 40)) }
    }

    @Test("hard cuts are found at their exact frame")
    func hardCuts() {
        let frames = shot(1, 40) + shot(2, 35) + shot(3, 50) + shot(4, 30)
        let found = detect(frames)
        #expect(found.map(\.kind) == [.cut, .cut, .cut])
        #expect(found.map { Int(($0.time * 30).rounded()) } == [40, 75, 125])
    }

    @Test("flashes of 1 to 3 white frames are not cuts", arguments: [1, 2, 3])
    func flashes(length: Int) {
        var frames = shot(5, 40)
        for i in 15..<(15 + length) { frames[i] = Scenes.white() }
        for i in 30..<(30 + length) { frames[i] = Scenes.mix(frames[i], Scenes.white(), 0.8) }
        #expect(detect(frames).isEmpty)
    }

    @Test("a dissolve is one boundary inside its window")
    func dissolve() {
        let a = shot(6, 40), b = shot(7, 60)
        var frames = Array(a[0..<30])
        for i in 0..<20 { frames.append(Scenes.mix(a[min(39, 30 + i)], b[i], Double(i + 1) / 21)) }
        frames += b[20...]
        let found = detect(frames)
        #expect(found.count == 1)
        #expect(found.first?.kind == .dissolve)
        if let t = found.first?.time { #expect(t >= 30.0 / 30 && t <= 50.0 / 30) }
    }

    @Test("a fade to black and back is one boundary")
    func fade() {
        let a = shot(8, 40), b = shot(9, 40)
        var frames = Array(a[0..<30])
        for i in 0..<10 { frames.append(Scenes.mix(a[30 + i], Scenes.black(), Double(i + 1) / 10)) }
        frames += Array(repeating: Scenes.black(), count: 6)
        for i in 0..<10 { frames.append(Scenes.mix(Scenes.black(), b[i], Double(i + 1) / 10)) }
        frames += b[10...]
        let found = detect(frames)
        #expect(found.count == 1)
        #expect(found.first?.kind == .fade)
        if let t = found.first?.time { #expect(t >= 30.0 / 30 && t <= 56.0 / 30) }
    }

    @Test("fast camera motion is not a cut")
    func pan() {
        let frames = (0..<60).map { Scenes.frame(seed: 10, dx: $0 * 7, dy: $0 % 3) }
        #expect(detect(frames).isEmpty)
    }

    @Test("scores are kept per frame, apart from the decision")
    func scoresSeparate() {
        let frames = shot(11, 20) + shot(12, 20)
        let detector = ShotDetector()
        Scenes.features(frames) { f, _ in detector.consume(f) }
        #expect(detector.scores.count == 40)
        #expect(detector.scores[20] > 0.3)
        #expect(detector.scores[10] < 0.1)
        var strict = ShotDetector.Settings()
        strict.cutThreshold = 0.99
        #expect(detect(frames, settings: strict).isEmpty)
    }
}
