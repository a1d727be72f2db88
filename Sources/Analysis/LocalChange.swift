/// The change between two frames where it is largest, for jump cuts: two moments of one scene
/// joined by a hard cut (the background stays, the subjects jump). A whole-frame score barely
/// moves at such a cut; this one does: the camera's motion is taken out first (the grid shift of up
/// to `maxShift` cells that explains the most), then per cell of the 32x32 grid the smallest
/// difference to the previous frame's cells within `tolerance` cells of where the shift puts it
/// (shake and a subject's own movement are explained by a neighbouring cell; border cells, where
/// content enters and leaves, are left out), then the mean of the largest `topFraction` of those
/// (0...1). A cell's difference is that of its mean luma plus `textureWeight` times that of
/// its texture (mean absolute Laplacian), so a patterned subject over a plain background of the
/// same mean still shows. Sensor noise moves every cell a little and none much; a subject that
/// appears, vanishes or jumps moves a few cells a lot. Rows in the top and bottom `edgeBand` of the
/// picture do not count (burned-in clocks, scoreboards, captions and logos change there).
public struct LocalChange {
    public static let side = FrameFeatures.thumbSide
    /// Largest camera shift (cells a frame) taken out before the cells are compared.
    public static let maxShift = 2

    public let tolerance: Int
    public let topFraction: Float
    public let textureWeight: Float
    public let edgeBand: Float
    /// Counts of per-cell differences in 256 bins (reused: nothing is allocated per frame).
    private var bins = [Int](repeating: 0, count: 256)
    /// The last measure's per-cell changes (luma levels; -1 for cells it leaves out), for
    /// `ChangeHistory`.
    public private(set) var cells = [Float](repeating: -1, count: LocalChange.side * LocalChange.side)
    /// The camera shift (cells of the 32x32 grid) the last measure took out.
    public private(set) var shift = (x: 0, y: 0)

    public init(tolerance: Int = 1, topFraction: Float = 0.04, textureWeight: Float = 1, edgeBand: Float = 0.15) {
        self.edgeBand = min(0.4, max(0, edgeBand))
        self.tolerance = max(0, min(4, tolerance))
        self.textureWeight = max(0, min(10, textureWeight))
        self.topFraction = min(1, max(1 / Float(Self.side * Self.side), topFraction))
    }

    /// The score of `current` against `previous`, 0...1.
    public mutating func score(_ previous: FrameFeatures, _ current: FrameFeatures) -> Float {
        measure(previous, current).score
    }

    /// The score, and the share of cells that stayed (changed by less than `stillChange`, 0...1):
    /// at a jump cut most of the picture stays; in a whip pan or a cut, little does.
    public mutating func measure(
        _ previous: FrameFeatures, _ current: FrameFeatures,
        stillChange: Float = 0.04
    ) -> (score: Float, stillShare: Float) {
        let side = Self.side, reach = tolerance, k = textureWeight
        guard previous.thumb.count == side * side, current.thumb.count == side * side,
            previous.texture.count == side * side, current.texture.count == side * side
        else { return (0, 1) }
        for i in 0..<bins.count { bins[i] = 0 }
        for i in 0..<self.cells.count { self.cells[i] = -1 }
        var cells = 0
        previous.thumb.withUnsafeBufferPointer { a in
            current.thumb.withUnsafeBufferPointer { b in
                // The camera's share first: the whole-grid shift (up to `maxShift` cells) that
                // explains the most, so a pan or shake is not a local change.
                let m = Self.maxShift
                var shift = (x: 0, y: 0), bestCost = Float.greatestFiniteMagnitude
                for dy in -m...m {
                    for dx in -m...m {
                        var cost: Float = 0
                        for y in (m + 1)..<(side - m - 1) {
                            let rb = y * side, ra = (y + dy) * side + dx
                            for x in (m + 1)..<(side - m - 1) { cost += abs(b[rb + x] - a[ra + x]) }
                        }
                        if cost < bestCost { bestCost = cost; shift = (dx, dy) }
                    }
                }
                self.shift = shift
                previous.texture.withUnsafeBufferPointer { ta in
                    current.texture.withUnsafeBufferPointer { tb in
                        bins.withUnsafeMutableBufferPointer { counts in
                            self.cells.withUnsafeMutableBufferPointer { map in
                                // Cells whose whole neighbourhood, moved by the shift, lies in the
                                // previous grid: at the border, content enters and leaves the picture.
                                let band = Int(Float(side) * edgeBand)
                                for y in band..<(side - band) {
                                    let cy = y + shift.y
                                    guard cy - reach >= 0, cy + reach < side else { continue }
                                    for x in 0..<side {
                                        let cx = x + shift.x
                                        guard cx - reach >= 0, cx + reach < side else { continue }
                                        let v = b[y * side + x], t = tb[y * side + x]
                                        var best = Float.greatestFiniteMagnitude
                                        for yy in (cy - reach)...(cy + reach) {
                                            let row = yy * side
                                            for xx in (cx - reach)...(cx + reach) {
                                                best = min(best, abs(v - a[row + xx]) + k * abs(t - ta[row + xx]))
                                            }
                                        }
                                        counts[min(255, max(0, Int(best)))] += 1
                                        map[y * side + x] = best
                                        cells += 1
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard cells > 0 else { return (0, 1) }
        // The mean of the top cells, from the histogram (bin centres).
        let wanted = max(1, Int((Float(cells) * topFraction).rounded()))
        var taken = 0, sum: Float = 0
        var bin = 255
        while bin >= 0 && taken < wanted {
            let take = min(bins[bin], wanted - taken)
            sum += Float(take) * (Float(bin) + 0.5)
            taken += take
            bin -= 1
        }
        let stillBins = min(256, max(0, Int((stillChange * 255).rounded(.up))))
        var still = 0
        for b in 0..<stillBins { still += bins[b] }
        return (sum / Float(wanted) / 255, Float(still) / Float(cells))
    }
}
