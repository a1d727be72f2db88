import CFFmpeg
import FFmpeg
import Foundation

/// One render: opens the source and the output, then runs it as three stages on their own threads
/// (decode, convert, encode) joined by small bounded queues, so that the decoder, the converter
/// and the encoder work at once. Each C object belongs to one stage.
package final class RenderSession {
    package let request: RenderRequest
    package let plan: EditPlan
    package let rotation: Int
    private let queues: RenderQueues
    private let decodeStage: RenderDecodeStage
    private let convertStage: RenderConvertStage
    private let encodeStage: RenderEncodeStage

    package init(_ request: RenderRequest, cancellation: CancellationToken?, progress: ((Double) -> Void)?) throws(MediaError) {
        self.request = request
        if let last = request.segments.map(\.end).max(), last > request.limits.maxDecodedSeconds {
            throw MediaError(
                .tooLong, operation: "render", path: request.source,
                detail:
                    "the edit reaches \(DecodeLimits.describe(seconds: last.rounded(.up))), past the \(DecodeLimits.describe(seconds: request.limits.maxDecodedSeconds)) limit"
            )
        }
        let source = try RenderSource(request, cancellation: cancellation)
        let plan = source.plan, rotation = source.info.video.rotation
        self.plan = plan
        self.rotation = rotation
        let (geometry, crop) = RenderSession.outputGeometry(source.info.video, request: request)
        let par = source.videoStream.parameters.pointee
        let hdr = ToneMapper.Transfer(of: source.videoStream)
        let converter = try VideoConverter(width: geometry.width, height: geometry.height, hdrTransfer: hdr)

        let settings = RenderSession.videoEncoding(
            geometry, frameRate: plan.frameRate, rotation: rotation, source: par,
            toneMapped: hdr != nil, request: request)
        var audioSettings = AudioEncoding()
        audioSettings.bitRate = request.quality.audioBitRate
        let writer = try MediaWriter(
            path: request.output, video: settings, audio: audioSettings, cancellation: cancellation)
        let (earlier, reused) = RenderSession.earlierRender(
            request, geometry: geometry, plan: plan, rotation: rotation, writer: writer, cancellation: cancellation)

        let queues = try RenderQueues(width: geometry.width, height: geometry.height)
        self.queues = queues
        decodeStage = try RenderDecodeStage(
            source, request: request, crop: crop, reused: reused, queues: queues, cancellation: cancellation)
        convertStage = try RenderConvertStage(
            converter: converter, crossfadeFrames: plan.crossfadeFrames, queues: queues)
        encodeStage = RenderEncodeStage(
            writer: writer, earlier: earlier, queues: queues, plan: plan, cancellation: cancellation,
            progress: progress, path: request.source)
    }

    /// The earlier render to copy segments from, and where each new segment lies in it: hard cuts
    /// and the whole picture only (a crossfade blends two segments' frames, and a reframe's window
    /// follows a track fitted to the whole segment).
    private static func earlierRender(
        _ request: RenderRequest, geometry: OutputGeometry, plan: EditPlan, rotation: Int, writer: MediaWriter,
        cancellation: CancellationToken?
    ) -> (EarlierRender?, ReusedSegments?) {
        guard let reuse = request.reuse, request.crossfade == 0, request.reframe == nil,
            let opened = EarlierRender(
                path: reuse.path, width: geometry.width, height: geometry.height, frameRate: plan.frameRate,
                rotation: rotation, extradata: writer.videoExtradata, cancellation: cancellation)
        else { return (nil, nil) }
        let pieces = ReusedSegments(plan: plan, earlier: reuse.segments, render: opened)
        return pieces.isEmpty ? (nil, nil) : (opened, pieces)
    }

    /// The output's size: the source's display size within the quality's short side, or the
    /// reframe's window; and that window in stored pixels.
    package static func outputGeometry(_ video: VideoStreamInfo, request: RenderRequest) -> (OutputGeometry, StoredCrop?) {
        guard let reframe = request.reframe else {
            return (
                OutputGeometry(
                    codedWidth: video.codedWidth, codedHeight: video.codedHeight,
                    sampleAspectRatio: video.sampleAspectRatio.value, maxShortSide: request.quality.maxShortSide), nil
            )
        }
        let crop = StoredCrop(
            reframe: reframe, codedWidth: video.codedWidth, codedHeight: video.codedHeight, rotation: video.rotation)
        let size = reframe.outputSize(
            displayWidth: video.displayWidth, height: video.displayHeight,
            maxShortSide: request.quality.maxShortSide)
        let sideways = video.rotation % 180 != 0
        return (
            OutputGeometry(width: sideways ? size.height : size.width, height: sideways ? size.width : size.height),
            crop
        )
    }

    /// The encoder's settings; an SDR source keeps its colour tags (yuv->yuv scaling keeps its
    /// matrix; BT.709 when untagged), a tone-mapped one gets the encoder's BT.709 defaults.
    package static func videoEncoding(
        _ geometry: OutputGeometry, frameRate: Rational, rotation: Int, source par: AVCodecParameters,
        toneMapped: Bool, request: RenderRequest
    ) -> VideoEncoding {
        var settings = VideoEncoding(width: geometry.width, height: geometry.height, frameRate: frameRate)
        settings.preset = request.preset
        settings.crf = request.quality.crf
        settings.rotation = rotation
        if !toneMapped {
            if par.color_primaries != AVCOL_PRI_UNSPECIFIED { settings.color.primaries = par.color_primaries.rawValue }
            if par.color_trc != AVCOL_TRC_UNSPECIFIED { settings.color.transfer = par.color_trc.rawValue }
            if par.color_space != AVCOL_SPC_UNSPECIFIED { settings.color.matrix = par.color_space.rawValue }
        }
        return settings
    }

    package var frameDuration: Double { Double(plan.frameRate.den) / Double(plan.frameRate.num) }

    package func run() throws(MediaError) -> RenderResult {
        encodeStage.report(0)
        try queues.run([
            (name: "decode", body: decodeStage.run),
            (name: "convert", body: convertStage.run),
            (name: "encode", body: encodeStage.run),
        ])
        encodeStage.report(1)
        let writer = encodeStage.writer
        let size = (try? Probe.fileSize(request.output)) ?? 0
        return RenderResult(
            output: request.output, duration: plan.duration, width: convertStage.converter.width,
            height: convertStage.converter.height, rotation: rotation, frameRate: plan.frameRate,
            frames: writer.videoFramesWritten, audioSamples: writer.audioSamplesWritten, fileSize: size,
            outputSegments: plan.segments.map {
                TimeRange(
                    start: Double($0.firstFrame) * frameDuration, end: Double($0.firstFrame + $0.frames) * frameDuration
                )
            },
            damagedPackets: decodeStage.damaged, copiedFrames: decodeStage.copiedFrames)
    }
}

/// The opened source of a render: its demuxer, streams and decoders, and the edit laid on its
/// frames.
package struct RenderSource {
    package let input: FormatInput
    package let info: MediaInfo
    package let videoStream: StreamHandle
    package let video: CodecContext
    package let sound: SegmentSound?
    package let plan: EditPlan
    package let start: Double

    package init(_ request: RenderRequest, cancellation: CancellationToken?) throws(MediaError) {
        // One open: the probe's packet scan is undone by the seek each segment starts with.
        let size = try Probe.fileSize(request.source)
        input = try Probe.open(request.source, size: size, cancellation: cancellation)
        info = try Probe.describe(input, fileSize: size)
        videoStream = try Probe.videoStream(input)
        start = input.startSeconds
        // The in-loop filters stay on even when downscaling 4K to 1080p: skipping them saves ~19 %
        // of an HEVC decode but the error builds up along a P-only GOP (measured on 4K HEVC
        // Main10 at 50 Mbit/s scaled to 1080p: SSIM Y 0.993, chroma 0.92-0.93, worst frame 0.948).
        video = try CodecContext.decoder(for: videoStream, path: request.source, threads: request.threads)
        if let stream = Probe.audioStream(input, video: videoStream.index) {
            sound = try SegmentSound(stream: stream, path: request.source, start: input.startSeconds)
        } else {
            sound = nil
        }
        let frameRate = Renderer.outputFrameRate(
            average: videoStream.stream.pointee.avg_frame_rate, real: videoStream.stream.pointee.r_frame_rate,
            variable: info.video.isVariableFrameRate, maximum: request.maxFrameRate)
        plan = try EditPlan(
            ranges: request.segments, sourceDuration: info.duration, frameRate: frameRate,
            sampleRate: 48_000, crossfade: request.crossfade, path: request.source)
    }
}
