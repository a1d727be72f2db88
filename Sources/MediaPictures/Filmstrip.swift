import MediaEngine
import CFFmpeg
import FFmpeg

/// Decodes the thumbnails of a storyboard: one picture per cell of the filmstrip, upright, at one
/// fixed size, drawn straight into a `Canvas`.
///
/// One input open, one decoder, one packet and two decoded frames for the whole strip, and one set
/// of scaled pictures (RGB24; HDR tone-mapped to SDR on the way, as renders are). Each thumbnail is
/// a frame inside its cell: the reader seeks to the keyframe before the cell's centre (or, when
/// that keyframe is not ahead of where it already is, keeps reading forward), decodes only
/// reference frames (AVDISCARD_NONREF) until shortly before the cell, and takes the first frame at
/// or after the cell's start: a single frame when the keyframe falls inside the cell, at most one
/// keyframe group otherwise, and never more than one pass over the file in all. Every packet and
/// frame is held to `DecodeLimits` (a fresh `DecodeGuard` per seek, as a seek is a legitimate jump
/// in time) and the whole strip to one pass's frame and packet budget.
final class FilmstripReader {
    let path: String
    /// What the probe learned (display size and rotation among it).
    let info: MediaInfo
    private let input: FormatInput
    private let stream: StreamHandle
    private let decoder: CodecContext
    private let packet: Packet
    private let frame: Frame
    /// The latest frame before the wanted time: shown when the file ends before a cell begins.
    private let fallback: Frame
    private let limits: DecodeLimits
    private let cancellation: CancellationToken?
    private var limiter: DecodeGuard
    /// Frames and packets the whole strip may still decode and read (one pass's worth each).
    private var framesLeft: Int
    private var packetsLeft: Int
    /// Source time of the last video packet read, while reading forward from it is possible.
    private var position: Double?
    /// The decoder has been drained at the end of the file (a seek must come before more reading).
    private var drained = false
    /// HDR video (PQ or HLG): thumbnails are tone-mapped to SDR first, as renders are.
    private let hdrTransfer: ToneMapper.Transfer?
    /// The picture stages at the thumbnail size, made for the first thumbnail and reused.
    private var stages: (scaler: Scaler, picture: Frame, hdr: (converter: VideoConverter, sdr: Frame)?)?

    /// Packets this far (seconds) before a cell's start are decoded in full again, so that
    /// B-frames just before the cell are not skipped.
    static let preRollMargin = 0.5
    /// Without an index to tell where keyframes are, read forward instead of seeking when the
    /// next cell starts at most this far (seconds) ahead.
    static let forwardWithoutIndex = 1.0

    /// Opens `path` (the same checks as every reader: Probe.open) and its video decoder.
    init(path: String, limits: DecodeLimits, cancellation: CancellationToken?) throws(MediaError) {
        self.path = path
        self.limits = limits
        self.cancellation = cancellation
        let size = try Probe.fileSize(path)
        input = try Probe.open(path, size: size, cancellation: cancellation)
        info = try Probe.describe(input, fileSize: size)
        stream = try Probe.videoStream(input)
        // One thread: the strip is drawn beside the render, which keeps every core busy, and each
        // frame thread would hold pictures of its own (25 MB apiece at 4K 10-bit).
        decoder = try CodecContext.decoder(for: stream, path: path, threads: 1) { c in
            c.pointee.flags2 |= AV_CODEC_FLAG2_FAST
        }
        packet = try Packet()
        frame = try Frame()
        fallback = try Frame()
        hdrTransfer = ToneMapper.Transfer(of: stream)
        limiter = DecodeGuard(limits, path: path)
        framesLeft = limits.totalFrames
        packetsLeft = limits.totalFrames
    }

    /// Clockwise degrees the stored pictures are turned for display.
    var rotation: Int { info.video.rotation }

    /// Decodes the picture for the cell that starts at `start` (seconds from the container's
    /// start) and centres on `target`, scales it to `width` x `height` (display orientation) and
    /// draws it upright at (x, y) of `canvas`. False when the file holds no frame for it.
    func draw(
        start: Double, target: Double, width: Int, height: Int,
        into canvas: inout Canvas, x: Int, y: Int
    ) throws(MediaError) -> Bool {
        try cancellation?.check("storyboard thumbnail", path: path)
        guard let chosen = try decode(start: start, target: target) else { return false }
        defer { chosen.unref(); fallback.unref() }
        let turned = rotation == 90 || rotation == 270
        let w = turned ? height : width, h = turned ? width : height
        let stage = try self.stages(width: w, height: h)
        guard let pixels = stage.picture.data(0) else { return false }
        if let hdr = stage.hdr {
            try hdr.converter.convert(chosen, into: hdr.sdr)
            try stage.scaler.scale(hdr.sdr, into: stage.picture)
        } else {
            try stage.scaler.scale(chosen, into: stage.picture)
        }
        canvas.draw(
            rgb: pixels, sourceWidth: w, sourceHeight: h, stride: stage.picture.linesize(0), at: x, y,
            rotation: rotation)
        return true
    }

    /// The scaler to RGB24 and its output at `width` x `height` (stored orientation), and for HDR
    /// the tone mapper's SDR picture in between; made once (every thumbnail has the same size).
    private func stages(width w: Int, height h: Int) throws(MediaError) -> (
        scaler: Scaler, picture: Frame, hdr: (converter: VideoConverter, sdr: Frame)?
    ) {
        if let stages, stages.picture.width == w, stages.picture.height == h { return stages }
        var hdr: (converter: VideoConverter, sdr: Frame)? = nil
        if let hdrTransfer {
            let sdr = try Frame(width: w, height: h, format: AV_PIX_FMT_YUV420P)
            hdr = (try VideoConverter(width: w, height: h, hdrTransfer: hdrTransfer), sdr)
        }
        let made = (
            scaler: Scaler(width: w, height: h, format: AV_PIX_FMT_RGB24, flags: SWS_AREA),
            picture: try Frame(width: w, height: h, format: AV_PIX_FMT_RGB24), hdr: hdr
        )
        stages = made
        return made
    }

    /// The frame to show for a cell (`frame`, or `fallback` at the end of the file), or nil.
    private func decode(start: Double, target: Double) throws(MediaError) -> Frame? {
        let origin = input.startSeconds
        if !continuesForward(to: start, target: target) {
            do {
                try input.seek(stream: stream.index, to: MediaTime.timestamp(max(0, target) + origin, stream.timeBase))
                decoder.flushBuffers()
                limiter = DecodeGuard(limits, path: path)
                drained = false
                position = nil
            } catch {
                // A file that cannot seek is read forward, as far as the budget allows; a cell
                // already behind the reading position (or past the end) is then left empty.
                if error.kind == .cancelled { throw error }
                if drained || (position ?? -.infinity) >= start { return nil }
            }
        }
        fallback.unref()
        var haveFallback = false
        decoder.pointer.pointee.skip_frame = AVDISCARD_NONREF
        defer { decoder.pointer.pointee.skip_frame = AVDISCARD_DEFAULT }

        while true {
            // Frames already waiting in the decoder first (a previous cell may have left some).
            while true {
                let rc = decoder.receive(frame)
                if rc == FFmpegError.again || rc == FFmpegError.eof { break }
                if rc == FFmpegError.invalidData { continue }
                try check(rc, "avcodec_receive_frame", path: path, context: decoder.logKey)
                try spend(&framesLeft, "frames")
                let ts = frame.bestEffortTimestamp
                let time: Double? = ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, stream.timeBase) - origin
                do { try limiter.videoFrame(time: time, width: frame.width, height: frame.height) } catch {
                    frame.unref(); throw error
                }
                guard let time, time < start - 0.0005 else { return frame }
                fallback.unref()
                av_frame_move_ref(fallback.pointer, frame.pointer)
                haveFallback = true
            }
            if drained { return haveFallback ? fallback : nil }

            try cancellation?.check("storyboard thumbnail", path: path)
            guard try input.read(into: packet) else {
                _ = decoder.send(nil as Packet?)
                drained = true
                position = nil
                continue
            }
            defer { packet.unref() }
            guard packet.streamIndex == stream.index else { continue }
            let pts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
            let time: Double? = pts == MediaTime.noPTS ? nil : MediaTime.seconds(pts, stream.timeBase) - origin
            try spend(&packetsLeft, "packets")
            try limiter.videoPacket(time: time)
            if let time { position = max(position ?? time, time) }
            if decoder.pointer.pointee.skip_frame != AVDISCARD_DEFAULT, (time ?? start) >= start - Self.preRollMargin {
                decoder.pointer.pointee.skip_frame = AVDISCARD_DEFAULT
            }
            let rc = decoder.send(packet)
            if rc == FFmpegError.outOfMemory {
                try check(rc, "avcodec_send_packet", path: path, context: decoder.logKey)
            }
        }
    }

    /// True when reading on from the current position reaches the cell no later than a seek would:
    /// the cell is still ahead, and the keyframe a seek would land on is not past where we are.
    private func continuesForward(to start: Double, target: Double) -> Bool {
        guard let position, !drained, position < start else { return false }
        let ts = MediaTime.timestamp(max(0, target) + input.startSeconds, stream.timeBase)
        guard let entry = avformat_index_get_entry_from_timestamp(stream.stream, ts, AVSEEK_FLAG_BACKWARD) else {
            return start - position <= Self.forwardWithoutIndex
        }
        let keyframe = MediaTime.seconds(entry.pointee.timestamp, stream.timeBase) - input.startSeconds
        return keyframe <= position + 0.0005
    }

    /// Counts one decoded frame or read packet against the whole strip's budget.
    private func spend(_ budget: inout Int, _ what: String) throws(MediaError) {
        budget -= 1
        if budget < 0 {
            throw MediaError(
                .tooManyFrames, operation: "storyboard \(what)", path: path,
                detail: "the storyboard would decode more than \(limits.totalFrames) frames, more than is accepted")
        }
    }
}
