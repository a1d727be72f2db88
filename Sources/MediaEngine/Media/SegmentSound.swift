import CFFmpeg
import FFmpeg
import Foundation

/// A render's sound source: decodes a segment's audio packets, resamples them to 48 kHz stereo
/// and lays them on the segment by their timestamps (silence over gaps, overlap trimmed) through
/// an `AudioJoiner`. Owns the audio decoder, the resampler and their buffers; both render paths
/// (encoded and copied pictures) use it.
package final class SegmentSound {
    package let stream: StreamHandle
    package let decoder: CodecContext
    package let resampler: Resampler
    package let path: String
    /// The container's start, in seconds (Moments' times count from it).
    package let start: Double
    private let frame: Frame
    private let left: UnsafeMutablePointer<Float>
    private let right: UnsafeMutablePointer<Float>
    private let planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    private let capacity = 8192
    /// Where the next resampled sample lands in the segment (nil until the segment's first).
    private var cursor: Int?
    /// Damaged packets and frames skipped over.
    private(set) var damaged = 0

    package init(stream: StreamHandle, path: String, start: Double) throws(MediaError) {
        self.stream = stream
        self.path = path
        self.start = start
        decoder = try CodecContext.decoder(for: stream, path: path, threads: 1)
        resampler = try Resampler(
            input: decoder.pointer, outputRate: 48_000, outputChannels: 2, outputFormat: AV_SAMPLE_FMT_FLTP)
        frame = try Frame()
        left = .allocate(capacity: capacity)
        right = .allocate(capacity: capacity)
        planes = .allocate(capacity: 2)
    }

    deinit {
        left.deallocate()
        right.deallocate()
        planes.deallocate()
    }

    /// Before a segment's first packet (after a seek).
    package func reset() throws(MediaError) {
        decoder.flushBuffers()
        try resampler.reset()
        cursor = nil
    }

    /// Decodes `packet` (nil: drain) into the joiner's current segment, which starts at
    /// `segmentStart` seconds of the source.
    package func decode(
        _ packet: Packet?, into joiner: AudioJoiner, segmentStart: Double, limiter: inout DecodeGuard
    ) throws(MediaError) {
        let rc = decoder.send(packet)
        if FFmpegError.isDamage(rc) { damaged += 1; return }
        if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
            throw MediaError.ffmpeg(rc, "avcodec_send_packet (\(decoder.name))", path: path, context: decoder.logKey)
        }
        var failures = 0
        while joiner.remaining > 0 {
            let r = decoder.receive(frame)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            if FFmpegError.isDamage(r) {
                damaged += 1
                failures += 1
                if failures > 16 { return }
                continue
            }
            try check(r, "avcodec_receive_frame (\(decoder.name))", path: path, context: decoder.logKey)
            defer { frame.unref() }
            let ts = frame.bestEffortTimestamp
            if ts != MediaTime.noPTS { try limiter.audio(time: MediaTime.seconds(ts, stream.timeBase) - start) }
            let needed = resampler.outputCapacity(forInput: frame.sampleCount)
            if needed > capacity {
                throw MediaError(
                    .ffmpeg, operation: "resample", path: path,
                    detail: "audio frame too long (\(frame.sampleCount) samples)")
            }
            planes[0] = UnsafeMutableRawPointer(left).assumingMemoryBound(to: UInt8.self)
            planes[1] = UnsafeMutableRawPointer(right).assumingMemoryBound(to: UInt8.self)
            let count = try resampler.convert(frame, into: planes, capacity: capacity)
            guard count > 0 else { continue }
            var position = cursor ?? 0
            if ts != MediaTime.noPTS {
                let stamped = Int(
                    ((MediaTime.seconds(ts, stream.timeBase) - start - segmentStart) * 48_000).rounded())
                // Follow the stream's clock at the segment's start and across real gaps (> 50 ms).
                if cursor == nil || abs(stamped - position) > 2400 { position = stamped }
            }
            if position > joiner.position { try joiner.pushSilence(position - joiner.position) }
            let skip = max(0, joiner.position - position)
            if skip < count {
                try joiner.push(left: left + skip, right: right + skip, count: count - skip)
            }
            cursor = position + count
        }
    }
}
