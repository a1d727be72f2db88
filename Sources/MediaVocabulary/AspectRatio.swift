/// The picture shapes a highlight can be rendered in.
public enum AspectRatio: String, Sendable, Codable, CaseIterable {
    /// The source's own shape (no crop).
    case source
    case landscape = "16:9"
    case portrait = "9:16"
    case square = "1:1"
    case feed = "4:5"

    /// Width over height; nil for `.source`.
    public var ratio: Double? {
        switch self {
        case .source: nil
        case .landscape: 16.0 / 9
        case .portrait: 9.0 / 16
        case .square: 1
        case .feed: 4.0 / 5
        }
    }

    /// The crop window (fractions of the displayed picture) that gives this shape from a picture
    /// of `width`×`height` displayed: full height for a narrower shape, full width for a wider
    /// one. Nil when no crop is needed (`.source`, or the picture already has the shape within 1 %).
    public func window(displayWidth width: Int, height: Int) -> (width: Double, height: Double)? {
        guard let ratio, width > 0, height > 0 else { return nil }
        let display = Double(width) / Double(height)
        if abs(display / ratio - 1) < 0.01 { return nil }
        return ratio < display ? (ratio / display, 1) : (1, display / ratio)
    }
}
