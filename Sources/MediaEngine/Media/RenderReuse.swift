import CFFmpeg
import FFmpeg
import Foundation

/// An earlier render of the same footage (a re-upload's first highlight) whose encoded pictures a
/// new render copies where a segment shows exactly the same frames, instead of decoding and
/// encoding them again. Only renders with hard cuts (each segment starts on an IDR frame, which
/// `Renderer` writes) and the new render's own encoder settings qualify; anything else is encoded.
public struct RenderReuse: Sendable {
    /// The earlier render (an MP4 this service wrote).
    public var path: String
    /// The earlier render's segments in output order, in the new source's seconds (a segment may
    /// lie partly outside the new source: it is then not copied).
    public var segments: [TimeRange]

    public init(path: String, segments: [TimeRange]) {
        self.path = path
        self.segments = segments
    }
}

/// Which pictures of an earlier render a new edit can copy: the earlier render's own layout (its
/// segments' frame counts at the output rate, laid end to end) matched against the new plan's.
/// Where a new segment shows the same frames as part of an earlier segment, the earlier pictures
/// from a keyframe in that part (every segment starts on one, and the encoder puts one at least
/// every 2 s) to the last keyframe or segment end in it decode on their own and are copied; the
/// frames around them are encoded.
package struct ReusedSegments {
    package struct Piece: Equatable {
        /// The earlier render's output frame showing the piece's first frame.
        var earlierFirst: Int
        /// Frames copied.
        var frames: Int
        /// The segment's slot the piece starts at.
        var offset: Int
    }
    /// For each new segment, the longest piece of the earlier render it can copy.
    package let pieces: [Piece?]

    package init(plan: EditPlan, earlier: [TimeRange], render: EarlierRender) {
        let frameDuration = Double(plan.frameRate.den) / Double(plan.frameRate.num)
        var layout: [(start: Double, first: Int, frames: Int)] = []
        var first = 0
        for r in earlier {
            let frames = Int(r.duration / frameDuration + 0.5)
            layout.append((r.start, first, frames))
            first += frames
        }
        pieces = plan.segments.map { s in
            guard plan.crossfadeFrames == 0 else { return nil }
            var best: Piece?
            for e in layout {
                // Slot of the new segment showing the earlier segment's first frame (may be negative).
                let offset = Int(((e.start - s.range.start) / frameDuration).rounded())
                guard abs(e.start - (s.range.start + Double(offset) * frameDuration)) < frameDuration / 2 else {
                    continue
                }
                let lo = e.first + max(0, -offset), hi = e.first + min(e.frames, s.frames - offset)
                guard hi > lo, let piece = render.piece(from: lo, to: hi, segmentEnd: e.first + e.frames) else {
                    continue
                }
                if piece.count > best?.frames ?? 0 {
                    best = Piece(earlierFirst: piece.first, frames: piece.count, offset: offset + piece.first - e.first)
                }
            }
            return best
        }
    }

    package var isEmpty: Bool { pieces.allSatisfy { $0 == nil } }
}

/// The earlier render opened for copying: its video packets indexed (decode order, times in
/// output frames), and each copyable piece checked before anything is written.
package final class EarlierRender {
    package struct Entry {
        var pts: Int64
        var dts: Int64
        var key: Bool
    }

    package let input: FormatInput
    package let stream: StreamHandle
    package let start: Double
    package let frameRate: Rational
    private(set) var entries: [Entry] = []
    private let packet: Packet

    /// Opens `path` and indexes its video; nil when it cannot be copied from into a stream with
    /// this size, rate, rotation and these parameter sets (then everything is encoded).
    package init?(
        path: String, width: Int, height: Int, frameRate: Rational, rotation: Int, extradata: [UInt8],
        cancellation: CancellationToken?
    ) {
        guard let input = try? Probe.open(path, cancellation: cancellation), let size = try? Probe.fileSize(path),
            let info = try? Probe.describe(input, fileSize: size),
            let stream = try? Probe.videoStream(input), let packet = try? Packet()
        else { return nil }
        let par = stream.parameters.pointee
        let rate = stream.stream.pointee.avg_frame_rate
        guard par.codec_id == AV_CODEC_ID_H264, Int(par.width) == width, Int(par.height) == height,
            Int64(rate.num) * Int64(frameRate.den) == Int64(rate.den) * Int64(frameRate.num),
            info.video.rotation == rotation, let data = par.extradata, par.extradata_size >= 7,
            H264ParameterSets(Array(UnsafeBufferPointer(start: data, count: Int(par.extradata_size))))
                == H264ParameterSets(extradata),
            // 4-byte NAL lengths, which become start codes in place (see `copy`).
            data[0] == 1, data[4] & 3 == 3
        else { return nil }
        self.input = input
        self.stream = stream
        self.start = input.startSeconds
        self.frameRate = frameRate
        self.packet = packet
        do {
            try input.seek(stream: stream.index, to: MediaTime.timestamp(start, stream.timeBase))
            while try input.read(into: packet) {
                defer { packet.unref() }
                guard packet.streamIndex == stream.index else { continue }
                guard let pts = frame(packet.pts), let dts = frame(packet.dts) else { return nil }
                entries.append(Entry(pts: pts, dts: dts, key: packet.isKeyframe))
            }
        } catch {
            return nil
        }
    }

    /// A time in the stream's time base as an output frame index (nil when unset).
    private func frame(_ ts: Int64) -> Int64? {
        guard ts != MediaTime.noPTS else { return nil }
        let seconds = MediaTime.seconds(ts, stream.timeBase) - start
        return Int64((seconds * frameRate.value).rounded())
    }

    /// The longest run of frames within `lo..<hi` that decodes on its own: from the first keyframe
    /// at or after `lo` to the last keyframe at or before `hi` (or to `hi` when it is the earlier
    /// segment's end, where the next segment's IDR frame, or the end, follows).
    package func piece(from lo: Int, to hi: Int, segmentEnd: Int) -> (first: Int, count: Int)? {
        let keys = entries.lazy.filter { $0.key }.map { Int($0.pts) }
        guard let start = keys.filter({ $0 >= lo && $0 < hi }).min() else { return nil }
        let end = hi == segmentEnd ? hi : keys.filter { $0 > start && $0 <= hi }.max()
        guard let end, end > start, holds(first: start, count: end - start) else { return nil }
        return (start, end - start)
    }

    /// True when frames `first..<first+count` are exactly the pictures from a keyframe at `first`
    /// to the next keyframe at `first+count` or a later one (or the end): a piece that decodes alone.
    package func holds(first: Int, count: Int) -> Bool {
        guard let k = entries.firstIndex(where: { $0.pts == Int64(first) }), entries[k].key else { return false }
        let end = Int64(first + count)
        var n = 0
        for e in entries[k...] {
            if e.pts == end && e.key { break }
            guard e.pts >= Int64(first) && e.pts < end else { return false }
            n += 1
        }
        return n == count
    }

    /// The writer's stream carries Annex B pictures (start codes, as libx264 gives them; the MP4
    /// muxer turns them into length-prefixed units): an MP4's 4-byte lengths become start codes.
    package static func toAnnexB(_ packet: Packet, path: String) throws(MediaError) {
        try check(av_packet_make_writable(packet.pointer), "av_packet_make_writable", path: path)
        guard let data = packet.pointer.pointee.data else { return }
        let size = Int(packet.pointer.pointee.size)
        var i = 0
        while i + 4 <= size {
            let length = Int(data[i]) << 24 | Int(data[i + 1]) << 16 | Int(data[i + 2]) << 8 | Int(data[i + 3])
            guard length > 0, i + 4 + length <= size else {
                throw MediaError(
                    .invalidRange, operation: "copy render", path: path,
                    detail: "a picture of the earlier render is not length-prefixed")
            }
            data[i] = 0; data[i + 1] = 0; data[i + 2] = 0; data[i + 3] = 1
            i += 4 + length
        }
    }

    /// Copies the piece `first..<first+count` to `writer`, its frame `first` becoming `to`.
    package func copy(first: Int, count: Int, to outputFrame: Int, writer: MediaWriter, path: String) throws(MediaError) {
        try input.seek(
            stream: stream.index, to: MediaTime.timestamp(Double(first) / frameRate.value + start, stream.timeBase))
        let shift = Int64(outputFrame - first)
        var copied = 0
        var started = false
        while copied < count, try input.read(into: packet) {
            defer { packet.unref() }
            guard packet.streamIndex == stream.index, let pts = frame(packet.pts), let dts = frame(packet.dts) else {
                continue
            }
            if !started {
                guard pts == Int64(first), packet.isKeyframe else { continue }
                started = true
            }
            guard pts >= Int64(first) && pts < Int64(first + count) else {
                throw MediaError(
                    .invalidRange, operation: "copy render", path: path,
                    detail: "the earlier render's piece at frame \(first) holds a frame from elsewhere")
            }
            try EarlierRender.toAnnexB(packet, path: path)
            try writer.copyVideo(packet, pts: pts + shift, dts: dts + shift)
            copied += 1
        }
        guard copied == count else {
            throw MediaError(
                .invalidRange, operation: "copy render", path: path,
                detail: "the earlier render's piece at frame \(first) ended after \(copied) of \(count) frames")
        }
    }
}

/// The SPS and PPS NAL units of H.264 extradata, in either form: Annex B (start codes, what
/// libx264 gives) or `avcC` (length-prefixed, what an MP4 holds). Two streams whose sets are equal
/// decode each other's pictures.
package struct H264ParameterSets: Equatable {
    package var units: [[UInt8]]

    package init(_ data: [UInt8]) {
        units = data.first == 1 ? H264ParameterSets.avcC(data) : H264ParameterSets.annexB(data)
    }

    package static func annexB(_ d: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = []
        var i = 0, start: Int?
        while i + 2 < d.count {
            if d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 1 {
                if let s = start { units.append(trimmed(Array(d[s..<i]))) }
                i += 3
                start = i
            } else {
                i += 1
            }
        }
        if let s = start, s < d.count { units.append(Array(d[s...])) }
        return units.filter { !$0.isEmpty }
    }

    /// A unit ends where the next start code begins; a 4-byte start code leaves a zero behind.
    private static func trimmed(_ unit: [UInt8]) -> [UInt8] {
        var u = unit
        while u.last == 0 { u.removeLast() }
        return u
    }

    package static func avcC(_ d: [UInt8]) -> [[UInt8]] {
        guard d.count >= 7 else { return [] }
        var units: [[UInt8]] = []
        var i = 5
        for kind in 0..<2 {
            guard i < d.count else { return units }
            let count = kind == 0 ? Int(d[i] & 0x1f) : Int(d[i])
            i += 1
            for _ in 0..<count {
                guard i + 2 <= d.count else { return units }
                let length = Int(d[i]) << 8 | Int(d[i + 1])
                i += 2
                guard i + length <= d.count else { return units }
                units.append(Array(d[i..<(i + length)]))
                i += length
            }
        }
        return units
    }
}
