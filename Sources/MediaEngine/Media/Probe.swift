import CFFmpeg
import FFmpeg
import Foundation

/// Reads a file's header and index and says what it holds, refusing what Moments cannot use.
public enum Probe {
    /// Packets read to judge whether the frame rate varies (no decoding).
    public static let frameRateSamplePackets = 240
    /// Bytes read at most for that judgement (a few seconds of high-bit-rate 4K).
    public static let frameRateSampleBytes = 64 << 20

    /// Describes `path`. `allowStillImage` accepts a single picture (to inspect a poster JPEG).
    public static func probe(_ path: String, allowStillImage: Bool = false) throws(MediaError) -> MediaInfo {
        let size = try fileSize(path)
        let input = try open(path, size: size, cancellation: nil, allowStillImage: allowStillImage)
        return try describe(input, fileSize: size, allowStillImage: allowStillImage)
    }

    /// Describes bytes in memory (`name` stands for the file in messages): the same checks and the
    /// same safe open as a file (the probe fuzzer's entry).
    public static func probe(bytes: [UInt8], name: String = "memory", allowStillImage: Bool = false) throws(MediaError)
        -> MediaInfo
    {
        let input = try open(InputSource(bytes: bytes, name: name), cancellation: nil, allowStillImage: allowStillImage)
        return try describe(input, fileSize: Int64(bytes.count), allowStillImage: allowStillImage)
    }

    /// Opens `path` for reading after the checks every reader needs: the file exists and is not
    /// empty, it is a container FFmpeg reads, no picture is larger than MediaLimits (checked on the
    /// header before any stream is decoded), and it has a usable video stream.
    package static func open(
        _ path: String, size: Int64? = nil, cancellation: CancellationToken?,
        allowStillImage: Bool = false
    ) throws(MediaError) -> FormatInput {
        _ = FFmpegLog.installed
        let size = try { () throws(MediaError) -> Int64 in
            if let size { return size }; return try fileSize(path)
        }()
        if size == 0 {
            throw MediaError(.emptyFile, operation: "stat", path: path, detail: "the file is empty (0 bytes)")
        }
        return try open(InputSource(path: path), cancellation: cancellation, allowStillImage: allowStillImage)
    }

    /// Opens `source` (a file already open, or bytes in memory) through the safe path: the
    /// container is sniffed from its content and must be one `ContainerPolicy` accepts; FFmpeg
    /// reads only `source` and can open nothing else.
    package static func open(_ source: InputSource, cancellation: CancellationToken?, allowStillImage: Bool = false)
        throws(MediaError) -> FormatInput
    {
        _ = FFmpegLog.installed
        let path = source.name
        if source.size == 0 {
            throw MediaError(.emptyFile, operation: "stat", path: path, detail: "the file is empty (0 bytes)")
        }
        guard let sniffed = FormatInput.sniff(source) else {
            throw MediaError(.notMedia, operation: "av_probe_input_format3", path: path, detail: notMediaDetail)
        }
        let name = String(cString: sniffed.format.pointee.name)
        var whitelist = ContainerPolicy.formatWhitelist
        if !ContainerPolicy.accepts(name) {
            if ContainerPolicy.isStillImage(name) {
                guard allowStillImage else {
                    let kind = sniffed.format.pointee.long_name.map { String(cString: $0) } ?? name
                    throw MediaError(
                        .notVideo, operation: "check container", path: path,
                        detail: "this is a still image (\(kind)), not a video")
                }
                whitelist = name
            } else if ContainerPolicy.audioOnly.contains(name) {
                throw MediaError(
                    .notVideo, operation: "check container", path: path,
                    detail: "this is an audio file (\(name)): it has audio but no video stream")
            } else if sniffed.score <= AVPROBE_SCORE_EXTENSION {
                // A weak guess at some raw stream: noise, not a refused container.
                throw MediaError(.notMedia, operation: "check container", path: path, detail: notMediaDetail)
            } else {
                throw MediaError(
                    .unsupportedContainer, operation: "check container", path: path,
                    detail: ContainerPolicy.refusalDetail, ffmpegMessage: "demuxer \(name) refused")
            }
        }
        let input = try FormatInput(
            source: source, format: sniffed.format, probeScore: sniffed.score,
            whitelist: whitelist, cancellation: cancellation)
        try checkDimensions(input)
        try input.findStreamInfo()
        try checkDimensions(input)
        _ = try videoStreamIndex(input, allowStillImage: allowStillImage)
        return input
    }

    package static let notMediaDetail = "not a video file: its content matches no container this server reads"

    package static func fileSize(_ path: String) throws(MediaError) -> Int64 {
        var info = stat()
        if stat(path, &info) != 0 {
            let code = errno
            if code == ENOENT {
                throw MediaError(.fileNotFound, operation: "stat", path: path, detail: "file not found")
            }
            throw MediaError(.io, operation: "stat", path: path, detail: String(cString: strerror(code)))
        }
        if (info.st_mode & S_IFMT) != S_IFREG {
            throw MediaError(.io, operation: "stat", path: path, detail: "not a regular file")
        }
        return Int64(info.st_size)
    }

    private static func checkDimensions(_ input: FormatInput) throws(MediaError) {
        for handle in input.streams where handle.type == AVMEDIA_TYPE_VIDEO {
            let par = handle.parameters.pointee
            let w = Int(par.width), h = Int(par.height)
            if w > MediaLimits.maxSide || h > MediaLimits.maxSide || w * h > MediaLimits.maxPixels || w < 0 || h < 0 {
                throw MediaError(
                    .dimensionsTooLarge, operation: "check picture size", path: input.path,
                    detail:
                        "the video claims a \(w)x\(h) picture; the limit is \(MediaLimits.maxSide) px a side and \(MediaLimits.maxPixels / 1_000_000) Mpixel"
                )
            }
        }
    }

    /// The main video stream: FFmpeg's best video stream that is not cover art. Refuses still
    /// images and audio-only files with a reason.
    package static func videoStreamIndex(_ input: FormatInput, allowStillImage: Bool = false) throws(MediaError) -> Int {
        let name = input.formatName
        if !allowStillImage && (name == "image2" || name.hasSuffix("_pipe")) {
            throw MediaError(
                .notVideo, operation: "check streams", path: input.path,
                detail: "this is a still image (\(input.formatLongName)), not a video")
        }
        var candidate = input.streams.first { $0.type == AVMEDIA_TYPE_VIDEO && !$0.isAttachedPicture }
        let found = av_find_best_stream(input.pointer, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        if found >= 0, let best = input.stream(index: Int(found)), !best.isAttachedPicture { candidate = best }
        guard let video = candidate else {
            if input.probeScore <= AVPROBE_SCORE_EXTENSION {  // a weak guess at a raw audio stream: noise
                throw MediaError(.notMedia, operation: "check streams", path: input.path, detail: notMediaDetail)
            }
            let hasAudio = input.streams.contains { $0.type == AVMEDIA_TYPE_AUDIO }
            throw MediaError(
                .notVideo, operation: "check streams", path: input.path,
                detail: hasAudio ? "the file has audio but no video stream" : "the file has no video stream")
        }
        let par = video.parameters.pointee
        if par.width <= 0 || par.height <= 0 {
            throw MediaError(
                .notMedia, operation: "check streams", path: input.path,
                detail: "the video stream has no picture size; the file is damaged or not a video")
        }
        if avcodec_find_decoder(par.codec_id) == nil {
            let codec = String(cString: avcodec_get_name(par.codec_id))
            throw MediaError(
                .unsupportedCodec, operation: "avcodec_find_decoder", path: input.path,
                detail: "the video codec \(codec) is not supported by this server")
        }
        let frames = video.stream.pointee.nb_frames
        let duration = input.pointer.pointee.duration
        if !allowStillImage && (frames == 1 || (frames == 0 && duration <= 0 && isImageCodec(par.codec_id))) {
            throw MediaError(
                .notVideo, operation: "check streams", path: input.path,
                detail: "this is a still image, not a video")
        }
        return video.index
    }

    /// The main video stream's handle (after `open`'s checks).
    package static func videoStream(_ input: FormatInput, allowStillImage: Bool = false) throws(MediaError) -> StreamHandle {
        let index = try videoStreamIndex(input, allowStillImage: allowStillImage)
        guard let handle = input.stream(index: index) else {
            throw MediaError(
                .notMedia, operation: "check streams", path: input.path, detail: "the video stream vanished")
        }
        return handle
    }

    /// The main audio stream, if any has a decoder here.
    package static func audioStream(_ input: FormatInput, video: Int) -> StreamHandle? {
        let found = av_find_best_stream(input.pointer, AVMEDIA_TYPE_AUDIO, -1, Int32(video), nil, 0)
        guard found >= 0, let handle = input.stream(index: Int(found)) else { return nil }
        let par = handle.parameters.pointee
        // A rate or channel count no recorder writes is a lie to size buffers with: no usable audio.
        guard (1_000...768_000).contains(par.sample_rate), (1...64).contains(par.ch_layout.nb_channels),
            avcodec_find_decoder(par.codec_id) != nil
        else { return nil }
        return handle
    }

    private static func isImageCodec(_ id: AVCodecID) -> Bool {
        guard let descriptor = avcodec_descriptor_get(id) else { return false }
        return descriptor.pointee.props & AV_CODEC_PROP_INTRA_ONLY != 0
            && [
                AV_CODEC_ID_PNG, AV_CODEC_ID_MJPEG, AV_CODEC_ID_BMP, AV_CODEC_ID_TIFF, AV_CODEC_ID_WEBP, AV_CODEC_ID_GIF
            ].contains(id)
    }

    package static func describe(_ input: FormatInput, fileSize: Int64, allowStillImage: Bool = false) throws(MediaError)
        -> MediaInfo
    {
        let handle = try videoStream(input, allowStillImage: allowStillImage)
        let videoIndex = handle.index
        let st = handle.stream
        let par = handle.parameters.pointee
        let start = input.startSeconds
        try checkComplete(input, fileSize: fileSize)

        // The header's claim, for information: lengths and work follow the decoded timestamps.
        var duration = 0.0
        if input.pointer.pointee.duration > 0 {
            duration = Double(input.pointer.pointee.duration) / Double(AV_TIME_BASE)
        } else if st.pointee.duration > 0 {
            duration = MediaTime.seconds(st.pointee.duration, st.pointee.time_base)
        }
        if !duration.isFinite || duration < 0 { duration = 0 }

        let rotation = Self.rotation(of: st)
        var sar = par.sample_aspect_ratio
        // No camera stretches pixels more than a few times; a wilder ratio would size the output.
        if sar.num <= 0 || sar.den <= 0 || !(0.125...8).contains(av_q2d(sar)) { sar = AVRational(num: 1, den: 1) }
        var displayW = Int((Double(par.width) * Double(sar.num) / Double(sar.den)).rounded())
        var displayH = Int(par.height)
        displayW += displayW % 2
        if rotation == 90 || rotation == 270 { swap(&displayW, &displayH) }

        let pixelFormat = AVPixelFormat(rawValue: par.format)
        let descriptor = av_pix_fmt_desc_get(pixelFormat)
        let bitDepth = descriptor.map { Int($0.pointee.comp.0.depth) } ?? 8
        let avg = st.pointee.avg_frame_rate
        let real = st.pointee.r_frame_rate
        let fps = avg.num > 0 && avg.den > 0 ? av_q2d(avg) : (real.num > 0 && real.den > 0 ? av_q2d(real) : 0)
        let variable = try isVariableFrameRate(input, stream: videoIndex)

        let transfer = par.color_trc
        let video = VideoStreamInfo(
            index: videoIndex,
            codec: String(cString: avcodec_get_name(par.codec_id)),
            codecLongName: avcodec_descriptor_get(par.codec_id)?.pointee.long_name.map { String(cString: $0) } ?? "",
            profile: avcodec_profile_name(par.codec_id, par.profile).map { String(cString: $0) },
            codedWidth: Int(par.width), codedHeight: Int(par.height),
            displayWidth: displayW, displayHeight: displayH, rotation: rotation,
            sampleAspectRatio: Rational(sar),
            pixelFormat: av_get_pix_fmt_name(pixelFormat).map { String(cString: $0) } ?? "unknown",
            bitDepth: bitDepth, frameRate: fps, isVariableFrameRate: variable,
            frameCount: st.pointee.nb_frames > 0 ? Int(st.pointee.nb_frames) : nil,
            colorTransfer: av_color_transfer_name(transfer).map { String(cString: $0) } ?? "unknown",
            colorPrimaries: av_color_primaries_name(par.color_primaries).map { String(cString: $0) } ?? "unknown",
            colorSpace: av_color_space_name(par.color_space).map { String(cString: $0) } ?? "unknown",
            colorRange: av_color_range_name(par.color_range).map { String(cString: $0) } ?? "unknown",
            isHDR: transfer == AVCOL_TRC_SMPTE2084 || transfer == AVCOL_TRC_ARIB_STD_B67,
            bitRate: par.bit_rate > 0 ? Int(par.bit_rate) : nil)

        var audio: [AudioStreamInfo] = []
        let mainAudio = audioStream(input, video: videoIndex)?.index
        for stream in input.streams where stream.type == AVMEDIA_TYPE_AUDIO {
            let a = stream.parameters
            let i = stream.index
            let layout: String = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
                guard av_channel_layout_describe(&a.pointee.ch_layout, buffer.baseAddress, 64) >= 0 else {
                    return "unknown"
                }
                return String(cString: buffer.baseAddress!)
            }
            let info = AudioStreamInfo(
                index: i, codec: String(cString: avcodec_get_name(a.pointee.codec_id)),
                sampleRate: Int(a.pointee.sample_rate), channels: Int(a.pointee.ch_layout.nb_channels),
                channelLayout: layout, bitRate: a.pointee.bit_rate > 0 ? Int(a.pointee.bit_rate) : nil)
            if i == mainAudio { audio.insert(info, at: 0) } else { audio.append(info) }
        }

        let bitRate = input.pointer.pointee.bit_rate
        return MediaInfo(
            path: input.path, container: input.formatName, containerLongName: input.formatLongName,
            duration: duration, startTime: start,
            bitRate: bitRate > 0 ? Int(bitRate) : (duration > 0 ? Int(Double(fileSize) * 8 / duration) : nil),
            fileSize: fileSize, video: video, audio: audio)
    }

    /// Clockwise rotation from the stream's display matrix, snapped to a multiple of 90.
    package static func rotation(of stream: UnsafeMutablePointer<AVStream>) -> Int {
        var size: Int = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 else { return 0 }
        let angle = data.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
        guard angle.isFinite else { return 0 }
        let clockwise = Int((-angle / 90).rounded()) * 90
        return ((clockwise % 360) + 360) % 360
    }

    /// An index that points past the end of the file means the file was cut short.
    private static func checkComplete(_ input: FormatInput, fileSize: Int64) throws(MediaError) {
        var needed: Int64 = 0
        for handle in input.streams {
            let st = handle.stream
            let count = avformat_index_get_entries_count(st)
            guard count > 0, let last = avformat_index_get_entry(st, count - 1) else { continue }
            needed = max(needed, last.pointee.pos + Int64(last.pointee.size))
        }
        if needed > fileSize {
            let percent = Int((Double(needed - fileSize) / Double(needed) * 100).rounded(.up))
            throw MediaError(
                .truncated, operation: "check index", path: input.path,
                detail:
                    "the file is truncated: about \(percent)% of its media data is missing (\(fileSize) of \(needed) bytes)"
            )
        }
    }

    /// Reads the first packets of the video stream (no decoding) and compares their durations.
    private static func isVariableFrameRate(_ input: FormatInput, stream index: Int) throws(MediaError) -> Bool {
        let packet = try Packet()
        var times: [Int64] = []
        times.reserveCapacity(frameRateSamplePackets)
        var reads = 0, bytes = 0
        while times.count < frameRateSamplePackets, reads < frameRateSamplePackets * 8, bytes < frameRateSampleBytes {
            reads += 1
            let more: Bool
            do { more = try input.read(into: packet) } catch { break }
            if !more { break }
            defer { packet.unref() }
            bytes += Int(max(0, packet.pointer.pointee.size))
            if packet.streamIndex == index, packet.pts != MediaTime.noPTS { times.append(packet.pts) }
        }
        guard times.count >= 3 else { return false }
        times.sort()
        var smallest = Int64.max, largest: Int64 = 0
        for i in 1..<times.count {
            let d = times[i] - times[i - 1]
            guard d > 0 else { continue }
            smallest = min(smallest, d)
            largest = max(largest, d)
        }
        guard smallest != Int64.max else { return false }
        // Allow rounding jitter of one tick plus 2 %.
        return Double(largest - smallest) > 1 + 0.02 * Double(smallest)
    }
}
