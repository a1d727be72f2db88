import MediaEngine

/// How the analysis decodes an input, chosen per input from what it costs to decode and how its
/// keyframes are spaced.
///
/// - `full`: every frame (less those `AnalysisOptions` skips). Cheap inputs without B-frames: a
///   minute or two of 1080p30 H.264; and any input the other plans cannot take.
/// - `anchors`: every I- and P-frame, B-frames skipped, keyframe groups decoded side by side (one
///   single-threaded decoder per core); a cut found on a step over skipped frames is placed on its
///   exact frame by decoding that step's B-frames. Cheap inputs with B-frames (1080p30 H.264 as
///   cameras, editors and ffmpeg write it).
/// - `sampled`: each keyframe and a short burst of frames after it (motion and flashes are measured
///   on the burst); shot boundaries are screened coarsely on these samples and only the keyframe
///   groups around a possible boundary are decoded again in full, which places each boundary on its
///   exact frame. For inputs with short keyframe groups that are expensive per second (4K, HEVC,
///   10-bit, 60 fps: what phones record) or, without B-frames, long enough that decoding every frame
///   costs more than sampling and refining.
public struct DecodePlan: Sendable, Codable, Equatable {
    public enum Mode: String, Sendable, Codable { case full, anchors, sampled }

    public var mode: Mode
    /// Sampled plan: frames decoded after each keyframe.
    public var burstFrames: Int
    /// Why this plan (for logs and the benchmark).
    public var reason: String

    public static let full = DecodePlan(mode: .full, burstFrames: 0, reason: "asked for")

    public init(mode: Mode, burstFrames: Int, reason: String) {
        self.mode = mode
        self.burstFrames = burstFrames
        self.reason = reason
    }
}

/// The settings the plan is chosen with. Part of the analysis settings (and so of the cache key).
public struct DecodePlanSettings: Sendable, Codable, Equatable {
    public enum Choice: String, Sendable, Codable, CaseIterable { case auto, full, anchors, sampled }

    /// `auto` chooses per input; `full`, `anchors` and `sampled` force a plan (`sampled` still
    /// decodes in full an input whose keyframes are too far apart to sample, `anchors` one without
    /// B-frames or whose keyframes are further apart than `maxAnchorKeyframeInterval`).
    public var choice = Choice.auto
    /// Decode cost from which `auto` samples: megapixels per second of video, weighted by codec
    /// (H.264 1, VP9 1.6, HEVC 2, AV1 2.5) and by 1.25 above 8 bits. 1080p30 H.264 costs 62,
    /// 1080p60 H.264 124, 1080p30 HEVC 10-bit 156, 4K30 HEVC 10-bit 622.
    public var sampleFromCost = 120.0
    /// Total decode work from which `auto` samples a stream without B-frames whatever its cost per
    /// second: cost times the input's seconds. 6,000 is about 100 s of 1080p30 H.264 (62 a
    /// second): two minutes of it are sampled, a one-minute clip is not. Measured on 2 minutes of
    /// 1080p30 H.264 (bench-media's footage): P-frames only with 1 s groups, the sampled plan takes
    /// 0.66 of the full plan's time; with B-frames and 2 s groups 1.12 (1.29 on the cut set of
    /// `scripts/bench-analysis --variant h264gop`), as a refined range decodes its B-frames too and
    /// a burst waits for reordered frames, so a stream that reorders is sampled only when it is
    /// costly per second.
    /// The header's duration only chooses between two plans that both bound their work on the
    /// decoded data.
    public var sampleFromWork = 6_000.0
    /// Frames decoded after each keyframe in the sampled plan.
    public var burstFrames = 3
    /// The sampled plan needs keyframes at least this often (seconds, median of the first groups).
    public var maxKeyframeInterval = 2.5
    /// The anchors plan holds a whole keyframe group before decoding it: it needs keyframes at
    /// least this often (median of the first groups; x264's default is at most 250 frames, 8.3 s
    /// at 30 fps). A longer group met later sends the analysis back to the full plan
    /// (`AnalysisDecoder.AnchorLimits`).
    public var maxAnchorKeyframeInterval = 10.0
    /// What the anchors pass holds of one group before it gives up for the full plan.
    public var anchorLimits = AnalysisDecoder.AnchorLimits()

    public init() {}

    /// The decode cost of an input, as `sampleFromCost` counts it.
    public static func cost(_ info: MediaInfo) -> Double {
        let v = info.video
        let weight: Double
        switch v.codec {
        case "hevc": weight = 2
        case "av1": weight = 2.5
        case "vp9": weight = 1.6
        default: weight = 1
        }
        let depth = v.bitDepth > 8 ? 1.25 : 1
        let rate = v.frameRate.isFinite && v.frameRate > 0 ? min(v.frameRate, 240) : 30
        return Double(v.codedWidth) * Double(v.codedHeight) * rate / 1e6 * weight * depth
    }

    /// The plan for an input with `info`, whose first keyframe groups look like `survey`.
    public func plan(for info: MediaInfo, survey: GOPSurvey) -> DecodePlan {
        let burst = max(1, min(burstFrames, 30))
        if choice == .full { return DecodePlan(mode: .full, burstFrames: 0, reason: "full decode asked for") }
        let seen = survey.keyframeInterval.map { String(format: "keyframes every %.1f s", $0) } ?? "too few keyframes"
        let anchors: DecodePlan
        if !survey.reorders {
            anchors = DecodePlan(mode: .full, burstFrames: 0, reason: "no B-frames to skip")
        } else if let interval = survey.keyframeInterval, interval <= maxAnchorKeyframeInterval {
            let why = choice == .anchors ? "anchors asked for" : "B-frames skipped"
            anchors = DecodePlan(mode: .anchors, burstFrames: 0, reason: why + ", " + seen)
        } else {
            anchors = DecodePlan(mode: .full, burstFrames: 0, reason: "\(seen): cannot hold a group")
        }
        if choice == .anchors { return anchors }
        guard let interval = survey.keyframeInterval, interval <= maxKeyframeInterval else {
            // `sampled` asked for and impossible: the full plan, as documented (not another plan).
            return anchors.mode == .anchors && choice == .auto
                ? anchors : DecodePlan(mode: .full, burstFrames: 0, reason: "\(seen): cannot sample")
        }
        let cost = DecodePlanSettings.cost(info)
        if choice == .sampled {
            return DecodePlan(mode: .sampled, burstFrames: burst, reason: "sampling asked for")
        }
        let seconds = info.duration.isFinite ? min(max(info.duration, 0), 86_400) : 0
        let work = cost * seconds
        guard cost >= sampleFromCost || (work >= sampleFromWork && !survey.reorders) else {
            if anchors.mode == .anchors { return anchors }
            return DecodePlan(
                mode: .full, burstFrames: 0,
                reason: String(format: "cheap to decode (cost %.0f, work %.0f)", cost, work))
        }
        let why = cost >= sampleFromCost ? "costly to decode" : "long"
        return DecodePlan(
            mode: .sampled, burstFrames: burst,
            reason: why + String(format: " (cost %.0f, work %.0f), keyframes every %.2f s", cost, work, interval))
    }
}

/// What the first keyframe groups of an input look like (read from packets only, nothing decoded).
public struct GOPSurvey: Sendable, Codable, Equatable {
    /// Median seconds between the keyframes seen; nil when fewer than two were seen.
    public var keyframeInterval: Double?
    /// Frames are stored out of display order (B-frames).
    public var reorders = false
    /// Media seconds the survey covered.
    public var seconds = 0.0

    public init(keyframeInterval: Double? = nil, reorders: Bool = false, seconds: Double = 0) {
        self.keyframeInterval = keyframeInterval
        self.reorders = reorders
        self.seconds = seconds
    }
}

/// One keyframe group as the sampled pass saw it: its packets were read, a few were decoded.
public struct GOPRecord: Sendable, Equatable {
    public var index: Int
    /// Presentation time of its keyframe, in seconds.
    public var keyTime: Double
    /// Video packets in the group (the keyframe included).
    public var packets: Int
    /// The largest packet after the keyframe over the median of those packets (0 with fewer than
    /// 4): a frame the encoder had to code mostly anew, as at a cut, stands out in a group of
    /// predicted frames.
    public var largestPacketRatio: Double
    /// Every packet of the group was decoded (nothing to refine but what the samples show).
    public var complete: Bool
}
