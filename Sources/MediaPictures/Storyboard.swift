import MediaEngine
import FFmpeg
import Foundation

/// One score curve of a storyboard (motion, loudness, quality, ...), drawn in its own lane.
public struct StoryboardCurve: Sendable, Equatable {
    /// Shown at the top-left of the lane (at most `Storyboard.maxLabelLength` characters are drawn).
    public var label: String
    public var color: StoryboardColor
    /// One value per second of the input (value k covers [k, k+1) s), already normalised to 0...1.
    /// Values outside 0...1 are clamped, NaN counts as 0; values past the duration are ignored.
    public var values: [Float]

    public init(label: String, color: StoryboardColor, values: [Float]) {
        self.label = label
        self.color = color
        self.values = values
    }

    /// With the colour as an `(r, g, b)` tuple.
    public init(label: String, color: (UInt8, UInt8, UInt8), values: [Float]) {
        self.init(label: label, color: StoryboardColor(color), values: values)
    }
}

/// What a storyboard shows besides the pictures: the input's length, score curves, shot cuts and
/// the chosen segments. Out-of-range values are clamped when drawing, never trusted for sizes.
public struct StoryboardSpec: Sendable, Equatable {
    /// Seconds of the input. When not a positive finite number, the container's duration is used.
    public var duration: Double
    public var curves: [StoryboardCurve]
    /// Shot boundary times (seconds).
    public var cuts: [Double]
    /// Chosen segments in source seconds, numbered 1...n in this order.
    public var segments: [TimeRange]
    /// Picture width in pixels (clamped to 256...4096); the height follows from the layout.
    public var width = 1280
    /// Filmstrip frames, evenly spaced over the duration (clamped to 1...60).
    public var thumbnails = 10

    public init(duration: Double, curves: [StoryboardCurve], cuts: [Double], segments: [TimeRange]) {
        self.duration = duration
        self.curves = curves
        self.cuts = cuts
        self.segments = segments
    }
}

/// A rectangle of the storyboard picture, in pixels from its top-left corner.
public struct StoryboardRect: Sendable, Equatable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
    public var midX: Int { x + width / 2 }
    public var midY: Int { y + height / 2 }

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// Where everything of a storyboard sits, from the spec and the video's display size alone (no
/// decoding): the picture's size, the time scale, and the rectangles of each part. Exposed so a
/// caller (and the tests) can find a segment, a cut or a thumbnail in the picture.
public struct StoryboardLayout: Sendable, Equatable {
    /// Size of the whole picture.
    public var width: Int
    public var height: Int
    /// Pixel size of one font pixel (1 on narrow pictures, up to 3 on wide ones).
    public var scale: Int
    /// Seconds drawn, clamped (the time axis runs from 0 to this).
    public var duration: Double
    /// The strip with the title and the numbers.
    public var title: StoryboardRect
    /// The row holding the segments' number tags, above the filmstrip.
    public var markers: StoryboardRect
    /// The thumbnails' row and each thumbnail's cell in it.
    public var filmstrip: StoryboardRect
    public var cells: [StoryboardRect]
    /// Each thumbnail's rectangle (inside its cell, aspect kept, centred).
    public var thumbnails: [StoryboardRect]
    /// Ticks and time labels.
    public var axis: StoryboardRect
    /// One lane per curve (at most `Storyboard.maxCurves`).
    public var lanes: [StoryboardRect]
    /// The legend at the bottom.
    public var legend: StoryboardRect
    /// x of time 0 and of `duration`.
    public var plotLeft: Int
    public var plotRight: Int

    /// The pixel column of `seconds` (clamped to the time axis).
    public func x(at seconds: Double) -> Int {
        guard duration > 0, seconds.isFinite else { return plotLeft }
        let f = min(1, max(0, seconds / duration))
        return plotLeft + Int((f * Double(plotRight - plotLeft)).rounded())
    }

    /// The time at pixel column `x`.
    func seconds(at x: Int) -> Double {
        guard plotRight > plotLeft else { return 0 }
        return Double(x - plotLeft) / Double(plotRight - plotLeft) * duration
    }

    /// The time range a thumbnail cell stands for.
    public func cellRange(_ index: Int) -> TimeRange {
        let n = Double(max(1, cells.count))
        return TimeRange(start: duration * Double(index) / n, end: duration * Double(index + 1) / n)
    }
}

/// A picture of a job for people who would rather look than read JSON: a filmstrip of the input,
/// a time axis, each score curve in its own lane, the shot cuts as thin lines and the chosen
/// segments as numbered translucent bands across it all. PNG, dark background.
public enum Storyboard {
    public static let minWidth = 256
    public static let maxWidth = 4096
    public static let maxThumbnails = 60
    /// Curves past this many are not drawn (they would each add a lane).
    public static let maxCurves = 8
    /// Segments past this many are not drawn.
    public static let maxSegments = 99
    /// Cuts past this many are not drawn.
    public static let maxCuts = 10_000
    public static let maxLabelLength = 24

    /// Decodes `spec.thumbnails` frames of `source` (upright: the display rotation applied as
    /// Poster does), draws the storyboard and writes a PNG to `output` (a temporary file moved
    /// into place). Decoding is held to `limits` and checks `cancellation` between thumbnails.
    public static func write(
        source: String, spec: StoryboardSpec, to output: String, limits: DecodeLimits = DecodeLimits(),
        cancellation: CancellationToken? = nil
    ) throws(MediaError) {
        let bytes = try render(source: source, spec: spec, limits: limits, cancellation: cancellation)
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw MediaError(
                .io, operation: "write storyboard", path: output,
                detail: "cannot write the storyboard: \(error.localizedDescription)")
        }
    }

    /// The same picture as PNG bytes (for tests and callers that keep it in memory).
    public static func render(
        source: String, spec: StoryboardSpec, limits: DecodeLimits = DecodeLimits(),
        cancellation: CancellationToken? = nil
    ) throws(MediaError) -> [UInt8] {
        try cancellation?.check("storyboard", path: source)
        let reader = try FilmstripReader(path: source, limits: limits, cancellation: cancellation)
        var spec = spec
        if !(spec.duration.isFinite && spec.duration > 0) { spec.duration = reader.info.duration }
        spec.duration = min(spec.duration, max(0, limits.maxDecodedSeconds))
        let video = reader.info.video
        let layout = layout(for: spec, displayWidth: video.displayWidth, displayHeight: video.displayHeight)
        var canvas = Canvas(width: layout.width, height: layout.height, background: Palette.background)
        let painter = StoryboardPainter(spec: spec, layout: layout)
        painter.drawBackdrop(on: &canvas)
        for (i, cell) in layout.cells.enumerated() {
            let range = layout.cellRange(i), box = layout.thumbnails[i]
            let drawn = try reader.draw(
                start: range.start, target: (range.start + range.end) / 2,
                width: box.width, height: box.height, into: &canvas, x: box.x, y: box.y)
            if !drawn { painter.drawMissing(cell, on: &canvas) }
        }
        painter.drawOverlays(on: &canvas)
        try cancellation?.check("storyboard", path: source)
        do {
            return try PNGEncoder.encode(rgb: canvas.pixels, width: canvas.width, height: canvas.height)
        } catch {
            throw MediaError(
                error.kind, operation: error.operation, path: source,
                detail: "cannot encode the storyboard: \(error.detail)",
                code: error.code, ffmpegMessage: error.ffmpegMessage)
        }
    }

    /// The layout of `spec`'s storyboard for a video shown at `displayWidth` x `displayHeight`
    /// (rotation applied). Width and thumbnail count are clamped; a bad duration counts as 0.
    public static func layout(for spec: StoryboardSpec, displayWidth: Int, displayHeight: Int) -> StoryboardLayout {
        let width = min(maxWidth, max(minWidth, spec.width))
        let count = min(maxThumbnails, max(1, spec.thumbnails))
        let duration = spec.duration.isFinite && spec.duration > 0 ? spec.duration : 0
        let s = min(3, max(1, width / 640))
        let pad = 6 * s, capital = BitmapFont.capHeight * s
        let left = pad, right = width - pad - 1
        var y = 0

        let title = StoryboardRect(x: 0, y: y, width: width, height: capital + 2 * pad + 2 * s)
        y = title.maxY
        let markers = StoryboardRect(x: 0, y: y, width: width, height: capital + 6 * s)
        y = markers.maxY + 2 * s

        // Cells share the plot width; 4:3 cells (a landscape 16:9 picture is letterboxed, a
        // portrait one pillarboxed), bounded so one huge cell does not make a huge picture.
        let plotWidth = right - left + 1
        let cellHeight = max(24, min(plotWidth * 3 / (4 * count), max(96, width / 5)))
        let aspect = displayWidth > 0 && displayHeight > 0 ? Double(displayWidth) / Double(displayHeight) : 16.0 / 9.0
        var cells: [StoryboardRect] = [], thumbs: [StoryboardRect] = []
        let gap = count > 1 ? max(1, s) : 0
        for i in 0..<count {
            let x0 = left + plotWidth * i / count, x1 = left + plotWidth * (i + 1) / count
            let cell = StoryboardRect(x: x0, y: y, width: max(1, x1 - x0 - gap), height: cellHeight)
            cells.append(cell)
            var tw = cell.width, th = Int((Double(tw) / aspect).rounded())
            if th > cell.height { th = cell.height; tw = Int((Double(th) * aspect).rounded()) }
            tw = max(2, min(cell.width, tw)) & ~1
            th = max(2, min(cell.height, th)) & ~1
            thumbs.append(
                StoryboardRect(
                    x: cell.x + (cell.width - tw) / 2, y: cell.y + (cell.height - th) / 2, width: tw, height: th))
        }
        let filmstrip = StoryboardRect(x: left, y: y, width: plotWidth, height: cellHeight)
        y = filmstrip.maxY
        let axis = StoryboardRect(x: 0, y: y, width: width, height: 5 * s + capital + 2 * pad)
        y = axis.maxY
        var lanes: [StoryboardRect] = []
        for _ in 0..<min(maxCurves, spec.curves.count) {
            lanes.append(StoryboardRect(x: left, y: y, width: plotWidth, height: 36 * s))
            y += 36 * s + 3 * s
        }
        let legend = StoryboardRect(x: 0, y: y + pad, width: width, height: capital + 2 * pad)
        return StoryboardLayout(
            width: width, height: legend.maxY, scale: s, duration: duration, title: title, markers: markers,
            filmstrip: filmstrip, cells: cells, thumbnails: thumbs, axis: axis, lanes: lanes, legend: legend,
            plotLeft: left, plotRight: right)
    }

    /// "0:05", "1:02:03", or with tenths ("0:05.5") when `tenths`.
    static func clock(_ seconds: Double, tenths: Bool = false) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "0:00" }
        let total = tenths ? (seconds * 10).rounded() / 10 : seconds.rounded()
        let whole = Int(min(total, 1e9))
        let h = whole / 3600, m = (whole / 60) % 60, sec = whole % 60
        var text = h > 0 ? "\(h):" + (m < 10 ? "0" : "") + "\(m)" : "\(m)"
        text += ":" + (sec < 10 ? "0" : "") + "\(sec)"
        if tenths { text += ".\(Int(((total - Double(whole)) * 10).rounded()) % 10)" }
        return text
    }
}
