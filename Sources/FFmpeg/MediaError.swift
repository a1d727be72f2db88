import CFFmpeg

/// The one error type of the media layer: what failed, on which file, and FFmpeg's own words.
public struct MediaError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of problem this is; stable names a caller (the API, the CLI) can branch on.
    public enum Kind: String, Sendable, Codable {
        case fileNotFound = "file_not_found"
        case emptyFile = "empty_file"
        /// Not a container FFmpeg can read (random bytes, text, an unknown format).
        case notMedia = "not_media"
        /// A readable file that is not a video: a still image renamed, or audio only.
        case notVideo = "not_video"
        case unsupportedCodec = "unsupported_codec"
        /// A container this server does not open: a playlist or manifest (HLS, DASH), a concat
        /// list, an image sequence, or any format that would read another file.
        case unsupportedContainer = "unsupported_container"
        /// The decoded media runs past the longest duration accepted (whatever its header says).
        case tooLong = "too_long"
        /// More decoded frames than the frame-rate or frame-count limits allow: a flood of tiny
        /// frames, or timestamps that do not advance.
        case tooManyFrames = "too_many_frames"
        /// Decoded timestamps that jump forward implausibly far (hours in one frame).
        case badTimestamps = "bad_timestamps"
        /// A header claiming a picture larger than the limits (refused before allocating anything).
        case dimensionsTooLarge = "dimensions_too_large"
        /// The file ends early: e.g. an MP4 whose index (moov) was never written.
        case truncated = "truncated"
        /// An edit range outside the source's duration or otherwise malformed.
        case invalidRange = "invalid_range"
        case cancelled = "cancelled"
        /// Nothing in the video is fit to show (black, frozen, blurred throughout, or too short).
        case unusable = "no_usable_footage"
        /// Reading or writing a file failed (permissions, disk full, ...).
        case io = "io"
        /// Any other failure inside FFmpeg.
        case ffmpeg = "ffmpeg"
    }

    public let kind: Kind
    /// The operation that failed, e.g. `avformat_open_input` or `render segment 3`.
    public let operation: String
    /// The file concerned, when there is one.
    public let path: String?
    /// A sentence for a person: what is wrong.
    public let detail: String
    /// FFmpeg's error code (negative AVERROR), when FFmpeg reported the failure.
    public let code: Int32?
    /// FFmpeg's text: av_strerror of `code`, plus the last error FFmpeg logged for this context.
    public let ffmpegMessage: String?

    public init(
        _ kind: Kind, operation: String, path: String? = nil, detail: String,
        code: Int32? = nil, ffmpegMessage: String? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.path = path
        self.detail = detail
        self.code = code
        self.ffmpegMessage = ffmpegMessage
    }

    /// An error from an FFmpeg call that returned a negative code.
    public static func ffmpeg(
        _ code: Int32, _ operation: String, path: String? = nil, kind: Kind = .ffmpeg,
        detail: String? = nil, context: UnsafeMutableRawPointer? = nil
    ) -> MediaError {
        var text = FFmpegError.string(code)
        if let context, let logged = FFmpegLog.lastError(for: context), !logged.isEmpty, logged != text {
            text += "; \(logged)"
        }
        return MediaError(
            kind, operation: operation, path: path, detail: detail ?? text, code: code, ffmpegMessage: text)
    }

    public var description: String {
        var s = ""
        if let path { s += "\(path): " }
        s += detail
        if let ffmpegMessage, ffmpegMessage != detail {
            s += " (\(operation): \(ffmpegMessage))"
        } else if code == nil, kind == .ffmpeg || kind == .io {
            s += " (\(operation))"
        }
        return s
    }
}

public enum FFmpegError {
    public static let eof = moments_averror_eof()
    public static let again = moments_averror_eagain()
    public static let invalidData = moments_averror_invaliddata()
    public static let exit = moments_averror_exit()
    public static let outOfMemory = moments_averror(ENOMEM)

    /// A decoder's complaint about one packet or frame (bad data, an unsupported feature in a
    /// damaged stretch): counted and skipped, never fatal. Running out of memory still is.
    public static func isDamage(_ code: Int32) -> Bool {
        code < 0 && code != again && code != eof && code != outOfMemory && code != exit
    }

    /// av_strerror's text for a negative code.
    public static func string(_ code: Int32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard let base = buffer.baseAddress else { return "error \(code)" }
            if av_strerror(code, base, 256) < 0 { return "unknown FFmpeg error \(code)" }
            return String(cString: base)
        }
    }
}

/// Throws a MediaError when an FFmpeg call returned a negative code.
@discardableResult
public func check(
    _ code: Int32, _ operation: @autoclosure () -> String, path: String? = nil,
    context: UnsafeMutableRawPointer? = nil
) throws(MediaError) -> Int32 {
    if code < 0 { throw MediaError.ffmpeg(code, operation(), path: path, context: context) }
    return code
}
