import FFmpeg

/// Which of the source's coded pictures a copied segment takes: from a keyframe, in decode order,
/// up to a point where every picture shown before the segment's end has been taken and nothing
/// taken needs a later picture. Without B-frames that is any frame; with B-frames, the end of a
/// group of pictures that refer only to each other.
public struct CopyRun: Sendable, Equatable {
    /// Index of the keyframe in the packet table (decode order).
    public var first: Int
    /// Packets from `first` on, in decode order, that the run spans.
    public var count: Int
    /// Shown from the keyframe's presentation time until `end` (the stream's time base, from the
    /// container's start).
    public var start: Int64
    public var end: Int64
}

public enum CopyPlan {
    /// The run for each range. Starts must lie on keyframes (the selection snaps them): a start
    /// further than half a frame after the keyframe before it is refused. Each run ends at the last
    /// clean cut at or before the range's end (half a frame's slack), or at the first clean cut
    /// after its keyframe when none is.
    public static func runs(_ table: PacketTable, ranges: [TimeRange], path: String) throws(MediaError) -> [CopyRun] {
        let frame = table.frameTicks
        let keyframes = table.entries.indices.filter { table.entries[$0].keyframe }
        var runs: [CopyRun] = []
        for (n, range) in ranges.enumerated() {
            let start = table.ticks(range.start), end = table.ticks(range.end)
            // The keyframe at (or within half a frame of) the start.
            guard let key = keyframes.last(where: { table.entries[$0].pts <= start + frame / 2 }),
                start - table.entries[key].pts <= frame / 2
            else {
                throw MediaError(
                    .invalidRange, operation: "plan copy", path: path,
                    detail: "segment \(n + 1) (\(range) s) does not start on a keyframe")
            }
            runs.append(run(table, from: key, until: end, frame: frame))
        }
        return runs
    }

    /// The run from keyframe `key` to the last clean cut at or before `end`.
    package static func run(_ table: PacketTable, from key: Int, until end: Int64, frame: Int64) -> CopyRun {
        let entries = table.entries
        let keyTime = entries[key].pts
        // The packets that may matter: until one is decoded a second past the end (pictures are
        // never shown that long after they are decoded).
        var last = key
        while last + 1 < entries.count, entries[last + 1].dts <= end + 2 * frame + table.ticks(1) { last += 1 }
        // Earliest presentation time of what follows each packet (pictures before the keyframe,
        // leading pictures that belong to the group before, are never shown and do not count).
        var after = [Int64](repeating: .max, count: last - key + 2)
        if last + 1 < entries.count { after[last - key + 1] = entries[last + 1].pts }
        var i = last
        while i >= key {
            let pts = entries[i].pts
            after[i - key] = min(after[i - key + 1], pts >= keyTime ? pts : .max)
            i -= 1
        }
        var shown = keyTime
        var best: (count: Int, end: Int64)?
        var firstClean: (count: Int, end: Int64)?
        for j in key...last {
            let e = entries[j]
            if e.pts >= keyTime { shown = max(shown, e.pts) }
            let next = after[j - key + 1]
            // Clean: nothing after this packet is shown before what has been taken.
            guard next > shown else { continue }
            // The last picture is shown until the next one would be (or for one frame at the end).
            let until = next == .max || next - shown > 2 * frame ? shown + max(1, e.duration > 0 ? e.duration : frame) : next
            let cut = (count: j - key + 1, end: until)
            if firstClean == nil { firstClean = cut }
            if until <= end + frame / 2 { best = cut } else { break }
        }
        let chosen = best ?? firstClean ?? (count: 1, end: keyTime + frame)
        return CopyRun(first: key, count: chosen.count, start: keyTime, end: chosen.end)
    }
}
