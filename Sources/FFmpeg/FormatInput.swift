import CFFmpeg

/// Owns an input AVFormatContext (avformat_close_input in deinit). Opening reads the header only;
/// `findStreamInfo` reads further, so callers can vet header fields (picture size) before that.
///
/// Every input is read through Moments' own AVIOContext over one already-open source: FFmpeg is
/// given no URL to open, any nested open a demuxer attempts (a playlist entry, a manifest's
/// segment, an MP4 data reference) is refused, and only the demuxers of `ContainerPolicy` may run.
public final class FormatInput {
    public let pointer: UnsafeMutablePointer<AVFormatContext>
    public let path: String
    /// Kept alive as long as FFmpeg may call the interrupt callback that points at it.
    private let cancellation: CancellationToken?
    /// The reader FFmpeg reads through (freed after the context is closed).
    private let io: InputIO

    /// Most streams a container may declare.
    public static let maxStreams: Int32 = 64

    /// How sure the content sniffing was of the container (0...100; 100 when FFmpeg guessed).
    public let probeScore: Int32

    /// Opens `source` with the demuxer `format` (chosen by `sniff`); `whitelist` is the comma
    /// separated list of demuxer names FFmpeg may use (it refuses `format` when not on it).
    public init(
        source: InputSource, format: UnsafePointer<AVInputFormat>, probeScore: Int32 = AVPROBE_SCORE_MAX,
        whitelist: String = ContainerPolicy.formatWhitelist, cancellation: CancellationToken? = nil
    ) throws(MediaError) {
        let path = source.name
        self.probeScore = probeScore
        self.io = try InputIO(source: source)
        guard let context = avformat_alloc_context() else {
            throw MediaError(.ffmpeg, operation: "avformat_alloc_context", path: path, detail: "out of memory")
        }
        self.path = path
        self.cancellation = cancellation
        if let cancellation {
            context.pointee.interrupt_callback = cancellation.interruptCallback
        }
        context.pointee.pb = io.pointer
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        // No demuxer opens a second resource: not a file, not a URL, not through any protocol.
        context.pointee.io_open = { _, _, _, _, _ in moments_averror(EPERM) }
        context.pointee.format_whitelist = av_strdup(whitelist)
        context.pointee.protocol_whitelist = av_strdup(ContainerPolicy.inputProtocolWhitelist)
        // A phone writes a handful of streams; thousands would each get a decoder in find_stream_info.
        context.pointee.max_streams = FormatInput.maxStreams
        let key = UnsafeMutableRawPointer(context)
        FFmpegLog.register(key)
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let rc = avformat_open_input(&opened, path, format, nil)
        guard rc >= 0, let opened else {
            // avformat_open_input frees the context on failure (not the custom I/O: `io` does).
            let logged = FFmpegLog.lastError(for: key)
            FFmpegLog.unregister(key)
            throw FormatInput.openError(rc, path: path, logged: logged, cancelled: cancellation?.isCancelled == true)
        }
        pointer = opened
        collectStreams()
    }

    deinit {
        FFmpegLog.unregister(UnsafeMutableRawPointer(pointer))
        var p: UnsafeMutablePointer<AVFormatContext>? = pointer
        avformat_close_input(&p)  // leaves `io` (AVFMT_FLAG_CUSTOM_IO) to its owner
    }

    public var logKey: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }

    public func findStreamInfo() throws(MediaError) {
        try check(avformat_find_stream_info(pointer, nil), "avformat_find_stream_info", path: path, context: logKey)
        collectStreams()
    }

    /// The streams, each with its codec parameters resolved once (a stream FFmpeg left without
    /// parameters is skipped rather than force-unwrapped).
    public private(set) var streams: [StreamHandle] = []

    private func collectStreams() {
        streams = (0..<Int(pointer.pointee.nb_streams)).compactMap { i in
            guard let st = pointer.pointee.streams[i], let par = st.pointee.codecpar else { return nil }
            return StreamHandle(stream: st, parameters: par)
        }
    }

    public func stream(index: Int) -> StreamHandle? { streams.first { $0.index == index } }

    public var formatName: String { String(cString: pointer.pointee.iformat.pointee.name) }

    public var formatLongName: String {
        pointer.pointee.iformat.pointee.long_name.map { String(cString: $0) } ?? formatName
    }

    /// Reads the next packet; false at the end of the file. A damaged stretch the demuxer cannot
    /// read past is treated as the end, after reporting through `onError`.
    public func read(into packet: Packet) throws(MediaError) -> Bool {
        let rc = av_read_frame(pointer, packet.pointer)
        if rc >= 0 { return true }
        if rc == FFmpegError.eof { return false }
        if rc == FFmpegError.exit || cancellation?.isCancelled == true {
            throw MediaError(.cancelled, operation: "av_read_frame", path: path, detail: "cancelled")
        }
        throw MediaError.ffmpeg(rc, "av_read_frame", path: path, kind: .io, context: logKey)
    }

    /// Seeks `stream` to the last keyframe at or before `timestamp` (in the stream's time base).
    ///
    /// Demuxers without an index (MPEG-TS, MPEG-PS: a bisection over byte positions) can land on
    /// the keyframe after the target, which would start a range late, or past the stream's last
    /// keyframe, where reading finds no keyframe before the end of the file and nothing after the
    /// landing could be decoded. The landing is checked by reading up to the stream's first
    /// keyframe; when that lies after `timestamp`, or the file ends first, the seek is retried from
    /// further back (1, 2, 4 … 64 s), and finally from the start of the file.
    public func seek(stream index: Int, to timestamp: Int64) throws(MediaError) {
        guard let handle = stream(index: index) else {
            throw MediaError(.invalidRange, operation: "seek", path: path, detail: "no stream \(index)")
        }
        let second = max(1, MediaTime.timestamp(1, handle.timeBase))
        for attempt in 0...FormatInput.seekRetries {
            let target = attempt == 0 ? timestamp : timestamp &- (second << (attempt - 1))
            try seekBackward(index, target)
            let landing = try firstKeyframe(of: index)
            if case .at(let landed) = landing, landed > timestamp { continue }  // too late: further back
            if case .endOfFile = landing { continue }  // past the last keyframe: further back
            try seekBackward(index, target)  // the same seek again: reading resumes at that keyframe
            return
        }
        // Still after the target: read from the start of the file.
        try check(
            av_seek_frame(pointer, -1, 0, AVSEEK_FLAG_BYTE), "av_seek_frame to the start", path: path, context: logKey)
    }

    /// How many times `seek` steps further back before reading from the start (the last step: 64 s).
    public static let seekRetries = 7
    /// Packets `firstKeyframe` reads at most (a stream whose keyframes are further apart is
    /// taken as landed where the demuxer put it).
    public static let seekCheckPackets = 2048

    private func seekBackward(_ index: Int, _ timestamp: Int64) throws(MediaError) {
        try check(
            av_seek_frame(pointer, Int32(index), timestamp, AVSEEK_FLAG_BACKWARD),
            "av_seek_frame to \(timestamp)", path: path, context: logKey)
    }

    /// Where a seek landed: the presentation time of the first keyframe of the stream read from there.
    private enum Landing {
        case at(Int64)
        /// The file ended before a keyframe of the stream: the seek landed past its last one.
        case endOfFile
        /// No keyframe within `seekCheckPackets` packets (a long keyframe group).
        case notWithinCheck
    }

    /// Reads from the landing up to the stream's first keyframe. Moves the read position.
    private func firstKeyframe(of index: Int) throws(MediaError) -> Landing {
        let packet: Packet
        if let existing = seekProbe { packet = existing } else { packet = try Packet(); seekProbe = packet }
        for _ in 0..<FormatInput.seekCheckPackets {
            guard try read(into: packet) else { return .endOfFile }
            defer { packet.unref() }
            guard packet.streamIndex == index, packet.isKeyframe else { continue }
            let time = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
            if time != MediaTime.noPTS { return .at(time) }
        }
        return .notWithinCheck
    }

    /// The packet `seek` reads its check into (allocated at the first seek).
    private var seekProbe: Packet?

    /// The container's start time in seconds (0 when unknown); Moments' times count from here.
    public var startSeconds: Double {
        let t = pointer.pointee.start_time
        return t == MediaTime.noPTS ? 0 : Double(t) / Double(AV_TIME_BASE)
    }

    /// Identifies the container from the first bytes alone (the file name's extension is not
    /// consulted, so a text file named .mp4 is not taken for an MP4). nil when nothing matches
    /// with confidence above `minimumScore`. Any demuxer may answer here: the caller decides.
    public static func sniff(_ source: InputSource, bytes: Int = 1 << 20, minimumScore: Int32 = AVPROBE_SCORE_MAX / 4) -> (
        format: UnsafePointer<AVInputFormat>, score: Int32
    )? {
        let padded = bytes + Int(AVPROBE_PADDING_SIZE)
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: padded)
        defer { buffer.deallocate() }
        buffer.initialize(repeating: 0, count: padded)
        let count = source.read(at: 0, into: buffer, count: bytes)
        guard count > 0 else { return nil }
        // No name (the extension must not count): a static empty C string, valid for the whole call.
        let noName: StaticString = ""
        var data = AVProbeData(
            filename: UnsafeRawPointer(noName.utf8Start).assumingMemoryBound(to: CChar.self),
            buf: buffer, buf_size: Int32(count), mime_type: nil)
        var score: Int32 = 0
        guard let format = av_probe_input_format3(&data, 1, &score), score > minimumScore else { return nil }
        return (format, score)
    }

    private static func openError(_ rc: Int32, path: String, logged: String?, cancelled: Bool) -> MediaError {
        let text = FFmpegError.string(rc) + ((logged?.isEmpty ?? true) ? "" : "; \(logged!)")
        if cancelled || rc == FFmpegError.exit {
            return MediaError(.cancelled, operation: "avformat_open_input", path: path, detail: "cancelled")
        }
        if rc == moments_averror(EPERM) {
            return MediaError(
                .unsupportedContainer, operation: "avformat_open_input", path: path,
                detail: ContainerPolicy.refusalDetail, code: rc, ffmpegMessage: text)
        }
        if rc == moments_averror(ENOENT) {
            return MediaError(
                .fileNotFound, operation: "avformat_open_input", path: path,
                detail: "file not found", code: rc, ffmpegMessage: text)
        }
        if rc == moments_averror(EACCES) || rc == moments_averror(EISDIR) {
            return MediaError(
                .io, operation: "avformat_open_input", path: path,
                detail: "cannot read the file", code: rc, ffmpegMessage: text)
        }
        if let logged, logged.contains("moov atom not found") {
            return MediaError(
                .truncated, operation: "avformat_open_input", path: path,
                detail: "the file is truncated or unfinished: its index (moov atom) is missing",
                code: rc, ffmpegMessage: text)
        }
        return MediaError(
            .notMedia, operation: "avformat_open_input", path: path,
            detail: "not a video file FFmpeg can read", code: rc, ffmpegMessage: text)
    }
}

/// One input stream and its codec parameters (both owned by the FormatInput).
public struct StreamHandle {
    public let stream: UnsafeMutablePointer<AVStream>
    public let parameters: UnsafeMutablePointer<AVCodecParameters>
    public var index: Int { Int(stream.pointee.index) }
    public var type: AVMediaType { parameters.pointee.codec_type }
    public var timeBase: AVRational { stream.pointee.time_base }
    public var isAttachedPicture: Bool { stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0 }
}

extension CancellationToken {
    /// FFmpeg's I/O interrupt callback for this token: blocking reads and writes give up once it
    /// is cancelled. The token must outlive the context it is installed in (its owner keeps it).
    public var interruptCallback: AVIOInterruptCB {
        AVIOInterruptCB(
            callback: { opaque in
                guard let opaque else { return 0 }
                return Unmanaged<CancellationToken>.fromOpaque(opaque).takeUnretainedValue().isCancelled ? 1 : 0
            },
            opaque: Unmanaged.passUnretained(self).toOpaque())
    }
}
