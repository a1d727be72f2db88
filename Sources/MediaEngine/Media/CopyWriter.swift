import CFFmpeg
import FFmpeg
import Foundation

/// Writes an MP4 whose video is the source's own coded pictures, copied, and whose sound is
/// encoded (AAC): the source stream's parameters, colour tags and side data (HDR mastering display
/// and content light levels, rotation) are carried over as they are; HEVC is tagged `hvc1`, as
/// Apple's players require; `moov` goes first. Writes to a hidden temporary file beside `path`
/// and renames it into place in `finish()`; dropped before that, it deletes the temporary file.
package final class CopyWriter {
    package let path: String
    private let temporaryPath: String
    private let output: FormatOutput
    private let videoStream: UnsafeMutablePointer<AVStream>
    private let sourceTimeBase: AVRational
    package let audio: AudioTrackEncoder?
    private var lastDTS = Int64.min
    private var finished = false
    private(set) var videoPackets = 0

    package init(path: String, copying source: StreamHandle, audio audioSettings: AudioEncoding?, cancellation: CancellationToken?)
        throws(MediaError)
    {
        self.path = path
        temporaryPath = PartialFile(path).temporaryPath
        output = try FormatOutput(path: temporaryPath, format: "mp4", cancellation: cancellation)
        videoStream = try output.addStream(copying: source.parameters, path: path)
        sourceTimeBase = source.timeBase
        videoStream.pointee.time_base = source.timeBase
        videoStream.pointee.avg_frame_rate = source.stream.pointee.avg_frame_rate
        if source.parameters.pointee.codec_id == AV_CODEC_ID_HEVC {
            videoStream.pointee.codecpar.pointee.codec_tag = CopyWriter.hvc1
        }
        try CopyWriter.copySideData(from: source.stream, to: videoStream, path: path)
        if let audioSettings {
            audio = try AudioTrackEncoder(audioSettings, output: output, path: path)
        } else {
            audio = nil
        }
        try output.writeHeader(options: ["movflags": "+faststart"])
    }

    deinit {
        if !finished { unlink(temporaryPath) }
    }

    package static let hvc1 =
        UInt32(UInt8(ascii: "h")) | UInt32(UInt8(ascii: "v")) << 8 | UInt32(UInt8(ascii: "c")) << 16
        | UInt32(UInt8(ascii: "1")) << 24

    /// The stream's side data (mastering display, content light level, display matrix, Dolby
    /// Vision configuration ...), byte for byte.
    private static func copySideData(
        from source: UnsafeMutablePointer<AVStream>, to target: UnsafeMutablePointer<AVStream>, path: String
    ) throws(MediaError) {
        guard let entries = source.pointee.side_data else { return }
        for i in 0..<Int(source.pointee.nb_side_data) {
            let entry = entries[i]
            guard let data = entry.data, entry.size > 0 else { continue }
            guard let copy = av_stream_new_side_data(target, entry.type, Int(entry.size)) else {
                throw MediaError(.ffmpeg, operation: "av_stream_new_side_data", path: path, detail: "out of memory")
            }
            copy.update(from: data, count: Int(entry.size))
        }
    }

    /// Appends a copied picture, its times already moved onto the output's timeline (the source
    /// stream's time base). Decode times must keep rising, or the copy is refused.
    package func writeVideo(_ packet: Packet, pts: Int64, dts: Int64) throws(MediaError) {
        guard dts > lastDTS else {
            throw MediaError(
                .unsupportedCodec, operation: "copy pictures", path: path,
                detail: "a copied picture's decode time \(dts) does not follow \(lastDTS)")
        }
        packet.pointer.pointee.pts = pts
        packet.pointer.pointee.dts = dts
        packet.pointer.pointee.pos = -1
        lastDTS = dts
        try output.write(packet, from: sourceTimeBase, to: videoStream)
        videoPackets += 1
    }

    /// Flushes the sound, writes the index at the front of the file and moves it into place.
    package func finish() throws(MediaError) {
        try audio?.finish()
        try output.finish()
        try PartialFile(path: path, temporaryPath: temporaryPath).moveIntoPlace()
        finished = true
    }
}
