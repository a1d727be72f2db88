import MediaEngine
import CFFmpeg
import FFmpeg

/// Encodes RGB24 pictures as PNG with libavcodec's PNG encoder (AV_CODEC_ID_PNG). The codec
/// context, the input frame and the output packet each have one owner (`CodecContext`, `Frame`,
/// `Packet`) that frees it; nothing here is freed by hand.
enum PNGEncoder {
    /// Largest picture side accepted (the storyboard stays far below it).
    static let maxSide = 8192

    /// The PNG file of an RGB24 picture `width` x `height` whose rows lie packed in `rgb`
    /// (`width * 3` bytes each).
    static func encode(rgb: [UInt8], width: Int, height: Int) throws(MediaError) -> [UInt8] {
        guard width > 0, height > 0, width <= maxSide, height <= maxSide, rgb.count == width * height * 3 else {
            throw MediaError(
                .ffmpeg, operation: "png encode",
                detail: "cannot encode a \(width)x\(height) picture from \(rgb.count) bytes")
        }
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_PNG) else {
            throw MediaError(
                .unsupportedCodec, operation: "avcodec_find_encoder (png)",
                detail: "this FFmpeg build has no PNG encoder")
        }
        let encoder = try CodecContext.encoder(named: String(cString: codec.pointee.name), options: ["pred": "paeth"]) {
            c in
            c.pointee.width = Int32(width)
            c.pointee.height = Int32(height)
            c.pointee.pix_fmt = AV_PIX_FMT_RGB24
            c.pointee.time_base = AVRational(num: 1, den: 1)
        }

        let frame = try Frame(width: width, height: height, format: AV_PIX_FMT_RGB24)
        guard let plane = frame.data(0) else {
            throw MediaError(.ffmpeg, operation: "png encode", detail: "the picture buffer has no data")
        }
        let stride = frame.linesize(0), row = width * 3
        rgb.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress else { return }
            for y in 0..<height { (plane + y * stride).update(from: base + y * row, count: row) }
        }
        frame.pointer.pointee.pts = 0

        try check(encoder.send(frame), "avcodec_send_frame (png)", context: encoder.logKey)
        try check(encoder.send(nil as Frame?), "avcodec_send_frame (png flush)", context: encoder.logKey)
        let packet = try Packet()
        try check(encoder.receive(packet), "avcodec_receive_packet (png)", context: encoder.logKey)
        defer { packet.unref() }
        let size = Int(packet.pointer.pointee.size)
        guard let data = packet.pointer.pointee.data, size > 0 else {
            throw MediaError(.ffmpeg, operation: "png encode", detail: "the PNG encoder produced nothing")
        }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }
}
