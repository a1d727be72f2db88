import CFFmpeg
import FFmpeg

/// The video stream's packets as the demuxer gives them, in decode order: times and keyframe flags
/// only (no data is kept). Read once, by demuxing the video stream (nothing is decoded), for a
/// highlight that copies the source's coded pictures: the selection snaps starts to its keyframes
/// and the copy plan finds where each segment can end (`CopyPlan`).
///
/// 10 minutes of 60 fps video is 36,000 entries, about 1 MB.
public struct PacketTable: Sendable {
    public struct Entry: Sendable, Equatable {
        /// Presentation and decode time, in the stream's time base, from the container's start.
        public var pts: Int64
        public var dts: Int64
        public var duration: Int64
        public var keyframe: Bool
    }

    /// In decode order; packets without a presentation time are left out.
    public let entries: [Entry]
    public let timeBase: Rational
    /// The container's start in the stream's time base (entries count from it).
    public let start: Int64
    /// True when pictures are shown in another order than they are decoded (B-frames).
    public let reorders: Bool

    package init(entries: [Entry], timeBase: Rational, start: Int64) {
        self.entries = entries
        self.timeBase = timeBase
        self.start = start
        var highest = Int64.min
        var reorders = false
        for e in entries {
            if e.pts < highest { reorders = true; break }
            highest = e.pts
        }
        self.reorders = reorders
    }

    /// Seconds from the container's start of a time in the stream's time base.
    public func seconds(_ ticks: Int64) -> Double { Double(ticks) * timeBase.value }
    /// The stream time (from the container's start) nearest to `seconds`.
    public func ticks(_ seconds: Double) -> Int64 { MediaTime.timestamp(seconds, timeBase.av) }

    /// Keyframe times in seconds from the container's start, rising.
    public var keyframeTimes: [Double] {
        entries.filter(\.keyframe).map { seconds($0.pts) }.sorted()
    }

    /// The time of the last keyframe at or before `seconds` (half a frame's slack), if any.
    public func keyframe(atOrBefore seconds: Double) -> Double? {
        let limit = ticks(seconds) + frameTicks / 2
        return entries.filter { $0.keyframe && $0.pts <= limit }.map(\.pts).max().map(self.seconds)
    }

    /// The typical time between frames, in the stream's time base (the median of the packets'
    /// durations, or of the steps between presentation times when durations are missing).
    public var frameTicks: Int64 {
        var steps = entries.prefix(600).map(\.duration).filter { $0 > 0 }
        if steps.count < 2 {
            let times = entries.prefix(600).map(\.pts).sorted()
            steps = zip(times.dropFirst(), times).map { $0 - $1 }.filter { $0 > 0 }
        }
        guard !steps.isEmpty else { return max(1, ticks(1.0 / 30)) }
        return steps.sorted()[steps.count / 2]
    }

    /// Demuxes the video stream of `path` (the other streams are discarded by the demuxer), held to
    /// `limits` on the packets read.
    public static func read(_ path: String, limits: DecodeLimits, cancellation: CancellationToken?)
        throws(MediaError) -> PacketTable
    {
        let input = try Probe.open(path, cancellation: cancellation)
        let video = try Probe.videoStream(input)
        for handle in input.streams where handle.index != video.index { handle.stream.pointee.discard = AVDISCARD_ALL }
        let start = MediaTime.timestamp(input.startSeconds, video.timeBase)
        var guardrail = DecodeGuard(limits, path: path)
        var entries: [Entry] = []
        let packet = try Packet()
        while try input.read(into: packet) {
            defer { packet.unref() }
            try cancellation?.check("read the video's packets", path: path)
            guard packet.streamIndex == video.index else { continue }
            let pts = packet.pts, dts = packet.dts == MediaTime.noPTS ? packet.pts : packet.dts
            try guardrail.videoPacket(time: pts == MediaTime.noPTS ? nil : MediaTime.seconds(pts &- start, video.timeBase))
            guard pts != MediaTime.noPTS, dts != MediaTime.noPTS else { continue }
            entries.append(
                Entry(
                    pts: pts &- start, dts: dts &- start, duration: max(0, packet.pointer.pointee.duration),
                    keyframe: packet.isKeyframe))
        }
        return PacketTable(entries: entries, timeBase: Rational(video.timeBase), start: start)
    }
}
