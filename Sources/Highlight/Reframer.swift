import Analysis
import Foundation
import MediaEngine

/// How the crop window follows the picture.
public struct ReframeSettings: Sendable, Codable, Equatable {
    /// Subject motion (the fastest block against the camera, picture widths per second) at which
    /// the moving subject fully pulls the window.
    public var motionFull: Float = 0.15
    /// Moving blocks spread this far around their centroid (picture widths) or more are motion
    /// everywhere, not a subject: they pull nothing.
    public var motionSpread: Float = 0.25
    /// Pull of the picture's centre, against the subject's motion and the salient detail (each 0...1).
    public var centreBias = 0.25
    /// Targets are resampled on this grid (seconds) and median-filtered over `medianSeconds`.
    public var step = 0.1
    public var medianSeconds = 0.5
    /// A window whose targets all stay within this fraction of its width holds still.
    public var steadySlack = 0.3
    /// Smoothing of a moving window (Gaussian sigma, seconds) and its top speed (window centre,
    /// displayed picture widths or heights per second).
    public var smoothingSeconds = 0.5
    public var maxSpeed = 0.45
    public init() {}
}

/// Plans the crop window of each segment of a highlight rendered in another shape: it follows
/// the subject's motion and the detail that stands out, leans to the centre when nothing does,
/// holds still when the subject stays in view and pans smoothly (bounded speed) when it moves,
/// and starts afresh at every shot boundary inside a segment (a jump at a cut is a cut).
public enum Reframer {
    public static func plan(
        _ analysis: VideoAnalysis, segments: [TimeRange], aspect: AspectRatio,
        settings: ReframeSettings = ReframeSettings()
    ) -> Reframe? {
        guard let window = aspect.window(displayWidth: analysis.width, height: analysis.height) else { return nil }
        let targets = Targets(analysis, settings: settings)
        let cuts = analysis.boundaries.map(\.time)
        let tracks = segments.map { segment -> CropTrack in
            // Pieces between the shot boundaries inside the segment.
            var edges = [segment.start]
            edges += cuts.filter { $0 > segment.start + 1e-6 && $0 < segment.end - 1e-6 }
            edges.append(segment.end)
            var track = CropTrack(times: [], x: [], y: [])
            for i in 0..<(edges.count - 1) {
                let piece = path(targets, from: edges[i], to: edges[i + 1], window: window, settings: settings)
                if let last = track.times.last, let first = piece.times.first, first <= last {
                    // The cut: the new window from the boundary on (a hair later than the old one's end).
                    track.times.append(last + 1e-4)
                } else if let first = piece.times.first {
                    track.times.append(first)
                }
                track.x.append(piece.x[0]); track.y.append(piece.y[0])
                track.times += piece.times.dropFirst(); track.x += piece.x.dropFirst(); track.y += piece.y.dropFirst()
            }
            return track
        }
        return Reframe(aspect: aspect, width: window.width, height: window.height, tracks: tracks)
    }

    /// Where the window should be, per analysed frame: displayed-picture fractions and a weight.
    struct Targets {
        var times: [Double] = []
        var x: [Double] = []
        var y: [Double] = []

        init(_ a: VideoAnalysis, settings: ReframeSettings) {
            var m = 0
            times.reserveCapacity(a.focus.count)
            for f in a.focus {
                while m < a.motion.count && a.motion[m].time < f.time - 1e-6 { m += 1 }
                var sumX = settings.centreBias * 0.5, sumY = settings.centreBias * 0.5, weight = settings.centreBias
                if m < a.motion.count, abs(a.motion[m].time - f.time) < 1e-6 {
                    let s = a.motion[m]
                    let moved = s.subjectX != 0.5 || s.subjectY != 0.5
                    let concentrated = max(0, 1 - s.subjectSpread / settings.motionSpread)
                    let w = moved ? Double(min(1, s.subjectPeak / settings.motionFull) * concentrated) : 0
                    let p = a.displayPoint(x: Double(s.subjectX), y: Double(s.subjectY))
                    sumX += w * p.x; sumY += w * p.y; weight += w
                }
                let w = Double(f.strength)
                let p = a.displayPoint(x: Double(f.x), y: Double(f.y))
                sumX += w * p.x; sumY += w * p.y; weight += w
                times.append(f.time)
                x.append(sumX / weight)
                y.append(sumY / weight)
            }
        }

        /// Targets resampled on a grid over [from, to]: the mean of the frames in each step, the
        /// last value held over steps without one (sampled decodes), the centre before any.
        func grid(from: Double, to: Double, step: Double) -> (times: [Double], x: [Double], y: [Double]) {
            let count = max(1, Int(((to - from) / step).rounded(.up)) + 1)
            var gt = [Double](), gx = [Double](), gy = [Double]()
            gt.reserveCapacity(count); gx.reserveCapacity(count); gy.reserveCapacity(count)
            var i = times.firstIndex { $0 >= from - step / 2 } ?? times.count
            var lastX: Double?, lastY: Double?
            // The value just before the piece, if close, seeds the hold.
            if i > 0, i <= times.count, from - times[i - 1] < 1 { lastX = x[i - 1]; lastY = y[i - 1] }
            for k in 0..<count {
                let t = min(to, from + Double(k) * step)
                var sx = 0.0, sy = 0.0, n = 0
                while i < times.count && times[i] < t + step / 2 && times[i] <= to + step / 2 {
                    sx += x[i]; sy += y[i]; n += 1; i += 1
                }
                if n > 0 { lastX = sx / Double(n); lastY = sy / Double(n) }
                gt.append(t); gx.append(lastX ?? .nan); gy.append(lastY ?? .nan)
            }
            // Steps before the first measured one take its value; none at all: the centre.
            let firstX = gx.first { !$0.isNaN } ?? 0.5, firstY = gy.first { !$0.isNaN } ?? 0.5
            for k in 0..<count where gx[k].isNaN { gx[k] = firstX; gy[k] = firstY }
            return (gt, gx, gy)
        }
    }

    static func path(
        _ targets: Targets, from: Double, to: Double, window: (width: Double, height: Double),
        settings: ReframeSettings
    ) -> CropTrack {
        let grid = targets.grid(from: from, to: to, step: settings.step)
        let radius = max(0, Int((settings.medianSeconds / settings.step / 2).rounded()))
        let x = axis(median(grid.x, radius: radius), size: window.width, settings: settings)
        let y = axis(median(grid.y, radius: radius), size: window.height, settings: settings)
        return CropTrack(times: grid.times, x: x, y: y)
    }

    /// One axis of the window centre: still when the targets stay within the slack, otherwise
    /// smoothed and speed-limited; always inside the picture.
    public static func axis(_ values: [Double], size: Double, settings: ReframeSettings) -> [Double] {
        let lo = size / 2, hi = 1 - size / 2
        func clamp(_ v: Double) -> Double { min(hi, max(lo, v)) }
        guard size < 0.999, let minimum = values.min(), let maximum = values.max() else {
            return values.map { _ in 0.5 }
        }
        if maximum - minimum <= settings.steadySlack * size {
            let mean = values.reduce(0, +) / Double(values.count)
            return values.map { _ in clamp(mean) }
        }
        // Gaussian smoothing, then a forward and a backward pass that bound the speed.
        let sigma = settings.smoothingSeconds / settings.step
        let reach = Int((3 * sigma).rounded(.up))
        var kernel = [Double](repeating: 0, count: 2 * reach + 1)
        for i in -reach...reach { kernel[i + reach] = exp(-Double(i * i) / (2 * sigma * sigma)) }
        var smooth = [Double](repeating: 0, count: values.count)
        for i in values.indices {
            var sum = 0.0, weights = 0.0
            for j in max(0, i - reach)...min(values.count - 1, i + reach) {
                let w = kernel[j - i + reach]
                sum += w * values[j]; weights += w
            }
            smooth[i] = clamp(sum / weights)
        }
        let limit = settings.maxSpeed * settings.step
        for i in smooth.indices.dropFirst() {
            smooth[i] = min(smooth[i - 1] + limit, max(smooth[i - 1] - limit, smooth[i]))
        }
        for i in smooth.indices.dropLast().reversed() {
            smooth[i] = min(smooth[i + 1] + limit, max(smooth[i + 1] - limit, smooth[i]))
        }
        return smooth
    }

    static func median(_ values: [Double], radius: Int) -> [Double] {
        guard radius > 0, values.count > 2 else { return values }
        var window: [Double] = []
        window.reserveCapacity(2 * radius + 1)
        return values.indices.map { i in
            window.removeAll(keepingCapacity: true)
            for j in max(0, i - radius)...min(values.count - 1, i + radius) { window.append(values[j]) }
            window.sort()
            return window[window.count / 2]
        }
    }
}
