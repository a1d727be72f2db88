import Foundation
import MediaVocabulary

/// A frame rate as an exact ratio: `numerator / denominator` frames per second
/// (`30000/1001` is NTSC 29.97).
public struct TimelineRate: Sendable, Equatable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int

    public init(numerator: Int, denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// 23.976 fps.
    public static let ntsc24 = TimelineRate(numerator: 24000, denominator: 1001)
    /// 29.97 fps.
    public static let ntsc30 = TimelineRate(numerator: 30000, denominator: 1001)
    /// 59.94 fps.
    public static let ntsc60 = TimelineRate(numerator: 60000, denominator: 1001)

    /// The rates editors and cameras use, which `nearest(to:)` snaps to.
    public static let standard: [TimelineRate] = [
        TimelineRate(numerator: 24000, denominator: 1001), TimelineRate(numerator: 24, denominator: 1),
        TimelineRate(numerator: 25, denominator: 1), TimelineRate(numerator: 30000, denominator: 1001),
        TimelineRate(numerator: 30, denominator: 1), TimelineRate(numerator: 48000, denominator: 1001),
        TimelineRate(numerator: 48, denominator: 1), TimelineRate(numerator: 50, denominator: 1),
        TimelineRate(numerator: 60000, denominator: 1001), TimelineRate(numerator: 60, denominator: 1),
        TimelineRate(numerator: 100, denominator: 1), TimelineRate(numerator: 120000, denominator: 1001),
        TimelineRate(numerator: 120, denominator: 1), TimelineRate(numerator: 240, denominator: 1),
        TimelineRate(numerator: 15, denominator: 1), TimelineRate(numerator: 12, denominator: 1)
    ]

    /// Frames per second as a floating-point number.
    public var framesPerSecond: Double { Double(numerator) / Double(denominator) }

    /// Whether both terms are positive (the writers fall back to 30 fps otherwise).
    public var isValid: Bool { numerator > 0 && denominator > 0 }

    /// This rate in lowest terms, or 30/1 when it is not valid.
    public var reduced: TimelineRate {
        guard isValid else { return TimelineRate(numerator: 30, denominator: 1) }
        let g = greatestCommonDivisor(numerator, denominator)
        return TimelineRate(numerator: numerator / g, denominator: denominator / g)
    }

    /// Whether SMPTE timecode at this rate is drop-frame (29.97 and 59.94).
    public var isDropFrame: Bool {
        let r = reduced
        return r == .ntsc30 || r == .ntsc60
    }

    /// Frames per timecode second: the rate rounded to an integer (30 for 29.97).
    public var timecodeBase: Int { max(1, Int(reduced.framesPerSecond.rounded())) }

    public var description: String { "\(numerator)/\(denominator)" }

    /// The standard rate nearest a measured fps (23.976 -> 24000/1001, 29.97 -> 30000/1001,
    /// 59.94 -> 60000/1001, 25, 30, 50, 60, 24, 48, 120 ...) when one lies within 1 %; else a
    /// rational approximation with a denominator of at most 1001. Non-finite, non-positive or
    /// absurd input (a header's rate above 1000 fps) gives 30/1.
    public static func nearest(to fps: Double) -> TimelineRate {
        guard fps.isFinite, fps > 0, fps <= 1000 else { return TimelineRate(numerator: 30, denominator: 1) }
        let best = standard.min { abs($0.framesPerSecond - fps) < abs($1.framesPerSecond - fps) }
        if let best, abs(best.framesPerSecond - fps) <= fps * 0.01 { return best }
        return approximate(fps, maxDenominator: 1001)
    }

    /// Best rational approximation by continued fractions, denominator bounded.
    static func approximate(_ x: Double, maxDenominator: Int) -> TimelineRate {
        guard x < Double(Int32.max) else { return TimelineRate(numerator: Int(Int32.max), denominator: 1) }
        var (h0, h1) = (0, 1)  // numerators  h(n-2), h(n-1)
        var (k0, k1) = (1, 0)  // denominators
        var value = x
        for _ in 0..<32 {
            guard value.isFinite, value < 1e15 else { break }
            let a = Int(value.rounded(.down))
            // The denominator bound is checked before the numerator is formed, and both without
            // trapping: a term of 1e12 (a remainder of 1e-12) must end the expansion, not overflow.
            let (ak, o1) = a.multipliedReportingOverflow(by: k1)
            let (k2, o2) = ak.addingReportingOverflow(k0)
            if o1 || o2 || k2 > maxDenominator { break }
            let (ah, o3) = a.multipliedReportingOverflow(by: h1)
            let (h2, o4) = ah.addingReportingOverflow(h0)
            if o3 || o4 { break }
            (h0, h1, k0, k1) = (h1, h2, k1, k2)
            let fraction = value - Double(a)
            if fraction < 1e-12 { break }
            value = 1 / fraction
        }
        guard h1 > 0, k1 > 0 else { return TimelineRate(numerator: max(1, Int(x.rounded())), denominator: 1) }
        return TimelineRate(numerator: h1, denominator: k1).reduced
    }
}

extension CropWindow {
    /// The window clamped inside the picture, with a size of at least 1/10000; nil when a value
    /// is not finite.
    var sanitized: CropWindow? {
        guard x.isFinite, y.isFinite, width.isFinite, height.isFinite else { return nil }
        let w = min(1, max(0.0001, width)), h = min(1, max(0.0001, height))
        return CropWindow(x: min(1 - w, max(0, x)), y: min(1 - h, max(0, y)), width: w, height: h)
    }
}

/// Everything an editable timeline of one highlight needs.
public struct TimelineDocument: Sendable {
    /// Name of the timeline/project, e.g. "Moments highlight job_abc".
    public var title: String
    /// The original upload's file name, e.g. "IMG_0042.MOV". Any characters are allowed; every
    /// writer escapes it for its format.
    public var sourceName: String
    /// Where editors should look for the media. Nil: `file:///` followed by the percent-encoded
    /// `sourceName`, which an editor shows as offline until it is relinked to the downloaded file.
    public var sourceURL: String?
    /// Seconds.
    public var sourceDuration: Double
    /// The source's frame grid; every time is snapped to it.
    public var rate: TimelineRate
    /// Displayed size of the source (after rotation and pixel aspect).
    public var sourceWidth: Int
    public var sourceHeight: Int
    /// The highlight's size (differs from the source when reframed).
    public var outputWidth: Int
    public var outputHeight: Int
    /// Whether the source, and so every clip, carries audio.
    public var hasAudio: Bool
    /// The highlight's segments in playback order (source seconds, and each one's reframe window;
    /// a crop of nil is the whole picture).
    public var clips: [Segment]
    /// 0: hard cuts; else a dissolve of this length at each join, overlapping the two segments
    /// exactly as the rendered highlight does.
    public var crossfadeSeconds: Double

    public init(
        title: String, sourceName: String, sourceURL: String? = nil, sourceDuration: Double,
        rate: TimelineRate, sourceWidth: Int, sourceHeight: Int, outputWidth: Int, outputHeight: Int,
        hasAudio: Bool = true, clips: [Segment], crossfadeSeconds: Double = 0
    ) {
        self.title = title
        self.sourceName = sourceName
        self.sourceURL = sourceURL
        self.sourceDuration = sourceDuration
        self.rate = rate
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
        self.hasAudio = hasAudio
        self.clips = clips
        self.crossfadeSeconds = crossfadeSeconds
    }
}

/// The interchange formats a timeline can be exported as.
public enum TimelineFormat: String, Sendable, CaseIterable {
    case fcpxml, otio, edl

    /// The HTTP `Content-Type`. FCPXML has no registered media type of its own (Apple's
    /// documentation names none and IANA lists none), so it is served as generic XML, which is what
    /// it is (RFC 7303); the `.fcpxml` extension in the download name is what editors and Finder
    /// key on. OTIO files are JSON. An EDL is plain text, UTF-8 because the clip-name comments
    /// keep the original file name.
    public var mediaType: String {
        switch self {
        case .fcpxml: "application/xml"
        case .otio: "application/json"
        case .edl: "text/plain; charset=utf-8"
        }
    }

    /// File extension without the dot.
    public var fileExtension: String { rawValue }
}

/// Greatest common divisor of two integers (positive; 1 when both are 0).
func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
    var (x, y) = (abs(a), abs(b))
    while y != 0 { (x, y) = (y, x % y) }
    return max(x, 1)
}
