import Analysis
import Foundation
import Testing

/// Textures that move on their own in front of a still or a shaken camera: foliage in gusts of
/// wind, a crowd of small walkers, water, low-light noise. None of them is a shot boundary, as
/// shipped or with jump-cut detection on.
@Suite("Natural motion is no jump cut")
struct NaturalMotionTests {
    /// A seeded generator, so every run draws the same scene.
    struct Seeded {
        var state: UInt64
        mutating func next() -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Double(state >> 11) / Double(1 << 53)
        }
    }

    /// lower..<upper within 0..<limit (empty when outside it).
    func span(_ lower: Int, _ upper: Int, _ limit: Int) -> Range<Int> {
        let a = min(max(0, lower), limit)
        return a..<max(a, min(limit, upper))
    }

    /// The boundaries with jump-cut detection on (`jumps`) and as shipped, in that order.
    func detect(_ frames: [OwnedFrame], jumps: Bool = true) -> [ShotBoundary] {
        var settings = ShotDetector.Settings()
        settings.jumpCuts = jumps
        let detector = ShotDetector(settings: settings)
        Scenes.features(frames) { f, _ in detector.consume(f) }
        return detector.finish()
    }

    /// None with jump cuts on, and none as shipped.
    func noBoundary(_ frames: [OwnedFrame], _ comment: Comment? = nil) {
        #expect(detect(frames).isEmpty, comment)
        #expect(detect(frames, jumps: false).isEmpty, comment)
    }

    /// Leaves: a few hundred small bright and dark blobs over a textured background, each swaying
    /// about its place; gusts (every ~20 frames, 3 frames long) throw a third of them several pixels.
    func foliage(count: Int, seed: UInt64, shake: Bool = false) -> [OwnedFrame] {
        var rng = Seeded(state: seed)
        let leaves = (0..<360).map { _ in
            (
                x: rng.next() * 256, y: rng.next() * 144, phase: rng.next() * 6.3,
                amplitude: 1 + 2 * rng.next(), bright: rng.next() < 0.5
            )
        }
        var frames: [OwnedFrame] = []
        var gust = 0.0
        for i in 0..<count {
            gust = i % 20 == 7 ? 5 : max(0, gust - 1.6)
            let dx = shake ? Int(3 * sin(Double(i) * 0.9)) : 0, dy = shake ? Int(2 * cos(Double(i) * 1.3)) : 0
            var f = Scenes.frame(seed: 31, dx: dx, dy: dy)
            for (k, l) in leaves.enumerated() {
                let swing = l.amplitude * sin(Double(i) * 0.35 + l.phase) + (k % 3 == 0 ? gust : 0)
                let cx = Int(l.x + swing) - dx, cy = Int(l.y + swing * 0.4) - dy
                for y in span(cy - 2, cy + 3, 144) {
                    for x in span(cx - 3, cx + 4, 256) { f[x, y] = l.bright ? 200 : 40 }
                }
            }
            frames.append(f)
        }
        return frames
    }

    /// A street of small walkers (4x10 px figures at 0.5-2 px a frame, some turning, some
    /// entering at the edges) seen from a still camera.
    func walkers(count: Int, seed: UInt64) -> [OwnedFrame] {
        var rng = Seeded(state: seed)
        var people = (0..<28).map { _ in
            (
                x: rng.next() * 256, y: 30 + rng.next() * 100, vx: (rng.next() - 0.5) * 4,
                vy: (rng.next() - 0.5) * 1.2, shade: UInt8(20 + rng.next() * 60)
            )
        }
        var frames: [OwnedFrame] = []
        for i in 0..<count {
            var f = Scenes.frame(seed: 32)
            for k in people.indices {
                if i % 23 == k % 23 { people[k].vx = -people[k].vx }  // someone turns round
                people[k].x += people[k].vx
                people[k].y += people[k].vy
                if people[k].x < -4 { people[k].x = 259 } else if people[k].x > 259 { people[k].x = -4 }
                let px = Int(people[k].x), py = Int(people[k].y)
                for y in span(py, py + 10, 144) {
                    for x in span(px, px + 4, 256) { f[x, y] = people[k].shade }
                }
            }
            frames.append(f)
        }
        return frames
    }

    /// Water: ripples travelling in two directions with glints that come and go, in low light
    /// (noise of +-10 levels), optionally shaken.
    func water(count: Int, seed: UInt64, shake: Bool) -> [OwnedFrame] {
        (0..<count).map { i in
            var f = OwnedFrame(width: Scenes.width, height: Scenes.height, luma: 60)
            let t = Double(i)
            let sx = shake ? 3 * sin(t * 0.8) : 0, sy = shake ? 2 * cos(t * 1.1) : 0
            for y in 0..<Scenes.height {
                for x in 0..<Scenes.width {
                    let X = Double(x) + sx, Y = Double(y) + sy
                    var v =
                        90 + 30 * sin(X * 0.21 + t * 0.5) * cos(Y * 0.17 - t * 0.3) + 18 * sin((X + Y) * 0.43 - t * 0.9)
                    if sin(X * 0.9 + t * 1.7) * sin(Y * 0.7 - t * 1.3) > 0.93 { v += 70 }  // glints
                    f[x, y] = UInt8(max(16, min(235, v)))
                }
            }
            return Scenes.noisy(f, amplitude: 10, seed: seed &+ UInt64(i))
        }
    }

    @Test("foliage swaying in gusts of wind gives no boundary, still or shaken, in low light too")
    func foliageIsNoJump() {
        noBoundary(foliage(count: 150, seed: 1), "still")
        noBoundary(foliage(count: 150, seed: 2, shake: true), "shaken")
        noBoundary(
            foliage(count: 150, seed: 3).enumerated().map { Scenes.noisy($1, amplitude: 12, seed: UInt64($0)) },
            "low light")
    }

    @Test("a street of small walkers gives no boundary")
    func walkersAreNoJump() {
        noBoundary(walkers(count: 150, seed: 4), "daylight")
        noBoundary(
            walkers(count: 150, seed: 5).enumerated().map { Scenes.noisy($1, amplitude: 12, seed: UInt64(100 + $0)) },
            "low light")
        // At a third of the frame rate, each frame repeated three times: walkers move in steps.
        let stepping = walkers(count: 50, seed: 9).flatMap { [$0, $0, $0] }
        noBoundary(stepping, "a 10 fps clip at 30 fps")
    }

    @Test("water with glints gives no boundary, still or shaken")
    func waterIsNoJump() {
        noBoundary(water(count: 120, seed: 6, shake: false), "still")
        noBoundary(water(count: 120, seed: 7, shake: true), "shaken")
    }
}
