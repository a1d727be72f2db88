import CFFmpeg
import FFmpeg
import Foundation

/// Renders an edit list by copying the source's coded pictures (no video decode, no encode): the
/// highlight keeps the source's codec, profile, size, bit depth, colour and HDR metadata. Each
/// segment must start on a keyframe; it ends where `CopyPlan` finds a clean cut. The sound is
/// decoded, cut to the sample at each segment's first and last picture, faded for 10 ms at the
/// joins and encoded (AAC 48 kHz stereo), so it stays in step with the pictures at every join.
public enum CopyRenderer {
    public static func render(
        _ request: RenderRequest, table: PacketTable, cancellation: CancellationToken? = nil,
        progress: ((Double) -> Void)? = nil
    ) throws(MediaError) -> RenderResult {
        if let last = request.segments.map(\.end).max(), last > request.limits.maxDecodedSeconds {
            throw MediaError(
                .tooLong, operation: "render", path: request.source,
                detail: "the edit reaches \(Int(last.rounded(.up))) s, past the limit")
        }
        let runs = try CopyPlan.runs(table, ranges: request.segments, path: request.source)
        let session = try CopySession(request, table: table, runs: runs, cancellation: cancellation)
        return try session.run(progress: progress)
    }
}

/// One copy render: the demuxer the pictures are copied from, a second demuxer and decoder for the
/// sound (each reads its own position in the file), and the writer.
package final class CopySession {
    package let request: RenderRequest
    package let table: PacketTable
    package let runs: [CopyRun]
    package let cancellation: CancellationToken?
    private let input: FormatInput
    private let video: StreamHandle
    private let info: MediaInfo
    private let soundInput: FormatInput?
    private let sound: SegmentSound?
    private let writer: CopyWriter
    private let packet: Packet
    private let block = AudioBlock()
    private var limiter: DecodeGuard

    package init(_ request: RenderRequest, table: PacketTable, runs: [CopyRun], cancellation: CancellationToken?)
        throws(MediaError)
    {
        self.request = request
        self.table = table
        self.runs = runs
        self.cancellation = cancellation
        let size = try Probe.fileSize(request.source)
        input = try Probe.open(request.source, size: size, cancellation: cancellation)
        info = try Probe.describe(input, fileSize: size)
        video = try Probe.videoStream(input)
        for handle in input.streams where handle.index != video.index { handle.stream.pointee.discard = AVDISCARD_ALL }
        let opened = try Probe.open(request.source, size: size, cancellation: cancellation)
        if let stream = Probe.audioStream(opened, video: video.index) {
            for handle in opened.streams where handle.index != stream.index {
                handle.stream.pointee.discard = AVDISCARD_ALL
            }
            soundInput = opened
            sound = try SegmentSound(stream: stream, path: request.source, start: opened.startSeconds)
        } else {
            soundInput = nil
            sound = nil
        }
        var audioSettings = AudioEncoding()
        audioSettings.bitRate = request.quality.audioBitRate
        writer = try CopyWriter(path: request.output, copying: video, audio: audioSettings, cancellation: cancellation)
        packet = try Packet()
        limiter = DecodeGuard(request.limits, path: request.source)
    }

    package var path: String { request.source }

    package func run(progress: ((Double) -> Void)?) throws(MediaError) -> RenderResult {
        progress?(0)
        let joiner = AudioJoiner(
            sink: AudioJoiner.Sink(
                free: { [block] () throws(MediaError) -> AudioBlock in block },
                send: { [writer] (block: AudioBlock) throws(MediaError) in
                    try writer.audio?.write(planes: block.planes, count: block.count)
                    block.count = 0
                }),
            sampleRate: 48_000, fade: request.audioFade, overlapSamples: 0)
        var offset: Int64 = 0
        var outputSegments: [TimeRange] = []
        var sourceSegments: [TimeRange] = []
        for (n, run) in runs.enumerated() {
            // Each segment's reads are held to the limits on their own (the next one may lie
            // minutes later, or earlier).
            limiter = DecodeGuard(request.limits, path: request.source)
            try copyPictures(run, to: offset)
            let length = run.end - run.start
            let first = sampleAt(offset), last = sampleAt(offset + length)
            let range = TimeRange(start: table.seconds(run.start), end: table.seconds(run.end))
            try copySound(range, samples: last - first, firstSample: first, joiner: joiner)
            outputSegments.append(TimeRange(start: table.seconds(offset), end: table.seconds(offset + length)))
            sourceSegments.append(range)
            offset += length
            progress?(Double(n + 1) / Double(runs.count))
        }
        try joiner.flush()
        try writer.finish()
        let rate = video.stream.pointee.avg_frame_rate
        return RenderResult(
            output: request.output, duration: table.seconds(offset), width: info.video.codedWidth,
            height: info.video.codedHeight, rotation: info.video.rotation,
            frameRate: rate.num > 0 && rate.den > 0 ? Rational(rate) : Rational(30, 1),
            frames: writer.videoPackets, audioSamples: writer.audio?.samplesWritten ?? 0,
            fileSize: (try? Probe.fileSize(request.output)) ?? 0, outputSegments: outputSegments,
            damagedPackets: sound?.damaged ?? 0, copiedFrames: writer.videoPackets, sourceSegments: sourceSegments)
    }

    /// The output sample (48 kHz) at output time `ticks` (the source stream's time base).
    private func sampleAt(_ ticks: Int64) -> Int {
        let tb = table.timeBase
        return Int((ticks * 48_000 * Int64(tb.num) + Int64(tb.den) / 2) / Int64(tb.den))
    }

    /// Copies the run's packets from its keyframe on, in decode order, moved to output time `offset`.
    private func copyPictures(_ run: CopyRun, to offset: Int64) throws(MediaError) {
        let key = table.entries[run.first]
        try input.seek(stream: video.index, to: key.pts + table.start)
        var taken = 0
        var found = false
        while taken < run.count {
            try cancellation?.check("copy pictures", path: path)
            guard try input.read(into: packet) else { break }
            defer { packet.unref() }
            guard packet.streamIndex == video.index, packet.pts != MediaTime.noPTS else { continue }
            let dts = (packet.dts == MediaTime.noPTS ? packet.pts : packet.dts) - table.start
            let pts = packet.pts - table.start
            if !found {
                if dts > key.dts { break }
                guard dts == key.dts, packet.isKeyframe else { continue }
                found = true
            }
            try limiter.videoPacket(time: table.seconds(pts))
            taken += 1
            // Leading pictures of the keyframe (shown before it) belong to the group before.
            guard pts >= run.start else { continue }
            try writer.writeVideo(packet, pts: pts - run.start + offset, dts: dts - run.start + offset)
        }
        guard found, taken == run.count else {
            throw MediaError(
                .invalidRange, operation: "copy pictures", path: path,
                detail: "the pictures of \(table.seconds(run.start))-\(table.seconds(run.end)) s could not be read back")
        }
    }

    /// Decodes the sound of `range`, exactly `samples` samples of it, faded at its ends.
    private func copySound(_ range: TimeRange, samples: Int, firstSample: Int, joiner: AudioJoiner) throws(MediaError) {
        let segment = EditPlan.Segment(
            range: range, frames: 0, firstFrame: 0, overlapIn: 0, overlapOut: 0, firstSample: firstSample,
            samples: samples, overlapInSamples: 0, overlapOutSamples: 0)
        joiner.begin(segment)
        guard let sound, let soundInput else {
            try joiner.pushSilence(samples)
            return
        }
        try soundInput.seek(
            stream: sound.stream.index, to: MediaTime.timestamp(range.start + sound.start, sound.stream.timeBase))
        try sound.reset()
        var ended = true
        while joiner.remaining > 0 {
            try cancellation?.check("copy sound", path: path)
            let more: Bool
            do { more = try soundInput.read(into: packet) } catch {
                if error.kind == .cancelled { throw error }
                break
            }
            guard more else { break }
            defer { packet.unref() }
            guard packet.streamIndex == sound.stream.index else { continue }
            if packet.pts != MediaTime.noPTS,
                MediaTime.seconds(packet.pts, sound.stream.timeBase) - sound.start > range.end + 3
            {
                ended = false
                break
            }
            try sound.decode(packet, into: joiner, segmentStart: range.start, limiter: &limiter)
        }
        if ended, joiner.remaining > 0 { try sound.decode(nil, into: joiner, segmentStart: range.start, limiter: &limiter) }
        try joiner.pushSilence(joiner.remaining)
    }
}
