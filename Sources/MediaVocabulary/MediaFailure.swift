/// What kind of problem a media operation met; stable names a caller (the API, the CLI) can
/// branch on (`MediaError.Kind` in the media layer).
public enum MediaFailure: String, Sendable, Codable {
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
