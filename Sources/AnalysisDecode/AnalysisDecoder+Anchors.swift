import MediaEngine
import CFFmpeg
import FFmpeg
import Foundation

/// The anchors plan's passes: every I- and P-frame (B-frames skipped), keyframe groups decoded side
/// by side; then the frames skipped inside chosen steps, decoded to place a cut on its exact frame.
///
/// A B-frame stream spends most of its decode on B-frames, and what is left, a chain of predicted
/// frames, keeps one core busy however many frame threads a decoder has. Keyframe groups decode
/// independently, so one single-threaded decoder per core, each on its own group, keeps every
/// core on the chain.
extension AnalysisDecoder {
    /// Bounds on one keyframe group held by the anchors pass: every packet of a group is read before
    /// it is decoded, so a stream whose keyframes are further apart than this is analysed on the
    /// full plan instead (`runAnchors` returns nil).
    public struct AnchorLimits: Sendable, Codable, Equatable {
        /// Video packets (600: 20 s at 30 fps, 10 s at 60).
        public var packets = 600
        /// Compressed bytes (48 MB: 10 s at 38 Mbit/s).
        public var bytes = 48 << 20
        /// Groups read ahead of the one being analysed, at most (groups differ in length: a long
        /// one decodes on one core while the other takes the shorter ones after it), and their
        /// compressed bytes together, at most.
        public var groupsAhead = 8
        public var bytesAhead = 64 << 20
        public init() {}
    }

    /// The anchors pass: every frame but B-frames, each keyframe group decoded on a worker thread
    /// (one per core, each a single-threaded decoder); `onFrame` and `onAudio` are called on the
    /// calling thread, in time order. A frame's `follows` is false when frames were skipped between
    /// it and the frame before (so `ShotDetector` saw a step of several frames there). Audio is
    /// decoded completely. Returns nil, having stopped, when a keyframe group exceeds `limits`: the
    /// caller starts over on the full plan, with fresh analysers.
    public func runAnchors(
        limits: AnchorLimits = AnchorLimits(), workers: Int = 0,
        onFrame: (borrowing AnalysisFrame) -> Void,
        onAudio: (borrowing AudioChunk) -> Void = { _ in }
    ) throws(MediaError) -> AnalysisSummary? {
        let pass = try GroupPass(self, plan: .anchors, workers: workers, skipFrame: AVDISCARD_BIDIR)
        defer { pass.stop() }
        for _ in 0..<max(pass.cores + 1, limits.groupsAhead) {
            pass.free.append(try GroupJob(packets: 0, pictures: 0, width: width, height: height, grows: true))
        }
        var bytesAhead = 0
        var frames = AnchorFrames(interval: options.maxFrameRate.map { 1 / max($0, 0.001) })

        func deliver() throws(MediaError) {
            let job = try pass.takeDecoded()
            job.packetTimes.sort()
            frames.beginGroup()
            for i in 0..<job.produced where try pass.accepts(job, frame: i) {
                guard let skipped = frames.take(job.times[i], last: pass.last, packetTimes: job.packetTimes) else {
                    continue
                }
                pass.deliver(
                    job, frame: i, follows: !skipped || pass.summary.framesAnalysed == 0, onFrame: onFrame)
            }
            frames.endGroup(last: pass.last, packetTimes: job.packetTimes)
            pass.summary.groups = job.index + 1
            bytesAhead -= job.bytes
            pass.free.append(job)
        }
        func endGroup() {
            bytesAhead += pass.current?.bytes ?? 0
            pass.submitCurrent()
        }

        let complete = try pass.readPackets(onAudio: onAudio) { packet, time throws(MediaError) in
            if packet.isKeyframe, let time, pass.keyTime.map({ time > $0 }) ?? true {
                endGroup()
                pass.keyTime = time
                while !pass.pending.isEmpty && (pass.free.isEmpty || bytesAhead > limits.bytesAhead) {
                    try deliver()
                }
                pass.beginGroup(at: time)
            }
            guard let job = pass.current else { return true }  // before the first keyframe: nothing decodable
            let size = Int(max(0, packet.pointer.pointee.size))
            guard job.count < limits.packets, job.bytes + size <= limits.bytes, let slot = try job.nextPacket()
            else { return false }  // a group too long to hold: the full plan instead
            try slot.ref(packet)
            job.count += 1
            job.bytes += size
            if let time, time.isFinite { job.packetTimes.append(time) }
            return true
        }
        guard complete else { return nil }
        endGroup()
        return try pass.finish(onAudio: onAudio, deliver: deliver)
    }

    /// Decodes the frames of each step (`from` and `to` are frames the anchors pass delivered with
    /// frames skipped between them): from the keyframe before `from`, I- and P-frames only up to
    /// `to`, then the B-frames shown between the two. Delivers the frames from `from` to `to`, in
    /// time order, with the step's index as `group`.
    @discardableResult
    public func runSteps(
        _ steps: [(from: Double, to: Double)], onFrame: (borrowing AnalysisFrame) -> Void
    ) throws(MediaError) -> AnalysisSummary {
        var summary = AnalysisSummary()
        summary.width = width
        summary.height = height
        guard !steps.isEmpty else { return summary }
        var stepOptions = options
        stepOptions.skipNonReferenceFrames = false
        stepOptions.skipBidirectionalFrames = true
        let (input, videoStream) = try openInput()
        // One thread: the decode switches from skipping B-frames to taking them at a chosen packet.
        let video = try AnalysisVideoPath(
            stream: videoStream, path: path, start: input.startSeconds, width: width, height: height,
            options: stepOptions, threads: 1)
        let packet = try Packet()
        for (index, step) in steps.enumerated() {
            var limiter = DecodeGuard(options.limits, path: path)
            try input.seek(
                stream: videoStream.index,
                to: MediaTime.timestamp(step.from + video.start + 0.0005, videoStream.timeBase))
            video.decoder.flushBuffers()
            video.decoder.pointer.pointee.skip_frame = AVDISCARD_BIDIR
            var last: Double?
            var takesAll = false
            func accept(_ time: Double) -> AnalysisVideoPath.Mark? {
                guard time >= step.from - 1e-6, time <= step.to + 1e-6, last.map({ time > $0 }) ?? true else {
                    return nil
                }
                defer { last = time }
                return AnalysisVideoPath.Mark(follows: last != nil, group: index)
            }
            while try nextPacket(input, into: packet, stage: "analysis refine") {
                defer { packet.unref() }
                guard packet.streamIndex == videoStream.index else { continue }
                let time = video.packetTime(packet)
                try limiter.videoPacket(time: time)
                // Past the step: the frames shown inside it were all sent (B-frames come right
                // after the frame they lead up to).
                if takesAll, let time, time > step.to + 1e-6 { break }
                if let time, time > step.to + 5 { break }
                try video.decode(packet, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
                if !takesAll, let time, abs(time - step.to) < 1e-4 {
                    takesAll = true
                    video.decoder.pointer.pointee.skip_frame = AVDISCARD_DEFAULT
                }
            }
            // The decoder holds reordered frames back: drain it, then start clean for the next step.
            try video.decode(nil, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
            video.decoder.flushBuffers()
        }
        return summary
    }

    /// Whether skipping B-frames leaves the I- and P-frames exactly as a full decode makes them.
    /// An encoder may let a P-frame refer to a B-frame (x265 does; x264 never does), and then
    /// every frame after a skipped one is built on a missing picture. Decodes the start of the
    /// first keyframe group that has B-frames (its first `packets` packets: a dozen runs of
    /// B-frames between anchors) twice, single-threaded, with and without them, and compares every
    /// picture the anchors decode makes with the full decode's, sample for sample (luma). False
    /// when they differ or nothing was skipped. About 0.1 s on 1080p H.264.
    public func anchorsDecodeExactly(packets: Int = 48) throws(MediaError) -> Bool {
        let (input, videoStream) = try openInput()
        var held: [Packet] = []
        var keyframes = 0
        var reordered = false
        var maxPTS = Int64.min
        let packet = try Packet()
        let limit = max(8, min(packets, 1_000))
        var scanned = 0
        while scanned < 20 * limit, try nextPacket(input, into: packet, stage: "analysis decode") {
            scanned += 1
            defer { packet.unref() }
            guard packet.streamIndex == videoStream.index else { continue }
            if packet.isKeyframe {
                if keyframes > 0 && reordered { break }  // the held start of a group has B-frames
                // The start held so far had none: the next group's instead.
                held.removeAll()
                maxPTS = Int64.min
                keyframes += 1
            }
            guard keyframes > 0, held.count < limit else {
                if reordered { break }
                continue
            }
            if packet.pts != MediaTime.noPTS {
                if packet.pts < maxPTS { reordered = true }
                maxPTS = max(maxPTS, packet.pts)
            }
            let copy = try Packet()
            try copy.ref(packet)
            held.append(copy)
        }
        guard reordered else { return false }
        func pictures(_ skip: AVDiscard) throws(MediaError) -> [Int64: UInt64] {
            let decoder = try CodecContext.decoder(for: videoStream, path: path, threads: 1) { c in
                c.pointee.skip_frame = skip
            }
            let frame = try Frame()
            var out: [Int64: UInt64] = [:]
            func receive() throws(MediaError) {
                while true {
                    let r = decoder.receive(frame)
                    if r == FFmpegError.again || r == FFmpegError.eof { return }
                    if FFmpegError.isDamage(r) { continue }
                    try check(r, "avcodec_receive_frame (\(decoder.name))", path: path, context: decoder.logKey)
                    defer { frame.unref() }
                    out[frame.bestEffortTimestamp] = Self.lumaHash(frame)
                }
            }
            for p in held {
                _ = decoder.send(p)
                try receive()
            }
            _ = decoder.send(nil as Packet?)
            try receive()
            return out
        }
        let full = try pictures(AVDISCARD_DEFAULT)
        let anchors = try pictures(AVDISCARD_BIDIR)
        guard !anchors.isEmpty, anchors.count < full.count else { return false }
        return anchors.allSatisfy { full[$0.key] == $0.value }
    }

    /// A hash of every luma sample of a decoded picture (8 or 16 bits a sample).
    private static func lumaHash(_ frame: Frame) -> UInt64 {
        guard let base = frame.data(0) else { return 0 }
        let stride = frame.linesize(0)
        let depth = av_pix_fmt_desc_get(frame.pixelFormat).map { Int($0.pointee.comp.0.depth) } ?? 8
        let bytes = min(stride, frame.width * (depth > 8 ? 2 : 1))
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for y in 0..<frame.height {
            let row = base + y * stride
            var x = 0
            while x + 8 <= bytes {
                let word = UnsafeRawPointer(row + x).loadUnaligned(as: UInt64.self)
                hash = (hash ^ word) &* 0x100_0000_01b3
                x += 8
            }
            while x < bytes {
                hash = (hash ^ UInt64(row[x])) &* 0x100_0000_01b3
                x += 1
            }
        }
        return hash
    }
}

/// Which frames of the anchors pass are delivered (at most `options.maxFrameRate`), and whether
/// frames were left out between one and the frame before it: packets of its group shown between
/// them, or left at the end of the group before.
struct AnchorFrames {
    let interval: Double?
    var nextTick = -Double.infinity
    /// A frame of the group before was left out after the last one delivered.
    var skippedAfterLast = false
    /// Packet times before this index are at or before the last frame delivered.
    var skippedUpTo = 0

    init(interval: Double?) { self.interval = interval }

    mutating func beginGroup() { skippedUpTo = 0 }

    /// For a frame at `time`: nil when the frame rate cap leaves it out, else whether frames were
    /// skipped before it.
    mutating func take(_ time: Double, last: Double?, packetTimes: [Double]) -> Bool? {
        if let interval {
            if nextTick == -Double.infinity { nextTick = time }
            if time + 1e-6 < nextTick { return nil }
            while nextTick <= time + 1e-6 { nextTick += interval }
        }
        var skipped = skippedAfterLast
        while skippedUpTo < packetTimes.count && packetTimes[skippedUpTo] < time - 1e-6 {
            if last.map({ packetTimes[skippedUpTo] > $0 + 1e-6 }) ?? true { skipped = true }
            skippedUpTo += 1
        }
        while skippedUpTo < packetTimes.count && packetTimes[skippedUpTo] <= time + 1e-6 { skippedUpTo += 1 }
        skippedAfterLast = false
        return skipped
    }

    /// After a group: were packets of it left after the last frame delivered?
    mutating func endGroup(last: Double?, packetTimes: [Double]) {
        if let last, packetTimes.last.map({ $0 > last + 1e-6 }) ?? false { skippedAfterLast = true }
    }
}
