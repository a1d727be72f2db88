import Foundation

/// How a new upload lines up with an earlier one.
public struct FingerprintMatch: Sendable, Equatable {
    /// Seconds: time t in the NEW video shows what time t + offset shows in the OLD one.
    public var offset: Double
    /// Seconds both cover at that offset.
    public var overlap: Double
    /// Mean Hamming distance (bits of 64) over the matched informative entries.
    public var distance: Double
    /// Whether `offset` was refined on the dense track (frame-accurate) or is the entries' own
    /// resolution (a quarter step, plus the sampling of sparse decodes).
    public var refined: Bool

    public init(offset: Double, overlap: Double, distance: Double, refined: Bool = false) {
        self.offset = offset
        self.overlap = overlap
        self.distance = distance
        self.refined = refined
    }
}

/// Recognises the same footage in two content fingerprints and finds the offset between them.
///
/// 1. Prefilter (votes): up to `anchors` informative entries of each video, spread through it, are
///    compared with every informative entry of the other; each pair within `voteBits` votes for
///    the step offset it implies (once per anchor and offset). Unrelated videos stop here. Cost:
///    2 x anchors x n popcounts (n entries of the other video: 5 per second).
/// 2. Alignment: the best-voted offsets are scored at a quarter step around them: each entry of the
///    new video is paired with the old entry nearest in time (within `maxPairGap`, for the gaps of
///    sampled decodes); two informative hashes agree within `agreeBits`, a flat entry against an
///    informative one disagrees, two flat ones agree when their mean luma is within `flatLumaTolerance`.
///    Where the nearest old entry is within `closeGap` (the old decode has that very frame), an
///    informative entry also agrees with the old entry a step before or after (a keyframe burst just
///    after a cut shows the next step's picture, while the old step averages both sides of the
///    cut); the offset itself is chosen on the nearest entries alone.
/// 3. The rule (all must hold at the best offset):
///    - overlap (seconds both cover) >= `minOverlapSeconds` and >= `minShorterCoverage` of the
///      shorter video: most of the shorter video must be the other's footage, so a video that
///      only shares a short stretch with an earlier one (the first 10 s of 40, then other
///      content) is a new upload;
///    - agreeing pairs >= `minAgreement` of all pairs in the overlap (an edit inside the overlap
///      fails this), at least `minInformativePairs` informative ones, whose mean distance is at
///      most `maxMeanDistance` bits;
///    - temporal contrast: the mean distance at the offset shifted by `contrastShifts` seconds
///      exceeds the best by `minContrast` bits. Footage that does not change over time (a still
///      scene, a frozen picture) aligns equally well anywhere, so it can never be told from
///      another recording of the same scene: it never matches (analysed again: the safe failure).
/// 4. Refinement: the offset is searched within `refineWindow` on the dense track (two
///    low-frequency coefficients per 1/30 s) by least squares against the old track interpolated
///    linearly, to the frame. Where the tracks do not overlap enough (both decodes sparse, with
///    bursts at different times) the entries' offset is kept (`refined` false).
public enum FingerprintMatcher {
    public struct Settings: Sendable, Equatable {
        public var anchors = 48
        public var voteBits = 10
        public var minVotes = 3
        public var candidates = 4
        public var agreeBits = 12
        public var maxPairGap = 0.6
        /// Pairs closer than this compare their hashes directly; farther ones by betweenness.
        public var closeGap = 0.15
        /// The widest bracket of two entries judged by betweenness (keyframe gaps of sampled decodes).
        public var maxBracket = 2.5
        /// `agreeBits` and `maxMeanDistance` grow by this factor per second a pair is apart beyond
        /// `closeGap` (sampled decodes of two encodes pair frames up to half a keyframe interval apart).
        public var gapAllowance = 2.0
        /// Bits of cost per second between paired entries: of two offsets that fit alike, the one
        /// pairing nearer frames wins.
        public var gapCost = 8.0
        /// Windows `Verdict.verifyAt` asks for.
        public var verificationFrames = 24
        /// An alignment rejected on agreement still asks for the verification windows when this
        /// share of its pairs agrees (unrelated footage agrees on almost none): two sparse decodes
        /// at other phases can align their bursts a fraction of a second off the true offset,
        /// which the windows' every frame then finds.
        public var verifyAgreement = 0.3
        /// An old fingerprint with an entry in at least this share of its steps is dense (a full
        /// analysis decode): the new entries were already compared with the very frames they show,
        /// so a verification decode would only repeat the comparison, and none is asked for.
        public var denseShare = 0.9
        public var flatLumaTolerance = 12
        public var minOverlapSeconds = 3.0
        public var minShorterCoverage = 0.75
        public var minAgreement = 0.8
        public var minInformativePairs = 10
        public var maxMeanDistance = 10.0
        public var contrastShifts: [Double] = [1, 2, 4, 8]
        public var minContrast = 6.0
        public var refineWindow = 0.3
        /// Dense-track cells (seconds' worth) needed to refine.
        public var minRefineSeconds = 1.0
        public init() {}
    }

    public static func match(_ new: ContentFingerprint, _ old: ContentFingerprint, settings: Settings = Settings())
        -> FingerprintMatch?
    {
        judge(new, old, settings: settings).match
    }

    /// What the matcher saw: the best alignment's measures and, when it is not a match, why.
    public struct Verdict: Sendable, CustomStringConvertible {
        public var match: FingerprintMatch?
        /// nil for a match.
        public var rejection: String?
        public var offset: Double?
        public var overlap = 0.0
        public var pairs = 0
        public var agreement = 0.0
        public var informativePairs = 0
        public var distance = 64.0
        public var contrast = 0.0
        /// Mean seconds between paired entries (beyond a frame or two: both decodes were sparse).
        public var meanGap = 0.0
        /// Not a match, but not evidence against one either: both fingerprints come from sparse
        /// decodes whose frames lie too far apart to compare (different keyframe phases) and the best
        /// alignment failed only on agreement or distance (or failed on agreement with at least
        /// `Settings.verifyAgreement` of its pairs agreeing), and the old one is not dense (see
        /// `Settings.denseShare`). Decode the NEW video at these times (a
        /// keyframe seek and a few frames each), fingerprint those frames and judge again: they pair
        /// with the old entries within a frame. Each window starts at its time and lasts
        /// `verifySeconds` (the offset of two sparse decodes is only known to about half a
        /// keyframe interval). Empty otherwise.
        public var verifyAt: [Double] = []
        public var verifySeconds = 0.0
        /// The NEW fingerprint has too few informative entries to judge (a short video, or a look at
        /// too few of its frames), and some of them vote for an offset: worth a closer look.
        public var undersampled = false
        /// Whether the two could still be the same footage: an alignment was found (whatever failed
        /// after it), or the new fingerprint was too thin to tell. Unrelated footage usually finds
        /// no votes at all.
        public var inconclusive: Bool { match == nil && (offset != nil || undersampled) }
        public var description: String {
            let measures =
                "offset \(offset.map { String(format: "%.3f", $0) } ?? "-") overlap \(String(format: "%.1f", overlap)) pairs \(pairs) agreement \(String(format: "%.2f", agreement)) informative \(informativePairs) distance \(String(format: "%.2f", distance)) contrast \(String(format: "%.2f", contrast))"
            return (rejection.map { "rejected (\($0)): " } ?? "match: ") + measures
        }
    }

    public static func judge(_ new: ContentFingerprint, _ old: ContentFingerprint, settings: Settings = Settings())
        -> Verdict
    {
        var verdict = Verdict()
        func reject(_ reason: String) -> Verdict { verdict.rejection = reason; return verdict }
        guard new.step > 0, abs(new.step - old.step) < 1e-9 else { return reject("steps differ") }
        guard min(new.duration, old.duration) >= settings.minOverlapSeconds else { return reject("too short") }
        let a = Prepared(new), b = Prepared(old)
        guard b.informative.count >= settings.minInformativePairs else { return reject("too few informative entries") }
        let candidates = vote(a, b, settings: settings)
        guard a.informative.count >= settings.minInformativePairs else {
            // Too few to judge; a closer look is worth it only when some entries vote for an offset.
            verdict.undersampled = !candidates.isEmpty
            return reject("too few informative entries")
        }
        guard !candidates.isEmpty else { return reject("no votes") }

        // Best offset at a quarter step around each candidate.
        var best: (offset: Double, score: Score)?
        for k in candidates {
            let base = Double(k) * old.step  // old index - new index, in seconds
            for m in -4...4 {
                let o = base + Double(m) * new.step / 4
                let s = evaluate(a, b, offset: o, settings: settings)
                guard s.pairs > 0, s.informative >= settings.minInformativePairs else { continue }
                if best == nil || s.cost < best!.score.cost { best = (o, s) }
            }
        }
        guard let (offset, score) = best else { return reject("no alignment with enough pairs") }
        let shorter = min(new.duration, old.duration)
        let overlap = commonSpan(new.duration, old.duration, offset)
        verdict.offset = offset
        verdict.overlap = overlap
        verdict.pairs = score.pairs
        verdict.agreement = Double(score.agree) / Double(max(1, score.pairs))
        verdict.informativePairs = score.informative
        verdict.distance = score.meanDistance
        guard overlap >= settings.minOverlapSeconds, overlap >= settings.minShorterCoverage * shorter - 1e-9 else {
            return reject("overlap")
        }
        verdict.meanGap = score.informative > 0 ? score.gapSum / Double(score.informative) : 0
        let agrees = Double(score.agree) >= settings.minAgreement * Double(score.pairs)
        let close = score.meanDistance <= settings.maxMeanDistance * score.meanAllowance
        if !(agrees && close) {
            if !old.isDense(share: settings.denseShare),
                verdict.meanGap > settings.closeGap || verdict.agreement >= settings.verifyAgreement
            {
                verdict.verifyAt = verificationTimes(new, old, offset: offset, count: settings.verificationFrames)
                    .map { max(0, $0 - settings.maxPairGap) }
                verdict.verifySeconds = 2 * settings.maxPairGap
            }
            return reject(agrees ? "distance" : "agreement")
        }

        // Temporal contrast: elsewhere must look clearly worse.
        var off = 0.0, counted = 0
        for shift in settings.contrastShifts {
            for o in [offset - shift, offset + shift] where commonSpan(new.duration, old.duration, o) >= 0.5 * shorter {
                let s = evaluate(a, b, offset: o, settings: settings)
                guard s.informative > 0 else { continue }
                off += s.meanDistance
                counted += 1
            }
        }
        verdict.contrast = counted > 0 ? off / Double(counted) - score.meanDistance : 0
        guard counted > 0, verdict.contrast >= settings.minContrast else { return reject("contrast") }

        var result = FingerprintMatch(offset: offset, overlap: overlap, distance: score.meanDistance)
        if let refined = refine(new, old, offset: offset, settings: settings) {
            result.offset = refined
            result.overlap = commonSpan(new.duration, old.duration, refined)
            result.refined = true
        }
        verdict.match = result
        return verdict
    }

    /// Times in the NEW video showing informative old entries at `offset`, spread evenly over the
    /// overlap: decoding frames there gives a fingerprint whose entries pair with the old ones
    /// within a frame (at most `count`).
    public static func verificationTimes(
        _ new: ContentFingerprint, _ old: ContentFingerprint, offset: Double, count: Int
    ) -> [Double] {
        var candidates: [Double] = []
        for j in old.entries.indices where old.entries[j] != nil && !(j < old.flat.count && old.flat[j]) {
            let t = old.time(ofEntry: j) - offset
            if t >= 0, t < new.duration { candidates.append(t) }
        }
        guard count > 0, !candidates.isEmpty else { return [] }
        let n = min(count, candidates.count)
        return (0..<n).map { candidates[($0 * candidates.count + candidates.count / 2) / n] }
    }

    /// Seconds both videos cover when new time t shows old time t + offset.
    static func commonSpan(_ newDuration: Double, _ oldDuration: Double, _ offset: Double) -> Double {
        max(0, min(newDuration, oldDuration - offset) - max(0, -offset))
    }
}
