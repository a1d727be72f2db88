import CFFmpeg
import FFmpeg
import Foundation

/// A frame rate or time base as an exact fraction.
public struct Rational: Sendable, Codable, Equatable, CustomStringConvertible {
    public var num: Int
    public var den: Int
    public init(_ num: Int, _ den: Int) { self.num = num; self.den = den }
    public var value: Double { den == 0 ? 0 : Double(num) / Double(den) }
    public var description: String { den == 1 ? "\(num)" : "\(num)/\(den)" }
    package var av: AVRational { AVRational(num: Int32(num), den: Int32(den)) }
    package init(_ q: AVRational) { self.init(Int(q.num), Int(q.den)) }
}

/// Colour tags written on an encoded stream.
public struct ColorTags: Sendable, Equatable {
    public var primaries: UInt32 = AVCOL_PRI_BT709.rawValue
    public var transfer: UInt32 = AVCOL_TRC_BT709.rawValue
    public var matrix: UInt32 = AVCOL_SPC_BT709.rawValue
    public init() {}
    /// BT.2020 primaries and matrix with the PQ (SMPTE ST 2084) transfer: HDR10.
    public static var hdr10: ColorTags {
        var tags = ColorTags()
        tags.primaries = AVCOL_PRI_BT2020.rawValue
        tags.transfer = AVCOL_TRC_SMPTE2084.rawValue
        tags.matrix = AVCOL_SPC_BT2020_NCL.rawValue
        return tags
    }
    /// BT.2020 with the HLG (ARIB STD-B67) transfer.
    public static var hlg: ColorTags {
        var tags = hdr10
        tags.transfer = AVCOL_TRC_ARIB_STD_B67.rawValue
        return tags
    }
}

/// How MediaWriter encodes video: H.264 with libx264 (what renders write), or HEVC with libx265
/// (what phones record; MediaSynth uses it for phone-like test media).
public struct VideoEncoding: Sendable {
    public enum Codec: String, Sendable, CaseIterable {
        /// H.264 (libx264); 10-bit gives High 10.
        case h264
        /// HEVC (libx265) in an `hvc1`-tagged track, as an iPhone writes it; 10-bit gives Main10.
        case hevc
    }
    public var codec = Codec.h264
    public var width: Int
    public var height: Int
    public var frameRate: Rational
    /// Time base of the pts given to `writePicture`; default 1/frameRate (one tick per frame).
    public var timeBase: Rational?
    /// 10-bit 4:2:0 (yuv420p10le) instead of 8-bit yuv420p.
    public var tenBit = false
    public var preset = "veryfast"
    public var crf = 20
    public var keyframeIntervalSeconds = 2.0
    /// P-frames only (no B-frames) with a keyframe exactly every `keyframeIntervalSeconds` and no
    /// scene-cut keyframes in between: the GOP structure of a phone recording.
    public var fixedGOPWithoutBFrames = false
    /// When above 0: exactly this many B-frames between anchors, a keyframe exactly every
    /// `keyframeIntervalSeconds` and no scene-cut keyframes (a camcorder's or an editor's export),
    /// so a cut lands on whichever frame type the pattern puts there.
    public var fixedBFrames = 0
    public var color = ColorTags()
    /// HDR10 static metadata on the stream (a 1000 cd/m² BT.2020 mastering display, MaxCLL 1000,
    /// MaxFALL 400), written as the MP4's mdcv and clli boxes.
    public var hdrStaticMetadata = false
    /// Clockwise degrees a player must rotate the picture (written as the display matrix).
    public var rotation = 0
    /// Encoder threads; 0 sizes them to the machine: one per core. x264's own choice (1.5 per
    /// core) holds more pictures in flight for no speed where the render's decoder shares the
    /// cores: a 4K HEVC render to 1080p on 2 cores took 34.1 s with 2 threads against 34.3 s with
    /// x264's 3, at a peak of 505 MB against 527 MB.
    public var threads = 0

    /// The thread count the encoder is opened with.
    package var encoderThreads: Int {
        threads > 0 ? threads : max(1, min(ProcessInfo.processInfo.activeProcessorCount, 16))
    }

    public init(width: Int, height: Int, frameRate: Rational) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
    }
}

/// How MediaWriter encodes audio: AAC (FFmpeg's native encoder).
public struct AudioEncoding: Sendable {
    public var sampleRate = 48_000
    public var channels = 2
    public var bitRate = 128_000
    public init() {}
}

/// One picture's planes, for code that draws a picture to encode (8-bit: UInt8 samples; 10-bit:
/// UInt16 samples holding 0...1023). Valid only inside the drawing closure.
public struct PicturePlanes {
    public let width: Int
    public let height: Int
    public let bitDepth: Int
    public let y: UnsafeMutableRawPointer
    public let u: UnsafeMutableRawPointer
    public let v: UnsafeMutableRawPointer
    /// Bytes per row of each plane.
    public let yStride: Int
    public let uStride: Int
    public let vStride: Int
}

/// Encodes pictures and sound to an MP4 (H.264 or HEVC + AAC, moov at the front). Writes to a hidden
/// temporary file beside `path` and renames it into place in `finish()`: if the writer is dropped
/// before that (an error, a cancel), the temporary file is deleted and nothing is left behind.
public final class MediaWriter {
    public let path: String
    package let temporaryPath: String
    private let output: FormatOutput
    /// The encoder of the current run of encoded pictures; nil after pictures were copied in (the
    /// next encoded picture opens a new run, which starts with an IDR frame).
    private var video: CodecContext?
    private let makeEncoder: () throws(MediaError) -> CodecContext
    private let timeBase: AVRational
    private let videoStream: UnsafeMutablePointer<AVStream>
    private let audio: AudioTrackEncoder?
    private let pictureFrame: Frame
    private let packet: Packet
    private var nextVideoPTS: Int64 = 0
    private var lastVideoDTS = Int64.min
    private var finished = false
    public let videoSettings: VideoEncoding
    public private(set) var videoFramesWritten = 0
    public var audioSamplesWritten: Int { audio?.samplesWritten ?? 0 }

    public init(
        path: String, video settings: VideoEncoding, audio audioSettings: AudioEncoding?,
        cancellation: CancellationToken? = nil
    ) throws(MediaError) {
        _ = FFmpegLog.installed
        self.path = path
        self.videoSettings = settings
        temporaryPath = PartialFile(path).temporaryPath
        guard settings.width > 0, settings.height > 0, settings.width % 2 == 0, settings.height % 2 == 0 else {
            throw MediaError(
                .invalidRange, operation: "MediaWriter", path: path,
                detail: "output size \(settings.width)x\(settings.height) must be positive and even")
        }
        output = try FormatOutput(path: temporaryPath, format: "mp4", cancellation: cancellation)
        let globalHeader = output.needsGlobalHeader
        let timeBase = settings.timeBase ?? Rational(settings.frameRate.den, settings.frameRate.num)
        let pixelFormat = settings.tenBit ? AV_PIX_FMT_YUV420P10LE : AV_PIX_FMT_YUV420P
        let gop = max(1, Int((settings.keyframeIntervalSeconds * settings.frameRate.value).rounded()))
        self.timeBase = timeBase.av
        makeEncoder = MediaWriter.videoEncoderFactory(
            settings, timeBase: timeBase, pixelFormat: pixelFormat, gop: gop,
            globalHeader: globalHeader)
        let video = try makeEncoder()
        self.video = video
        videoStream = try output.addStream(for: video)
        try MediaWriter.describe(videoStream, settings, path: path)
        if let audioSettings {
            audio = try AudioTrackEncoder(audioSettings, output: output, path: path)
        } else {
            audio = nil
        }
        pictureFrame = try Frame(width: settings.width, height: settings.height, format: pixelFormat)
        packet = try Packet()
        try output.writeHeader(options: ["movflags": "+faststart"])
    }

    deinit {
        if !finished { unlink(temporaryPath) }
    }

    /// Opens a video encoder for `settings`: the first run's, and each run after copied pictures.
    private static func videoEncoderFactory(
        _ settings: VideoEncoding, timeBase: Rational, pixelFormat: AVPixelFormat,
        gop: Int, globalHeader: Bool
    ) -> () throws(MediaError) -> CodecContext {
        { () throws(MediaError) -> CodecContext in
            try CodecContext.encoder(
                named: settings.codec == .hevc ? "libx265" : "libx264",
                options: MediaWriter.encoderOptions(settings, gop: gop)
            ) { c in
                c.pointee.width = Int32(settings.width)
                c.pointee.height = Int32(settings.height)
                c.pointee.time_base = timeBase.av
                c.pointee.framerate = settings.frameRate.av
                c.pointee.pix_fmt = pixelFormat
                c.pointee.gop_size = Int32(gop)
                if settings.fixedGOPWithoutBFrames {
                    c.pointee.max_b_frames = 0
                    c.pointee.keyint_min = Int32(gop)
                } else if settings.fixedBFrames > 0 {
                    c.pointee.max_b_frames = Int32(min(settings.fixedBFrames, 16))
                    c.pointee.keyint_min = Int32(gop)
                }
                c.pointee.color_primaries = AVColorPrimaries(rawValue: settings.color.primaries)
                c.pointee.color_trc = AVColorTransferCharacteristic(rawValue: settings.color.transfer)
                c.pointee.colorspace = AVColorSpace(rawValue: settings.color.matrix)
                c.pointee.color_range = AVCOL_RANGE_MPEG
                c.pointee.thread_count = Int32(settings.encoderThreads)
                if globalHeader { c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
            }
        }
    }

    /// The video stream's frame rate, HEVC tag and rotation.
    private static func describe(
        _ videoStream: UnsafeMutablePointer<AVStream>, _ settings: VideoEncoding,
        path: String
    ) throws(MediaError) {
        videoStream.pointee.avg_frame_rate = settings.frameRate.av
        if settings.codec == .hevc {
            // Apple's tag (parameter sets in the sample description), as iPhone files have.
            videoStream.pointee.codecpar.pointee.codec_tag =
                UInt32(UInt8(ascii: "h")) | UInt32(UInt8(ascii: "v")) << 8
                | UInt32(UInt8(ascii: "c")) << 16 | UInt32(UInt8(ascii: "1")) << 24
        }
        if settings.hdrStaticMetadata {
            try check(
                moments_stream_add_hdr10_metadata(videoStream, 1000, 50, 1000, 400), "av_stream_new_side_data (HDR)",
                path: path)
        }
        guard settings.rotation % 360 != 0 else { return }
        guard let matrix = av_stream_new_side_data(videoStream, AV_PKT_DATA_DISPLAYMATRIX, 36) else {
            throw MediaError(.ffmpeg, operation: "av_stream_new_side_data", path: path, detail: "out of memory")
        }
        // FFmpeg stores it so that av_display_rotation_get reads back -rotation (counter-clockwise).
        matrix.withMemoryRebound(to: Int32.self, capacity: 9) {
            av_display_rotation_set($0, Double(settings.rotation))
        }
    }

    /// The encoder's private options: preset, CRF and, for a fixed GOP, the GOP structure spelled
    /// out in the encoder's own parameters (the generic fields do not reach every x265 setting).
    package static func encoderOptions(_ settings: VideoEncoding, gop: Int) -> [String: String] {
        var options = ["preset": settings.preset, "crf": "\(settings.crf)"]
        switch settings.codec {
        case .h264:
            // A picture asked to be a keyframe (`write(_:pts:keyframe:)`) is an IDR frame: nothing
            // after it refers to anything before, so the stream can be cut there.
            options["forced-idr"] = "1"
            if settings.fixedGOPWithoutBFrames {
                options["x264-params"] = "keyint=\(gop):min-keyint=\(gop):scenecut=0:bframes=0"
            } else if settings.fixedBFrames > 0 {
                let b = min(settings.fixedBFrames, 16)
                options["x264-params"] = "keyint=\(gop):min-keyint=\(gop):scenecut=0:bframes=\(b):b-adapt=0"
            }
        case .hevc:
            var params = ["log-level=error"]
            if settings.fixedGOPWithoutBFrames {
                params += ["keyint=\(gop)", "min-keyint=\(gop)", "scenecut=0", "bframes=0", "open-gop=0"]
            }
            options["x265-params"] = params.joined(separator: ":")
        }
        return options
    }

    package var videoTimeBase: AVRational { timeBase }
    package var audioFrameSize: Int { Int(audio?.encoder.pointer.pointee.frame_size ?? 1024) }
    package var hasAudio: Bool { audio != nil }

    /// Encodes one picture drawn by `draw`; `pts` in the video time base (default: the next frame);
    /// `keyframe` makes it an IDR frame.
    public func writePicture(pts: Int64? = nil, keyframe: Bool = false, _ draw: (PicturePlanes) -> Void)
        throws(MediaError)
    {
        try pictureFrame.makeWritable()
        let planes = PicturePlanes(
            width: pictureFrame.width, height: pictureFrame.height, bitDepth: videoSettings.tenBit ? 10 : 8,
            y: UnsafeMutableRawPointer(pictureFrame.data(0)!), u: UnsafeMutableRawPointer(pictureFrame.data(1)!),
            v: UnsafeMutableRawPointer(pictureFrame.data(2)!),
            yStride: pictureFrame.linesize(0), uStride: pictureFrame.linesize(1), vStride: pictureFrame.linesize(2))
        draw(planes)
        try write(pictureFrame, pts: pts ?? nextVideoPTS, keyframe: keyframe)
    }

    /// Encodes a picture already in the output size and pixel format; `keyframe` makes it an IDR
    /// frame (the start of a piece that can later be copied on its own).
    package func write(_ frame: Frame, pts: Int64, keyframe: Bool = false) throws(MediaError) {
        let video = try encoderForNextPicture()
        let p = frame.pointer
        p.pointee.pts = pts
        p.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        p.pointee.color_primaries = video.pointer.pointee.color_primaries
        p.pointee.color_trc = video.pointer.pointee.color_trc
        p.pointee.colorspace = video.pointer.pointee.colorspace
        p.pointee.color_range = AVCOL_RANGE_MPEG
        try encode(frame, with: video, to: videoStream)
        nextVideoPTS = pts + 1
        videoFramesWritten += 1
    }

    /// The parameter sets (SPS/PPS) every picture of the stream is decoded with.
    package var videoExtradata: [UInt8] {
        let par = videoStream.pointee.codecpar.pointee
        guard let data = par.extradata, par.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(par.extradata_size)))
    }

    /// The current run's encoder, or a new run's after copied pictures. A new run must decode
    /// with the stream's parameter sets (same settings give the same ones).
    private func encoderForNextPicture() throws(MediaError) -> CodecContext {
        if let video { return video }
        let fresh = try makeEncoder()
        let c = fresh.pointer.pointee
        let extradata = c.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(c.extradata_size))) } ?? []
        guard videoSettings.codec != .h264 || H264ParameterSets(extradata) == H264ParameterSets(videoExtradata) else {
            throw MediaError(
                .unsupportedCodec, operation: "MediaWriter", path: path,
                detail: "a new encoder run would need other parameter sets than the stream's")
        }
        video = fresh
        return fresh
    }

    /// Appends an already-encoded picture (a copy from an earlier render with the same parameter
    /// sets): `pts` and `dts` in frames (the video time base). The open encoder run is flushed
    /// first. Decode times must keep rising, or the copy is refused (nothing is written).
    package func copyVideo(_ packet: Packet, pts: Int64, dts: Int64) throws(MediaError) {
        if let video {
            try encode(nil, with: video, to: videoStream)
            self.video = nil
        }
        guard dts > lastVideoDTS, pts >= dts else {
            throw MediaError(
                .unsupportedCodec, operation: "MediaWriter", path: path,
                detail: "a copied picture's decode time \(dts) does not follow \(lastVideoDTS)")
        }
        packet.pointer.pointee.pts = pts
        packet.pointer.pointee.dts = dts
        packet.pointer.pointee.duration = 1
        packet.pointer.pointee.pos = -1
        lastVideoDTS = dts
        try output.write(packet, from: timeBase, to: videoStream)
        nextVideoPTS = pts + 1
        videoFramesWritten += 1
    }

    /// Appends interleaved samples (channels as configured).
    public func writeAudio(interleaved samples: UnsafeBufferPointer<Float>) throws(MediaError) {
        guard let audio else { return }
        let channels = audio.channels
        let count = samples.count / channels
        guard count > 0 else { return }
        let planar = UnsafeMutablePointer<Float>.allocate(capacity: count * channels)
        defer { planar.deallocate() }
        let pointers = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: channels)
        defer { pointers.deallocate() }
        for c in 0..<channels {
            let plane = planar + c * count
            for i in 0..<count { plane[i] = samples[i * channels + c] }
            pointers[c] = UnsafeMutableRawPointer(plane)
        }
        try audio.write(planes: pointers, count: count)
    }

    /// Appends planar float samples: one pointer per channel, `count` samples each.
    package func writeAudio(planes: UnsafeMutablePointer<UnsafeMutableRawPointer?>, count: Int) throws(MediaError) {
        try audio?.write(planes: planes, count: count)
    }

    /// Flushes the encoders, writes the index at the front of the file and moves it into place.
    public func finish() throws(MediaError) {
        if let video { try encode(nil, with: video, to: videoStream) }
        try audio?.finish()
        try output.finish()
        try PartialFile(path: path, temporaryPath: temporaryPath).moveIntoPlace()
        finished = true
    }

    private func encode(_ frame: Frame?, with encoder: CodecContext, to stream: UnsafeMutablePointer<AVStream>)
        throws(MediaError)
    {
        let rc = encoder.send(frame)
        if rc < 0 && rc != FFmpegError.eof {
            throw MediaError.ffmpeg(rc, "avcodec_send_frame (\(encoder.name))", path: path, context: encoder.logKey)
        }
        while true {
            let r = encoder.receive(packet)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            try check(r, "avcodec_receive_packet (\(encoder.name))", path: path, context: encoder.logKey)
            defer { packet.unref() }
            guard packet.dts > lastVideoDTS else {
                throw MediaError(
                    .unsupportedCodec, operation: "MediaWriter", path: path,
                    detail: "an encoded picture's decode time \(packet.dts) does not follow \(lastVideoDTS)")
            }
            lastVideoDTS = packet.dts
            try output.write(packet, from: encoder.pointer.pointee.time_base, to: stream)
        }
    }
}
