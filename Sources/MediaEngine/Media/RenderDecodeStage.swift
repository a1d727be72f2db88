import CFFmpeg
import FFmpeg
import Foundation

/// The render's first stage: seeks to each segment, demuxes and decodes it, and hands on, in
/// output order, the source picture of every output slot and the segment's sound (laid by the
/// joiner). Owns the demuxer, the decoders and the joiner.
package final class RenderDecodeStage {
    package let request: RenderRequest
    package let cancellation: CancellationToken?
    package let input: FormatInput
    package let videoStream: StreamHandle
    package let video: CodecContext
    /// The sound's decoder and resampler (nil: the source is silent).
    package let sound: SegmentSound?
    package let plan: EditPlan
    package let queues: RenderQueues
    package let joiner: AudioJoiner
    package let start: Double
    // Reused per-frame objects.
    package let packet: Packet
    package let decoded: Frame
    package let current: Frame
    private var videoDamaged = 0
    /// Damaged packets and frames skipped over.
    package var damaged: Int { videoDamaged + (sound?.damaged ?? 0) }
    /// Within the current segment.
    package var segment: EditPlan.Segment
    package var slot = 0
    package var haveCurrent = false
    package var videoDone = false
    /// The current segment's decode bounds (reset at each segment's seek).
    package var limiter: DecodeGuard
    /// The reframe's window in stored pixels, and the segment being rendered (its track).
    package let crop: StoredCrop?
    package var segmentIndex = 0
    /// Where each new segment lies in the earlier render (nil when nothing is copied).
    package let reused: ReusedSegments?
    private(set) var copiedFrames = 0
    /// The current segment's piece of the earlier render, until it is copied.
    package var duePiece: ReusedSegments.Piece?
    /// After a copied piece: video packets are not decoded until this keyframe (its decode
    /// timestamp), the last one before the frames the segment still has to encode.
    package var resumeVideoAt: Int64?
    package var lastVideoDTS = Int64.min

    package init(
        _ source: RenderSource, request: RenderRequest, crop: StoredCrop?, reused: ReusedSegments?,
        queues: RenderQueues, cancellation: CancellationToken?
    ) throws(MediaError) {
        self.request = request
        self.cancellation = cancellation
        input = source.input
        videoStream = source.videoStream
        video = source.video
        sound = source.sound
        plan = source.plan
        start = source.start
        self.crop = crop
        self.reused = reused
        self.queues = queues
        segment = source.plan.segments[0]
        limiter = DecodeGuard(request.limits, path: request.source)
        packet = try Packet()
        decoded = try Frame()
        current = try Frame()
        joiner = AudioJoiner(
            sink: AudioJoiner.Sink(
                free: { () throws(MediaError) -> AudioBlock in try queues.freeAudio.pop() },
                send: { (block: AudioBlock) throws(MediaError) in try queues.decoded.push(.audio(block)) }),
            plan: source.plan, fade: request.audioFade)
    }

    /// How long before a range's start every frame is decoded again (covers B-frame reordering).
    package static let preRollMargin = 1.0

    package var path: String { request.source }

    package func run() throws(MediaError) {
        for (index, s) in plan.segments.enumerated() {
            segmentIndex = index
            try renderSegment(s)
        }
        try joiner.flush()
        try queues.decoded.push(.end)
    }

    private func renderSegment(_ s: EditPlan.Segment) throws(MediaError) {
        segment = s
        slot = 0
        haveCurrent = false
        videoDone = false
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
        try sound?.reset()
        if sound == nil { try joiner.pushSilence(s.samples) }
        // The earlier render's pictures for the piece it holds (the source is still read for the
        // sound, and decoded for the frames around the piece).
        duePiece = reused?.pieces[segmentIndex]
        resumeVideoAt = nil
        try copyPieceIfDue()

        let reachedEnd = try readSegment(s)
        video.pointer.pointee.skip_frame = AVDISCARD_DEFAULT
        if reachedEnd {
            if !videoDone { try decodeVideo(nil) }
            if let sound, joiner.remaining > 0 {
                try sound.decode(nil, into: joiner, segmentStart: s.range.start, limiter: &limiter)
            }
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
            try emit(current, consume: false)
        }
        current.unref()
        try joiner.pushSilence(joiner.remaining)
    }

    /// Reads and decodes the segment's packets until its pictures and sound are complete; true
    /// when the source ended (or broke off) first.
    private func readSegment(_ s: EditPlan.Segment) throws(MediaError) -> Bool {
        var preRoll = true
        while !(videoDone && joiner.remaining == 0) {
            try cancellation?.check("render", path: path)
            if queues.stop.isStopped { throw RenderStop.stopped }
            let more: Bool
            do { more = try input.read(into: packet) } catch {
                if error.kind == .cancelled { throw error }
                videoDamaged += 1
                return true
            }
            if !more { return true }
            defer { packet.unref() }
            let index = packet.streamIndex
            if index == videoStream.index {
                if packet.dts != MediaTime.noPTS { lastVideoDTS = packet.dts }
                try limiter.videoPacket(time: packetTime(videoStream).isFinite ? packetTime(videoStream) : nil)
                if preRoll,
                    packetTime(videoStream) >= s.sourceTime(ofSlot: slot, frameRate: plan.frameRate)
                        - RenderDecodeStage.preRollMargin
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
                    return false
                }  // audio has a hole: pad it
            } else if let sound, index == sound.stream.index, joiner.remaining > 0 {
                try sound.decode(packet, into: joiner, segmentStart: s.range.start, limiter: &limiter)
            }
        }
        return false
    }

    package func packetTime(_ stream: StreamHandle) -> Double {
        let ts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
        return ts == MediaTime.noPTS ? -Double.infinity : MediaTime.seconds(ts, stream.timeBase) - start
    }

    // MARK: Video

    private func decodeVideo(_ p: Packet?) throws(MediaError) {
        let rc = video.send(p)
        if FFmpegError.isDamage(rc) { videoDamaged += 1; return }
        if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
            throw MediaError.ffmpeg(rc, "avcodec_send_packet (\(video.name))", path: path, context: video.logKey)
        }
        var failures = 0
        while !videoDone {
            let r = video.receive(decoded)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            if FFmpegError.isDamage(r) {
                videoDamaged += 1
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
        if frame.isDamaged { videoDamaged += 1 }
        let ts = frame.bestEffortTimestamp
        let stamped = ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, videoStream.timeBase) - start
        try limiter.videoFrame(time: stamped, width: frame.width, height: frame.height)
        guard let time = stamped else { return }
        let epsilon = 0.001
        func due(_ k: Int) -> Bool {
            k < segment.frames && segment.sourceTime(ofSlot: k, frameRate: plan.frameRate) < time - epsilon
        }
        while due(slot) {
            try copyPieceIfDue()
            guard due(slot) else { break }
            if haveCurrent {
                // The picture on screen until this one moves on with the last slot it fills.
                let last = !due(slotAfter(slot))
                try emit(current, consume: last)
                if last { haveCurrent = false }
            } else {
                try emit(frame, consume: false)
            }
        }
        if slot >= segment.frames { videoDone = true; return }
        current.unref()
        av_frame_move_ref(current.pointer, frame.pointer)
        haveCurrent = true
    }

    /// The slot filled after slot `k`: past the earlier render's piece if that starts next.
    private func slotAfter(_ k: Int) -> Int {
        if let piece = duePiece, k + 1 == piece.offset { return k + 1 + piece.frames }
        return k + 1
    }

    /// Hands on the copy of the segment's piece of the earlier render when the next slot is its first.
    private func copyPieceIfDue() throws(MediaError) {
        guard let piece = duePiece, slot == piece.offset else { return }
        duePiece = nil
        try queues.decoded.push(.copy(first: piece.earlierFirst, count: piece.frames, to: segment.firstFrame + slot))
        copiedFrames += piece.frames
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

    /// Hands on output slot `slot` showing `source`: moved (`consume`) or as a new reference to
    /// the same decoded picture, in a free shell.
    private func emit(_ source: Frame, consume: Bool) throws(MediaError) {
        let k = slot
        let tailStart = segment.frames - segment.overlapOut
        let window = cropWindow(slot: k, of: source)
        let shell = try queues.freeSources.pop()
        if consume {
            av_frame_move_ref(shell.pointer, source.pointer)
        } else {
            try check(av_frame_ref(shell.pointer, source.pointer), "av_frame_ref")
        }
        let blend: RenderPicture.Blend =
            k < segment.overlapIn
            ? .into(index: k, weight: Double(k + 1) / Double(segment.overlapIn + 1))
            : k >= tailStart ? .hold(index: k - tailStart) : .none
        // A hard cut starts an IDR frame: the segment can later be copied on its own.
        let picture = RenderPicture(
            frame: shell, pts: Int64(segment.firstFrame + k), keyframe: k == 0 && segment.overlapIn == 0,
            crop: window, blend: blend, converted: false)
        try queues.decoded.push(.picture(picture))
        slot += 1
        if slot >= segment.frames { videoDone = true }
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
}
