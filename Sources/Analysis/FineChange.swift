/// The jump-cut measure at the finest grid (`FrameFeatures.fine`: 2x2-pixel cells of the analysis
/// picture): the camera's shift is taken out first (the whole-grid shift of up to `maxShift` cells
/// that explains the most), then each cell's smallest difference to the previous frame's cells
/// within `tolerance` cells of where the shift puts it (border cells left out), and the mean of
/// the largest `topFraction` of those, 0...1. Small things moving on (fish swimming, a face
/// talking) find themselves a cell away; at a cut between two moments of one scene some of them
/// find nothing like them nearby. Measured on the jump-cut benchmark: the six static-scene jumps
/// (fish tank, talking face) stand 4.4-14x above their neighbouring frames, which 32x32 cells
/// (`LocalChange`) could not show for the fish (about 1x). Rows in the top and bottom `edgeBand`
/// of the picture do not count: burned-in clocks, scoreboards, captions and logos change there
/// without a cut.
public struct FineChange {
    public static let maxShift = 2
    /// Farthest start of the shift search (fine cells).
    public static let maxHint = 12
    /// The camera shift (fine cells) the last score took out.
    public private(set) var shift = (x: 0, y: 0)
    public let tolerance: Int
    public let topFraction: Float
    public let edgeBand: Float
    /// Counts of per-cell differences in 256 bins (reused: nothing is allocated per frame).
    private var bins = [Int](repeating: 0, count: 256)
    /// The last score's per-cell changes (luma levels; -1 for cells it leaves out), for
    /// `ChangeHistory`; sized on the first frame.
    public private(set) var cells: [Float] = []

    public init(tolerance: Int = 1, topFraction: Float = 0.005, edgeBand: Float = 0.15) {
        self.tolerance = max(0, min(3, tolerance))
        self.topFraction = min(1, max(0.0001, topFraction))
        self.edgeBand = min(0.4, max(0, edgeBand))
    }

    /// The score of `current` against `previous`, 0...1 (0 when either has no fine grid or their sizes differ).
    /// `around` is where the camera's shift search starts (fine cells, e.g. the coarser measure's
    /// shift scaled to this grid): a whip pan moves the picture by more than `maxShift` fine cells
    /// a frame, which the search then still takes out.
    public mutating func score(_ previous: FrameFeatures, _ current: FrameFeatures, around: (x: Int, y: Int) = (0, 0))
        -> Float
    {
        let w = current.fineWidth, h = current.fineHeight, r = tolerance
        let hint = (
            x: max(-Self.maxHint, min(Self.maxHint, around.x)), y: max(-Self.maxHint, min(Self.maxHint, around.y))
        )
        let m = Self.maxShift + max(abs(hint.x), abs(hint.y))
        guard w == previous.fineWidth, h == previous.fineHeight, w > 2 * (m + r) + 2, h > 2 * (m + r) + 2,
            previous.fine.count == w * h, current.fine.count == w * h
        else { return 0 }
        for i in 0..<bins.count { bins[i] = 0 }
        if self.cells.count != w * h { self.cells = [Float](repeating: -1, count: w * h) }
        for i in 0..<self.cells.count { self.cells[i] = -1 }
        var cells = 0
        previous.fine.withUnsafeBufferPointer { a in
            current.fine.withUnsafeBufferPointer { b in
                // The camera's share: the shift that explains the most, from every other row and column.
                var shift = (x: 0, y: 0), bestCost = Int.max
                let sm = Self.maxShift
                for dy in (hint.y - sm)...(hint.y + sm) {
                    for dx in (hint.x - sm)...(hint.x + sm) {
                        var cost = 0
                        var y = m + 1
                        while y < h - m - 1 {
                            let rb = y * w, ra = (y + dy) * w + dx
                            var x = m + 1
                            while x < w - m - 1 { cost &+= abs(Int(b[rb + x]) - Int(a[ra + x])); x += 2 }
                            y += 2
                        }
                        if cost < bestCost { bestCost = cost; shift = (dx, dy) }
                    }
                }
                self.shift = shift
                let band = Int(Float(h) * edgeBand)
                bins.withUnsafeMutableBufferPointer { counts in
                    self.cells.withUnsafeMutableBufferPointer { map in
                        for y in 0..<h {
                            let cy = y + shift.y
                            guard cy - r >= 0, cy + r < h, y > m, y < h - m - 1, y >= band, y < h - band else {
                                continue
                            }
                            for x in 0..<w {
                                let cx = x + shift.x
                                guard cx - r >= 0, cx + r < w, x > m, x < w - m - 1 else { continue }
                                let v = Int(b[y * w + x])
                                var best = 255
                                for yy in (cy - r)...(cy + r) {
                                    let row = yy * w
                                    for xx in (cx - r)...(cx + r) { best = min(best, abs(v - Int(a[row + xx]))) }
                                }
                                counts[best] += 1
                                map[y * w + x] = Float(best)
                                cells += 1
                            }
                        }
                    }
                }
            }
        }
        guard cells > 0 else { return 0 }
        // The mean of the largest `topFraction` of the cells' differences, from the bins.
        let wanted = max(1, Int(Float(cells) * topFraction))
        var taken = 0, sum = 0
        var level = 255
        while level >= 0 && taken < wanted {
            let take = min(bins[level], wanted - taken)
            taken += take
            sum += take * level
            level -= 1
        }
        return Float(sum) / Float(max(1, taken)) / 255
    }
}
