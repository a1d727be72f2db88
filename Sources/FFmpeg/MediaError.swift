import CFFmpeg
@_exported import MediaVocabulary

/// The one error type of the media layer: what failed, on which file, and FFmpeg's own words.
public struct MediaError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of problem this is (`MediaFailure`: plain data, so the service names it without FFmpeg).
    public typealias Kind = MediaFailure

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
