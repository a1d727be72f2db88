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

    /// Reads the next packet; false at the end of the file, throws when the demuxer cannot read on.
    /// After `seek`, the packets it read on its way to the keyframe and kept come first.
    public func read(into packet: Packet) throws(MediaError) -> Bool {
        if heldNext < held.count {
            av_packet_unref(packet.pointer)
            av_packet_move_ref(packet.pointer, held[heldNext].pointer)
            heldNext += 1
            if heldNext == held.count { releaseHeld() }
            return true
        }
        return try readDemuxer(into: packet)
    }

    /// The demuxer's next packet (nothing held by a seek).
    private func readDemuxer(into packet: Packet) throws(MediaError) -> Bool {
        let rc = av_read_frame(pointer, packet.pointer)
        if rc >= 0 { return true }
        if rc == FFmpegError.eof { return false }
        if rc == FFmpegError.exit || cancellation?.isCancelled == true {
            throw MediaError(.cancelled, operation: "av_read_frame", path: path, detail: "cancelled")
        }
        throw MediaError.ffmpeg(rc, "av_read_frame", path: path, kind: .io, context: logKey)
    }

    /// Seeks `stream` to its last keyframe at or before `timestamp` (presentation time, in the
    /// stream's time base): the next packet of the stream `read` returns is that keyframe, and
    /// packets of the other streams around it come in file order. When the stream has no keyframe
    /// at or before `timestamp`, reading starts at the start of the file.
    ///
    /// `av_seek_frame` with AVSEEK_FLAG_BACKWARD lands on a keyframe only where the demuxer has an
    /// index of them (MP4, Matroska, AVI). MPEG-TS and MPEG-PS have none: FFmpeg bisects the file
    /// by byte position and lands on whichever packet of the stream is the last with a decode time
    /// at or before the target, a keyframe or not (its demuxer even indexes every packet it reads
    /// there as a keyframe). Reading from such a landing hands the decoder pictures whose
    /// references lie before it; after the stream's last keyframe no picture follows that can be
    /// decoded. So the landing is only where the search starts: the packets from there to
    /// `timestamp` are read (nothing decoded) for the last keyframe among them; when there is none,
    /// the search starts 1, 2, 4 … 64 s earlier, and finally at the start of the file. The reading
    /// is then put on that keyframe: a seek to its decode time (which FFmpeg's bisection lands on
    /// exactly, and an index at or before it), then packets read up to it.
    public func seek(stream index: Int, to timestamp: Int64) throws(MediaError) {
        guard let handle = stream(index: index) else {
            throw MediaError(.invalidRange, operation: "seek", path: path, detail: "no stream \(index)")
        }
        releaseHeld()
        let everyPacketIsKey = handle.type != AVMEDIA_TYPE_VIDEO
        // The demuxer's own seek: on a keyframe at or before the target where it has an index.
        try seekBackward(index, timestamp)
        switch try searchKeyframe(index, until: timestamp, everyPacketIsKey: everyPacketIsKey, holdLanding: true) {
        case .landed: return
        case .found(let key): return try position(index, at: key, searchedFrom: timestamp)
        case .none: break
        }
        let second = max(1, MediaTime.timestamp(1, handle.timeBase))
        for step in 0..<FormatInput.searchSteps {
            let from = timestamp &- (second << step)
            try seekBackward(index, from)
            let search = try searchKeyframe(
                index, until: timestamp, everyPacketIsKey: everyPacketIsKey, holdLanding: false)
            if case .found(let key) = search { return try position(index, at: key, searchedFrom: from) }
        }
        try seekToStart(index)
        let search = try searchKeyframe(index, until: timestamp, everyPacketIsKey: everyPacketIsKey, holdLanding: false)
        if case .found(let key) = search { return try position(index, at: key, searchedFrom: nil) }
        // No keyframe at or before the target: read from the start.
        try seekToStart(index)
    }

    /// How many times `seek` starts its search further back before reading from the start of the
    /// file (the last: 64 s before the target).
    public static let searchSteps = 7
    /// Packets a search or a positioning reads at most from one landing.
    public static let seekReadPackets = 1 << 16

    private func seekBackward(_ index: Int, _ timestamp: Int64) throws(MediaError) {
        try check(
            av_seek_frame(pointer, Int32(index), timestamp, AVSEEK_FLAG_BACKWARD),
            "av_seek_frame to \(timestamp)", path: path, context: logKey)
    }

    /// To the first byte of the file, or where the demuxer seeks by time only, to its first time.
    private func seekToStart(_ index: Int) throws(MediaError) {
        releaseHeld()
        if av_seek_frame(pointer, -1, 0, AVSEEK_FLAG_BYTE) >= 0 { return }
        try check(
            av_seek_frame(pointer, -1, Int64.min / 2, AVSEEK_FLAG_BACKWARD), "av_seek_frame to the start", path: path,
            context: logKey)
    }

    /// A keyframe found by a search: its times as the demuxer gives them.
    private struct KeyPacket {
        var pts: Int64
        var dts: Int64
        /// The decode time (the presentation time when it has none).
        var decodeTime: Int64 { dts != MediaTime.noPTS ? dts : pts }
        /// The presentation time (the decode time when it has none).
        var time: Int64 { pts != MediaTime.noPTS ? pts : dts }
    }

    private enum Search {
        /// The stream's first packet after the landing is a keyframe at or before the target;
        /// it and the packets read before it are held for `read`.
        case landed
        /// The last keyframe at or before the target after the landing (read past).
        case found(KeyPacket)
        /// None between the landing and the target (or the end of the file).
        case none
    }

    /// Reads from the landing until the stream's packets pass `timestamp`, for its last keyframe
    /// at or before it. With `holdLanding`, a landing right on such a keyframe is kept (an
    /// index's landing: nothing to search).
    private func searchKeyframe(
        _ index: Int, until timestamp: Int64, everyPacketIsKey: Bool, holdLanding: Bool
    ) throws(MediaError) -> Search {
        let packet = try probePacket()
        var found: KeyPacket?
        var first = true
        for _ in 0..<FormatInput.seekReadPackets {
            guard try readDemuxer(into: packet) else { break }
            guard packet.streamIndex == index else {
                if holdLanding && first { try hold(packet) } else { packet.unref() }
                continue
            }
            defer { packet.unref() }
            let key = KeyPacket(pts: packet.pts, dts: packet.dts)
            let isKey = (packet.isKeyframe || everyPacketIsKey) && key.time != MediaTime.noPTS && key.time <= timestamp
            if holdLanding && first {
                first = false
                if isKey {
                    try hold(packet)
                    return .landed
                }
                releaseHeld()
            }
            if isKey { found = key }
            // Decode order: any later keyframe is shown after this packet's decode time.
            if key.decodeTime != MediaTime.noPTS && key.decodeTime > timestamp { break }
        }
        releaseHeld()
        packet.unref()
        return found.map { .found($0) } ?? .none
    }

    /// Puts the reading on `key`: seeks to its decode time and reads up to it, holding it and the
    /// other streams' packets read on the way from a second before it on (the stream's own
    /// earlier packets cannot be decoded without what precedes them). Should that landing be
    /// after the keyframe, the search's landing is tried, then the start of the file.
    private func position(_ index: Int, at key: KeyPacket, searchedFrom: Int64?) throws(MediaError) {
        try seekBackward(index, key.decodeTime)
        if try advance(index, to: key) { return }
        if let searchedFrom {
            try seekBackward(index, searchedFrom)
            if try advance(index, to: key) { return }
        }
        try seekToStart(index)
        if try advance(index, to: key) { return }
        try seekToStart(index)
    }

    /// Reads up to `key`, holding what `position` keeps; false (nothing held) when the stream
    /// passes it first or the file ends.
    private func advance(_ index: Int, to key: KeyPacket) throws(MediaError) -> Bool {
        releaseHeld()
        guard let keyStream = stream(index: index) else { return false }
        let keep = MediaTime.seconds(key.time, keyStream.timeBase) - 1
        let packet = try probePacket()
        for _ in 0..<FormatInput.seekReadPackets {
            guard try readDemuxer(into: packet) else { break }
            if packet.streamIndex == index {
                if packet.pts == key.pts && packet.dts == key.dts {
                    try hold(packet)
                    return true
                }
                let decodeTime = packet.dts != MediaTime.noPTS ? packet.dts : packet.pts
                packet.unref()
                if decodeTime != MediaTime.noPTS && decodeTime > key.decodeTime { break }
                continue
            }
            let time = packet.pts != MediaTime.noPTS ? packet.pts : packet.dts
            if time != MediaTime.noPTS, let other = stream(index: packet.streamIndex),
                MediaTime.seconds(time, other.timeBase) < keep
            {
                packet.unref()
                continue
            }
            try hold(packet)
        }
        packet.unref()
        releaseHeld()
        return false
    }

    /// Packets a seek has read that `read` returns first, from `heldNext` on.
    private var held: [Packet] = []
    private var heldNext = 0

    /// Moves `packet`'s data to the end of the held packets.
    private func hold(_ packet: Packet) throws(MediaError) {
        let kept = try Packet()
        av_packet_move_ref(kept.pointer, packet.pointer)
        held.append(kept)
    }

    private func releaseHeld() {
        held.removeAll(keepingCapacity: true)
        heldNext = 0
    }

    /// The packet searches read into (allocated at the first seek).
    private func probePacket() throws(MediaError) -> Packet {
        if let existing = seekProbe { return existing }
        let packet = try Packet()
        seekProbe = packet
        return packet
    }

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
