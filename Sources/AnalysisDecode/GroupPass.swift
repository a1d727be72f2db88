import MediaEngine
import CFFmpeg
import FFmpeg
import Foundation

/// The decode-loop skeleton the anchors and the sampled passes share: the input and its audio,
/// one worker thread per core decoding keyframe groups, the packet loop (limits on packets,
/// damaged packets, audio decoded on the calling thread, a read error after the first group ending
/// the pass early), the groups handed to the workers and delivered back in order, and the
/// summary. What differs (which packets a group holds, which frames are delivered and whether they
/// follow the one before) stays with each pass.
final class GroupPass {
    let decoder: AnalysisDecoder
    let input: FormatInput
    let video: StreamHandle
    let audio: AudioPath?
    /// The input's start time: frame and packet times are seconds after it.
    let start: Double
    let pool: GroupDecodeWorkers
    let cores: Int
    var summary = AnalysisSummary()
    var limiter: DecodeGuard
    let packet: Packet
    /// Groups free to fill, handed to the workers (oldest first), and the one being filled.
    var free: [GroupJob] = []
    var pending: [GroupJob] = []
    var current: GroupJob?
    /// Index of the group being filled (-1 before the first keyframe) and its keyframe's time.
    var group = -1
    var keyTime: Double?
    /// Time of the last frame delivered.
    var last: Double?

    init(_ decoder: AnalysisDecoder, plan: DecodePlan.Mode, workers: Int, skipFrame: AVDiscard) throws(MediaError) {
        self.decoder = decoder
        (input, video) = try decoder.openInput()
        audio = try decoder.audioPath(input, video: video)
        start = input.startSeconds
        cores = workers > 0 ? workers : max(1, ProcessInfo.processInfo.activeProcessorCount)
        pool = try GroupDecodeWorkers(
            stream: video, path: decoder.path, start: start, width: decoder.width, height: decoder.height,
            options: decoder.options, workers: cores, skipFrame: skipFrame)
        summary.width = decoder.width
        summary.height = decoder.height
        summary.plan = plan.rawValue
        summary.skippedLoopFilter = decoder.options.skipLoopFilter
        summary.groups = 0
        limiter = DecodeGuard(decoder.options.limits, path: decoder.path)
        packet = try Packet()
    }

    func stop() { pool.stop() }

    /// Reads every packet: a video packet goes to `onVideo` with its time (after the packet
    /// limits), an audio packet is decoded. `onVideo` returning false stops the pass: false.
    func readPackets(
        onAudio: (borrowing AudioChunk) -> Void, onVideo: (Packet, Double?) throws(MediaError) -> Bool
    ) throws(MediaError) -> Bool {
        // A read error once a group has started ends the pass early: what was read is analysed.
        let survives = { (_: MediaError) -> Bool in
            guard self.group >= 0 else { return false }
            self.summary.endedEarly = true
            return true
        }
        let timeBase = video.timeBase
        while try decoder.nextPacket(input, into: packet, stage: "analysis decode", survives: survives) {
            defer { packet.unref() }
            if packet.isCorrupt { summary.damagedPackets += 1 }
            if packet.streamIndex == video.index {
                let ts = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
                let time = ts == MediaTime.noPTS ? nil : MediaTime.seconds(ts, timeBase) - start
                try limiter.videoPacket(time: time)
                guard try onVideo(packet, time) else { return false }
            } else if let audio, packet.streamIndex == audio.streamIndex {
                try audio.decode(packet, start: start, summary: &summary, limiter: &limiter, onAudio: onAudio)
            }
        }
        return true
    }

    /// A new group from the free ones, at keyframe `time`.
    func beginGroup(at time: Double) {
        group += 1
        let job = free.removeLast()
        job.reset(index: group, keyTime: time)
        current = job
    }

    /// The group being filled goes to the workers.
    func submitCurrent() {
        guard let job = current else { return }
        pool.submit(job)
        pending.append(job)
        current = nil
    }

    /// The oldest group handed out, once decoded, with its counters added (its decode's error
    /// thrown).
    func takeDecoded() throws(MediaError) -> GroupJob {
        let job = pending.removeFirst()
        pool.wait(job)
        if let error = job.error { throw error }
        summary.framesDecoded += job.framesDecoded
        summary.damagedPackets += job.damaged
        return job
    }

    /// Frame `i` of `job` checked against the decoded-data limits; false when it is not after the
    /// last frame delivered (a reordered or repeated time).
    func accepts(_ job: GroupJob, frame i: Int) throws(MediaError) -> Bool {
        let time = job.times[i]
        try limiter.videoFrame(time: time, width: job.decodedWidth, height: job.decodedHeight)
        if let last, time <= last { return false }
        return true
    }

    /// Hands frame `i` of `job` to `onFrame` and counts it.
    func deliver(
        _ job: GroupJob, frame i: Int, follows: Bool, onFrame: (borrowing AnalysisFrame) -> Void
    ) {
        let time = job.times[i]
        last = time
        onFrame(
            AnalysisFrame(
                picture: job.pictures[i], index: summary.framesAnalysed, time: time, follows: follows,
                group: job.index))
        if summary.firstFrameTime == nil { summary.firstFrameTime = time }
        summary.lastFrameTime = time
        summary.framesAnalysed += 1
    }

    /// The end of the input: the last group decoded and delivered, the audio flushed.
    func finish(
        onAudio: (borrowing AudioChunk) -> Void, deliver: () throws(MediaError) -> Void
    ) throws(MediaError) -> AnalysisSummary {
        while !pending.isEmpty { try deliver() }
        try audio?.decode(nil, start: start, summary: &summary, limiter: &limiter, onAudio: onAudio)
        try decoder.cancellation?.check("analysis decode", path: decoder.path)
        return summary
    }
}
