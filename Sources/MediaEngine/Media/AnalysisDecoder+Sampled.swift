import CFFmpeg
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
    /// is decoded completely. `onGroup` is called once per keyframe group, after its frames.
    @discardableResult
    public func runSampled(burstFrames: Int, onFrame: (borrowing AnalysisFrame) -> Void,
                           onAudio: (borrowing AudioChunk) -> Void = { _ in },
                           onGroup: (GOPRecord) -> Void) throws(MediaError) -> AnalysisSummary {
        // Few frames per group are decoded and the decoder is drained after each: frame threads
        // beyond the burst would only decode packets thrown away.
        let threads = options.threads > 0 ? options.threads : max(1, min(burstFrames + 1, ProcessInfo.processInfo.activeProcessorCount))
        let (input, video, audio) = try open(threads: threads, everyFrame: true)
        var summary = AnalysisSummary()
        summary.width = width
        summary.height = height
        summary.plan = DecodePlan.Mode.sampled.rawValue
        summary.skippedLoopFilter = options.skipLoopFilter
        summary.groups = 0
        var limiter = DecodeGuard(options.limits, path: path)
        let packet = try Packet()

        let wanted = max(1, burstFrames) + 1
        var group = -1
        var keyTime = 0.0
        var packetsInGroup = 0
        var sentInGroup = 0
        var emittedInGroup = 0
        var skippedSinceEmit = false
        var last: Double?
        var sizes: [Int32] = []
        sizes.reserveCapacity(1024)
        let maxSizes = 4096

        func accept(_ time: Double) -> AnalysisVideoPath.Mark? {
            guard group >= 0, time >= keyTime - 1e-6, emittedInGroup < wanted else { skippedSinceEmit = true; return nil }
            if let last, time <= last { return nil }
            last = time
            emittedInGroup += 1
            let mark = AnalysisVideoPath.Mark(follows: !skippedSinceEmit, group: group)
            skippedSinceEmit = false
            return mark
        }

        func endGroup() throws(MediaError) {
            guard group >= 0 else { return }
            let complete = sentInGroup == packetsInGroup
            if sentInGroup > 0 {
                // Drain what was sent (frame threads hold frames back), then reset: the next
                // group starts at its keyframe.
                try video.decode(nil, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
                video.decoder.flushBuffers()
            }
            if !complete { skippedSinceEmit = true }
            var ratio = 0.0
            if sizes.count >= 4 {
                let largest = sizes.max() ?? 0
                sizes.sort()
                let median = max(1, sizes[sizes.count / 2])
                ratio = Double(largest) / Double(median)
            }
            onGroup(GOPRecord(index: group, keyTime: keyTime, packets: packetsInGroup, largestPacketRatio: ratio, complete: complete))
            summary.groups = group + 1
        }

        while true {
            try cancellation?.check("analysis decode", path: path)
            let more: Bool
            do { more = try input.read(into: packet) } catch {
                if error.kind == .cancelled || summary.framesDecoded == 0 && group < 0 { throw error }
                summary.endedEarly = true
                break
            }
            if !more { break }
            defer { packet.unref() }
            if packet.isCorrupt { summary.damagedPackets += 1 }
            if packet.streamIndex == video.stream.index {
                let time = video.packetTime(packet)
                try limiter.videoPacket(time: time)
                if let time, time.isFinite { summary.lastPacketTime = max(summary.lastPacketTime ?? time, time) }
                if packet.isKeyframe, let time, group < 0 || time > keyTime {
                    try endGroup()
                    group += 1
                    keyTime = time
                    packetsInGroup = 0
                    sentInGroup = 0
                    emittedInGroup = 0
                    sizes.removeAll(keepingCapacity: true)
                }
                guard group >= 0 else { continue } // before the first keyframe: nothing decodable
                packetsInGroup += 1
                if packetsInGroup > 1, sizes.count < maxSizes { sizes.append(packet.pointer.pointee.size) }
                // The burst's packets; with reordering (B-frames) a few more, until the burst is out.
                let reorders = video.decoder.pointer.pointee.has_b_frames > 0
                if sentInGroup < wanted || reorders && emittedInGroup < wanted && sentInGroup < wanted + 8 {
                    sentInGroup += 1
                    try video.decode(packet, summary: &summary, limiter: &limiter, accept: accept, deliver: onFrame)
                }
            } else if let audio, packet.streamIndex == audio.streamIndex {
                try audio.decode(packet, start: video.start, summary: &summary, limiter: &limiter, onAudio: onAudio)
            }
        }
        try endGroup()
        try audio?.decode(nil, start: video.start, summary: &summary, limiter: &limiter, onAudio: onAudio)
        try cancellation?.check("analysis decode", path: path)
        return summary
    }

    /// Decodes every frame of each range (in order; each range should start at a keyframe time),
    /// video only. Frames carry the range's index as `group`; the first of each range does not
    /// `follow`.
    @discardableResult
    public func runRanges(_ ranges: [TimeRange], onFrame: (borrowing AnalysisFrame) -> Void) throws(MediaError) -> AnalysisSummary {
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
            try input.seek(stream: video.stream.index, to: MediaTime.timestamp(range.start + video.start + 0.0005, video.stream.timeBase))
            video.decoder.flushBuffers()
            var first = true
            var done = false
            var last: Double?
            func accept(_ time: Double) -> AnalysisVideoPath.Mark? {
                if time > range.end + 1e-6 { done = true; return nil }
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
