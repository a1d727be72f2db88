/// The decisions of `ShotDetector`, apart from its per-frame scores: fades, hard cuts, jump cuts
/// and dissolves, with the thresholds of `ShotDetector.Settings`.
extension ShotDetector {
    /// Decides the boundaries, in time order.
    public func finish() -> [ShotBoundary] {
        let fades = fadeBoundaries()
        var result = fades.boundaries
        let nearBlack: (Double, Double) -> Bool = { t, margin in
            fades.windows.contains { t >= $0.0 - margin && t <= $0.1 + margin }
        }
        result += hardCuts(nearBlack: nearBlack)
        if settings.jumpCuts { addJumpCuts(to: &result, nearBlack: nearBlack) }
        result += dissolves(besides: result, nearBlack: nearBlack)
        return ShotDetector.keepStrongest(result, minShotSeconds: settings.minShotSeconds)
    }

    /// Fades: runs of black frames with pictures on both sides. A fade's window spans the black
    /// and the brightness ramps into and out of it.
    private func fadeBoundaries() -> (boundaries: [ShotBoundary], windows: [(Double, Double)]) {
        let n = scores.count
        var i = 0
        var blackRuns: [(Int, Int)] = []
        while i < n {
            guard isBlack[i] else { i += 1; continue }
            var j = i
            while j + 1 < n && isBlack[j + 1] { j += 1 }
            if i > 0 && j < n - 1 { blackRuns.append((i, j)) }
            i = j + 1
        }
        var boundaries: [ShotBoundary] = []
        var windows: [(Double, Double)] = []
        let reach = settings.gradualMaxSeconds
        for (a, b) in blackRuns {
            var lo = a - 1, hi = b + 1
            while lo > 0 && brightness[lo - 1] > brightness[lo] + 0.5 && times[a] - times[lo - 1] <= reach { lo -= 1 }
            while hi + 1 < n && brightness[hi + 1] > brightness[hi] + 0.5 && times[hi + 1] - times[b] <= reach {
                hi += 1
            }
            windows.append((times[lo], times[hi]))
            let middle = times[(a + b + 1) / 2]
            boundaries.append(
                ShotBoundary(kind: .fade, time: middle, windowStart: times[lo], windowEnd: times[hi], score: 1))
        }
        return (boundaries, windows)
    }

    /// Hard cuts: a peak score over `cutThreshold` and `adaptiveRatio` x its neighbours' mean,
    /// that is not a burst and not part of a fade.
    private func hardCuts(nearBlack: (Double, Double) -> Bool) -> [ShotBoundary] {
        let n = scores.count
        let w = settings.adaptiveWindow
        var cuts: [ShotBoundary] = []
        for i in 1..<max(1, n) {
            let s = scores[i]
            guard s >= settings.cutThreshold else { continue }
            if i > 1 && scores[i - 1] > s { continue }
            if i + 1 < n && scores[i + 1] >= s { continue }
            // The neighbours' mean leaves out the large changes of a burst (into a flash and back
            // out): they are no activity of the footage, and a cut a few frames after a flash is
            // still a cut. (A still picture "returns" on every frame: its small changes stay in.)
            var sum: Float = 0, count = 0
            for j in max(1, i - w)...min(n - 1, i + w)
            where j != i && !(scores[j] >= settings.cutThreshold && (insideBurst[j] || endsBurst[j])) {
                sum += scores[j]
                count += 1
            }
            let mean = count > 0 ? sum / Float(count) : 0
            guard s >= settings.adaptiveRatio * mean else { continue }
            // A flash or other burst.
            let returns = max(settings.burstSimilarity, settings.burstReturnShare * s)
            guard returnDistances[i] > returns, !endsBurst[i], !insideBurst[i] else { continue }
            if isBlack[i] || isBlack[i - 1] || nearBlack(times[i], 0) { continue }  // part of a fade
            cuts.append(
                ShotBoundary(kind: .cut, time: times[i], windowStart: times[i], windowEnd: times[i], score: min(1, s)))
        }
        return cuts
    }

    /// Jump cuts: a local change that spikes where the whole-frame score does not, with most of
    /// the picture staying: `values[i]` at least `threshold`, a peak, and `ratio` x the mean of
    /// its neighbours (frames that repeat the one before, below `repeatBelow`, left out).
    private func spikes(
        _ values: [Float], at i: Int, threshold: Float, ratio: Float, repeatBelow: Float,
        needsNeighbours: Bool
    ) -> Bool {
        let n = scores.count
        let w = settings.adaptiveWindow
        let s = values[i]
        guard s >= threshold, scores[i] < settings.cutThreshold, stillShares[i] >= settings.jumpStillShare else {
            return false
        }
        if i > 1 && values[i - 1] > s { return false }
        if i + 1 < n && values[i + 1] >= s { return false }
        var sum: Float = 0, count = 0
        for j in max(1, i - w)...min(n - 1, i + w) where j != i && values[j] >= repeatBelow {
            sum += values[j]
            count += 1
        }
        if needsNeighbours && count == 0 { return false }
        return s >= ratio * (count > 0 ? sum / Float(count) : 0)
    }

    /// Adds the jump cuts, first on the 32x32 cells, then on the fine grid.
    private func addJumpCuts(to result: inout [ShotBoundary], nearBlack: (Double, Double) -> Bool) {
        for (i, score) in jumpFrames(localRatio: settings.jumpAdaptiveRatio, fineRatio: settings.jumpFineRatio) {
            if isBlack[i] || isBlack[i - 1] || nearBlack(times[i], 0) { continue }
            if result.contains(where: { abs($0.time - times[i]) < settings.minShotSeconds }) { continue }
            result.append(
                ShotBoundary(
                    kind: .jump, time: times[i], windowStart: times[i], windowEnd: times[i], score: min(1, score)))
        }
    }

    /// Where the jump rules would put a jump with the spike ratios lowered to `localRatio` and
    /// `fineRatio` (the evidence and every other rule as set), away from `boundaries` (their
    /// windows too) and fades: candidates for a second look on every frame (`JumpConfirmation` in
    /// the anchors plan, whose pass compares pictures several frames apart, so a subject's own
    /// motion raises the neighbours' mean a jump must stand above), never boundaries of their own.
    /// Empty with jump cuts off.
    public func jumpCandidates(localRatio: Float, fineRatio: Float, besides boundaries: [ShotBoundary])
        -> [ShotBoundary]
    {
        guard settings.jumpCuts else { return [] }
        let windows = fadeBoundaries().windows
        var found: [ShotBoundary] = []
        for (i, score) in jumpFrames(localRatio: localRatio, fineRatio: fineRatio) {
            if isBlack[i] || isBlack[i - 1] || windows.contains(where: { times[i] >= $0.0 && times[i] <= $0.1 }) {
                continue
            }
            let t = times[i]
            // Near a boundary, or inside a dissolve's window (where `finish` keeps the dissolve).
            let taken = (boundaries + found).contains {
                abs($0.time - t) < settings.minShotSeconds || (t >= $0.windowStart && t <= $0.windowEnd)
            }
            if taken { continue }
            found.append(ShotBoundary(kind: .jump, time: t, windowStart: t, windowEnd: t, score: min(1, score)))
        }
        return found
    }

    /// The frames that pass the jump rules with these spike ratios, and their scores: first on
    /// the 32x32 cells, then on the fine grid (a frame may come twice).
    private func jumpFrames(localRatio: Float, fineRatio: Float) -> [(index: Int, score: Float)] {
        let n = scores.count
        var frames: [(index: Int, score: Float)] = []
        func hasEvidence(_ i: Int) -> Bool {
            fineEvidence[i] >= settings.jumpHistoryRatio && residuals[i] >= settings.jumpMinResidual
        }
        for i in 1..<max(1, n) {
            guard
                spikes(
                    localScores, at: i, threshold: settings.jumpThreshold, ratio: localRatio,
                    repeatBelow: settings.jumpRepeatBelow, needsNeighbours: false)
            else { continue }
            // The cells come back (a flash, something passing for a frame or two), or the last
            // frames cannot tell yet: no jump.
            guard localReturns[i] > settings.jumpReturnSimilarity, !localEndsBurst[i], i + settings.burstFrames < n
            else { continue }
            guard hasEvidence(i) else { continue }
            frames.append((i, localScores[i]))
        }
        // Where small subjects move everywhere, some of them find nothing like them nearby.
        for i in 1..<max(1, n) where i < fineScores.count {
            guard
                spikes(
                    fineScores, at: i, threshold: settings.jumpFineThreshold, ratio: fineRatio,
                    repeatBelow: settings.jumpFineRepeatBelow, needsNeighbours: true)
            else { continue }
            // The picture, or its subjects, come back (a flash, something passing), or the last
            // frames cannot tell yet: no jump. (The whole-frame burst marks say nothing here: across
            // a jump in a still scene the whole picture always "comes back".)
            guard fineReturns[i] > settings.jumpFineReturnShare * fineScores[i], i + settings.burstFrames < n else {
                continue
            }
            guard hasEvidence(i) else { continue }
            frames.append((i, fineScores[i]))
        }
        return frames
    }

    /// Dissolves not explained by a fade or a cut; of overlapping candidates, the strongest.
    private func dissolves(besides result: [ShotBoundary], nearBlack: (Double, Double) -> Bool) -> [ShotBoundary] {
        var strongest: [ShotBoundary] = []
        for g in gradual.sorted(by: { $0.score > $1.score })
        where !strongest.contains(where: { g.windowStart < $0.windowEnd && g.windowEnd > $0.windowStart }) {
            strongest.append(g)
        }
        return strongest.filter { g in
            !nearBlack(g.time, 0.2)
                && !result.contains { b in
                    (b.kind == .cut || b.kind == .jump) && b.time >= g.windowStart - 0.05
                        && b.time <= g.windowEnd + 0.05
                }
        }
    }

    /// `boundaries` in time order, keeping the stronger of two closer than `minShotSeconds`.
    public static func keepStrongest(_ boundaries: [ShotBoundary], minShotSeconds: Double) -> [ShotBoundary] {
        var kept: [ShotBoundary] = []
        for b in boundaries.sorted(by: { $0.time < $1.time }) {
            if let last = kept.last, b.time - last.time < minShotSeconds {
                if b.score > last.score { kept[kept.count - 1] = b }
                continue
            }
            kept.append(b)
        }
        return kept
    }
}
