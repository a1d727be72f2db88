/// The recent per-cell change maps of one jump measure (`LocalChange` or `FineChange`), and the
/// evidence that a spike in the middle frame is a jump rather than local motion.
///
/// At a jump cut the cells that change are stable on both sides of it: the subject was still (or
/// moved by less than a cell) before, and is again after. Foliage, water and crowds keep the same
/// cells changing frame after frame, so a gust or a walker turning still leaves their cells busy
/// before and after. The evidence is the change of the middle frame's most-changed cells (the top
/// `topFraction` of them) over those same cells' mean change in the frames before it, or after it,
/// whichever is larger: a frame-level ratio compares with the most-changed cells of each
/// neighbour, wherever they are, and so cannot tell a still scene's subject from busy texture.
///
/// Frames flagged as repeats (a lower-rate clip doubled up) are left out of the means. Nothing is
/// allocated per frame: the ring is sized on the first map and reused.
public struct ChangeHistory {
    /// Frames taken on each side of the middle one.
    public let reach: Int
    /// Change levels (0...255 per cell) below which a cell's mean change counts as this floor:
    /// encoder and sensor noise, so that a perfectly still cell does not make any change infinite.
    public let floor: Float
    private var maps: [[Float]] = []
    private var repeats: [Bool] = []
    private var newest = -1
    private var filled = 0
    private var bins = [Int](repeating: 0, count: 256)

    public init(reach: Int = 4, floor: Float = 1.5) {
        self.reach = max(1, min(12, reach))
        self.floor = max(0.1, floor)
    }

    /// Whether the ring holds the middle frame and `reach` frames on each side of it.
    public var isFull: Bool { filled >= 2 * reach + 1 }

    /// Adds the newest frame's map (one value per cell, the change against its previous frame, in
    /// luma levels; cells the measure leaves out hold -1).
    public mutating func push(_ cells: UnsafeBufferPointer<Float>, isRepeat: Bool) {
        let capacity = 2 * reach + 1
        if maps.count < capacity || maps[0].count != cells.count {
            maps = [[Float]](repeating: [Float](repeating: 0, count: cells.count), count: capacity)
            repeats = [Bool](repeating: false, count: capacity)
            newest = -1
            filled = 0
        }
        newest = (newest + 1) % capacity
        maps[newest].withUnsafeMutableBufferPointer { out in
            for i in 0..<cells.count { out[i] = cells[i] }
        }
        repeats[newest] = isRepeat
        filled += 1
    }

    /// The evidence for the middle frame (`reach` frames before the newest), or nil while the
    /// ring is not full: the middle's top cells' change over the larger of their mean change
    /// before and after it.
    public mutating func evidence(topFraction: Float) -> Float? {
        guard isFull else { return nil }
        let capacity = 2 * reach + 1
        let middle = (newest - reach + capacity) % capacity
        let count = maps[middle].count
        guard count > 0 else { return nil }
        // The middle's top cells: those at or above the level where the top `topFraction` starts.
        guard
            let cutoff = maps[middle].withUnsafeBufferPointer({
                TopCells.cutoff($0, topFraction: topFraction, bins: &bins)
            })
        else { return nil }
        var top: Float = 0, cells = 0
        var before: Float = 0, after: Float = 0
        var beforeFrames = 0, afterFrames = 0
        for k in 1...reach {
            if !repeats[(middle - k + capacity) % capacity] { beforeFrames += 1 }
            if !repeats[(middle + k) % capacity] { afterFrames += 1 }
        }
        maps[middle].withUnsafeBufferPointer { m in
            for c in 0..<count where m[c] >= cutoff && m[c] > 0 {
                top += m[c]
                cells += 1
                for k in 1...reach {
                    let b = (middle - k + capacity) % capacity, a = (middle + k) % capacity
                    if !repeats[b] { before += max(0, maps[b][c]) }
                    if !repeats[a] { after += max(0, maps[a][c]) }
                }
            }
        }
        guard cells > 0 else { return nil }
        let meanBefore = beforeFrames > 0 ? before / Float(beforeFrames * cells) : 0
        let meanAfter = afterFrames > 0 ? after / Float(afterFrames * cells) : 0
        return top / Float(cells) / max(floor, max(meanBefore, meanAfter))
    }
}
