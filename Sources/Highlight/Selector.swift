import Analysis
import MediaEngine

/// How the highlight is chosen from the scored candidates.
public struct SelectionSettings: Sendable, Codable, Equatable {
    /// Length of the finished highlight, in seconds (`HighlightEngine.minTarget`...`maxTarget`).
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
    /// Two moments look alike (the same scene at another time, even in another shot) when their
    /// segment fingerprints are this similar and their colours this alike: the second is taken
    /// only when the target cannot be filled without it. Measured on real footage
    /// (bench-out/jumpcuts.mp4): moments of one static-camera scene have similarity 0.42-0.77 at
    /// colour 0.90-1.00 (a subject moving about a lot: 0.21-0.36); different scenes at most 0.30
    /// and colour 0.44; synthetic test parts of one style but other content 0.39-0.57 at colour
    /// 0.50-0.78 (they do not look alike to a viewer: other shapes and colours).
    public var lookAlikeSimilarity = 0.40
    public var lookAlikeColour = 0.85
    /// Segment boundaries move to a shot cut or to the quietest audio point within this radius.
    public var snapRadius = 0.3
    /// Each distinct people scene (consecutive shots with faces in view) is represented before a
    /// second moment of one already shown (off with `focus=action`).
    public var peopleScenesFirst = true
    /// A candidate is a people moment when a face is seen in at least this share of its looks.
    public var peoplePresence: Float = 0.5
    /// A people moment is given at least this long where its clean footage allows (a candidate
    /// window is 4 s): a face needs longer to register than a thrown ball, and a sentence lasts
    /// 2-5 s. With 4 s, bench-people's tune half gave people 41 % of the highlight: each scene
    /// one moment, the look-alike rule keeping a second one out.
    public var peopleSeconds = 6.5
    /// A people moment's boundaries move to a pause in the speech within this radius when no shot
    /// cut is near: a run of `pauseSeconds` at least `pauseDepth` dB below the speech around it
    /// (its median 20 ms loudness over 2 s). Words last 0.2-0.5 s and pauses between phrases
    /// 0.1-0.5 s, so within 0.8 s of any point there is usually one. Measured on Megamind's
    /// dialogue (speech over a music bed): its gaps between words sit 8-15 dB under the median
    /// for 40-100 ms; at 10 dB and 60 ms a third of its boundaries found none.
    public var speechSnapRadius = 0.8
    public var pauseSeconds = 0.04
    public var pauseDepth: Float = 8
    /// A highlight longer than its target whose people moments end at pauses loses a pause-to-pause
    /// step rather than a cut inside a sentence, and may end up to this much under the target
    /// (with the mix of scripts/people-footage, three people moments overran a 20 s target by
    /// 0.6 s, and the nearest pauses were 1.3 s apart).
    public var pauseShortfall = 1.0
    /// Seconds of crossfade the render will put at each join (the selection adds them back).
    public var crossfade = 0.0
    /// Source times that must be in the highlight: each becomes a segment of `pinnedSeconds`
    /// (shorter when many share the target) around it, within its shot, whatever it scores.
    public var include: [Double] = []
    /// Source ranges the highlight must never show.
    public var exclude: [TimeRange] = []
    public var pinnedSeconds = 4.0
    public init() {}
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
        /// Its candidate among the scored ones (nil for a pinned segment).
        var index: Int? = nil
        /// The pinned times this segment must keep showing (the first and the last).
        var pin: ClosedRange<Double>? = nil
        /// Its ends sit at a pause in speech: the final fit trims other segments first.
        var atPause = false
        /// A people moment: the span its faces are in view (the final fit grows it there first).
        var faces: ClosedRange<Double>? = nil
        var duration: Double { end - start }
        var center: Double { (start + end) / 2 }
    }

    public static func select(_ analysis: VideoAnalysis, scored: [ScoredCandidate], settings: SelectionSettings)
        -> [Segment]
    {
        let exclude = settings.exclude.filter { $0.end > $0.start }.sorted { $0.start < $1.start }
        // Clear of an excluded range by a frame at least: the frame on screen at a segment's first
        // instant must not be one from inside the range.
        let margin = max(0.05, 1 / max(1, analysis.frameRate))
        let scored =
            exclude.isEmpty ? scored : carve(scored, around: exclude, minimum: settings.minSegment, margin: margin)
        var picks = pinned(analysis, scored: scored, exclude: exclude, margin: margin, settings: settings)
        guard !scored.isEmpty || !picks.isEmpty else { return [] }
        let runs = runBounds(scored)
        var used = [Bool](repeating: false, count: scored.count)
        func target(_ count: Int) -> Double { settings.targetDuration + Double(max(0, count - 1)) * settings.crossfade }
        let expectedCount = max(2.0, settings.targetDuration / 4)
        let scenes = settings.peopleScenesFirst ? peopleScenes(analysis, scored: scored, settings: settings) : []

        /// What choosing `c` next is worth: its score, less its likeness to what is chosen, plus its
        /// distance on the timeline; nil when it overlaps or repeats what is chosen.
        func value(_ c: ScoredCandidate, picks: [Pick], allowLookAlikes: Bool) -> Double? {
            let cand = c.candidate
            if picks.contains(where: { cand.start < $0.end + 0.05 && cand.end > $0.start - 0.05 }) { return nil }
            let similarity =
                picks.map { Double(cand.fingerprint.similarity(to: $0.scored.candidate.fingerprint)) }.max() ?? 0
            if similarity >= Double(SegmentFingerprint.duplicateSimilarity) { return nil }  // the same footage again
            if !allowLookAlikes,
                picks.contains(where: { lookAlike(cand.fingerprint, $0.scored.candidate.fingerprint, settings) })
            {
                return nil
            }
            let distance = picks.map { abs((cand.start + cand.end) / 2 - $0.center) }.min() ?? analysis.duration
            let spread = min(1, distance / max(1, analysis.duration / expectedCount))
            return settings.relevance * c.score - (1 - settings.relevance) * similarity + settings.spread * spread
        }

        // Look-alike moments (anywhere in the video) are left out until nothing else fills the target.
        var allowLookAlikes = false
        while true {
            let total = picks.reduce(0) { $0 + $1.duration }
            let remaining = target(picks.count + 1) - total
            if remaining < settings.minSegment * 0.5 { break }
            // A people scene not yet shown comes before anything else.
            let shown = Set(picks.compactMap { pick in scenes.isEmpty ? nil : pick.index.flatMap { scenes[$0] } })
            var best: (index: Int, value: Double)?
            for onlyScenes in scenes.isEmpty ? [false] : [true, false] where best == nil {
                for (i, c) in scored.enumerated() where !used[i] {
                    if onlyScenes { guard let scene = scenes[i], !shown.contains(scene) else { continue } }
                    guard let value = value(c, picks: picks, allowLookAlikes: allowLookAlikes) else { continue }
                    if best == nil || value > best!.value { best = (i, value) }
                }
            }
            guard let chosen = best else {
                if allowLookAlikes { break }
                allowLookAlikes = true
                continue
            }
            used[chosen.index] = true
            let c = scored[chosen.index]
            let run = runs[chosen.index]
            var pick = Pick(
                start: c.candidate.start, end: c.candidate.end, lowest: run.0, highest: run.1, scored: c,
                index: chosen.index)
            if !scenes.isEmpty, scenes[chosen.index] != nil, pick.duration < settings.peopleSeconds {
                widenPeopleMoment(&pick, run: run, beside: picks, analysis: analysis, settings: settings)
            }
            if pick.duration > remaining + settings.tolerance * 0.5 {
                let length = max(settings.minSegment, remaining)
                if length > pick.duration { continue }
                pick.end = pick.start + length
            }
            picks.append(pick)
        }
        guard !picks.isEmpty else { return [] }
        return finish(picks, analysis: analysis, settings: settings)
    }

    /// The people scene of each candidate (nil: not a people moment): consecutive shots that hold
    /// people moments are one scene (a dialogue cut between two faces), a shot without one ends it.
    static func peopleScenes(_ analysis: VideoAnalysis, scored: [ScoredCandidate], settings: SelectionSettings)
        -> [Int?]
    {
        let isPeople = scored.map { ($0.candidate.people?.presence ?? 0) >= settings.peoplePresence }
        let shots = Set(zip(scored, isPeople).filter(\.1).map(\.0.candidate.shot))
        guard !shots.isEmpty else { return [] }
        var sceneOfShot: [Int: Int] = [:]
        var scene = -1, previous = Int.min
        for shot in shots.sorted() {
            if shot != previous + 1 { scene += 1 }
            sceneOfShot[shot] = scene
            previous = shot
        }
        return zip(scored, isPeople).map { $0.1 ? sceneOfShot[$0.0.candidate.shot] : nil }
    }

    /// The same scene at another moment: a similar picture in the same colours.
    static func lookAlike(_ a: SegmentFingerprint, _ b: SegmentFingerprint, _ settings: SelectionSettings) -> Bool {
        Double(a.similarity(to: b)) >= settings.lookAlikeSimilarity
            && Double(a.colourSimilarity(to: b)) >= settings.lookAlikeColour
    }

    /// The candidates with the excluded ranges cut out of them (pieces shorter than `minimum` go).
    static func carve(_ scored: [ScoredCandidate], around exclude: [TimeRange], minimum: Double, margin: Double)
        -> [ScoredCandidate]
    {
        var result: [ScoredCandidate] = []
        for c in scored {
            var pieces = [(c.candidate.start, c.candidate.end)]
            for e in exclude {
                pieces = pieces.flatMap { p -> [(Double, Double)] in
                    guard e.start < p.1, e.end > p.0 else { return [p] }
                    return [(p.0, min(p.1, e.start - margin)), (max(p.0, e.end + margin), p.1)].filter {
                        $0.1 - $0.0 > 0
                    }
                }
            }
            for p in pieces where p.1 - p.0 >= minimum - 1e-9 {
                var piece = c
                piece.candidate.start = p.0
                piece.candidate.end = p.1
                result.append(piece)
            }
        }
        return result
    }

    /// A segment around each pinned time, in time order: `pinnedSeconds` long (less when the pins
    /// share the target), centred on the time where its shot allows, never into an excluded range
    /// or another pinned segment. Its score and look are those of the candidate it overlaps most.
    static func pinned(
        _ analysis: VideoAnalysis, scored: [ScoredCandidate], exclude: [TimeRange], margin: Double,
        settings: SelectionSettings
    ) -> [Pick] {
        let times = Set(settings.include.filter { $0.isFinite && $0 >= 0 && $0 < analysis.duration }).sorted()
        guard !times.isEmpty else { return [] }
        let length = max(
            settings.minSegment, min(settings.pinnedSeconds, settings.targetDuration / Double(times.count)))
        var picks: [Pick] = []
        for t in times {
            if exclude.contains(where: { t >= $0.start - margin && t <= $0.end + margin }) { continue }
            if let holder = picks.firstIndex(where: { t >= $0.start && t <= $0.end }) {
                // Already shown by an earlier pinned segment: it must keep this time too.
                picks[holder].pin =
                    min(picks[holder].pin?.lowerBound ?? t, t)...max(picks[holder].pin?.upperBound ?? t, t)
                continue
            }
            let shotIndex =
                analysis.shots.firstIndex { t >= $0.start && t < $0.end } ?? max(0, analysis.shots.count - 1)
            var lo = 0.0, hi = analysis.duration
            if shotIndex < analysis.shots.count {
                let shot = analysis.shots[shotIndex]
                lo = t >= shot.usableStart ? shot.usableStart : shot.start
                hi = t <= shot.usableEnd ? shot.usableEnd : shot.end
            }
            for e in exclude {
                if e.end <= t { lo = max(lo, e.end + margin) } else if e.start > t { hi = min(hi, e.start - margin) }
            }
            if let previous = picks.last { lo = max(lo, previous.end + 0.05) }
            guard hi > lo, t >= lo, t <= hi else { continue }
            var start = t - length / 2, end = t + length / 2
            if start < lo { end += lo - start; start = lo }
            if end > hi { start -= end - hi; end = hi }
            start = max(start, lo)
            func overlap(_ c: ScoredCandidate) -> Double { min(end, c.candidate.end) - max(start, c.candidate.start) }
            let base =
                scored.filter { overlap($0) > 0 }.max { overlap($0) < overlap($1) }
                ?? scored.filter { $0.candidate.shot == shotIndex }.min {
                    abs($0.candidate.start - t) < abs($1.candidate.start - t)
                }
            var candidate =
                base?.candidate
                ?? Candidate(
                    start: start, end: end, shot: shotIndex, raw: CandidateBuilder.measure(analysis, start, end),
                    fingerprint: SegmentFingerprint(hashes: [], histogram: []))
            candidate.start = start
            candidate.end = end
            let pick = ScoredCandidate(
                candidate: candidate, score: base?.score ?? 0,
                components: base?.components ?? ScoredCandidate.Components(motion: 0, audio: 0, quality: 0, novelty: 0, people: 0))
            picks.append(Pick(start: start, end: end, lowest: lo, highest: hi, scored: pick, pin: t...t))
        }
        return picks
    }

    /// The clean run (merged extent of the overlapping candidates of one shot) of each candidate.
    static func runBounds(_ scored: [ScoredCandidate]) -> [(Double, Double)] {
        scored.map { c in
            var lo = c.candidate.start, hi = c.candidate.end
            var changed = true
            while changed {
                changed = false
                for o in scored
                where o.candidate.shot == c.candidate.shot && o.candidate.start <= hi + 1e-6
                    && o.candidate.end >= lo - 1e-6
                {
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
    /// With `facesFirst` (the fit before boundaries snap), growing fills people moments while their
    /// faces stay in view before anything else grows, so the added seconds show the people rather
    /// than what follows them; the last fit moves ends that sit at pauses in speech only when
    /// nothing else can take the difference.
    static func fit(
        _ picks: inout [Pick], to target: Double, minSegment: Double, tolerance: Double = 0.01, facesFirst: Bool = false,
        pauseTolerance: Double = 0, pauseShortfall: Double = 0
    ) {
        var difference = target - picks.reduce(0) { $0 + $1.duration }
        guard abs(difference) > tolerance else { return }
        let order = picks.indices.sorted {
            if picks[$0].atPause != picks[$1].atPause { return !picks[$0].atPause }
            return difference > 0
                ? picks[$0].scored.score > picks[$1].scored.score : picks[$0].scored.score < picks[$1].scored.score
        }
        if difference > 0 && facesFirst {
            for i in order where difference > tolerance {
                guard let faces = picks[i].faces else { continue }
                clampBounds(&picks)
                let grow = min(difference, min(picks[i].highest, faces.upperBound) - picks[i].end)
                picks[i].end += max(0, grow)
                difference -= max(0, grow)
                let before = min(difference, picks[i].start - max(picks[i].lowest, faces.lowerBound))
                picks[i].start -= max(0, before)
                difference -= max(0, before)
            }
        }
        for i in order where abs(difference) > tolerance {
            // A segment whose ends sit at pauses keeps them while the total is within `pauseTolerance`
            // over the target, or `pauseShortfall` under it.
            if picks[i].atPause && (difference > 0 ? difference <= max(pauseTolerance, pauseShortfall) : -difference <= pauseTolerance) {
                continue
            }
            clampBounds(&picks)
            if difference > 0 {
                let grow = min(difference, picks[i].highest - picks[i].end)
                picks[i].end += max(0, grow)
                difference -= max(0, grow)
                let before = min(difference, picks[i].start - picks[i].lowest)
                picks[i].start -= max(0, before)
                difference -= max(0, before)
            } else {
                var cut = min(-difference, picks[i].duration - minSegment)
                if let pin = picks[i].pin {
                    cut = min(cut, picks[i].end - min(picks[i].highest, pin.upperBound + 0.25))
                }
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
                var pauses = false
                if options.isEmpty, analysis.hasAudio {
                    if (picks[i].scored.candidate.people?.presence ?? 0) >= settings.peoplePresence {
                        options = speechPauses(analysis.audio, near: t, settings: settings)
                        pauses = !options.isEmpty
                    }
                    options += analysis.audio.quietPoints(near: t, radius: settings.snapRadius)
                }
                for o in options {
                    let keepsPin =
                        picks[i].pin.map { isStart ? o <= $0.lowerBound - 0.1 : o >= $0.upperBound + 0.1 } ?? true
                    let ok =
                        keepsPin
                        && (isStart
                            ? o >= picks[i].lowest - 1e-6 && picks[i].end - o >= settings.minSegment
                            : o <= picks[i].highest + 1e-6 && o - picks[i].start >= settings.minSegment)
                    if ok {
                        if isStart { picks[i].start = o } else { picks[i].end = o }
                        if pauses { picks[i].atPause = true }
                        break
                    }
                }
            }
        }
    }

    static func reason(_ s: ScoredCandidate) -> String {
        let c = s.components
        var parts: [String] = []
        if c.people >= 0.5 { parts.append("people in view") }
        if c.motion >= 0.6 { parts.append("lively motion") }
        if c.audio >= 0.6 { parts.append("loud or eventful sound") }
        if c.quality >= 0.7 { parts.append("sharp, well exposed") }
        if c.novelty >= 0.6 { parts.append("unlike the rest") }
        if parts.isEmpty { parts.append("best remaining footage") }
        return parts.joined(separator: ", ")
    }
}
