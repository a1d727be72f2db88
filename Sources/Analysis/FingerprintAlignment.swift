import Foundation

/// How `FingerprintMatcher` aligns two fingerprints: votes for step offsets, scores an offset by
/// pairing entries, and refines the best offset below one step.
extension FingerprintMatcher {
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
            var h = [UInt64](repeating: 0, count: n), t = [Double](repeating: 0, count: n),
                k = [UInt8](repeating: 0, count: n)
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
                        let k = sign > 0 ? j - i : i - j  // old index - new index
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
        b.present < a.present
            ? pairUp(b, a, offset: -offset, settings: settings) : pairUp(a, b, offset: offset, settings: settings)
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
                if gap > settings.closeGap, before >= 0, after >= 0,
                    b.times[after] - b.times[before] <= settings.maxBracket
                {
                    let shared = ~(b.hashes[before] ^ b.hashes[after]) & ~1  // bit 0 is never set
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
                    for j in [nearest - 1, nearest + 1]
                    where j >= 0 && j < nb && b.kinds[j] == 2
                        && abs(b.times[j] - target) <= b.step + settings.closeGap
                    {
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
    static func refine(_ new: ContentFingerprint, _ old: ContentFingerprint, offset: Double, settings: Settings)
        -> Double?
    {
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
        // (decodes of reference frames only leave every other cell empty; the anchors plan, which
        // skips B-frames, leaves 3 in 4 empty with x264's usual 3 B-frames between anchors).
        let maxGap = 4
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
        guard let bestIndex = costs.indices.filter({ costs[$0] != nil }).min(by: { costs[$0]! < costs[$1]! }) else {
            return nil
        }
        var refined = offset + Double(bestIndex - count) * increment
        if bestIndex > 0, bestIndex + 1 < costs.count, let l = costs[bestIndex - 1], let c = costs[bestIndex],
            let r = costs[bestIndex + 1]
        {
            let denominator = l - 2 * c + r
            if denominator > 0 { refined += 0.5 * (l - r) / denominator * increment }
        }
        return refined
    }
}
