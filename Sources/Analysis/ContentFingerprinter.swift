import Foundation

/// Builds a `ContentFingerprint` during the analysis pass: one `consume` per analysed frame, in
/// time order (frames earlier than the step being filled are ignored), nothing allocated per frame
/// (its buffers are made once; the output arrays are reserved from `expectedSeconds` and grow
/// geometrically past it).
///
/// `rotation` is the clockwise display rotation of the stored frames (`VideoAnalysis.rotation`,
/// 0/90/180/270): the thumbnails are turned to display orientation before hashing, so a copy with
/// the rotation baked into its pixels fingerprints like the original that carried it as metadata.
public final class ContentFingerprinter {
    public let step: Double
    public let rotation: Int
    public let trackRate: Double
    /// Thumbnails whose standard deviation (luma levels) is below this are flat.
    public let flatDeviation: Float

    private static let side = FrameFeatures.thumbSide
    private var sum: [Float]
    private var display: [Float]
    private var stepCount = 0
    private var stepTimeSum = 0.0
    private var currentStep = -1
    private var cellH: Float = 0, cellV: Float = 0, cellCount = 0
    private var currentCell = -1
    private var lastTime = -Double.infinity
    /// cos((2x + 1) pi / 64): the first cosine across the thumbnail.
    private let cosine: [Float]

    private var entries: [UInt64?] = []
    private var phases: [UInt8] = []
    private var lumas: [UInt8] = []
    private var flat: [Bool] = []
    private var track: [Int8] = []

    public init(
        step: Double = 0.2, rotation: Int, expectedSeconds: Double, trackRate: Double = 30, flatDeviation: Float = 4
    ) {
        self.step = step > 0 && step.isFinite ? step : 0.2
        let r = ((rotation % 360) + 360) % 360
        self.rotation = r - r % 90
        self.trackRate = trackRate > 0 && trackRate.isFinite ? trackRate : 30
        self.flatDeviation = flatDeviation
        let n = Self.side * Self.side
        sum = [Float](repeating: 0, count: n)
        display = [Float](repeating: 0, count: n)
        cosine = (0..<Self.side).map { Float(cos(Double(2 * $0 + 1) * Double.pi / Double(2 * Self.side))) }
        // Reserve for the expected length (clamped: a lying header must not reserve gigabytes).
        let seconds = expectedSeconds.isFinite ? min(max(0, expectedSeconds), 4 * 3600) : 0
        let steps = Int(seconds / self.step) + 16
        entries.reserveCapacity(steps)
        phases.reserveCapacity(steps)
        lumas.reserveCapacity(steps)
        flat.reserveCapacity(steps)
        track.reserveCapacity(2 * (Int(seconds * self.trackRate) + 16))
    }

    public func consume(_ features: FrameFeatures) {
        let t = max(0, features.time)
        guard t.isFinite, t >= lastTime else { return }
        let s = Int((t / step + 1e-6).rounded(.down))
        guard s >= currentStep else { return }
        lastTime = t
        if s != currentStep {
            flushStep()
            currentStep = s
        }
        let c = Int((t * trackRate).rounded())
        if c != currentCell {
            flushCell()
            currentCell = c
        }
        let side = Self.side
        var h: Float = 0, v: Float = 0
        features.thumb.withUnsafeBufferPointer { p in
            sum.withUnsafeMutableBufferPointer { acc in
                cosine.withUnsafeBufferPointer { cs in
                    for y in 0..<side {
                        var rowSum: Float = 0, rowH: Float = 0
                        for x in 0..<side {
                            let value = p[y * side + x]
                            acc[y * side + x] += value
                            rowSum += value
                            rowH += value * cs[x]
                        }
                        h += rowH
                        v += rowSum * cs[y]
                    }
                }
            }
        }
        stepCount += 1
        stepTimeSum += t
        cellH += h / Float(side * side)
        cellV += v / Float(side * side)
        cellCount += 1
    }

    public func finish(duration: Double) -> ContentFingerprint {
        flushStep()
        flushCell()
        currentStep = Int.max
        currentCell = Int.max
        let end = max(duration.isFinite ? duration : 0, lastTime.isFinite ? lastTime : 0)
        let steps = Int((end / step - 1e-6).rounded(.up))
        while entries.count < steps { appendEntry(nil, phase: 0, luma: 0, flat: false) }
        let cells = Int((end * trackRate).rounded(.down)) + 1
        while track.count < 2 * cells { track.append(FingerprintTrack.missing); track.append(FingerprintTrack.missing) }
        return ContentFingerprint(
            step: step, entries: entries, duration: end, phases: phases, lumas: lumas, flat: flat,
            trackRate: trackRate, track: track)
    }

    private func appendEntry(_ hash: UInt64?, phase: UInt8, luma: UInt8, flat isFlat: Bool) {
        entries.append(hash)
        phases.append(phase)
        lumas.append(luma)
        flat.append(isFlat)
    }

    private func flushStep() {
        guard stepCount > 0, currentStep >= 0 else { return }
        while entries.count < currentStep { appendEntry(nil, phase: 0, luma: 0, flat: false) }
        let side = Self.side, n = side * side
        let scale = 1 / Float(stepCount)
        var mean: Float = 0, squares: Float = 0
        sum.withUnsafeMutableBufferPointer { s in
            display.withUnsafeMutableBufferPointer { d in
                for y in 0..<side {
                    for x in 0..<side {
                        // Display pixel (x, y) of a picture shown rotated clockwise by `rotation`.
                        let source: Int
                        switch rotation {
                        case 90: source = (side - 1 - x) * side + y
                        case 180: source = (side - 1 - y) * side + (side - 1 - x)
                        case 270: source = x * side + (side - 1 - y)
                        default: source = y * side + x
                        }
                        let value = s[source] * scale
                        d[y * side + x] = value
                        mean += value
                        squares += value * value
                    }
                }
                for i in 0..<n { s[i] = 0 }
            }
        }
        mean /= Float(n)
        let deviation = max(0, squares / Float(n) - mean * mean).squareRoot()
        let phase = ((stepTimeSum * scaleDouble(stepCount) - Double(currentStep) * step) / step * 255).rounded()
        appendEntry(
            DCTHash.hash(display), phase: UInt8(min(255, max(0, phase))), luma: UInt8(min(255, max(0, mean.rounded()))),
            flat: deviation < flatDeviation)
        stepCount = 0
        stepTimeSum = 0
    }

    @inline(__always) private func scaleDouble(_ count: Int) -> Double { 1 / Double(count) }

    private func flushCell() {
        guard cellCount > 0, currentCell >= 0 else { return }
        while track.count < 2 * currentCell {
            track.append(FingerprintTrack.missing); track.append(FingerprintTrack.missing)
        }
        // Display-oriented coefficients: turning the picture clockwise maps (H, V) to (-V, H).
        let h = cellH / Float(cellCount), v = cellV / Float(cellCount)
        let d: (h: Float, v: Float)
        switch rotation {
        case 90: d = (-v, h)
        case 180: d = (-h, -v)
        case 270: d = (v, -h)
        default: d = (h, v)
        }
        track.append(FingerprintTrack.encode(d.h))
        track.append(FingerprintTrack.encode(d.v))
        cellH = 0
        cellV = 0
        cellCount = 0
    }
}
