/// Which containers the media layer opens. An upload is read only through Moments' own I/O over
/// the one file it names (no URL, no protocol, no second file), and only by a demuxer that reads
/// a single self-contained file of the kind a phone or a camera writes. Playlists and manifests
/// (HLS, DASH), concat lists, image sequences and everything else that would reference another
/// resource are refused: they are how one upload would read another account's files.
public enum ContainerPolicy {
    /// FFmpeg demuxer names accepted (each entry is one demuxer, named as FFmpeg names it):
    /// MP4/MOV/3GP (phones, most cameras), Matroska/WebM (Android, screen recorders), AVI (older
    /// cameras), MPEG-TS (AVCHD camcorders' .MTS/.M2TS), MPEG-PS (DVD and older camcorders'
    /// .MPG/.MOD/.VOB), FLV, Ogg, ASF (.WMV/.ASF: older phones', cameras' and Windows exports).
    /// None of them opens another file (MP4's external data references are off in FFmpeg and
    /// refused by the I/O guard anyway; an ASF file is one self-contained stream of packets).
    public static let demuxers: [String] = [
        "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "avi", "mpegts", "mpeg", "flv", "ogg", "asf"
    ]

    /// The same list as FFmpeg's `format_whitelist` option wants it.
    public static let formatWhitelist = demuxers.joined(separator: ",")

    /// Protocols an input may use: none at all (its bytes come through Moments' own reader). The
    /// name matches no protocol, so even a nested context that escaped the I/O guard (FFmpeg does
    /// not hand it to every sub-demuxer) cannot open a file or a URL.
    public static let inputProtocolWhitelist = "none"

    /// Protocols an output may use: a local file.
    public static let outputProtocolWhitelist = "file"

    /// Demuxers of audio-only files: refused as "not a video" (with that reason) rather than as
    /// an unknown container.
    public static let audioOnly: Set<String> = [
        "wav", "w64", "mp3", "aac", "flac", "aiff", "amr", "ac3", "eac3", "wv", "ape", "tta", "caf", "dts", "truehd",
        "mlp"
    ]

    /// What the user is told when a container is refused.
    public static let refusalDetail =
        "this kind of file is not accepted: upload the video file itself (MP4, MOV, MKV, WebM, AVI, MTS, MPG, FLV, OGG or WMV), not a playlist, manifest, list or image sequence"

    public static func accepts(_ demuxer: String) -> Bool { demuxers.contains(demuxer) }

    /// A single-picture demuxer (jpeg_pipe, png_pipe, ...): acceptable only when a still image is asked for.
    public static func isStillImage(_ demuxer: String) -> Bool { demuxer.hasSuffix("_pipe") }
}
