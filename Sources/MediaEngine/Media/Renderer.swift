import CFFmpeg
import FFmpeg
import Foundation

/// What to render: source ranges, in output order, to an MP4.
public struct RenderRequest: Sendable {
    public var source: String
    public var segments: [TimeRange]
    public var output: String
    public var quality: RenderQuality = .high
    /// Seconds of video (and audio) crossfade between segments; 0 cuts hard. Each crossfade
    /// overlaps two segments, so the output is that much shorter per join.
    public var crossfade = 0.0
    /// Seconds of audio fade-out/in at each hard join, and at the start and end.
    public var audioFade = 0.010
    /// libx264 preset.
    public var preset = "veryfast"
    /// Output frame rate cap (a 120 fps source renders at 60).
    public var maxFrameRate = 60.0
    /// Decoder threads; 0 sizes them to the machine.
    public var threads = 0
    /// Bounds on the decoded source (as in the analysis): no range may end past
    /// `maxDecodedSeconds`, and each segment's decode is held to the frame and timestamp limits.
    public var limits = DecodeLimits()
    /// A crop to another shape whose window follows the picture's subject (one track per
    /// segment); nil renders the whole picture.
    public var reframe: Reframe?
    /// An earlier render of the same footage to copy segments from (hard cuts, whole picture only).
    public var reuse: RenderReuse?

    public init(source: String, segments: [TimeRange], output: String) {
        self.source = source
        self.segments = segments
        self.output = output
    }
}

/// What was written.
public struct RenderResult: Sendable, Codable, Equatable {
    public var output: String
    public var duration: Double
    /// Stored picture size; a player rotates it by `rotation`.
    public var width: Int
    public var height: Int
    public var rotation: Int
    public var frameRate: Rational
    public var frames: Int
    public var audioSamples: Int
    public var fileSize: Int64
    /// Where each source segment starts and ends in the output, in seconds.
    public var outputSegments: [TimeRange]
    /// Damaged source packets skipped over.
    public var damagedPackets: Int
    /// Frames copied from the earlier render (`RenderRequest.reuse`), or from the source
    /// (`CopyRenderer`), instead of encoded.
    public var copiedFrames = 0
    /// A copy of the source's pictures (`CopyRenderer`): the source ranges each segment took (each
    /// from its keyframe to its clean cut).
    public var sourceSegments: [TimeRange]? = nil
}

/// Renders an edit list to MP4: H.264 (libx264) + AAC 48 kHz stereo, yuv420p, constant frame
/// rate, moov at the front. Cuts are frame-accurate: each range seeks to the keyframe before its
/// start, then decodes and drops up to it. Output frame k of a segment shows the source frame on
/// screen at `start + k / fps`, and its audio is exactly the samples of the same span. With hard
/// cuts each segment starts on an IDR frame, so a later render of the same footage can copy it
/// (`RenderRequest.reuse`).
public enum Renderer {
    public static func render(
        _ request: RenderRequest, cancellation: CancellationToken? = nil,
        progress: ((Double) -> Void)? = nil
    ) throws(MediaError) -> RenderResult {
        let session = try RenderSession(request, cancellation: cancellation, progress: progress)
        return try session.run()
    }

    /// The output frame rate for a source: its average rate, snapped to a standard rate when the
    /// source's rate varies, capped at `maximum`.
    package static func outputFrameRate(average: AVRational, real: AVRational, variable: Bool, maximum: Double) -> Rational {
        func valid(_ q: AVRational) -> Bool { q.num > 0 && q.den > 0 && av_q2d(q) >= 1 && av_q2d(q) <= 1000 }
        var rate = valid(average) ? Rational(average) : valid(real) ? Rational(real) : Rational(30, 1)
        let standard = [
            Rational(24000, 1001), Rational(24, 1), Rational(25, 1), Rational(30000, 1001), Rational(30, 1),
            Rational(50, 1), Rational(60000, 1001), Rational(60, 1)
        ]
        if variable || rate.den > 1001 {
            let nearest = standard.min { abs($0.value - rate.value) < abs($1.value - rate.value) }!
            rate =
                abs(nearest.value - rate.value) / rate.value < 0.04
                ? nearest : Rational(max(1, Int(rate.value.rounded())), 1)
        }
        if rate.value > maximum + 0.01 { rate = Rational(Int(maximum.rounded()), 1) }
        return rate
    }
}
