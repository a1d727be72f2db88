import CFFmpeg
import Foundation

/// How the analysis pass decodes. Defaults favour speed: analysers look at small pictures.
public struct AnalysisOptions: Sendable {
    /// Longest side of the analysis pictures (never upscaled).
    public var maxSide = 256
    /// Skip frames no other frame references (AVDISCARD_NONREF): about half the frames of a
    /// typical B-frame stream are not decoded at all. Timestamps of the rest stay exact. The fast
    /// mode; off by default because shot detection is more accurate on every frame.
    public var skipNonReferenceFrames = false
    /// Skip all B-frames (AVDISCARD_BIDIR).
    public var skipBidirectionalFrames = false
    /// Analyse at most this many frames per second (frames in between are decoded, as later
    /// frames need them, but not scaled or handed to the analysers). nil: every frame.
    public var maxFrameRate: Double? = nil
    /// Skip the H.264/HEVC deblocking filter: invisible at analysis size, a quarter of decode time.
    public var skipLoopFilter = true
    /// Decode the audio too (mono float PCM at `audioSampleRate`).
    public var decodeAudio = true
    public var audioSampleRate = 16_000
    /// Decoder threads; 0 sizes them to the machine: 4 per core (at most 16), as frame threads
    /// otherwise idle on the dependencies between the frames that remain when others are skipped.
    public var threads = 0
    /// Accept a single still picture (e.g. to look at a poster JPEG).
    public var allowStillImage = false
    /// Bounds on the decoded media (duration, frames, timestamps, picture size), whatever the
    /// header claims; exceeding one throws `.tooLong`, `.tooManyFrames`, `.badTimestamps` or
    /// `.dimensionsTooLarge`.
    public var limits = DecodeLimits()

    public init() {}
}

/// One analysis picture, planar 8-bit YUV 4:2:0. The buffers belong to the decoder and are reused:
/// valid only inside the callback that receives them.
public struct AnalysisFrame: ~Copyable {
    /// 0-based index among the analysed frames.
    public let index: Int
    /// Presentation time in seconds from the container's start.
    public let time: Double
    public let width: Int
    public let height: Int
    public let lumaStride: Int
    /// `lumaStride * height` bytes; row y starts at `y * lumaStride`.
    public let luma: UnsafeBufferPointer<UInt8>
    public let chromaWidth: Int
    public let chromaHeight: Int
    public let chromaStride: Int
    public let cb: UnsafeBufferPointer<UInt8>
    public let cr: UnsafeBufferPointer<UInt8>
}

/// A run of mono audio samples; `time` is the first sample's time in seconds. Valid only inside the callback.
public struct AudioChunk: ~Copyable {
    public let time: Double
    public let sampleRate: Int
    public let samples: UnsafeBufferPointer<Float>
}

/// What a pass saw.
public struct AnalysisSummary: Sendable, Codable, Equatable {
    public var framesDecoded = 0
    public var framesAnalysed = 0
    /// Packets the decoder rejected plus frames it had to conceal: damage skipped over.
    public var damagedPackets = 0
    public var audioSamples = 0
    public var firstFrameTime: Double?
    public var lastFrameTime: Double?
    /// The demuxer failed before the end (a truncated file): what was read is still analysed.
    public var endedEarly = false
    public var width = 0
    public var height = 0
}

/// One pass over a file: in order, each analysed frame's exact time and a small picture, and the
/// audio as mono Float PCM in timed chunks.
public final class AnalysisDecoder {
    public let info: MediaInfo
    public let options: AnalysisOptions
    public let width: Int
    public let height: Int
    private let path: String
    /// Bytes in memory instead of the file at `path`.
    private let bytes: [UInt8]?
    private let cancellation: CancellationToken?

    public init(path: String, options: AnalysisOptions = AnalysisOptions(), cancellation: CancellationToken? = nil) throws(MediaError) {
        self.path = path
        self.bytes = nil
        self.options = options
        self.cancellation = cancellation
        info = try Probe.probe(path, allowStillImage: options.allowStillImage)
        (width, height) = AnalysisDecoder.pictureSize(info, options: options)
    }

    /// A pass over bytes in memory (`name` stands for the file in messages): the probe fuzzer's decode.
    public init(bytes: [UInt8], name: String = "memory", options: AnalysisOptions = AnalysisOptions(),
                cancellation: CancellationToken? = nil) throws(MediaError) {
        self.path = name
        self.bytes = bytes
        self.options = options
        self.cancellation = cancellation
        info = try Probe.probe(bytes: bytes, name: name, allowStillImage: options.allowStillImage)
        (width, height) = AnalysisDecoder.pictureSize(info, options: options)
    }

    private static func pictureSize(_ info: MediaInfo, options: AnalysisOptions) -> (Int, Int) {
        let v = info.video
        let sar = v.sampleAspectRatio.value > 0 ? v.sampleAspectRatio.value : 1
        let w = Double(v.codedWidth) * sar, h = Double(v.codedHeight)
        let scale = min(1, Double(max(2, options.maxSide)) / max(w, h))
        let width = max(2, Int((w * scale / 2).rounded()) * 2)
        let height = max(2, Int((h * scale / 2).rounded()) * 2)
        return (min(width, MediaLimits.maxSide), min(height, MediaLimits.maxSide))
    }

    /// Runs the pass. `onFrame` and `onAudio` are called on the calling thread, in time order per
    /// kind. Throws `.cancelled` within a packet's time of `cancellation.cancel()`.
    @discardableResult
    public func run(onFrame: (borrowing AnalysisFrame) -> Void,
                    onAudio: (borrowing AudioChunk) -> Void = { _ in }) throws(MediaError) -> AnalysisSummary {
        let input: FormatInput
        if let bytes {
            input = try Probe.open(InputSource(bytes: bytes, name: path), cancellation: cancellation, allowStillImage: options.allowStillImage)
        } else {
            input = try Probe.open(path, cancellation: cancellation, allowStillImage: options.allowStillImage)
        }
        let videoStream = try Probe.videoStream(input, allowStillImage: options.allowStillImage)
        let options = self.options
        let threads = options.threads > 0 ? options.threads : min(16, 4 * ProcessInfo.processInfo.activeProcessorCount)
        let video = try CodecContext.decoder(for: videoStream, path: path, threads: threads) { c in
            if options.skipNonReferenceFrames { c.pointee.skip_frame = AVDISCARD_NONREF }
            if options.skipBidirectionalFrames { c.pointee.skip_frame = AVDISCARD_BIDIR }
            if options.skipLoopFilter { c.pointee.skip_loop_filter = AVDISCARD_ALL }
            c.pointee.flags2 |= AV_CODEC_FLAG2_FAST
        }
        var audioState: AudioPath? = nil
        if options.decodeAudio, let audioStream = Probe.audioStream(input, video: videoStream.index) {
            audioState = try AudioPath(stream: audioStream, path: path, rate: options.audioSampleRate)
        }
        let start = input.startSeconds
        let videoTimeBase = videoStream.timeBase

        // Buffers allocated once; the per-frame path only scales into them.
        // Area averaging: the right filter for a large reduction, and as cheap as point sampling.
        let scaler = Scaler(width: width, height: height, format: AV_PIX_FMT_YUV420P, flags: SWS_AREA)
        let picture = try Frame(width: width, height: height, format: AV_PIX_FMT_YUV420P)
        let decoded = try Frame()
        let packet = try Packet()
        var summary = AnalysisSummary()
        summary.width = width
        summary.height = height
        var limiter = DecodeGuard(options.limits, path: path)
        let interval = options.maxFrameRate.map { 1 / max($0, 0.001) }
        var nextTick = -Double.infinity

        func handleVideo() throws(MediaError) {
            var failures = 0
            while true {
                let rc = video.receive(decoded)
                if rc == FFmpegError.again || rc == FFmpegError.eof { return }
                if FFmpegError.isDamage(rc) {
                    summary.damagedPackets += 1
                    failures += 1
                    if failures > 16 { return }
                    continue
                }
                try check(rc, "avcodec_receive_frame (\(video.name))", path: path, context: video.logKey)
                defer { decoded.unref() }
                summary.framesDecoded += 1
                if decoded.isDamaged { summary.damagedPackets += 1 }
                let ts = decoded.bestEffortTimestamp
                let stamped = ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, videoTimeBase) - start
                try limiter.videoFrame(time: stamped, width: decoded.width, height: decoded.height)
                guard let time = stamped else { continue }
                if let last = summary.lastFrameTime, time <= last { continue } // keep times strictly increasing
                if let interval {
                    // Ticks every `interval` from the first frame; each takes the first frame at or after it.
                    if nextTick == -Double.infinity { nextTick = time }
                    if time + 1e-6 < nextTick { continue }
                    while nextTick <= time + 1e-6 { nextTick += interval }
                }
                try scaler.scale(decoded, into: picture)
                let frame = AnalysisFrame(
                    index: summary.framesAnalysed, time: time, width: width, height: height,
                    lumaStride: picture.linesize(0),
                    luma: UnsafeBufferPointer(start: picture.data(0), count: picture.linesize(0) * height),
                    chromaWidth: width / 2, chromaHeight: height / 2, chromaStride: picture.linesize(1),
                    cb: UnsafeBufferPointer(start: picture.data(1), count: picture.linesize(1) * height / 2),
                    cr: UnsafeBufferPointer(start: picture.data(2), count: picture.linesize(2) * height / 2))
                onFrame(frame)
                if summary.firstFrameTime == nil { summary.firstFrameTime = time }
                summary.lastFrameTime = time
                summary.framesAnalysed += 1
            }
        }

        func sendVideo(_ p: Packet?) throws(MediaError) {
            let rc = video.send(p)
            if FFmpegError.isDamage(rc) { summary.damagedPackets += 1; return }
            if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
                throw MediaError.ffmpeg(rc, "avcodec_send_packet (\(video.name))", path: path, context: video.logKey)
            }
            try handleVideo()
        }

        while true {
            try cancellation?.check("analysis decode", path: path)
            let more: Bool
            do { more = try input.read(into: packet) } catch {
                if error.kind == .cancelled || summary.framesDecoded == 0 { throw error }
                summary.endedEarly = true
                break
            }
            if !more { break }
            defer { packet.unref() }
            if packet.isCorrupt { summary.damagedPackets += 1 }
            if packet.streamIndex == videoStream.index {
                let ts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
                try limiter.videoPacket(time: ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, videoTimeBase) - start)
                try sendVideo(packet)
            } else if let audio = audioState, packet.streamIndex == audio.streamIndex {
                try audio.decode(packet, start: start, summary: &summary, limiter: &limiter, onAudio: onAudio)
            }
        }
        try sendVideo(nil)
        try audioState?.decode(nil, start: start, summary: &summary, limiter: &limiter, onAudio: onAudio)
        try cancellation?.check("analysis decode", path: path)
        return summary
    }
}

/// The audio half of the analysis pass: decode, downmix and resample to mono float.
private final class AudioPath {
    let streamIndex: Int
    let decoder: CodecContext
    let resampler: Resampler
    let frame: Frame
    let timeBase: AVRational
    let rate: Int
    let path: String
    private var buffer: UnsafeMutablePointer<Float>
    private var capacity: Int
    private let planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    private var nextTime: Double?
    /// Largest output chunk accepted from one decoded frame (about a minute at 16 kHz).
    static let maxChunk = 1 << 20

    init(stream: StreamHandle, path: String, rate: Int) throws(MediaError) {
        streamIndex = stream.index
        timeBase = stream.timeBase
        self.rate = rate
        self.path = path
        decoder = try CodecContext.decoder(for: stream, path: path, threads: 1)
        resampler = try Resampler(input: decoder.pointer, outputRate: rate, outputChannels: 1, outputFormat: AV_SAMPLE_FMT_FLT)
        frame = try Frame()
        capacity = 16_384
        buffer = .allocate(capacity: capacity)
        planes = .allocate(capacity: 1)
    }

    deinit {
        buffer.deallocate()
        planes.deallocate()
    }

    func decode(_ packet: Packet?, start: Double, summary: inout AnalysisSummary, limiter: inout DecodeGuard,
                onAudio: (borrowing AudioChunk) -> Void) throws(MediaError) {
        let sent = decoder.send(packet)
        if FFmpegError.isDamage(sent) { summary.damagedPackets += 1; return }
        if sent < 0 && sent != FFmpegError.eof && sent != FFmpegError.again {
            throw MediaError.ffmpeg(sent, "avcodec_send_packet (\(decoder.name))", path: path, context: decoder.logKey)
        }
        var failures = 0
        while true {
            let rc = decoder.receive(frame)
            if rc == FFmpegError.again { return }
            if FFmpegError.isDamage(rc) {
                summary.damagedPackets += 1
                failures += 1
                if failures > 16 { return }
                continue
            }
            if rc == FFmpegError.eof {
                try emit(nil, time: nextTime ?? 0, summary: &summary, limiter: &limiter, onAudio: onAudio)
                return
            }
            try check(rc, "avcodec_receive_frame (\(decoder.name))", path: path, context: decoder.logKey)
            defer { frame.unref() }
            let ts = frame.bestEffortTimestamp
            var time = nextTime ?? 0
            if ts != MediaTime.noPTS {
                let stamped = MediaTime.seconds(ts, timeBase) - start
                // Follow the stream's clock only across real gaps; otherwise keep samples contiguous.
                if nextTime == nil || abs(stamped - time) > 0.04 { time = stamped }
            }
            try emit(frame, time: time, summary: &summary, limiter: &limiter, onAudio: onAudio)
        }
    }

    private func emit(_ input: Frame?, time: Double, summary: inout AnalysisSummary, limiter: inout DecodeGuard,
                      onAudio: (borrowing AudioChunk) -> Void) throws(MediaError) {
        let needed = resampler.outputCapacity(forInput: input?.sampleCount ?? 0)
        if needed > AudioPath.maxChunk { // a frame claiming minutes of samples: damage, not a buffer to grow
            summary.damagedPackets += 1
            return
        }
        if needed > capacity { // grows rarely (an unusually long frame), never per frame
            buffer.deallocate()
            capacity = needed
            buffer = .allocate(capacity: capacity)
        }
        planes[0] = UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: UInt8.self)
        let count = try resampler.convert(input, into: planes, capacity: capacity)
        guard count > 0 else { return }
        try limiter.audio(time: time)
        onAudio(AudioChunk(time: time, sampleRate: rate, samples: UnsafeBufferPointer(start: buffer, count: count)))
        summary.audioSamples += count
        nextTime = time + Double(count) / Double(rate)
    }
}
