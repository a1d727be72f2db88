import CFFmpeg
import FFmpeg

/// Copies a video's streams into another container without re-encoding (Matroska, MPEG-TS, ...):
/// how test media and fuzzing seeds in other containers are made from Synth's MP4s.
public enum Remuxer {
    /// Writes the video and audio streams of `source` to `output` in FFmpeg's muxer `container`
    /// (e.g. "matroska", "mpegts", "avi", "flv", "asf"), every timestamp moved `offset` seconds
    /// later (a broadcast or camcorder capture whose clock starts hours in).
    public static func remux(_ source: String, to output: String, container: String, offset: Double = 0)
        throws(MediaError)
    {
        let input = try Probe.open(source, cancellation: nil)
        let out = try FormatOutput(path: output, format: container, cancellation: nil)
        var map: [Int: UnsafeMutablePointer<AVStream>] = [:]
        for handle in input.streams where handle.type == AVMEDIA_TYPE_VIDEO || handle.type == AVMEDIA_TYPE_AUDIO {
            let stream = try out.addStream(copying: handle.parameters, path: output)
            stream.pointee.time_base = handle.timeBase
            map[handle.index] = stream
        }
        try out.writeHeader(options: [:])
        let packet = try Packet()
        while try input.read(into: packet) {
            defer { packet.unref() }
            guard let handle = input.stream(index: packet.streamIndex), let stream = map[handle.index] else { continue }
            packet.pointer.pointee.pos = -1
            if offset != 0 {
                let shift = MediaTime.timestamp(offset, handle.timeBase)
                if packet.pts != MediaTime.noPTS { packet.pointer.pointee.pts += shift }
                if packet.dts != MediaTime.noPTS { packet.pointer.pointee.dts += shift }
            }
            try out.write(packet, from: handle.timeBase, to: stream)
        }
        try out.finish()
    }
}
