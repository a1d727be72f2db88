/// One moment of the highlight, in source seconds: chosen by the selection, stored with the job,
/// drawn on the timeline exports and listed by the API. The one shape a segment has from the
/// selector to the HTTP response.
public struct Segment: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
    public var score: Double
    /// Why it was chosen ("motion", "people", "pinned", ...).
    public var reason: String
    /// A people moment: a face in view in most of it (nil in highlights made before faces were
    /// looked for).
    public var people: Bool?
    /// The reframe's mean window over this segment, when the highlight was reframed.
    public var crop: CropWindow?

    public var duration: Double { end - start }

    public init(start: Double, end: Double, score: Double, reason: String, people: Bool? = nil, crop: CropWindow? = nil) {
        self.start = start; self.end = end; self.score = score; self.reason = reason
        self.people = people; self.crop = crop
    }
}

/// A window of the displayed source picture, in fractions of its width and height (0...1).
public struct CropWindow: Sendable, Codable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
}
