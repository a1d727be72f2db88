/// Where one shot ends and the next begins.
public struct ShotBoundary: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case cut, dissolve, fade
        /// A hard cut between two moments of one scene: the background stays, the subjects jump.
        case jump
    }
    public var kind: Kind
    /// Time of the first frame of the new shot (for gradual transitions: their middle).
    public var time: Double
    /// The transition's span (equal to `time` for a hard cut): frames inside belong to neither shot.
    public var windowStart: Double
    public var windowEnd: Double
    /// The detector's confidence-like score (0...1).
    public var score: Float

    public init(kind: Kind, time: Double, windowStart: Double, windowEnd: Double, score: Float) {
        self.kind = kind
        self.time = time
        self.windowStart = windowStart
        self.windowEnd = windowEnd
        self.score = score
    }
}

/// Finds shot boundaries: hard cuts; dissolves and fades to/from black, each reported once; no
/// cut for flashes or other 1–3-frame bursts, and none for fast camera motion.
///
/// The per-frame score (`scores`) is computed as frames arrive, apart from any decision; `finish`
/// makes the decisions with the thresholds in `Settings`.
///
/// - score of frame i: the mean of the colour-histogram distance and the motion-tolerant thumbnail
///   difference (smallest over small shifts) between frames i-1 and i, both 0...1;
/// - hard cut at i: score >= `cutThreshold`, >= `adaptiveRatio` x the mean score of its
///   neighbours (so sustained change from camera motion is not a cut), a local peak, and the
///   picture does not return to what it was before within `burstFrames` (a flash);
/// - dissolve: a run of moderately changing frames whose ends differ by `gradualThreshold` and
///   whose middle frame is close to the average of its ends (a mix, which a pan is not);
/// - fade: a run of black frames between two shots; the boundary is the middle of the black;
/// - jump cut at i: where the whole-frame score stays low because the scene stays, the local
///   score (`LocalChange`: the largest per-cell changes no nearby cell explains) is at least
///   `jumpThreshold`, `jumpAdaptiveRatio` x its neighbours' mean (a subject's own steady motion is
///   no jump), a local peak, and the cells do not return to what they were within `burstFrames`.
public final class ShotDetector {
    public struct Settings: Sendable, Codable, Equatable {
        /// Minimum frame score for a hard cut.
        public var cutThreshold: Float = 0.22
        /// A hard cut's score must be this many times the mean score of its neighbours.
        public var adaptiveRatio: Float = 2.5
        /// Neighbours taken on each side for that mean.
        public var adaptiveWindow = 4
        /// A change that returns to the previous picture within this many frames is a burst (flash), not a cut.
        public var burstFrames = 3
        /// Distance (0...1) under which the picture before and after a burst count as the same.
        public var burstSimilarity: Float = 0.12
        /// ... or when it comes back within this share of the change that began the burst: a flash
        /// in lively footage (the subject moved on during it) still returns far closer to the
        /// picture before it than a cut's frames ever do.
        public var burstReturnShare: Float = 0.25
        /// Per-frame score above which a frame may be inside a dissolve.
        public var gradualFrameThreshold: Float = 0.015
        /// Distance (0...1) between the frames before and after a dissolve.
        public var gradualThreshold: Float = 0.28
        /// Shortest and longest dissolve considered, in seconds.
        public var gradualMinSeconds = 0.2
        public var gradualMaxSeconds = 3.0
        /// How far (0...1, relative to the change) the middle frame may be from the mix of the ends.
        public var dissolveLinearity: Float = 0.45
        /// Span (seconds) of the sliding window that also looks for dissolves: its ends differ by
        /// `gradualThreshold`, its middle is their mix, and no single frame carries more than
        /// `dissolveStepShare` of the change (that would be a cut).
        public var dissolveWindow = 0.6
        public var dissolveStepShare: Float = 0.5
        /// Smallest windowed-dissolve score (change x how close the middle is to the mix).
        public var dissolveMinScore: Float = 0.3
        /// A frame is black when its mean luma and luma deviation are below these.
        public var blackLuma: Float = 30
        public var blackDeviation: Float = 10
        /// Two boundaries closer than this keep only the stronger one.
        public var minShotSeconds = 0.3
        /// Jump-cut detection (configuration `media.analysis.jumpCuts`), off by default: with it on,
        /// the held-out half of `scripts/bench-analysis`' split sets has a false jump (text appearing
        /// in a screen recording: a still scene whose content changes at once), so it does not pass
        /// the gate that a default must not lose precision on any set. Judged on the frames the plan
        /// decodes: the sampled plan's screen does not look for a jump between two keyframes.
        public var jumpCuts = false
        /// Jump cuts: the smallest local score (0...1: the mean change of the most-changed cells),
        /// how many times its neighbours' mean it must be, how close (local score) the picture
        /// after a burst must come back to the one before it, the share of cells that count and the
        /// cells of shift a change may be explained by.
        public var jumpThreshold: Float = 0.10
        public var jumpAdaptiveRatio: Float = 3.5
        /// Neighbours whose local score is below this repeat the frame before them (a clip of a
        /// lower rate doubled up): they say nothing about how much the scene moves, and are left
        /// out of the neighbours' mean.
        public var jumpRepeatBelow: Float = 0.01
        /// At a jump cut the scene stays: at least this share of the cells changed by less than
        /// `jumpStillChange` (0...1). A whip pan, a zoom or a new scene changes nearly all of them.
        public var jumpStillShare: Float = 0.6
        public var jumpStillChange: Float = 0.04
        public var jumpReturnSimilarity: Float = 0.06
        public var jumpTopFraction: Float = 0.04
        public var jumpTolerance = 1
        /// Jump cuts at the fine grid (`FineChange`, 2x2-pixel cells), for scenes whose small
        /// subjects move everywhere (the 32x32 cells see no spike there): the smallest fine score,
        /// how many times its neighbours' mean it must be (their frames that repeat the one before,
        /// below `jumpFineRepeatBelow`, left out), the share of the grid's cells that count, and how
        /// much of its change a burst must keep when the picture comes back (below: no jump).
        /// Measured on the jump-cut benchmark: jumps 4.4-14x their neighbours, the strongest other
        /// peak (a talking face) 4.05x.
        public var jumpFineThreshold: Float = 0.15
        public var jumpFineRatio: Float = 4.2
        public var jumpFineRepeatBelow: Float = 0.004
        public var jumpFineTopFraction: Float = 0.005
        public var jumpFineReturnShare: Float = 0.5
        /// Rows in the top and bottom of the picture (a share of its height) that neither jump
        /// measure counts: burned-in clocks, scoreboards, captions and logos change there without
        /// a cut.
        public var jumpEdgeBand: Float = 0.15
        /// Evidence that separates a jump from local motion, both required of every jump (measured on
        /// the tune half of `scripts/bench-analysis`' split sets, where every false jump of the older
        /// rules was a walker stepping at a low frame rate, a gust, water or shake):
        /// - the most-changed fine cells are stable on both sides: their change at the jump at least
        ///   `jumpHistoryRatio` times their own mean change in the `jumpHistoryFrames` frames before
        ///   it, and in those after it (`ChangeHistory`; true jumps 18.9-92, false ones from 4.4);
        /// - their 3x3-cell patches find no match within `jumpResidualRadius` fine cells of where the
        ///   camera's shift puts them: mean best-match difference at least `jumpMinResidual` luma
        ///   levels (`MatchResidual`; things that moved on are found again: false jumps 4.4-18.9
        ///   but one of 38.7, whose history was 9.5; true jumps 9.6-65.6, half of them above 20).
        /// When unsure: no jump.
        public var jumpHistoryRatio: Float = 12
        public var jumpHistoryFrames = 4
        public var jumpResidualRadius = 6
        public var jumpMinResidual: Float = 20

        public init() {}
    }

    public let settings: Settings
    /// Per analysed frame: time and score against the previous frame (0 for the first).
    public private(set) var times: [Double] = []
    public private(set) var scores: [Float] = []
    /// Per frame: the smallest distance between the frame before it and the frames up to
    /// `burstFrames` after it (small when the picture comes back: a flash).
    public private(set) var returnDistances: [Float] = []
    public private(set) var isBlack: [Bool] = []
    /// Mean luma per frame (to follow the brightness ramps of fades).
    public private(set) var brightness: [Float] = []
    /// Frames where a burst ends (the picture returns): no more a cut than where it began.
    public private(set) var endsBurst: [Bool] = []
    /// Frames inside a burst: a run of at most `burstFrames` frames after which the picture is back
    /// to what it was before the run (a flash, and the frame that leaves it on a clip whose frames
    /// are doubled). None of them is a cut.
    public private(set) var insideBurst: [Bool] = []
    /// Per frame: the local score against the previous frame (`LocalChange`), and for frames
    /// whose local score could be a jump, the smallest local score between the frame before it
    /// and the frames up to `burstFrames` after it (small when the cells come back).
    public private(set) var localScores: [Float] = []
    /// Per frame: the share of cells that stayed since the previous frame.
    public private(set) var stillShares: [Float] = []
    public private(set) var localReturns: [Float] = []
    /// Frames where a local burst ends (the cells come back): no more a jump than where it began.
    public private(set) var localEndsBurst: [Bool] = []
    private var local: LocalChange
    /// Per frame: the fine-grid score against the previous frame (`FineChange`), and for frames
    /// whose fine score could be a jump, the smallest fine score between the frame before it and
    /// the frames up to `burstFrames` after it (a subject back where it was: no jump).
    public private(set) var fineScores: [Float] = []
    public private(set) var fineReturns: [Float] = []
    private var fine: FineChange
    /// Per frame: the history evidence of the fine measure (`ChangeHistory`), for frames whose
    /// score could be a jump (0 elsewhere, and for the last `jumpHistoryFrames` frames).
    public private(set) var fineEvidence: [Float] = []
    /// Per frame whose score could be a jump: the motion-compensated residual of its most-changed
    /// fine cells (`MatchResidual`, luma levels; 0 elsewhere). Empty with jump cuts off.
    public private(set) var residuals: [Float] = []
    private var residual: MatchResidual
    private var fineHistory: ChangeHistory
    /// Dissolve candidates found as frames arrive (the decisions keep the strongest of overlapping ones).
    private(set) var gradual: [ShotBoundary] = []

    // Recent frames, newest last: thumbnails and histograms (ring of fixed size).
    private var ring: [FrameFeatures] = []
    private var ringStart = 0
    private let ringCapacity: Int
    // Dissolve tracking.
    private var runStart: Int?

    /// Highest frame rate the dissolve ring is sized for.
    public static let maxRingFrameRate = 240.0

    public init(settings: Settings = Settings(), expectedFrames: Int = 0, maxFrameRate: Double = 60) {
        self.settings = settings
        // The ring spans the longest dissolve at the fastest rate; a header's rate is clamped to
        // ShotDetector.maxRingFrameRate (the ring also only grows as frames arrive).
        let rate = maxFrameRate.isFinite ? min(max(1, maxFrameRate), ShotDetector.maxRingFrameRate) : 60
        let span = max(0, min(settings.gradualMaxSeconds, 60)) * rate
        ringCapacity = max(settings.burstFrames + 2, Int(span) + 2)
        local = LocalChange(
            tolerance: settings.jumpTolerance, topFraction: settings.jumpTopFraction, edgeBand: settings.jumpEdgeBand)
        fine = FineChange(topFraction: settings.jumpFineTopFraction, edgeBand: settings.jumpEdgeBand)
        residual = MatchResidual(radius: settings.jumpResidualRadius, topFraction: settings.jumpFineTopFraction)
        fineHistory = ChangeHistory(reach: settings.jumpHistoryFrames)
        let reserved = Reservation.frames(expectedFrames)
        times.reserveCapacity(reserved)
        localScores.reserveCapacity(reserved)
        if settings.jumpCuts {
            fineScores.reserveCapacity(reserved)
            fineReturns.reserveCapacity(reserved)
            residuals.reserveCapacity(reserved)
            fineEvidence.reserveCapacity(reserved)
        }
        stillShares.reserveCapacity(reserved)
        localReturns.reserveCapacity(reserved)
        localEndsBurst.reserveCapacity(reserved)
        scores.reserveCapacity(reserved)
        returnDistances.reserveCapacity(reserved)
        isBlack.reserveCapacity(reserved)
        endsBurst.reserveCapacity(reserved)
        insideBurst.reserveCapacity(reserved)
    }

    /// Distance between two frames' features, 0...1: the mean of the histogram distance and the
    /// motion-tolerant thumbnail difference. When only "is it below `limit`?" matters and the
    /// histogram alone already says no, the costly thumbnail comparison is skipped.
    public static func distance(_ a: FrameFeatures, _ b: FrameFeatures, limit: Float = .infinity) -> Float {
        let h = FrameFeatures.histogramDistance(a.histogram, b.histogram)
        if h / 2 > limit { return h / 2 }
        let p = min(1, FrameFeatures.thumbDifference(a.thumb, b.thumb) / 255 * 2.5)
        return (h + p) / 2
    }

    private func recent(_ index: Int) -> FrameFeatures? {
        // Frame `index` (global) if it is still in the ring.
        let count = times.count
        guard index >= 0, index < count, count - index <= ring.count else { return nil }
        return ring[(ringStart + ring.count - (count - index)) % ring.count]
    }

    public func consume(_ features: FrameFeatures) {
        let index = times.count
        let previous = recent(index - 1)
        let score: Float = previous.map { ShotDetector.distance($0, features) } ?? 0
        let change =
            settings.jumpCuts
            ? previous.map { local.measure($0, features, stillChange: settings.jumpStillChange) } ?? (
                score: 0, stillShare: 1
            )
            : (score: 0, stillShare: 1)
        localScores.append(change.score)
        fineScores.append(
            settings.jumpCuts ? previous.map { fine.score($0, features, around: fineShiftHint(features)) } ?? 0 : 0)
        if settings.jumpCuts {
            residuals.append(0)
            if let previous,
                localScores[index] >= settings.jumpThreshold || fineScores[index] >= settings.jumpFineThreshold
            {
                residuals[index] = residual.measure(previous, features, cells: fine.cells, shift: fine.shift)
            }
            recordHistory(index: index, hasPrevious: previous != nil)
        }
        fineReturns.append(1)
        stillShares.append(change.stillShare)
        localReturns.append(1)
        localEndsBurst.append(false)
        times.append(features.time)
        scores.append(score)
        returnDistances.append(1)
        endsBurst.append(false)
        insideBurst.append(false)
        isBlack.append(features.meanLuma < settings.blackLuma && features.lumaDeviation < settings.blackDeviation)
        brightness.append(features.meanLuma)
        if ring.count < ringCapacity {
            var own = FrameFeatures()
            own.assign(from: features)
            ring.append(own)
        } else {
            ring[ringStart].assign(from: features)
            ringStart = (ringStart + 1) % ringCapacity
        }
        // Does the picture come back? Compare this frame with the frame before each recent one.
        for k in 1...max(1, settings.burstFrames) {
            let start = index - k  // a burst of k frames, start...index-1, now over?
            guard start >= 1, let before = recent(start - 1) else { continue }
            let returns = max(settings.burstSimilarity, settings.burstReturnShare * scores[start])
            let d = ShotDetector.distance(before, features, limit: returns)
            returnDistances[start] = min(returnDistances[start], d)
            if d <= returns {
                endsBurst[index] = true
                for m in start..<index { insideBurst[m] = true }
            }
            // Only where a jump could be: the local return costs a comparison of its own.
            if settings.jumpCuts, localScores[start] >= settings.jumpThreshold {
                let d = local.score(before, features)
                localReturns[start] = min(localReturns[start], d)
                if d <= settings.jumpReturnSimilarity { localEndsBurst[index] = true }
            }
            if settings.jumpCuts, fineScores[start] >= settings.jumpFineThreshold {
                fineReturns[start] = min(fineReturns[start], fine.score(before, features))
            }
        }
        trackDissolve(index: index, score: score, features: features)
        slideDissolveWindow(index: index, features: features)
    }

    /// The coarse measure's camera shift on the fine grid (where the fine search starts).
    private func fineShiftHint(_ features: FrameFeatures) -> (x: Int, y: Int) {
        let side = LocalChange.side
        return (local.shift.x * features.fineWidth / side, local.shift.y * features.fineHeight / side)
    }

    /// Adds frame `index`'s fine cell map to the history (before any return comparison reuses the
    /// measure), and judges the frame `jumpHistoryFrames` back where its score could be a jump.
    private func recordHistory(index: Int, hasPrevious: Bool) {
        fineEvidence.append(0)
        guard hasPrevious else { return }
        if !fine.cells.isEmpty {
            fine.cells.withUnsafeBufferPointer {
                fineHistory.push($0, isRepeat: fineScores[index] < settings.jumpFineRepeatBelow)
            }
        }
        let middle = index - settings.jumpHistoryFrames
        guard middle >= 1 else { return }
        if fineScores[middle] >= settings.jumpFineThreshold || localScores[middle] >= settings.jumpThreshold {
            fineEvidence[middle] = fineHistory.evidence(topFraction: settings.jumpFineTopFraction) ?? 0
        }
    }

    /// The windowed dissolve test, ending at frame `index`.
    private func slideDissolveWindow(index: Int, features: FrameFeatures) {
        let t = features.time
        var b = index - 1
        while b > 0 && t - times[b] < settings.dissolveWindow { b -= 1 }
        guard b >= 0, t - times[b] >= settings.dissolveWindow * 0.8, index - b >= 4,
            let before = recent(b)
        else { return }
        let total = ShotDetector.distance(before, features)
        guard total >= settings.gradualThreshold else { return }
        var largest: Float = 0
        for k in (b + 1)...index { largest = max(largest, scores[k]) }
        guard largest <= settings.dissolveStepShare * total else { return }
        let middleTime = (times[b] + t) / 2
        var m = b + 1
        while m < index && times[m] < middleTime { m += 1 }
        guard let middle = recent(m) else { return }
        var off: Float = 0, span: Float = 0
        for i in 0..<middle.thumb.count {
            off += abs(middle.thumb[i] - (before.thumb[i] + features.thumb[i]) / 2)
            span += abs(before.thumb[i] - features.thumb[i])
        }
        guard span > 0, off / span < settings.dissolveLinearity else { return }
        let strength = total * (1 - off / span)
        guard strength >= settings.dissolveMinScore else { return }
        gradual.append(
            ShotBoundary(
                kind: .dissolve, time: times[m], windowStart: times[b], windowEnd: t,
                score: min(1, strength)))
    }

    private func trackDissolve(index: Int, score: Float, features: FrameFeatures) {
        let inside = score > settings.gradualFrameThreshold && score < settings.cutThreshold * 1.5
        if inside {
            if runStart == nil { runStart = index }
            if let start = runStart, features.time - times[start] > settings.gradualMaxSeconds { runStart = index }
            return
        }
        guard let start = runStart else { return }
        runStart = nil
        let end = index - 1  // last frame of the run
        guard times[end] - times[start] >= settings.gradualMinSeconds,
            let before = recent(start - 1), let after = recent(end), let middle = recent((start + end) / 2)
        else { return }
        let total = ShotDetector.distance(before, after)
        guard total >= settings.gradualThreshold else { return }
        // A mix of the two ends? |middle - (before + after) / 2| relative to |before - after|.
        var off: Float = 0, span: Float = 0
        for i in 0..<middle.thumb.count {
            off += abs(middle.thumb[i] - (before.thumb[i] + after.thumb[i]) / 2)
            span += abs(before.thumb[i] - after.thumb[i])
        }
        guard span > 0, off / span < settings.dissolveLinearity else { return }
        let mid = times[(start + end + 1) / 2]
        gradual.append(
            ShotBoundary(
                kind: .dissolve, time: mid, windowStart: times[start - 1], windowEnd: times[end],
                score: min(1, total)))
    }
}
