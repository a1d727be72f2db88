@_exported import MediaVocabulary
import Analysis

/// The blend that scores a candidate; weights are read from Config/ and need not sum to 1.
///
/// Each component is normalised within the video by robust percentiles (the 10th maps to 0, the
/// 90th to 1, clamped), so "lively" means lively for this video:
/// - motion: subject motion (what moves against the camera), a little camera motion;
/// - audio: loudness and onset strength (something starts: a hit, a cheer, a shout);
/// - quality: sharpness and exposure, less shake;
/// - novelty: how unlike the rest of the video the candidate looks (1 - mean similarity);
/// - people: faces in view, more for a large, frontal, clearly seen face (not normalised: a
///   video of people only scores each moment by its own faces). Counted only in videos where a
///   face was found, so a video with no one in it is scored exactly as without it.
public struct ScoreWeights: Sendable, Codable, Equatable {
    public var motion = 0.35
    public var audio = 0.30
    public var quality = 0.20
    public var novelty = 0.15
    /// `focus=auto`. At 0.8 a talking face (motion and sound at the video's 20th percentile)
    /// outscores a ball or a launch with no one in it (motion and sound at the 90th):
    /// scripts/bench-people's tune half, people seconds 0.32 -> 0.6+ (see docs/media-pipeline.md).
    public var people = 0.8
    /// `focus=people` multiplies `people` by this; `focus=action` sets it to 0 (today's blend).
    public var peopleFocusBoost = 2.5
    public init() {}
}

extension ScoreWeights {
    /// These weights as `focus` asks.
    public func focused(_ focus: HighlightFocus) -> ScoreWeights {
        var weights = self
        switch focus {
        case .auto: break
        case .people: weights.people *= peopleFocusBoost
        case .action: weights.people = 0
        }
        return weights
    }
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
        public var people: Double = 0
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
        let hasPeople = weights.people > 0 && candidates.contains { ($0.people?.presence ?? 0) > 0 }
        let peopleWeight = hasPeople ? weights.people : 0
        let totalWeight = max(
            1e-9, weights.motion + (hasAudio ? weights.audio : 0) + weights.quality + weights.novelty + peopleWeight)
        return candidates.enumerated().map { i, c in
            let components = ScoredCandidate.Components(
                motion: motion(Double(c.raw.motion + 0.25 * c.raw.camera)),
                audio: hasAudio ? 0.6 * loud(Double(c.raw.loudness)) + 0.4 * onset(Double(c.raw.onsets)) : 0,
                quality: max(
                    0, 0.6 * Double(c.raw.sharpness) + 0.4 * Double(c.raw.exposure) - 0.3 * shake(Double(c.raw.shake))),
                novelty: noveltyNorm(novelty[i]), people: hasPeople ? people(c.people) : 0)
            let score =
                (weights.motion * components.motion + (hasAudio ? weights.audio * components.audio : 0)
                    + weights.quality * components.quality + weights.novelty * components.novelty
                    + peopleWeight * components.people) / totalWeight
            return ScoredCandidate(candidate: c, score: score, components: components)
        }
    }

    /// How much a candidate shows people (0...1): the share of its looks with a face, valued
    /// 0.55 for a face at all, up to 0.25 more for a large one (a fifth of the picture's height
    /// or more), 0.1 for one facing the camera and 0.1 for one clearly seen (detector score).
    static func people(_ p: Candidate.People?) -> Double {
        guard let p, p.presence > 0 else { return 0 }
        let size = min(1, Double(p.size) / 0.2)
        let clear = min(1, max(0, (Double(p.score) - 0.6) / 0.3))
        return Double(p.presence) * (0.55 + 0.25 * size + 0.1 * Double(p.frontal) + 0.1 * clear)
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
