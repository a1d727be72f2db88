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

    public static func match(_ new: ContentFingerprint, _ old: ContentFingerprint, settings: Settings = Settings()) -> FingerprintMatch? {
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
            let measures = "offset \(offset.map { String(format: "%.3f", $0) } ?? "-") overlap \(String(format: "%.1f", overlap)) pairs \(pairs) agreement \(String(format: "%.2f", agreement)) informative \(informativePairs) distance \(String(format: "%.2f", distance)) contrast \(String(format: "%.2f", contrast))"
            return (rejection.map { "rejected (\($0)): " } ?? "match: ") + measures
        }
    }

    public static func judge(_ new: ContentFingerprint, _ old: ContentFingerprint, settings: Settings = Settings()) -> Verdict {
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
            let base = Double(k) * old.step // old index - new index, in seconds
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
        guard overlap >= settings.minOverlapSeconds, overlap >= settings.minShorterCoverage * shorter - 1e-9 else { return reject("overlap") }
        verdict.meanGap = score.informative > 0 ? score.gapSum / Double(score.informative) : 0
        let agrees = Double(score.agree) >= settings.minAgreement * Double(score.pairs)
        let close = score.meanDistance <= settings.maxMeanDistance * score.meanAllowance
        if !(agrees && close) {
            if !old.isDense(share: settings.denseShare), verdict.meanGap > settings.closeGap || verdict.agreement >= settings.verifyAgreement {
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
    public static func verificationTimes(_ new: ContentFingerprint, _ old: ContentFingerprint, offset: Double, count: Int) -> [Double] {
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

    /// A fingerprint's entries as flat arrays.
    struct Prepared {
        let step: Double
        let duration: Double
        let hashes: [UInt64]
        let times: [Double]
        /// 0 absent, 1 flat, 2 informative.
        let kinds: [UInt8]
        let lumas: [UInt8]
        let informative: [Int]
        /// Entries with a hash (flat or not).
        let present: Int

        init(_ f: ContentFingerprint) {
            step = f.step
            duration = f.duration
            let n = f.entries.count
            var h = [UInt64](repeating: 0, count: n), t = [Double](repeating: 0, count: n), k = [UInt8](repeating: 0, count: n)
            var info: [Int] = []
            for i in 0..<n {
                guard let e = f.entries[i] else { continue }
                h[i] = e
                t[i] = f.time(ofEntry: i)
                let isFlat = i < f.flat.count && f.flat[i]
                k[i] = isFlat ? 1 : 2
                if !isFlat { info.append(i) }
            }
            hashes = h
            times = t
            kinds = k
            lumas = (0..<n).map { $0 < f.lumas.count ? f.lumas[$0] : 0 }
            informative = info
            present = k.reduce(0) { $0 + ($1 != 0 ? 1 : 0) }
        }
    }

    /// Step offsets (old index - new index) with the most votes, best first.
    static func vote(_ a: Prepared, _ b: Prepared, settings: Settings) -> [Int] {
        let na = a.hashes.count, nb = b.hashes.count
        guard na > 0, nb > 0 else { return [] }
        // Bin k + na - 1 holds offset k in -(na - 1)...(nb - 1).
        var votes = [Int32](repeating: 0, count: na + nb + 1)
        var stamp = [Int32](repeating: -1, count: na + nb + 1)
        var anchorID: Int32 = 0
        func castVotes(_ from: Prepared, _ to: Prepared, sign: Int) {
            let list = from.informative
            let count = min(settings.anchors, list.count)
            guard count > 0 else { return }
            to.hashes.withUnsafeBufferPointer { th in
                for n in 0..<count {
                    let i = list[(n * list.count + list.count / 2) / count]
                    let h = from.hashes[i]
                    anchorID += 1
                    for j in to.informative where (h ^ th[j]).nonzeroBitCount <= settings.voteBits {
                        let k = sign > 0 ? j - i : i - j // old index - new index
                        let bin = k + na - 1
                        if stamp[bin] != anchorID { stamp[bin] = anchorID; votes[bin] += 1 }
                    }
                }
            }
        }
        castVotes(a, b, sign: 1)
        castVotes(b, a, sign: -1)
        // Neighbouring offsets pool their votes (sparse decodes pair entries a step or two apart).
        var pooled = [Int32](repeating: 0, count: votes.count)
        for i in votes.indices {
            pooled[i] = votes[i] + (i > 0 ? votes[i - 1] : 0) + (i + 1 < votes.count ? votes[i + 1] : 0)
        }
        var picked: [Int] = []
        var order = pooled.indices.filter { pooled[$0] >= Int32(settings.minVotes) }
        order.sort { pooled[$0] > pooled[$1] }
        for bin in order where picked.count < settings.candidates {
            if picked.contains(where: { abs($0 - bin) <= 2 }) { continue }
            picked.append(bin)
        }
        return picked.map { $0 - (na - 1) }
    }

    struct Score {
        var pairs = 0
        var agree = 0
        var informative = 0
        var distanceSum = 0
        var allowanceSum = 0.0
        var gapSum = 0.0
        var meanAllowance: Double { informative > 0 ? allowanceSum / Double(informative) : 1 }
        var costSum = 0.0
        var meanDistance: Double { informative > 0 ? Double(distanceSum) / Double(informative) : 64 }
        var cost: Double { pairs > 0 ? costSum / Double(pairs) : 64 }
    }

    /// Pairs the entries of the sparser fingerprint with the other's at the same content time.
    static func evaluate(_ a: Prepared, _ b: Prepared, offset: Double, settings: Settings) -> Score {
        b.present < a.present ? pairUp(b, a, offset: -offset, settings: settings) : pairUp(a, b, offset: offset, settings: settings)
    }

    /// Pairs every entry of `a` with the entry of `b` nearest its time + offset. A pair closer than
    /// `closeGap` compares hashes; farther apart (both decodes sparse, bursts at other times) an
    /// informative entry between two informative entries of `b` (at most `maxBracket` apart) is
    /// judged by betweenness: of the bits on which the two agree, the share it contradicts (a
    /// frame of the same footage between them keeps most of what both share; an unrelated one
    /// contradicts half), scaled to 64 bits.
    static func pairUp(_ a: Prepared, _ b: Prepared, offset: Double, settings: Settings) -> Score {
        var s = Score()
        let reach = Int((settings.maxPairGap / b.step).rounded(.up)) + 1
        let bracketReach = Int((settings.maxBracket / b.step).rounded(.up)) + 1
        let nb = b.hashes.count
        for i in a.hashes.indices where a.kinds[i] != 0 {
            let target = a.times[i] + offset
            guard target >= 0, target <= b.duration else { continue }
            let centre = Int(target / b.step)
            var nearest = -1, gap = settings.maxPairGap
            for j in max(0, centre - reach)...min(nb - 1, max(0, centre + reach)) where b.kinds[j] != 0 {
                let d = abs(b.times[j] - target)
                if d <= gap { gap = d; nearest = j }
            }
            // The informative entries around the target, for betweenness (sparse pairs only).
            var before = -1, after = -1
            if nearest >= 0, gap > settings.closeGap {
                var j = min(nb - 1, centre)
                while j >= max(0, centre - bracketReach) {
                    if b.kinds[j] == 2, b.times[j] <= target { before = j; break }
                    j -= 1
                }
                j = max(0, centre)
                while j <= min(nb - 1, centre + bracketReach) {
                    if b.kinds[j] == 2, b.times[j] > target { after = j; break }
                    j += 1
                }
            }
            guard nearest >= 0 else { continue }
            s.pairs += 1
            switch (a.kinds[i], b.kinds[nearest]) {
            case (2, 2):
                var d = (a.hashes[i] ^ b.hashes[nearest]).nonzeroBitCount
                if gap > settings.closeGap, before >= 0, after >= 0, b.times[after] - b.times[before] <= settings.maxBracket {
                    let shared = ~(b.hashes[before] ^ b.hashes[after]) & ~1 // bit 0 is never set
                    let count = shared.nonzeroBitCount
                    if count >= 16 {
                        let contradicted = ((a.hashes[i] ^ b.hashes[before]) & shared).nonzeroBitCount
                        d = min(d, Int((Double(contradicted) / Double(count) * 64).rounded()))
                    }
                }
                // Frames farther apart differ more: the allowance grows with the gap.
                let allowance = 1 + settings.gapAllowance * max(0, gap - settings.closeGap)
                // The cost (which picks the offset) compares the nearest entries only; agreement and
                // distance also take an adjacent step of a dense `b`: a few frames right after a cut
                // (a sparse decode's keyframe burst) show what the next step shows, while `b`'s own
                // step averages frames from both sides of the cut.
                var judged = d
                if gap <= settings.closeGap {
                    for j in [nearest - 1, nearest + 1] where j >= 0 && j < nb && b.kinds[j] == 2
                        && abs(b.times[j] - target) <= b.step + settings.closeGap {
                        judged = min(judged, (a.hashes[i] ^ b.hashes[j]).nonzeroBitCount)
                    }
                }
                s.informative += 1
                s.distanceSum += judged
                s.allowanceSum += allowance
                s.gapSum += gap
                s.costSum += Double(d) + settings.gapCost * gap
                if Double(judged) <= Double(settings.agreeBits) * allowance { s.agree += 1 }
            case (1, 1):
                if abs(Int(a.lumas[i]) - Int(b.lumas[nearest])) <= settings.flatLumaTolerance {
                    s.agree += 1
                } else {
                    s.costSum += 32
                }
            default:
                s.costSum += 32
            }
        }
        return s
    }

    /// The offset within `refineWindow` of `offset` where the new dense track best fits the old
    /// one (least squares, old interpolated linearly), or nil without enough common cells.
    static func refine(_ new: ContentFingerprint, _ old: ContentFingerprint, offset: Double, settings: Settings) -> Double? {
        let na = new.track.count / 2, nb = old.track.count / 2
        guard na > 1, nb > 1 else { return nil }
        var a = [Float](repeating: 0, count: 2 * na), b = [Float](repeating: 0, count: 2 * nb)
        var aPresent = [Bool](repeating: false, count: na), bPresent = [Bool](repeating: false, count: nb)
        for c in 0..<na where new.track[2 * c] != FingerprintTrack.missing {
            aPresent[c] = true
            a[2 * c] = FingerprintTrack.decode(new.track[2 * c])
            a[2 * c + 1] = FingerprintTrack.decode(new.track[2 * c + 1])
        }
        for c in 0..<nb where old.track[2 * c] != FingerprintTrack.missing {
            bPresent[c] = true
            b[2 * c] = FingerprintTrack.decode(old.track[2 * c])
            b[2 * c + 1] = FingerprintTrack.decode(old.track[2 * c + 1])
        }
        let rateA = new.trackRate, rateB = old.trackRate
        let minCells = Int(settings.minRefineSeconds * rateA)
        // The old track's present cells at or before / after each cell, within `maxGap` cells
        // (decodes of reference frames only leave every other cell empty).
        let maxGap = 3
        var previous = [Int](repeating: -1, count: nb), next = [Int](repeating: -1, count: nb)
        var last = -1
        for c in 0..<nb {
            if bPresent[c] { last = c }
            previous[c] = last >= 0 && c - last <= maxGap ? last : -1
        }
        last = -1
        for c in stride(from: nb - 1, through: 0, by: -1) {
            if bPresent[c] { last = c }
            next[c] = last >= 0 && last - c <= maxGap ? last : -1
        }
        func cost(_ o: Double) -> (Double?, Int) {
            var total = 0.0, n = 0
            for c in 0..<na where aPresent[c] {
                let p = (Double(c) / rateA + o) * rateB
                guard p >= 0 else { continue }
                let j = Int(p)
                guard j + 1 < nb else { continue }
                let j0 = previous[j], j1 = next[j + 1]
                guard j0 >= 0, j1 > j0, j1 - j0 <= maxGap else { continue }
                let f = Float((p - Double(j0)) / Double(j1 - j0))
                let dh = a[2 * c] - (b[2 * j0] * (1 - f) + b[2 * j1] * f)
                let dv = a[2 * c + 1] - (b[2 * j0 + 1] * (1 - f) + b[2 * j1 + 1] * f)
                total += Double(dh * dh + dv * dv)
                n += 1
            }
            return (n >= minCells ? total / Double(n) : nil, n)
        }
        // Half the old grid's interval, then a parabola through the best and its neighbours.
        let increment = 1 / (2 * rateB)
        let count = Int((settings.refineWindow / increment).rounded())
        var costs: [Double?] = [], cells: [Int] = []
        for m in -count...count {
            let (c, n) = cost(offset + Double(m) * increment)
            costs.append(c)
            cells.append(n)
        }
        // Only shifts that compare (nearly) as many cells as the best-covered one: sparse tracks
        // overlap little at shifts between their bursts, and a small overlap fits by chance.
        let most = cells.max() ?? 0
        for i in costs.indices where Double(cells[i]) < 0.8 * Double(most) { costs[i] = nil }
        guard let bestIndex = costs.indices.filter({ costs[$0] != nil }).min(by: { costs[$0]! < costs[$1]! }) else { return nil }
        var refined = offset + Double(bestIndex - count) * increment
        if bestIndex > 0, bestIndex + 1 < costs.count, let l = costs[bestIndex - 1], let c = costs[bestIndex], let r = costs[bestIndex + 1] {
            let denominator = l - 2 * c + r
            if denominator > 0 { refined += 0.5 * (l - r) / denominator * increment }
        }
        return refined
    }
}
