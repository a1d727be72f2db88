import FFmpeg
import MediaVocabulary

/// The output quality preset: caps the picture's shorter side (a 1080×1920 phone video is 1080p).
public enum RenderQuality: String, Sendable, CaseIterable, Codable {
    case low, medium, high
    /// Up to 2160p (the pro plan's "high").
    case uhd
    /// Up to 540p: the small H.264 preview of a `quality=original` highlight, which every browser plays.
    case preview

    /// Largest shorter side of the output picture.
    public var maxShortSide: Int {
        switch self {
        case .low: 480
        case .medium: 720
        case .high: 1080
        case .uhd: 2160
        case .preview: 540
        }
    }

    /// x264 constant rate factor.
    public var crf: Int {
        switch self {
        case .low: 24
        case .medium: 22
        case .high, .uhd: 20
        case .preview: 25
        }
    }

    public var audioBitRate: Int {
        switch self {
        case .low, .preview: 96_000
        case .medium: 128_000
        case .high, .uhd: 160_000
        }
    }
}

/// Output picture size: the source's display aspect with square pixels, the shorter side capped,
/// never upscaled, even dimensions. Sizes are in stored orientation (rotation goes in the display
/// matrix).
package struct OutputGeometry: Equatable {
    package let width: Int
    package let height: Int

    package init(codedWidth: Int, codedHeight: Int, sampleAspectRatio: Double, maxShortSide: Int) {
        let w = Double(codedWidth) * (sampleAspectRatio > 0 ? sampleAspectRatio : 1)
        let h = Double(codedHeight)
        let scale = min(1, Double(maxShortSide) / min(w, h))
        width = max(2, Int((w * scale / 2).rounded(.down)) * 2)
        height = max(2, Int((h * scale / 2).rounded(.down)) * 2)
    }

    /// A size chosen elsewhere (a reframe), in stored orientation.
    package init(width: Int, height: Int) {
        self.width = max(2, width / 2 * 2)
        self.height = max(2, height / 2 * 2)
    }
}

/// The exact output timeline of an edit: frames and audio samples per segment, with overlaps for
/// crossfades. All arithmetic is in integers so audio and video never drift apart.
package struct EditPlan {
    package struct Segment {
        let range: TimeRange
        /// Output frames this segment contributes (its overlap with a neighbour counted here too).
        let frames: Int
        /// Index of its first output frame.
        let firstFrame: Int
        /// Frames blended with the previous / next segment.
        let overlapIn: Int
        let overlapOut: Int
        let firstSample: Int
        let samples: Int
        let overlapInSamples: Int
        let overlapOutSamples: Int
        /// Source time of output slot `k` of this segment.
        func sourceTime(ofSlot k: Int, frameRate: Rational) -> Double {
            range.start + Double(k) * Double(frameRate.den) / Double(frameRate.num)
        }
    }

    package let segments: [Segment]
    package let frameRate: Rational
    package let sampleRate: Int
    package let totalFrames: Int
    package let totalSamples: Int
    package let crossfadeFrames: Int

    /// Validates `ranges` against the source and lays them out.
    package init(
        ranges: [TimeRange], sourceDuration: Double, frameRate: Rational, sampleRate: Int,
        crossfade: Double, path: String
    ) throws(MediaError) {
        guard !ranges.isEmpty else {
            throw MediaError(.invalidRange, operation: "plan edit", path: path, detail: "the edit list is empty")
        }
        let frameDuration = Double(frameRate.den) / Double(frameRate.num)
        var counts: [Int] = []
        for (i, r) in ranges.enumerated() {
            let name = "segment \(i + 1) (\(r) s)"
            guard r.start.isFinite, r.end.isFinite, r.start >= 0 else {
                throw MediaError(
                    .invalidRange, operation: "plan edit", path: path, detail: "\(name) starts before the video")
            }
            guard r.end > r.start else {
                throw MediaError(
                    .invalidRange, operation: "plan edit", path: path, detail: "\(name) ends before it starts")
            }
            guard r.start < sourceDuration, r.end <= sourceDuration + frameDuration else {
                throw MediaError(
                    .invalidRange, operation: "plan edit", path: path,
                    detail: "\(name) is outside the video, which lasts \(TimeRange.seconds(sourceDuration)) s")
            }
            let frames = Int((min(r.end, sourceDuration + frameDuration) - r.start) / frameDuration + 0.5)
            guard frames >= 1 else {
                throw MediaError(
                    .invalidRange, operation: "plan edit", path: path, detail: "\(name) is shorter than one frame")
            }
            counts.append(frames)
        }
        var overlap = ranges.count > 1 ? Int((crossfade / frameDuration).rounded()) : 0
        if overlap > 0 { overlap = min(overlap, counts.map { $0 / 2 }.min() ?? 0) }

        func sampleAt(_ frame: Int) -> Int {
            Int(
                (Int64(frame) * Int64(sampleRate) * Int64(frameRate.den) + Int64(frameRate.num) / 2)
                    / Int64(frameRate.num))
        }
        var segments: [Segment] = []
        var first = 0
        for (i, r) in ranges.enumerated() {
            let n = counts[i]
            let oIn = i > 0 ? overlap : 0
            let oOut = i < ranges.count - 1 ? overlap : 0
            let s0 = sampleAt(first), s1 = sampleAt(first + n)
            segments.append(
                Segment(
                    range: r, frames: n, firstFrame: first, overlapIn: oIn, overlapOut: oOut,
                    firstSample: s0, samples: s1 - s0,
                    overlapInSamples: oIn > 0 ? sampleAt(first + oIn) - s0 : 0,
                    overlapOutSamples: oOut > 0 ? s1 - sampleAt(first + n - oOut) : 0))
            first += n - oOut
        }
        self.segments = segments
        self.frameRate = frameRate
        self.sampleRate = sampleRate
        self.crossfadeFrames = overlap
        totalFrames = first + (segments.last.map { $0.overlapOut } ?? 0)
        totalSamples = sampleAt(totalFrames)
    }

    package var duration: Double { Double(totalFrames) * Double(frameRate.den) / Double(frameRate.num) }
}
