import CFFmpeg
import FFmpeg

/// The output's sound track: AAC (FFmpeg's native encoder) fed planar float samples through a
/// FIFO, one encoder frame at a time, with sample-counted timestamps. Owns the encoder, the FIFO
/// and the frame; writes to a stream of its caller's `FormatOutput`.
package final class AudioTrackEncoder {
    package let encoder: CodecContext
    package let stream: UnsafeMutablePointer<AVStream>
    private let output: FormatOutput
    private let fifo: AudioFIFO
    private let frame: Frame
    private let packet: Packet
    private let frameSize: Int
    private var pts: Int64 = 0
    private(set) var samplesWritten = 0
    package let path: String

    package init(_ settings: AudioEncoding, output: FormatOutput, path: String) throws(MediaError) {
        self.output = output
        self.path = path
        let globalHeader = output.needsGlobalHeader
        encoder = try CodecContext.encoder(named: "aac") { c in
            c.pointee.sample_rate = Int32(settings.sampleRate)
            c.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            c.pointee.bit_rate = Int64(settings.bitRate)
            c.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
            av_channel_layout_default(&c.pointee.ch_layout, Int32(settings.channels))
            if globalHeader { c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        }
        stream = try output.addStream(for: encoder)
        frameSize = max(1, Int(encoder.pointer.pointee.frame_size))
        fifo = try AudioFIFO(format: AV_SAMPLE_FMT_FLTP, channels: settings.channels, capacity: frameSize * 4)
        frame = try Frame()
        frame.pointer.pointee.nb_samples = Int32(frameSize)
        frame.pointer.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointer.pointee.sample_rate = Int32(settings.sampleRate)
        try check(
            av_channel_layout_copy(&frame.pointer.pointee.ch_layout, &encoder.pointer.pointee.ch_layout),
            "av_channel_layout_copy")
        try check(av_frame_get_buffer(frame.pointer, 0), "av_frame_get_buffer (audio)")
        packet = try Packet()
    }

    package var channels: Int { Int(encoder.pointer.pointee.ch_layout.nb_channels) }

    /// Appends planar float samples: one pointer per channel, `count` samples each.
    package func write(planes: UnsafeMutablePointer<UnsafeMutableRawPointer?>, count: Int) throws(MediaError) {
        try fifo.write(planes, count: count)
        samplesWritten += count
        try drain(final: false)
    }

    /// Encodes what the FIFO still holds and flushes the encoder.
    package func finish() throws(MediaError) {
        try drain(final: true)
        try encode(nil)
    }

    private func drain(final: Bool) throws(MediaError) {
        while fifo.count >= frameSize || (final && fifo.count > 0) {
            try frame.makeWritable()
            let n = min(frameSize, fifo.count)
            frame.pointer.pointee.nb_samples = Int32(n)
            _ = try fifo.read(into: frame, count: n)
            frame.pointer.pointee.pts = pts
            pts += Int64(n)
            try encode(frame)
        }
        frame.pointer.pointee.nb_samples = Int32(frameSize)
    }

    private func encode(_ frame: Frame?) throws(MediaError) {
        let rc = encoder.send(frame)
        if rc < 0 && rc != FFmpegError.eof {
            throw MediaError.ffmpeg(rc, "avcodec_send_frame (\(encoder.name))", path: path, context: encoder.logKey)
        }
        while true {
            let r = encoder.receive(packet)
            if r == FFmpegError.again || r == FFmpegError.eof { return }
            try check(r, "avcodec_receive_packet (\(encoder.name))", path: path, context: encoder.logKey)
            defer { packet.unref() }
            try output.write(packet, from: encoder.pointer.pointee.time_base, to: stream)
        }
    }
}
