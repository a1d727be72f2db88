/// What `Probe` learns about a file.
public struct MediaInfo: Codable, Sendable, Equatable {
    public var path: String
    /// FFmpeg's demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2".
    public var container: String
    public var containerLongName: String
    /// Seconds, from the container's start.
    public var duration: Double
    /// The container's start time in seconds (timestamps are reported relative to it).
    public var startTime: Double
    /// Overall bit rate in bits per second, when known.
    public var bitRate: Int?
    public var fileSize: Int64
    public var video: VideoStreamInfo
    public var audio: [AudioStreamInfo]

    /// The main audio stream, if any.
    public var mainAudio: AudioStreamInfo? { audio.first }
}

public struct VideoStreamInfo: Codable, Sendable, Equatable {
    public var index: Int
    public var codec: String
    public var codecLongName: String
    public var profile: String?
    /// The size of the pictures as stored.
    public var codedWidth: Int
    public var codedHeight: Int
    /// The size a player shows: rotation and non-square pixels applied.
    public var displayWidth: Int
    public var displayHeight: Int
    /// Clockwise degrees a player rotates the stored picture (0, 90, 180, 270), from the display matrix.
    public var rotation: Int
    public var sampleAspectRatio: Rational
    public var pixelFormat: String
    public var bitDepth: Int
    /// Average frames per second.
    public var frameRate: Double
    /// True when frame durations vary (phone recordings often do).
    public var isVariableFrameRate: Bool
    public var frameCount: Int?
    public var colorTransfer: String
    public var colorPrimaries: String
    public var colorSpace: String
    public var colorRange: String
    /// True for PQ (SMPTE ST 2084) or HLG transfer.
    public var isHDR: Bool
    public var bitRate: Int?
}

public struct AudioStreamInfo: Codable, Sendable, Equatable {
    public var index: Int
    public var codec: String
    public var sampleRate: Int
    public var channels: Int
    public var channelLayout: String
    public var bitRate: Int?
}
