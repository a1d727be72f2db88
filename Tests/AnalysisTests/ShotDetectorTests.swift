import Analysis
import Foundation
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

    /// A camera flash, then a cut a few frames later: the flash's own two large changes (into the
    /// white and back) are no footage activity that makes the cut look ordinary beside them.
    @Test("a hard cut 2 to 6 frames after a two-frame white flash is a cut", arguments: [2, 3, 4, 5, 6])
    func cutAfterFlash(gap: Int) {
        var frames = shot(1, 40) + shot(2, 40)
        let flash = 40 - gap - 2
        frames[flash] = Scenes.white()
        frames[flash + 1] = Scenes.white()
        #expect(detect(frames).map { Int(($0.time * 30).rounded()) } == [40], "flash at \(flash)")
    }

    /// A 2-frame flash after which the picture is not quite what it was (the exposure settling, or
    /// in lively footage the subject moving on during it; the packaged cockatoo clip doubled from
    /// 20 to 30 fps did this): not within the absolute 0.12 of the frame before, but within a
    /// quarter of the flash's own change (`burstReturnShare`). Not a cut where it starts or ends.
    @Test(
        "a flash after which the picture comes back changed a little is not a cut, neither where it starts nor where it ends"
    )
    func flashReturningChanged() {
        var frames = (0..<60).map { Scenes.frame(seed: 5, object: (20 + 2 * $0, 40), brightness: $0 < 30 ? 1 : 0.8) }
        frames[30] = Scenes.white()
        frames[31] = Scenes.white()
        #expect(detect(frames).isEmpty, "\(detect(frames))")
        // The absolute return measure alone takes the flash's end for a cut: the test discriminates.
        var absolute = ShotDetector.Settings()
        absolute.burstReturnShare = 0
        #expect(detect(frames, settings: absolute).map { Int(($0.time * 30).rounded()) } == [32])
        // A larger change across the flash (a light switched off under it) is a cut.
        var darker = frames
        for i in 32..<60 { darker[i] = Scenes.frame(seed: 5, object: (20 + 2 * i, 40), brightness: 0.55) }
        #expect(detect(darker).map { Int(($0.time * 30).rounded()) } == [32])
    }

    /// A fish tank: 40 small dark subjects swimming everywhere (up to 2 px a frame at analysis size,
    /// about one fine cell) over a still background, and a cut to the same tank later (every
    /// subject elsewhere). The 32x32 cells see the swimming as
    /// much as the jump; the 2x2-pixel cells (`FineChange`) see each subject find itself nearby,
    /// except across the jump.
    @Test("a jump in a scene of many small subjects moving everywhere is found on its frame; their swimming is no jump")
    func jumpAmongManySmallSubjects() {
        func tank(jumpAt: Int?) -> [OwnedFrame] {
            var seed: UInt64 = 12345
            func next() -> Int { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return Int(seed >> 33) }
            var fish = (0..<40).map { _ in
                (
                    x: Double(next() % 240), y: Double(next() % 130), vx: Double(next() % 5) - 2,
                    vy: Double(next() % 3) - 1
                )
            }
            let background = Scenes.frame(seed: 3)
            var frames: [OwnedFrame] = []
            for i in 0..<90 {
                if i == jumpAt {
                    fish = fish.map { f in (x: Double(next() % 240), y: Double(next() % 130), vx: f.vx, vy: f.vy) }
                }
                var frame = background
                for f in fish {
                    for y in Int(f.y)..<min(Scenes.height, Int(f.y) + 3) {
                        for x in Int(f.x)..<min(Scenes.width, Int(f.x) + 5) { frame[x, y] = 30 }
                    }
                }
                frames.append(frame)
                fish = fish.map { f in
                    var g = f
                    g.x += g.vx; g.y += g.vy
                    if g.x < 0 || g.x > 245 { g.vx = -g.vx; g.x = min(245, max(0, g.x)) }
                    if g.y < 0 || g.y > 135 { g.vy = -g.vy; g.y = min(135, max(0, g.y)) }
                    return g
                }
            }
            return frames
        }
        var jumps = ShotDetector.Settings()
        jumps.jumpCuts = true
        let found = detect(tank(jumpAt: 45), settings: jumps)
        #expect(found.map(\.kind) == [.jump] && found.map { Int(($0.time * 30).rounded()) } == [45], "\(found)")
        #expect(detect(tank(jumpAt: nil), settings: jumps).isEmpty, "swimming is no jump")
        // The 32x32 cells alone do not see it: the fine grid is what finds it.
        var coarseOnly = jumps
        coarseOnly.jumpFineRatio = 1e9
        #expect(detect(tank(jumpAt: 45), settings: coarseOnly).isEmpty)
        // Candidates for a second look (the anchors plan's): the same rules at the ratios given.
        func candidates(_ settings: ShotDetector.Settings, besides: Bool = false) -> [Int] {
            let detector = ShotDetector(settings: settings)
            Scenes.features(tank(jumpAt: 45)) { f, _ in detector.consume(f) }
            let found = detector.finish()
            return detector.jumpCandidates(localRatio: 3.5, fineRatio: 4.2, besides: besides ? found : [])
                .map { Int(($0.time * 30).rounded()) }
        }
        #expect(candidates(jumps) == [45])
        #expect(candidates(jumps, besides: true).isEmpty, "a boundary already found is no candidate")
        #expect(candidates(coarseOnly) == [45], "the ratios given, not the settings'")
        var off = jumps
        off.jumpCuts = false
        #expect(candidates(off).isEmpty)
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
        strict.jumpThreshold = 0.99
        strict.jumpFineThreshold = 0.99
        #expect(detect(frames, settings: strict).isEmpty)
    }

    // MARK: Jump cuts

    /// `count` frames of scene `seed` with its subject standing near `x`, `y`, swaying a little.
    func posed(_ seed: Int, _ count: Int, at x: Int, _ y: Int) -> [OwnedFrame] {
        (0..<count).map { Scenes.frame(seed: seed, object: (x + Int(3 * sin(Double($0) * 0.4)), y)) }
    }

    /// Jump-cut detection on (`jumpCuts`, off as shipped).
    static var jumps: ShotDetector.Settings {
        var settings = ShotDetector.Settings()
        settings.jumpCuts = true
        return settings
    }

    @Test(
        "a jump cut (the scene stays, the subject jumps) is found at its exact frame when asked for, the hard cuts stay cuts; off by default"
    )
    func jumpCut() {
        // The subject holds still on both sides of each jump (the evidence a jump needs).
        func still(_ seed: Int, _ count: Int, at x: Int, _ y: Int) -> [OwnedFrame] {
            (0..<count).map { _ in Scenes.frame(seed: seed, object: (x, y)) }
        }
        let frames =
            still(13, 45, at: 30, 40) + still(13, 40, at: 170, 90) + still(14, 40, at: 60, 30)
            + still(14, 40, at: 60, 100)
        #expect(detect(frames).map(\.kind) == [.cut], "jump cuts are off by default")
        let found = detect(frames, settings: Self.jumps)
        #expect(found.map(\.kind) == [.jump, .cut, .jump], "\(found)")
        #expect(found.map { Int(($0.time * 30).rounded()) } == [45, 85, 125])
        // A subject that sways all the time keeps its cells changing on both sides: the measures
        // spike on the jump's frame, but the history evidence says unsure, so no jump.
        let swaying =
            posed(13, 45, at: 30, 40) + posed(13, 40, at: 170, 90) + posed(14, 40, at: 60, 30)
            + posed(14, 40, at: 60, 100)
        #expect(detect(swaying, settings: Self.jumps).map(\.kind) == [.cut])
        var measuresOnly = Self.jumps
        measuresOnly.jumpHistoryRatio = 0
        measuresOnly.jumpMinResidual = 0
        let spikes = detect(swaying, settings: measuresOnly)
        #expect(spikes.map { Int(($0.time * 30).rounded()) } == [45, 85, 125], "\(spikes)")
    }

    func detectJumps(_ frames: [OwnedFrame]) -> [ShotBoundary] { detect(frames, settings: Self.jumps) }

    @Test(
        "no jump cut from a subject moving on its own, shake, a whip pan, a zoom, noise, flashes or something passing by"
    )
    func jumpCutNegatives() {
        // A subject walking across at 5 px a frame.
        #expect(detectJumps((0..<60).map { Scenes.frame(seed: 15, object: (10 + 5 * $0, 50)) }).isEmpty)
        // Handheld shake: the whole picture jitters by up to 4 px a frame.
        let jitter = [0, 3, -2, 4, -4, 1, -3, 2, 0, -1]
        #expect(
            detectJumps(
                (0..<60).map {
                    Scenes.frame(seed: 16, dx: jitter[$0 % 10], dy: jitter[($0 + 3) % 10], object: (100, 50))
                }
            ).isEmpty)
        // A whip pan: still, then 25 px a frame for ten frames, then still.
        var offset = 0
        let whip = (0..<60).map { i -> OwnedFrame in
            if i >= 25 && i < 35 { offset += 25 }
            return Scenes.frame(seed: 17, dx: offset, object: (120, 60))
        }
        #expect(detectJumps(whip).isEmpty)
        // A zoom in, 1 % a frame.
        #expect(
            detectJumps((0..<60).map { Scenes.frame(seed: 18, object: (110, 50), zoom: pow(1.01, Double($0))) }).isEmpty
        )
        // Low-light noise on a still scene.
        #expect(
            detectJumps(
                (0..<60).map { Scenes.noisy(Scenes.frame(seed: 19, object: (90, 40)), amplitude: 12, seed: UInt64($0)) }
            ).isEmpty)
        // A flash, and something crossing the picture in two frames.
        var flash = posed(20, 60, at: 40, 40)
        flash[20] = Scenes.white()
        flash[21] = Scenes.white()
        flash[40] = Scenes.frame(seed: 20, object: (200, 100))
        flash[41] = Scenes.frame(seed: 20, object: (210, 100))
        #expect(detectJumps(flash).isEmpty, "\(detect(flash))")
    }
}
