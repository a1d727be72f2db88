import MediaEngine
import Foundation

/// The storyboard's colours.
enum Palette {
    static let background = StoryboardColor(20, 22, 27)
    static let lane = StoryboardColor(30, 33, 40)
    static let cell = StoryboardColor(44, 46, 52)
    static let grid = StoryboardColor(58, 62, 72)
    static let text = StoryboardColor(236, 238, 242)
    static let dim = StoryboardColor(150, 156, 168)
    static let segment = StoryboardColor(255, 205, 40)
    static let segmentText = StoryboardColor(24, 20, 8)
    static let cut = StoryboardColor(255, 84, 112)
}

/// Draws everything of a storyboard but the thumbnails, from a spec whose duration is resolved.
/// Every value of the spec is clamped here: nothing in it can draw outside the picture or make
/// the drawing work grow beyond a few passes over the picture.
struct StoryboardPainter {
    let layout: StoryboardLayout
    /// Segments inside the duration, with their numbers (1-based, in the spec's order).
    let segments: [(number: Int, range: TimeRange)]
    /// Cut times inside the duration.
    let cuts: [Double]
    let curves: [StoryboardCurve]
    let cellCount: Int

    init(spec: StoryboardSpec, layout: StoryboardLayout) {
        self.layout = layout
        let d = layout.duration
        var kept: [(number: Int, range: TimeRange)] = []
        for (i, r) in spec.segments.prefix(Storyboard.maxSegments).enumerated() where r.start.isFinite && r.end.isFinite
        {
            let start = min(d, max(0, r.start)), end = min(d, max(0, r.end))
            if end > start { kept.append((i + 1, TimeRange(start: start, end: end))) }
        }
        segments = kept
        cuts = spec.cuts.prefix(Storyboard.maxCuts).filter { $0.isFinite && $0 > 0 && $0 < d }
        curves = Array(spec.curves.prefix(layout.lanes.count))
        cellCount = layout.cells.count
    }

    private var s: Int { layout.scale }
    private var capital: Int { BitmapFont.capHeight * s }
    /// The bottom of the bands and cut lines: the last lane, or the axis without lanes.
    private var plotBottom: Int { layout.lanes.last?.maxY ?? layout.axis.y + 5 * s }

    /// Title, empty cells, lanes with their curves: what the thumbnails and overlays go on.
    func drawBackdrop(on canvas: inout Canvas) {
        drawTitle(on: &canvas)
        for cell in layout.cells {
            canvas.fill(x: cell.x, y: cell.y, width: cell.width, height: cell.height, Palette.cell)
        }
        for (curve, lane) in zip(curves, layout.lanes) { drawCurve(curve, in: lane, on: &canvas) }
    }

    /// A cell the file had no frame for.
    func drawMissing(_ cell: StoryboardRect, on canvas: inout Canvas) {
        let text = BitmapFont.width("no frame", scale: s) <= cell.width - 2 * s ? "no frame" : "?"
        canvas.text(
            text, x: cell.midX - BitmapFont.width(text, scale: s) / 2, y: cell.midY - capital / 2, scale: s, Palette.dim
        )
    }

    /// Segment bands and tags, cut lines, the time axis, lane labels and the legend.
    func drawOverlays(on canvas: inout Canvas) {
        drawSegments(on: &canvas)
        drawCuts(on: &canvas)
        drawAxis(on: &canvas)
        for (curve, lane) in zip(curves, layout.lanes) { drawLaneLabels(curve, in: lane, on: &canvas) }
        drawLegend(on: &canvas)
    }

    // MARK: parts

    private func drawTitle(on canvas: inout Canvas) {
        let y = layout.title.y + layout.title.height / 2 - capital / 2
        // Bold: the title drawn twice, one pixel apart.
        canvas.text("Storyboard", x: layout.plotLeft + 1, y: y, scale: s, Palette.text)
        var x = canvas.text("Storyboard", x: layout.plotLeft, y: y, scale: s, Palette.text) + 2 * BitmapFont.advance * s
        let chosen = segments.reduce(0) { $0 + $1.range.duration }
        var facts = [
            "duration \(Storyboard.clock(layout.duration, tenths: true))", "\(cellCount) frames",
            "\(cuts.count) cut\(cuts.count == 1 ? "" : "s")"
        ]
        if !segments.isEmpty {
            let share = layout.duration > 0 ? Int((100 * chosen / layout.duration).rounded()) : 0
            facts.append(
                "\(segments.count) segment\(segments.count == 1 ? "" : "s"): \(String(format: "%.1f", chosen)) s chosen (\(share)%)"
            )
        }
        for fact in facts {
            let w = BitmapFont.width(fact, scale: s)
            guard x + w <= layout.plotRight else { break }
            x = canvas.text(fact, x: x, y: y, scale: s, Palette.dim) + 3 * BitmapFont.advance * s
        }
        canvas.fill(x: 0, y: layout.title.maxY - s, width: layout.width, height: s, Palette.grid)
    }

    /// The value of a curve at `t` seconds: the per-second values joined linearly between the
    /// middles of their seconds; nil past the values or the duration.
    private static func value(_ values: [Float], count: Int, at t: Double) -> Double? {
        guard count > 0, t >= 0, t <= Double(count) else { return nil }
        func at(_ k: Int) -> Double {
            let v = values[min(count - 1, max(0, k))]
            return v.isNaN ? 0 : Double(min(1, max(0, v)))
        }
        let f = t - 0.5
        let k = Int(f.rounded(.down))
        let frac = f - Double(k)
        return at(k) * (1 - frac) + at(k + 1) * frac
    }

    private func valueCount(_ curve: StoryboardCurve) -> Int {
        let seconds = layout.duration.rounded(.up)
        return seconds < Double(curve.values.count) ? max(0, Int(seconds)) : curve.values.count
    }

    private func drawCurve(_ curve: StoryboardCurve, in lane: StoryboardRect, on canvas: inout Canvas) {
        canvas.fill(x: lane.x, y: lane.y, width: lane.width, height: lane.height, Palette.lane)
        let top = lane.y + 2 * s, bottom = lane.maxY - s - 1, span = Double(bottom - top)
        for fraction in [0.5] {
            canvas.fill(x: lane.x, y: bottom - Int(fraction * span), width: lane.width, height: 1, Palette.grid)
        }
        let count = valueCount(curve)
        let end = min(layout.duration, Double(count))
        var run: [(x: Int, y: Int)] = []
        for x in layout.plotLeft...layout.plotRight {
            let t = layout.seconds(at: x)
            guard t <= end + 1e-9, let v = StoryboardPainter.value(curve.values, count: count, at: t) else {
                canvas.polyline(run, curve.color, thickness: s)
                run.removeAll()
                continue
            }
            let y = bottom - Int((v * span).rounded())
            canvas.fill(x: x, y: y, width: 1, height: bottom - y + 1, curve.color, alpha: 70)
            run.append((x, y))
        }
        canvas.polyline(run, curve.color, thickness: s)
    }

    private func drawLaneLabels(_ curve: StoryboardCurve, in lane: StoryboardRect, on canvas: inout Canvas) {
        let label = String(curve.label.prefix(Storyboard.maxLabelLength))
        let count = valueCount(curve)
        let mean =
            count == 0
            ? 0
            : curve.values.prefix(count).reduce(0.0) { sum, v in
                sum + (v.isNaN ? 0 : Double(min(1, max(0, v))))
            } / Double(count)
        let note = count == 0 ? "no data" : "mean \(Int((mean * 100).rounded()))%"
        let gap = BitmapFont.advance * s
        var width = BitmapFont.width(label, scale: s) + gap + BitmapFont.width(note, scale: s)
        let fits = width + 4 * s <= lane.width
        if !fits { width = BitmapFont.width(label, scale: s) }
        canvas.fill(
            x: lane.x, y: lane.y, width: min(lane.width, width + 4 * s), height: capital + 4 * s, Palette.background,
            alpha: 190)
        let x = canvas.text(label, x: lane.x + 2 * s, y: lane.y + 2 * s, scale: s, curve.color)
        if fits { canvas.text(note, x: x - s + gap, y: lane.y + 2 * s, scale: s, Palette.dim) }
    }

    private func drawSegments(on canvas: inout Canvas) {
        let top = layout.filmstrip.y, bottom = plotBottom
        for (_, range) in segments {
            let x0 = layout.x(at: range.start), x1 = max(x0 + 1, layout.x(at: range.end))
            canvas.fill(x: x0, y: top, width: x1 - x0, height: bottom - top, Palette.segment, alpha: 44)
            canvas.fill(x: x0, y: layout.markers.maxY - 2 * s, width: x1 - x0, height: 2 * s, Palette.segment)
            canvas.fill(x: x0, y: top, width: 1, height: bottom - top, Palette.segment, alpha: 200)
            canvas.fill(x: x1 - 1, y: top, width: 1, height: bottom - top, Palette.segment, alpha: 200)
        }
        // Number tags left to right; one that would overlap the previous tag is left out.
        var tagsEnd = Int.min
        for (number, range) in segments.sorted(by: { $0.range.start < $1.range.start }) {
            let text = "\(number)"
            let tagWidth = BitmapFont.width(text, scale: s) + 4 * s, tagHeight = capital + 4 * s
            let x = min(max(0, layout.x(at: range.start)), layout.width - tagWidth)
            guard x >= tagsEnd + s else { continue }
            let y = layout.markers.maxY - 2 * s - tagHeight
            canvas.fill(x: x, y: y, width: tagWidth, height: tagHeight, Palette.segment)
            canvas.text(text, x: x + 2 * s, y: y + 2 * s, scale: s, Palette.segmentText)
            tagsEnd = x + tagWidth
        }
    }

    private func drawCuts(on canvas: inout Canvas) {
        let top = layout.filmstrip.y, bottom = plotBottom
        var last = Int.min
        for t in cuts.sorted() {
            let x = layout.x(at: t)
            guard x != last else { continue }
            last = x
            canvas.fill(x: x, y: top, width: 1, height: layout.filmstrip.height, Palette.cut, alpha: 190)
            canvas.fill(
                x: x, y: layout.filmstrip.maxY, width: 1, height: bottom - layout.filmstrip.maxY, Palette.cut,
                alpha: 230)
            // A small marker under the filmstrip, on the axis.
            for row in 0..<(3 * s) {
                canvas.fill(
                    x: x - (3 * s - row) + 1, y: layout.axis.y + row, width: 2 * (3 * s - row) - 1, height: 1,
                    Palette.cut)
            }
        }
    }

    /// Seconds between labelled ticks: the smallest round interval whose labels do not crowd.
    static func tickInterval(duration: Double, plotWidth: Int, labelWidth: Int) -> Double {
        let steps: [Double] = [
            0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400
        ]
        let room = Double(max(1, plotWidth / max(1, labelWidth)))
        return steps.first { duration / $0 <= room } ?? (duration / room).rounded(.up)
    }

    private func drawAxis(on canvas: inout Canvas) {
        let d = layout.duration
        let y = layout.axis.y
        canvas.fill(x: layout.plotLeft, y: y, width: layout.plotRight - layout.plotLeft + 1, height: 1, Palette.grid)
        guard d > 0 else { return }
        let sample = Storyboard.clock(d, tenths: d < 10)
        let interval = StoryboardPainter.tickInterval(
            duration: d, plotWidth: layout.plotRight - layout.plotLeft,
            labelWidth: BitmapFont.width(sample, scale: s) + 10 * s)
        let tenths = interval < 1
        var k = 0
        while Double(k) * interval <= d + 1e-9 && k <= 10_000 {
            let t = Double(k) * interval
            let x = layout.x(at: t)
            canvas.fill(x: x, y: y, width: max(1, s / 2), height: 4 * s, Palette.dim)
            let label = Storyboard.clock(t, tenths: tenths)
            let w = BitmapFont.width(label, scale: s)
            let lx = min(max(0, x - w / 2), layout.width - w - 1)
            canvas.text(label, x: lx, y: y + 5 * s + s, scale: s, Palette.dim)
            k += 1
        }
    }

    private func drawLegend(on canvas: inout Canvas) {
        let y = layout.legend.y + layout.legend.height / 2 - capital / 2
        var x = layout.plotLeft
        canvas.fill(x: x, y: y, width: capital, height: capital, Palette.segment)
        x =
            canvas.text("chosen segment, numbered in clip order", x: x + capital + 2 * s, y: y, scale: s, Palette.dim)
            + 3 * s * BitmapFont.advance
        guard x + capital + BitmapFont.width("shot cut", scale: s) < layout.width else { return }
        canvas.fill(x: x + capital / 2, y: y - s, width: max(1, s), height: capital + 2 * s, Palette.cut)
        x = canvas.text("shot cut", x: x + capital + 2 * s, y: y, scale: s, Palette.dim) + 3 * s * BitmapFont.advance
        let note = "curves 0-100%"
        guard x + BitmapFont.width(note, scale: s) < layout.width else { return }
        canvas.text(note, x: x, y: y, scale: s, Palette.dim)
    }
}
