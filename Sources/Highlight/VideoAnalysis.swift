import Analysis
import MediaEngine

/// Everything the analysis pass learns about a video; cached per input and analyser settings, so
/// a highlight at another length or quality is selected and rendered without analysing again.
public struct VideoAnalysis: Sendable, Codable, Equatable {
    public var duration: Double
    public var frameRate: Double
    /// Displayed size (rotation applied).
    public var width: Int
    public var height: Int
    /// Clockwise display rotation of the stored picture; motion and focus positions are in
    /// fractions of the stored picture (`displayPoint` turns them upright).
    public var rotation: Int
    public var hasAudio: Bool
    public var boundaries: [ShotBoundary]
    public var shots: [Shot]
    public var motion: [MotionAnalyzer.Sample]
    public var quality: [QualityAnalyzer.Sample]
    /// Where the eye goes, per analysed frame.
    public var focus: [FocusAnalyzer.Sample]
    public var audio: AudioAnalyzer.Result
    public var candidates: [Candidate]
    public var summary: AnalysisSummary
    /// The content fingerprint re-uploads are recognised by (nil in analyses made before it, and in
    /// a reused one: a re-upload keeps pointing at its original).
    public var fingerprint: ContentFingerprint? = nil
    /// The faces found, linked into tracks (nil in analyses made before faces were looked for).
    public var faces: FaceTracks? = nil

    public struct Shot: Sendable, Codable, Equatable {
        public var start: Double
        public var end: Double
        /// Where the footage is clean of transitions (a dissolve's frames belong to neither shot).
        public var usableStart: Double
        public var usableEnd: Double
    }

    /// A point of the stored picture (fractions) as the viewer sees it, rotation applied.
    public func displayPoint(x: Double, y: Double) -> (x: Double, y: Double) {
        switch ((rotation % 360) + 360) % 360 {
        case 90: (1 - y, x)
        case 180: (1 - x, 1 - y)
        case 270: (y, 1 - x)
        default: (x, y)
        }
    }

    /// True when faces were asked for and can be looked for now, but this analysis could not (the
    /// detector was missing when it was made).
    public func lacksFaces(_ settings: FaceAnalyzer.Settings) -> Bool {
        settings.enabled && faces?.unavailable != nil && FaceDetector.load(settings.library) == nil
    }

    /// 0-based source frame index of the first frame of each new shot.
    public var cutFrames: [Int] { boundaries.map { Int(($0.time * frameRate).rounded()) } }

    /// Per-second means of a per-frame value, over [0, duration).
    func perSecond<T>(_ samples: [T], time: (T) -> Double, value: (T) -> Float) -> [Float] {
        let seconds = max(1, Int(duration.rounded(.up)))
        var sums = [Float](repeating: 0, count: seconds), counts = [Int](repeating: 0, count: seconds)
        for s in samples {
            let i = min(seconds - 1, max(0, Int(time(s))))
            sums[i] += value(s)
            counts[i] += 1
        }
        return (0..<seconds).map { counts[$0] > 0 ? sums[$0] / Float(counts[$0]) : 0 }
    }
}

/// A stretch of one shot that could go into the highlight, with the raw measurements its score
/// is made of (normalised and weighted only at selection, so weights can change without a new pass).
public struct Candidate: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
    public var shot: Int
    public var raw: Raw
    public var fingerprint: SegmentFingerprint
    /// The people in it (nil when no face was looked for, or in analyses made before).
    public var people: People? = nil

    public var duration: Double { end - start }

    public struct Raw: Sendable, Codable, Equatable {
        /// Mean subject motion (picture widths per second).
        public var motion: Float
        /// Mean camera speed and shake.
        public var camera: Float
        public var shake: Float
        /// Mean loudness (dBFS) and onset strength.
        public var loudness: Float
        public var onsets: Float
        /// Mean normalised sharpness and exposure (0...1).
        public var sharpness: Float
        public var exposure: Float
    }

    /// The faces of a candidate, over the looks inside it.
    public struct People: Sendable, Codable, Equatable {
        /// Share of the looks that saw a tracked face (0...1).
        public var presence: Float
        /// Mean height of the largest face (fraction of the picture's height), over looks with a face.
        public var size: Float
        /// Mean frontality and detector score of the largest face (0...1).
        public var frontal: Float
        public var score: Float
        /// The most faces seen in one look.
        public var most: Int
    }
}
