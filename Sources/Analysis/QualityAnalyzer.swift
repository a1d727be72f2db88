/// Visual quality per frame: sharpness (variance of the Laplacian, normalised per video),
/// exposure (dark, bright, black), frozen pictures and flashes.
public final class QualityAnalyzer {
    public struct Settings: Sendable, Codable, Equatable {
        /// A frame is badly blurred when its Laplacian variance is under `blurredBelow` of the
        /// sharp frames around it (90th percentile within `blurContext` seconds: focus lost,
        /// motion blur), or under `blurredFloor` of the video's sharp frames (nothing sharp at
        /// all). The variance depends on content too (a smooth close-up is low but in focus),
        /// hence the local comparison.
        public var blurredBelow: Float = 0.15
        public var blurContext = 2.0
        public var blurredFloor: Float = 0.03
        /// A thumbnail change above this (0...255) is a cut: blur is judged within one shot only.
        public var cutChange: Float = 25
        /// Mean luma under which a frame is black (with deviation under `blackDeviation`).
        public var blackLuma: Float = 30
        public var blackDeviation: Float = 10
        /// Mean luma under which a frame is too dark; fraction of clipped-white pixels over which
        /// it is too bright.
        public var darkLuma: Float = 45
        public var brightFraction: Float = 0.5
        /// A picture is frozen while its thumbnail stays within `frozenDifference` (mean, 0...255)
        /// of the first picture of the stretch, and no cell of it moves by `frozenCellChange` or
        /// more, for at least `frozenSeconds`. A still scene's sensor noise alone changes the mean
        /// by about 0.1-0.4. The comparison is with the stretch's first picture, not the previous
        /// one, and per cell: a small subject moving slowly (a webcam inset over a screencast:
        /// frame-to-frame means of 0.002-0.05, but cells 6-60 levels apart within 0.5 s) is not
        /// frozen; a repeated picture changes neither.
        public var frozenDifference: Float = 0.05
        public var frozenCellChange: Float = 2
        public var frozenSeconds = 0.5
        /// A flash: brighter than the frames around it by this much (mean luma), for at most
        /// `flashFrames` frames.
        public var flashRise: Float = 40
        public var flashFrames = 3
        public init() {}
    }

    public struct Sample: Sendable, Codable, Equatable {
        public var time: Double
        /// Variance of the Laplacian (raw) and normalised to the video (1 = its sharp frames).
        public var laplacianVariance: Float
        public var sharpness: Float
        public var brightness: Float
        /// 0 (unusable exposure) ... 1 (fine).
        public var exposure: Float
        public var isBlack: Bool
        public var isBlurred: Bool
        public var isFrozen: Bool
        public var isFlash: Bool
        /// Mean thumbnail change from the previous frame (0...255).
        public var change: Float

        /// Material a highlight must never show.
        public var isDefect: Bool { isBlack || isBlurred || isFrozen || isFlash }
    }

    public let settings: Settings
    public private(set) var samples: [Sample] = []
    private var previousThumb: [Float] = []
    /// The first picture of the current unchanged stretch, and per sample whether the picture
    /// was still that one (within `frozenDifference` on the mean and `frozenCellChange` per cell).
    private var anchorThumb: [Float] = []
    private var unchanged: [Bool] = []

    public init(settings: Settings = Settings(), expectedFrames: Int = 0) {
        self.settings = settings
        samples.reserveCapacity(Reservation.frames(expectedFrames))
        unchanged.reserveCapacity(Reservation.frames(expectedFrames))
    }

    public func consume(_ f: FrameFeatures) {
        let n = f.thumb.count
        var change: Float = 255
        if previousThumb.count == n && anchorThumb.count == n {
            // One pass: the change from the previous picture, and the drift from the stretch's first.
            var total: Float = 0, drift: Float = 0, largest: Float = 0
            for i in 0..<n {
                let t = f.thumb[i]
                total += abs(t - previousThumb[i])
                let d = abs(t - anchorThumb[i])
                drift += d
                largest = max(largest, d)
                previousThumb[i] = t
            }
            change = total / Float(n)
            let same = drift / Float(n) < settings.frozenDifference && largest < settings.frozenCellChange
            if !same { for i in 0..<n { anchorThumb[i] = f.thumb[i] } }
            unchanged.append(same)
        } else {
            // The first picture: own storage, never shared; allocated once.
            previousThumb = f.thumb.map { $0 }
            anchorThumb = f.thumb.map { $0 }
            unchanged.append(false)
        }
        let black = f.meanLuma < settings.blackLuma && f.lumaDeviation < settings.blackDeviation
        var exposure: Float = 1
        if f.meanLuma < settings.darkLuma {
            exposure = max(0, (f.meanLuma - settings.blackLuma) / (settings.darkLuma - settings.blackLuma))
        }
        if f.brightFraction > settings.brightFraction {
            exposure = min(exposure, max(0, 1 - (f.brightFraction - settings.brightFraction) * 2))
        }
        samples.append(
            Sample(
                time: f.time, laplacianVariance: f.laplacianVariance, sharpness: 0, brightness: f.meanLuma,
                exposure: black ? 0 : exposure, isBlack: black, isBlurred: false, isFrozen: false,
                isFlash: false, change: change))
    }

    public func finish() -> [Sample] {
        let n = samples.count
        guard n > 0 else { return samples }
        // Sharpness relative to the video's sharp frames (ignoring black ones).
        let reference = max(1, AudioAnalyzer.percentile(samples.filter { !$0.isBlack }.map(\.laplacianVariance), 0.9))
        // Stretches between abrupt changes (cuts): the context blur is judged in.
        var shotOf = [Int](repeating: 0, count: n)
        for i in 1..<max(1, n) { shotOf[i] = shotOf[i - 1] + (samples[i].change > settings.cutChange ? 1 : 0) }
        var window: [Float] = []
        var lo = 0, hi = 0
        for i in 0..<n {
            samples[i].sharpness = min(2, samples[i].laplacianVariance / reference)
            while hi < n && samples[hi].time <= samples[i].time + settings.blurContext { hi += 1 }
            while samples[lo].time < samples[i].time - settings.blurContext { lo += 1 }
            window.removeAll(keepingCapacity: true)
            for j in lo..<hi where !samples[j].isBlack && shotOf[j] == shotOf[i] {
                window.append(samples[j].laplacianVariance)
            }
            let local = max(1, AudioAnalyzer.percentile(window, 0.9))
            let v = samples[i].laplacianVariance
            samples[i].isBlurred =
                !samples[i].isBlack
                && (v < settings.blurredBelow * local || v < settings.blurredFloor * reference)
        }
        // Frozen: runs of pictures unchanged from the run's first one, lasting long enough.
        var i = 1
        while i < n {
            guard unchanged[i] else { i += 1; continue }
            var j = i
            while j + 1 < n && unchanged[j + 1] { j += 1 }
            if samples[j].time - samples[i - 1].time >= settings.frozenSeconds {
                for k in (i - 1)...j where !samples[k].isBlack { samples[k].isFrozen = true }
            }
            i = j + 1
        }
        // Flashes: short bursts brighter than both sides.
        for i in 0..<n {
            for length in 1...settings.flashFrames {
                let before = i - 1, after = i + length
                guard before >= 0, after < n else { continue }
                let base = max(samples[before].brightness, samples[after].brightness)
                var burst = Float.greatestFiniteMagnitude
                for k in i..<after { burst = min(burst, samples[k].brightness) }
                if burst - base >= settings.flashRise {
                    for k in i..<after { samples[k].isFlash = true }
                    break
                }
            }
        }
        return samples
    }
}
