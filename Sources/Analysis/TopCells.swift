/// Where the most-changed cells of a change map start: the level (0...255) at or above which the
/// top `topFraction` of its valid cells (>= 0; -1 marks a cell the measure left out) lie, from a
/// 256-bin histogram the caller owns (reused: nothing is allocated per call). Nil when no cell is valid.
enum TopCells {
    static func cutoff(_ cells: UnsafeBufferPointer<Float>, topFraction: Float, bins: inout [Int]) -> Float? {
        for i in 0..<bins.count { bins[i] = 0 }
        var valid = 0
        for v in cells where v >= 0 {
            bins[min(255, Int(v))] += 1
            valid += 1
        }
        guard valid > 0 else { return nil }
        let wanted = max(1, Int((Float(valid) * topFraction).rounded()))
        var level = 255, taken = 0
        while level > 0 && taken + bins[level] < wanted {
            taken += bins[level]
            level -= 1
        }
        return Float(level)
    }
}
