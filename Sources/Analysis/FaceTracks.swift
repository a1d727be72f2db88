/// The faces an analysis found: when it looked, and each face followed across looks within a shot.
/// Boxes and scores only (no embedding, nothing that recognises a person); deleted with the
/// job's analysis.
public struct FaceTracks: Sendable, Codable, Equatable {
    public struct Settings: Sendable, Codable, Equatable {
        /// A detection continues a track when its box overlaps the track's last box this much
        /// (intersection over union) or its centre lies within `reach` of the last box's widths.
        public var minOverlap: Float = 0.2
        public var reach: Float = 0.75
        /// A track ends after this many seconds without a detection.
        public var maxGap = 1.2
        /// Tracks seen in fewer looks are dropped (a single look is often a face-like pattern).
        public var minLooks = 2
        public init() {}
    }

    /// One face followed in time: the box at each look it was found in.
    public struct Track: Sendable, Codable, Equatable {
        public var start: Double
        public var end: Double
        public var boxes: [FaceAnalyzer.Detection]
        /// Mean box height (fraction of the picture's height), score and frontality.
        public var size: Float
        public var score: Float
        public var frontal: Float
    }

    /// Why no face was looked for (the detector missing, switched off); nil when it looked.
    public var unavailable: String?
    /// The times it looked (a face-free look counts: it says nobody was there).
    public var looks: [Double]
    public var tracks: [Track]

    public init(unavailable: String?, looks: [Double], tracks: [Track]) {
        self.unavailable = unavailable
        self.looks = looks
        self.tracks = tracks
    }

    /// Links each look's detections to the open tracks greedily (best overlap first); a boundary
    /// between two looks closes every track.
    public static func link(
        looks: [FaceAnalyzer.Look], detections: [FaceAnalyzer.Detection], boundaries: [Double], settings: Settings
    ) -> [Track] {
        var done: [[FaceAnalyzer.Detection]] = []
        var open: [[FaceAnalyzer.Detection]] = []
        var next = 0, cut = 0
        var previous = -Double.infinity
        for look in looks {
            let found = detections[next..<(next + look.count)]
            next += look.count
            var crossed = false
            while cut < boundaries.count && boundaries[cut] <= look.time + 1e-6 {
                if boundaries[cut] > previous + 1e-6 { crossed = true }
                cut += 1
            }
            previous = look.time
            // Close the tracks a cut or a long gap ends.
            var still: [[FaceAnalyzer.Detection]] = []
            for track in open {
                if crossed || look.time - track.last!.time > settings.maxGap { done.append(track) } else { still.append(track) }
            }
            open = still
            var pairs: [(Float, Int, Int)] = []
            for (d, detection) in found.enumerated() {
                for (t, track) in open.enumerated() {
                    let affinity = Self.affinity(track.last!, detection, settings: settings)
                    if affinity > 0 { pairs.append((affinity, d, t)) }
                }
            }
            pairs.sort { $0.0 > $1.0 }
            var takenDetections = Set<Int>(), takenTracks = Set<Int>()
            for (_, d, t) in pairs where !takenDetections.contains(d) && !takenTracks.contains(t) {
                open[t].append(found[found.startIndex + d])
                takenDetections.insert(d)
                takenTracks.insert(t)
            }
            for (d, detection) in found.enumerated() where !takenDetections.contains(d) { open.append([detection]) }
        }
        done += open
        return done.filter { $0.count >= max(1, settings.minLooks) }.map { boxes in
            let n = Float(boxes.count)
            return Track(
                start: boxes.first!.time, end: boxes.last!.time, boxes: boxes,
                size: boxes.reduce(0) { $0 + $1.height } / n, score: boxes.reduce(0) { $0 + $1.score } / n,
                frontal: boxes.reduce(0) { $0 + $1.frontal } / n)
        }.sorted { ($0.start, $0.boxes[0].x) < ($1.start, $1.boxes[0].x) }
    }

    /// How well `b` continues `a`: their overlap, else closeness (0 when neither is enough).
    static func affinity(_ a: FaceAnalyzer.Detection, _ b: FaceAnalyzer.Detection, settings: Settings) -> Float {
        let ix = max(0, min(a.x + a.width, b.x + b.width) - max(a.x, b.x))
        let iy = max(0, min(a.y + a.height, b.y + b.height) - max(a.y, b.y))
        let inter = ix * iy, union = a.width * a.height + b.width * b.height - inter
        let iou = union > 0 ? inter / union : 0
        if iou >= settings.minOverlap { return 1 + iou }
        let dx = (a.x + a.width / 2) - (b.x + b.width / 2), dy = (a.y + a.height / 2) - (b.y + b.height / 2)
        let distance = (dx * dx + dy * dy).squareRoot() / max(1e-6, max(a.width, b.width))
        let ratio = max(a.height, b.height) / max(1e-6, min(a.height, b.height))
        return distance <= settings.reach && ratio < 2 ? 1 - distance / (settings.reach + 1e-6) : 0
    }

    /// These faces on a timeline moved by `delta` seconds, kept within [0, end].
    public func shifted(by delta: Double, within end: Double) -> FaceTracks {
        func inside(_ t: Double) -> Bool { t >= 0 && t <= end }
        let tracks = self.tracks.compactMap { track -> Track? in
            var track = track
            track.boxes = track.boxes.compactMap { b in
                var b = b
                b.time += delta
                return inside(b.time) ? b : nil
            }
            guard let first = track.boxes.first, let last = track.boxes.last else { return nil }
            track.start = first.time
            track.end = last.time
            return track
        }
        return FaceTracks(unavailable: unavailable, looks: looks.map { $0 + delta }.filter(inside), tracks: tracks)
    }

    /// The boxes of every track seen in [from, to).
    public func boxes(from: Double, to: Double) -> [FaceAnalyzer.Detection] {
        tracks.filter { $0.end >= from && $0.start < to }.flatMap { $0.boxes.filter { $0.time >= from && $0.time < to } }
    }

    /// The looks in [from, to), and how many of them saw a tracked face.
    public func presence(from: Double, to: Double) -> (looks: Int, withFaces: Int) {
        let lo = looks.partitionIndex { $0 >= from }, hi = looks.partitionIndex { $0 >= to }
        guard hi > lo else { return (0, 0) }
        var seen = Set<Double>()
        for t in tracks where t.end >= from && t.start < to {
            for b in t.boxes where b.time >= from && b.time < to { seen.insert(b.time) }
        }
        return (hi - lo, seen.count)
    }
}

extension Array where Element == Double {
    /// The first index whose element satisfies `predicate` (which must be false, then true, along the array).
    func partitionIndex(_ predicate: (Double) -> Bool) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if predicate(self[mid]) { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }
}
