import CFFmpeg
import Foundation

/// One render's state: the C objects it owns and the position in the edit.
final class RenderSession {
    let request: RenderRequest
    let cancellation: CancellationToken?
    let progress: ((Double) -> Void)?
    let input: FormatInput
    let videoStream: StreamHandle
    let audioStream: StreamHandle?
    let video: CodecContext
    let audio: CodecContext?
    let resampler: Resampler?
    let plan: EditPlan
    let writer: MediaWriter
    let converter: VideoConverter
    let joiner: AudioJoiner
    let rotation: Int
    let start: Double
    // Reused per-frame objects.
    let packet: Packet
    let decoded: Frame
    let current: Frame
    let work: Frame
    let hold: [Frame]
    let audioFrame: Frame
    let audioLeft: UnsafeMutablePointer<Float>
    let audioRight: UnsafeMutablePointer<Float>
    let audioPlanes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    var audioCapacity = 0
    var framesDone = 0
    var lastReported = -1.0
    var damaged = 0
    /// Within the current segment.
    var segment: EditPlan.Segment
    var slot = 0
    var haveCurrent = false
    var videoDone = false
    var audioCursor: Int?
    /// The current segment's decode bounds (reset at each segment's seek).
    var limiter: DecodeGuard
    /// The reframe's window in stored pixels, and the segment being rendered (its track).
    let crop: StoredCrop?
    var segmentIndex = 0
    /// The earlier render segments are copied from, and where each new segment lies in it.
    let earlier: EarlierRender?
    let reused: ReusedSegments?
    var copiedFrames = 0
    /// The current segment's piece of the earlier render, until it is copied.
    var duePiece: ReusedSegments.Piece?
    /// After a copied piece: video packets are not decoded until this keyframe (its decode
    /// timestamp), the last one before the frames the segment still has to encode.
    var resumeVideoAt: Int64?
    var lastVideoDTS = Int64.min

    init(_ request: RenderRequest, cancellation: CancellationToken?, progress: ((Double) -> Void)?) throws(MediaError) {
        self.request = request
        self.cancellation = cancellation
        self.progress = progress
        if let last = request.segments.map(\.end).max(), last > request.limits.maxDecodedSeconds {
            throw MediaError(
                .tooLong, operation: "render", path: request.source,
                detail:
                    "the edit reaches \(DecodeLimits.describe(seconds: last.rounded(.up))), past the \(DecodeLimits.describe(seconds: request.limits.maxDecodedSeconds)) limit"
            )
        }
        limiter = DecodeGuard(request.limits, path: request.source)
        // One open: the probe's packet scan is undone by the seek each segment starts with.
        let size = try Probe.fileSize(request.source)
        input = try Probe.open(request.source, size: size, cancellation: cancellation)
        let info = try Probe.describe(input, fileSize: size)
        videoStream = try Probe.videoStream(input)
        audioStream = Probe.audioStream(input, video: videoStream.index)
        start = input.startSeconds
        rotation = info.video.rotation
        let (geometry, crop) = RenderSession.outputGeometry(info.video, request: request)
        self.crop = crop
        // The in-loop filters stay on even when downscaling 4K to 1080p: skipping them saves ~19 %
        // of an HEVC decode but the error builds up along a P-only GOP (measured on 4K HEVC
        // Main10 at 50 Mbit/s scaled to 1080p: SSIM Y 0.993, chroma 0.92-0.93, worst frame 0.948).
        video = try CodecContext.decoder(for: videoStream, path: request.source, threads: request.threads)
        if let audioStream {
            let decoder = try CodecContext.decoder(for: audioStream, path: request.source, threads: 1)
            audio = decoder
            resampler = try Resampler(
                input: decoder.pointer, outputRate: 48_000, outputChannels: 2, outputFormat: AV_SAMPLE_FMT_FLTP)
        } else {
            audio = nil
            resampler = nil
        }
        let frameRate = Renderer.outputFrameRate(
            average: videoStream.stream.pointee.avg_frame_rate, real: videoStream.stream.pointee.r_frame_rate,
            variable: info.video.isVariableFrameRate, maximum: request.maxFrameRate)
        plan = try EditPlan(
            ranges: request.segments, sourceDuration: info.duration, frameRate: frameRate,
            sampleRate: 48_000, crossfade: request.crossfade, path: request.source)
        segment = plan.segments[0]

        let par = videoStream.parameters.pointee
        let hdr: ToneMapper.Transfer? =
            par.color_trc == AVCOL_TRC_SMPTE2084 ? .pq : par.color_trc == AVCOL_TRC_ARIB_STD_B67 ? .hlg : nil
        converter = try VideoConverter(width: geometry.width, height: geometry.height, hdrTransfer: hdr)

        let settings = RenderSession.videoEncoding(
            geometry, frameRate: frameRate, rotation: rotation, source: par,
            toneMapped: hdr != nil, request: request)
        var audioSettings = AudioEncoding()
        audioSettings.bitRate = request.quality.audioBitRate
        writer = try MediaWriter(
            path: request.output, video: settings, audio: audioSettings, cancellation: cancellation)
        joiner = AudioJoiner(writer: writer, plan: plan, fade: request.audioFade)
        // Hard cuts and the whole picture only: a crossfade blends two segments' frames, and a
        // reframe's window follows a track fitted to the whole segment.
        if let reuse = request.reuse, request.crossfade == 0, request.reframe == nil,
            let opened = EarlierRender(
                path: reuse.path, width: geometry.width, height: geometry.height, frameRate: frameRate,
                rotation: info.video.rotation, extradata: writer.videoExtradata, cancellation: cancellation)
        {
            let pieces = ReusedSegments(plan: plan, earlier: reuse.segments, render: opened)
            earlier = pieces.isEmpty ? nil : opened
            reused = pieces
        } else {
            earlier = nil
            reused = nil
        }

        packet = try Packet()
        decoded = try Frame()
        current = try Frame()
        work = try Frame(width: geometry.width, height: geometry.height, format: AV_PIX_FMT_YUV420P)
        var held: [Frame] = []
        for _ in 0..<plan.crossfadeFrames {
            held.append(try Frame(width: geometry.width, height: geometry.height, format: AV_PIX_FMT_YUV420P))
        }
        hold = held
        audioFrame = try Frame()
        audioCapacity = 8192
        audioLeft = .allocate(capacity: audioCapacity)
        audioRight = .allocate(capacity: audioCapacity)
        audioPlanes = .allocate(capacity: 2)
    }

    /// The output's size: the source's display size within the quality's short side, or the
    /// reframe's window; and that window in stored pixels.
    static func outputGeometry(_ video: VideoStreamInfo, request: RenderRequest) -> (OutputGeometry, StoredCrop?) {
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
    static func videoEncoding(
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

    deinit {
        audioLeft.deallocate()
        audioRight.deallocate()
        audioPlanes.deallocate()
    }

    /// How long before a range's start every frame is decoded again (covers B-frame reordering).
    static let preRollMargin = 1.0

    var path: String { request.source }
    var frameDuration: Double { Double(plan.frameRate.den) / Double(plan.frameRate.num) }

    func run() throws(MediaError) -> RenderResult {
        report(0)
        for (index, s) in plan.segments.enumerated() {
            segmentIndex = index
            try renderSegment(s)
        }
        try joiner.flush()
        try writer.finish()
        report(1)
        let size = (try? Probe.fileSize(request.output)) ?? 0
        let fps = plan.frameRate
        return RenderResult(
            output: request.output, duration: plan.duration, width: converter.width, height: converter.height,
            rotation: rotation, frameRate: fps, frames: writer.videoFramesWritten,
            audioSamples: writer.audioSamplesWritten,
            fileSize: size,
            outputSegments: plan.segments.map {
                TimeRange(
                    start: Double($0.firstFrame) * frameDuration, end: Double($0.firstFrame + $0.frames) * frameDuration
                )
            },
            damagedPackets: damaged, copiedFrames: copiedFrames)
    }

    private func renderSegment(_ s: EditPlan.Segment) throws(MediaError) {
        segment = s
        slot = 0
        haveCurrent = false
        videoDone = false
        audioCursor = nil
        limiter = DecodeGuard(request.limits, path: path)
        current.unref()
        joiner.begin(s)
        try input.seek(stream: videoStream.index, to: MediaTime.timestamp(s.range.start + start, videoStream.timeBase))
        video.flushBuffers()
        // Pre-roll: frames between the keyframe and the range start are only references for what
        // follows, so frames nothing refers to are not decoded until just before the start. On a
        // P-only stream (phones) every frame is a reference: nothing is skipped, and the pre-roll
        // costs what the seek to the keyframe costs, half a GOP per segment on average.
        video.pointer.pointee.skip_frame = AVDISCARD_NONREF
        var preRoll = true
        audio?.flushBuffers()
        try resampler?.reset()
        if audio == nil { try joiner.pushSilence(s.samples) }
        // The earlier render's pictures for the piece it holds (the source is still read for the
        // sound, and decoded for the frames around the piece).
        duePiece = earlier == nil ? nil : reused?.pieces[segmentIndex]
        resumeVideoAt = nil
        try copyPieceIfDue()

        var reachedEnd = false
        while !(videoDone && joiner.remaining == 0) {
            try cancellation?.check("render", path: path)
            let more: Bool
            do { more = try input.read(into: packet) } catch {
                if error.kind == .cancelled { throw error }
                damaged += 1
                reachedEnd = true
                break
            }
            if !more { reachedEnd = true; break }
            defer { packet.unref() }
            let index = packet.streamIndex
            if index == videoStream.index {
                if packet.dts != MediaTime.noPTS { lastVideoDTS = packet.dts }
                try limiter.videoPacket(time: packetTime(videoStream).isFinite ? packetTime(videoStream) : nil)
                if preRoll,
                    packetTime(videoStream) >= s.sourceTime(ofSlot: slot, frameRate: plan.frameRate)
                        - RenderSession.preRollMargin
                {
                    video.pointer.pointee.skip_frame = AVDISCARD_DEFAULT
                    preRoll = false
                }
                if let resume = resumeVideoAt, !videoDone {
                    // Pictures the copied piece stands for are not decoded: from the keyframe
                    // before the rest of the segment on, the decoder starts afresh.
                    guard packet.dts != MediaTime.noPTS, packet.dts >= resume else { continue }
                    guard packet.isKeyframe else { continue }
                    video.flushBuffers()
                    resumeVideoAt = nil
                }
                if !videoDone {
                    try decodeVideo(packet)
                } else if joiner.remaining > 0, packetTime(videoStream) > s.range.end + 3 {
                    break
                }  // audio has a hole: pad it
            } else if let audioStream, index == audioStream.index, joiner.remaining > 0 {
                try decodeAudio(packet)
            }
        }
        video.pointer.pointee.skip_frame = AVDISCARD_DEFAULT
        if reachedEnd {
            if !videoDone { try decodeVideo(nil) }
            if audio != nil, joiner.remaining > 0 { try decodeAudio(nil) }
        }
        // The source ran out before the range did (its last frame is held).
        while slot < s.frames {
            try copyPieceIfDue()
            guard slot < s.frames else { break }
            guard haveCurrent else {
                throw MediaError(
                    .invalidRange, operation: "render", path: path,
                    detail: "no picture could be decoded for segment \(s.range) s")
            }
            try emit(current)
        }
        try joiner.pushSilence(joiner.remaining)
    }

    private func packetTime(_ stream: StreamHandle) -> Double {
        let ts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
        return ts == MediaTime.noPTS ? -Double.infinity : MediaTime.seconds(ts, stream.timeBase) - start
    }

    // MARK: Video

    private func decodeVideo(_ p: Packet?) throws(MediaError) {
        let rc = video.send(p)
        if FFmpegError.isDamage(rc) { damaged += 1; return }
        if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
            throw MediaError.ffmpeg(rc, "avcodec_send_packet (\(video.name))", path: path, context: video.logKey)
        }
        var failures = 0
        while !videoDone {
            let r = video.receive(decoded)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            if FFmpegError.isDamage(r) {
                damaged += 1
                failures += 1
                if failures > 16 { return }
                continue
            }
            try check(r, "avcodec_receive_frame (\(video.name))", path: path, context: video.logKey)
            try place(decoded)
        }
    }

    /// Fills every output slot whose time comes before this frame with the frame on screen then.
    private func place(_ frame: Frame) throws(MediaError) {
        defer { frame.unref() }
        if frame.isDamaged { damaged += 1 }
        let ts = frame.bestEffortTimestamp
        let stamped = ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, videoStream.timeBase) - start
        try limiter.videoFrame(time: stamped, width: frame.width, height: frame.height)
        guard let time = stamped else { return }
        let epsilon = 0.001
        while slot < segment.frames && segment.sourceTime(ofSlot: slot, frameRate: plan.frameRate) < time - epsilon {
            try copyPieceIfDue()
            guard slot < segment.frames, segment.sourceTime(ofSlot: slot, frameRate: plan.frameRate) < time - epsilon
            else { break }
            try emit(haveCurrent ? current : frame)
        }
        if slot >= segment.frames { videoDone = true; return }
        current.unref()
        av_frame_move_ref(current.pointer, frame.pointer)
        haveCurrent = true
    }

    /// Copies the segment's piece of the earlier render when the next slot is its first.
    private func copyPieceIfDue() throws(MediaError) {
        guard let earlier, let piece = duePiece, slot == piece.offset else { return }
        duePiece = nil
        try earlier.copy(
            first: piece.earlierFirst, count: piece.frames, to: segment.firstFrame + slot, writer: writer,
            path: request.source)
        copiedFrames += piece.frames
        framesDone += piece.frames
        slot += piece.frames
        if slot >= segment.frames {
            videoDone = true
        } else {
            // Decode again from the last keyframe before the frames after the piece (a margin
            // covers pictures shown after later-decoded ones), if that is ahead of the decoder.
            let resume = segment.sourceTime(ofSlot: slot, frameRate: plan.frameRate) - 0.1
            let ts = MediaTime.timestamp(max(0, resume) + start, videoStream.timeBase)
            if let entry = avformat_index_get_entry_from_timestamp(videoStream.stream, ts, AVSEEK_FLAG_BACKWARD),
                entry.pointee.flags & AVINDEX_KEYFRAME != 0, entry.pointee.timestamp > lastVideoDTS
            {
                resumeVideoAt = entry.pointee.timestamp
            }
        }
    }

    /// Encodes (or holds back for a crossfade) output slot `slot` showing `source`.
    private func emit(_ source: Frame) throws(MediaError) {
        let k = slot
        let pts = Int64(segment.firstFrame + k)
        let tailStart = segment.frames - segment.overlapOut
        let window = cropWindow(slot: k, of: source)
        // A hard cut starts an IDR frame: the segment can later be copied on its own.
        let keyframe = k == 0 && segment.overlapIn == 0
        if k < segment.overlapIn {
            try converter.convert(source, into: work, crop: window)
            VideoConverter.blend(work, with: hold[k], weight: Double(k + 1) / Double(segment.overlapIn + 1))
            try writer.write(work, pts: pts)
        } else if k >= tailStart {
            try converter.convert(source, into: hold[k - tailStart], crop: window)
        } else if window == nil, converter.passesThrough(source) {
            try writer.write(source, pts: pts, keyframe: keyframe)
        } else {
            try converter.convert(source, into: work, crop: window)
            try writer.write(work, pts: pts, keyframe: keyframe)
        }
        slot += 1
        if slot >= segment.frames { videoDone = true }
        framesDone += 1
        report(Double(framesDone) / Double(max(1, plan.totalFrames + plan.crossfadeFrames * (plan.segments.count - 1))))
    }

    /// The reframe's window for output slot `k` of the current segment (its track at the slot's
    /// source time), in the stored pixels of `source`; nil without a reframe.
    private func cropWindow(slot k: Int, of source: Frame) -> CropRect? {
        guard let crop, let reframe = request.reframe else { return nil }
        let track = reframe.tracks.isEmpty ? nil : reframe.tracks[min(segmentIndex, reframe.tracks.count - 1)]
        let center = track?.center(at: segment.sourceTime(ofSlot: k, frameRate: plan.frameRate)) ?? (x: 0.5, y: 0.5)
        var rect = crop.rect(centerX: center.x, centerY: center.y)
        // A picture whose size differs from the stream's (a mid-stream size change) is cropped in proportion.
        if source.width != crop.codedWidth || source.height != crop.codedHeight {
            let sx = Double(source.width) / Double(max(1, crop.codedWidth)),
                sy = Double(source.height) / Double(max(1, crop.codedHeight))
            rect = CropRect(
                x: min(source.width - 2, Int(Double(rect.x) * sx)) / 2 * 2,
                y: min(source.height - 2, Int(Double(rect.y) * sy)) / 2 * 2,
                width: 0, height: 0)
            rect.width = max(2, min(source.width - rect.x, Int(Double(crop.width) * sx)))
            rect.height = max(2, min(source.height - rect.y, Int(Double(crop.height) * sy)))
        }
        return rect
    }

    private func report(_ fraction: Double) {
        guard let progress else { return }
        let value = min(1, max(0, fraction))
        if value >= 1 || value - lastReported >= 0.005 {
            lastReported = value
            progress(value)
        }
    }

    // MARK: Audio

    private func decodeAudio(_ p: Packet?) throws(MediaError) {
        guard let audio, let resampler, let audioStream else { return }
        let rc = audio.send(p)
        if FFmpegError.isDamage(rc) { damaged += 1; return }
        if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
            throw MediaError.ffmpeg(rc, "avcodec_send_packet (\(audio.name))", path: path, context: audio.logKey)
        }
        var failures = 0
        while joiner.remaining > 0 {
            let r = audio.receive(audioFrame)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            if FFmpegError.isDamage(r) {
                damaged += 1
                failures += 1
                if failures > 16 { return }
                continue
            }
            try check(r, "avcodec_receive_frame (\(audio.name))", path: path, context: audio.logKey)
            defer { audioFrame.unref() }
            let ts = audioFrame.bestEffortTimestamp
            if ts != MediaTime.noPTS { try limiter.audio(time: MediaTime.seconds(ts, audioStream.timeBase) - start) }
            let needed = resampler.outputCapacity(forInput: audioFrame.sampleCount)
            if needed > audioCapacity {
                throw MediaError(
                    .ffmpeg, operation: "resample", path: path,
                    detail: "audio frame too long (\(audioFrame.sampleCount) samples)")
            }
            audioPlanes[0] = UnsafeMutableRawPointer(audioLeft).assumingMemoryBound(to: UInt8.self)
            audioPlanes[1] = UnsafeMutableRawPointer(audioRight).assumingMemoryBound(to: UInt8.self)
            let count = try resampler.convert(audioFrame, into: audioPlanes, capacity: audioCapacity)
            guard count > 0 else { continue }
            var position = audioCursor ?? 0
            if ts != MediaTime.noPTS {
                let stamped = Int(
                    ((MediaTime.seconds(ts, audioStream.timeBase) - start - segment.range.start) * 48_000).rounded())
                // Follow the stream's clock at the segment's start and across real gaps (> 50 ms).
                if audioCursor == nil || abs(stamped - position) > 2400 { position = stamped }
            }
            if position > joiner.position { try joiner.pushSilence(position - joiner.position) }
            let skip = max(0, joiner.position - position)
            if skip < count {
                try joiner.push(left: audioLeft + skip, right: audioRight + skip, count: count - skip)
            }
            audioCursor = position + count
        }
    }
}
