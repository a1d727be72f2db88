import MediaEngine
import CFFmpeg
import FFmpeg
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
    /// False when frames were skipped between the previously analysed frame and this one (the
    /// sampled plan's jump to the next keyframe, the start of a refined range): analysers that
    /// compare neighbours must not compare across the gap.
    public var follows = true
    /// The sampled plan's GOP (keyframe group) or the refined range the frame belongs to; 0 otherwise.
    public var group = 0
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
    /// The decode plan the pass followed ("full", "anchors" or "sampled").
    public var plan: String?
    /// The decoder skipped the deblocking filter.
    public var skippedLoopFilter: Bool?
    /// Sampled plan: keyframe groups seen.
    public var groups: Int?
    /// Sampled plan: ranges decoded again frame by frame around a possible boundary, their total
    /// length in seconds, and the frames decoded there.
    public var refinedRanges: Int?
    public var refinedSeconds: Double?
    public var refinedFrames: Int?
    /// Sampled plan: the latest video packet time read (the end of the video, where no frame was decoded).
    public var lastPacketTime: Double?
}

/// One pass over a file: in order, each analysed frame's exact time and a small picture, and the
/// audio as mono Float PCM in timed chunks.
public final class AnalysisDecoder {
    public let info: MediaInfo
    public let options: AnalysisOptions
    public let width: Int
    public let height: Int
    let path: String
    /// Bytes in memory instead of the file at `path`.
    let bytes: [UInt8]?
    let cancellation: CancellationToken?

    public init(path: String, options: AnalysisOptions = AnalysisOptions(), cancellation: CancellationToken? = nil)
        throws(MediaError)
    {
        self.path = path
        self.bytes = nil
        self.options = options
        self.cancellation = cancellation
        info = try Probe.probe(path, allowStillImage: options.allowStillImage)
        (width, height) = AnalysisDecoder.pictureSize(info, options: options)
    }

    /// A pass over bytes in memory (`name` stands for the file in messages): the probe fuzzer's decode.
    public init(
        bytes: [UInt8], name: String = "memory", options: AnalysisOptions = AnalysisOptions(),
        cancellation: CancellationToken? = nil
    ) throws(MediaError) {
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

    /// Runs the full pass: every frame (less those the options skip). `onFrame` and `onAudio`
    /// are called on the calling thread, in time order per kind. Throws `.cancelled` within a
    /// packet's time of `cancellation.cancel()`.
    @discardableResult
    public func run(
        onFrame: (borrowing AnalysisFrame) -> Void,
        onAudio: (borrowing AudioChunk) -> Void = { _ in }
    ) throws(MediaError) -> AnalysisSummary {
        let (input, video, audio) = try open()
        var summary = AnalysisSummary()
        summary.width = width
        summary.height = height
        summary.plan = "full"
        summary.skippedLoopFilter = options.skipLoopFilter
        var limiter = DecodeGuard(options.limits, path: path)
        let interval = options.maxFrameRate.map { 1 / max($0, 0.001) }
        var nextTick = -Double.infinity
        var last: Double?
        func accept(_ time: Double) -> AnalysisVideoPath.Mark? {
            if let last, time <= last { return nil }  // keep times strictly increasing
            if let interval {
                // Ticks every `interval` from the first frame; each takes the first frame at or after it.
                if nextTick == -Double.infinity { nextTick = time }
                if time + 1e-6 < nextTick { return nil }
                while nextTick <= time + 1e-6 { nextTick += interval }
            }
            last = time
            return AnalysisVideoPath.Mark()
        }
        let packet = try Packet()
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
            if packet.streamIndex == video.stream.index {
                try limiter.videoPacket(time: video.packetTime(packet))
                try video.decode(packet, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
            } else if let audio, packet.streamIndex == audio.streamIndex {
                try audio.decode(packet, start: video.start, summary: &summary, limiter: &limiter, onAudio: onAudio)
            }
        }
        try video.decode(nil, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
        try audio?.decode(nil, start: video.start, summary: &summary, limiter: &limiter, onAudio: onAudio)
        try cancellation?.check("analysis decode", path: path)
        return summary
    }

    /// Opens the input and the decoders of one pass.
    /// `everyFrame` turns off the options' frame skipping (the sampled plan's bursts and refined
    /// ranges must be consecutive frames).
    func open(decodeAudio: Bool? = nil, threads: Int? = nil, everyFrame: Bool = false) throws(MediaError) -> (
        FormatInput, AnalysisVideoPath, AudioPath?
    ) {
        let (input, videoStream) = try openInput()
        var videoOptions = options
        if everyFrame {
            videoOptions.skipNonReferenceFrames = false
            videoOptions.skipBidirectionalFrames = false
        }
        let video = try AnalysisVideoPath(
            stream: videoStream, path: path, start: input.startSeconds, width: width, height: height,
            options: videoOptions, threads: threads ?? AnalysisVideoPath.threads(options))
        let audio = decodeAudio ?? options.decodeAudio ? try audioPath(input, video: videoStream) : nil
        return (input, video, audio)
    }

    /// Reads a pass's next packet into `packet`, after checking for cancellation (`stage` names
    /// the pass). False at the end of the input, and at a demuxing error the pass survives
    /// (`survives` is asked: a truncated file, whose packets read so far are still analysed); a
    /// cancellation, or an error the pass does not survive, is thrown.
    func nextPacket(
        _ input: FormatInput, into packet: Packet, stage: String, survives: (MediaError) -> Bool = { _ in true }
    ) throws(MediaError) -> Bool {
        try cancellation?.check(stage, path: path)
        do { return try input.read(into: packet) } catch {
            if error.kind == .cancelled || !survives(error) { throw error }
            return false
        }
    }

    /// The input, opened, and its video stream.
    func openInput() throws(MediaError) -> (FormatInput, StreamHandle) {
        let input: FormatInput
        if let bytes {
            input = try Probe.open(
                InputSource(bytes: bytes, name: path), cancellation: cancellation,
                allowStillImage: options.allowStillImage)
        } else {
            input = try Probe.open(path, cancellation: cancellation, allowStillImage: options.allowStillImage)
        }
        return (input, try Probe.videoStream(input, allowStillImage: options.allowStillImage))
    }

    /// The audio decoder of the pass, when the options want audio and the input has some.
    func audioPath(_ input: FormatInput, video: StreamHandle) throws(MediaError) -> AudioPath? {
        guard options.decodeAudio, let audioStream = Probe.audioStream(input, video: video.index) else { return nil }
        return try AudioPath(stream: audioStream, path: path, rate: options.audioSampleRate)
    }
}
