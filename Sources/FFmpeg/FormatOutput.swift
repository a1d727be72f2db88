import CFFmpeg

/// Owns an output AVFormatContext and its AVIOContext (closed and freed in deinit).
public final class FormatOutput {
    public let pointer: UnsafeMutablePointer<AVFormatContext>
    public let path: String
    private var ioOpen = false
    private var headerWritten = false
    private var trailerWritten = false
    private let cancellation: CancellationToken?

    public init(path: String, format: String, cancellation: CancellationToken?) throws(MediaError) {
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        let rc = avformat_alloc_output_context2(&context, nil, format, path)
        guard rc >= 0, let context else {
            throw MediaError.ffmpeg(
                rc < 0 ? rc : moments_averror(ENOMEM), "avformat_alloc_output_context2 (\(format))", path: path)
        }
        self.pointer = context
        self.path = path
        self.cancellation = cancellation
        FFmpegLog.register(UnsafeMutableRawPointer(context))
        if let cancellation {
            context.pointee.interrupt_callback = cancellation.interruptCallback
        }
    }

    deinit {
        if ioOpen { avio_closep(&pointer.pointee.pb) }
        FFmpegLog.unregister(UnsafeMutableRawPointer(pointer))
        avformat_free_context(pointer)
    }

    public var logKey: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }
    public var needsGlobalHeader: Bool { pointer.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 }

    /// A new stream carrying `encoder`'s parameters.
    public func addStream(for encoder: CodecContext) throws(MediaError) -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(pointer, nil) else {
            throw MediaError(.ffmpeg, operation: "avformat_new_stream", path: path, detail: "out of memory")
        }
        try check(
            avcodec_parameters_from_context(stream.pointee.codecpar, encoder.pointer),
            "avcodec_parameters_from_context", path: path)
        stream.pointee.time_base = encoder.pointer.pointee.time_base
        return stream
    }

    /// A new stream carrying a copy of `parameters` (remuxing: no encoder).
    public func addStream(copying parameters: UnsafePointer<AVCodecParameters>, path: String) throws(MediaError)
        -> UnsafeMutablePointer<AVStream>
    {
        guard let stream = avformat_new_stream(pointer, nil) else {
            throw MediaError(.ffmpeg, operation: "avformat_new_stream", path: path, detail: "out of memory")
        }
        try check(avcodec_parameters_copy(stream.pointee.codecpar, parameters), "avcodec_parameters_copy", path: path)
        stream.pointee.codecpar.pointee.codec_tag = 0
        return stream
    }

    public func writeHeader(options: [String: String]) throws(MediaError) {
        var io: UnsafeMutablePointer<AVIOContext>? = nil
        var callback = pointer.pointee.interrupt_callback
        // Outputs are local files only (the path is the server's own; a URL-like path stays a file).
        var ioOptions: OpaquePointer? = nil
        av_dict_set(&ioOptions, "protocol_whitelist", ContainerPolicy.outputProtocolWhitelist, 0)
        defer { av_dict_free(&ioOptions) }
        try check(
            avio_open2(&io, path, AVIO_FLAG_WRITE, &callback, &ioOptions), "avio_open2", path: path, context: logKey)
        pointer.pointee.pb = io
        ioOpen = true
        var dictionary: OpaquePointer? = nil
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        try check(avformat_write_header(pointer, &dictionary), "avformat_write_header", path: path, context: logKey)
        headerWritten = true
    }

    /// Writes an encoded packet, rescaling its times from the encoder's time base to the stream's.
    public func write(_ packet: Packet, from timeBase: AVRational, to stream: UnsafeMutablePointer<AVStream>)
        throws(MediaError)
    {
        av_packet_rescale_ts(packet.pointer, timeBase, stream.pointee.time_base)
        packet.pointer.pointee.stream_index = stream.pointee.index
        let rc = av_interleaved_write_frame(pointer, packet.pointer)
        if rc < 0 {
            if cancellation?.isCancelled == true {
                throw MediaError(.cancelled, operation: "av_interleaved_write_frame", path: path, detail: "cancelled")
            }
            throw MediaError.ffmpeg(rc, "av_interleaved_write_frame", path: path, kind: .io, context: logKey)
        }
    }

    public func finish() throws(MediaError) {
        guard headerWritten, !trailerWritten else { return }
        trailerWritten = true
        let rc = av_write_trailer(pointer)
        if rc < 0, cancellation?.isCancelled == true {
            throw MediaError(.cancelled, operation: "av_write_trailer", path: path, detail: "cancelled")
        }
        try check(rc, "av_write_trailer", path: path, context: logKey)
        avio_closep(&pointer.pointee.pb)
        ioOpen = false
    }
}
