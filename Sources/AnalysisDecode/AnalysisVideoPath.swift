import MediaEngine
import CFFmpeg
import FFmpeg
import Foundation

/// The video half of an analysis pass: a decoder, and a converter into one small picture that every
/// analysed frame is handed over in (HDR tone-mapped to SDR, as for the render). Shared by the full
/// pass, the sampled pass and the refinement of chosen ranges; allocates nothing per frame.
final class AnalysisVideoPath {
    let stream: StreamHandle
    let decoder: CodecContext
    let width: Int
    let height: Int
    let path: String
    let start: Double
    private let converter: VideoConverter
    private let picture: Frame
    private let decoded: Frame

    init(
        stream: StreamHandle, path: String, start: Double, width: Int, height: Int, options: AnalysisOptions,
        threads: Int
    ) throws(MediaError) {
        self.stream = stream
        self.path = path
        self.start = start
        self.width = width
        self.height = height
        decoder = try CodecContext.decoder(for: stream, path: path, threads: threads) { c in
            if options.skipNonReferenceFrames { c.pointee.skip_frame = AVDISCARD_NONREF }
            if options.skipBidirectionalFrames { c.pointee.skip_frame = AVDISCARD_BIDIR }
            if options.skipLoopFilter { c.pointee.skip_loop_filter = AVDISCARD_ALL }
            c.pointee.flags2 |= AV_CODEC_FLAG2_FAST
        }
        converter = try VideoConverter.analysis(width: width, height: height, stream: stream)
        picture = try Frame(width: width, height: height, format: AV_PIX_FMT_YUV420P)
        decoded = try Frame()
    }

    /// Decoder threads for `options`: 0 sizes them to the machine, 4 per core (at most 16), as
    /// frame threads otherwise idle on the dependencies between the frames that remain when
    /// others are skipped.
    static func threads(_ options: AnalysisOptions) -> Int {
        options.threads > 0 ? options.threads : min(16, 4 * ProcessInfo.processInfo.activeProcessorCount)
    }

    /// The packet's presentation (else decode) time in seconds from the container's start.
    func packetTime(_ packet: Packet) -> Double? {
        let ts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
        return ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, stream.timeBase) - start
    }

    /// How a wanted frame is handed over: whether it follows the previous one without a gap, and its group.
    struct Mark {
        var follows = true
        var group = 0
    }

    /// Sends `packet` (nil drains) and hands the time of every frame that comes out to `accept`,
    /// which marks the frames it wants; those are scaled and given to `deliver` as a picture.
    func decode(
        _ packet: Packet?, summary: inout AnalysisSummary, limiter: inout DecodeGuard,
        accept: (Double) -> Mark?, deliver: (borrowing AnalysisFrame) -> Void
    ) throws(MediaError) {
        let rc = decoder.send(packet)
        if FFmpegError.isDamage(rc) { summary.damagedPackets += 1; return }
        if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
            throw MediaError.ffmpeg(rc, "avcodec_send_packet (\(decoder.name))", path: path, context: decoder.logKey)
        }
        var failures = 0
        while true {
            let r = decoder.receive(decoded)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            if FFmpegError.isDamage(r) {
                summary.damagedPackets += 1
                failures += 1
                if failures > 16 { return }
                continue
            }
            try check(r, "avcodec_receive_frame (\(decoder.name))", path: path, context: decoder.logKey)
            defer { decoded.unref() }
            summary.framesDecoded += 1
            if decoded.isDamaged { summary.damagedPackets += 1 }
            let ts = decoded.bestEffortTimestamp
            let stamped = ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, stream.timeBase) - start
            try limiter.videoFrame(time: stamped, width: decoded.width, height: decoded.height)
            guard let time = stamped, let mark = accept(time) else { continue }
            try converter.convert(decoded, into: picture)
            deliver(
                AnalysisFrame(
                    picture: picture, index: summary.framesAnalysed, time: time, follows: mark.follows,
                    group: mark.group))
            if summary.firstFrameTime == nil { summary.firstFrameTime = time }
            summary.lastFrameTime = max(summary.lastFrameTime ?? time, time)
            summary.framesAnalysed += 1
        }
    }
}

extension AnalysisFrame {
    /// A view of a small yuv420p picture the pass owns.
    init(picture: Frame, index: Int, time: Double, follows: Bool, group: Int) {
        let width = picture.width, height = picture.height
        self.init(
            index: index, time: time, width: width, height: height, lumaStride: picture.linesize(0),
            luma: UnsafeBufferPointer(start: picture.data(0), count: picture.linesize(0) * height),
            chromaWidth: width / 2, chromaHeight: height / 2, chromaStride: picture.linesize(1),
            cb: UnsafeBufferPointer(start: picture.data(1), count: picture.linesize(1) * height / 2),
            cr: UnsafeBufferPointer(start: picture.data(2), count: picture.linesize(2) * height / 2),
            follows: follows, group: group)
    }
}
