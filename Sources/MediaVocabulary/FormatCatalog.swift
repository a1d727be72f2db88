/// What the server accepts: the containers of `ContainerPolicy` (those the linked FFmpeg has), and
/// the codecs the linked FFmpeg decodes, asked of the libraries at run time.
public struct FormatCatalog: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public var name: String
        public var longName: String
        /// File extensions the container is known by (containers only).
        public var extensions: [String]?

        enum CodingKeys: String, CodingKey { case name, longName = "long_name", extensions }

        public init(name: String, longName: String, extensions: [String]? = nil) {
            self.name = name; self.longName = longName; self.extensions = extensions
        }
    }

    /// Container formats (demuxers) accepted for uploads: exactly `ContainerPolicy.demuxers`
    /// that this FFmpeg build has.
    public var containers: [Entry]
    /// Codecs with a decoder, by kind.
    public var videoCodecs: [Entry]
    public var audioCodecs: [Entry]

    public init(containers: [Entry], videoCodecs: [Entry], audioCodecs: [Entry]) {
        self.containers = containers; self.videoCodecs = videoCodecs; self.audioCodecs = audioCodecs
    }
}
