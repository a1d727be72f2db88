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
        let w = frame.width, h = frame.height, side = FrameFeatures.thumbSide
        // Luma statistics, histogram and Laplacian in one pass over the picture.
        for i in 0..<lumaCounts.count { lumaCounts[i] = 0 }
        for i in 0..<chromaCounts.count { chromaCounts[i] = 0 }
        var sum = 0, sumSquares = 0, dark = 0, bright = 0
        var lapSum = 0.0, lapSquares = 0.0, lapCount = 0
        if measuresTexture { for i in 0..<texture.count { texture[i] = 0; textureCounts[i] = 0 } }
        for y in 0..<h {
            let row = frame.luma + y * frame.lumaStride
            for x in 0..<w {
                let v = Int(row[x])
                sum &+= v
                sumSquares &+= v * v
                // Soft binning: a value between two bin centres counts in both, so a picture
                // that changes gradually moves its histogram gradually too.
                let (b, w) = FrameFeatures.softBin(v, binWidth: 16, bins: FrameFeatures.lumaBins)
                lumaCounts[b] += 1 - w
                lumaCounts[min(b + 1, FrameFeatures.lumaBins - 1)] += w
                if v < Int(FrameFeatures.darkLevel) { dark += 1 }
                if v > Int(FrameFeatures.brightLevel) { bright += 1 }
            }
            if y > 0 && y < h - 1 && !measuresTexture {
                let up = row - frame.lumaStride, down = row + frame.lumaStride
                for x in 1..<(w - 1) {
                    let l = Int(up[x]) + Int(down[x]) + Int(row[x - 1]) + Int(row[x + 1]) - 4 * Int(row[x])
                    lapSum += Double(l)
                    lapSquares += Double(l * l)
                }
                lapCount += w - 2
            } else if y > 0 && y < h - 1 {
                let up = row - frame.lumaStride, down = row + frame.lumaStride
                let cellRow = (y * side / h) * side
                texture.withUnsafeMutableBufferPointer { tex in
                    textureCounts.withUnsafeMutableBufferPointer { counts in
                        for x in 1..<(w - 1) {
                            let l = Int(up[x]) + Int(down[x]) + Int(row[x - 1]) + Int(row[x + 1]) - 4 * Int(row[x])
                            lapSum += Double(l)
                            lapSquares += Double(l * l)
                            let cell = cellRow + x * side / w
                            tex[cell] += Float(abs(l))
                            counts[cell] += 1
                        }
                    }
                }
                lapCount += w - 2
            }
        }
        if measuresTexture {
            for i in 0..<texture.count where textureCounts[i] > 0 { texture[i] /= Float(textureCounts[i]) }
            measureFine(frame)
        }
        let n = Float(w * h)
        meanLuma = Float(sum) / n
        lumaDeviation = (max(0, Float(sumSquares) / n - meanLuma * meanLuma)).squareRoot()
        darkFraction = Float(dark) / n
        brightFraction = Float(bright) / n
        if lapCount > 0 {
            let mean = lapSum / Double(lapCount)
            laplacianVariance = Float(lapSquares / Double(lapCount) - mean * mean)
        }
        for y in 0..<frame.chromaHeight {
            let u = frame.cb + y * frame.chromaStride, v = frame.cr + y * frame.chromaStride
            for x in 0..<frame.chromaWidth {
                let (bu, wu) = FrameFeatures.softBin(Int(u[x]), binWidth: 32, bins: FrameFeatures.chromaBins)
                let (bv, wv) = FrameFeatures.softBin(Int(v[x]), binWidth: 32, bins: FrameFeatures.chromaBins)
                let bu1 = min(bu + 1, FrameFeatures.chromaBins - 1), bv1 = min(bv + 1, FrameFeatures.chromaBins - 1)
                let n = FrameFeatures.chromaBins
                chromaCounts[bu * n + bv] += (1 - wu) * (1 - wv)
                chromaCounts[bu1 * n + bv] += wu * (1 - wv)
                chromaCounts[bu * n + bv1] += (1 - wu) * wv
                chromaCounts[bu1 * n + bv1] += wu * wv
            }
        }
        let chromaCount = Float(max(1, frame.chromaWidth * frame.chromaHeight))
        for i in 0..<FrameFeatures.lumaBins { histogram[i] = lumaCounts[i] / n }
        for i in 0..<chromaCounts.count { histogram[FrameFeatures.lumaBins + i] = chromaCounts[i] / chromaCount }
    }

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
