import Foundation

/// Visual signatures robust to re-encoding and scaling (the ClipDNA idea): a 64-bit DCT hash of
/// each frame's 32x32 thumbnail (the signs of its 8x8 lowest frequencies against their median:
/// blur, compression and resizing barely touch them) and its colour histogram.
public enum DCTHash {
    private static let side = FrameFeatures.thumbSide
    /// cos((2x + 1) u pi / 64) for u < 8, x < 32.
    private static let table: [Float] = {
        var values = [Float](repeating: 0, count: 8 * 32)
        for u in 0..<8 {
            for x in 0..<32 {
                let angle = Double(2 * x + 1) * Double(u) * Double.pi / 64
                values[u * 32 + x] = Float(cos(angle))
            }
        }
        return values
    }()

    /// The hash of a 32x32 thumbnail. Works in stack scratch space: nothing is allocated.
    public static func hash(_ thumb: [Float]) -> UInt64 {
        withUnsafeTemporaryAllocation(of: Float.self, capacity: side * 8 + 64 + 63) { scratch in
            let rows = scratch.baseAddress!, coefficients = rows + side * 8, sorted = coefficients + 64
            table.withUnsafeBufferPointer { t in
                thumb.withUnsafeBufferPointer { p in
                    // Rows: 32 rows x 8 frequencies, then columns: 8 x 8.
                    for y in 0..<side {
                        for u in 0..<8 {
                            var s: Float = 0
                            for x in 0..<side { s += p[y * side + x] * t[u * 32 + x] }
                            rows[y * 8 + u] = s
                        }
                    }
                    for v in 0..<8 {
                        for u in 0..<8 {
                            var s: Float = 0
                            for y in 0..<side { s += rows[y * 8 + u] * t[v * 32 + y] }
                            coefficients[v * 8 + u] = s
                        }
                    }
                }
            }
            for i in 1..<64 { sorted[i - 1] = coefficients[i] }
            var ac = UnsafeMutableBufferPointer(start: sorted, count: 63)
            ac.sort()
            let median = ac[31]
            var hash: UInt64 = 0
            for i in 1..<64 where coefficients[i] > median { hash |= 1 << UInt64(i) }
            return hash
        }
    }

    public static func distance(_ a: UInt64, _ b: UInt64) -> Int { (a ^ b).nonzeroBitCount }
}

/// A segment's signature: the hashes of frames sampled through it and its mean colour histogram.
public struct SegmentFingerprint: Sendable, Codable, Equatable {
    public var hashes: [UInt64]
    public var histogram: [Float]

    public init(hashes: [UInt64], histogram: [Float]) {
        self.hashes = hashes
        self.histogram = histogram
    }

    /// 0 (unrelated) ... 1 (the same footage). For each sampled frame of one segment, the closest
    /// frame of the other (so the same footage matches whatever its timing or trim), averaged
    /// both ways; blended with colour similarity.
    public func similarity(to other: SegmentFingerprint) -> Float {
        guard !hashes.isEmpty, !other.hashes.isEmpty else { return 0 }
        func oneWay(_ a: [UInt64], _ b: [UInt64]) -> Float {
            var total = 0
            for h in a { total += b.map { DCTHash.distance(h, $0) }.min() ?? 64 }
            return Float(total) / Float(a.count)
        }
        let bits = (oneWay(hashes, other.hashes) + oneWay(other.hashes, hashes)) / 2
        // Unrelated pictures differ in about half of the 63 bits.
        let hashSimilarity = max(0, 1 - bits / 28)
        let colour = 1 - FrameFeatures.histogramDistance(histogram, other.histogram)
        return 0.75 * hashSimilarity + 0.25 * colour
    }

    /// 0 ... 1: how alike the two segments' mean colour histograms are (the same scene under the
    /// same light scores above 0.9; different scenes of real footage below 0.5).
    public func colourSimilarity(to other: SegmentFingerprint) -> Float {
        1 - FrameFeatures.histogramDistance(histogram, other.histogram)
    }

    /// Similarity at or above which two segments show the same footage.
    public static let duplicateSimilarity: Float = 0.72
}

/// Collects every frame's hash and histogram, to make segment fingerprints after the pass.
public final class FingerprintCollector {
    public private(set) var times: [Double] = []
    public private(set) var hashes: [UInt64] = []
    private var histograms: [Float] = []  // flattened, FrameFeatures.histogram.count per frame
    private let bins = FrameFeatures.lumaBins + FrameFeatures.chromaBins * FrameFeatures.chromaBins

    public init(expectedFrames: Int = 0) {
        let reserved = Reservation.frames(expectedFrames)
        times.reserveCapacity(reserved)
        hashes.reserveCapacity(reserved)
        histograms.reserveCapacity(reserved * bins)
    }

    public func consume(_ f: FrameFeatures) {
        times.append(f.time)
        hashes.append(DCTHash.hash(f.thumb))
        histograms.append(contentsOf: f.histogram)
    }

    /// The fingerprint of [start, end): up to `samples` evenly spread frames.
    public func fingerprint(start: Double, end: Double, samples: Int = 24) -> SegmentFingerprint {
        let lo = times.firstIndex { $0 >= start } ?? times.count
        let hi = times.lastIndex { $0 < end }.map { $0 + 1 } ?? 0
        guard lo < hi else { return SegmentFingerprint(hashes: [], histogram: [Float](repeating: 0, count: bins)) }
        let count = hi - lo
        let picks = (0..<min(samples, count)).map { lo + ($0 * count + count / 2) / min(samples, count) }
        var mean = [Float](repeating: 0, count: bins)
        for i in lo..<hi { for b in 0..<bins { mean[b] += histograms[i * bins + b] } }
        for b in 0..<bins { mean[b] /= Float(count) }
        return SegmentFingerprint(hashes: picks.map { hashes[$0] }, histogram: mean)
    }
}
