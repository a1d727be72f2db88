import MediaEngine
import CFFmpeg
import FFmpeg
import Foundation

/// Writes a JPEG of one frame of a video, upright (the display rotation applied to the pixels,
/// as a JPEG has no display matrix), HDR tone-mapped to SDR as the render and the storyboard do.
public enum Poster {
    /// Encodes the frame on screen at `time` (seconds) of `video` to `output`, at most `maxSide`
    /// pixels on its longest side. Written to a temporary file and moved into place.
    /// The decode from the seek point is held to `limits` (frames, timestamps, picture size).
    public static func write(
        from video: String, at time: Double, to output: String, maxSide: Int = 1280,
        quality: Int = 3, limits: DecodeLimits = DecodeLimits()
    ) throws(MediaError) {
        let (chosen, rotation, transfer) = try decodeFrame(of: video, at: time, limits: limits)
        try encodeJPEG(
            chosen, rotation: rotation, hdrTransfer: transfer, maxSide: maxSide, quality: quality, to: output)
    }

    /// The frame on screen at `time` (the last one decoded at or before it, or the first after a
    /// seek that lands past it), the video's display rotation and its HDR transfer (nil for SDR).
    static func decodeFrame(
        of video: String, at time: Double, limits: DecodeLimits
    ) throws(MediaError) -> (frame: Frame, rotation: Int, hdrTransfer: ToneMapper.Transfer?) {
        // One open: the probe's packet scan is undone by the seek below.
        let size = try Probe.fileSize(video)
        let input = try Probe.open(video, size: size, cancellation: nil)
        let info = try Probe.describe(input, fileSize: size)
        let stream = try Probe.videoStream(input)
        let decoder = try CodecContext.decoder(for: stream, path: video)
        let start = input.startSeconds
        let target = min(max(0, time), max(0, info.duration - 0.001))
        try input.seek(stream: stream.index, to: MediaTime.timestamp(target + start, stream.timeBase))
        decoder.flushBuffers()

        let packet = try Packet(), frame = try Frame(), chosen = try Frame()
        var have = false, done = false
        var limiter = DecodeGuard(limits, path: video)
        func take() throws(MediaError) {
            while !done {
                let rc = decoder.receive(frame)
                if rc == FFmpegError.again || rc == FFmpegError.eof { return }
                if rc == FFmpegError.invalidData { continue }
                try check(rc, "avcodec_receive_frame", path: video, context: decoder.logKey)
                let ts = frame.bestEffortTimestamp
                do {
                    try limiter.videoFrame(
                        time: ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, stream.timeBase) - start,
                        width: frame.width, height: frame.height)
                } catch { frame.unref(); throw error }
                let t = ts == MediaTime.noPTS ? -Double.infinity : MediaTime.seconds(ts, stream.timeBase) - start
                if have && t > target + 0.001 { done = true; frame.unref(); return }
                chosen.unref()
                av_frame_move_ref(chosen.pointer, frame.pointer)
                have = true
            }
        }
        while !done {
            guard try input.read(into: packet) else { break }
            defer { packet.unref() }
            guard packet.streamIndex == stream.index else { continue }
            let pts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
            try limiter.videoPacket(
                time: pts == MediaTime.noPTS ? nil : MediaTime.seconds(pts, stream.timeBase) - start)
            _ = decoder.send(packet)
            try take()
        }
        if !done { _ = decoder.send(nil as Packet?); try take() }
        guard have else {
            throw MediaError(
                .notMedia, operation: "poster", path: video, detail: "no frame could be decoded at \(TimeRange.seconds(time)) s")
        }
        return (chosen, info.video.rotation, ToneMapper.Transfer(of: stream))
    }

    /// The frame scaled to at most `maxSide` (HDR tone-mapped to SDR BT.709 on the way), turned
    /// upright and written as a JPEG to `output`.
    static func encodeJPEG(
        _ chosen: Frame, rotation: Int, hdrTransfer: ToneMapper.Transfer?, maxSide: Int, quality: Int,
        to output: String
    ) throws(MediaError) {
        let scale = min(1, Double(maxSide) / Double(max(chosen.width, chosen.height)))
        let w = max(2, Int(Double(chosen.width) * scale / 2) * 2),
            h = max(2, Int(Double(chosen.height) * scale / 2) * 2)
        var source = chosen
        if let hdrTransfer {
            let sdr = try Frame(width: w, height: h, format: AV_PIX_FMT_YUV420P)
            try VideoConverter(width: w, height: h, hdrTransfer: hdrTransfer).convert(chosen, into: sdr)
            source = sdr
        }
        let scaled = try Frame(width: w, height: h, format: AV_PIX_FMT_YUVJ420P)
        try Scaler(width: w, height: h, format: AV_PIX_FMT_YUVJ420P).scale(source, into: scaled)
        let upright = rotation == 0 ? scaled : try rotate(scaled, by: rotation)

        let encoder = try CodecContext.encoder(named: "mjpeg") { c in
            c.pointee.width = upright.pointer.pointee.width
            c.pointee.height = upright.pointer.pointee.height
            c.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
            c.pointee.time_base = AVRational(num: 1, den: 25)
            c.pointee.flags |= AV_CODEC_FLAG_QSCALE
            c.pointee.global_quality = Int32(quality) * FF_QP2LAMBDA
            c.pointee.color_range = AVCOL_RANGE_JPEG
        }
        upright.pointer.pointee.pts = 0
        upright.pointer.pointee.quality = Int32(quality) * FF_QP2LAMBDA
        try check(encoder.send(upright), "avcodec_send_frame (mjpeg)", path: output, context: encoder.logKey)
        _ = encoder.send(nil as Frame?)
        let out = try Packet()
        try check(encoder.receive(out), "avcodec_receive_packet (mjpeg)", path: output, context: encoder.logKey)
        defer { out.unref() }
        guard let bytes = out.pointer.pointee.data else {
            throw MediaError(.ffmpeg, operation: "mjpeg", path: output, detail: "the JPEG encoder produced nothing")
        }
        let data = Data(bytes: bytes, count: Int(out.pointer.pointee.size))
        do {
            try data.write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw MediaError(
                .io, operation: "write poster", path: output,
                detail: "cannot write the poster: \(error.localizedDescription)")
        }
    }

    /// A copy of a planar YUV 4:2:0 picture rotated clockwise by 90, 180 or 270 degrees.
    static func rotate(_ source: Frame, by degrees: Int) throws(MediaError) -> Frame {
        let swap = degrees == 90 || degrees == 270
        let w = swap ? source.height : source.width, h = swap ? source.width : source.height
        let result = try Frame(width: w, height: h, format: source.pixelFormat)
        for plane in 0..<3 {
            guard let s = source.data(plane), let d = result.data(plane) else { continue }
            let sw = plane == 0 ? source.width : source.width / 2, sh = plane == 0 ? source.height : source.height / 2
            let ss = source.linesize(plane), ds = result.linesize(plane)
            for y in 0..<sh {
                for x in 0..<sw {
                    let (dx, dy): (Int, Int)
                    switch degrees {
                    case 90: (dx, dy) = (sh - 1 - y, x)
                    case 180: (dx, dy) = (sw - 1 - x, sh - 1 - y)
                    default: (dx, dy) = (y, sw - 1 - x)
                    }
                    d[dy * ds + dx] = s[y * ss + x]
                }
            }
        }
        return result
    }
}
