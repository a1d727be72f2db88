import Analysis

/// The blend that scores a candidate; weights are read from Config/ and need not sum to 1.
///
/// Each component is normalised within the video by robust percentiles (the 10th maps to 0, the
/// 90th to 1, clamped), so "lively" means lively for this video:
/// - motion: subject motion (what moves against the camera), a little camera motion;
/// - audio: loudness and onset strength (something starts: a hit, a cheer, a shout);
/// - quality: sharpness and exposure, less shake;
/// - novelty: how unlike the rest of the video the candidate looks (1 - mean similarity).
public struct ScoreWeights: Sendable, Codable, Equatable {
    public var motion = 0.35
    public var audio = 0.30
    public var quality = 0.20
    public var novelty = 0.15
    public init() {}
}

public struct ScoredCandidate: Sendable, Codable, Equatable {
    public var candidate: Candidate
    public var score: Double
    public var components: Components

    public struct Components: Sendable, Codable, Equatable {
        public var motion: Double
        public var audio: Double
        public var quality: Double
        public var novelty: Double
    }
}

public enum Scoring {
    public static func score(_ candidates: [Candidate], weights: ScoreWeights, hasAudio: Bool) -> [ScoredCandidate] {
        guard !candidates.isEmpty else { return [] }
        let motion = normaliser(candidates.map { Double($0.raw.motion + 0.25 * $0.raw.camera) })
        let loud = normaliser(candidates.map { Double($0.raw.loudness) })
        let onset = normaliser(candidates.map { Double($0.raw.onsets) })
        let shake = normaliser(candidates.map { Double($0.raw.shake) })
        // Novelty: 1 - mean similarity to the other candidates (sampled for long videos).
        let stride = max(1, candidates.count / 64)
        let novelty: [Double] = candidates.indices.map { i in
            var total: Float = 0, count = 0
            for j in Swift.stride(from: 0, to: candidates.count, by: stride)
            where j != i && candidates[j].shot != candidates[i].shot {
                total += candidates[i].fingerprint.similarity(to: candidates[j].fingerprint)
                count += 1
            }
            return count > 0 ? Double(1 - total / Float(count)) : 0.5
        }
        let noveltyNorm = normaliser(novelty)
        let totalWeight = max(1e-9, weights.motion + (hasAudio ? weights.audio : 0) + weights.quality + weights.novelty)
        return candidates.enumerated().map { i, c in
            let components = ScoredCandidate.Components(
                motion: motion(Double(c.raw.motion + 0.25 * c.raw.camera)),
                audio: hasAudio ? 0.6 * loud(Double(c.raw.loudness)) + 0.4 * onset(Double(c.raw.onsets)) : 0,
                quality: max(
                    0, 0.6 * Double(c.raw.sharpness) + 0.4 * Double(c.raw.exposure) - 0.3 * shake(Double(c.raw.shake))),
                novelty: noveltyNorm(novelty[i]))
            let score =
                (weights.motion * components.motion + (hasAudio ? weights.audio * components.audio : 0)
                    + weights.quality * components.quality + weights.novelty * components.novelty) / totalWeight
            return ScoredCandidate(candidate: c, score: score, components: components)
        }
    }

    /// Maps values to 0...1 by their 10th and 90th percentiles.
    static func normaliser(_ values: [Double]) -> (Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return { _ in 0 } }
        let lo = sorted[Int(Double(sorted.count - 1) * 0.1)], hi = sorted[Int(Double(sorted.count - 1) * 0.9)]
        if hi - lo < 1e-9 { return { _ in 0.5 } }  // no spread: every candidate is average
        return { min(1, max(0, ($0 - lo) / (hi - lo))) }
    }
}
