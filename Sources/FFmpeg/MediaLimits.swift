/// Limits applied to every input before anything is allocated for its pictures.
public enum MediaLimits {
    /// Largest accepted picture side, in pixels.
    public static let maxSide = 8192
    /// Largest accepted picture area (36 Mpixel).
    public static let maxPixels = 36_000_000
}
