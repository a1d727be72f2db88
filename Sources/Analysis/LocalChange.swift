/// The change between two frames where it is largest, for jump cuts: two moments of one scene
/// joined by a hard cut (the background stays, the subjects jump). A whole-frame score barely
/// moves at such a cut; this one does: per cell of the 32x32 grid, the smallest difference to the
/// previous frame's cells within `tolerance` cells (small camera motion, shake and a subject's own
/// movement are explained by a neighbouring cell), then the mean of the largest `topFraction` of
/// those (0...1). A cell's difference is that of its mean luma plus `textureWeight` times that of
/// its texture (mean absolute Laplacian), so a patterned subject over a plain background of the
/// same mean still shows. Sensor noise moves every cell a little and none much; a subject that
/// appears, vanishes or jumps moves a few cells a lot.
public struct LocalChange {
    public static let side = FrameFeatures.thumbSide

    public let tolerance: Int
    public let topFraction: Float
    public let textureWeight: Float
    /// Counts of per-cell differences in 256 bins (reused: nothing is allocated per frame).
    private var bins = [Int](repeating: 0, count: 256)

    public init(tolerance: Int = 1, topFraction: Float = 0.04, textureWeight: Float = 1) {
        self.tolerance = max(0, min(4, tolerance))
        self.textureWeight = max(0, min(10, textureWeight))
        self.topFraction = min(1, max(1 / Float(Self.side * Self.side), topFraction))
    }

    /// The score of `current` against `previous`, 0...1.
    public mutating func score(_ previous: FrameFeatures, _ current: FrameFeatures) -> Float {
        let side = Self.side, reach = tolerance, k = textureWeight
        guard previous.thumb.count == side * side, current.thumb.count == side * side,
              previous.texture.count == side * side, current.texture.count == side * side else { return 0 }
        for i in 0..<bins.count { bins[i] = 0 }
        previous.thumb.withUnsafeBufferPointer { a in
            current.thumb.withUnsafeBufferPointer { b in
                previous.texture.withUnsafeBufferPointer { ta in
                    current.texture.withUnsafeBufferPointer { tb in
                        bins.withUnsafeMutableBufferPointer { counts in
                            for y in 0..<side {
                                let y0 = max(0, y - reach), y1 = min(side - 1, y + reach)
                                for x in 0..<side {
                                    let x0 = max(0, x - reach), x1 = min(side - 1, x + reach)
                                    let v = b[y * side + x], t = tb[y * side + x]
                                    var best = Float.greatestFiniteMagnitude
                                    for yy in y0...y1 {
                                        let row = yy * side
                                        for xx in x0...x1 { best = min(best, abs(v - a[row + xx]) + k * abs(t - ta[row + xx])) }
                                    }
                                    counts[min(255, max(0, Int(best)))] += 1
                                }
                            }
                        }
                    }
                }
            }
        }
        // The mean of the top cells, from the histogram (bin centres).
        let wanted = max(1, Int((Float(side * side) * topFraction).rounded()))
        var taken = 0, sum: Float = 0
        var bin = 255
        while bin >= 0 && taken < wanted {
            let take = min(bins[bin], wanted - taken)
            sum += Float(take) * (Float(bin) + 0.5)
            taken += take
            bin -= 1
        }
        return sum / Float(wanted) / 255
    }
}
