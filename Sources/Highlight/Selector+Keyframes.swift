import Analysis
import Foundation

/// How far the selection may move a start to reach a keyframe, and what it prefers there.
public struct KeyframeSnapSettings: Sendable, Codable, Equatable {
    /// Longest move of a start to a keyframe (seconds). A highlight some of whose starts would
    /// move further (long keyframe groups: screen recordings, some cameras) is encoded instead.
    /// Phone video has a keyframe every second or two: a start moves by half a second at most.
    public var maxStartShift = 1.0
    /// A quiet keyframe (in a pause of the speech or sound) is taken over a nearer loud one when
    /// it is within this many seconds of the start; beyond, the nearest keyframe is taken. With
    /// keyframes every second (phones) no start then moves more than half a second.
    public var quietReach = 0.5

    public init() {}
}

extension Selector {
    /// The chosen segments with each start moved onto a keyframe, so the source's coded pictures
    /// can be copied: a keyframe within `maxStartShift` that keeps the segment in its own shot
    /// (one that would start it in the shot before is taken only when no other is in reach), the
    /// nearest of them, or a quiet one within `quietReach`; never before the previous segment's end
    /// nor so late that the segment gets shorter than `minSegment / 2`. Each end moves as far as its start did,
    /// so the highlight keeps its length, unless that would cross a shot boundary, the next
    /// segment or the video's end (the copy then ends on the clean cut at or before it). The error
    /// says which start could not move and how far it would have to.
    public static func snapToKeyframes(
        _ segments: [Segment], keyframes: [Double], analysis: VideoAnalysis, settings: KeyframeSnapSettings,
        selection: SelectionSettings
    ) -> Result<[Segment], KeyframeSnapRefusal> {
        var out: [Segment] = []
        var previousEnd = -Double.infinity
        let cuts = analysis.boundaries.map(\.time)
        let ordered = segments.sorted(by: { $0.start < $1.start })
        for (index, segment) in ordered.enumerated() {
            let latest = segment.end - selection.minSegment / 2
            let reachable = keyframes.filter {
                abs($0 - segment.start) <= settings.maxStartShift + 1e-6 && $0 >= previousEnd - 1e-6 && $0 <= latest
            }
            let ownShot = reachable.filter { k in !cuts.contains { $0 > k + 1e-6 && $0 <= segment.start + 1e-6 } }
            let pool = ownShot.isEmpty ? reachable : ownShot
            let nearest = pool.map { abs($0 - segment.start) }.min() ?? 0
            let near = pool.filter { abs($0 - segment.start) <= max(nearest, settings.quietReach) + 1e-9 }
            let quiet = near.filter { isQuiet(analysis.audio, at: $0, selection: selection) }
            let chosen =
                quiet.min { abs($0 - segment.start) < abs($1 - segment.start) }
                ?? near.min { abs($0 - segment.start) < abs($1 - segment.start) }
            guard let chosen else {
                let nearest = keyframes.min { abs($0 - segment.start) < abs($1 - segment.start) }
                return .failure(
                    KeyframeSnapRefusal(
                        start: segment.start, nearestKeyframe: nearest, maxStartShift: settings.maxStartShift))
            }
            var snapped = segment
            snapped.start = chosen
            let moved = segment.end + (chosen - segment.start)
            let limit = min(index + 1 < ordered.count ? ordered[index + 1].start : analysis.duration, analysis.duration)
            let crosses = cuts.contains { $0 > min(segment.end, moved) + 1e-6 && $0 < max(segment.end, moved) - 1e-6 }
            if !crosses, moved <= limit, moved - chosen >= selection.minSegment / 2 { snapped.end = moved }
            out.append(snapped)
            previousEnd = snapped.end
        }
        return .success(out)
    }

    /// Whether the sound at `time` is in a pause: quieter by `pauseDepth` than the median of the
    /// second around it (a silent source counts as quiet).
    static func isQuiet(_ audio: AudioAnalyzer.Result, at time: Double, selection: SelectionSettings) -> Bool {
        let loud = audio.fineLoudness, tick = audio.fineTick
        guard tick > 0, !loud.isEmpty else { return true }
        let i = Int(time / tick)
        guard i >= 0, i < loud.count else { return true }
        let around = max(0, i - Int(0.5 / tick))..<min(loud.count, i + Int(0.5 / tick) + 1)
        guard around.count > 4 else { return true }
        let median = loud[around].sorted()[around.count / 2]
        return loud[i] <= median - selection.pauseDepth
    }
}

/// A start that no keyframe within reach could take.
public struct KeyframeSnapRefusal: Error, Sendable, Equatable {
    public var start: Double
    public var nearestKeyframe: Double?
    public var maxStartShift: Double

    /// For the job detail: why the highlight was encoded.
    public var reason: String {
        let near = nearestKeyframe.map { String(format: "the nearest keyframe is %.2f s away", abs($0 - start)) }
            ?? "the video has no keyframe there"
        return String(
            format: "a moment starts at %.2f s and %@ (more than %.2f s): the video's keyframes are too far apart to copy",
            start, near, maxStartShift)
    }
}
