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
        let (input, videoStream) = try openInput()
        let audio = try audioPath(input, video: videoStream)
        let start = input.startSeconds
        let cores = workers > 0 ? workers : max(1, ProcessInfo.processInfo.activeProcessorCount)
        let pool = try GroupDecodeWorkers(
            stream: videoStream, path: path, start: start, width: width, height: height,
            options: options, workers: cores, skipFrame: AVDISCARD_BIDIR)
        defer { pool.stop() }
        var summary = AnalysisSummary()
        summary.width = width
        summary.height = height
        summary.plan = DecodePlan.Mode.anchors.rawValue
        summary.skippedLoopFilter = options.skipLoopFilter
        summary.groups = 0
        var limiter = DecodeGuard(options.limits, path: path)
        let packet = try Packet()
        var free: [GroupJob] = []
        for _ in 0..<max(cores + 1, limits.groupsAhead) {
            free.append(try GroupJob(packets: 0, pictures: 0, width: width, height: height, grows: true))
        }
        var bytesAhead = 0
        var pending: [GroupJob] = []
        var current: GroupJob?
        var group = -1
        var keyTime: Double?
        let timeBase = videoStream.timeBase
        let interval = options.maxFrameRate.map { 1 / max($0, 0.001) }
        var nextTick = -Double.infinity
        var last: Double?
        // A frame of the group before was left out after the last one delivered.
        var skippedAfterLast = false

        func deliver(_ job: GroupJob) throws(MediaError) {
            pool.wait(job)
            if let error = job.error { throw error }
            summary.framesDecoded += job.framesDecoded
            summary.damagedPackets += job.damaged
            job.packetTimes.sort()
            var skippedUpTo = 0  // packet times before this index are at or before `last`
            for i in 0..<job.produced {
                let time = job.times[i]
                try limiter.videoFrame(time: time, width: job.decodedWidth, height: job.decodedHeight)
                if let last, time <= last { continue }
                if let interval {
                    if nextTick == -Double.infinity { nextTick = time }
                    if time + 1e-6 < nextTick { continue }
                    while nextTick <= time + 1e-6 { nextTick += interval }
                }
                // Packets of this group shown between the last frame delivered and this one.
                var skipped = skippedAfterLast
                while skippedUpTo < job.packetTimes.count && job.packetTimes[skippedUpTo] < time - 1e-6 {
                    if last.map({ job.packetTimes[skippedUpTo] > $0 + 1e-6 }) ?? true { skipped = true }
                    skippedUpTo += 1
                }
                while skippedUpTo < job.packetTimes.count && job.packetTimes[skippedUpTo] <= time + 1e-6 {
                    skippedUpTo += 1
                }
                skippedAfterLast = false
                last = time
                onFrame(
                    AnalysisFrame(
                        picture: job.pictures[i], index: summary.framesAnalysed, time: time,
                        follows: !skipped || summary.framesAnalysed == 0, group: job.index))
                if summary.firstFrameTime == nil { summary.firstFrameTime = time }
                summary.lastFrameTime = time
                summary.framesAnalysed += 1
            }
            if let last, job.packetTimes.last.map({ $0 > last + 1e-6 }) ?? false { skippedAfterLast = true }
            summary.groups = job.index + 1
            bytesAhead -= job.bytes
            free.append(job)
        }

        func endGroup() {
            guard let job = current else { return }
            pool.submit(job)
            pending.append(job)
            bytesAhead += job.bytes
            current = nil
        }

        // A read error once a group has started ends the pass early: what was read is analysed.
        let survives = { (_: MediaError) -> Bool in
            guard group >= 0 else { return false }
            summary.endedEarly = true
            return true
        }
        while try nextPacket(input, into: packet, stage: "analysis decode", survives: survives) {
            defer { packet.unref() }
            if packet.isCorrupt { summary.damagedPackets += 1 }
            if packet.streamIndex == videoStream.index {
                let ts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
                let time = ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, timeBase) - start
                try limiter.videoPacket(time: time)
                if packet.isKeyframe, let time, keyTime.map({ time > $0 }) ?? true {
                    endGroup()
                    keyTime = time
                    while !pending.isEmpty && (free.isEmpty || bytesAhead > limits.bytesAhead) {
                        try deliver(pending.removeFirst())
                    }
                    group += 1
                    let job = free.removeLast()
                    job.reset(index: group, keyTime: time)
                    current = job
                }
                guard let job = current else { continue }  // before the first keyframe: nothing decodable
                let size = Int(max(0, packet.pointer.pointee.size))
                guard job.count < limits.packets, job.bytes + size <= limits.bytes,
                    let slot = try job.nextPacket()
                else { return nil }  // a group too long to hold: the full plan instead
                try slot.ref(packet)
                job.count += 1
                job.bytes += size
                if let time, time.isFinite { job.packetTimes.append(time) }
            } else if let audio, packet.streamIndex == audio.streamIndex {
                try audio.decode(packet, start: start, summary: &summary, limiter: &limiter, onAudio: onAudio)
            }
        }
        endGroup()
        while !pending.isEmpty { try deliver(pending.removeFirst()) }
        try audio?.decode(nil, start: start, summary: &summary, limiter: &limiter, onAudio: onAudio)
        try cancellation?.check("analysis decode", path: path)
        return summary
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
