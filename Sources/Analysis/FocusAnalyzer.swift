/// Where the eye goes in each frame, from the shared 32x32 thumbnail (no second pass over the
/// pixels): cells that stand out from the picture, by brightness against the frame's mean and by
/// local detail against the frame's typical detail. The reframer (a 9:16 window over landscape
/// footage) follows this together with the subject's motion (`MotionAnalyzer`).
public final class FocusAnalyzer {
    public struct Settings: Sendable, Codable, Equatable {
        /// Weight of a cell's brightness contrast (in luma deviations from the frame's mean)
        /// against its detail contrast (in multiples of the frame's mean detail).
        public var brightnessWeight: Float = 1
        public var detailWeight: Float = 0.5
        /// A cell counts only by how far its saliency exceeds this multiple of the frame's mean
        /// saliency (what does not stand out does not pull the window).
        public var standOut: Float = 1.5
        public init() {}
    }

    /// One frame's point of interest, in fractions of the stored picture, and how clearly one
    /// region stands out (0: nothing does, the picture is uniform or busy everywhere; 1: one spot).
    public struct Sample: Sendable, Codable, Equatable {
        public var time: Double
        public var x: Float
        public var y: Float
        public var strength: Float
    }

    public let settings: Settings
    public private(set) var samples: [Sample] = []
    private var saliency = [Float](repeating: 0, count: FrameFeatures.thumbSide * FrameFeatures.thumbSide)

    public init(settings: Settings = Settings(), expectedFrames: Int = 0) {
        self.settings = settings
        samples.reserveCapacity(Reservation.frames(expectedFrames))
    }

    public func consume(_ features: FrameFeatures) {
        let side = FrameFeatures.thumbSide
        let deviation = max(4, features.lumaDeviation)
        var detailSum: Float = 0
        features.thumb.withUnsafeBufferPointer { t in
            saliency.withUnsafeMutableBufferPointer { s in
                for y in 0..<side {
                    for x in 0..<side {
                        let v = t[y * side + x]
                        let dx = abs(v - t[y * side + min(side - 1, x + 1)]) + abs(v - t[y * side + max(0, x - 1)])
                        let dy = abs(v - t[min(side - 1, y + 1) * side + x]) + abs(v - t[max(0, y - 1) * side + x])
                        s[y * side + x] = dx + dy
                        detailSum += dx + dy
                    }
                }
            }
        }
        let meanDetail = max(1, detailSum / Float(side * side))
        var total: Float = 0
        features.thumb.withUnsafeBufferPointer { t in
            saliency.withUnsafeMutableBufferPointer { s in
                for i in 0..<(side * side) {
                    let bright = max(0, t[i] - features.meanLuma) / deviation
                    s[i] = settings.brightnessWeight * bright + settings.detailWeight * s[i] / meanDetail
                    total += s[i]
                }
            }
        }
        let threshold = settings.standOut * total / Float(side * side)
        var cx: Float = 0, cy: Float = 0, weights: Float = 0, peak: Float = 0
        for y in 0..<side {
            for x in 0..<side {
                let excess = saliency[y * side + x] - threshold
                guard excess > 0 else { continue }
                let w = excess * excess
                cx += (Float(x) + 0.5) * w
                cy += (Float(y) + 0.5) * w
                weights += w
                peak = max(peak, excess)
            }
        }
        guard weights > 0 else {
            samples.append(Sample(time: features.time, x: 0.5, y: 0.5, strength: 0))
            return
        }
        cx /= weights
        cy /= weights
        // How concentrated the standing-out weight is around its centroid: 1 within a tenth of
        // the picture, falling to 0 when it is spread over the whole frame.
        var spread: Float = 0
        for y in 0..<side {
            for x in 0..<side {
                let excess = saliency[y * side + x] - threshold
                guard excess > 0 else { continue }
                let dx = (Float(x) + 0.5 - cx) / Float(side), dy = (Float(y) + 0.5 - cy) / Float(side)
                spread += excess * excess * (dx * dx + dy * dy).squareRoot()
            }
        }
        spread /= weights
        let strength = min(1, max(0, (0.35 - spread) / 0.25))
        samples.append(Sample(time: features.time, x: cx / Float(side), y: cy / Float(side), strength: strength))
    }

    public func finish() -> [Sample] { samples }
}
