import CFFmpeg

/// Owns an AVCodecContext (avcodec_free_context in deinit), opened as a decoder or an encoder.
public final class CodecContext {
    public let pointer: UnsafeMutablePointer<AVCodecContext>
    public let codec: UnsafePointer<AVCodec>

    private init(codec: UnsafePointer<AVCodec>, operation: String) throws(MediaError) {
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(.ffmpeg, operation: operation, detail: "out of memory")
        }
        self.codec = codec
        self.pointer = context
        FFmpegLog.register(UnsafeMutableRawPointer(context))
    }

    deinit {
        FFmpegLog.unregister(UnsafeMutableRawPointer(pointer))
        var p: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&p)
    }

    public var logKey: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }
    public var name: String { String(cString: codec.pointee.name) }

    /// A decoder for `stream`, configured by `configure` before it is opened.
    public static func decoder(
        for handle: StreamHandle, path: String, threads: Int = 0,
        configure: (UnsafeMutablePointer<AVCodecContext>) -> Void = { _ in }
    ) throws(MediaError) -> CodecContext {
        let parameters = handle.parameters
        let stream = handle.stream
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
            throw MediaError(
                .unsupportedCodec, operation: "avcodec_find_decoder", path: path,
                detail: "no decoder for codec \(name) in this FFmpeg build")
        }
        let context = try CodecContext(codec: codec, operation: "avcodec_alloc_context3")
        try check(
            avcodec_parameters_to_context(context.pointer, parameters), "avcodec_parameters_to_context", path: path)
        context.pointer.pointee.pkt_timebase = stream.pointee.time_base
        context.pointer.pointee.thread_count = Int32(threads)
        context.pointer.pointee.thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE
        context.pointer.pointee.max_pixels = Int64(MediaLimits.maxPixels)
        configure(context.pointer)
        try check(
            avcodec_open2(context.pointer, codec, nil), "avcodec_open2 (\(context.name) decoder)",
            path: path, context: context.logKey)
        return context
    }

    /// An encoder by name (e.g. "libx264", "aac", "mjpeg"), configured by `configure`, opened with
    /// the private `options` (e.g. preset, crf).
    public static func encoder(
        named name: String, options: [String: String] = [:],
        configure: (UnsafeMutablePointer<AVCodecContext>) -> Void
    ) throws(MediaError) -> CodecContext {
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw MediaError(
                .unsupportedCodec, operation: "avcodec_find_encoder_by_name",
                detail: "encoder \(name) is not in this FFmpeg build")
        }
        let context = try CodecContext(codec: codec, operation: "avcodec_alloc_context3")
        configure(context.pointer)
        var dictionary: OpaquePointer? = nil
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        try check(
            avcodec_open2(context.pointer, codec, &dictionary), "avcodec_open2 (\(name) encoder)",
            context: context.logKey)
        return context
    }

    /// avcodec_send_packet; nil flushes. Returns FFmpeg's code (EAGAIN and EOF are not errors).
    public func send(_ packet: Packet?) -> Int32 { avcodec_send_packet(pointer, packet?.pointer) }
    public func receive(_ frame: Frame) -> Int32 { avcodec_receive_frame(pointer, frame.pointer) }
    public func send(_ frame: Frame?) -> Int32 { avcodec_send_frame(pointer, frame?.pointer) }
    public func receive(_ packet: Packet) -> Int32 { avcodec_receive_packet(pointer, packet.pointer) }
    public func flushBuffers() { avcodec_flush_buffers(pointer) }
}
