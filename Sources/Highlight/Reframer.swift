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
    /// Faces come first (AutoFlip's rule): where a face track is in view the window centres on
    /// all the faces when they fit in `faceFit` of its width, else on the largest face; the
    /// subject's motion and the salient detail lead only where nobody is seen.
    public var facesFirst = true
    public var faceFit = 0.9
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
        let faces = settings.facesFirst ? analysis.faces.map { FaceTargets($0) } : nil
        let cuts = analysis.boundaries.map(\.time)
        let tracks = segments.map { segment -> CropTrack in
            // Pieces between the shot boundaries inside the segment.
            var edges = [segment.start]
            edges += cuts.filter { $0 > segment.start + 1e-6 && $0 < segment.end - 1e-6 }
            edges.append(segment.end)
            var track = CropTrack(times: [], x: [], y: [])
            for i in 0..<(edges.count - 1) {
                let piece = path(
                    targets, faces: faces, from: edges[i], to: edges[i + 1], window: window, settings: settings)
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
        _ targets: Targets, faces: FaceTargets?, from: Double, to: Double, window: (width: Double, height: Double),
        settings: ReframeSettings
    ) -> CropTrack {
        var grid = targets.grid(from: from, to: to, step: settings.step)
        if let faces {
            // Only the tracks of this piece: a face of the shot before a cut does not pull this one.
            let piece = faces.within(from: from, to: to)
            for k in grid.times.indices {
                if let p = piece.target(at: grid.times[k], window: window, fit: settings.faceFit) {
                    (grid.x[k], grid.y[k]) = p
                }
            }
        }
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

    /// Where the faces in view put the window: the middle of all of them when they fit, else the
    /// most prominent: the largest, weighed by how frontal and how sure its track is, so a turned
    /// head or the back of one in the foreground (bench-people's dialogue) does not take the crop
    /// from the face that talks to it.
    struct FaceTargets {
        let tracks: [FaceTracks.Track]

        init(_ faces: FaceTracks) { tracks = faces.tracks }
        init(tracks: [FaceTracks.Track]) { self.tracks = tracks }

        func within(from: Double, to: Double) -> FaceTargets {
            FaceTargets(tracks: tracks.filter { $0.end >= from - 1e-6 && $0.start <= to + 1e-6 })
        }

        /// The window centre the faces at `t` ask for (displayed-picture fractions); nil when none is in view.
        func target(at t: Double, window: (width: Double, height: Double), fit: Double) -> (Double, Double)? {
            var boxes: [(x0: Double, y0: Double, x1: Double, y1: Double)] = []
            var weights: [Double] = []
            for track in tracks where t >= track.start - 0.25 && t <= track.end + 0.25 {
                boxes.append(Self.box(of: track, at: t))
                weights.append((0.5 + 0.5 * Double(track.frontal)) * Double(track.score))
            }
            guard !boxes.isEmpty else { return nil }
            let x0 = boxes.map(\.x0).min()!, x1 = boxes.map(\.x1).max()!
            let y0 = boxes.map(\.y0).min()!, y1 = boxes.map(\.y1).max()!
            if x1 - x0 <= fit * window.width && y1 - y0 <= fit * window.height { return ((x0 + x1) / 2, (y0 + y1) / 2) }
            let prominence = zip(boxes, weights).map { ($0.x1 - $0.x0) * ($0.y1 - $0.y0) * $1 }
            let main = boxes[prominence.indices.max { prominence[$0] < prominence[$1] }!]
            return ((main.x0 + main.x1) / 2, (main.y0 + main.y1) / 2)
        }

        /// The track's box at `t`, between the looks around it (held past its ends).
        static func box(of track: FaceTracks.Track, at t: Double) -> (x0: Double, y0: Double, x1: Double, y1: Double) {
            let boxes = track.boxes
            let after = boxes.firstIndex { $0.time >= t } ?? boxes.count - 1
            let before = max(0, boxes[after].time > t ? after - 1 : after)
            let a = boxes[before], b = boxes[after]
            let span = b.time - a.time
            let w = span > 1e-6 ? min(1, max(0, (t - a.time) / span)) : 0
            func mix(_ p: Float, _ q: Float) -> Double { Double(p) + (Double(q) - Double(p)) * w }
            let x = mix(a.x, b.x), y = mix(a.y, b.y), width = mix(a.width, b.width), height = mix(a.height, b.height)
            return (x, y, x + width, y + height)
        }
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
