import CFFmpeg
import FFmpeg
import Foundation

/// The sampled plan's passes: a survey of the first keyframe groups, the sampled pass over the
/// whole input, and the refinement of chosen ranges frame by frame.
extension AnalysisDecoder {
    /// Reads (never decodes) the video packets of the first `seconds` of the input, at most
    /// `maxPackets` of them, and reports how its keyframes are spaced.
    public func surveyGOPs(seconds: Double = 12, maxPackets: Int = 3000) throws(MediaError) -> GOPSurvey {
        let (input, video, _) = try open(decodeAudio: false, threads: 1)
        let packet = try Packet()
        var keys: [Double] = []
        var survey = GOPSurvey()
        var lastPTS: Int64?
        var first: Double?
        var count = 0
        while count < maxPackets {
            let more: Bool
            do { more = try input.read(into: packet) } catch {
                if error.kind == .cancelled { throw error }
                break
            }
            if !more { break }
            defer { packet.unref() }
            guard packet.streamIndex == video.stream.index else { continue }
            count += 1
            if packet.pts != MediaTime.noPTS {
                if let lastPTS, packet.pts < lastPTS { survey.reorders = true }
                lastPTS = packet.pts
            }
            guard let time = video.packetTime(packet) else { continue }
            if first == nil { first = time }
            survey.seconds = max(survey.seconds, time - (first ?? time))
            if packet.isKeyframe, keys.last.map({ time > $0 }) ?? true { keys.append(time) }
            if survey.seconds >= seconds && keys.count >= 3 { break }
        }
        if keys.count >= 2 {
            var gaps = zip(keys.dropFirst(), keys).map { $0 - $1 }.sorted()
            // The median, but a file that ends inside the survey keeps its one long group honest.
            if keys.count == 2, let only = gaps.first { gaps = [only] }
            survey.keyframeInterval = gaps[gaps.count / 2]
        } else if keys.count == 1, survey.seconds > 0 {
            survey.keyframeInterval = nil
        }
        return survey
    }

    /// The sampled pass: every keyframe and the `burstFrames` frames after it are decoded and
    /// analysed; the other packets of the group are only read (their sizes feed `onGroup`). Audio
    /// is decoded completely. Groups decode on worker threads, one per core, each with its own
    /// single-threaded decoder; `onFrame`, `onAudio` and `onGroup` are called on the calling
    /// thread, in time order (`onGroup` once per keyframe group, after its frames). `reorders`
    /// (from the survey) sends a few more packets per group, as B-frames come out late.
    /// `decodesGroup`, when given, is asked at each keyframe (its time): false leaves that group
    /// only read, not decoded (a look that wants some groups now and the others later).
    @discardableResult
    public func runSampled(
        burstFrames: Int, reorders: Bool = false, workers: Int = 0,
        decodesGroup: ((Double) -> Bool)? = nil,
        onFrame: (borrowing AnalysisFrame) -> Void,
        onAudio: (borrowing AudioChunk) -> Void = { _ in },
        onGroup: (GOPRecord) -> Void
    ) throws(MediaError) -> AnalysisSummary {
        let (input, videoStream) = try openInput()
        let audio = try audioPath(input, video: videoStream)
        let start = input.startSeconds
        let cores = workers > 0 ? workers : max(1, ProcessInfo.processInfo.activeProcessorCount)
        let pool = try GroupDecodeWorkers(
            stream: videoStream, path: path, start: start, width: width, height: height,
            options: options, workers: cores)
        defer { pool.stop() }
        var summary = AnalysisSummary()
        summary.width = width
        summary.height = height
        summary.plan = DecodePlan.Mode.sampled.rawValue
        summary.skippedLoopFilter = options.skipLoopFilter
        summary.groups = 0
        var limiter = DecodeGuard(options.limits, path: path)
        let packet = try Packet()

        let wanted = max(1, burstFrames) + 1
        let perGroup = wanted + (reorders ? 4 : 0)
        var free: [GroupJob] = []
        for _ in 0..<(2 * cores + 1) {
            free.append(try GroupJob(packets: perGroup, pictures: wanted, width: width, height: height))
        }
        var pending: [GroupJob] = []
        var current: GroupJob?
        var group = -1
        var keyTime: Double?
        var packetsInGroup = 0
        var last: Double?
        var sizes: [Int32] = []
        sizes.reserveCapacity(1024)
        let maxSizes = 4096
        let timeBase = videoStream.timeBase

        func deliver(_ job: GroupJob) throws(MediaError) {
            pool.wait(job)
            if let error = job.error { throw error }
            summary.framesDecoded += job.framesDecoded
            summary.damagedPackets += job.damaged
            for i in 0..<job.produced {
                let time = job.times[i]
                try limiter.videoFrame(time: time, width: job.decodedWidth, height: job.decodedHeight)
                if let last, time <= last { continue }
                last = time
                onFrame(
                    AnalysisFrame(
                        picture: job.pictures[i], index: summary.framesAnalysed, time: time,
                        follows: i > 0 || job.index == 0, group: job.index))
                if summary.firstFrameTime == nil { summary.firstFrameTime = time }
                summary.lastFrameTime = time
                summary.framesAnalysed += 1
            }
            if let record = job.record { onGroup(record) }
            summary.groups = job.index + 1
            free.append(job)
        }

        func endGroup() {
            guard let job = current else { return }
            var ratio = 0.0
            if sizes.count >= 4 {
                let largest = sizes.max() ?? 0
                sizes.sort()
                ratio = Double(largest) / Double(max(1, sizes[sizes.count / 2]))
            }
            job.record = GOPRecord(
                index: job.index, keyTime: job.keyTime, packets: packetsInGroup, largestPacketRatio: ratio,
                complete: job.count == packetsInGroup)
            pool.submit(job)
            pending.append(job)
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
                if let time, time.isFinite { summary.lastPacketTime = max(summary.lastPacketTime ?? time, time) }
                if packet.isKeyframe, let time, keyTime.map({ time > $0 }) ?? true {
                    endGroup()
                    keyTime = time
                    if let decodesGroup, !decodesGroup(time) { continue }  // read, not decoded
                    if free.isEmpty, !pending.isEmpty { try deliver(pending.removeFirst()) }
                    group += 1
                    packetsInGroup = 0
                    sizes.removeAll(keepingCapacity: true)
                    let job = free.removeLast()
                    job.reset(index: group, keyTime: time)
                    current = job
                }
                guard let job = current else { continue }  // before the first keyframe: nothing decodable
                packetsInGroup += 1
                if packetsInGroup > 1, sizes.count < maxSizes { sizes.append(packet.pointer.pointee.size) }
                if job.count < perGroup {
                    try job.packets[job.count].ref(packet)
                    job.count += 1
                }
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

    /// Decodes every frame of each range (in order; each range should start at a keyframe time),
    /// video only. Frames carry the range's index as `group`; the first of each range does not
    /// `follow`. `isFinished(i)` is asked before each frame of range `i` is decoded for delivery:
    /// true ends that range there (its caller has seen all it needs of it).
    @discardableResult
    public func runRanges(
        _ ranges: [TimeRange], isFinished: (Int) -> Bool = { _ in false },
        onFrame: (borrowing AnalysisFrame) -> Void
    ) throws(MediaError) -> AnalysisSummary {
        var summary = AnalysisSummary()
        summary.width = width
        summary.height = height
        guard !ranges.isEmpty else { return summary }
        // Every frame of a short range: one frame thread per core keeps both busy on the chain of
        // predicted frames without holding a picture per extra thread.
        let threads = options.threads > 0 ? options.threads : ProcessInfo.processInfo.activeProcessorCount
        let (input, video, _) = try open(decodeAudio: false, threads: threads, everyFrame: true)
        let packet = try Packet()
        for (index, range) in ranges.enumerated() {
            var limiter = DecodeGuard(options.limits, path: path)
            // Just after the keyframe's time, so rounding cannot land on the keyframe before it.
            try input.seek(
                stream: video.stream.index,
                to: MediaTime.timestamp(range.start + video.start + 0.0005, video.stream.timeBase))
            video.decoder.flushBuffers()
            var first = true
            var done = false
            var last: Double?
            func accept(_ time: Double) -> AnalysisVideoPath.Mark? {
                if time > range.end + 1e-6 || (!first && isFinished(index)) { done = true; return nil }
                guard time >= range.start - 1e-6, last.map({ time > $0 }) ?? true else { return nil }
                last = time
                defer { first = false }
                return AnalysisVideoPath.Mark(follows: !first, group: index)
            }
            var reachedEnd = false
            while !done {
                try cancellation?.check("analysis refine", path: path)
                let more: Bool
                do { more = try input.read(into: packet) } catch {
                    if error.kind == .cancelled { throw error }
                    reachedEnd = true
                    break
                }
                if !more { reachedEnd = true; break }
                defer { packet.unref() }
                guard packet.streamIndex == video.stream.index else { continue }
                let time = video.packetTime(packet)
                try limiter.videoPacket(time: time)
                // The next keyframe past the end: nothing after it is wanted, so it is not decoded.
                if packet.isKeyframe, let time, time > range.end + 1e-6 { reachedEnd = true; break }
                try video.decode(packet, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
                // Frame threads hold frames back: stop reading well past the end regardless.
                if let time, time > range.end + 2 { break }
            }
            if reachedEnd && !done {
                try video.decode(nil, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
            }
        }
        video.decoder.flushBuffers()
        return summary
    }
}
