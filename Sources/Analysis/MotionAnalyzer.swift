/// Optical flow by block matching on half-size luma: every textured 8x8 block of a frame is found
/// in the previous frame (three-step search around zero and around the last camera motion). The
/// median vector is the camera's motion; how far blocks stray from it is the subject's motion;
/// the jitter of the camera motion around its smoothed path is shake.
public final class MotionAnalyzer {
    public struct Settings: Sendable, Codable, Equatable {
        /// Block side, in half-size pixels.
        public var blockSize = 8
        /// Blocks whose luma deviation is below this have too little texture to match reliably.
        public var minBlockDeviation: Float = 4
        /// A block whose best match still differs by more than this per pixel (0...255) was not
        /// found (new content, occlusion) and is left out.
        public var maxMatchError: Float = 14
        /// Window (seconds) of the smoothed camera path that shake is measured against.
        public var shakeWindow = 0.5
        public init() {}
    }

    /// One frame's motion, in picture widths per second (so 1.0 crosses the picture in a second).
    public struct Sample: Sendable, Codable, Equatable {
        public var time: Double
        public var cameraX: Float
        public var cameraY: Float
        /// Mean motion of the blocks against the camera (how much of the picture moves, how fast).
        public var subject: Float
        /// The fastest block's motion against the camera (the speed of the fastest thing).
        public var subjectPeak: Float
        public var shake: Float
        /// Fraction of blocks that had texture enough to measure.
        public var coverage: Float
        /// Where the subject's motion is: the centroid of the blocks moving against the camera,
        /// weighted by how far they stray, in fractions of the stored picture (0.5 when nothing moves).
        public var subjectX: Float = 0.5
        public var subjectY: Float = 0.5
        /// How far those blocks spread around it (mean distance, picture widths): small for one
        /// moving subject, large when motion is everywhere (a texture sliding, the aperture problem).
        public var subjectSpread: Float = 1
    }

    public let settings: Settings
    public private(set) var samples: [Sample] = []
    private var previous: [UInt8] = []
    private var current: [UInt8] = []
    private var width = 0
    private var height = 0
    private var previousTime: Double?
    private var restarted = false
    private var predictor = (x: 0, y: 0)
    private var vx: [Float] = []
    private var vy: [Float] = []
    /// Block centres (half-size pixels) of the vectors in `vx`/`vy`.
    private var blockX: [Float] = []
    private var blockY: [Float] = []

    public init(settings: Settings = Settings(), expectedFrames: Int = 0) {
        self.settings = settings
        samples.reserveCapacity(Reservation.frames(expectedFrames))
    }

    /// Frames were skipped before the next one (the sampled decode plan): motion is not measured
    /// across the gap.
    public func restart() {
        previousTime = nil
        restarted = !samples.isEmpty
    }

    public func consume(_ frame: FrameView) {
        let w = frame.width / 2, h = frame.height / 2
        if w != width || h != height {
            width = w
            height = h
            previous = [UInt8](repeating: 0, count: w * h)
            current = [UInt8](repeating: 0, count: w * h)
            previousTime = nil
        }
        halve(frame, width: w, height: h)
        defer {
            swap(&previous, &current)
            previousTime = frame.time
        }
        guard let last = previousTime, frame.time > last else {
            // After a gap the frame is only the reference for the next one: no sample, so the
            // curve shows no stillness that was never seen.
            if !restarted { samples.append(Self.still(at: frame.time)) }
            restarted = false
            return
        }
        let blocks = matchBlocks(width: w, height: h)
        guard !vx.isEmpty else {
            samples.append(Self.still(at: frame.time))
            return
        }
        samples.append(sample(time: frame.time, dt: Float(frame.time - last), blocks: blocks, width: w, height: h))
    }

    private static func still(at time: Double) -> Sample {
        Sample(time: time, cameraX: 0, cameraY: 0, subject: 0, subjectPeak: 0, shake: 0, coverage: 0)
    }

    /// The frame's luma at half size (2x2 means) into `current`.
    private func halve(_ frame: FrameView, width w: Int, height h: Int) {
        current.withUnsafeMutableBufferPointer { c in
            for y in 0..<h {
                let r0 = frame.luma + 2 * y * frame.lumaStride, r1 = r0 + frame.lumaStride
                for x in 0..<w {
                    c[y * w + x] = UInt8(
                        (Int(r0[2 * x]) + Int(r0[2 * x + 1]) + Int(r1[2 * x]) + Int(r1[2 * x + 1]) + 2) >> 2)
                }
            }
        }
    }

    /// Block vectors of `current` against `previous` into `vx`/`vy` (with the blocks' centres),
    /// for blocks with texture whose best match is close enough; returns the blocks looked at.
    private func matchBlocks(width w: Int, height h: Int) -> Int {
        vx.removeAll(keepingCapacity: true)
        vy.removeAll(keepingCapacity: true)
        blockX.removeAll(keepingCapacity: true)
        blockY.removeAll(keepingCapacity: true)
        let bs = settings.blockSize
        var blocks = 0
        current.withUnsafeBufferPointer { cur in
            previous.withUnsafeBufferPointer { prev in
                // The outer ring of blocks is left out: content there enters or leaves the picture.
                var by = bs
                while by + 2 * bs <= h {
                    var bx = bs
                    while bx + 2 * bs <= w {
                        blocks += 1
                        if deviation(cur, bx, by) >= settings.minBlockDeviation {
                            let v = search(cur, prev, bx, by)
                            if Float(v.cost) <= settings.maxMatchError * Float(bs * bs) {
                                vx.append(Float(v.x))
                                vy.append(Float(v.y))
                                blockX.append(Float(bx) + Float(bs) / 2)
                                blockY.append(Float(by) + Float(bs) / 2)
                            }
                        }
                        bx += bs
                    }
                    by += bs
                }
            }
        }
        return blocks
    }

    /// The camera (median vector), the subject (the blocks that move against it) and where the
    /// subject is, from the block vectors.
    private func sample(time: Double, dt: Float, blocks: Int, width w: Int, height h: Int) -> Sample {
        let mx = median(&vx), my = median(&vy)
        predictor = (Int(mx.rounded()), Int(my.rounded()))
        var stray: Float = 0, peak: Float = 0
        // Centroid of the blocks that move against the camera by more than a pixel (matching noise).
        var cx: Float = 0, cy: Float = 0, weights: Float = 0
        for i in 0..<vx.count {
            let d = ((vx[i] - mx) * (vx[i] - mx) + (vy[i] - my) * (vy[i] - my)).squareRoot()
            stray += d
            peak = max(peak, d)
            if d > 1 { cx += blockX[i] * d; cy += blockY[i] * d; weights += d }
        }
        stray /= Float(vx.count)
        let scale = 1 / (Float(w) * dt)
        var sample = Sample(
            time: time, cameraX: mx * scale, cameraY: my * scale, subject: stray * scale,
            subjectPeak: peak * scale, shake: 0, coverage: Float(vx.count) / Float(max(1, blocks)))
        guard weights > 0 else { return sample }
        cx /= weights
        cy /= weights
        sample.subjectX = cx / Float(w)
        sample.subjectY = cy / Float(h)
        var spread: Float = 0
        for i in 0..<vx.count {
            let d = ((vx[i] - mx) * (vx[i] - mx) + (vy[i] - my) * (vy[i] - my)).squareRoot()
            if d > 1 {
                spread += d * ((blockX[i] - cx) * (blockX[i] - cx) + (blockY[i] - cy) * (blockY[i] - cy)).squareRoot()
            }
        }
        sample.subjectSpread = spread / weights / Float(w)
        return sample
    }

    /// Computes shake once all frames are in; returns the samples.
    public func finish() -> [Sample] {
        let n = samples.count
        guard n > 2 else { return samples }
        var result = samples
        var lo = 0, hi = 0
        var sumX: Float = 0, sumY: Float = 0
        for i in 0..<n {
            let t = samples[i].time
            while hi < n && samples[hi].time <= t + settings.shakeWindow / 2 {
                sumX += samples[hi].cameraX; sumY += samples[hi].cameraY; hi += 1
            }
            while samples[lo].time < t - settings.shakeWindow / 2 {
                sumX -= samples[lo].cameraX; sumY -= samples[lo].cameraY; lo += 1
            }
            let count = Float(hi - lo)
            let dx = samples[i].cameraX - sumX / count, dy = samples[i].cameraY - sumY / count
            result[i].shake = (dx * dx + dy * dy).squareRoot()
        }
        samples = result
        return result
    }

    private func deviation(_ p: UnsafeBufferPointer<UInt8>, _ bx: Int, _ by: Int) -> Float {
        let bs = settings.blockSize
        var sum = 0, squares = 0
        for y in by..<(by + bs) {
            for x in bx..<(bx + bs) { let v = Int(p[y * width + x]); sum += v; squares += v * v }
        }
        let n = Float(bs * bs), mean = Float(sum) / n
        return max(0, Float(squares) / n - mean * mean).squareRoot()
    }

    /// Where the block at (bx, by) of the current frame moved from: returns its motion (current - previous).
    private func search(_ cur: UnsafeBufferPointer<UInt8>, _ prev: UnsafeBufferPointer<UInt8>, _ bx: Int, _ by: Int)
        -> (x: Int, y: Int, cost: Int)
    {
        let bs = settings.blockSize
        func sad(_ dx: Int, _ dy: Int, _ limit: Int) -> Int {
            let px = bx + dx, py = by + dy
            guard px >= 0, py >= 0, px + bs <= width, py + bs <= height else { return Int.max }
            var total = 0
            for y in 0..<bs {
                let a = (by + y) * width + bx, b = (py + y) * width + px
                for x in 0..<bs { total &+= abs(Int(cur[a + x]) - Int(prev[b + x])) }
                if total >= limit { return total }
            }
            return total
        }
        // Start from the better of no motion and the last camera motion.
        var best = (x: 0, y: 0), bestCost = sad(0, 0, Int.max)
        let p = (x: -predictor.x, y: -predictor.y)
        if p != (0, 0) {
            let c = sad(p.x, p.y, bestCost)
            if c < bestCost { best = p; bestCost = c }
        }
        var step = 4
        while step >= 1 {
            let center = best
            for dy in stride(from: -step, through: step, by: step) {
                for dx in stride(from: -step, through: step, by: step) where dx != 0 || dy != 0 {
                    let c = sad(center.x + dx, center.y + dy, bestCost)
                    if c < bestCost { bestCost = c; best = (center.x + dx, center.y + dy) }
                }
            }
            step /= 2
        }
        return (-best.x, -best.y, bestCost)
    }

    private func median(_ values: inout [Float]) -> Float {
        values.sort()
        let n = values.count
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2
    }
}
