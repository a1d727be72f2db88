import MediaEngine
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
        let pass = try GroupPass(self, plan: .sampled, workers: workers, skipFrame: AVDISCARD_DEFAULT)
        defer { pass.stop() }
        let wanted = max(1, burstFrames) + 1
        let perGroup = wanted + (reorders ? 4 : 0)
        for _ in 0..<(2 * pass.cores + 1) {
            pass.free.append(try GroupJob(packets: perGroup, pictures: wanted, width: width, height: height))
        }
        var shape = GroupShape()

        func deliver() throws(MediaError) {
            let job = try pass.takeDecoded()
            for i in 0..<job.produced where try pass.accepts(job, frame: i) {
                pass.deliver(job, frame: i, follows: i > 0 || job.index == 0, onFrame: onFrame)
            }
            if let record = job.record { onGroup(record) }
            pass.summary.groups = job.index + 1
            pass.free.append(job)
        }
        func endGroup() {
            guard let job = pass.current else { return }
            job.record = shape.record(of: job)
            pass.submitCurrent()
        }

        _ = try pass.readPackets(onAudio: onAudio) { packet, time throws(MediaError) in
            if let time, time.isFinite {
                pass.summary.lastPacketTime = max(pass.summary.lastPacketTime ?? time, time)
            }
            if packet.isKeyframe, let time, pass.keyTime.map({ time > $0 }) ?? true {
                endGroup()
                pass.keyTime = time
                if let decodesGroup, !decodesGroup(time) { return true }  // read, not decoded
                if pass.free.isEmpty, !pass.pending.isEmpty { try deliver() }
                shape.reset()
                pass.beginGroup(at: time)
            }
            guard let job = pass.current else { return true }  // before the first keyframe: nothing decodable
            shape.add(packet)
            if job.count < perGroup {
                try job.packets[job.count].ref(packet)
                job.count += 1
            }
            return true
        }
        endGroup()
        return try pass.finish(onAudio: onAudio, deliver: deliver)
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

/// The shape of the keyframe group being read in the sampled pass: its packets, and how the
/// largest compares with the median (a scene change inside the group shows as one large packet).
struct GroupShape {
    var packets = 0
    var sizes: [Int32] = []
    static let maxSizes = 4096

    init() { sizes.reserveCapacity(1024) }

    mutating func reset() {
        packets = 0
        sizes.removeAll(keepingCapacity: true)
    }

    /// Another packet of the group (the keyframe's size is not compared).
    mutating func add(_ packet: Packet) {
        packets += 1
        if packets > 1, sizes.count < Self.maxSizes { sizes.append(packet.pointer.pointee.size) }
    }

    /// The group's record once it ends.
    mutating func record(of job: GroupJob) -> GOPRecord {
        var ratio = 0.0
        if sizes.count >= 4 {
            let largest = sizes.max() ?? 0
            sizes.sort()
            ratio = Double(largest) / Double(max(1, sizes[sizes.count / 2]))
        }
        return GOPRecord(
            index: job.index, keyTime: job.keyTime, packets: packets, largestPacketRatio: ratio,
            complete: job.count == packets)
    }
}
