import Analysis
import Foundation

/// What a re-upload's own decode says about it, where it differs from the analysed original.
public struct ReuseTarget: Sendable, Codable, Equatable {
    /// Seconds: time t of the new video shows what time t + offset shows in the original.
    public var offset: Double
    /// The new video's decoded length.
    public var duration: Double
    public var frameRate: Double
    /// Displayed size and stored rotation of the new video.
    public var width: Int
    public var height: Int
    public var rotation: Int
    public var hasAudio: Bool

    public init(
        offset: Double, duration: Double, frameRate: Double, width: Int, height: Int, rotation: Int, hasAudio: Bool
    ) {
        self.offset = offset; self.duration = duration; self.frameRate = frameRate
        self.width = width; self.height = height; self.rotation = rotation; self.hasAudio = hasAudio
    }
}

extension VideoAnalysis {
    /// This analysis as it applies to a re-upload of the same footage (trimmed, re-encoded,
    /// resized, rotated another way): every time moves by `-offset` and is kept within the new
    /// video's length; shots and candidates are clipped to it (a candidate left shorter than
    /// `minCandidate` goes); positions move from this video's stored picture to the new one's
    /// (through display orientation); the frame rate, size and audio are the new video's.
    /// No decode: the selection and render then work on the new file with these times.
    public func reused(for target: ReuseTarget, minCandidate: Double = CandidateSettings().minSeconds) -> VideoAnalysis
    {
        let shift = target.offset
        let end = max(0, target.duration)
        func inside(_ t: Double) -> Bool { t >= 0 && t <= end }
        var a = self
        a.duration = end
        a.frameRate = target.frameRate > 0 ? target.frameRate : frameRate
        a.width = target.width
        a.height = target.height
        a.rotation = target.rotation
        a.hasAudio = target.hasAudio

        a.boundaries = boundaries.compactMap { b in
            var b = b
            b.time -= shift; b.windowStart -= shift; b.windowEnd -= shift
            return b.time > 0 && b.time < end ? b : nil
        }
        // Shots: clipped; the index of each kept shot is remembered for the candidates.
        var shotIndex: [Int: Int] = [:]
        a.shots = []
        for (i, s) in shots.enumerated() {
            let start = max(0, s.start - shift), stop = min(end, s.end - shift)
            guard stop > start + 1e-6 else { continue }
            shotIndex[i] = a.shots.count
            a.shots.append(
                Shot(
                    start: start, end: stop, usableStart: min(stop, max(start, s.usableStart - shift)),
                    usableEnd: max(start, min(stop, s.usableEnd - shift))))
        }
        if a.shots.isEmpty { a.shots = [Shot(start: 0, end: end, usableStart: 0, usableEnd: end)] }

        let turn = Reorientation(from: rotation, to: target.rotation)
        a.motion = motion.compactMap { m in
            var m = m
            m.time -= shift
            guard inside(m.time) else { return nil }
            (m.cameraX, m.cameraY) = turn.vector(m.cameraX, m.cameraY)
            (m.subjectX, m.subjectY) = turn.point(m.subjectX, m.subjectY)
            return m
        }
        a.focus = focus.compactMap { f in
            var f = f
            f.time -= shift
            guard inside(f.time) else { return nil }
            (f.x, f.y) = turn.point(f.x, f.y)
            return f
        }
        // Faces are kept in displayed-picture fractions: only their times move.
        a.faces = faces.map { $0.shifted(by: -shift, within: end) }
        a.quality = quality.compactMap { q in
            var q = q
            q.time -= shift
            return inside(q.time) ? q : nil
        }
        a.audio =
            target.hasAudio
            ? audio.shifted(by: shift, duration: end) : AudioAnalyzer.Result.silence(like: audio, duration: end)
        a.candidates = candidates.compactMap { c in
            guard let shot = shotIndex[c.shot] else { return nil }
            var c = c
            c.start = max(c.start - shift, a.shots[shot].usableStart)
            c.end = min(c.end - shift, a.shots[shot].usableEnd)
            c.shot = shot
            return c.end - c.start >= minCandidate - 1e-9 ? c : nil
        }
        a.fingerprint = nil
        return a
    }
}

/// Moves positions from one stored orientation to another through the displayed picture.
struct Reorientation {
    let from: Int
    let to: Int

    init(from: Int, to: Int) {
        self.from = ((from % 360) + 360) % 360
        self.to = ((to % 360) + 360) % 360
    }

    /// A point in fractions of the `from` stored picture, in fractions of the `to` one.
    func point(_ x: Float, _ y: Float) -> (Float, Float) {
        guard from != to else { return (x, y) }
        // Stored -> display (clockwise `from`), then display -> stored (anticlockwise `to`).
        let (dx, dy): (Float, Float)
        switch from {
        case 90: (dx, dy) = (1 - y, x)
        case 180: (dx, dy) = (1 - x, 1 - y)
        case 270: (dx, dy) = (y, 1 - x)
        default: (dx, dy) = (x, y)
        }
        switch to {
        case 90: return (dy, 1 - dx)
        case 180: return (1 - dx, 1 - dy)
        case 270: return (1 - dy, dx)
        default: return (dx, dy)
        }
    }

    /// A motion vector (picture widths per second) turned the same way.
    func vector(_ x: Float, _ y: Float) -> (Float, Float) {
        guard from != to else { return (x, y) }
        let (dx, dy): (Float, Float)
        switch from {
        case 90: (dx, dy) = (-y, x)
        case 180: (dx, dy) = (-x, -y)
        case 270: (dx, dy) = (y, -x)
        default: (dx, dy) = (x, y)
        }
        switch to {
        case 90: return (dy, -dx)
        case 180: return (-dx, -dy)
        case 270: return (-dy, dx)
        default: return (dx, dy)
        }
    }
}

extension AudioAnalyzer.Result {
    /// The result for audio that starts `seconds` later and lasts `duration`: whole ticks dropped
    /// from the front (or silence put before, for a negative shift) and cut at the end.
    func shifted(by seconds: Double, duration: Double) -> AudioAnalyzer.Result {
        func move<T>(_ values: [T], tick: Double, pad: T) -> [T] {
            guard tick > 0 else { return values }
            let k = Int((seconds / tick).rounded())
            let count = max(0, Int((duration / tick).rounded(.up)))
            var out: [T] = []
            out.reserveCapacity(count)
            for i in 0..<count {
                let j = i + k
                out.append(j >= 0 && j < values.count ? values[j] : pad)
            }
            return out
        }
        var r = self
        r.loudness = move(loudness, tick: tick, pad: -100)
        r.onset = move(onset, tick: tick, pad: 0)
        r.silent = move(silent, tick: tick, pad: true)
        r.fineLoudness = move(fineLoudness, tick: fineTick, pad: -100)
        return r
    }

    /// Digital silence of `duration` on the ticks of `like`.
    static func silence(like: AudioAnalyzer.Result, duration: Double) -> AudioAnalyzer.Result {
        func ticks(_ tick: Double) -> Int { tick > 0 ? max(0, Int((duration / tick).rounded(.up))) : 0 }
        var r = like
        r.loudness = [Float](repeating: -100, count: ticks(like.tick))
        r.onset = [Float](repeating: 0, count: ticks(like.tick))
        r.silent = [Bool](repeating: true, count: ticks(like.tick))
        r.fineLoudness = [Float](repeating: -100, count: ticks(like.fineTick))
        return r
    }
}
