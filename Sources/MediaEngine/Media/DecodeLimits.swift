import FFmpeg

/// Limits on the work one input may cause, enforced on what is actually decoded: a file's header
/// (its duration, frame rate, frame count) is never trusted for length or work.
public struct DecodeLimits: Sendable, Codable, Equatable {
    /// Longest media accepted, in seconds of decoded video or audio timestamps (from the
    /// container's start). A plan's duration cap goes here.
    public var maxDecodedSeconds: Double = 3 * 3600
    /// Video frames per second of media: more than `maxFramesPerSecond × (elapsed media time + 1)`
    /// frames (or packets) fails. Stops floods of tiny frames and timestamps that do not advance.
    public var maxFramesPerSecond: Double = 240
    /// Hard cap on video frames (and packets) in one pass; nil: `maxDecodedSeconds × maxFramesPerSecond`.
    public var maxTotalFrames: Int? = nil
    /// Largest forward jump in seconds between consecutive decoded frames (or audio chunks).
    public var maxTimestampJump: Double = 60

    public init() {}

    public init(
        maxDecodedSeconds: Double, maxFramesPerSecond: Double = 240, maxTotalFrames: Int? = nil,
        maxTimestampJump: Double = 60
    ) {
        self.maxDecodedSeconds = maxDecodedSeconds
        self.maxFramesPerSecond = maxFramesPerSecond
        self.maxTotalFrames = maxTotalFrames
        self.maxTimestampJump = maxTimestampJump
    }

    /// The frame cap in force.
    public var totalFrames: Int {
        if let maxTotalFrames { return max(1, maxTotalFrames) }
        let product = max(0, maxDecodedSeconds) * max(1, maxFramesPerSecond)
        return product.isFinite && product < 1e15 ? max(1, Int(product)) : Int(1e15)
    }

    /// "600 s" or "10 min" for a person.
    package static func describe(seconds: Double) -> String {
        guard seconds.isFinite else { return "an unbounded time" }
        if seconds >= 3600 && seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) h" }
        if seconds >= 60 && seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60)) min" }
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : String(format: "%.1f s", seconds)
    }
}

/// Enforces DecodeLimits during one pass (or one rendered segment): fed every video packet,
/// every decoded video frame and every audio chunk, it throws as soon as one is out of bounds.
package struct DecodeGuard {
    package let limits: DecodeLimits
    package let path: String
    private(set) var videoPackets = 0
    private(set) var videoFrames = 0
    private var first: Double?
    private var latest = -Double.infinity
    private var lastVideo: Double?
    private var lastAudio: Double?

    package init(_ limits: DecodeLimits, path: String) {
        self.limits = limits
        self.path = path
    }

    /// Media time covered so far (clamped to the duration limit, so one wild timestamp cannot
    /// buy unlimited frames).
    private var elapsed: Double {
        guard let first, latest.isFinite else { return 0 }
        return min(max(0, latest - first), max(0, limits.maxDecodedSeconds))
    }

    private mutating func saw(_ time: Double) {
        guard time.isFinite else { return }
        if first == nil { first = time }
        latest = max(latest, time)
    }

    private func checkCount(_ count: Int, _ what: String) throws(MediaError) {
        if count > limits.totalFrames {
            throw MediaError(
                .tooManyFrames, operation: "check \(what)", path: path,
                detail: "the video has more than \(limits.totalFrames) frames, more than is accepted")
        }
        let allowed = limits.maxFramesPerSecond * (elapsed + 1)
        if Double(count) > allowed {
            throw MediaError(
                .tooManyFrames, operation: "check \(what)", path: path,
                detail:
                    "the video has more than \(Int(limits.maxFramesPerSecond)) frames per second of footage (\(count) \(what) in \(String(format: "%.2f", elapsed)) s); the file is damaged or crafted"
            )
        }
    }

    private func checkTime(_ time: Double) throws(MediaError) {
        if time < -max(1, limits.maxTimestampJump) {
            throw MediaError(
                .badTimestamps, operation: "check timestamps", path: path,
                detail: "the video's timestamps lie long before its start; the file is damaged or crafted")
        }
        if time > limits.maxDecodedSeconds || time.isNaN {
            throw MediaError(
                .tooLong, operation: "check duration", path: path,
                detail: "the video is longer than the \(DecodeLimits.describe(seconds: limits.maxDecodedSeconds)) limit"
            )
        }
    }

    private func checkJump(from previous: Double?, to time: Double) throws(MediaError) {
        guard let previous, time - previous > limits.maxTimestampJump else { return }
        throw MediaError(
            .badTimestamps, operation: "check timestamps", path: path,
            detail:
                "the video's timestamps jump forward by \(DecodeLimits.describe(seconds: (time - previous).rounded())) between two frames; the file is damaged or crafted"
        )
    }

    /// A video packet read (its time in seconds from the container's start, when it has one).
    package mutating func videoPacket(time: Double?) throws(MediaError) {
        videoPackets += 1
        if let time, time <= limits.maxDecodedSeconds { saw(time) }
        try checkCount(videoPackets, "packets")
    }

    /// A decoded video frame: its picture size, and its time when it has one.
    package mutating func videoFrame(time: Double?, width: Int, height: Int) throws(MediaError) {
        if width > MediaLimits.maxSide || height > MediaLimits.maxSide || width * height > MediaLimits.maxPixels
            || width < 0 || height < 0
        {
            throw MediaError(
                .dimensionsTooLarge, operation: "check decoded picture size", path: path,
                detail:
                    "the video holds a \(width)x\(height) picture; the limit is \(MediaLimits.maxSide) px a side and \(MediaLimits.maxPixels / 1_000_000) Mpixel"
            )
        }
        videoFrames += 1
        if let time {
            try checkTime(time)
            try checkJump(from: lastVideo, to: time)
            lastVideo = max(lastVideo ?? time, time)
            saw(time)
        }
        try checkCount(videoFrames, "frames")
    }

    /// A decoded audio chunk starting at `time`.
    package mutating func audio(time: Double) throws(MediaError) {
        try checkTime(time)
        try checkJump(from: lastAudio, to: time)
        lastAudio = max(lastAudio ?? time, time)
    }
}
