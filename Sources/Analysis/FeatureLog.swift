/// Keeps the features of many frames in flat buffers (no allocation per frame once grown): the
/// sampled decode plan's samples, replayed later into a `ShotDetector` after the frames refined
/// before them, so that no keyframe is decoded twice.
public final class FeatureLog {
    private var thumbs: [Float] = []
    private var textures: [Float] = []
    private var fines: [UInt8] = []
    private var fineSize = (width: 0, height: 0)
    private var histograms: [Float] = []
    private var scalars: [Float] = []
    public private(set) var times: [Double] = []
    public private(set) var groups: [Int] = []
    private static let scalarCount = 5

    public init(expected: Int = 0) {
        let n = Reservation.frames(expected)
        times.reserveCapacity(n)
        groups.reserveCapacity(n)
    }

    public var count: Int { times.count }

    public func append(_ f: FrameFeatures, group: Int) {
        times.append(f.time)
        groups.append(group)
        thumbs.append(contentsOf: f.thumb)
        if f.measuresTexture {
            textures.append(contentsOf: f.texture)
            // One video's frames share one size; a frame of another size is not logged finely.
            if fines.isEmpty { fineSize = (f.fineWidth, f.fineHeight) }
            if (f.fineWidth, f.fineHeight) == fineSize {
                fines.append(contentsOf: f.fine)
            } else {
                fines.append(contentsOf: repeatElement(0, count: fineSize.width * fineSize.height))
            }
        }
        histograms.append(contentsOf: f.histogram)
        scalars.append(f.meanLuma)
        scalars.append(f.lumaDeviation)
        scalars.append(f.darkFraction)
        scalars.append(f.brightFraction)
        scalars.append(f.laplacianVariance)
    }

    /// Writes entry `index` into `f` (its own storage; no allocation).
    public func load(_ index: Int, into f: inout FrameFeatures) {
        f.time = times[index]
        let t = f.thumb.count, h = f.histogram.count, s = FeatureLog.scalarCount
        for i in 0..<t { f.thumb[i] = thumbs[index * t + i] }
        if (index + 1) * f.texture.count <= textures.count {
            for i in 0..<f.texture.count { f.texture[i] = textures[index * f.texture.count + i] }
        }
        let fineCount = fineSize.width * fineSize.height
        if fineCount > 0, (index + 1) * fineCount <= fines.count {
            if f.fine.count != fineCount { f.fine = [UInt8](repeating: 0, count: fineCount) }
            f.fineWidth = fineSize.width
            f.fineHeight = fineSize.height
            for i in 0..<fineCount { f.fine[i] = fines[index * fineCount + i] }
        }
        for i in 0..<h { f.histogram[i] = histograms[index * h + i] }
        f.meanLuma = scalars[index * s]
        f.lumaDeviation = scalars[index * s + 1]
        f.darkFraction = scalars[index * s + 2]
        f.brightFraction = scalars[index * s + 3]
        f.laplacianVariance = scalars[index * s + 4]
    }
}
