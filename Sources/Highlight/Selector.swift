import Analysis

/// How the highlight is chosen from the scored candidates.
public struct SelectionSettings: Sendable, Codable, Equatable {
    /// Length of the finished highlight, in seconds (5...180).
    public var targetDuration = 30.0
    /// How far the result may be from it.
    public var tolerance = 0.5
    /// Shortest segment.
    public var minSegment = 1.5
    /// Maximal marginal relevance: weight of a candidate's own score against its similarity to
    /// what is already chosen (1 = score only).
    public var relevance = 0.7
    /// Weight of being far, on the timeline, from what is already chosen.
    public var spread = 0.15
    /// Segment boundaries move to a shot cut or to the quietest audio point within this radius.
    public var snapRadius = 0.3
    /// Seconds of crossfade the render will put at each join (the selection adds them back).
    public var crossfade = 0.0
    public init() {}
}

/// One segment of the highlight, in source seconds.
public struct SelectedSegment: Sendable, Codable, Equatable {
    public var start: Double
    public var end: Double
    public var score: Double
    public var reason: String
    public var duration: Double { end - start }
}

/// Picks segments to fill the target duration: best score first, penalised by similarity to what
/// is chosen (no footage twice: duplicates are excluded outright) and rewarded for spreading over
/// the timeline; then fits the total to the target and moves each boundary to a shot cut or a
/// quiet point in the sound, so no cut lands inside a word.
public enum Selector {
    struct Pick {
        var start: Double
        var end: Double
        /// Bounds the segment may grow within (its clean run of footage).
        var lowest: Double
        var highest: Double
        let scored: ScoredCandidate
        var duration: Double { end - start }
        var center: Double { (start + end) / 2 }
    }

    public static func select(_ analysis: VideoAnalysis, scored: [ScoredCandidate], settings: SelectionSettings) -> [SelectedSegment] {
        guard !scored.isEmpty else { return [] }
        let runs = runBounds(scored)
        var picks: [Pick] = []
        var used = [Bool](repeating: false, count: scored.count)
        func target(_ count: Int) -> Double { settings.targetDuration + Double(max(0, count - 1)) * settings.crossfade }
        let expectedCount = max(2.0, settings.targetDuration / 4)

        while true {
            let total = picks.reduce(0) { $0 + $1.duration }
            let remaining = target(picks.count + 1) - total
            if remaining < settings.minSegment * 0.5 { break }
            var best: (index: Int, value: Double)?
            for (i, c) in scored.enumerated() where !used[i] {
                let cand = c.candidate
                if picks.contains(where: { cand.start < $0.end + 0.05 && cand.end > $0.start - 0.05 }) { continue }
                let similarity = picks.map { Double(cand.fingerprint.similarity(to: $0.scored.candidate.fingerprint)) }.max() ?? 0
                if similarity >= Double(SegmentFingerprint.duplicateSimilarity) { continue } // the same footage again
                let distance = picks.map { abs((cand.start + cand.end) / 2 - $0.center) }.min() ?? analysis.duration
                let spread = min(1, distance / max(1, analysis.duration / expectedCount))
                let value = settings.relevance * c.score - (1 - settings.relevance) * similarity + settings.spread * spread
                if best == nil || value > best!.value { best = (i, value) }
            }
            guard let chosen = best else { break }
            used[chosen.index] = true
            let c = scored[chosen.index]
            let run = runs[chosen.index]
            var pick = Pick(start: c.candidate.start, end: c.candidate.end, lowest: run.0, highest: run.1, scored: c)
            if pick.duration > remaining + settings.tolerance * 0.5 {
                let length = max(settings.minSegment, remaining)
                if length > pick.duration { continue }
                pick.end = pick.start + length
            }
            picks.append(pick)
        }
        guard !picks.isEmpty else { return [] }
        picks.sort { $0.start < $1.start }
        clampBounds(&picks)
        fit(&picks, to: target(picks.count), minSegment: settings.minSegment)
        snap(&picks, analysis: analysis, settings: settings)
        fit(&picks, to: target(picks.count), minSegment: settings.minSegment, tolerance: settings.tolerance * 0.8)
        return picks.map { SelectedSegment(start: $0.start, end: $0.end, score: $0.scored.score, reason: reason($0.scored)) }
    }

    /// The clean run (merged extent of the overlapping candidates of one shot) of each candidate.
    static func runBounds(_ scored: [ScoredCandidate]) -> [(Double, Double)] {
        scored.map { c in
            var lo = c.candidate.start, hi = c.candidate.end
            var changed = true
            while changed {
                changed = false
                for o in scored where o.candidate.shot == c.candidate.shot && o.candidate.start <= hi + 1e-6 && o.candidate.end >= lo - 1e-6 {
                    if o.candidate.start < lo { lo = o.candidate.start; changed = true }
                    if o.candidate.end > hi { hi = o.candidate.end; changed = true }
                }
            }
            return (lo, hi)
        }
    }

    /// Growth bounds never reach into a neighbour.
    static func clampBounds(_ picks: inout [Pick]) {
        for i in picks.indices {
            if i > 0 { picks[i].lowest = max(picks[i].lowest, picks[i - 1].end + 0.05) }
            if i + 1 < picks.count { picks[i].highest = min(picks[i].highest, picks[i + 1].start - 0.05) }
        }
    }

    /// Grows (best segments first) or shrinks (weakest first) segments until the total is `target`.
    static func fit(_ picks: inout [Pick], to target: Double, minSegment: Double, tolerance: Double = 0.01) {
        var difference = target - picks.reduce(0) { $0 + $1.duration }
        guard abs(difference) > tolerance else { return }
        let order = picks.indices.sorted { difference > 0 ? picks[$0].scored.score > picks[$1].scored.score : picks[$0].scored.score < picks[$1].scored.score }
        for i in order where abs(difference) > tolerance {
            clampBounds(&picks)
            if difference > 0 {
                let grow = min(difference, picks[i].highest - picks[i].end)
                picks[i].end += max(0, grow)
                difference -= max(0, grow)
                let before = min(difference, picks[i].start - picks[i].lowest)
                picks[i].start -= max(0, before)
                difference -= max(0, before)
            } else {
                let cut = min(-difference, picks[i].duration - minSegment)
                if cut > 0 { picks[i].end -= cut; difference += cut }
            }
        }
    }

    /// Moves each boundary to a shot cut within reach, else to the quietest audio point within
    /// `snapRadius` (a local minimum of the 20 ms loudness), keeping segments apart and long enough.
    static func snap(_ picks: inout [Pick], analysis: VideoAnalysis, settings: SelectionSettings) {
        let cuts = analysis.boundaries.map(\.time)
        for i in picks.indices {
            clampBounds(&picks)
            for isStart in [true, false] {
                let t = isStart ? picks[i].start : picks[i].end
                var options: [Double] = cuts.filter { abs($0 - t) <= settings.snapRadius }
                if options.isEmpty, analysis.hasAudio {
                    options = analysis.audio.quietPoints(near: t, radius: settings.snapRadius)
                }
                for o in options {
                    let ok = isStart
                        ? o >= picks[i].lowest - 1e-6 && picks[i].end - o >= settings.minSegment
                        : o <= picks[i].highest + 1e-6 && o - picks[i].start >= settings.minSegment
                    if ok {
                        if isStart { picks[i].start = o } else { picks[i].end = o }
                        break
                    }
                }
            }
        }
    }

    static func reason(_ s: ScoredCandidate) -> String {
        let c = s.components
        var parts: [String] = []
        if c.motion >= 0.6 { parts.append("lively motion") }
        if c.audio >= 0.6 { parts.append("loud or eventful sound") }
        if c.quality >= 0.7 { parts.append("sharp, well exposed") }
        if c.novelty >= 0.6 { parts.append("unlike the rest") }
        if parts.isEmpty { parts.append("best remaining footage") }
        return parts.joined(separator: ", ")
    }
}
