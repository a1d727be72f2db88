/// How much care the render takes: an encode up to 480p, 720p or 1080p (2160p on a plan whose
/// `maxOutputSide` allows it), or `original`, the source's own coded pictures copied where the
/// highlight allows (a plan's `original` must allow it). Stored with the job as its raw value.
public enum HighlightQuality: String, CaseIterable, Sendable, Codable {
    case low, medium, high, original

    public static let `default` = HighlightQuality.high
}
