/// Screens the sampled decode plan's samples (each keyframe and a short burst after it) for the
/// places a shot boundary may hide, so that only those are decoded again frame by frame, where
/// `ShotDetector` places each boundary on its exact frame.
///
/// Scores (computed as samples arrive, apart from any decision):
/// - across a gap (frames skipped between two samples): the `ShotDetector.distance` of the two;
/// - between consecutive frames of a burst: the same distance;
/// - per keyframe group: its largest packet over its median packet (a cut in a group of
///   predicted frames is coded mostly anew, so its packet stands out), and its length.
///
/// Decisions (`finish`), each flagging the span between two samples for refinement:
/// - a gap whose distance is at least `gapThreshold`, and either at least `gapCertain` or
///   `gapRatio` times the median distance across the `neighbours` gaps on each side (steady camera
///   motion changes every gap alike; a cut changes one);
/// - a burst step of at least `burstThreshold` (a cut or a flash inside the burst);
/// - black samples with pictures around them (fades), from the last picture before to the first after;
/// - a whole group when its packet ratio reaches `packetRatio`, when it lasts longer than
///   `maxGroupSeconds` (too few samples to judge), and the last group when its end was not sampled.
/// Each flagged span becomes a range from the keyframe of the group it starts in to
/// `contextFrames` frames past its end (the detector needs frames after a cut to tell it from a flash);
/// overlapping ranges are merged.
public final class BoundaryScreen {
    public struct Settings: Sendable, Codable, Equatable {
        public var gapThreshold: Float = 0.1
        public var gapCertain: Float = 0.3
        public var gapRatio: Float = 1.5
        public var neighbours = 2
        public var burstThreshold: Float = 0.15
        public var packetRatio = 6.0
        public var maxGroupSeconds = 3.0
        /// Frames past a flagged span that the detector sees (to tell a cut from a flash it
        /// needs `ShotDetector.Settings.burstFrames` after it).
        public var contextFrames = 4
        /// A refined range holding one keyframe group stops once this many frames in a row are
        /// steady (per-frame change below `ShotDetector`'s `gradualFrameThreshold`) and look like
        /// the next keyframe (distance below `gapThreshold`); at least `ShotDetector`'s
        /// `burstFrames` + 1, so a boundary before them is judged. 0 turns the early stop off.
        public var settleFrames = 4
        /// Luma below which (with little deviation) a sample is black, as `ShotDetector` counts it.
        public var blackLuma: Float = 30
        public var blackDeviation: Float = 10
        public init() {}
    }

    /// A step between two consecutive samples.
    struct Step {
        var from: Double
        var to: Double
        var distance: Float
        /// Frames were skipped between the two.
        var acrossGap: Bool
        var group: Int
    }

    public let settings: Settings
    private var steps: [Step] = []
    private var groups: [GOPInfo] = []
    private var previous = FrameFeatures()
    private var previousTime: Double?
    private var previousGroup = 0
    private var previousBlack = false
    /// Time of the last picture before the current run of black samples.
    private var beforeBlack: Double?
    private var blackSpans: [(Double, Double)] = []

    /// What the screen needs of a keyframe group.
    public struct GOPInfo: Sendable {
        public var keyTime: Double
        public var largestPacketRatio: Double
        public var complete: Bool
        public init(keyTime: Double, largestPacketRatio: Double, complete: Bool) {
            self.keyTime = keyTime
            self.largestPacketRatio = largestPacketRatio
            self.complete = complete
        }
    }

    public init(settings: Settings = Settings()) {
        self.settings = settings
        steps.reserveCapacity(1024)
    }

    /// A sample: its features, whether it directly follows the previous sample, and its group.
    public func consume(_ f: FrameFeatures, follows: Bool, group: Int) {
        let black = f.meanLuma < settings.blackLuma && f.lumaDeviation < settings.blackDeviation
        if let previousTime {
            let d = ShotDetector.distance(previous, f)
            steps.append(Step(from: previousTime, to: f.time, distance: d, acrossGap: !follows, group: previousGroup))
            if black && !previousBlack { beforeBlack = previousTime }
            if !black && previousBlack, let start = beforeBlack {
                blackSpans.append((start, f.time))
                beforeBlack = nil
            }
        }
        previous.assign(from: f)
        previousTime = f.time
        previousGroup = group
        previousBlack = black
    }

    /// A keyframe group, in order (index = number of groups added before).
    public func addGroup(_ info: GOPInfo) {
        groups.append(info)
    }

    /// The ranges to decode frame by frame, in time order, given where the video ends.
    public func finish(end: Double, frameRate: Double) -> [(start: Double, end: Double)] {
        let context = Double(max(0, settings.contextFrames)) / max(1, min(frameRate, 240)) + 1e-4
        var spans: [(Double, Double)] = blackSpans
        let gaps = steps.indices.filter { steps[$0].acrossGap }
        for (position, i) in gaps.enumerated() {
            let d = steps[i].distance
            guard d >= settings.gapThreshold else { continue }
            if d < settings.gapCertain {
                var around: [Float] = []
                let n = max(1, settings.neighbours)
                for p in max(0, position - n)...min(gaps.count - 1, position + n) where p != position {
                    around.append(steps[gaps[p]].distance)
                }
                around.sort()
                let typical = around.isEmpty ? 0 : around[around.count / 2]
                guard d >= settings.gapRatio * typical else { continue }
            }
            spans.append((steps[i].from, steps[i].to))
        }
        for s in steps where !s.acrossGap && s.distance >= settings.burstThreshold {
            spans.append((s.from, s.to))
        }
        for (g, info) in groups.enumerated() {
            let groupEnd = g + 1 < groups.count ? groups[g + 1].keyTime : end
            let isLast = g == groups.count - 1
            if info.largestPacketRatio >= settings.packetRatio || groupEnd - info.keyTime > settings.maxGroupSeconds
                || (isLast && !info.complete)
            {
                spans.append((info.keyTime, groupEnd))
            }
        }
        // Each span from the keyframe at or before its start, to `context` past its end.
        var ranges: [(start: Double, end: Double)] = []
        for (from, to) in spans.sorted(by: { $0.0 < $1.0 }) {
            let key = groups.last(where: { $0.keyTime <= from + 1e-6 })?.keyTime ?? groups.first?.keyTime ?? 0
            let stop = min(end, to + context)
            if let last = ranges.last, key <= last.end + 1e-6 {
                ranges[ranges.count - 1].end = max(last.end, stop)
            } else {
                ranges.append((key, max(stop, key)))
            }
        }
        return ranges
    }

    /// Keyframe groups seen.
    public var groupCount: Int { groups.count }
}
