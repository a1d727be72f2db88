import CFFmpeg

/// Owns one AVFrame (av_frame_free in deinit). Decoders fill it; `allocate` gives it its own buffers
/// for frames the media layer writes (scaled pictures, encoder input).
public final class Frame {
    public let pointer: UnsafeMutablePointer<AVFrame>

    public init() throws(MediaError) {
        guard let p = av_frame_alloc() else {
            throw MediaError(.ffmpeg, operation: "av_frame_alloc", detail: "out of memory")
        }
        pointer = p
    }

    /// A picture with its own buffers.
    public convenience init(width: Int, height: Int, format: AVPixelFormat) throws(MediaError) {
        try self.init()
        pointer.pointee.width = Int32(width)
        pointer.pointee.height = Int32(height)
        pointer.pointee.format = format.rawValue
        try check(av_frame_get_buffer(pointer, 0), "av_frame_get_buffer \(width)x\(height)")
    }

    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&p)
    }

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var pixelFormat: AVPixelFormat { AVPixelFormat(rawValue: pointer.pointee.format) }
    public var sampleFormat: AVSampleFormat { AVSampleFormat(rawValue: pointer.pointee.format) }
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    /// Presentation time in stream time base; falls back to FFmpeg's best-effort estimate.
    public var bestEffortTimestamp: Int64 {
        let t = pointer.pointee.best_effort_timestamp
        return t != MediaTime.noPTS ? t : pointer.pointee.pts
    }
    /// Set by decoders on frames that were concealed after a decoding error.
    public var isDamaged: Bool {
        pointer.pointee.decode_error_flags != 0 || pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0
    }

    public func data(_ plane: Int) -> UnsafeMutablePointer<UInt8>? {
        withUnsafePointer(to: pointer.pointee.data) { tuple in
            tuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { $0[plane] }
        }
    }

    public func linesize(_ plane: Int) -> Int {
        withUnsafePointer(to: pointer.pointee.linesize) { tuple in
            tuple.withMemoryRebound(to: Int32.self, capacity: 8) { Int($0[plane]) }
        }
    }

    /// The plane pointers as FFmpeg's scaler wants them.
    public var dataPointers: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?> {
        UnsafeMutableRawPointer(pointer).advanced(by: MemoryLayout<AVFrame>.offset(of: \AVFrame.data)!)
            .assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
    }

    public var linesizePointer: UnsafeMutablePointer<Int32> {
        UnsafeMutableRawPointer(pointer).advanced(by: MemoryLayout<AVFrame>.offset(of: \AVFrame.linesize)!)
            .assumingMemoryBound(to: Int32.self)
    }

    public func makeWritable() throws(MediaError) {
        try check(av_frame_make_writable(pointer), "av_frame_make_writable")
    }

    public func unref() { av_frame_unref(pointer) }
}

/// Timestamp helpers.
public enum MediaTime {
    public static let noPTS = moments_nopts_value()
    public static let microseconds = moments_time_base_q()

    public static func seconds(_ ts: Int64, _ timeBase: AVRational) -> Double {
        Double(ts) * Double(timeBase.num) / Double(timeBase.den)
    }

    /// Saturates (a time base from a file may be degenerate): never traps.
    public static func timestamp(_ seconds: Double, _ timeBase: AVRational) -> Int64 {
        let ticks = (seconds * Double(timeBase.den) / Double(timeBase.num)).rounded()
        guard ticks.isFinite else { return ticks.isNaN ? 0 : (ticks > 0 ? Int64.max / 2 : Int64.min / 2) }
        return Int64(max(-9.0e18, min(9.0e18, ticks)))
    }
}
