import MediaEngine
import CFFmpeg
import FFmpeg
import Foundation

/// The audio half of the analysis pass: decode, downmix and resample to mono float.
final class AudioPath {
    let streamIndex: Int
    let decoder: CodecContext
    let resampler: Resampler
    let frame: Frame
    let timeBase: AVRational
    let rate: Int
    let path: String
    private var buffer: UnsafeMutablePointer<Float>
    private var capacity: Int
    private let planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    private var nextTime: Double?
    /// Largest output chunk accepted from one decoded frame (about a minute at 16 kHz).
    static let maxChunk = 1 << 20

    init(stream: StreamHandle, path: String, rate: Int) throws(MediaError) {
        streamIndex = stream.index
        timeBase = stream.timeBase
        self.rate = rate
        self.path = path
        decoder = try CodecContext.decoder(for: stream, path: path, threads: 1)
        resampler = try Resampler(
            input: decoder.pointer, outputRate: rate, outputChannels: 1, outputFormat: AV_SAMPLE_FMT_FLT)
        frame = try Frame()
        capacity = 16_384
        buffer = .allocate(capacity: capacity)
        planes = .allocate(capacity: 1)
    }

    deinit {
        buffer.deallocate()
        planes.deallocate()
    }

    func decode(
        _ packet: Packet?, start: Double, summary: inout AnalysisSummary, limiter: inout DecodeGuard,
        onAudio: (borrowing AudioChunk) -> Void
    ) throws(MediaError) {
        let sent = decoder.send(packet)
        if FFmpegError.isDamage(sent) { summary.damagedPackets += 1; return }
        if sent < 0 && sent != FFmpegError.eof && sent != FFmpegError.again {
            throw MediaError.ffmpeg(sent, "avcodec_send_packet (\(decoder.name))", path: path, context: decoder.logKey)
        }
        var failures = 0
        while true {
            let rc = decoder.receive(frame)
            if rc == FFmpegError.again { return }
            if FFmpegError.isDamage(rc) {
                summary.damagedPackets += 1
                failures += 1
                if failures > 16 { return }
                continue
            }
            if rc == FFmpegError.eof {
                try emit(nil, time: nextTime ?? 0, summary: &summary, limiter: &limiter, onAudio: onAudio)
                return
            }
            try check(rc, "avcodec_receive_frame (\(decoder.name))", path: path, context: decoder.logKey)
            defer { frame.unref() }
            let ts = frame.bestEffortTimestamp
            var time = nextTime ?? 0
            if ts != MediaTime.noPTS {
                let stamped = MediaTime.seconds(ts, timeBase) - start
                // Follow the stream's clock only across real gaps; otherwise keep samples contiguous.
                if nextTime == nil || abs(stamped - time) > 0.04 { time = stamped }
            }
            try emit(frame, time: time, summary: &summary, limiter: &limiter, onAudio: onAudio)
        }
    }

    private func emit(
        _ input: Frame?, time: Double, summary: inout AnalysisSummary, limiter: inout DecodeGuard,
        onAudio: (borrowing AudioChunk) -> Void
    ) throws(MediaError) {
        let needed = resampler.outputCapacity(forInput: input?.sampleCount ?? 0)
        if needed > AudioPath.maxChunk {  // a frame claiming minutes of samples: damage, not a buffer to grow
            summary.damagedPackets += 1
            return
        }
        if needed > capacity {  // grows rarely (an unusually long frame), never per frame
            buffer.deallocate()
            capacity = needed
            buffer = .allocate(capacity: capacity)
        }
        planes[0] = UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: UInt8.self)
        let count = try resampler.convert(input, into: planes, capacity: capacity)
        guard count > 0 else { return }
        try limiter.audio(time: time)
        onAudio(AudioChunk(time: time, sampleRate: rate, samples: UnsafeBufferPointer(start: buffer, count: count)))
        summary.audioSamples += count
        nextTime = time + Double(count) / Double(rate)
    }
}
