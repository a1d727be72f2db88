import CFFmpeg
import FFmpeg
import Foundation

extension RenderDecodeStage {
    /// Decodes the segment's sound, resamples it to 48 kHz stereo and lays it on the output
    /// timeline by its timestamps (silence over gaps, overlap trimmed).
    func decodeAudio(_ p: Packet?) throws(MediaError) {
        guard let audio, let resampler, let audioStream else { return }
        let rc = audio.send(p)
        if FFmpegError.isDamage(rc) { damaged += 1; return }
        if rc < 0 && rc != FFmpegError.eof && rc != FFmpegError.again {
            throw MediaError.ffmpeg(rc, "avcodec_send_packet (\(audio.name))", path: path, context: audio.logKey)
        }
        var failures = 0
        while joiner.remaining > 0 {
            let r = audio.receive(audioFrame)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            if FFmpegError.isDamage(r) {
                damaged += 1
                failures += 1
                if failures > 16 { return }
                continue
            }
            try check(r, "avcodec_receive_frame (\(audio.name))", path: path, context: audio.logKey)
            defer { audioFrame.unref() }
            let ts = audioFrame.bestEffortTimestamp
            if ts != MediaTime.noPTS { try limiter.audio(time: MediaTime.seconds(ts, audioStream.timeBase) - start) }
            let needed = resampler.outputCapacity(forInput: audioFrame.sampleCount)
            if needed > audioCapacity {
                throw MediaError(
                    .ffmpeg, operation: "resample", path: path,
                    detail: "audio frame too long (\(audioFrame.sampleCount) samples)")
            }
            audioPlanes[0] = UnsafeMutableRawPointer(audioLeft).assumingMemoryBound(to: UInt8.self)
            audioPlanes[1] = UnsafeMutableRawPointer(audioRight).assumingMemoryBound(to: UInt8.self)
            let count = try resampler.convert(audioFrame, into: audioPlanes, capacity: audioCapacity)
            guard count > 0 else { continue }
            var position = audioCursor ?? 0
            if ts != MediaTime.noPTS {
                let stamped = Int(
                    ((MediaTime.seconds(ts, audioStream.timeBase) - start - segment.range.start) * 48_000).rounded())
                // Follow the stream's clock at the segment's start and across real gaps (> 50 ms).
                if audioCursor == nil || abs(stamped - position) > 2400 { position = stamped }
            }
            if position > joiner.position { try joiner.pushSilence(position - joiner.position) }
            let skip = max(0, joiner.position - position)
            if skip < count {
                try joiner.push(left: audioLeft + skip, right: audioRight + skip, count: count - skip)
            }
            audioCursor = position + count
        }
    }
}
