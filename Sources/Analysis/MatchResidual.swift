/// How unexplained a frame's most-changed fine cells stay when each may have moved farther: the
/// motion-compensated residual of a candidate jump.
///
/// `FineChange` lets each cell find itself within one cell, which a walker stepping at a low frame
/// rate, a leaf tossed by a gust or a ripple outruns: their cells spike like a jump's. Here the
/// 3x3-cell patch around each of the top `topFraction` cells (of the fine change map) looks for its
/// best match in the previous frame within `radius` cells of where the camera's shift puts it; the
/// residual is the mean, over those cells, of the best match's mean absolute difference (luma
/// levels). Things that moved on are found again (a small residual); at a jump the subjects are
/// somewhere else entirely, or in another pose, and their patches find nothing like them nearby.
/// Computed only for frames whose score could be a jump, so it costs nothing on the others.
public struct MatchResidual {
    public let radius: Int
    public let topFraction: Float
    private var bins = [Int](repeating: 0, count: 256)

    public init(radius: Int = 6, topFraction: Float = 0.005) {
        self.radius = max(1, min(16, radius))
        self.topFraction = min(1, max(0.0001, topFraction))
    }

    /// The residual of `current` against `previous` for the cells of `cells` (the fine change map
    /// of `current`, -1 for cells left out) with the camera's `shift` (fine cells); 0 when the grids
    /// differ or no cell changed.
    public mutating func measure(
        _ previous: FrameFeatures, _ current: FrameFeatures, cells: [Float],
        shift: (x: Int, y: Int)
    ) -> Float {
        let w = current.fineWidth, h = current.fineHeight
        guard w == previous.fineWidth, h == previous.fineHeight, cells.count == w * h, w > 4, h > 4,
            previous.fine.count == w * h, current.fine.count == w * h
        else { return 0 }
        guard let level = cells.withUnsafeBufferPointer({ TopCells.cutoff($0, topFraction: topFraction, bins: &bins) })
        else { return 0 }
        let cutoff = max(1, level)
        let valid = cells.reduce(0) { $0 + ($1 >= 0 ? 1 : 0) }
        let wanted = max(1, Int((Float(valid) * topFraction).rounded()))
        let r = radius
        var total = 0, counted = 0
        previous.fine.withUnsafeBufferPointer { a in
            current.fine.withUnsafeBufferPointer { b in
                for y in 1..<(h - 1) {
                    for x in 1..<(w - 1) where cells[y * w + x] >= cutoff && counted < 4 * wanted {
                        var best = Int.max
                        for oy in -r...r {
                            let py = y + shift.y + oy
                            guard py >= 1, py < h - 1 else { continue }
                            for ox in -r...r {
                                let px = x + shift.x + ox
                                guard px >= 1, px < w - 1 else { continue }
                                var sad = 0
                                for dy in -1...1 {
                                    let rb = (y + dy) * w + x, ra = (py + dy) * w + px
                                    sad &+=
                                        abs(Int(b[rb - 1]) - Int(a[ra - 1])) &+ abs(Int(b[rb]) - Int(a[ra]))
                                        &+ abs(Int(b[rb + 1]) - Int(a[ra + 1]))
                                }
                                if sad < best { best = sad }
                            }
                        }
                        if best != Int.max {
                            total &+= best
                            counted += 1
                        }
                    }
                }
            }
        }
        return counted > 0 ? Float(total) / Float(counted * 9) : 0
    }
}
