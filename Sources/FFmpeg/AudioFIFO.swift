import CFFmpeg

/// Owns an AVAudioFifo (av_audio_fifo_free in deinit): collects planar samples until an encoder
/// frame's worth is ready.
public final class AudioFIFO {
    public let pointer: OpaquePointer

    public init(format: AVSampleFormat, channels: Int, capacity: Int) throws(MediaError) {
        guard let fifo = av_audio_fifo_alloc(format, Int32(channels), Int32(capacity)) else {
            throw MediaError(.ffmpeg, operation: "av_audio_fifo_alloc", detail: "out of memory")
        }
        pointer = fifo
    }

    deinit { av_audio_fifo_free(pointer) }

    public var count: Int { Int(av_audio_fifo_size(pointer)) }

    public func write(_ planes: UnsafeMutablePointer<UnsafeMutableRawPointer?>, count: Int) throws(MediaError) {
        try check(av_audio_fifo_write(pointer, planes, Int32(count)), "av_audio_fifo_write")
    }

    /// Reads up to `count` samples into `frame`'s planes; returns how many were read.
    public func read(into frame: Frame, count: Int) throws(MediaError) -> Int {
        let planes = UnsafeMutableRawPointer(frame.dataPointers).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        return Int(try check(av_audio_fifo_read(pointer, planes, Int32(count)), "av_audio_fifo_read"))
    }
}
