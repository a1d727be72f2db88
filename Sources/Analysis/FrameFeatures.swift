/// The per-frame measurements several analysers share, computed once per frame (no work twice):
/// a 32x32 thumbnail, a colour histogram, brightness statistics and the sharpness measure.
public struct FrameFeatures: Sendable {
    public static let thumbSide = 32
    public static let lumaBins = 16
    public static let chromaBins = 8  // per axis: 8x8 joint Cb/Cr bins

    public var time: Double = 0
    /// 32x32 area-averaged luma, row-major, 0...255.
    public var thumb = [Float](repeating: 0, count: thumbSide * thumbSide)
    /// Normalised histogram: 16 luma bins then 64 joint chroma bins; each half sums to 1.
    public var histogram = [Float](repeating: 0, count: lumaBins + chromaBins * chromaBins)
    /// Mean luma, 0...255 (video range: black is about 16, white about 235).
    public var meanLuma: Float = 0
    /// Standard deviation of luma.
    public var lumaDeviation: Float = 0
    /// Fraction of pixels below `darkLevel` / above `brightLevel`.
    public var darkFraction: Float = 0
    public var brightFraction: Float = 0
    /// Variance of the 4-neighbour Laplacian of luma: high when sharp, low when blurred or flat.
    public var laplacianVariance: Float = 0
    /// 32x32 grid (the thumbnail's cells) of the mean absolute Laplacian: the texture a cell's
    /// mean luma hides (a finely patterned shirt and a plain wall can share a mean). Measured
    /// only when `measuresTexture` is set (jump-cut detection uses it; nothing else does).
    public var texture = [Float](repeating: 0, count: thumbSide * thumbSide)
    public var measuresTexture = false
    /// Luma averaged over small cells of the analysis picture (2x2 pixels; larger cells for a
    /// picture over 256 pixels a side, at most `fineMaxSide` cells a side), row-major,
    /// `fineWidth` x `fineHeight`: the fine jump-cut measure (`FineChange`). Measured only with
    /// `measuresTexture`.
    public var fine: [UInt8] = []
    public var fineWidth = 0
    public var fineHeight = 0
    public static let fineMaxSide = 128
    private var textureCounts = [Int](repeating: 0, count: thumbSide * thumbSide)

    /// Scratch counters reused across frames.
    private var lumaCounts = [Float](repeating: 0, count: lumaBins)
    private var chromaCounts = [Float](repeating: 0, count: chromaBins * chromaBins)

    public static let darkLevel: UInt8 = 40
    public static let brightLevel: UInt8 = 235

    public init() {}

    /// Fills `self` from `frame`, reusing its arrays (no allocation after the first frame).
    public mutating func measure(_ frame: FrameView) {
        measureThumbnail(frame)
        measureLuma(frame)
        if measuresTexture { measureFine(frame) }
        measureChroma(frame)
    }

    /// Luma statistics, the luma half of the histogram and the Laplacian (with the texture grid
    /// when asked) in one pass over the picture.
    private mutating func measureLuma(_ frame: FrameView) {
        let w = frame.width, h = frame.height, side = FrameFeatures.thumbSide
        let table = FrameFeatures.lumaSoftBins
        var sum = 0, sumSquares = 0, dark = 0, bright = 0
        // The Laplacian's sums are of integers: kept as integers (a Double held them exactly too).
        var lapSum = 0, lapSquares = 0, lapCount = 0
        let darkLevel = Int(FrameFeatures.darkLevel), brightLevel = Int(FrameFeatures.brightLevel)
        let texturing = measuresTexture
        lumaCounts.withUnsafeMutableBufferPointer { counts in
            for i in 0..<counts.count { counts[i] = 0 }
            texture.withUnsafeMutableBufferPointer { tex in
                textureCounts.withUnsafeMutableBufferPointer { cellCounts in
                    if texturing { for i in 0..<tex.count { tex[i] = 0; cellCounts[i] = 0 } }
                    for y in 0..<h {
                        let row = frame.luma + y * frame.lumaStride
                        for x in 0..<w {
                            let v = Int(row[x])
                            sum &+= v
                            sumSquares &+= v * v
                            // Soft binning: a value between two bin centres counts in both, so a
                            // picture that changes gradually moves its histogram gradually too.
                            let bin = table[v]
                            counts[bin.lower] += 1 - bin.weight
                            counts[bin.upper] += bin.weight
                            if v < darkLevel { dark += 1 }
                            if v > brightLevel { bright += 1 }
                        }
                        guard y > 0 && y < h - 1 else { continue }
                        let up = row - frame.lumaStride, down = row + frame.lumaStride
                        if !texturing {
                            for x in 1..<(w - 1) {
                                let l = Int(up[x]) + Int(down[x]) + Int(row[x - 1]) + Int(row[x + 1]) - 4 * Int(row[x])
                                lapSum &+= l
                                lapSquares &+= l * l
                            }
                        } else {
                            let cellRow = (y * side / h) * side
                            for x in 1..<(w - 1) {
                                let l = Int(up[x]) + Int(down[x]) + Int(row[x - 1]) + Int(row[x + 1]) - 4 * Int(row[x])
                                lapSum &+= l
                                lapSquares &+= l * l
                                let cell = cellRow + x * side / w
                                tex[cell] += Float(abs(l))
                                cellCounts[cell] += 1
                            }
                        }
                        lapCount += w - 2
                    }
                    if texturing {
                        for i in 0..<tex.count where cellCounts[i] > 0 { tex[i] /= Float(cellCounts[i]) }
                    }
                }
            }
        }
        let n = Float(w * h)
        meanLuma = Float(sum) / n
        lumaDeviation = (max(0, Float(sumSquares) / n - meanLuma * meanLuma)).squareRoot()
        darkFraction = Float(dark) / n
        brightFraction = Float(bright) / n
        for i in 0..<FrameFeatures.lumaBins { histogram[i] = lumaCounts[i] / n }
        if lapCount > 0 {
            let mean = Double(lapSum) / Double(lapCount)
            laplacianVariance = Float(Double(lapSquares) / Double(lapCount) - mean * mean)
        }
    }

    /// The chroma half of the histogram: joint Cb/Cr soft bins.
    private mutating func measureChroma(_ frame: FrameView) {
        let table = FrameFeatures.chromaSoftBins
        let n = FrameFeatures.chromaBins
        chromaCounts.withUnsafeMutableBufferPointer { counts in
            for i in 0..<counts.count { counts[i] = 0 }
            for y in 0..<frame.chromaHeight {
                let u = frame.cb + y * frame.chromaStride, v = frame.cr + y * frame.chromaStride
                for x in 0..<frame.chromaWidth {
                    let bu = table[Int(u[x])], bv = table[Int(v[x])]
                    let wu = bu.weight, wv = bv.weight
                    counts[bu.lower * n + bv.lower] += (1 - wu) * (1 - wv)
                    counts[bu.upper * n + bv.lower] += wu * (1 - wv)
                    counts[bu.lower * n + bv.upper] += (1 - wu) * wv
                    counts[bu.upper * n + bv.upper] += wu * wv
                }
            }
        }
        let chromaCount = Float(max(1, frame.chromaWidth * frame.chromaHeight))
        for i in 0..<chromaCounts.count { histogram[FrameFeatures.lumaBins + i] = chromaCounts[i] / chromaCount }
    }

    /// `softBin` of every 8-bit value, for the per-pixel loops: the bin below, the bin above
    /// (the same at the top) and the upper one's weight.
    struct SoftBin {
        var lower: Int
        var upper: Int
        var weight: Float
    }

    static func softBinTable(binWidth: Int, bins: Int) -> [SoftBin] {
        (0..<256).map { value in
            let (lower, weight) = softBin(value, binWidth: binWidth, bins: bins)
            return SoftBin(lower: lower, upper: min(lower + 1, bins - 1), weight: weight)
        }
    }

    static let lumaSoftBins = softBinTable(binWidth: 16, bins: lumaBins)
    static let chromaSoftBins = softBinTable(binWidth: 32, bins: chromaBins)

    /// Fills only `time` and `thumb` (all a content fingerprint needs): the re-upload look's cost.
    public mutating func measureThumbnail(_ frame: FrameView) {
        time = frame.time
        let w = frame.width, h = frame.height, side = FrameFeatures.thumbSide
        // Area average over cells of the picture.
        thumb.withUnsafeMutableBufferPointer { t in
            for ty in 0..<side {
                let y0 = ty * h / side, y1 = max(y0 + 1, (ty + 1) * h / side)
                for tx in 0..<side {
                    let x0 = tx * w / side, x1 = max(x0 + 1, (tx + 1) * w / side)
                    var sum = 0
                    for y in y0..<y1 {
                        let row = frame.luma + y * frame.lumaStride
                        for x in x0..<x1 { sum &+= Int(row[x]) }
                    }
                    t[ty * side + tx] = Float(sum) / Float((y1 - y0) * (x1 - x0))
                }
            }
        }
    }

    /// The fine grid: cell means of the luma (sized on the first frame, reused after).
    private mutating func measureFine(_ frame: FrameView) {
        let w = frame.width, h = frame.height
        let cell = max(2, (max(w, h) + FrameFeatures.fineMaxSide - 1) / FrameFeatures.fineMaxSide)
        let fw = w / cell, fh = h / cell
        if fine.count != fw * fh { fine = [UInt8](repeating: 0, count: fw * fh) }
        fineWidth = fw
        fineHeight = fh
        let area = cell * cell
        fine.withUnsafeMutableBufferPointer { out in
            for fy in 0..<fh {
                for fx in 0..<fw {
                    var sum = 0
                    for y in (fy * cell)..<(fy * cell + cell) {
                        let row = frame.luma + y * frame.lumaStride + fx * cell
                        for x in 0..<cell { sum &+= Int(row[x]) }
                    }
                    out[fy * fw + fx] = UInt8(sum / area)
                }
            }
        }
    }

    /// Copies `other`'s measurements into this value's own storage (no allocation once both
    /// exist), so a kept copy never shares arrays with the features being refilled.
    public mutating func assign(from other: FrameFeatures) {
        time = other.time
        for i in 0..<thumb.count { thumb[i] = other.thumb[i] }
        if other.measuresTexture || measuresTexture {
            for i in 0..<texture.count { texture[i] = other.texture[i] }
            if fine.count != other.fine.count { fine = [UInt8](repeating: 0, count: other.fine.count) }
            for i in 0..<fine.count { fine[i] = other.fine[i] }
            fineWidth = other.fineWidth
            fineHeight = other.fineHeight
        }
        measuresTexture = other.measuresTexture
        for i in 0..<histogram.count { histogram[i] = other.histogram[i] }
        meanLuma = other.meanLuma
        lumaDeviation = other.lumaDeviation
        darkFraction = other.darkFraction
        brightFraction = other.brightFraction
        laplacianVariance = other.laplacianVariance
    }

    /// The lower of the two bins around `value` and the weight of the upper one.
    @inline(__always) static func softBin(_ value: Int, binWidth: Int, bins: Int) -> (Int, Float) {
        let position = (Float(value) + 0.5) / Float(binWidth) - 0.5
        if position <= 0 { return (0, 0) }
        let lower = min(Int(position), bins - 1)
        return (lower, lower == bins - 1 ? 0 : position - Float(lower))
    }

    /// Histogram distance, 0 (same colours) ... 1 (no colour in common): half the L1 distance,
    /// averaged over the luma and chroma halves.
    public static func histogramDistance(_ a: [Float], _ b: [Float]) -> Float {
        var luma: Float = 0, chroma: Float = 0
        for i in 0..<lumaBins { luma += abs(a[i] - b[i]) }
        for i in lumaBins..<a.count { chroma += abs(a[i] - b[i]) }
        return (luma + chroma) / 4
    }

    /// Mean absolute difference of two thumbnails (0...255), the smallest over shifts of up to
    /// `maxShift` thumbnail pixels, so camera motion between the frames costs little.
    public static func thumbDifference(_ a: [Float], _ b: [Float], maxShift: Int = 2) -> Float {
        let side = thumbSide
        var best = Float.greatestFiniteMagnitude
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                for dy in -maxShift...maxShift {
                    for dx in -maxShift...maxShift {
                        var total: Float = 0
                        let y0 = max(0, -dy), y1 = min(side, side - dy), x0 = max(0, -dx), x1 = min(side, side - dx)
                        for y in y0..<y1 {
                            let ra = y * side, rb = (y + dy) * side + dx
                            for x in x0..<x1 { total += abs(pa[ra + x] - pb[rb + x]) }
                        }
                        best = min(best, total / Float((y1 - y0) * (x1 - x0)))
                    }
                }
            }
        }
        return best
    }
}
